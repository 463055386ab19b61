"""Grade a folder of submitted notebooks into a gradebook, each submission sandboxed.

    geolab grade SUBMISSIONS_DIR --assignment A2 [--timeout 120] [--task-timeout 30] [--jobs 2]
                 [--out gradebook.csv] [--seed N] [--memory-gb 4] [--sandbox auto|bwrap|none]
                 [--hand-graded hand.csv] [--hidden assignments/instructor/hidden]

Every ``*.py`` (any case) is read once, up front, and copied alone into a private folder; the
others are skipped with a warning saying why. Each submission runs in its own sandboxed worker
(``sandbox``, ``worker``) with one fresh process per stub, so a crash, ``os._exit``, an endless
loop or a fork costs that stub only. The time limits are CPU seconds (``remote``), so a busy
machine does not fail an honest file. The checks themselves run here, in the grader: the worker
only runs the student's code on the inputs the checks send and returns plain data (``remote``,
``wire``), so nothing the submission can reach decides its score. Inputs are drawn from a fresh
seed per grading run (``--seed`` to replay one), written into the gradebook. Statuses:

    ok       the checks ran; score = points of the passed checks
    error    the submission raised while loading (syntax error, bad import, ...)
    timeout  the submission ran past --timeout and was killed
    crash    the process died while loading (segfault, os._exit, a resource limit, ...)

Memory and processes are bounded per submission by the kernel where the grader can create
cgroups (``cgroup``: as root with bwrap, usually), else by rlimits and polling (``worker``);
one line on stderr says which, and why.
"""

import math
import os
import secrets
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from geolab.assignments import cgroup, sandbox
from geolab.assignments.catalog import all_failed, check_all, get, hidden_tasks
from geolab.assignments.checks import TaskStopped
from geolab.assignments.gradebook import (
    check_gradebook,
    check_student_ids,
    printable,
    read_hand_grades,
    totals,
    write_gradebook,
)
from geolab.assignments.pasted import parse, pasted
from geolab.assignments.remote import Session, Stub, SubmissionTimeout

MAX_BYTES = 2 * 2**20  # a notebook larger than this is not a hand-in


def find_submissions(folder: Path) -> tuple[dict[str, str], list[str]]:
    """({file name: text} of every regular ``*.py`` file in ``folder``, any case, read now;
    [one warning per other entry, saying why it is skipped])."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"SUBMISSIONS_DIR={str(folder)!r} is not a folder")
    texts, warnings = {}, []
    for path in sorted(folder.iterdir()):
        why = None
        if path.suffix.lower() != ".py":
            why = "not a .py file"
        elif path.is_symlink():
            why = "a symbolic link (hand in the file itself)"
        elif not path.is_file():
            why = "not a regular file"
        elif path.stat().st_size > MAX_BYTES:
            why = f"larger than {MAX_BYTES // 2**20} MiB"
        else:
            try:
                texts[path.name] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                why = "not UTF-8 text"
        if why:
            warnings.append(f"skipped {path.name}: {why}")
    if not texts:
        raise ValueError(f"SUBMISSIONS_DIR={str(folder)!r} holds no submissions (*.py)")
    return texts, warnings


def grade_text(name: str, text: str, assignment: str, setup: dict) -> dict:
    """Grade one submission (its file name and text) in its own sandboxed worker; its row.
    Whatever the worker does or sends, the row comes back: a failure of this submission's
    process (or of the grader on it) is this submission's status, never the class's."""
    start = time.monotonic()
    flag = ""
    try:  # every step that reads the submission's text: its own failure is this file's row
        if (why := unparsable(text)) is not None:
            status, error, checks = "error", why, []
        else:
            flag = "; ".join(pasted(text, assignment))
            status, error, checks = _run(text, assignment, setup)
    except Exception as err:  # noqa: BLE001 — one submission must not stop the class
        status, error, checks = "crash", f"the grader could not grade this file: {err!r}", []
    if status != "ok":
        hidden = setup["hidden"]
        checks = [c.to_dict() for c in all_failed(assignment, error)]
        checks += [{**c.to_dict(), "hidden": True} for c in all_failed(assignment, error, hidden)]
    return {
        "submission": name,
        "status": status,
        "score": sum(c["points"] for c in checks if c["passed"]) if status == "ok" else 0.0,
        "max_score": sum(c["points"] for c in checks),
        "seconds": round(time.monotonic() - start, 2),
        "seed": setup["seed"],
        "error": error,
        "flag": flag,
        "checks": checks,
    }


def unparsable(text: str) -> str | None:
    """Why Python's parser cannot read ``text`` at all (None when it can, or when it stops at a
    syntax error, which loading the submission reports with its line). ``-(-(-…1))`` or
    ``not not … 1`` nested some 100,000 deep makes the parser raise MemoryError or
    RecursionError: such a file is graded 0 with this line, before anything runs it."""
    try:
        parse(text)
    except (SyntaxError, ValueError):
        return None
    except (MemoryError, RecursionError) as err:
        return (f"Python cannot parse this file ({type(err).__name__}): an expression is nested "
                "too deeply for the parser; write it without such nesting")  # fmt: skip
    return None


@contextmanager
def session_for(text: str, setup: dict):
    """A :class:`~geolab.assignments.remote.Session` for one submission's ``text`` in a private
    folder of its own (``setup``: :func:`grading_setup`); its processes are killed on exit."""
    # the student's prints: an unnamed file this process holds (no path to follow or replace)
    with (
        tempfile.TemporaryDirectory(prefix="geolab-grade-") as tmp,
        tempfile.TemporaryFile() as out,
    ):
        box = Path(tmp)
        for sub in ("in", "tmp"):
            (box / sub).mkdir()
            (box / sub).chmod(0o777 if sub != "in" else 0o755)  # the worker runs as another uid
        (box / "in" / "submission.py").write_text(text, encoding="utf-8")
        session = Session(setup["mode"], setup["view"], box, "submission.py",
                          setup["settings"], setup["timeout"], out.fileno(),
                          setup["cgroups"])  # fmt: skip
        try:
            yield session
        finally:
            session.kill()


def _run(text: str, assignment: str, setup: dict) -> tuple[str, str, list[dict]]:
    """(status, error, checks) of one submission in its sandboxed worker."""
    tasks, hidden = get(assignment).tasks, setup["hidden"]
    with session_for(text, setup) as session:
        status, error, checks = "ok", "", []
        try:
            report = session.open(None)
            if "error" in report:
                status, error = "error", report["error"][:2000]
            else:
                found = {s: Stub(session, s) for s in report["loaded"] if s in tasks}
                limit = session.limit(setup["task_timeout"])
                seed = setup["seed"]
                checks = [c.to_dict() for c in check_all(assignment, found, limit, seed)]
                extra = check_all(assignment, found, limit, seed, tasks=hidden) if hidden else []
                checks += [{**c.to_dict(), "hidden": True} for c in extra]
        except SubmissionTimeout as err:
            status, error = "timeout", str(err)
        except TaskStopped as err:  # died, or answered something that is not a reply
            status, error = "crash", str(err)
        finally:
            session.kill()
        lines = session.output_tail().strip().splitlines()
    if status in ("timeout", "crash") and lines:
        error += f"; last output line: {lines[-1][:200]}"
    return status, error, checks


def grade_dir(
    folder: Path,
    assignment: str,
    timeout: float = 120.0,
    task_timeout: float = 30.0,
    jobs: int = 1,
    seed: int | None = None,
    limits: sandbox.Limits | None = None,
    mode: str = "auto",
    hidden: Path | None = None,
) -> list[dict]:
    """Grade every submission in ``folder`` (sorted by name), ``jobs`` at a time.

    ``timeout``, ``task_timeout``: CPU seconds of a submission and of one stub (its processes'
    and the grader's work for it), each with a wall-clock backstop (``remote.backstop``).
    ``seed``: the checks' inputs (default: fresh). ``mode``: "auto" (bwrap when it works),
    "bwrap" or "none". ``hidden``: folder of instructor-only checks (``catalog.HIDDEN_DIR`` in
    a checkout), none by default."""
    get(assignment)  # an unknown assignment is refused before anything is read
    for name, value in (("timeout", timeout), ("task_timeout", task_timeout), ("jobs", jobs)):
        if not (value > 0 and math.isfinite(value)):
            raise ValueError(f"{name}={value!r} is not allowed; must be a finite number > 0")
    texts, _ = find_submissions(folder)
    with grading_setup(assignment, timeout, task_timeout, seed, limits, mode, hidden) as setup:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(lambda kv: grade_text(*kv, assignment, setup), texts.items()))


@contextmanager
def grading_setup(
    assignment: str,
    timeout: float,
    task_timeout: float,
    seed: int | None = None,
    limits: sandbox.Limits | None = None,
    mode: str = "auto",
    hidden: Path | None = None,
):
    """What every submission of one grading run shares (the arguments of :func:`grade_dir`):
    the sandbox mode, the package view (removed on exit), the limits and where the kernel
    enforces them (``cgroup.probe``; the cgroups graders that died left are removed first),
    the seed, hidden checks."""
    spec = get(assignment)
    limits = limits or sandbox.Limits()
    mode = sandbox.choose(mode)
    if mode == "none":
        sandbox.adopt_orphans()
    cgroups, _ = cgroup.probe(mode)
    if cgroups is not None:
        cgroup.sweep(cgroups)
    settings = {**limits.for_worker(), "stubs": list(spec.tasks), "kernel_limits": bool(cgroups)}
    with tempfile.TemporaryDirectory(prefix="geolab-view-") as tmp:
        Path(tmp).chmod(0o755)
        yield {
            "mode": mode,
            "view": sandbox.build_view(Path(tmp), spec.needs_model, spec.hidden),
            "timeout": timeout,
            "task_timeout": task_timeout,
            "seed": secrets.randbelow(2**31) if seed is None else int(seed),
            "hidden": hidden_tasks(hidden, assignment) if hidden is not None else {},
            "cgroups": cgroups,
            # the grader's pid marks its workers in the process table (tests look for leftovers)
            "settings": {**settings, "grader": os.getpid()},
        }


def _cmd_grade(args) -> int:
    check_gradebook(Path(args.out), args.force)
    limits = sandbox.Limits(memory_gb=args.memory_gb)
    hand = read_hand_grades(Path(args.hand_graded)) if args.hand_graded else None
    texts, skipped = find_submissions(Path(args.submissions))
    check_student_ids(texts)
    mode = sandbox.choose(args.sandbox)
    for line in [sandbox.warning(mode), cgroup.probe(mode)[1], *skipped]:
        if line:
            print(printable(line), file=sys.stderr)
    rows = grade_dir(
        Path(args.submissions), args.assignment, args.timeout, args.task_timeout, args.jobs,
        args.seed, limits, mode, Path(args.hidden) if args.hidden else None,
    )  # fmt: skip
    paths, notes = write_gradebook(rows, Path(args.out), hand)
    for line in notes:
        print(printable(line), file=sys.stderr)
    n = len(rows)
    print(f"{args.assignment} — {get(args.assignment).title}: {n} submission{'s' * (n != 1)}, "
          f"seed {rows[0]['seed']}, sandbox {mode}")  # fmt: skip
    for row in totals(rows, hand)[0]:
        name = printable(row["submission"])
        line = f"{name:<32} {row['status']:<14} {row['score']:g}/{row['max_score']:g}"
        if hand:
            got = "—" if row["hand"] is None else f"{row['hand']:g}"
            line += f"  hand {got}/{hand['max']:g}  total {row['total']:g}/{row['total_max']:g}"
        print(line + (f"  flagged: {printable(row['flag'])}" if row.get("flag") else ""))
    print("gradebook: " + ", ".join(str(p) for p in paths))
    return 0
