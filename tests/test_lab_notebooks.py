"""Notebooks 06 (training lab) and 07 (reproduce): lint-clean, run headless with their defaults,
and with the run buttons pressed (values injected with ``app.run(defs=...)``) they train, show the
committed verdicts and rerun a protocol at tiny scale."""

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NOTEBOOK_ENV, assert_marimo_check_clean, load_app, shown, ui

from geolab.experiments import lab, report

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = {
    name: REPO / "notebooks" / f"{name}.py" for name in ("06_training_lab", "07_reproduce")
}


def load_notebook(name: str):
    return load_app(NOTEBOOKS[name])


def test_marimo_check_strict_is_clean():
    assert_marimo_check_clean(NOTEBOOKS.values())


@pytest.mark.parametrize("name", list(NOTEBOOKS))
def test_runs_headless_as_a_script(name):
    proc = subprocess.run(
        [sys.executable, str(NOTEBOOKS[name])],
        capture_output=True,
        text=True,
        env=NOTEBOOK_ENV,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_training_lab_trains_when_the_button_is_pressed():
    defs = {
        "task_name": ui("copy"),
        "rules": ui(["preln", "mgt", "ddl"]),
        "layers": ui(2),
        "width": ui("16"),
        "steps": ui(4),
        "lr": ui("0.003"),
        "seed": ui(0),
        "train_button": ui(True),
    }
    outputs, glbls = load_notebook("06_training_lab").run(defs=defs)
    (run,) = glbls["runs"]
    result = run["result"]
    assert run["label"] == "#1 copy L=2 D=16 4 steps lr=0.003"
    assert list(result["val"]) == ["preln", "mgt", "ddl"]
    assert all(len(c) == 4 for c in result["curves"].values())
    assert set(result["beta"]) == {"mgt", "ddl"}
    # every layer starts at β₀ (0.5 for MGT, 1 for DDL): the live check prints spread 0
    assert result["beta"]["mgt"]["0%"]["mean"] == pytest.approx([0.5, 0.5], abs=1e-6)
    assert result["beta"]["ddl"]["0%"]["mean"] == pytest.approx([1.0, 1.0], abs=1e-6)
    text = shown(outputs)
    assert "max − min over layers" in text and "Final validation metrics" in text
    # the β figures tick whole layers only
    beta_fig = glbls["figs"]["beta #1 copy L=2 D=16 4 steps lr=0.003 mgt"]
    assert beta_fig.layout.xaxis.dtick == 1 and beta_fig.layout.xaxis.tickformat == "d"


def test_lab_rows_keep_every_run_and_round_the_numbers():
    runs = [
        {
            "label": f"#{i} copy",
            "result": {"val": {"mgt": {"loss": 2.123456789}}, "n_params": {"mgt": 7}},
        }
        for i in (1, 2)
    ]
    rows = lab.lab_rows(runs)
    assert [r["run"] for r in rows] == ["#1 copy", "#2 copy"]
    assert rows[0]["loss"] == 2.123 and rows[0]["parameters"] == 7


def test_training_lab_waits_for_the_button():
    outputs, glbls = load_notebook("06_training_lab").run()
    assert "result" not in glbls
    assert "press" in shown(outputs).lower()


def test_reproduce_notebook_shows_committed_verdicts_and_reruns(monkeypatch):
    # offline on a fresh clone: no data directory, the hub unreachable; text protocols read the
    # tiny-shakespeare copy in data/ (language_model's tiny scale included)
    monkeypatch.delenv("GEOLAB_DATA", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    results = report.load_results(REPO / "data" / "results")
    assert results, "committed small results are missing"
    defs = {"results": results, "protocol": ui("language_model"), "rerun": ui(True)}
    outputs, _ = load_notebook("07_reproduce").run(defs=defs)
    text = shown(outputs)
    for row in report.verdict_rows(results):
        assert row["verdict"] in text
    assert "Tiny run finished" in text
    if "edelta_benchmarks" in results:
        assert "GPT" in text and "paper" in text  # the E∆ table


def test_reproduce_notebook_shows_a_failed_rerun_on_the_page(monkeypatch, tmp_path):
    monkeypatch.setenv("GEOLAB_DATA", str(tmp_path))  # an empty data directory
    results = report.load_results(REPO / "data" / "results")
    defs = {"results": results, "protocol": ui("ablation"), "rerun": ui(True)}
    outputs, _ = load_notebook("07_reproduce").run(defs=defs)
    text = shown(outputs)
    assert "failed" in text and "DataNotFound" in text and "lacks them" in text
