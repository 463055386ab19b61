"""The adversarial corpus: a class that cheats, sabotages and attacks the grader, with the
gradebook row each submission must get. Every submission is A1: the student release (every stub
raises NotImplementedError, 0 points) or the instructor solution (15 points), plus an attack.

One grading run in the default sandbox (bwrap where it works); the same corpus without bwrap is
@pytest.mark.slow. Cases that only bwrap can stop (reading the instructor notebook, writing the
teacher's files), the fork bomb (which needs an enforced process limit: not for root without
bwrap) and the squatter (a process limit of its own per worker: root with bwrap) run only where
they are in force. The corpus also holds the resource attacks: memory spread over processes, a
stub that waits (not computes) past its CPU limit; where the grader can give each worker a
cgroup, the kernel's limits get tests of their own (memory over processes, a process squatter,
no group left behind), skipped elsewhere with the reason. The attacks on the grader's pipes — a
child that stops reading a request larger than the pipe holds, a flood of questions, oversized
parameters — each get a session or a grading run of their own below.
"""

import importlib.util
import inspect
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from contextlib import nullcontext
from pathlib import Path

import pytest
import torch

from geolab.assignments import a4, cgroup, pasted, remote, sandbox
from geolab.assignments.catalog import ASSIGNMENTS, all_failed, hidden_tasks
from geolab.assignments.checks import TimeLimit
from geolab.assignments.grade import grade_dir, grading_setup, session_for
from geolab.assignments.gradebook import write_gradebook
from geolab.assignments.probes import PROBES
from geolab.assignments.remote import MAX_ASKS, Stub
from geolab.assignments.remote_rule import MAX_PARAMS
from geolab.assignments.run_checks import load_submission
from geolab.rules import Rule

REPO = Path(__file__).resolve().parents[1]
SOLUTION = (REPO / "assignments" / "instructor" / "A1_delta.py").read_text(encoding="utf-8")
RELEASE = (REPO / "notebooks" / "assignments" / "A1_delta.py").read_text(encoding="utf-8")
TIMEOUT, TASK_TIMEOUT = 60.0, 8.0
POINTS = sum(c.points for c in all_failed("A1", ""))
MODE = '    return {0.0: "identity"'  # the first line of the solution's `mode`
TAIL = 'if __name__ == "__main__":'
GRADES = pytest.mark.skipif(
    not sandbox.bwrap_works() and os.geteuid() == 0, reason="root without bwrap: grading refused"
)


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
# A dense spectrum through each way around a list of banned names (issue 43): the guard names
# none of these, so each passes the small sizes; the measured check at d = 50,000 fails them and
# gates the stub, so each earns none of spectrum_and_det's marks.
DENSE = """
def spectrum_and_det(d, beta):
    k = torch.ones(d, dtype=torch.float64)
    A = torch.eye(d, dtype=torch.float64) - beta * torch.outer(k, k) / d
    return {eig}, {det}
"""
CLOSURE = """
def _closed_over():
    eig, det = getattr(torch.linalg, "eig" + "valsh"), getattr(torch.linalg, "d" + "et")

    def spectrum_and_det(d, beta):
        k = torch.ones(d, dtype=torch.float64)
        A = torch.eye(d, dtype=torch.float64) - beta * torch.outer(k, k) / d
        return eig(A), det(A)

    return spectrum_and_det


spectrum_and_det = _closed_over()
"""
BASE64 = """
import base64 as _b64
exec(_b64.b64decode({code!r}).decode())
"""
# LAPACK's dsyev called through ctypes on the OpenBLAS numpy has loaded (found in the process's
# memory map, ILP64 symbols): no Python linear-algebra module is touched
CTYPES_LAPACK = """
import ctypes
import numpy as _np

def _dsyev():  # the first OpenBLAS mapped with ILP64 symbols (scipy's own may come first)
    with open("/proc/self/maps") as maps:
        paths = dict.fromkeys(line.split()[-1] for line in maps if "openblas" in line)
    libs = (ctypes.CDLL(path) for path in paths)
    names = ("scipy_dsyev_64_", "dsyev_64_")
    return next(getattr(lib, n) for lib in libs for n in names if hasattr(lib, n))

def spectrum_and_det(d, beta):
    a = _np.eye(d) - beta * _np.ones((d, d)) / d  # symmetric: row- and column-major alike
    w, n, info = _np.empty(d), ctypes.c_int64(d), ctypes.c_int64(0)
    work, lwork = _np.empty(max(1, 3 * d)), ctypes.c_int64(max(1, 3 * d))
    ptr = ctypes.POINTER(ctypes.c_double)
    _dsyev()(ctypes.c_char_p(b"N"), ctypes.c_char_p(b"L"), ctypes.byref(n),
             a.ctypes.data_as(ptr), ctypes.byref(n), w.ctypes.data_as(ptr),
             work.ctypes.data_as(ptr), ctypes.byref(lwork), ctypes.byref(info),
             ctypes.c_size_t(1), ctypes.c_size_t(1))
    return torch.as_tensor(w), float(_np.prod(w))
"""
# a general (non-symmetric) dense eigen-solver and an LU determinant, neither of them named
GENERAL_EIG = """
def spectrum_and_det(d, beta):
    k = torch.ones(d, dtype=torch.float64)
    A = torch.eye(d, dtype=torch.float64) - beta * torch.outer(k, k) / d
    lu, pivots, _ = torch.linalg.lu_factor_ex(A)  # _ex: β = 1 is singular
    swaps = int((pivots != torch.arange(1, d + 1)).sum())
    det = (-1) ** swaps * torch.diagonal(lu).prod()
    return torch.sort(torch.ops.aten.linalg_eig(A)[0].real).values, det
"""
BYPASSES = {
    "aten_ops.py": DENSE.format(eig="torch.ops.aten.linalg_eigvalsh(A)",
                                det="torch.ops.aten.linalg_det(A)"),
    "c_linalg.py": DENSE.format(eig="torch._C._linalg.linalg_eigvalsh(A)",
                                det="torch._C._linalg.linalg_det(A)"),
    "numpy_umath.py": "from numpy.linalg import _umath_linalg as _u\n" + DENSE.format(
        eig="torch.as_tensor(_u.eigvalsh_lo(A.numpy()))", det="float(_u.det(A.numpy()))"),
    "closure.py": CLOSURE,
}  # fmt: skip
BYPASSES["base64_exec.py"] = BASE64.format(
    code=__import__("base64").b64encode(BYPASSES["c_linalg.py"].encode()).decode()
)
BYPASSES["ctypes_lapack.py"] = CTYPES_LAPACK
BYPASSES["general_eig.py"] = GENERAL_EIG
if importlib.util.find_spec("scipy") is not None:  # not a geolab dependency: only where installed
    BYPASSES["scipy_linalg.py"] = "import scipy.linalg as _sl\n" + DENSE.format(
        eig="torch.as_tensor(_sl.eigvalsh(A.numpy()))", det="float(_sl.det(A.numpy()))"
    )
# the solvers the ban by kind refuses whatever name reaches them (ATen ops at torch's backend,
# numpy's gufuncs, scipy's LAPACK routines); ctypes into LAPACK still passes where d is small
REFUSED_BY_KIND = {"aten_ops.py", "c_linalg.py", "numpy_umath.py", "closure.py",
                   "base64_exec.py", "general_eig.py", "scipy_linalg.py"}  # fmt: skip
REFUSED_BY_KIND &= set(BYPASSES)  # scipy_linalg.py only where scipy is installed
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
        # zeros are symmetric and scale-free, but fail what those checks also ask (A k, a
        # direction that moves): a constant earns nothing, and the patched torch adds nothing
        "patch_any.py": (at_import(RELEASE, PATCH_ANY), "ok", 0.0),
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
    for name, code in BYPASSES.items():  # on the release: only the dense stub is written
        cases[name] = (at_import(RELEASE, code), "ok", 0.0)
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
    assert all(r["flag"] == "" for r in rows)  # A1 hides no reference long enough to compare

    def failed(name):
        return {c["name"]: c["message"] for c in by_name[name]["checks"] if not c["passed"]}

    for name, words in (("memory_bomb.py", "MemoryError"), ("os_exit_stub.py", "ended"),
                        ("alarm_swallow.py", f"{TASK_TIMEOUT:g} s of CPU time")):  # fmt: skip
        assert len(failed(name)) == MODE_CHECKS and all(n.startswith("mode") for n in failed(name))
        assert all(words in m for m in failed(name).values()), failed(name)
    assert all(
        "geolab" in m or "ModuleNotFound" in m for m in failed("import_reference.py").values()
    )
    assert all("numpy.linalg" in m or "MemoryError" in m for m in failed("numpy_eig.py").values())
    measured = "spectrum_and_det: from the formula alone (d = 50,000 at grading)"
    for name in BYPASSES:
        fails = {n: m for n, m in failed(name).items() if n.startswith("spectrum_and_det")}
        assert len(fails) == 2, name
        assert "allocate" in fails[measured] or "MemoryError" in fails[measured], fails[measured]
        why = "your code called" if name in REFUSED_BY_KIND else "counts only when"
        assert all(why in m for n, m in fails.items() if n != measured), fails
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


@pytest.mark.parametrize("name", sorted(set(BYPASSES) - REFUSED_BY_KIND))
def test_each_open_bypass_passes_every_check_where_no_size_is_measured(name):
    """In place (a notebook: d = 1,000 for the measured check, names guarded in this process)
    each bypass no ban sees gets every mark of spectrum_and_det: its maths is right. So its 0 in
    the corpus comes from the check at d = 50,000 alone."""
    namespace = {"torch": torch}
    exec(compile(BYPASSES[name], name, "exec"), namespace)
    checks = ASSIGNMENTS["A1"].tasks["spectrum_and_det"](namespace["spectrum_and_det"], seed=3)
    assert [c.message for c in checks if not c.passed] == []


@pytest.mark.parametrize("name", sorted(REFUSED_BY_KIND))
def test_each_solver_reached_by_another_name_is_refused_by_kind(name):
    """The same bypasses through ATen ops, torch._C._linalg, numpy's gufuncs, a closure, exec of
    base64 or a general eigensolver: the small check fails, naming the solver that was called."""
    namespace = {"torch": torch}
    exec(compile(BYPASSES[name], name, "exec"), namespace)
    checks = ASSIGNMENTS["A1"].tasks["spectrum_and_det"](namespace["spectrum_and_det"], seed=3)
    failed = [c.message for c in checks if not c.passed]
    assert failed and all("your code called" in m for m in failed), failed


A2_RELEASE = (REPO / "notebooks" / "assignments" / "A2_cayley.py").read_text(encoding="utf-8")
GATE_POINTS = 3.0  # gate_regularizer's marks
AUTOGRAD_GATE = """
def gate_regularizer(gamma):
    return 4 * gamma * (1 - gamma)
"""
NUMPY_GATE = """
import numpy as _np

def gate_regularizer(gamma):  # right values, computed where autograd cannot follow
    g = _np.asarray(gamma.detach())
    return torch.as_tensor(4 * g * (1 - g))
"""
# each reports, for the numpy gate, what autograd would: differentiable, dr/dγ = 4 − 8γ (the
# slope the grader measures, so only the seal can stop it)
FORGED_PROBE = """
import geolab.assignments.probes as _probes

def _forged(fn, x):
    return {"out": fn(x), "differentiable": True, "grad": 4 - 8 * x.detach()}
"""
PATCHED_PROBES = {
    "patched_table.py": '_probes.PROBES["value_and_grad"] = _forged',
    "patched_code.py": "_probes.value_and_grad.__code__ = _forged.__code__",
    # the wire's decoder (it sees the γ asked) and its encoder of every reply line
    "patched_wire.py": """
import geolab.assignments.wire as _wire
_decode, _dumps, _asked = _wire.decode, _wire.dumps, []

def _remembering(data, depth=0):
    value = _decode(data, depth)
    if isinstance(value, torch.Tensor) and value.ndim == 0:
        _asked.append(value)
    return value

def _forging(message):
    body = message.get("value")
    body = body.get("dict") if isinstance(body, dict) else None
    if _asked and isinstance(body, dict) and body.get("differentiable") is False:
        grad = _wire.encode(4 - 8 * _asked[-1])
        message = {"value": {"dict": {**body, "differentiable": True, "grad": grad}}}
    return _dumps(message)

_wire.decode, _wire.dumps = _remembering, _forging
""",
    # the worker's own pipe reader and writer (the module run as __main__)
    "patched_worker.py": """
import json as _json
import sys as _sys
import geolab.assignments.wire as _wire
_w = _sys.modules["__main__"]
_read, _send, _asked = _w._readline, _w._send, []

def _remembering(fd):
    line = _read(fd)
    request = _json.loads(line or b"{}")
    if request.get("probe") == "value_and_grad":
        _asked.append(_wire.decode(request["args"])[0])
    return line

def _forging(fd, message, *rest):
    body = message.get("value")
    body = body.get("dict") if isinstance(body, dict) else None
    if _asked and isinstance(body, dict) and body.get("differentiable") is False:
        grad = _wire.encode(4 - 8 * _asked[-1])
        message = {"value": {"dict": {**body, "differentiable": True, "grad": grad}}}
    return _send(fd, message, *rest)

_w._readline, _w._send = _remembering, _forging
""",
}
A2_EIG = """
def minus_one_gap(u, v, beta):  # dense Q, and its spectrum through aten, named nowhere
    A = torch.outer(u, v) - torch.outer(v, u)
    eye = torch.eye(u.shape[-1], dtype=u.dtype)
    Q = torch.linalg.solve(eye + beta / 2 * A, eye - beta / 2 * A)
    return (torch.ops.aten.linalg_eigvals(Q) + 1).abs().min()
"""


@GRADES
def test_a2_eig_a_numpy_gate_and_patched_probes_earn_what_is_due(tmp_path):
    """On A2's release, one stub written each. A dense spectrum through aten's eigvals: none of
    minus_one_gap's marks (the measured check at d = 50,000 gates it). A regulariser computed in
    numpy: right values, no gradient from autograd, so its gate fails and it earns none of its
    3 marks — also when the submission rewrites, in its own process, the probe table, a
    probe's code, the wire functions or the worker's pipe reader and writer to report the
    gradient autograd would have given (each route alone won the 3 marks before): the worker
    answers through copies sealed before the submission loads (worker.sealed). The same
    regulariser in torch gets the 3 marks through the same probes."""
    cases = {
        "autograd_gate.py": (at_import(A2_RELEASE, AUTOGRAD_GATE), GATE_POINTS),
        "numpy_gate.py": (at_import(A2_RELEASE, NUMPY_GATE), 0.0),
        "aten_eig.py": (at_import(A2_RELEASE, A2_EIG), 0.0),
    }
    for name, patch in PATCHED_PROBES.items():
        cases[name] = (at_import(A2_RELEASE, NUMPY_GATE + FORGED_PROBE + patch), 0.0)
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name, (text, _) in cases.items():
        (folder / name).write_text(text, encoding="utf-8")
    rows = {r["submission"]: r for r in grade_dir(folder, "A2", TIMEOUT, 20.0, jobs=2)}
    got = {name: (row["status"], row["score"]) for name, row in rows.items()}
    assert got == {name: ("ok", score) for name, (_, score) in cases.items()}, {
        name: [c["message"][:200] for c in row["checks"] if not c["passed"]][-3:]
        for name, row in rows.items()}  # fmt: skip

    def failed(name, stub):
        return {c["name"]: c["message"] for c in rows[name]["checks"]
                if not c["passed"] and c["name"].startswith(stub + ":")}  # fmt: skip

    gate = "gate_regularizer: zero gradient at γ = ½ only, from autograd"
    for name in ["numpy_gate.py", *PATCHED_PROBES]:
        fails = failed(name, "gate_regularizer")
        assert "must be differentiable" in fails[gate], (name, fails[gate])
        assert all(m.startswith("holds, but counts only") for n, m in fails.items() if n != gate)
    measured = "minus_one_gap: from θ alone (d = 50,000 at grading)"
    fails = failed("aten_eig.py", "minus_one_gap")
    assert "allocate" in fails[measured] or "MemoryError" in fails[measured], fails[measured]


A2_SOLUTION = (REPO / "assignments" / "instructor" / "A2_cayley.py").read_text(encoding="utf-8")
A2_POINTS = sum(c.points for c in all_failed("A2", ""))
GAP_POINTS = 3.0  # minus_one_gap's marks
# The O(d) route of issue 55: the eigenvalues of Q's 2×2 block in span{u, v} (Q is I elsewhere),
# by a solver the ban names (`_eig`, defined by each attack). No size check can see an O(d)
# method: only the ban stops it.
BLOCK_GAP = """
def minus_one_gap(u, v, beta):
    e1 = u / u.norm()
    w = v - (v @ e1) * e1
    basis = torch.stack([e1, w / w.norm()])
    pu, pv = basis @ u, basis @ v
    a = beta / 2 * (torch.outer(pu, pv) - torch.outer(pv, pu))  # cA restricted to the plane
    eye = torch.eye(2, dtype=u.dtype)
    p, m = eye + a, eye - a
    inv = torch.stack([torch.stack([p[1, 1], -p[0, 1]]), torch.stack([-p[1, 0], p[0, 0]])])
    block = inv / (p[0, 0] * p[1, 1] - p[0, 1] * p[1, 0]) @ m
    return (_eig(block) + 1).abs().min().clamp(max=2.0)
"""
# door 1: the dispatch guard switched off around the call (each beat the ban before)
GUARD_OFF = {
    "modes_popped.py": """
from torch.utils._python_dispatch import _disable_current_modes

def _eig(block):  # every dispatch mode popped and the Python dispatch key off
    with _disable_current_modes(), torch._C._DisableTorchDispatch():
        return torch.ops.aten.linalg_eig.default(block)[0]
""",
    "own_thread.py": """
import threading

def _eig(block):  # a new thread starts with no dispatch mode
    out = []

    def run():
        try:
            out.append(torch.ops.aten.linalg_eig.default(block)[0])
        except BaseException as err:
            out.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]
""",
}
# the grader's guard rewritten in the submission's process when it loads (graded only: in
# place it would rewrite this test process's guard)
PATCHED_GUARD = """
import geolab.assignments.checks as _checks
for _name, _value in {"_aten_kinds": lambda paths: {}, "ATEN_KINDS": {}, "_gufuncs": lambda p: [],
                      "_entries": lambda kinds: [], "_RefuseKinds": None}.items():
    setattr(_checks, _name, _value)

def _eig(block):
    return torch.ops.aten.linalg_eig.default(block)[0]
"""
# a gufunc or a routine kept in a container before any call (graded only: in place, where the
# guard replaces names, the kept one still runs; the worker gates them before the file loads)
KEPT = {
    "kept_gufunc.py": """
import numpy.linalg._umath_linalg as _umath
_kept = {"eigvals": _umath.eigvals}

def _eig(block):
    return torch.as_tensor(_kept["eigvals"](block.numpy()))
""",
}
if importlib.util.find_spec("scipy") is not None:
    KEPT["kept_routine.py"] = """
import scipy.linalg._flapack as _flapack
_kept = [_flapack.dgeev]

def _eig(block):
    wr, wi, *_ = _kept[0](block.numpy())
    return torch.complex(torch.as_tensor(wr), torch.as_tensor(wi))
"""
# door 2: scipy's own LAPACK wrappers reach the solver numpy and torch run for eigvals (geev)
LAPACK_EIG = {
    "scipy_lapack.py": """
import scipy.linalg.lapack as _lapack

def _eig(block):
    wr, wi, *_ = _lapack.dgeev(block.numpy())
    return torch.complex(torch.as_tensor(wr), torch.as_tensor(wi))
""",
    "scipy_get_lapack_funcs.py": """
from scipy.linalg import get_lapack_funcs as _get

def _eig(block):
    a = block.numpy()
    (geev,) = _get(("geev",), (a,))
    wr, wi, *_ = geev(a)
    return torch.complex(torch.as_tensor(wr), torch.as_tensor(wi))
""",
    "scipy_flapack.py": """
from scipy.linalg import _flapack

def _eig(block):
    wr, wi, *_ = _flapack.dgeev(block.numpy())
    return torch.complex(torch.as_tensor(wr), torch.as_tensor(wi))
""",
    "scipy_eigvals.py": """
import scipy.linalg as _sl

def _eig(block):  # scipy's public eigvals: a name no list of A2 bans, the same solver
    return torch.as_tensor(_sl.eigvals(block.numpy()))
""",
    # the guard itself undone: scipy's LAPACK module loaded a second time (scipy allows it),
    # its dgeev put back in place of the refusal, then called by its usual name
    "scipy_guard_replaced.py": """
import importlib
import sys

def _eig(block):
    module = sys.modules.pop("scipy.linalg._flapack")
    try:
        module.dgeev = importlib.import_module("scipy.linalg._flapack").dgeev
    finally:
        sys.modules["scipy.linalg._flapack"] = module
    wr, wi, *_ = module.dgeev(block.numpy())
    return torch.complex(torch.as_tensor(wr), torch.as_tensor(wi))
""",
}
if importlib.util.find_spec("scipy") is None:  # not a geolab dependency: only where installed
    LAPACK_EIG = {}
REFUSED = ("your code called", "your code switched off the grader's guard")


@pytest.mark.parametrize("name", sorted({**GUARD_OFF, **LAPACK_EIG}))
def test_a2_a_banned_solver_behind_a_switched_off_guard_or_in_scipy_lapack_is_refused(name):
    """In place (a notebook): the 2×2-block gap through a banned solver with the dispatch guard
    switched off, or through scipy's LAPACK wrappers, fails every minus_one_gap check, naming the
    solver, or saying the code switched the guard off. Before, each earned all 3 marks: the guard
    was a dispatch mode the code could pop or leave behind in its own thread, and scipy's
    wrappers were refused by no name."""
    namespace = {"torch": torch}
    exec(compile({**GUARD_OFF, **LAPACK_EIG}[name] + BLOCK_GAP, name, "exec"), namespace)
    checks = ASSIGNMENTS["A2"].tasks["minus_one_gap"](namespace["minus_one_gap"], seed=4)
    failed = [c.message for c in checks if not c.passed]
    refused = REFUSED[1:] if name == "scipy_guard_replaced.py" else REFUSED
    assert len(failed) == len(checks) and all(m.startswith(refused) for m in failed), failed


# scipy's routes to the other banned kinds, each under a list of A1 or A2 (scipy only)
SCIPY_KINDS = {
    "lapack gesv": ("NO_SOLVE", "scipy.linalg.lapack.dgesv(a, b)"),
    "getrs": ("NO_SOLVE", "get_lapack_funcs(('getrs',), (a,))[0](a, [0, 1, 2], b)"),
    "scipy solve": ("NO_SOLVE", "scipy.linalg.solve(a, b)"),
    "spsolve": ("NO_SOLVE", "scipy.sparse.linalg.spsolve(scipy.sparse.csc_matrix(a), b)"),
    "scipy inv": ("NO_SOLVE", "scipy.linalg.inv(a)"),
    "scipy expm": ("NO_SOLVE", "scipy.linalg.expm(a)"),
    "scipy det": ("LINALG", "scipy.linalg.det(a)"),
    "lapack syevd": ("LINALG", "scipy.linalg.lapack.dsyevd(a + a.T)"),
}


@pytest.mark.skipif(importlib.util.find_spec("scipy") is None, reason="scipy is not installed")
@pytest.mark.parametrize("case", list(SCIPY_KINDS))
def test_scipy_routes_to_each_banned_kind_are_refused(case):
    """Under A2's list of banned solves and A1's banned eigen-solvers and determinants, scipy's
    own routes to the same kinds are refused with the name of the banned solver."""
    import numpy as np
    import scipy.linalg
    import scipy.sparse
    import scipy.sparse.linalg
    from scipy.linalg import get_lapack_funcs

    from geolab.assignments import a1, a2
    from geolab.assignments.checks import ForbiddenCall, forbid

    listed, call = SCIPY_KINDS[case]
    banned = {"NO_SOLVE": a2.NO_SOLVE, "LINALG": a1.LINALG}[listed]
    scope = {"scipy": scipy, "get_lapack_funcs": get_lapack_funcs, "a": np.eye(3) + 0.1,
             "b": np.ones(3)}  # fmt: skip
    eval(call, scope)  # outside the block it runs
    with pytest.raises(ForbiddenCall, match="your code called"), forbid(banned):
        eval(call, scope)


@GRADES
def test_a2_the_guard_switched_off_or_scipy_lapack_earn_nothing_beside_an_honest_file(tmp_path):
    """Graded, on A2's solution with minus_one_gap replaced by the 2×2-block gap: each way
    around the guard (modes popped, a thread of its own, the guard's module rewritten when the
    submission loads, a gufunc or LAPACK routine kept in a container) and each scipy LAPACK
    route loses minus_one_gap's 3 marks and only those; the honest file beside them keeps its
    28. Before, each earned 28."""
    cases = {"honest.py": (A2_SOLUTION, A2_POINTS)}
    attacks = {**GUARD_OFF, "patched_guard.py": PATCHED_GUARD, **KEPT, **LAPACK_EIG}
    for name, code in attacks.items():
        cases[name] = (at_import(A2_SOLUTION, code + BLOCK_GAP), A2_POINTS - GAP_POINTS)
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name, (text, _) in cases.items():
        (folder / name).write_text(text, encoding="utf-8")
    rows = {r["submission"]: r for r in grade_dir(folder, "A2", TIMEOUT, 20.0, jobs=2)}
    failed = {name: [c["message"] for c in row["checks"] if not c["passed"]]
              for name, row in rows.items()}  # fmt: skip
    got = {name: (row["status"], row["score"]) for name, row in rows.items()}
    assert got == {name: ("ok", score) for name, (_, score) in cases.items()}, failed
    for name in attacks:
        refused = REFUSED[1:] if name == "scipy_guard_replaced.py" else REFUSED
        assert len(failed[name]) == 3 and all(m.startswith(refused) for m in failed[name]), failed


# --- in place: the check maths against answers of one kind each (issue 43) --------------------
# These run the checks here, on the student's function wrapped as the grader sees a sandboxed
# one (``InPlace``: the bans are only recorded, the "no d×d matrix" size is the grading one), so
# they cost milliseconds; the sandbox's own boundaries are the corpus above.


class InPlace:
    """A function as the grader's proxy for a sandboxed stub (``remote.Stub``), run here."""

    runs_elsewhere = True

    def __init__(self, fn):
        self.fn, self.banned = fn, []

    def __call__(self, *args):
        return self.fn(*args)

    def observe(self, probe, *args):
        return PROBES[probe](self.fn, *args)


def _earned(aid: str, stub: str, fn, seed: int) -> dict[str, str]:
    """{check name: message} of the checks ``fn`` passes as ``stub`` of ``aid``."""
    return {c.name: c.message for c in ASSIGNMENTS[aid].tasks[stub](InPlace(fn), seed=seed)
            if c.passed}  # fmt: skip


def _eye_like(x: torch.Tensor) -> torch.Tensor:
    return torch.eye(x.shape[-1], dtype=x.dtype).expand(*x.shape, x.shape[-1]).clone()


def _zeros_square(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros(*x.shape, x.shape[-1], dtype=x.dtype)


F64 = torch.float64
# Answers that do nothing: each returns its input, or a constant of the right shape.
TRIVIAL = {
    ("A1", "delta_operator"): [lambda k, b: _eye_like(k), lambda k, b: _zeros_square(k)],
    ("A1", "spectrum_and_det"): [lambda d, b: (torch.ones(d, dtype=F64), 1.0),
                                 lambda d, b: (torch.zeros(d, dtype=F64), 0.0)],
    ("A1", "delta_update"): [lambda x, k, b, v: x, lambda x, k, b, v: torch.zeros_like(x)],
    ("A1", "mode"): [lambda b: "general", lambda b: "identity", lambda b: "erase"],
    ("A2", "skew"): [lambda u, v: _zeros_square(u), lambda u, v: _eye_like(u)],
    ("A2", "cayley_apply"): [lambda x, u, v, b: x, lambda x, u, v, b: torch.zeros_like(x)],
    ("A2", "cayley_angle"): [lambda u, v, b: torch.zeros(u.shape[:-1], dtype=u.dtype),
                             lambda u, v, b: torch.as_tensor(b, dtype=F64)],
    ("A2", "cayley_matrix"): [lambda u, v, b: _eye_like(u), lambda u, v, b: _zeros_square(u)],
    ("A2", "minus_one_gap"): [lambda u, v, b: torch.tensor(0.0, dtype=F64),
                              lambda u, v, b: torch.tensor(2.0, dtype=F64)],
    ("A2", "householder_apply"): [lambda x, k: x, lambda x, k: torch.zeros_like(x)],
    ("A2", "hybrid_apply"): [lambda x, u, v, k, b, g: x,
                             lambda x, u, v, k, b, g: torch.zeros_like(x)],
    ("A2", "gate_regularizer"): [lambda g: g, lambda g: 0 * g, lambda g: torch.zeros_like(g),
                                 lambda g: 1 + 0 * g],
    ("A3", "effective_rank"): [lambda X: torch.zeros(X.shape[:-2], dtype=X.dtype),
                               lambda X: torch.ones(X.shape[:-2], dtype=X.dtype)],
    ("A3", "rank_profile"): [lambda m, x: torch.ones(m.cfg.n_steps + 1),
                             lambda m, x: torch.zeros(m.cfg.n_steps + 1)],
    # the curves a student draws from the lecture instead of measuring them
    ("A3", "collapse_curves"): [
        lambda d, s: {"noskip": torch.linspace(1, 0.1, d + 1), "preln": torch.ones(d + 1),
                      "mgt": torch.ones(d + 1)},
        lambda d, s: {r: torch.full((d + 1,), 0.5) for r in ("noskip", "preln", "mgt")},
    ],
}  # fmt: skip


@pytest.mark.parametrize("aid, stub", list(TRIVIAL), ids=[f"{a}-{s}" for a, s in TRIVIAL])
def test_trivial_answers_earn_nothing(aid, stub):
    """Returning the input or a constant earns no mark: every property an identity map or a
    constant satisfies was rewritten to need the stub's actual work (issue 43: 4/16 in A1,
    13/27 in A2, 3/11 in A3 before)."""
    for i, fn in enumerate(TRIVIAL[aid, stub]):
        for seed in (0, 1):
            assert _earned(aid, stub, fn, seed) == {}, (i, seed)


class _IdentityRule(Rule):
    """A4's do-nothing rule: parameters of the right size, the input back, β₀ painted on."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.w = torch.nn.Linear(cfg.d_model, cfg.d_model)
        self.alpha = torch.nn.Parameter(torch.tensor(0.1))

    def forward(self, x, sublayer):
        beta = 0.5 + 0 * torch.tanh(self.w(x))
        self.keep(beta=beta)
        return x + 0 * beta + 0 * self.alpha


def test_a4_identity_rule_earns_nothing():
    assert {c.name for c in a4.check_my_rule(_IdentityRule, seed=3) if c.passed} == set()


HONEST_SEEDS = 1000


def _instructor(aid: str) -> dict:
    path = REPO / "assignments" / "instructor" / ASSIGNMENTS[aid].notebook
    return load_submission(path, list(ASSIGNMENTS[aid].tasks))


@pytest.mark.slow
@pytest.mark.parametrize("aid", ["A1", "A2", "A3"])
def test_the_solutions_pass_on_every_seed(aid):
    """The instructor's solutions (honest answers) get every mark on 1,000 seeds: the drawn
    inputs and the tolerances leave no honest answer a seed that fails it."""
    solution = _instructor(aid)
    for stub, check in ASSIGNMENTS[aid].tasks.items():
        for seed in range(HONEST_SEEDS):
            failed = [c.name for c in check(InPlace(solution[stub]), seed=seed) if not c.passed]
            assert failed == [], (stub, seed)


@pytest.mark.parametrize("aid", ["A1", "A2", "A3"])
def test_the_solutions_pass_on_a_few_seeds(aid):
    """The default run's share of the slow test above: 20 seeds."""
    solution = _instructor(aid)
    for stub, check in ASSIGNMENTS[aid].tasks.items():
        for seed in range(1000, 1020):
            failed = [c.name for c in check(InPlace(solution[stub]), seed=seed) if not c.passed]
            assert failed == [], (stub, seed)


def _a4_passes(seeds, monkeypatch) -> None:
    monkeypatch.setattr(a4, "forbid", lambda *a, **k: nullcontext())  # no guard to patch here
    monkeypatch.setattr(a4, "trained_loss", lambda make, seed: 0.0)
    solution = _instructor("A4")["MyRule"]
    for seed in seeds:
        failed = [c.name for c in a4.check_my_rule(solution, seed=seed) if not c.passed]
        assert failed == [], seed


@pytest.mark.slow
def test_the_a4_solution_passes_on_every_seed(monkeypatch):
    """A4's rule on 1,000 seeds, all but the training (a check of its own, 2 s a run): seed 16's
    "gradient 3.918, but 3.769" was the finite difference's truncation (h = 1e-2 on a direction
    of norm ~25), now extrapolated away with a tolerance from float32 rounding."""
    _a4_passes(range(HONEST_SEEDS), monkeypatch)


def test_the_a4_solution_passes_on_200_seeds(monkeypatch):
    """The default run's share: 200 seeds (the old tolerance failed 13 of 500, 5 of 0–199)."""
    _a4_passes(range(200), monkeypatch)


def _unsorted_spectrum(d, beta):
    eig = torch.ones(d, dtype=F64)
    eig[0] = 1 - beta  # ascending only when β > 0
    return eig, 1 - beta


def _hybrid_abs_beta(x, u, v, k, beta, gamma):
    """Right for β ≥ 0 only (|β| where β is meant)."""
    from geolab import operators

    b = torch.as_tensor(beta, dtype=x.dtype).abs()
    g = torch.as_tensor(gamma, dtype=x.dtype)[..., None]
    return g * operators.cayley_apply(x, u, v, b) + (1 - g) * operators.householder_apply(x, k)


def _rank_whole_batch_guard(X):
    """The all-zero guard taken for the whole batch, not per matrix."""
    if not X.any():
        return torch.zeros(X.shape[:-2], dtype=X.dtype)
    s = torch.linalg.svdvals(X)
    p = s / s.sum(-1, keepdim=True)
    return torch.exp(-torch.xlogy(p, p).sum(-1)) / min(X.shape[-2:])


def _rank_log_of_zero(X):
    """A per-matrix zero guard, but p·log p where p = 0 (NaN for σ exactly 0)."""
    s = torch.linalg.svdvals(X)
    total = s.sum(-1, keepdim=True)
    p = s / torch.where(total > 0, total, torch.ones_like(total))
    rank = torch.exp(-(p * torch.log(p)).sum(-1)) / min(X.shape[-2:])
    return torch.where(total.squeeze(-1) > 0, rank, torch.zeros_like(rank))


# Answers right on the points the checks used to probe and wrong elsewhere in the task's domain:
# each must lose a mark of its stub on every seed.
OFF_PROBE = {
    "A1 unsorted spectrum": ("A1", "spectrum_and_det", _unsorted_spectrum),
    "A2 hybrid wrong for β < 0": ("A2", "hybrid_apply", _hybrid_abs_beta),
    "A3 zero guard per batch": ("A3", "effective_rank", _rank_whole_batch_guard),
    "A3 0·log 0": ("A3", "effective_rank", _rank_log_of_zero),
}


@pytest.mark.parametrize("case", list(OFF_PROBE))
def test_answers_wrong_off_the_old_probes_lose_those_marks(case):
    """Probes cover the task's domain (β < 0, spectra that need sorting, the guards' edge
    cases), drawn from the seed: 81 of 200 seeds passed the unsorted spectrum before, the
    β < 0 and guard cases every seed."""
    aid, stub, fn = OFF_PROBE[case]
    for seed in range(12):
        results = ASSIGNMENTS[aid].tasks[stub](InPlace(fn), seed=seed)
        assert not all(c.passed for c in results), seed


# --- A4: rules that detect the grader --------------------------------------------------------


def _a4_solution() -> type:
    return _instructor("A4")["MyRule"]


class _TrainTimeDetector(Rule):
    """mgt_ddl where the checks look (width 16), pre-LN with painted gates in training."""

    def __new__(cls, cfg):
        return _a4_solution()(cfg) if cfg.d_model == 16 else super().__new__(cls)

    def __init__(self, cfg):
        super().__init__(cfg)
        self.inner = _a4_solution()(cfg)

    def forward(self, x, sublayer):
        beta = torch.tanh(self.inner.w_beta(x))
        self.keep(beta=beta, alpha=self.inner.alpha)
        return x + sublayer(self.inner.ln(x)) + 1e-3 * beta * self.inner.alpha


class _FakeGates(Rule):
    """Pre-LN (x + F(LN x)) with a β that is computed, recorded and barely touches the output."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.inner = _a4_solution()(cfg)

    def forward(self, x, sublayer):
        inner = self.inner
        beta = inner.lam * torch.tanh(inner.w_beta(x)) + inner.eps
        self.keep(beta=beta, alpha=inner.alpha)
        return x + sublayer(inner.ln(x)) + 1e-3 * (beta - inner.alpha * x)


class _SlopeDetector(Rule):
    """A backward that doubles every gradient, and outputs made to match it wherever autograd
    is off (where the finite differences used to be measured)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.inner, self.base = _a4_solution()(cfg), None

    def forward(self, x, sublayer):
        out = self.inner(x, sublayer)
        self.gates = self.inner.gates
        if torch.is_grad_enabled():
            self.base = out.detach()
            return out + (out - out.detach())  # twice the gradient, the same value
        return self.base + 2 * (out - self.base) if self.base is not None else out


# {rule: (checks it must fail, the marks it is due)}
DETECTORS = {
    "train-time detector": (_TrainTimeDetector, {"MyRule: trains on copy with the geolab trainer"}),
    "fake gates over pre-LN": (_FakeGates, {
        "MyRule: equals geolab's mgt_ddl at initialisation",
        "MyRule: records the β it updates with in rule.gates, β = β₀ at init",
        "MyRule: β = λ·tanh(X W_β + b_β) + ε depends on X, stays in range and acts",
        "MyRule: trains on copy with the geolab trainer",
    }),
    # (its evaluation in training runs without autograd too, so training sees it as well)
    "finite-difference detector": (_SlopeDetector, {
        "MyRule: gradients reach x and every parameter",
        "MyRule: trains on copy with the geolab trainer",
    }),
}  # fmt: skip


@pytest.mark.parametrize("case", list(DETECTORS))
def test_a4_rules_that_detect_the_grader_lose_what_they_hide(case):
    """The checks' inputs look like training (autograd on for every call) and β is verified by
    its effect on the output (X' − X = β ⊙ (V − α X)) in the checks and in every training call,
    so a rule that behaves differently when probed, or records a β it does not use, fails the
    checks it hides from — and only those."""
    rule, hidden = DETECTORS[case]
    failed = {c.name for c in a4.check_my_rule(rule, seed=4) if not c.passed}
    assert failed == hidden


# --- pasted reference code --------------------------------------------------------------------


def _renamed_source(dotted: str) -> str:
    """geolab's source of ``dotted`` as a student would paste it: its local names renamed."""
    source = textwrap.dedent(inspect.getsource(pasted._resolve(dotted)))
    for old, new in (("sigma", "s_vals"), ("total", "tot"), ("scale", "mx"), ("beta", "b")):
        source = re.sub(rf"\b{old}\b", new, source)
    return source


PASTES = {
    "A3": ["geolab.metrics.effective_rank", "geolab.metrics._singular_values"],
    "A4": ["geolab.rules.delta._MGTBlock.forward", "geolab.rules.delta._MGTBlock.__init__"],
}


@pytest.mark.parametrize("aid", list(PASTES))
def test_pasted_reference_is_flagged_and_solutions_are_not(aid):
    """A3 11/11 and A4 8/8 for a pasted copy of geolab's reference: its outputs are right, so
    the gradebook flags it for the teacher (the "flag" column) instead. The instructor's own
    solutions, written from the formula, are not flagged."""
    solution = (REPO / "assignments" / "instructor" / ASSIGNMENTS[aid].notebook).read_text()
    assert pasted.pasted(solution, aid) == []
    for name in PASTES[aid]:
        code = _renamed_source(name)
        if aid == "A4":  # methods pasted into the student's class
            code = "class MyRule(Rule):\n" + textwrap.indent(code, "    ")
        flags = pasted.pasted(at_import(solution, code), aid)
        assert len(flags) == 1 and f"geolab's `{name}`" in flags[0], flags


def test_the_gradebook_carries_the_flag(tmp_path):
    row = {"submission": "eve.py", "status": "ok", "score": 1.0, "max_score": 1.0,
           "seconds": 0.1, "seed": 1, "error": "", "flag": "`f` (line 3) is 0.99 alike",
           "checks": [{"name": "c", "passed": True, "message": "", "points": 1.0}]}  # fmt: skip
    paths, _ = write_gradebook([row], tmp_path / "book.csv")
    head, line = paths[0].read_text(encoding="utf-8").splitlines()
    assert head.split(",")[7] == "flag" and "0.99 alike" in line


def test_what_a_teachers_tools_read_cannot_run_or_rewrite_anything(tmp_path):
    """A name a spreadsheet reads as a formula, a name that rewrites the terminal, and one
    student id written in two Unicode normalisations (issue 55)."""
    import csv
    import unicodedata

    from geolab.assignments.gradebook import check_student_ids, printable

    names = ["=2+5.py", "+1.py", "-x.py", "@sum.py", "\tx.py", "\rx.py", "bob.py"]
    row = {"status": "ok", "score": 1.0, "max_score": 1.0, "seconds": 0.1, "seed": 1,
           "error": "=HYPERLINK(1)", "flag": "", "checks": []}  # fmt: skip
    rows = [{**row, "submission": name} for name in names]
    paths, _ = write_gradebook(rows, tmp_path / "book.csv")
    for path in (paths[0], paths[2]):  # the gradebook and the LMS file
        with open(path, newline="", encoding="utf-8") as f:
            cells = [c for line in list(csv.reader(f))[1:] for c in line]
        assert not [c for c in cells if c[:1] in "=+-@\t\r" and c[:1]], (path.name, cells)
    with open(paths[2], newline="", encoding="utf-8") as f:
        assert [line[0] for line in csv.reader(f)][1:3] == ["'=2+5", "'+1"]
    assert printable("ann\r\x1b[8mbob.py") == "ann\\r\\x1b[8mbob.py"
    nfc, nfd = (unicodedata.normalize(form, "José.py") for form in ("NFC", "NFD"))
    assert nfc != nfd
    with pytest.raises(ValueError, match="Unicode normalisation") as err:
        check_student_ids([nfc, nfd, "bob.py"])
    assert "\n" not in str(err.value) and ascii(nfd) in str(err.value)


def test_trivial_answers_earn_nothing_from_the_hidden_checks():
    hidden = hidden_tasks(REPO / "assignments" / "instructor" / "hidden", "A1")
    for (aid, stub), answers in TRIVIAL.items():
        if aid == "A1" and stub in hidden:
            for fn in answers:
                assert not any(c.passed for c in hidden[stub](InPlace(fn), seed=2)), stub


# --- resources: a process limit, memory and time of each submission's own -------------------

SQUATTER = """
import os, time
if not os.path.exists("squatted"):  # the worker's first load (its folder outlives each stub)
    open("squatted", "w").close()
    end = time.monotonic() + {hold}
    while time.monotonic() < end:  # every process the limit allows, taken as soon as it is free
        try:
            if os.fork() == 0:
                time.sleep(120)
                os._exit(0)
        except OSError:
            time.sleep(0.05)
"""
THREADS = """
import concurrent.futures, functools

def _in_threads(fn):  # an honest file that computes every answer in 8 threads, keeps one
    @functools.wraps(fn)
    def run(*args):
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            return [pool.submit(fn, *args) for _ in range(8)][0].result()
    return run

delta_operator, spectrum_and_det = _in_threads(delta_operator), _in_threads(spectrum_and_det)
delta_update, mode = _in_threads(delta_update), _in_threads(mode)
"""
SPREAD = """
import os, time
if not os.path.exists("spread"):  # once: {n} processes of {each} bytes, each under the rlimit
    open("spread", "w").close()
    kids = []
    for _ in range({n}):
        if (pid := os.fork()) == 0:
            _hog = b"x" * {each}
            time.sleep(5)
            os._exit(0)
        kids.append(pid)
    for pid in kids:
        os.waitpid(pid, 0)
"""
WAITER = """
import os, time
if not os.path.exists("waited"):  # once: waits past the stub's CPU limit, computing nothing
    open("waited", "w").close()
    time.sleep({wait})
"""


# Slow (out of the default run) for now: in two of three full-suite runs on 2026-12-05 (Intel
# host, `make test`) the spread stub ran out of its 6 s of CPU time before the polling stopped
# it, while alone and with this file under -n 2 it passes every time; the cause is not found.
# CI's grader runs use the kernel's limits (the cgroup tests below), not this fallback.
@pytest.mark.slow
@GRADES
def test_a_submission_cannot_take_its_peers_processes_memory_or_time(tmp_path, monkeypatch):
    """Without cgroups (the rlimits and polling every grader falls back to), one run, all four
    at once: a squatter that takes every process its limit allows, beside an honest file that
    needs a thread in every stub (as root with bwrap: one uid per worker); a stub whose
    processes hold 1.35 times the memory limit together, each under it (the supervisor's
    polling kills them); a stub that waits longer than its CPU limit, computing nothing."""
    monkeypatch.setattr(cgroup, "probe", lambda mode: (None, "limits: polled (this test)"))
    task_timeout, memory_gb = 6.0, 2.0
    spread = SPREAD.format(n=3, each=int(0.45 * memory_gb * 2**30))
    cases = {
        "1_threads.py": (at_import(SOLUTION, THREADS), "ok", POINTS),
        "spread_memory.py": (in_mode(spread), "ok", POINTS - MODE_CHECKS),
        "waiter.py": (in_mode(WAITER.format(wait=1.5 * task_timeout)), "ok", POINTS),
    }
    if sandbox.bwrap_works() and os.geteuid() == 0:  # not for an ordinary user's one uid
        cases["0_squatter.py"] = (at_import(SOLUTION, SQUATTER.format(hold=15)), "ok", POINTS)
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name, (text, _, _) in cases.items():
        (folder / name).write_text(text, encoding="utf-8")
    limits = sandbox.Limits(memory_gb=memory_gb)
    rows = grade_dir(folder, "A1", TIMEOUT, task_timeout, jobs=len(cases), limits=limits)
    by_name = {r["submission"]: r for r in rows}
    got = {n: (r["status"], r["score"]) for n, r in by_name.items()}
    want = {n: (status, score) for n, (_, status, score) in cases.items()}
    assert got == want, {n: r["error"] or [c["message"] for c in r["checks"] if not c["passed"]]
                         for n, r in by_name.items() if got[n] != want[n]}  # fmt: skip
    failed = [c["message"] for c in by_name["spread_memory.py"]["checks"] if not c["passed"]]
    assert all(f"held more than {memory_gb:g} GiB of memory together" in m for m in failed), failed


# --- the kernel's limits: a cgroup per submission ---------------------------------------------

CGROUPS, CGROUP_LINE = cgroup.probe("bwrap" if sandbox.bwrap_works() else "none")
KERNEL = pytest.mark.skipif(CGROUPS is None, reason=f"no cgroup per submission here: {CGROUP_LINE}")
KERNEL_GB, KERNEL_SEED = 1.0, 7  # a small limit: four processes of 0.3 GiB are over it together
HONEST = at_import(SOLUTION, THREADS)  # needs a thread in every stub: 8 tasks of its limit


def _kernel_grading(tmp_path: Path, cases: dict[str, str]) -> dict[str, dict]:
    """{file: row} of one grading run of ``cases`` ({file: text}), side by side, in cgroups."""
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name, text in cases.items():
        (folder / name).write_text(text, encoding="utf-8")
    limits = sandbox.Limits(memory_gb=KERNEL_GB)
    rows = grade_dir(folder, "A1", TIMEOUT, TASK_TIMEOUT, jobs=len(cases), seed=KERNEL_SEED,
                     limits=limits)  # fmt: skip
    return {r["submission"]: r for r in rows}


def _marks(row: dict) -> tuple:
    """What a row says of the submission's work: status, score, every check's verdict."""
    checks = [(c["name"], c["passed"], c["points"], c["message"]) for c in row["checks"]]
    return row["status"], row["score"], checks


def _my_groups() -> list[Path]:
    me = f"{cgroup.PREFIX}{os.getpid()}-"
    return [g for g in cgroup.groups(CGROUPS) if g.name.startswith(me)]


@pytest.fixture(scope="module")
def honest_alone(tmp_path_factory) -> tuple:
    """The honest file's marks when it is graded alone, in the kernel's limits."""
    return _marks(
        _kernel_grading(tmp_path_factory.mktemp("alone"), {"honest.py": HONEST})["honest.py"]
    )


@KERNEL
def test_memory_over_the_cgroup_limit_across_processes_is_stopped(tmp_path, honest_alone):
    """Four processes of 0.3 GiB each, each under its 1 GiB address-space rlimit (nothing polls
    them here): the kernel stops them at the submission's 1 GiB, and the student reads why in
    one line; the honest file graded beside it gets exactly its marks alone."""
    hog = SPREAD.format(n=4, each=int(0.3 * 2**30))
    rows = _kernel_grading(tmp_path, {"honest.py": HONEST, "hog.py": in_mode(hog)})
    assert _marks(rows["honest.py"]) == honest_alone
    hog_row = rows["hog.py"]
    failed = {c["name"]: c["message"] for c in hog_row["checks"] if not c["passed"]}
    assert (hog_row["status"], hog_row["score"]) == ("ok", POINTS - MODE_CHECKS), failed
    assert len(failed) == MODE_CHECKS and all(n.startswith("mode") for n in failed), failed
    for message in failed.values():
        assert message.startswith("memory limit exceeded:") and "\n" not in message, message
        assert f"{KERNEL_GB:g} GiB of memory together (the kernel's limit" in message, message
    assert _my_groups() == []


@KERNEL
def test_a_process_squatter_leaves_its_peer_its_processes(tmp_path, honest_alone):
    """A submission that takes every process its cgroup allows and holds them (15 s), graded
    beside an honest file that needs a thread in every stub: the honest file's marks are its
    marks alone. (Its uid's rlimit on processes is not set: the cgroup's pids.max is the one
    limit here.)"""
    squatter = at_import(SOLUTION, SQUATTER.format(hold=15))
    rows = _kernel_grading(tmp_path, {"honest.py": HONEST, "squatter.py": squatter})
    assert _marks(rows["honest.py"]) == honest_alone
    assert (rows["squatter.py"]["status"], rows["squatter.py"]["score"]) == ("ok", POINTS)
    assert _my_groups() == []


TOGETHER = """
import functools, threading

def _together(fn):  # an honest file that computes every answer in 16 threads alive at once
    @functools.wraps(fn)
    def run(*args):
        out, gate = [], threading.Barrier(16)
        def work():
            gate.wait(timeout=60)
            out.append(fn(*args))
        threads = [threading.Thread(target=work) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return out[0]
    return run

delta_operator, spectrum_and_det = _together(delta_operator), _together(spectrum_and_det)
delta_update, mode = _together(delta_update), _together(mode)
"""


@GRADES
def test_threads_alive_together_keep_their_marks_in_one_gib(tmp_path):
    """Sixteen threads that compute at once, in a worker limited to 1 GiB of address space:
    glibc would reserve 64 MiB of address space for each thread's malloc arena (1 GiB for 16
    with nothing allocated), so the threads could not start; the worker keeps two arenas, and
    the file gets every mark."""
    folder = tmp_path / "submissions"
    folder.mkdir()
    (folder / "together.py").write_text(at_import(SOLUTION, TOGETHER), encoding="utf-8")
    limits = sandbox.Limits(memory_gb=1.0)
    (row,) = grade_dir(folder, "A1", TIMEOUT, TASK_TIMEOUT, limits=limits)
    failed = [c["message"] for c in row["checks"] if not c["passed"]]
    assert (row["status"], row["score"]) == ("ok", POINTS), row["error"] or failed


KILLS_ITS_WORKER = """
import os, signal, time
if os.fork() == 0:  # an escaped sleeper, in a session of its own
    os.setsid()
    time.sleep(300)
os.kill(os.getppid(), signal.SIGKILL)  # the supervisor
"""
SLEEPS_AT_LOAD = "import time\ntime.sleep(300)"
GRADER = """
import sys
from pathlib import Path
from geolab.assignments.grade import grade_dir
grade_dir(Path(sys.argv[1]), "A1", 600.0, 600.0)
"""


@KERNEL
def test_no_cgroup_is_left_behind_by_a_killed_worker_or_grader(tmp_path):
    """A stub that kills its own worker (and leaves a sleeper in a session of its own): once
    graded, no group of this grader is left, nor a process. A grader killed mid-grading (SIGKILL:
    no cleanup of its own runs) leaves its group; the next grading removes it first."""
    rows = _kernel_grading(tmp_path, {"killer.py": in_mode(KILLS_ITS_WORKER)})
    assert (rows["killer.py"]["status"], rows["killer.py"]["score"]) == ("ok", POINTS - MODE_CHECKS)
    assert _my_groups() == [] and _leftovers() == []

    folder = tmp_path / "sleeper"
    folder.mkdir()
    (folder / "sleeper.py").write_text(at_import(RELEASE, SLEEPS_AT_LOAD), encoding="utf-8")
    grader = subprocess.Popen([sys.executable, "-c", GRADER, str(folder)])
    mark = f"{cgroup.PREFIX}{grader.pid}-"
    deadline = time.monotonic() + 120
    while not [g for g in cgroup.groups(CGROUPS) if g.name.startswith(mark)]:
        assert time.monotonic() < deadline and grader.poll() is None, "no group appeared"
        time.sleep(0.2)
    grader.kill()
    grader.wait()
    assert [g for g in cgroup.groups(CGROUPS) if g.name.startswith(mark)], "removed by whom?"
    with grading_setup("A1", TIMEOUT, TASK_TIMEOUT):
        assert [g for g in cgroup.groups(CGROUPS) if g.name.startswith(mark)] == []
    assert not any(f'"grader": {grader.pid}'.encode() in _cmdline(p) for p in os.listdir("/proc"))


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() if pid.isdigit() else b""
    except OSError:
        return b""


def test_cgroup_hierarchies_are_found_in_v2_and_v1(tmp_path):
    """Where the groups go, from /proc/self/{cgroup,mountinfo}: the grader's own v2 cgroup when
    it offers memory and pids to sub-groups, else its v1 memory and pids cgroups; and a v2
    group's files (a folder stands in for the cgroup file system)."""
    proc, v2 = tmp_path / "proc", tmp_path / "unified"
    (v2 / "grader").mkdir(parents=True)
    proc.mkdir()
    (proc / "cgroup").write_text("5:memory:/a/b\n8:pids:/\n0::/grader\n")
    (proc / "mountinfo").write_text(
        f"41 31 0:38 / {v2} rw,relatime shared:9 - cgroup2 cgroup2 rw\n"
        f"35 31 0:32 /a /m\\040x rw,relatime - cgroup cgroup rw,memory\n"
        f"39 31 0:36 / /p rw,relatime - cgroup cgroup rw,pids\n"
    )
    assert cgroup.find(proc) == cgroup.Hierarchy(
        1, Path("/m x/b"), Path("/p"), (Path("/m x"), Path("/p"))
    )
    (v2 / "grader" / "cgroup.subtree_control").write_text("cpu memory pids\n")
    where = cgroup.find(proc)
    assert where == cgroup.Hierarchy(2, v2 / "grader", v2 / "grader", (v2,))
    group = cgroup.Group(where, 123)
    assert (group.memory / "memory.max").read_text() == "123" and group.memory == group.pids
    assert group.command(["true"])[4:] == ["1", str(group.memory / "cgroup.procs"), "true"]
    (group.memory / "memory.events").write_text("low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\n")
    assert group.ooms() == 2


STOPS_READING = """
import os, time

def delta_operator(k, beta):  # answers once; then its process never reads a request again
    os.read = lambda fd, n: time.sleep(3600)
    return k
"""


@GRADES
def test_a_child_that_stops_reading_a_large_request_costs_its_stub_only(tmp_path):
    """The grader's write of a request larger than the pipe holds to a child that no longer
    reads ends at the stub's limit: its CPU time (the grader's encoding counts) or the wall-clock
    backstop (4 s, whatever the load: remote.backstop)."""
    text, stopped = at_import(SOLUTION, STOPS_READING), []

    def two_calls(session):
        stub = Stub(session, "delta_operator")
        try:
            with session.limit(1.0)("delta_operator"):
                stub(torch.ones(3), 0.5)
                stub(torch.ones(2**20), 0.5)  # 8 MiB: far more than a pipe holds
        except TimeLimit as err:
            stopped.append(str(err))

    with grading_setup("A1", TIMEOUT, 1.0) as setup, session_for(text, setup) as session:
        assert "loaded" in session.open(None)
        thread = threading.Thread(target=two_calls, args=(session,), daemon=True)
        thread.start()
        thread.join(timeout=300)
        stuck = thread.is_alive()
    assert not stuck, "the grader is stuck writing to a child that stopped reading"
    assert stopped and "did not finish within" in stopped[0], stopped


A4_SOLUTION = (REPO / "assignments" / "instructor" / "A4_rule.py").read_text(encoding="utf-8")
A4_FORWARD = "        return x + beta * (sublayer(self.ln(x)) - self.alpha * x)\n"
A4_INIT = "        self.alpha = nn.Parameter(torch.tensor(float(cfg.alpha0)))\n"


@GRADES
def test_a4_requests_are_bounded_in_count_and_size(tmp_path):
    """A rule that calls its sublayer thousands of times in one forward (each answer is computed
    and kept by the grader), and one whose parameters (sent with every request) are larger
    than a rule needs: both stop at the bound, before the grader serves them."""
    assert A4_FORWARD in A4_SOLUTION and A4_INIT in A4_SOLUTION
    flood = "        for _ in range(3000):\n            sublayer(self.ln(x))\n"
    pad = "        self.pad = nn.Parameter(torch.zeros(200_000))\n"
    cases = {
        "flood.py": A4_SOLUTION.replace(A4_FORWARD, flood + A4_FORWARD),
        "big_params.py": A4_SOLUTION.replace(A4_INIT, A4_INIT + pad),
    }
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name, text in cases.items():
        (folder / name).write_text(text, encoding="utf-8")
    rows = {r["submission"]: r for r in grade_dir(folder, "A4", TIMEOUT, 20.0, jobs=2)}
    for name, words in (("flood.py", f"more than {MAX_ASKS} questions in one call"),
                        ("big_params.py", f"more than {MAX_PARAMS:,} parameters")):  # fmt: skip
        row = rows[name]
        failed = [c["message"] for c in row["checks"] if not c["passed"]]
        assert row["status"] == "ok" and row["score"] == 0, (name, row["error"], failed)
        assert all(words in m for m in failed), (name, failed)


SLEEPER = """
import time

def delta_operator(k, beta):  # waits at no CPU: only the wall-clock backstop ends it
    time.sleep(3600)
"""


@GRADES
def test_a_sleeper_is_stopped_at_a_wall_time_the_load_cannot_stretch(tmp_path, monkeypatch):
    """A submission can raise the load average from inside the sandbox (processes blocked in D
    state count, at no CPU); here the grader sees 1000 runnable processes per CPU. A stub that
    sleeps still ends at 4 times its 1 s limit, not at 4000 times."""
    monkeypatch.setattr(remote.os, "getloadavg", lambda: (1000.0 * (os.cpu_count() or 1),) * 3)
    text, stopped = at_import(SOLUTION, SLEEPER), []

    def one_call(session):
        try:
            with session.limit(1.0)("delta_operator"):
                Stub(session, "delta_operator")(torch.ones(3), 0.5)
        except TimeLimit as err:
            stopped.append(str(err))

    with grading_setup("A1", TIMEOUT, 1.0) as setup, session_for(text, setup) as session:
        assert "loaded" in session.open(None)
        start = time.monotonic()
        thread = threading.Thread(target=one_call, args=(session,), daemon=True)
        thread.start()
        thread.join(timeout=120)
        took = time.monotonic() - start
    assert not thread.is_alive() and stopped, "the sleeper held its slot past the backstop"
    assert "wall-clock backstop" in stopped[0], stopped
    assert took < remote.BACKSTOP * 1.0 + 30  # the stub's 4 s, and the start of a fresh child
