"""Notebooks 06 (training lab) and 07 (reproduce): lint-clean, run headless with their defaults,
and with the run buttons pressed (values injected with ``app.run(defs=...)``) they train, show the
committed verdicts and rerun a protocol at tiny scale."""

import html
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import (
    NOTEBOOK_ENV,
    assert_marimo_check_clean,
    first_use_is_hovered,
    hovers,
    load_app,
    shown,
    ui,
)

from geolab.experiments import decide, lab, report

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
    # the β check lines are list items, not "#1 …" read as a markdown heading
    assert "run 1 <code>mgt</code>" in text
    assert text.count("<h1") == 1  # the notebook's title only
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


def test_smoke_markdown_words_every_tiny_verdict_as_not_comparable():
    fresh = {
        "scale": "tiny",
        "hypotheses": [
            {"id": "H2", "verdict": "reproduced", "measured": "0.9 at L=4"},
            {"id": "H9", "verdict": "inconclusive", "measured": "n/a"},
        ],
    }
    committed = {"hypotheses": [{"id": "H2", "verdict": "not reproduced at this scale"}]}
    text = report.smoke_markdown(fresh, committed)
    lines = text.splitlines()
    assert lines[0].startswith("**Smoke run at tiny scale (tiny)")
    assert lines[1] == (
        "- H2: tiny run says *reproduced* (not comparable) — 0.9 at L=4; committed: "
        "**not reproduced at this scale**"
    )
    assert lines[2] == "- H9: tiny run says *inconclusive* (not comparable) — n/a"
    assert "**reproduced**" not in text


@pytest.mark.slow
def test_training_lab_default_run_matches_what_its_prose_says():
    # 06's intro quotes the default run's numbers: they must be what the defaults give (≈ 11 s).
    result = lab.compare_rules(
        lab.lab_task("copy", seed=0), ["preln", "mgt", "ddl"], 4, 32, steps=160, lr=0.003
    )
    val = {rule: result["val"][rule] for rule in ("preln", "mgt", "ddl")}
    assert [round(val[r]["acc"], 3) for r in ("ddl", "mgt")] == [1.0, 0.998]
    assert round(val["preln"]["acc"], 2) == 0.31
    assert round(val["mgt"]["loss"], 2) == 0.85 and round(val["ddl"]["loss"], 2) == 0.15
    ddl, mgt = result["beta"]["ddl"]["100%"]["mean"], result["beta"]["mgt"]["100%"]["mean"]
    assert (round(min(ddl), 2), round(max(ddl), 2)) == (0.9, 1.09)
    assert (round(min(mgt), 2), round(max(mgt), 2)) == (0.49, 0.52)
    text = NOTEBOOKS["06_training_lab"].read_text()
    for quoted in ("1.000 and 0.998", "(0.31;", "loss 0.85", "0.90 to 1.09", "0.49 to 0.52"):
        assert quoted in text


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
    text = html.unescape(shown(outputs))  # a verdict's "> 0" is "&gt; 0" in the page's HTML
    for row in report.verdict_rows(results):
        assert row["verdict"] in text
    assert "Tiny run finished" in text
    # a tiny rerun is a smoke run: each of its verdicts says it is not comparable
    assert "Smoke run at tiny scale" in text and "(not comparable)" in text
    assert "committed: <strong>" in text
    if "edelta_benchmarks" in results:
        assert "GPT" in text and "paper" in text  # the E∆ table
    # which results the fused rule maths have not trained yet, and what retraining them costs
    assert "results trained before the fused rule maths" in text
    for row in decide.before_fused(results):
        assert row["command"] in text


def test_reproduce_notebook_shows_a_failed_rerun_on_the_page(monkeypatch, tmp_path):
    monkeypatch.setenv("GEOLAB_DATA", str(tmp_path))  # an empty data directory
    results = report.load_results(REPO / "data" / "results")
    defs = {"results": results, "protocol": ui("ablation"), "rerun": ui(True)}
    outputs, _ = load_notebook("07_reproduce").run(defs=defs)
    text = shown(outputs)
    assert "failed" in text and "DataNotFound" in text and "lacks them" in text


def test_lab_rows_fixed_decimals_per_metric_and_every_column_explained():
    from geolab.terms import TERMS, term, terms_markdown

    metrics = {"loss": 2.7806682, "ppl": 16.1297953, "acc": 0.076171875, "mse": 0.000123456}
    runs = [{"label": "#1 copy", "result": {"val": {"mgt": metrics}, "n_params": {"mgt": 7}}}]
    (row,) = lab.lab_rows(runs)
    assert (row["loss"], row["ppl"], row["acc"], row["mse"]) == (2.781, 16.13, 0.076, 0.0001235)
    assert lab.metric_names(runs) == ["loss", "ppl", "acc", "mse"]
    text = terms_markdown(lab.metric_names(runs) + ["norm_dev", "norm_dev_ref"])
    assert "**ppl**: perplexity" in text and "**norm_dev_ref**" in text
    assert term("ω").startswith('<abbr title="ω = ‖u‖‖v‖ sin a') and term("ω").endswith(">ω</abbr>")
    assert '"' not in TERMS["converged"] or "&quot;" in term("converged")
    with pytest.raises(ValueError, match="word='nope' is not allowed"):
        term("nope")
    with pytest.raises(ValueError, match="not allowed"):
        terms_markdown(["ppl", "nope"])


def test_reproduce_notebook_defines_its_verdict_words_on_hover_where_they_first_appear():
    """07's "learned", "converged" and "ratio to the best trivial baseline": the first time the
    page uses each, it is a hover whose definition is geolab.terms' own."""
    from geolab.terms import TERMS

    text = shown(load_notebook("07_reproduce").run()[0])
    words = ("learned", "converged", "ratio to the best trivial baseline")
    shown_hovers = dict(hovers(text))
    for word in words:
        assert shown_hovers[word] == TERMS[word]
        assert first_use_is_hovered(text, word), word
    assert all(TERMS[w] == d for w, d in hovers(text))  # any other hover: the same definitions
