"""Experiment protocols: every protocol runs at tiny scale through `geolab reproduce` and writes a
valid result; verdict rules and helpers against hand-computed cases; the committed small results
are complete, consistent with the README table, and regenerate bit for bit on a CPU.
"""

import json
import math
from pathlib import Path

import pytest
import torch

from geolab.cli import main
from geolab.experiments import NAMES, export, get_protocol, report, runner, snapshots, verdicts
from geolab.experiments.beta_dynamics import spearman
from geolab.experiments.depth_scaling import smoothed
from geolab.experiments.edelta_benchmarks import _order
from geolab.experiments.snapshots import snapshot_steps

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "data" / "results"
VERDICTS = {verdicts.REPRODUCED, verdicts.NOT_REPRODUCED, verdicts.INCONCLUSIVE}


@pytest.fixture
def data_env(shared_data, monkeypatch):
    monkeypatch.setenv("GEOLAB_DATA", str(shared_data))
    return shared_data


def check_result(result: dict, name: str, scale: str) -> None:
    module = get_protocol(name)
    settings = module.SCALES[scale]
    assert result["protocol"] == name and result["scale"] == scale
    assert result["seeds"] == settings["seeds"]
    assert result["config"] == json.loads(
        json.dumps({k: v for k, v in settings.items() if k != "reductions"})
    )
    assert result["reductions"] == settings["reductions"]
    assert set(result["per_seed"]) == {str(s) for s in settings["seeds"]}
    assert result["hypotheses"], "every protocol states at least one claim"
    for h in result["hypotheses"]:
        assert h["verdict"] in VERDICTS
        assert h["claim"] and h["measured"] and h["rule"]
    prov = result["provenance"]
    assert prov["versions"]["torch"] == torch.__version__
    assert {"commit", "dirty"} <= set(prov["git"])
    assert prov["wall_time_s"] > 0 and prov["torch_threads"] >= 1
    assert prov["device"].startswith("cpu")


@pytest.mark.parametrize("name", NAMES)
def test_reproduce_tiny_writes_a_valid_result_and_figures(name, data_env, tmp_path, capsys):
    code = main(["reproduce", name, "--scale", "tiny", "--out", str(tmp_path), "--no-png"])
    assert code == 0
    path = tmp_path / f"{name}-tiny.json"
    # strict JSON: NaN or Infinity would fail json.loads with this hook
    text = path.read_text()
    result = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-finite {c} in {path}"))
    check_result(result, name, "tiny")
    assert result["figures"], "figures written"
    for fig in result["figures"]:
        assert fig.endswith(".html") and (tmp_path / fig).stat().st_size > 1000
    assert set(result["figures"]) == {
        f"{name}-tiny-{n}.html" for n in report.result_figures(result)
    }
    out = capsys.readouterr().out
    assert all(h["id"] in out for h in result["hypotheses"])


def test_reproduce_list_names_every_protocol(capsys):
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.strip().splitlines()] == list(NAMES)


def test_reproduce_rejects_bad_seeds_and_missing_name(capsys):
    assert main(["reproduce", "ablation", "--scale", "tiny", "--seeds", "7"]) == 2
    assert "seeds=7" in capsys.readouterr().err
    assert main(["reproduce"]) == 2


def test_bad_names_and_scales_raise_value_error():
    with pytest.raises(ValueError, match="unknown protocol 'nope'"):
        get_protocol("nope")
    with pytest.raises(ValueError, match="scale='huge'"):
        runner.scale_settings(get_protocol("ablation"), "huge")
    with pytest.raises(ValueError, match="seeds=0"):
        runner.pick_seeds({"seeds": [42, 123]}, 0)
    assert runner.pick_seeds({"seeds": [42, 123]}, 1) == [42]


def test_mean_std_and_sign_verdict():
    s = verdicts.mean_std([1.0, 2.0, 4.0])
    assert s["mean"] == pytest.approx(7 / 3)
    assert s["std"] == pytest.approx(
        math.sqrt(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) / 2)
    )
    assert verdicts.mean_std([5.0]) == {"mean": 5.0, "std": 0.0, "n": 1}
    with pytest.raises(ValueError, match="empty"):
        verdicts.mean_std([])
    assert verdicts.sign_verdict({"mean": 1.0, "std": 0.5, "n": 2}) == verdicts.REPRODUCED
    assert verdicts.sign_verdict({"mean": -1.0, "std": 0.5, "n": 3}) == verdicts.NOT_REPRODUCED
    assert verdicts.sign_verdict({"mean": 0.2, "std": 0.5, "n": 3}) == verdicts.INCONCLUSIVE
    assert verdicts.sign_verdict({"mean": 9.0, "std": 0.0, "n": 1}) == verdicts.INCONCLUSIVE


def test_spearman_matches_hand_computed_values():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ties get average ranks: y ranks (1.5, 1.5, 3, 4) -> Pearson of ranks
    x, y = torch.tensor([1.0, 2, 3, 4]), torch.tensor([1.5, 1.5, 3, 4])
    x, y = x - x.mean(), y - y.mean()
    assert spearman([0, 1, 2, 3], [0, 0, 5, 9]) == pytest.approx(
        (x @ y / (x.norm() * y.norm())).item()
    )
    assert spearman([0, 1, 2], [0.0, 0.0, 0.0]) is None


def test_snapshot_steps_and_smoothing():
    assert snapshot_steps(160) == {40: "25%", 80: "50%", 160: "100%"}
    assert snapshot_steps(2) == {1: "50%", 2: "100%"}
    assert smoothed([4.0, 2.0, 0.0, 2.0], window=2) == [4.0, 3.0, 1.0, 1.0]


def test_ordering_verdict_uses_the_margin():
    assert _order(1.0, 1.3) == verdicts.REPRODUCED
    assert _order(1.3, 1.0) == verdicts.NOT_REPRODUCED
    assert _order(1.0, 1.1) == verdicts.INCONCLUSIVE


def test_png_notice_without_a_browser(monkeypatch, tmp_path):
    import plotly.graph_objects as go

    monkeypatch.setattr(export, "chrome_path", lambda: None)
    notes = []
    saved = export.save_figures({"f": go.Figure()}, tmp_path, "x", png=True, log=notes.append)
    assert saved["files"] == ["x-f.html"] and (tmp_path / "x-f.html").is_file()
    assert len(notes) == 1 and "PNG skipped" in notes[0] and "\n" not in notes[0]


# --- the committed small-scale results -------------------------------------------------------


def committed(name: str) -> dict:
    path = RESULTS / f"{name}-small.json"
    assert path.is_file(), f"{path} is missing: run `geolab reproduce {name} --scale small`"
    return json.loads(path.read_text())


@pytest.mark.parametrize("name", NAMES)
def test_committed_small_result_is_complete(name):
    result = committed(name)
    check_result(result, name, "small")
    assert result["reductions"], "small scale says how it departs from the paper"
    assert result["provenance"]["torch_threads"] == 1
    for fig in result["figures"]:
        assert (RESULTS / fig).is_file()


def test_readme_table_matches_the_committed_results():
    readme = (RESULTS / "README.md").read_text()
    results = report.load_results(RESULTS)
    assert list(results) == list(NAMES)
    assert report.verdict_markdown(results) in readme
    assert report.edelta_markdown(results["edelta_benchmarks"]) in readme


def test_rerun_reproduces_committed_numbers(data_env):
    """Rank evolution at L=12 for post-LN and MGT, with the committed seed and settings: init and
    trained rank profiles and the validation loss must equal the committed numbers."""
    result = committed("rank_evolution")
    module = get_protocol("rank_evolution")
    settings = {**result["config"], "depths": [12], "rules": ["postln", "mgt"]}
    settings["train_rules"] = ["postln", "mgt"]
    seed = result["seeds"][0]
    with runner.deterministic():
        task = module.get_task(settings["task"], seq_len=settings["seq_len"])
        probe = snapshots.text_probe(task, settings["probe_batch"])
        fresh = module.measure(settings, seed, task, probe, log=lambda m: None)
    for key in ("postln/L12", "mgt/L12"):
        old = result["per_seed"][str(seed)][key]
        for phase in ("init", "trained"):
            assert fresh[key][phase] == pytest.approx(old[phase], abs=1e-6, rel=0)
        assert fresh[key]["val_loss"] == pytest.approx(old["val_loss"], abs=1e-6, rel=0)


def test_committed_synergy_is_eq9_of_the_committed_losses():
    result = committed("ablation")
    for row in result["per_seed"].values():
        loss = {r: row[r]["val"]["loss"] for r in ("postln", "preln", "mgt_mhc", "mgt_ddl", "mgt")}
        # Eq. 9 rearranged: 𝒮 = L_mHC + L_DDL − L_MGT − L_base
        expected = loss["mgt_mhc"] + loss["mgt_ddl"] - loss["mgt"] - loss["postln"]
        assert row["synergy_postln"] == pytest.approx(expected, abs=1e-12)
        expected = loss["mgt_mhc"] + loss["mgt_ddl"] - loss["mgt"] - loss["preln"]
        assert row["synergy_preln"] == pytest.approx(expected, abs=1e-12)
    values = [row["synergy_postln"] for row in result["per_seed"].values()]
    assert result["summary"]["synergy_postln"] == pytest.approx(verdicts.mean_std(values))


def test_committed_beta_starts_at_beta0_in_every_layer():
    result = committed("beta_dynamics")
    n_layer = result["config"]["n_layer"]
    for row in result["per_seed"].values():
        start = row["snapshots"]["0%"]
        # W_β = 0 and b_β = atanh(β₀) at init (docs/design.md §3.1): every β is exactly β₀ = 0.5
        assert start["mean"] == pytest.approx([0.5] * n_layer, abs=1e-6)
        assert start["std"] == pytest.approx([0.0] * n_layer, abs=1e-6)
        assert list(row["snapshots"]) == ["0%", "25%", "50%", "100%"]


def test_committed_depth_scaling_matches_the_budget():
    result = committed("depth_scaling")
    budget = result["config"]["budget"]
    for key, run in result["summary"]["runs"].items():
        assert abs(run["n_params"] - budget) / budget < 0.25, key
