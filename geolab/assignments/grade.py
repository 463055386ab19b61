"""Grade a folder of submitted notebooks: one process per submission, a gradebook out.

    geolab grade SUBMISSIONS_DIR --assignment A2 [--timeout 120] [--out gradebook.csv]

Each ``*.py`` in the folder runs in its own process, forked from a server that has imported
torch, marimo and the checks once, with a wall-clock limit; on expiry its whole session is
killed. A submission that crashes, hangs, or prints garbage becomes a row with a status and
score 0 — it never stops the grading of the others. Inside a submission each stub has its own
alarm (``--task-timeout``), so one endless loop only fails that stub's checks. Statuses:

    ok              the checks ran; score = points of the passed checks
    error           the submission raised while loading (syntax error, bad import, ...)
    timeout         the process ran past --timeout and was killed
    crash           the process died without a result (segfault, os._exit, ...)
    invalid-output  the process left a malformed result

The gradebook is written twice: a CSV (one row per submission, one 0/1 column per check) and a
JSON file beside it with every check's message. Student code runs with your user's rights:
grade in a throwaway account or container when you do not trust the submissions.
"""

import csv
import json
import multiprocessing
import os
import resource
import signal
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from geolab.assignments.catalog import all_failed, get
from geolab.assignments.run_checks import run

OUTPUT_LIMIT = 16 * 2**20  # bytes a submission may print before the OS stops it (SIGXFSZ)
CHECK_KEYS = {"name": str, "passed": bool, "message": str, "points": (int, float)}


def _parse(text: str) -> dict | None:
    """The child's result, or None when ``text`` is not exactly a well-formed result."""
    try:
        result = json.loads(text)
    except ValueError:
        return None
    if not isinstance(result, dict) or result.get("status") not in ("ok", "error"):
        return None
    checks = result.get("checks")
    if not isinstance(checks, list) or not all(
        isinstance(c, dict) and all(isinstance(c.get(k), t) for k, t in CHECK_KEYS.items())
        for c in checks
    ):
        return None
    return result


def _child(path: Path, assignment: str, task_timeout: float, work: Path) -> None:
    """Runs in the forked grading process: own session, its own working folder (not the one
    the result goes to), everything it prints to a size-limited file."""
    os.setsid()
    os.chdir(work / "cwd")
    resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_LIMIT, OUTPUT_LIMIT))
    log = os.open(work / "output.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(log, 1)
    os.dup2(log, 2)  # a submission printing without end fills a capped file, not memory
    result = run(path, assignment, task_timeout)
    (work / "result.tmp").write_text(json.dumps(result), encoding="utf-8")
    os.replace(work / "result.tmp", work / "result.json")


def _context(assignment: str):
    """A forkserver that has imported torch, marimo and the checks once: every submission then
    starts in a fresh process in milliseconds instead of re-importing torch."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["marimo", "geolab.assignments.run_checks", get(assignment).module])
    warm = ctx.Process(target=os.getpid)  # waits for the server, so no time limit includes it
    warm.start()
    warm.join()
    return ctx


def grade_file(
    path: Path, assignment: str, timeout: float = 120.0, task_timeout: float = 30.0, ctx=None
) -> dict:
    """Grade one submission in its own process; returns its gradebook row (a dict)."""
    path = Path(path).resolve()
    ctx = ctx or _context(assignment)
    with tempfile.TemporaryDirectory(prefix="geolab-grade-") as tmp:
        work = Path(tmp)
        (work / "cwd").mkdir()
        proc = ctx.Process(target=_child, args=(path, assignment, task_timeout, work))
        start = time.monotonic()
        proc.start()
        proc.join(timeout)
        status = None
        if proc.is_alive():
            _kill(proc)
            status = "timeout"
        seconds = round(time.monotonic() - start, 2)
        result_file, log = work / "result.json", work / "output.txt"
        result = _parse(result_file.read_text("utf-8", "replace")) if result_file.exists() else None
        tail = log.read_bytes()[-2000:].decode("utf-8", "replace") if log.exists() else ""
    if status is None and result is None:
        status = "invalid-output" if result_file.exists() else "crash"
    if result is None or status == "timeout":
        reason = {
            "timeout": f"killed after the {timeout:g} s time limit",
            "crash": f"the process died with exit code {proc.exitcode}"
            + (f" (signal {-proc.exitcode})" if proc.exitcode < 0 else ""),
            "invalid-output": "the result file is not a valid result",
        }[status]
        lines = tail.strip().splitlines()
        error = reason + (f"; last output line: {lines[-1][:200]}" if lines else "")
        checks = [c.to_dict() for c in all_failed(assignment, error)]
        result = {"status": status, "error": error, "checks": checks}
    return {
        "submission": path.name,
        "status": result["status"],
        "score": sum(c["points"] for c in result["checks"] if c["passed"])
        if result["status"] == "ok"
        else 0.0,
        "max_score": sum(c["points"] for c in result["checks"]),
        "seconds": seconds,
        "error": result["error"],
        "checks": result["checks"],
    }


def _kill(proc) -> None:
    """SIGKILL the submission's whole session (it may have started processes of its own)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # killed before its setsid(): just the process
        proc.kill()
    proc.join()


def grade_dir(
    folder: Path, assignment: str, timeout: float = 120.0, task_timeout: float = 30.0, jobs: int = 1
) -> list[dict]:
    """Grade every ``*.py`` in ``folder`` (sorted by name), ``jobs`` processes at a time."""
    get(assignment)
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"SUBMISSIONS_DIR={str(folder)!r} is not a folder")
    files = sorted(folder.glob("*.py"))
    if not files:
        raise ValueError(f"SUBMISSIONS_DIR={str(folder)!r} holds no submissions (*.py)")
    for name, value in (("timeout", timeout), ("task_timeout", task_timeout), ("jobs", jobs)):
        if not value > 0:
            raise ValueError(f"{name}={value!r} is not allowed; must be > 0")
    ctx = _context(assignment)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        rows = pool.map(lambda f: grade_file(f, assignment, timeout, task_timeout, ctx), files)
        return list(rows)


def write_gradebook(rows: list[dict], out: Path) -> tuple[Path, Path]:
    """Write ``out`` as CSV (one 0/1 column per check) and ``out`` with suffix .json (all
    messages). Returns both paths."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    names = list(dict.fromkeys(c["name"] for row in rows for c in row["checks"]))
    head = ["submission", "status", "score", "max_score", "seconds", "error"]
    with open(out.with_suffix(".csv"), "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(head + names)
        for row in rows:
            passed = {c["name"]: int(c["passed"]) for c in row["checks"]}
            writer.writerow([row[k] for k in head] + [passed.get(n, 0) for n in names])
    with open(out.with_suffix(".json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1, ensure_ascii=False)
    return out.with_suffix(".csv"), out.with_suffix(".json")


def _cmd_grade(args) -> int:
    rows = grade_dir(
        Path(args.submissions), args.assignment, args.timeout, args.task_timeout, args.jobs
    )
    csv_path, json_path = write_gradebook(rows, Path(args.out))
    print(f"{args.assignment} — {get(args.assignment).title}: {len(rows)} submissions")
    for row in rows:
        print(f"{row['submission']:<32} {row['status']:<14} {row['score']:g}/{row['max_score']:g}")
    print(f"gradebook: {csv_path} and {json_path}")
    return 0
