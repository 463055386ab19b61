"""The benchmark suite runs end to end in --quick mode (so it cannot rot) and its helpers are right.

No timing assertions: only that every benchmark module produced well-formed rows, that ratios are
positive and finite, and that a quick run into a temporary folder leaves the committed results
alone.
"""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from bench.__main__ import ROW_KEYS, discover, markdown
from bench.timing import bracketed, interleaved, median_ratio
from geolab.rules import RESIDUALS

REPO = Path(__file__).resolve().parents[1]
COMMITTED = [REPO / "bench" / "results.json", REPO / "bench" / "RESULTS.md"]


def _snapshot():
    return {p: p.read_bytes() if p.exists() else None for p in COMMITTED}


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    before = _snapshot()
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--threads", "1", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert _snapshot() == before, "a --quick run into --out must not touch bench/results.*"
    return json.loads((out / "results.json").read_text()), (out / "RESULTS.md").read_text()


def test_quick_run_schema(quick_run):
    results, _ = quick_run
    assert results["quick"] is True
    machine = results["machine"]
    for key in ("platform", "cpu", "python", "torch", "numpy", "torch_threads", "git", "clock"):
        assert machine[key] not in (None, ""), key
    assert machine["torch_threads"] == 1
    assert machine["memory_gb_s"] > 0 and machine["matmul_gflop_s"] > 0
    for row in results["rows"]:
        assert tuple(row) == ROW_KEYS
        assert row["name"] != "error", row["notes"]
        assert isinstance(row["name"], str) and row["name"]
        assert row["met"] in (True, False, None)
        assert (row["target"] is None) == (row["met"] is None), row
        if row["value"] is not None:
            assert math.isfinite(row["value"]), row


def test_every_module_reports(quick_run):
    results, _ = quick_run
    groups = {row["group"] for row in results["rows"]}
    assert set(discover()) <= groups
    assert {"operators", "rules", "views", "train", "memory"} <= groups
    assert all(results["modules"][name]["error"] is None for name in discover())


def test_ratios_positive_and_finite(quick_run):
    results, _ = quick_run
    ratios = [r for r in results["rows"] if "×" in r["unit"] and r["value"] is not None]
    assert len(ratios) >= 20  # operators, every rule vs preln, checkpointing
    assert all(r["value"] > 0 and math.isfinite(r["value"]) for r in ratios)
    rules = [r for r in results["rows"] if r["group"] == "rules"]
    own = [n for n, cls in RESIDUALS.items() if cls.__module__.startswith("geolab.rules.")]
    assert len(rules) == len(own) - 1  # every rule but the preln baseline itself
    throughput = [r for r in results["rows"] if r["unit"] == "tokens/s" and r["value"]]
    assert throughput and all(r["value"] > 0 for r in throughput)


def test_markdown_report(quick_run):
    results, text = quick_run
    assert text == markdown(results)
    assert "| name | value | unit | target | met | notes |" in text
    for group in {row["group"] for row in results["rows"]}:
        assert f"## {group}" in text
    for name, meta in results["modules"].items():
        assert f"git {meta['git']}" in text.split(f"## {name}", 1)[1].split("\n", 1)[0]


def test_each_group_names_the_revision_it_was_measured_at():
    # An --only run keeps the other groups' rows: their heading must not claim the new revision.
    row = dict.fromkeys(ROW_KEYS) | {"name": "x", "unit": "ms", "value": 1.0}
    results = {
        "quick": False,
        "generated": "2026-12-02T18:39:10+00:00",
        "machine": {
            "cpu": "c",
            "cpu_count": 2,
            "platform": "p",
            "cuda": None,
            "python": "3.11",
            "torch": "2",
            "numpy": "2",
            "torch_threads": 1,
            "git": "bbbbbbb",
            "clock": "cpu",
            "load_average": [1.0],
        },
        "modules": {
            "old": {"seconds": 3.0, "finished": "2026-12-01T00:00:00+00:00", "git": "aaaaaaa"},
            "new": {"seconds": 4.0, "finished": "2026-12-02T18:39:00+00:00", "git": "bbbbbbb"},
            "legacy": {"seconds": 5.0},
        },
        "rows": [row | {"group": g} for g in ("old", "new", "legacy")],
    }
    heads = [line for line in markdown(results).splitlines() if line.startswith("## ")]
    assert heads == [
        "## old (3.0 s wall; git aaaaaaa; finished 2026-12-01T00:00:00+00:00)",
        "## new (4.0 s wall; git bbbbbbb; finished 2026-12-02T18:39:00+00:00)",
        "## legacy (5.0 s wall)",
    ]


def test_median_ratio_pairs_rounds():
    # Paired by round: a slow round (×10 both) does not move the ratio.
    assert median_ratio([2.0, 20.0, 2.2], [1.0, 10.0, 1.0]) == 2.0
    with pytest.raises(ValueError, match="equally many"):
        median_ratio([1.0], [1.0, 2.0])


def test_interleaved_and_bracketed_shapes():
    calls = []
    times = interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3)
    assert {k: len(v) for k, v in times.items()} == {"a": 3, "b": 3}
    assert calls[-6:] in (["a", "b", "b", "a", "a", "b"],)  # order rotates every round
    ratios = bracketed(lambda: sum(range(2000)), {"x": lambda: sum(range(4000))}, rounds=4)
    assert len(ratios["x"]) == 4 and all(r > 0 for r in ratios["x"])


def test_unknown_only_is_an_error(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--only", "nope", "--out", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "--only 'nope' is not allowed: no such benchmark; available: operators" in proc.stderr


def test_geolab_bench_is_wired():
    from geolab.cli import build_parser
    from geolab.cli.bench import cmd_bench

    args = build_parser().parse_args(["bench", "--quick", "--only", "rules", "--threads", "1"])
    assert args.func is cmd_bench
    assert (args.quick, args.only, args.threads, args.clock) == (True, ["rules"], 1, "auto")


def test_the_views_profiles_run():
    """``python -m bench.profile --views --replay`` and ``--first-load`` (README's evidence) at
    tiny sizes: the first load's parts are there and are CPU times, a view's profile names its
    calls, the replayed operators give finite times."""
    from bench import profile

    parts = profile.first_load(4, d_model=32, seq_len=8)
    assert list(parts) == [
        "cold first load",
        "kept weights (a new depth)",
        "cold, disk cache empty (computed, written)",
        "cold, disk cache filled (read)",
        "drawing the sublayer weights",
        "building the rule modules: postln",
        "building the rule modules: preln",
        "building the rule modules: mgt",
        "building the rule modules: pure attention",
        "the 4 curves' matrix-product floor",
    ]
    assert all(math.isfinite(s) and s >= 0 for s in parts.values()), parts
    head = profile.view_summary("mgt", 2, 3, d_model=32, seq_len=8).splitlines()[0]
    assert head.startswith("mgt: rank_profile on the stacked model, 2 layers, D=32, S=8")
    assert "aten calls" in head
    r = profile.replay_ratios("mgt", 2, rounds=1, d_model=32, seq_len=8)
    assert all(math.isfinite(v) and v >= 0 for v in r.values()), r
    with pytest.raises(SystemExit) as err:
        profile.main([])
    assert err.value.code == 2
