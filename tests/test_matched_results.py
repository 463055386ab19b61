"""The E∆ table's matched-size variant as a result of its own (issue 39): written as
NAME-SCALE-matched.json (runs in NAME-SCALE-matched-runs/, figures under that stem) beside the
published settings' result, resumed from its runs folder, and shown by the results README and
notebook 07 as rows of its own with its counts apart; without it nothing changes.

One tiny matched sweep (near-π only, five runs of two steps: seconds) stands in for the small one.
"""

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import load_app, shown, table_row, ui

from geolab.cli import main
from geolab.experiments import NAMES, decide, get_protocol, pack, report
from geolab.experiments import verdicts as v
from geolab.experiments.runner import MATCHED, result_stem

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "data" / "results"
MATCHED_RUN = [
    "reproduce",
    "edelta_benchmarks",
    "--scale",
    "tiny",
    "--match-sizes",
    "--flavor",
    "geolab",
    "--tasks",
    "near_pi",
    "--no-png",
    "--threads",
    "1",
]
PUBLISHED_RUN = [a for a in MATCHED_RUN if a != "--match-sizes"]
LABEL = "edelta_benchmarks (E∆ table, matched sizes)"
CLAIM = "geolab: E∆ near-π single"  # the one claim a near-π sweep judges


@pytest.fixture(scope="module")
def tiny_out(tmp_path_factory) -> Path:
    """An OUT holding one tiny matched-size sweep."""
    out = tmp_path_factory.mktemp("matched") / "out"
    assert main([*MATCHED_RUN, "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def published_only(tmp_path_factory) -> Path:
    """data/results' result files without a matched-size result: the README and notebook 07 as
    they read before the variant was committed."""
    folder = tmp_path_factory.mktemp("published") / "results"
    folder.mkdir()
    for path in RESULTS.glob("*.json"):
        if not path.name.endswith(f"-{MATCHED}.json"):
            shutil.copy(path, folder / path.name)
    return folder


def copy_of(folder: Path, tmp_path: Path) -> Path:
    out = tmp_path / folder.name
    shutil.copytree(folder, out)
    return out


def test_the_stem_names_the_variant():
    assert result_stem("edelta_benchmarks", "small", {}) == "edelta_benchmarks-small"
    matched = {"match_sizes": True, "flavors": ["geolab"]}
    assert result_stem("edelta_benchmarks", "small", matched) == "edelta_benchmarks-small-matched"


def test_a_matched_sweep_writes_its_own_files_beside_the_published_one(tiny_out, tmp_path, capsys):
    out = copy_of(tiny_out, tmp_path)
    names = {p.name for p in out.iterdir()}
    assert "edelta_benchmarks-tiny-matched-near_pi.json" in names
    assert "edelta_benchmarks-tiny.json" not in names
    assert "edelta_benchmarks-tiny-matched-near_pi-learning-curves.html" in names
    runs = sorted(p.name for p in (out / "edelta_benchmarks-tiny-matched-near_pi-runs").iterdir())
    assert runs == [
        f"geolab-42-near_pi-{m}.json" for m in ("ddl", "edelta", "jpmhc", "mhc", "preln")
    ]
    result = json.loads((out / "edelta_benchmarks-tiny-matched-near_pi.json").read_text())
    assert result["config"]["match_sizes"] is True
    assert set(result["figures"]) >= {"edelta_benchmarks-tiny-matched-near_pi-learning-curves.html"}
    # the same flavor at the published sizes goes beside it, in the same OUT, without --force
    assert main([*PUBLISHED_RUN, "--out", str(out)]) == 0
    stem = "edelta_benchmarks-tiny-near_pi-geolab"
    assert (out / f"{stem}.json").is_file()
    assert (out / f"{stem}-runs" / "geolab-42-near_pi-preln.json").is_file()
    published = json.loads((out / f"{stem}.json").read_text())
    assert "match_sizes" not in published["config"]
    assert f"{stem}-learning-curves.html" in published["figures"]
    # --force is per file: the matched one is refused by its own name
    capsys.readouterr()
    assert main([*MATCHED_RUN, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "already holds edelta_benchmarks-tiny-matched-near_pi.json" in err
    assert "(variant matched-near_pi)" in err
    # ... and with --force resumes from its own runs folder: nothing trains again
    assert main([*MATCHED_RUN, "--force", "--out", str(out)]) == 0
    again = json.loads((out / "edelta_benchmarks-tiny-matched-near_pi.json").read_text())
    assert again["provenance"]["runs"]["trained"] == 0 and again["provenance"]["runs"]["found"] == 5
    assert again["per_seed"] == result["per_seed"]


def test_matched_runs_in_the_old_folder_are_named_and_resume_once_moved(tiny_out, tmp_path, capsys):
    out = copy_of(tiny_out, tmp_path)
    (out / "edelta_benchmarks-tiny-matched-near_pi.json").unlink()
    old = out / "edelta_benchmarks-tiny-runs"  # where a sweep before the variant's stem saved
    (out / "edelta_benchmarks-tiny-matched-near_pi-runs").rename(old)
    assert main([*MATCHED_RUN, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "holds matched-size runs" in err and "edelta_benchmarks-tiny-matched-near_pi-runs" in err
    # the published settings' sweep of every task (whose folder that is) meets them too, and
    # names the move (its check, on one saved run)
    saved = sorted(old.glob("*.json"))[0]
    ident = json.loads(saved.read_text())["identity"]
    ident["settings"].pop("match_sizes")
    with pytest.raises(ValueError, match="match_sizes differ.*matched-size runs: move"):
        pack.load_run(saved, ident)
    old.rename(out / "edelta_benchmarks-tiny-matched-near_pi-runs")
    assert main([*MATCHED_RUN, "--out", str(out)]) == 0
    result = json.loads((out / "edelta_benchmarks-tiny-matched-near_pi.json").read_text())
    assert result["provenance"]["runs"] == {
        **result["provenance"]["runs"],
        "trained": 0,
        "found": 5,
    }


# --- the results README ------------------------------------------------------------------------


def results_with_matched(tiny_out: Path, tmp_path: Path, verdict: str | None = None) -> Path:
    """A copy of data/results' result files with the tiny matched result as its small one
    (``verdict``: its claim's verdict replaced), and the matched paper plan kept there (planning
    it builds 25 models on the meta device: the cached entry stands in, 0.0123 GPU-hours)."""
    folder = tmp_path / "results"
    folder.mkdir()
    for path in RESULTS.glob("*.json"):
        shutil.copy(path, folder / path.name)
    matched = every_task(tiny_out / "edelta_benchmarks-tiny-matched-near_pi.json")
    if verdict is not None:
        for h in matched["hypotheses"]:
            h["verdict"] = verdict
    (folder / "edelta_benchmarks-small-matched.json").write_text(json.dumps(matched))
    keep_matched_plan(folder)
    return folder


def every_task(path: Path) -> dict:
    """The tiny near-π result at ``path`` standing in for a sweep of every task (its config's
    tasks the scale's: a variant only by its settings, ``runner.variant``)."""
    result = json.loads(path.read_text())
    result["config"]["tasks"] = get_protocol("edelta_benchmarks").SCALES["small"]["tasks"]
    return result


def keep_matched_plan(folder: Path, options: dict = decide.MATCHED_OPTIONS) -> None:
    """The matched paper plan (of the variant ``options`` make) kept in ``folder`` as if
    planned there (0.0123 GPU-hours)."""
    path = folder / decide.PAPER_PLAN
    plans = json.loads(path.read_text()) if path.is_file() else {}
    key, _, digest = decide.paper_settings("edelta_benchmarks", options)
    plans[key] = {"settings": digest, "gpu_hours": 0.0123, "assumption": "test"}
    path.write_text(json.dumps(plans))


def test_the_readme_shows_the_matched_rows_beside_the_published_ones(tiny_out, tmp_path):
    folder = results_with_matched(tiny_out, tmp_path)
    results = report.load_results(folder)
    keys = list(results)
    assert [k for k in keys if k in NAMES] == list(NAMES)  # (other variants may sit between)
    assert keys[keys.index("edelta_benchmarks") + 1] == f"edelta_benchmarks-{MATCHED}"
    text = report.readme_text(results, folder)
    table = report.verdict_markdown(results).splitlines()
    ours = [i for i, ln in enumerate(table) if ln.startswith(f"| {LABEL} |")]
    published = [i for i, ln in enumerate(table) if ln.startswith("| edelta_benchmarks |")]
    assert ours == [published[-1] + 1]  # right after the published settings' E∆ rows
    row = table_row(report.verdict_markdown(results), LABEL, CLAIM)
    assert "edelta 2,908, preln 2,912 (spread 0.1%)" in row  # the 3 % size check passes
    assert v.SIZES_DIFFER not in row and "inconclusive: fewer than 3 seeds; not learned" in row
    # its undecided claim: the variant's own paper scale, priced from the kept plan
    fix = table_row(report.undecided_markdown(results, folder), LABEL, CLAIM)
    assert fix in text
    assert "--scale paper --match-sizes --flavor geolab" in fix and "≈ 0.012 GPU-hours" in fix
    # its sections: E∆ table and sizes, judging, findings, wall time, reductions
    assert "## E∆ table, matched sizes" in text and "| geolab | near_pi | 2,912 (MLP 32) |" in text
    assert text.count(f"**{LABEL}**") == 3  # its wall-time row: a tiny run, however loaded
    assert len(re.findall(rf"\| {re.escape(LABEL)} \| \d+\.\d min \|", text)) == 1, text
    # the CPU plan no longer offers to train it
    assert not any(r["matched"] for r in decide.cpu_plan(results))
    assert "--match-sizes" not in report.cpu_plan_markdown(results)


def test_the_counts_say_what_each_variant_decides(tiny_out, tmp_path, published_only):
    folder = results_with_matched(tiny_out, tmp_path, verdict=v.REPRODUCED)
    results = report.load_results(folder)
    alone = report.counts_markdown(report.published(results))
    published, *variants = report.counts_markdown(results).split("\n\n")
    assert published == f"Published settings: {alone}"
    (matched,) = [line for line in variants if line.startswith("E∆ table, matched sizes ")]
    (same,) = [h for h in results["edelta_benchmarks"]["hypotheses"] if h["id"] == CLAIM]
    settled = int(v.kind(same["verdict"]) in (v.REPRODUCED, v.NOT_REPRODUCED))
    assert matched == (
        "E∆ table, matched sizes (`--match-sizes --flavor geolab`, not added to the count above): "
        "1 claims: "
        "**1 reproduced**, **0 not reproduced at this scale**, **0 inconclusive**, **0 undecidable "
        "on this task** — it decides 1 of its 1 claims; the published settings decide "
        f"{settled} of the same 1."
    )
    # the published settings' count is the one without the variant
    assert report.verdict_counts(report.published(results)) == report.verdict_counts(
        report.published(report.load_results(published_only))
    )


def test_without_a_matched_file_the_readme_changes_only_in_the_cpu_plan(
    tiny_out, tmp_path, published_only
):
    folder = results_with_matched(tiny_out, tmp_path)
    results = report.load_results(folder)
    without = report.load_results(published_only)
    assert list(report.published(without)) == list(NAMES)
    assert report.published(results).keys() == report.published(without).keys()
    text, before = report.readme_text(results, folder), report.readme_text(without, published_only)
    assert "matched sizes" not in report.counts_markdown(without)
    assert LABEL not in before and "## E∆ table, matched sizes" not in before
    gone = [ln for ln in before.splitlines() if ln not in text.splitlines()]
    plan = decide.matched_plan(without)
    seconds = sum(
        run["seconds"]
        for row in without["edelta_benchmarks"]["per_seed"].values()
        for key, run in row.items()
        if key.startswith("geolab/")
    )
    every = sum(
        run["seconds"]
        for row in without["edelta_benchmarks"]["per_seed"].values()
        for run in row.values()
    )
    # the geolab flavor's runs: a part of the table's recorded seconds, not all of them
    assert plan["cpu_hours"] == pytest.approx(seconds / 3600) and 0 < seconds < every
    total = sum(r["cpu_hours"] for r in decide.cpu_plan(without))
    lines = text.splitlines()
    # the variant's claims join the groups of what is open (a tiny run learned nothing)
    opened = [ln for ln in report.open_markdown(without).splitlines() if ln not in lines]
    counts = [ln for ln in report.counts_markdown(without).splitlines() if ln not in lines]
    # the matched variant was the plan's one row: with it the plan is one line, without it a table
    assert "Every planned CPU rerun has landed" in report.cpu_plan_markdown(results)
    intro = report.cpu_plan_markdown(without).splitlines()[0]
    assert gone == [
        *opened,
        *counts,  # without any variant the count has no "Published settings: " before it
        intro,
        "| protocol | settles | command | one-thread CPU-hours |",
        "| --- | --- | --- | ---: |",
        f"| edelta_benchmarks | {plan['settles']} | `{plan['command']}` | "
        f"{plan['cpu_hours']:.2f} |",
        f"| total | | | {total:.2f} |",
    ]


def test_a_file_of_the_other_variant_is_refused_by_name(tiny_out, tmp_path):
    folder = tmp_path / "r"
    folder.mkdir()
    # a matched-size result under the published settings' name (written before the variant's stem)
    matched = every_task(tiny_out / "edelta_benchmarks-tiny-matched-near_pi.json")
    (folder / "edelta_benchmarks-small.json").write_text(json.dumps(matched))
    with pytest.raises(ValueError, match=r"\(E∆ table, matched sizes\), whose file is edelta_b"):
        report.load_results(folder)
    (folder / "edelta_benchmarks-small.json").unlink()
    del matched["config"]["match_sizes"]
    (folder / "edelta_benchmarks-small-matched.json").write_text(json.dumps(matched))
    with pytest.raises(ValueError, match=r"geolab flavor only\), whose file is edelta_benchmarks-"):
        report.load_results(folder)
    del matched["config"]["flavors"]
    (folder / "edelta_benchmarks-small-matched.json").write_text(json.dumps(matched))
    with pytest.raises(ValueError, match=r"\(published settings\), whose file is edelta_bench"):
        report.load_results(folder)


def test_readme_cli_rejudges_and_redraws_the_matched_file_under_its_stem(tiny_out, tmp_path):
    folder = tmp_path / "r"
    folder.mkdir()
    stem = "edelta_benchmarks-small-matched-near_pi"  # matched sizes, near-π only: its own stem
    shutil.copy(tiny_out / "edelta_benchmarks-tiny-matched-near_pi.json", folder / f"{stem}.json")
    keep_matched_plan(folder, decide.MATCHED_OPTIONS | {"tasks": ["near_pi"]})
    assert main(["reproduce", "--readme", "--rejudge", "--no-png", "--out", str(folder)]) == 0
    assert (folder / f"{stem}-learning-curves.html").is_file()
    assert not (folder / "edelta_benchmarks-small-learning-curves.html").exists()
    rejudged = json.loads((folder / f"{stem}.json").read_text())
    assert rejudged["judging"]["rules"] and rejudged["config"]["match_sizes"] is True
    text = (folder / "README.md").read_text()
    label = "edelta_benchmarks (E∆ table, matched sizes, near_pi only, 2 steps)"
    assert table_row(report.verdict_markdown(report.load_results(folder)), label, CLAIM) in text


# --- notebook 07 ---------------------------------------------------------------------------------


def run_07(results: dict, folder: Path) -> str:
    """What notebook 07 shows of ``results`` read from ``folder`` (its paper plans kept there)."""
    app = load_app(REPO / "notebooks" / "07_reproduce.py")
    defs = {"results": results, "results_dir": folder, "protocol": ui(next(iter(results)))}
    outputs, _ = app.run(defs=defs | {"rerun": ui(False)})
    return shown(outputs)


def test_notebook_07_shows_the_matched_table_or_how_to_train_it(tiny_out, tmp_path, published_only):
    without = report.load_results(published_only)
    text = run_07(without, published_only)
    plan = decide.matched_plan(without)
    assert "No matched-size result" in text and plan["command"] in text
    assert f"≈ {plan['cpu_hours']:.2g} one-thread CPU-hours" in text
    folder = results_with_matched(tiny_out, tmp_path)
    text = run_07(report.load_results(folder), folder)
    assert "No matched-size result" not in text
    assert "Matched sizes: every geolab model at GPT" in text and "2,912 (MLP 32)" in text
