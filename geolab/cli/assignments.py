"""``geolab grade`` and ``geolab release`` (also ``python -m geolab grade|release``)."""

import argparse
import math
import sys
from pathlib import Path

from geolab.config import check_seed
from geolab.lock import hold
from geolab.threads import check_jobs

# the grader's resource limits: flag, default, what it bounds, the largest value allowed
# (timers and setrlimit take finite, bounded numbers: inf or 1e300 would overflow them)
LIMITS = (
    ("--timeout", 120.0, "CPU seconds per submission (wall-clock backstop: 4x)", 1e6),
    ("--task-timeout", 30.0, "CPU seconds per stub (wall-clock backstop: 4x)", 1e6),
    ("--memory-gb", 4.0, "GiB per student process, and per stub for all its processes", 1e6),
)


def check_limits(args) -> None:
    """ValueError naming the flag for a limit that is not a finite number in (0, its maximum],
    or a --jobs outside [1, 1024]; checked before anything is read or graded."""
    for flag, _, _, most in LIMITS:
        value = getattr(args, flag[2:].replace("-", "_"))
        if not (math.isfinite(value) and 0 < value <= most):
            raise ValueError(
                f"{flag} {value:g} is not allowed; it must be a finite number in (0, {most:g}]"
            )
    check_jobs(args.jobs, "--jobs")
    if args.seed is not None:
        check_seed(args.seed, "--seed")


def check_inputs(args) -> None:
    """--assignment and --hidden, checked before the grader prints its sandbox's limits: a
    mistake is then the command's one line."""
    from geolab.assignments.catalog import ASSIGNMENTS

    if args.assignment not in ASSIGNMENTS:
        raise ValueError(
            f"--assignment {args.assignment!r} is not allowed; allowed: {', '.join(ASSIGNMENTS)}"
        )
    if args.hidden is not None and not Path(args.hidden).is_dir():
        raise ValueError(
            f"--hidden {args.hidden!r} is not allowed: it is not a folder (give the folder of "
            "the instructor-only checks)"
        )


def _cmd_grade(args) -> int:
    from geolab.assignments import grade
    from geolab.assignments.gradebook import check_gradebook

    check_limits(args)
    check_inputs(args)
    check_gradebook(Path(args.out), args.force)  # its paths first, again under the lock
    with hold(Path(args.out).parent, "--out", _note("grade")):  # one grader per gradebook folder
        return grade._cmd_grade(args)


def check_src(src: str) -> None:
    """``--src``: a folder holding the instructor notebooks (``*.py``); a one-line ValueError
    naming the flag otherwise (a missing path, a file, a name too long for the file system)."""
    path = Path(src)
    try:
        found = path.is_dir() and any(path.glob("*.py"))
    except OSError as err:  # ENAMETOOLONG, EACCES: pathlib does not swallow them
        raise ValueError(f"--src {src!r} is not allowed: {err.strerror}") from None
    if not found:
        what = "holds no *.py" if path.is_dir() else "is a file" if path.exists() else "is missing"
        raise ValueError(
            f"--src {src!r} is not allowed: it {what}; it must be the folder of the instructor "
            "notebooks (*.py), e.g. assignments/instructor"
        )


def _cmd_release(args) -> int:
    from geolab.assignments import release

    check_src(args.src)
    if args.check:  # reads only
        return release._cmd_release(args)
    with hold(args.out, "--out", _note("release")):
        return release._cmd_release(args)


def _note(command: str):
    return lambda text: print(f"geolab {command}: note: {text}", file=sys.stderr)


def add_grade_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``geolab grade`` (its flags, which read the grader's modules and so torch, are
    added when it is used: ``LazyParser``)."""
    subparsers.add_parser(
        "grade",
        help="grade a folder of assignment notebooks into a CSV/JSON gradebook",
        fill=_grade_arguments,
    )


def _grade_arguments(p: argparse.ArgumentParser) -> None:
    from geolab.assignments import catalog, grade, sandbox

    p.description = grade.__doc__.splitlines()[0]
    p.add_argument("submissions", metavar="SUBMISSIONS_DIR", help="folder of submitted *.py")
    p.add_argument("--assignment", required=True, help="A1, A2, A3 or A4")
    for flag, default, what, _ in LIMITS:
        p.add_argument(flag, type=float, default=default, help=f"{what} (default: %(default)s)")
    p.add_argument("--jobs", type=int, default=1, help="submissions graded in parallel")
    p.add_argument(
        "--out",
        default="gradebook.csv",
        help="gradebook CSV; beside it: a .json with every message, an _lms.csv (student id, "
        "total, maximum) and a _feedback/ folder, one file per student",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an earlier gradebook at --out (and remove its feedback files of students "
        "not in this run)",
    )
    p.add_argument("--seed", type=int, help="seed of the checks' inputs (default: fresh)")
    p.add_argument(
        "--sandbox",
        default="auto",
        choices=sandbox.MODES,
        help="bwrap isolation: auto (when it works), bwrap (required), none",
    )
    p.add_argument(
        "--hand-graded",
        metavar="CSV",
        help="the hand-graded question: a CSV with columns student,points,max",
    )
    p.add_argument(
        "--hidden",
        metavar="DIR",
        help=f"folder of instructor-only checks to run too, e.g. {catalog.HIDDEN_DIR}",
    )
    p.set_defaults(func=_cmd_grade)


def add_release_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``geolab release`` (its flags added when it is used, as grade's)."""
    subparsers.add_parser(
        "release",
        help="build the student assignment notebooks from the instructor sources",
        fill=_release_arguments,
    )


def _release_arguments(p: argparse.ArgumentParser) -> None:
    from geolab.assignments import release

    p.description = release.__doc__.splitlines()[0]
    p.add_argument("--src", default=str(release.SRC_DIR), help="instructor notebooks (%(default)s)")
    p.add_argument("--out", default=str(release.OUT_DIR), help="student release (%(default)s)")
    p.add_argument("--check", action="store_true", help="only report out-of-date release files")
    p.set_defaults(func=_cmd_release)
