"""``geolab bench``: run the benchmark suite of a source checkout (``python -m bench``).

The benchmarks live in ``bench/`` at the repository root, beside the package, not inside it: they
measure the package rather than ship with it. ``geolab bench`` therefore runs ``python -m bench``
from the checkout the installed ``geolab`` was imported from, with the same flags; an installed
wheel without a checkout says so and stops. The flags are defined here once and shared by both
entry points.
"""

import argparse
import subprocess
import sys
from pathlib import Path

from geolab.outputs import check_dir
from geolab.threads import check_threads

REPO = Path(__file__).resolve().parents[2]
ORDER = ("operators", "rules", "views", "live", "streams", "train", "memory")
# Run on their own, with a flag the suite cannot supply: bench_reference needs --reference PATH.
OPTIONAL = ("reference",)


def discover(folder: Path = REPO / "bench") -> list[str]:
    """Names of the benchmark modules (``bench_NAME.py`` in ``folder``), in the suite's order."""
    found = {p.stem[6:] for p in folder.glob("bench_*.py")} - set(OPTIONAL)
    return [name for name in ORDER if name in found] + sorted(found - set(ORDER))


def check_only(only: list[str] | None, available: list[str]) -> list[str]:
    """The benchmarks ``--only`` names (``rules`` or ``bench_rules``), all of them when it is
    not given; a one-line ValueError for a name that is no benchmark."""
    if not only:
        return available
    names = [name.removeprefix("bench_") for name in only]
    for name in names:
        if name not in available:
            raise ValueError(
                f"--only {name!r} is not allowed: no such benchmark; available: "
                f"{', '.join(available)}"
            )
    return [name for name in available if name in names]


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark flags, shared by ``geolab bench`` and ``python -m bench``."""
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a few iterations of everything (for tests; numbers are not meaningful)",
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="run only benchmark module NAME (e.g. rules or bench_rules); repeatable",
    )
    parser.add_argument(
        "--out",
        default=None,
        help="folder for results.json and RESULTS.md (default: bench/ of the checkout)",
    )
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads (default 2)")
    parser.add_argument(
        "--clock",
        choices=("auto", "cpu", "wall"),
        default="auto",
        help="process CPU time or wall time; auto: CPU time without CUDA, wall time with it",
    )


def cmd_bench(args) -> int:
    if not (REPO / "bench" / "__main__.py").is_file():
        raise ValueError(
            f"geolab bench needs a source checkout with bench/ beside the package; none at {REPO}"
        )
    check_threads(args.threads, "--threads")
    check_only(args.only, discover())  # here, so the error is one line and not the child's
    if args.out is not None:
        check_dir(args.out, "--out")  # here, so the error is one line and not the child's
    argv = [sys.executable, "-m", "bench", "--threads", str(args.threads), "--clock", args.clock]
    if args.quick:
        argv.append("--quick")
    for name in args.only or ():
        argv += ["--only", name]
    if args.out is not None:
        argv += ["--out", str(Path(args.out).resolve())]
    return subprocess.call(argv, cwd=REPO)


def add_bench_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``geolab bench`` (runs ``python -m bench`` from the repository root)."""
    bench = subparsers.add_parser(
        "bench",
        help="benchmark suite: operators, rule overhead, live views, training, memory",
        description="Run the benchmark suite (bench/ of the source checkout, via `python -m "
        "bench` from the repository root) and write results.json and RESULTS.md. Speeds are "
        "ratios measured interleaved in one process; absolute times are for orientation.",
    )
    add_bench_arguments(bench)
    bench.set_defaults(func=cmd_bench)
