"""Run the benchmark suite: ``python -m bench [--quick] [--only NAME] [--out DIR] [--threads N]``.

Every ``bench/bench_*.py`` module exposes ``run(quick: bool) -> list[dict]``; each row is
``{"group", "name", "value", "unit", "target", "met", "notes"}`` (``target`` a readable string or
None, ``met`` True/False, or None where there is no target). The runner calls them in a fixed
order (unknown modules last, alphabetically), records the machine, and writes ``results.json``
and ``RESULTS.md`` to ``--out`` (default: this folder). With ``--only``, rows of the modules not
run are kept from an existing ``results.json`` in the output folder, so one group can be rerun.
A module that raises becomes an error row and the exit status is 1.
"""

import argparse
import datetime
import importlib
import json
import math
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import torch

from bench.timing import clock_name, seconds, set_clock
from geolab.cli.bench import add_bench_arguments, check_only, discover
from geolab.cli.errors import check_path_flags
from geolab.outputs import check_dir
from geolab.threads import check_threads

HERE = Path(__file__).resolve().parent
ROW_KEYS = ("group", "name", "value", "unit", "target", "met", "notes")
CLOCK_LINES = {
    "cpu": "process CPU time, so neighbours on a shared machine do not count",
    "wall": "wall-clock time",
}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git_revision() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=HERE,
            capture_output=True,
            text=True,
            timeout=10,
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=HERE,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if out.returncode:
        return "unknown (no commit)"
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _floors() -> dict:
    """Two floors of this machine at the suite's thread count and clock, best of 5: memory
    bandwidth (a·b on 64 MB float32 vectors, 3 × 64 MB moved) and a training-sized matrix product
    (1024×128 · 128×512, the MLP's first layer at B·S = 1024). Elementwise work on tensors beyond
    the cache runs at the first, the layers' products near the second."""
    a, b = torch.randn(1 << 24), torch.randn(1 << 24)
    x, w = torch.randn(1024, 128), torch.randn(128, 512)

    def best(fn):
        fn()
        return min(seconds(fn) for _ in range(5))

    return {
        "memory_gb_s": round(3 * a.numel() * 4 / best(lambda: a * b) / 1e9, 1),
        "matmul_gflop_s": round(2 * 1024 * 128 * 512 / best(lambda: x @ w) / 1e9, 1),
    }


def _load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine_info() -> dict:
    """Where and with what the numbers were measured."""
    info = {
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "torch_threads": torch.get_num_threads(),
        "clock": clock_name(),
        "load_average": _load_average(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "git": _git_revision(),
        **_floors(),
    }
    return info


def _clean(row: dict, group: str) -> dict:
    missing = [key for key in ROW_KEYS if key not in row]
    if missing:
        raise ValueError(f"benchmark row {row!r} lacks {missing}; rows need {ROW_KEYS}")
    out = {key: row[key] for key in ROW_KEYS}
    out["group"] = out["group"] or group
    if out["value"] is not None:
        out["value"] = float(out["value"])
    if out["met"] is not None:
        out["met"] = bool(out["met"])
    return out


def run_module(name: str, quick: bool) -> tuple[list[dict], dict]:
    """Rows of ``bench_<name>.run(quick)`` and its bookkeeping; an exception becomes a row."""
    start = time.perf_counter()
    try:
        module = importlib.import_module(f"bench.bench_{name}")
        rows = [_clean(row, name) for row in module.run(quick)]
        error = None
    except Exception as err:  # one broken benchmark must not hide the others' numbers
        traceback.print_exc()
        error = f"{type(err).__name__}: {err}"
        rows = [
            {
                "group": name,
                "name": "error",
                "value": None,
                "unit": "",
                "target": None,
                "met": False,
                "notes": error,
            }
        ]
    meta = {
        "quick": quick,
        "seconds": round(time.perf_counter() - start, 1),
        "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "error": error,
        # Per group: an --only run keeps the other groups' rows, measured at other revisions.
        "git": _git_revision(),
        "load_average": _load_average(),
    }
    return rows, meta


def _fmt(value) -> str:
    if value is None:
        return "—"
    if not math.isfinite(value):
        return str(value)
    if value == 0 or 1e-3 <= abs(value) < 1e5:
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{value:.3e}"


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


LINE_KEYS = (("git", "git"), ("finished", "finished"), ("load_average", "load"))


def markdown(results: dict) -> str:
    """The results as a markdown report: machine, then one table per group."""
    m = results["machine"]
    rows = results["rows"]
    targets = [r for r in rows if r["met"] is not None]
    met = sum(r["met"] for r in targets)
    lines = [
        "# geolab benchmarks",
        "",
        f"Generated by `python -m bench` ({'quick' if results['quick'] else 'full'} run) on "
        f"{results['generated']}.",
        "",
        f"- machine: {m['cpu']} ({m['cpu_count']} CPUs visible), {m['platform']}"
        + (f", GPU {m['cuda']}" if m["cuda"] else ""),
        f"- python {m['python']}, torch {m['torch']}, numpy {m['numpy']}, "
        f"torch threads {m['torch_threads']}, git {m['git']} (the latest run; each group's "
        "line names the revision it was measured at)",
        f"- clock: {m['clock']} ({CLOCK_LINES[m['clock']]}); load average when written "
        f"{m['load_average']}",
        f"- floors measured when written: memory bandwidth {m.get('memory_gb_s', '?')} GB/s "
        f"(a·b on 64 MB), matrix product {m.get('matmul_gflop_s', '?')} GFLOP/s "
        "(1024×128 · 128×512)",
        f"- targets met: {met} of {len(targets)}",
        "",
        "Speeds are medians of per-round ratios measured interleaved in one process (the machine "
        "is shared); absolute times are for orientation only. What bounds each missed target, "
        "with profiles and proposed fixes: bench/README.md.",
    ]
    for group in dict.fromkeys(r["group"] for r in rows):
        meta = results["modules"].get(group, {})
        lines += [
            "",
            f"## {group}" + _group_line(meta),
            "",
            "| name | value | unit | target | met | notes |",
            "|---|---:|---|---|:-:|---|",
        ]
        for r in (r for r in rows if r["group"] == group):
            mark = {True: "yes", False: "**no**", None: ""}[r["met"]]
            lines.append(
                f"| {_cell(r['name'])} | {_fmt(r['value'])} | {_cell(r['unit'])} | "
                f"{_cell(r['target'] or '')} | {mark} | {_cell(r['notes'] or '')} |"
            )
    return "\n".join(lines) + "\n"


def _group_line(meta: dict) -> str:
    """The group heading's tail, e.g. ``(59.6 s wall; git abc1234; finished …; load […])``: where
    and when the group's rows were measured (files written before this lack the last three)."""
    parts = [f"{meta['seconds']} s wall"] if "seconds" in meta else []
    parts += [f"{label} {meta[key]}" for key, label in LINE_KEYS if key in meta]
    return f" ({'; '.join(parts)})" if parts else ""


def _previous(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    add_bench_arguments(parser)
    args = parser.parse_args(argv)
    try:
        torch.set_num_threads(check_threads(args.threads, "--threads"))
    except ValueError as err:
        parser.error(str(err))
    clock = args.clock
    if clock == "auto":
        clock = "wall" if torch.cuda.is_available() else "cpu"
    set_clock(clock)
    available = discover(HERE)
    try:
        wanted = check_only(args.only, available)
    except ValueError as err:
        parser.error(str(err))
    out = (HERE if args.out is None else Path(args.out)).resolve()
    try:
        check_path_flags(args)  # --out '' would be the current folder
        check_dir(out, "--out")
    except ValueError as err:
        parser.error(str(err))
    out.mkdir(parents=True, exist_ok=True)
    rows, modules, failed = [], {}, False
    for name in wanted:
        print(f"[bench] {name} ({'quick' if args.quick else 'full'}) …", flush=True)
        new_rows, meta = run_module(name, args.quick)
        rows += new_rows
        modules[name] = meta
        failed |= meta["error"] is not None
        for r in new_rows:
            print(f"  {r['name']:<48} {_fmt(r['value']):>10} {r['unit']:<8} {r['notes'] or ''}")
    # Read what to keep only now, so --only runs that overlap in time do not drop each other.
    previous = _previous(out / "results.json") if args.only else {}
    rows = [r for r in previous.get("rows", []) if r["group"] not in wanted] + rows
    modules = {k: v for k, v in previous.get("modules", {}).items() if k not in wanted} | modules
    rank = {name: i for i, name in enumerate(available)}
    rows.sort(key=lambda r: rank.get(r["group"], len(rank)))
    results = {
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "quick": any(m["quick"] for m in modules.values()),
        "machine": machine_info(),
        "modules": modules,
        "rows": rows,
    }
    (out / "results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    (out / "RESULTS.md").write_text(markdown(results))
    print(f"[bench] wrote {out / 'results.json'} and {out / 'RESULTS.md'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
