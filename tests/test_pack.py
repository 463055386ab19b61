"""The packed runner: worker processes give the numbers of one process, every finished run is
saved as it lands, a rerun skips what is saved, a time limit leaves runs out cleanly, a plan
uses a measured throughput and needs no data."""

import json
import time

import pytest

from geolab.cli import main
from geolab.experiments import get_protocol, pack, plan, runs

ARGS = ["reproduce", "language_model", "--scale", "tiny", "--no-png", "--out"]


@pytest.fixture
def data_env(shared_data, monkeypatch):
    monkeypatch.setenv("GEOLAB_DATA", str(shared_data))
    return shared_data


def per_run(result: dict) -> dict:
    """seed -> rule -> numbers without the wall time (how fast a run was, not what it gave)."""
    return {
        seed: {k: {f: v for f, v in r.items() if f != "seconds"} for k, r in row.items()}
        for seed, row in result["per_seed"].items()
    }


def test_two_workers_give_the_numbers_of_one_process_and_a_rerun_skips(tmp_path, capsys):
    one, two = tmp_path / "one", tmp_path / "two"
    assert main([*ARGS, str(one)]) == 0
    assert main([*ARGS, str(two), "--jobs", "2"]) == 0
    a = json.loads((one / "language_model-tiny.json").read_text())
    b = json.loads((two / "language_model-tiny.json").read_text())
    assert per_run(a) == per_run(b) and a["summary"] == b["summary"]
    assert [h["verdict"] for h in a["hypotheses"]] == [h["verdict"] for h in b["hypotheses"]]
    saved = sorted(p.name for p in (two / "language_model-tiny-runs").iterdir())
    rules = get_protocol("language_model").SCALES["tiny"]["rules"]
    assert saved == sorted(f"{s}-{r}.json" for s in (42, 123) for r in rules)
    assert b["provenance"]["runs"]["trained"] == 8 and b["provenance"]["runs"]["found"] == 0
    record = json.loads((two / "throughput.json").read_text())
    (device,) = record
    assert device.startswith("cpu") and record[device]["runs"] == 8
    assert record[device]["jobs"] == 2 and record[device]["runs_per_min"] > 0

    # a rerun trains nothing; a run removed is the one run trained again
    (two / "language_model-tiny-runs" / "123-mgt.json").unlink()
    capsys.readouterr()
    assert main([*ARGS, str(two), "--jobs", "2", "--force"]) == 0
    assert "7 of 8 runs found" in capsys.readouterr().out
    c = json.loads((two / "language_model-tiny.json").read_text())
    assert per_run(c) == per_run(a)
    assert c["provenance"]["runs"]["trained"] == 1 and c["provenance"]["runs"]["found"] == 7


@pytest.mark.parametrize("name", ["depth_scaling", "rank_evolution", "reflection"])
def test_a_protocol_s_runs_packed_equal_one_process_and_a_rerun_skips(name, tmp_path, capsys):
    args = ["reproduce", name, "--scale", "tiny", "--no-png", "--out"]
    one, two = tmp_path / "one", tmp_path / "two"
    assert main([*args, str(one)]) == 0
    assert main([*args, str(two), "--jobs", "2"]) == 0
    a = json.loads((one / f"{name}-tiny.json").read_text())
    b = json.loads((two / f"{name}-tiny.json").read_text())
    assert per_run(a) == per_run(b) and a["summary"] == b["summary"]
    assert a["hypotheses"] == b["hypotheses"]
    assert [list(row) for row in a["per_seed"].values()] == [
        list(row) for row in b["per_seed"].values()
    ]
    saved = sorted((two / f"{name}-tiny-runs").iterdir())
    total = a["provenance"]["runs"]["trained"]
    assert len(saved) == total == b["provenance"]["runs"]["trained"] > 1
    saved[-1].unlink()
    capsys.readouterr()
    assert main([*args, str(two), "--jobs", "2", "--force"]) == 0
    assert f"{total - 1} of {total} runs found" in capsys.readouterr().out
    c = json.loads((two / f"{name}-tiny.json").read_text())
    assert per_run(c) == per_run(a) and c["hypotheses"] == a["hypotheses"]
    assert c["provenance"]["runs"]["trained"] == 1


def test_more_seeds_than_the_scale_s_train_only_the_new_ones(tmp_path, capsys):
    # the remedy "three more seeds" (decide.more_seeds_command) resumes a sweep with --seeds N
    # past the scale's list: its seeds' runs are found, the extra seeds' trained
    out = tmp_path / "o"
    assert main([*ARGS, str(out), "--seeds", "1"]) == 0
    first = json.loads((out / "language_model-tiny.json").read_text())
    rules = len(get_protocol("language_model").SCALES["tiny"]["rules"])
    capsys.readouterr()
    assert main([*ARGS, str(out), "--seeds", "3", "--force"]) == 0
    assert f"{rules} of {3 * rules} runs found" in capsys.readouterr().out
    wider = json.loads((out / "language_model-tiny.json").read_text())
    assert wider["seeds"] == [42, 123, 1001]
    assert wider["provenance"]["runs"]["trained"] == 2 * rules
    assert per_run(wider)["42"] == per_run(first)["42"]
    assert per_run(wider)["1001"] != per_run(wider)["123"]


def test_a_saved_run_of_other_settings_is_refused_not_reused(tmp_path, capsys):
    out = tmp_path / "o"
    assert main([*ARGS, str(out), "--seeds", "1"]) == 0
    path = out / "language_model-tiny-runs" / "42-mgt.json"
    record = json.loads(path.read_text())
    record["identity"]["settings"]["d_model"] = 99
    path.write_text(json.dumps(record))
    capsys.readouterr()
    assert main([*ARGS, str(out), "--seeds", "1", "--force"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "42-mgt.json" in err and "d_model differ" in err
    assert "--fresh" in err
    assert main([*ARGS, str(out), "--seeds", "1", "--fresh", "--force"]) == 0
    assert json.loads(path.read_text())["identity"]["settings"]["d_model"] == 16


def slow_run(index: int, settings: dict, log) -> dict:
    time.sleep(1.5)
    return {"index": index}


def test_a_time_limit_starts_no_run_that_cannot_finish_and_names_those_left_out(tmp_path):
    jobs = [(i,) for i in range(3)]
    with pack.sweep(run_dir=tmp_path, time_limit=2.0), pytest.raises(pack.Incomplete) as got:
        pack.run_jobs(slow_run, jobs, {}, lambda m: None)
    # the first run starts (no run has timed the sweep yet); after its 1.5 s a second one
    # would end past the 2 s limit, so it is not started
    assert got.value.left_out == ["1", "2"] and got.value.done == 1
    assert "left out: 1, 2" in str(got.value)
    assert json.loads((tmp_path / "0.json").read_text())["result"] == {"index": 0}
    with pack.sweep(run_dir=tmp_path) as sw:
        assert pack.run_jobs(slow_run, jobs, {}, lambda m: None) == [{"index": i} for i in range(3)]
    assert sw.found == 1 and len(sw.trained) == 2


def test_time_limit_exits_3_naming_the_runs_left_out(tmp_path, capsys):
    code = main([*ARGS, str(tmp_path), "--seeds", "1", "--time-limit", "1e-9"])
    assert code == 3
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "left out: 42-postln, 42-preln" in err
    assert not (tmp_path / "language_model-tiny.json").exists()


def test_dry_run_needs_no_data_and_uses_a_measured_throughput(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GEOLAB_DATA", str(tmp_path / "empty"))  # no corpus anywhere
    args = ["reproduce", "language_model", "--scale", "paper", "--dry-run", "--out", str(tmp_path)]
    assert main(args) == 0
    assert "1e14 FLOP/s" in capsys.readouterr().out
    # a record as the packed runner writes it, for a GPU this CPU machine does not have
    row = {"runs": 150, "devices": 1, "jobs": 16, "wall_s": 300.0, "runs_per_min": 30.0}
    about = {"protocol": "edelta_benchmarks", "scale": "paper", "finished_utc": "2026-12-02"}
    plan.record_throughput(tmp_path, {"cuda (NVIDIA H200)": {**row, "flops_per_s": 2e13}}, about)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "2e+13 FLOP/s" in out and "cuda (NVIDIA H200)" in out and "1e14" not in out
    module = get_protocol("language_model")
    settings = module.SCALES["paper"]
    rows = plan.protocol_plan(module, settings, 3, 2e13)
    assert all(r["gpu_hours"] == pytest.approx(r["flops"] / 2e13 / 3600) for r in rows)
    assert f"total ≈ {sum(r['gpu_hours'] for r in rows):.1f} GPU-hours" in out


def test_stated_vocabulary_sizes_are_the_corpora_s(data_env):
    for task, seq_len in (("shakespeare", 32), ("wikitext2", 128)):
        settings = {"task": task, "seq_len": seq_len}
        assert runs.text_shape(settings).model_fields() == runs.text_task(settings).model_fields()
