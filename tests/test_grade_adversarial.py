"""The adversarial corpus: a class that cheats, sabotages and attacks the grader, with the
gradebook row each submission must get. Every submission is A1: the student release (every stub
raises NotImplementedError, 0 points) or the instructor solution (15 points), plus an attack.

One grading run in the default sandbox (bwrap where it works); the same corpus without bwrap is
@pytest.mark.slow. Cases that only bwrap can stop (reading the instructor notebook, writing the
teacher's files) and the fork bomb (which needs an enforced process limit: not for root without
bwrap) run only where they are in force.
"""

import os
import time
from pathlib import Path

import pytest

from geolab.assignments import sandbox
from geolab.assignments.catalog import all_failed
from geolab.assignments.grade import grade_dir
from geolab.assignments.gradebook import write_gradebook

REPO = Path(__file__).resolve().parents[1]
SOLUTION = (REPO / "assignments" / "instructor" / "A1_delta.py").read_text(encoding="utf-8")
RELEASE = (REPO / "notebooks" / "assignments" / "A1_delta.py").read_text(encoding="utf-8")
TIMEOUT, TASK_TIMEOUT = 60.0, 8.0
POINTS = sum(c.points for c in all_failed("A1", ""))
MODE = '    return {0.0: "identity"'  # the first line of the solution's `mode`
TAIL = 'if __name__ == "__main__":'


def at_import(base: str, code: str) -> str:
    """``base`` with ``code`` run after its last definition (so it can replace the stubs)."""
    return base.replace(TAIL, code + "\n\n" + TAIL)


def in_mode(code: str) -> str:
    """The solution with ``code`` run first inside the `mode` stub."""
    body = "".join(f"    {line}\n" for line in code.strip().splitlines())
    return SOLUTION.replace(MODE, body + MODE, 1)


REPLACE_CHECKER = """
try:  # swap the checks and the catalog the grader would use
    import geolab.assignments.a1 as _a1
    import geolab.assignments.catalog as _catalog
    from geolab.assignments.checks import Check
    _a1.TASKS = {k: (lambda fn, seed=0: [Check("x", True)]) for k in _a1.TASKS}
    _catalog.check_all = lambda *a, **k: [Check(n, True) for n in ("a", "b")]
except Exception:
    pass
"""
PATCH_ANY = """
import torch
torch.Tensor.any = lambda self, *a, **k: False  # `close` would see no bad entry
torch.Tensor.all = lambda self, *a, **k: True
torch.Tensor.__bool__ = lambda self: False

def delta_operator(k, beta):
    return torch.zeros(*k.shape, k.shape[-1], dtype=k.dtype)
"""
FORGED_RESULT = """
import json, os
_forged = {"status": "ok", "error": "", "checks": [
    {"name": "all", "passed": True, "message": "", "points": 99.0}]}
for _where in ("result.json", "../result.json", "../../result.json", "/log/../result.json"):
    try:
        with open(_where, "w") as _f:
            json.dump(_forged, _f)
    except OSError:
        pass
print(json.dumps(_forged))
os._exit(0)
"""
EXEC_INSTRUCTOR = """
try:  # the solutions are one folder up from the package
    import pathlib
    import geolab
    _root = pathlib.Path(geolab.__file__).resolve().parents[1]
    _src = (_root / "assignments" / "instructor" / "A1_delta.py").read_text()
    _ns = {"__name__": "stolen"}
    exec(compile(_src, "stolen", "exec"), _ns)
    delta_operator, spectrum_and_det = _ns["delta_operator"], _ns["spectrum_and_det"]
    delta_update, mode = _ns["delta_update"], _ns["mode"]
except Exception:
    pass
"""
IMPORT_REFERENCE = """
def delta_operator(k, beta):
    import geolab.explore  # the package namespace holds the operators
    import geolab.operators
    return geolab.operators.delta_operator(k, beta)
"""
NUMPY_EIG = """
def spectrum_and_det(d, beta):
    import numpy as np
    from numpy.linalg import eigvalsh
    k = np.ones(d)
    A = np.eye(d) - beta * np.outer(k, k) / d
    return torch.as_tensor(eigvalsh(A)), float(np.linalg.det(A))
"""
DETACHED_WRITER = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:  # detached: a new session, parent gone
        while True:
            for _p in ({book!r}, {book!r}.replace(".csv", ".json")):
                try:
                    with open(_p, "w") as _f:
                        _f.write("submission,status,score\\nforged,ok,15\\n")
                except OSError:
                    pass
            time.sleep(0.05)
    os._exit(0)
"""
ESCAPED_LOOP = """
import os
if os.fork() == 0:
    os.setsid()
    while True:  # burn a core in its own session
        pass
"""
SABOTAGE = """
import glob, os
for _p in glob.glob({folder!r} + "/*.py") + glob.glob("../*/*.py") + glob.glob("*.py"):
    try:
        with open(_p, "w") as _f:
            _f.write("raise SystemExit('sabotaged')\\n")
    except OSError:
        pass
"""
MEMORY_BOMB = "_hog = bytearray(12 * 2**30)"
FORK_BOMB = """
import os
while True:
    os.fork()
"""
OS_EXIT = "import os\nos._exit(0)"
ALARM_SWALLOW = """
import signal
signal.signal(signal.SIGALRM, signal.SIG_IGN)
signal.setitimer(signal.ITIMER_REAL, 0)
while True:
    try:
        pass
    except BaseException:
        pass
"""
MODE_CHECKS = 2  # points of the `mode` stub: an attack inside it costs these only


def corpus(folder: Path, book: Path, mode: str) -> dict[str, tuple[str, str, float]]:
    """{file: (text, expected status, expected score)} for the grading run in ``mode``."""
    cases = {
        "alice.py": (SOLUTION, "ok", POINTS),
        "bob.py": (SOLUTION, "ok", POINTS),
        "replace_checker.py": (at_import(RELEASE, REPLACE_CHECKER), "ok", 0.0),
        # zeros are symmetric and scale-free: 2 honest points, the patched torch adds none
        "patch_any.py": (at_import(RELEASE, PATCH_ANY), "ok", 2.0),
        "forged_result.py": (at_import(RELEASE, FORGED_RESULT), "crash", 0.0),
        "import_reference.py": (at_import(SOLUTION, IMPORT_REFERENCE), "ok", POINTS - 6),
        # the guard names numpy.linalg; at d = 50,000 no dense matrix fits: every point of it
        "numpy_eig.py": (at_import(SOLUTION, NUMPY_EIG), "ok", POINTS - 3),
        "detached_writer.py": (
            at_import(SOLUTION, DETACHED_WRITER.format(book=str(book))),
            "ok",
            POINTS,
        ),  # fmt: skip
        "escaped_loop.py": (in_mode(ESCAPED_LOOP), "ok", POINTS),
        "sabotage.py": (at_import(SOLUTION, SABOTAGE.format(folder=str(folder))), "ok", POINTS),
        "memory_bomb.py": (in_mode(MEMORY_BOMB), "ok", POINTS - MODE_CHECKS),
        "os_exit_stub.py": (in_mode(OS_EXIT), "ok", POINTS - MODE_CHECKS),
        "alarm_swallow.py": (in_mode(ALARM_SWALLOW), "ok", POINTS - MODE_CHECKS),
    }
    if mode == "bwrap":  # without bwrap the solutions are readable: documented as weaker
        cases["exec_instructor.py"] = (at_import(RELEASE, EXEC_INSTRUCTOR), "ok", 0.0)
    if mode == "bwrap" or os.geteuid() != 0:  # the process limit binds
        cases["fork_bomb.py"] = (in_mode(FORK_BOMB), "ok", POINTS - MODE_CHECKS)
    return cases


def _leftovers() -> list[int]:
    """Processes of this test's workers still alive (their command line names our pid)."""
    mark, found = f'"grader": {os.getpid()}'.encode(), []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if mark in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            continue
    return found


def _grade_corpus(tmp_path: Path, mode: str) -> None:
    folder, book = tmp_path / "submissions", tmp_path / "book" / "gradebook.csv"
    folder.mkdir()
    cases = corpus(folder, book, mode)
    for name, (text, _, _) in cases.items():
        (folder / name).write_text(text, encoding="utf-8")
    rows = grade_dir(folder, "A1", TIMEOUT, TASK_TIMEOUT, jobs=2, mode=mode)
    write_gradebook(rows, book)
    written = book.read_text(encoding="utf-8"), book.with_suffix(".json").read_text("utf-8")

    got = {r["submission"]: (r["status"], r["score"]) for r in rows}
    want = {name: (status, score) for name, (_, status, score) in cases.items()}
    by_name = {r["submission"]: r for r in rows}
    why = {n: r["error"] or [c["message"] for c in r["checks"] if not c["passed"]]
           for n, r in by_name.items() if got[n] != want[n]}  # fmt: skip
    assert got == want, why
    assert all(r["max_score"] == POINTS for r in rows) and len({r["seed"] for r in rows}) == 1

    def failed(name):
        return {c["name"]: c["message"] for c in by_name[name]["checks"] if not c["passed"]}

    for name, words in (("memory_bomb.py", "MemoryError"), ("os_exit_stub.py", "ended"),
                        ("alarm_swallow.py", f"{TASK_TIMEOUT:g} s")):  # fmt: skip
        assert len(failed(name)) == MODE_CHECKS and all(n.startswith("mode") for n in failed(name))
        assert all(words in m for m in failed(name).values()), failed(name)
    assert all(
        "geolab" in m or "ModuleNotFound" in m for m in failed("import_reference.py").values()
    )
    assert all("numpy.linalg" in m or "MemoryError" in m for m in failed("numpy_eig.py").values())
    if "fork_bomb.py" in cases:
        assert len(failed("fork_bomb.py")) == MODE_CHECKS
    if mode == "bwrap" or os.geteuid() != 0:  # nobody: the teacher's files stay untouched
        assert (folder / "alice.py").read_text(encoding="utf-8") == SOLUTION

    deadline = time.monotonic() + 5  # an escaped writer would strike within this window
    while time.monotonic() < deadline and not _leftovers():
        time.sleep(0.2)
    assert not _leftovers(), "a submission's process outlived the grading"
    assert (book.read_text("utf-8"), book.with_suffix(".json").read_text("utf-8")) == written


@pytest.mark.skipif(not sandbox.bwrap_works(), reason="bwrap cannot run here")
def test_adversarial_corpus_in_bwrap(tmp_path):
    _grade_corpus(tmp_path, "bwrap")


@pytest.mark.skipif(sandbox.bwrap_works(), reason="bwrap runs here: see the slow test")
@pytest.mark.skipif(os.geteuid() == 0, reason="--sandbox none is refused as root")
def test_adversarial_corpus_without_bwrap(tmp_path):
    _grade_corpus(tmp_path, "none")


@pytest.mark.slow
@pytest.mark.skipif(not sandbox.bwrap_works(), reason="covered by the default test")
@pytest.mark.skipif(os.geteuid() == 0, reason="--sandbox none is refused as root")
def test_adversarial_corpus_without_bwrap_where_bwrap_exists(tmp_path):
    _grade_corpus(tmp_path, "none")
