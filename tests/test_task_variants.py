"""Some of the E∆ table's tasks at a longer budget (``--tasks … --steps …``, issue 39's near-π
at 2000 iterations) as a variant of its own: written as NAME-SCALE-TASKS.json beside the whole
table, never over it, and shown by the results README and notebook 07 with its own label,
counts and section; the CPU plan prices it from the table's runs of those tasks and drops it
once it is trained.

One tiny sweep (near-π only, both flavors, eleven runs of three steps: seconds) stands in for
the small one.
"""

import json
import shutil
from pathlib import Path

import pytest
from conftest import load_app, shown, table_row, ui

from geolab.cli import main
from geolab.experiments import decide, report
from geolab.experiments.runner import result_stem

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "data" / "results"
NAME = "edelta_benchmarks"
RUN = [
    "reproduce",
    NAME,
    "--scale",
    "tiny",
    "--tasks",
    "near_pi",
    "--steps",
    "3",
    "--no-png",
    "--threads",
    "1",
]
LABEL = f"{NAME} (E∆ table, near_pi only, 3 steps)"
CLAIM = "geolab: E∆ near-π single"
REFERENCE_CLAIM = "reference: E∆ near-π single"
GEOLAB_MODELS = ("ddl", "edelta", "jpmhc", "mhc", "preln")
REFERENCE_MODELS = (*GEOLAB_MODELS, "edelta_noreg")


@pytest.fixture(scope="module")
def tiny_out(tmp_path_factory) -> Path:
    """An OUT holding a whole tiny E∆ table (the committed small one's bytes, under the tiny
    name) and then one tiny near-π sweep."""
    out = tmp_path_factory.mktemp("tasks") / "out"
    out.mkdir()
    shutil.copy(RESULTS / f"{NAME}-small.json", out / f"{NAME}-tiny.json")
    assert main([*RUN, "--out", str(out)]) == 0
    return out


def test_the_stem_names_each_variant():
    every = ["echo", "gyroscope", "inversion", "near_pi", "near_pi_multi"]
    assert result_stem(NAME, "small", {"tasks": every}) == f"{NAME}-small"
    assert result_stem(NAME, "small", {"tasks": ["near_pi"]}) == f"{NAME}-small-near_pi"
    # in the scale's order, whatever order they were asked in
    both = {"tasks": ["near_pi_multi", "near_pi"]}
    assert result_stem(NAME, "small", both) == f"{NAME}-small-near_pi+near_pi_multi"
    matched = decide.MATCHED_OPTIONS | {"tasks": ["echo"]}
    assert result_stem(NAME, "small", matched) == f"{NAME}-small-matched-echo"
    # protocols without tasks have no task variant
    assert result_stem("reflection", "small", {"tasks": ["x"]}) == "reflection-small"
    # one flavor of two is a variant too (a geolab-only sweep never replaces both flavors'),
    # except the matched-size one, the geolab flavor's by construction
    one = {"tasks": ["near_pi"], "flavors": ["geolab"]}
    assert result_stem(NAME, "small", one) == f"{NAME}-small-near_pi-geolab"
    assert result_stem(NAME, "small", {"flavors": ["reference"]}) == f"{NAME}-small-reference"
    two = {"flavors": ["geolab", "reference"]}
    assert result_stem(NAME, "small", two) == f"{NAME}-small"
    assert result_stem(NAME, "small", decide.MATCHED_OPTIONS) == f"{NAME}-small-matched"
    result = {"protocol": NAME, "scale": "small", "seeds": [42, 123, 456], "config": one}
    result["config"] = one | {"train": {"steps": 400}}
    assert decide.variant_flags(result) == "--tasks near_pi --flavor geolab"
    assert report.variant_label(result) == "E∆ table, near_pi only, 400 steps, geolab flavor only"


def test_a_task_sweep_writes_beside_the_whole_table_and_leaves_it(tiny_out):
    assert (tiny_out / f"{NAME}-tiny.json").read_bytes() == (
        RESULTS / f"{NAME}-small.json"
    ).read_bytes()
    result = json.loads((tiny_out / f"{NAME}-tiny-near_pi.json").read_text())
    assert result["config"]["tasks"] == ["near_pi"] and result["config"]["train"]["steps"] == 3
    runs = sorted(p.name for p in (tiny_out / f"{NAME}-tiny-near_pi-runs").iterdir())
    assert runs == sorted(
        f"{flavor}-42-near_pi-{m}.json"
        for flavor, models in (("geolab", GEOLAB_MODELS), ("reference", REFERENCE_MODELS))
        for m in models
    )
    assert f"{NAME}-tiny-near_pi-learning-curves.html" in result["figures"]
    assert [h["id"] for h in result["hypotheses"]] == [REFERENCE_CLAIM, CLAIM]


def keep_plan(folder: Path) -> None:
    """The near-π variant's paper plan kept in ``folder`` as if planned there (0.0456 GPU-hours)."""
    path = folder / decide.PAPER_PLAN
    plans = json.loads(path.read_text()) if path.is_file() else {}
    key, _, digest = decide.paper_settings(NAME, {"tasks": ["near_pi"]})
    assert key == f"{NAME}-near_pi"
    plans[key] = {"settings": digest, "gpu_hours": 0.0456, "assumption": "test"}
    path.write_text(json.dumps(plans))


def results_with_variant(tiny_out: Path, tmp_path: Path, edit=None) -> Path:
    """A copy of data/results' result files with the tiny near-π sweep as its small variant
    (``edit``: applied to it first)."""
    folder = tmp_path / "results"
    folder.mkdir(parents=True)
    for path in RESULTS.glob("*.json"):
        shutil.copy(path, folder / path.name)
    result = json.loads((tiny_out / f"{NAME}-tiny-near_pi.json").read_text())
    if edit is not None:
        edit(result)
    (folder / f"{NAME}-small-near_pi.json").write_text(json.dumps(result))
    keep_plan(folder)
    return folder


def test_the_readme_shows_the_variant_beside_the_whole_table(tiny_out, tmp_path):
    folder = results_with_variant(tiny_out, tmp_path)
    results = report.load_results(folder)
    # the variants follow the published table in file-name order, the near-π one among them
    keys = list(results)
    assert keys[keys.index("reflection") - 1] == f"{NAME}-near_pi" and f"{NAME}-matched" in keys
    assert keys.index(NAME) < keys.index(f"{NAME}-matched") < keys.index(f"{NAME}-near_pi")
    published = without_variant(report.load_results(RESULTS))
    text = report.readme_text(results, folder)
    # the whole table's rows and counts are the committed ones
    assert report.verdict_markdown(report.published(published)) in report.verdict_markdown(
        report.published(results)
    )
    counts = report.counts_markdown(results).split("\n\n")
    assert counts[:-1] == report.counts_markdown(published).split("\n\n")
    assert counts[-1].startswith(
        "E∆ table, near_pi only, 3 steps (`--tasks near_pi --steps 3`, not added to the count "
        "above): 2 claims:"
    )
    assert "the published settings decide 0 of the same 2." in counts[-1]
    table_row(report.verdict_markdown(results), LABEL, CLAIM)
    fix = table_row(report.undecided_markdown(results, folder), LABEL, CLAIM)
    assert "`geolab reproduce edelta_benchmarks --scale paper --tasks near_pi`" in fix
    assert "≈ 0.046 GPU-hours" in fix and fix in text
    heading = "## E∆ table, near_pi only, 3 steps: validation MSE (`--tasks near_pi --steps 3`)"
    section = text[text.index(heading) :]
    assert section.index(report.edelta_markdown(results[f"{NAME}-near_pi"])) < section.index(
        "\n## "
    )
    assert f"**{LABEL}**" in text and "every run trained 3 steps (`--steps 3`)" in text


def without_variant(results: dict) -> dict:
    """``results`` without a near-π variant (the committed one, once data/results holds it)."""
    return {k: r for k, r in results.items() if k != f"{NAME}-near_pi"}


def near_pi_row(results: dict) -> dict | None:
    return next((r for r in decide.cpu_plan(results) if "--tasks near_pi" in r["command"]), None)


def test_the_cpu_plan_prices_the_tasks_runs_and_drops_them_once_trained(tiny_out, tmp_path):
    committed = report.load_results(RESULTS)
    published = without_variant(committed)
    row = near_pi_row(published)
    table = published[NAME]
    seconds = sum(
        run["seconds"]
        for per_seed in table["per_seed"].values()
        for key, run in per_seed.items()
        if key.split("/")[1] == "near_pi"  # both flavors, not near_pi_multi
    )
    steps = table["config"]["train"]["steps"]
    assert row["cpu_hours"] == pytest.approx(seconds * 2000 / steps / 3600)
    # a shorter or single-seed variant leaves it in the plan; one at 2000 steps on 3 seeds not
    short = report.load_results(results_with_variant(tiny_out, tmp_path / "a"))
    assert near_pi_row(short) == row

    def trained(result):
        result["config"]["train"]["steps"] = 2000
        result["seeds"] = [42, 123, 456]

    done = report.load_results(results_with_variant(tiny_out, tmp_path / "b", trained))
    assert near_pi_row(done) is None
    assert [r["command"] for r in decide.cpu_plan(done)] == [
        r["command"] for r in decide.cpu_plan(published) if r != row
    ]
    # the committed variant, when there is one, is such a result
    if f"{NAME}-near_pi" in committed:
        assert near_pi_row(committed) is None


def test_three_more_seeds_rerun_the_variant_at_its_settings(tiny_out):
    result = json.loads((tiny_out / f"{NAME}-tiny-near_pi.json").read_text())
    assert decide.more_seeds_command(NAME, result) == (
        f"geolab reproduce {NAME} --scale tiny --tasks near_pi --steps 3 --seeds 4 --jobs 2 "
        "--threads 1 --force --out OUT"
    )
    # a variant trained on more seeds than its scale's says so, and grows from its own count
    result["seeds"] = [42, 1001, 1002]
    assert report.variant_label(result) == "E∆ table, near_pi only, 3 steps, 3 seeds"
    assert decide.variant_flags(result) == "--tasks near_pi --steps 3 --seeds 3"
    command = decide.more_seeds_command(NAME, result)
    assert command.count("--seeds") == 1 and "--seeds 6 " in command


def test_notebook_07_shows_the_variant(tiny_out, tmp_path):
    folder = results_with_variant(tiny_out, tmp_path)
    results = report.load_results(folder)
    app = load_app(REPO / "notebooks" / "07_reproduce.py")
    defs = {"results": results, "results_dir": folder, "protocol": ui(f"{NAME}-near_pi")}
    outputs, _ = app.run(defs=defs | {"rerun": ui(False)})
    text = shown(outputs)
    assert "E∆ table, near_pi only, 3 steps" in text and "--tasks near_pi --steps 3" in text
    assert "E∆ table, near_pi only, 3 steps: 2 claims" not in text  # a section, not only counts
