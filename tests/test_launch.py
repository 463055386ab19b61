"""Sweeps as a submitit job array: submitit's local executor end to end (submit, wait, merge, a
rerun submits nothing), the same numbers as one process, and the flags that cannot combine."""

import json
import os
from pathlib import Path

import pytest

from geolab.cli import main

REPO = Path(__file__).resolve().parents[1]
ARGS = ["reproduce", "language_model", "--scale", "tiny", "--seeds", "1", "--no-png", "--out"]


def numbers(path: Path) -> dict:
    result = json.loads(path.read_text())
    return {
        seed: {rule: {k: v for k, v in run.items() if k != "seconds"} for rule, run in row.items()}
        for seed, row in result["per_seed"].items()
    }


def test_local_launcher_submits_waits_merges_and_a_rerun_submits_nothing(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    out = tmp_path / "array"
    launch = [*ARGS, str(out), "--launcher", "local", "--runs-per-job", "2"]
    assert main(launch) == 0
    said = capsys.readouterr().out
    assert "local: 4 runs in 2 array job(s) of ≤ 2" in said
    runs = sorted(p.name for p in (out / "language_model-tiny-runs").iterdir())
    assert runs == sorted(f"42-{r}.json" for r in ("postln", "preln", "deepnorm", "mgt"))
    assert (out / "language_model-tiny-submitit").is_dir()  # submitit's logs
    result = json.loads((out / "language_model-tiny.json").read_text())
    assert result["provenance"]["runs"] == {
        **result["provenance"]["runs"],
        "trained": 0,
        "found": 4,
    }
    record = json.loads((out / "throughput.json").read_text())
    assert next(iter(record.values()))["launcher"] == "local"

    assert main([*ARGS, str(tmp_path / "one")]) == 0  # one process, no launcher
    assert numbers(out / "language_model-tiny.json") == numbers(
        tmp_path / "one" / "language_model-tiny.json"
    )

    capsys.readouterr()
    assert main([*launch, "--force"]) == 0  # the merged result is replaced, no run retrained
    assert "nothing to submit" in capsys.readouterr().out


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--partition", "gpu"], "--partition is not allowed without --launcher"),
        (["--gpus-per-job", "2"], "--gpus-per-job is not allowed without --launcher"),
        (["--launcher", "slurm"], "--launcher slurm needs --partition"),
        (
            ["--launcher", "local", "--partition", "gpu"],
            "--partition is not allowed with --launcher local",
        ),
        (["--launcher", "slurm", "--partition", "p", "--gpus-per-job", "0"], "--gpus-per-job 0"),
        (["--launcher", "local", "--dry-run"], "not allowed with --dry-run"),
        (["--launcher", "local", "--fresh"], "--fresh is not allowed with --launcher"),
        (["--time-limit", "0"], "--time-limit 0 is not allowed"),
        (["--time-limit", "5", "--dry-run"], "--time-limit is not allowed with --dry-run"),
    ],
)
def test_flags_that_cannot_combine_are_one_line_errors(flags, message, tmp_path, capsys):
    assert main([*ARGS, str(tmp_path), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and message in err
    assert not list(tmp_path.iterdir())  # nothing submitted, nothing written


def without_seconds(x):
    if isinstance(x, dict):
        return {k: without_seconds(v) for k, v in x.items() if k != "seconds"}
    if isinstance(x, list):
        return [without_seconds(v) for v in x]
    return x


@pytest.mark.parametrize("protocol", ["depth_scaling", "rank_evolution", "beta_dynamics"])
def test_the_packed_depth_protocols_launch_locally_with_one_process_s_numbers(
    protocol, tmp_path, monkeypatch
):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    args = ["reproduce", protocol, "--scale", "tiny", "--seeds", "1", "--no-png", "--out"]
    assert main([*args, str(tmp_path / "array"), "--launcher", "local", "--runs-per-job", "3"]) == 0
    assert main([*args, str(tmp_path / "one")]) == 0
    launched, alone = (
        json.loads((tmp_path / d / f"{protocol}-tiny.json").read_text()) for d in ("array", "one")
    )
    for key in ("per_seed", "summary", "hypotheses"):
        assert without_seconds(launched[key]) == without_seconds(alone[key])
