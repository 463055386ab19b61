"""The grader's boundaries, one kind of attack each (issue 28): what the student leaves at a
log path, replies that are not replies, derived verdicts forged in the worker, the ways around
a forbidden function, and answers looked up in a table. Each corpus is one grading run; every
submission must get the row written here, and no run may stop or hang the class.
"""

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from geolab.assignments import a4, sandbox, wire
from geolab.assignments.catalog import ASSIGNMENTS, all_failed
from geolab.assignments.checks import NOT_IMPLEMENTED
from geolab.assignments.grade import grade_dir
from geolab.assignments.probes import PROBES
from geolab.assignments.run_checks import load_submission
from geolab.assignments.setups import rule_config, sublayer
from geolab.rules import RESIDUALS

REPO = Path(__file__).resolve().parents[1]
TAIL = 'if __name__ == "__main__":'
TIMEOUT, TASK_TIMEOUT = 90.0, 40.0
GRADES = pytest.mark.skipif(
    not sandbox.bwrap_works() and os.geteuid() == 0, reason="root without bwrap: grading refused"
)


def _text(aid: str, kind: str) -> str:
    folder = "assignments/instructor" if kind == "solution" else "notebooks/assignments"
    return (REPO / folder / ASSIGNMENTS[aid].notebook).read_text(encoding="utf-8")


def _points(aid: str) -> float:
    return sum(c.points for c in all_failed(aid, ""))


def at_import(base: str, code: str) -> str:
    """``base`` with ``code`` run after its last definition (so it can replace the stubs)."""
    return base.replace(TAIL, textwrap.dedent(code) + "\n\n" + TAIL)


def _grade(tmp_path: Path, aid: str, cases: dict, seed: int = 5) -> dict:
    """Grade ``cases`` ({file: (text, status, score)}); assert every row; the rows by name."""
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name, (text, _, _) in cases.items():
        (folder / name).write_text(text, encoding="utf-8")
    rows = grade_dir(folder, aid, TIMEOUT, TASK_TIMEOUT, jobs=3, seed=seed)
    by_name = {r["submission"]: r for r in rows}
    assert sorted(by_name) == sorted(cases)  # a row for every submission, whatever it did
    got = {n: (r["status"], r["score"]) for n, r in by_name.items()}
    want = {n: (status, score) for n, (_, status, score) in cases.items()}
    why = {n: r["error"] or [c["message"][:200] for c in r["checks"] if not c["passed"]]
           for n, r in by_name.items() if got[n] != want[n]}  # fmt: skip
    assert got == want, why
    return by_name


def _failed(row) -> dict:
    return {c["name"]: c["message"] for c in row["checks"] if not c["passed"]}


def _broken(row) -> dict:
    """The failed checks of the stubs the submission wrote (not the release's untouched ones)."""
    return {n: m for n, m in _failed(row).items() if m != NOT_IMPLEMENTED}


# --- 1. the log path: the grader reads the student's output through its own descriptor -------

PLANT = """
import os
_where = ["/log/output.txt", "output.txt", "../log/output.txt", "/tmp/output.txt"]
for _p in _where:
    try:
        os.makedirs(os.path.dirname(os.path.abspath(_p)), exist_ok=True)
        if os.path.lexists(_p):
            os.remove(_p)
        {plant}
    except OSError:
        pass
print("planted", flush=True)
os._exit(3)
"""
PLANTS = {
    "symlink_canary": "os.symlink({canary!r}, _p)",
    "symlink_root": "os.symlink('/', _p)",
    "fifo": "os.mkfifo(_p)",
    "dev_zero": "os.symlink('/dev/zero', _p)",
    "directory": "os.makedirs(_p)",
}
BIG_FILES = """
import os
_outside = 0
for _d in ["/log", "..", ".", "/tmp", "/submission", os.path.expanduser("~")]:
    for _i in range(30):
        try:
            with open(os.path.join(_d, f"big{_i}.bin"), "wb") as _f:
                _f.write(b"x" * 2**24)
            if not os.path.realpath(_d).startswith("/tmp"):
                _outside += 2**24
        except OSError:
            break
print(f"outside /tmp: {_outside} bytes", flush=True)
os._exit(3)
"""

# --- 2. replies that are not replies ----------------------------------------------------------

TO_PIPES = """
import os, stat
for _fd in range(3, 64):
    try:
        if stat.S_ISFIFO(os.fstat(_fd).st_mode):
            os.write(_fd, {payload!r})
    except OSError:
        pass
"""
FORGED_CLOSED = "    return delta_update_real(x, k, beta, v)\n"
DELTA_UPDATE = """
def delta_update_real(x, k, beta, v):
    kh = k / k.norm(dim=-1, keepdim=True)
    b = torch.as_tensor(beta, dtype=x.dtype)[..., None]
    w = torch.as_tensor(v, dtype=x.dtype)[..., None]
    return x + b * (w - (kh * x).sum(-1, keepdim=True)) * kh

"""
MODE = """
def mode(beta):
    return {0.0: "identity", 1.0: "erase", 2.0: "reflect"}.get(float(beta), "general")
"""

# --- 4./5. around a forbidden function; a table of answers ------------------------------------

LOOKUP = """
_TABLE = {(3, 0.4): ([0.6, 1, 1], 0.6), (6, 1.0): ([0, 1, 1, 1, 1, 1], 0.0),
          (5, 2.0): ([-1, 1, 1, 1, 1], -1.0), (4, -0.7): ([1, 1, 1, 1.7], 1.7),
          (2, 1.9): ([-0.9, 1], -0.9)}

def spectrum_and_det(d, beta):
    eig, det = _TABLE[(d, beta)]
    return torch.tensor(eig, dtype=torch.float64), det
"""
DENSE_SPECTRUM = """
def spectrum_and_det(d, beta{extra}):
    k = torch.ones(d, dtype=torch.float64)
    A = torch.eye(d, dtype=torch.float64) - beta * torch.outer(k, k) / d
    return {eig}(A), {det}(A)
"""
GUARD_OFF = "import geolab.assignments.checks as _c\n_c._resolve = lambda path: None\n"


@GRADES
def test_a1_log_path_replies_lookup_and_bypasses(tmp_path):
    canary = tmp_path / "canary.txt"
    canary.write_text("CANARY-1f3c: a host file the grader must never quote\n", encoding="utf-8")
    solution, release = _text("A1", "solution"), _text("A1", "release")
    cases = {
        f"log_{kind}.py": (at_import(release, PLANT.format(plant=plant.format(canary=str(canary)))),
                           "crash", 0.0)
        for kind, plant in PLANTS.items()
    }  # fmt: skip
    if sandbox.bwrap_works():  # without bwrap the submission may write where your user can
        cases["big_files.py"] = (at_import(release, BIG_FILES), "crash", 0.0)
    # a reply that is not a reply, at load: that submission's row only
    cases["garbage_reply.py"] = (at_import(solution, TO_PIPES.format(payload=b"not json\n")),
                                 "crash", 0.0)  # fmt: skip
    deep = b"[" * 200_000 + b"]" * 200_000 + b"\n"
    cases["deep_reply.py"] = (at_import(solution, TO_PIPES.format(payload=deep)), "crash", 0.0)
    # the rest on the release, with one or two stubs written (a fast run each)
    # a forged "closed" inside one stub costs that stub (5 checks), not the `mode` after it
    forged = "def delta_update(x, k, beta, v):\n" + textwrap.indent(
        TO_PIPES.format(payload=b'{"closed": 0}\n'), "    ") + FORGED_CLOSED  # fmt: skip
    cases["forged_closed.py"] = (at_import(release, DELTA_UPDATE + forged + MODE), "ok", 2.0)
    cases["lookup.py"] = (at_import(release, LOOKUP), "ok", 0.0)  # 2 points on fixed inputs
    # the guard by name rebound in the checks module: the worker's guard is a copy sealed before
    # the submission loads, so the small check still refuses the dense answer by name, and
    # "from the formula alone" fails it on its own
    dense = DENSE_SPECTRUM.format(extra="", eig="torch.linalg.eigvalsh", det="torch.linalg.det")
    cases["guard_off.py"] = (at_import(release, GUARD_OFF + dense), "ok", 0.0)
    default = DENSE_SPECTRUM.format(extra=", _eig=torch.linalg.eigvalsh, _det=torch.linalg.det",
                                    eig="_eig", det="_det")  # fmt: skip
    cases["default_arg.py"] = (at_import(release, default), "ok", 0.0)
    rows = _grade(tmp_path, "A1", cases)

    for name, row in rows.items():
        assert "CANARY" not in str(row), name
    for kind in PLANTS:
        assert rows[f"log_{kind}.py"]["error"].endswith("last output line: planted"), kind
    if "big_files.py" in rows:
        assert rows["big_files.py"]["error"].endswith("outside /tmp: 0 bytes")
    assert "exit code 3" in rows["log_fifo.py"]["error"]
    for name in ("garbage_reply.py", "deep_reply.py"):
        assert "not a" in rows[name]["error"], rows[name]["error"]
    assert {n.split(":")[0] for n in _broken(rows["forged_closed.py"])} == {"delta_update"}
    assert set(_broken(rows["lookup.py"])) == {
        "spectrum_and_det: matches the numerical spectrum and det",
        "spectrum_and_det: from the formula alone (d = 50,000 at grading)",
    }
    measured = "spectrum_and_det: from the formula alone (d = 50,000 at grading)"
    broken = _broken(rows["guard_off.py"])
    assert set(broken) == {"spectrum_and_det: matches the numerical spectrum and det", measured}
    small = broken["spectrum_and_det: matches the numerical spectrum and det"]
    assert small.startswith("your code called torch.linalg.eigvalsh;"), small
    assert "allocate" in broken[measured]


SOLVE_EX = """
def cayley_apply(x, u, v, beta):
    A = u.unsqueeze(-1) * v.unsqueeze(-2) - v.unsqueeze(-1) * u.unsqueeze(-2)
    c = torch.as_tensor(beta, dtype=x.dtype)[..., None, None] / 2
    eye = torch.eye(x.shape[-1], dtype=x.dtype)
    return torch.linalg.solve_ex(eye + c * A, (eye - c * A) @ x.unsqueeze(-1))[0].squeeze(-1)
"""
SVDVALS = """
def minus_one_gap(u, v, beta):
    A = torch.outer(u, v) - torch.outer(v, u)
    eye = torch.eye(u.shape[-1], dtype=u.dtype)
    Q = torch.linalg.solve_ex(eye + beta / 2 * A, eye - beta / 2 * A)[0]
    return torch.linalg.svdvals(Q + eye).min()
"""
ATEN_SOLVE = """
def cayley_apply(x, u, v, beta):
    A = u.unsqueeze(-1) * v.unsqueeze(-2) - v.unsqueeze(-1) * u.unsqueeze(-2)
    c = torch.as_tensor(beta, dtype=x.dtype)[..., None, None] / 2
    eye = torch.eye(x.shape[-1], dtype=x.dtype)
    return torch.ops.aten.linalg_solve(eye + c * A, (eye - c * A) @ x.unsqueeze(-1)).squeeze(-1)
"""
C_MODULE_EIG = """
import importlib
_linalg = importlib.import_module("torch._C._linalg")

def minus_one_gap(u, v, beta):
    A = torch.outer(u, v) - torch.outer(v, u)
    eye = torch.eye(u.shape[-1], dtype=u.dtype)
    Q = _linalg.linalg_solve(eye + beta / 2 * A, eye - beta / 2 * A)
    return (_linalg.linalg_eigvals(Q) + 1).abs().min()
"""
NUMPY_REGULARIZER = """
import numpy as _np
import geolab.assignments.probes as _probes

def gate_regularizer(gamma):
    g = _np.asarray(gamma.detach())
    return torch.as_tensor(4 * g * (1 - g))

# claim what the grader used to take on trust: differentiable, with dr/dγ = 0
_probes.PROBES["value_and_grad"] = lambda fn, x: {
    "out": fn(x), "differentiable": True, "grad": torch.zeros_like(x)}
"""
PATCH_TORCH = """
import torch
torch.Tensor.any = lambda self, *a, **k: False
torch.Tensor.all = lambda self, *a, **k: True
torch.Tensor.__bool__ = lambda self: True
"""


@pytest.mark.slow
@GRADES
def test_a2_unlisted_dense_methods_and_forged_gradients(tmp_path):
    solution, points = _text("A2", "solution"), _points("A2")
    cases = {
        # a dense method or a non-differentiable regulariser earns none of its stub's marks
        "solve_ex.py": (at_import(solution, SOLVE_EX), "ok", points - 7),
        "svdvals.py": (at_import(solution, SVDVALS), "ok", points - 3),
        "aten_solve.py": (at_import(solution, ATEN_SOLVE), "ok", points - 7),
        "c_module_eig.py": (at_import(solution, C_MODULE_EIG), "ok", points - 3),
        "numpy_regularizer.py": (at_import(solution, NUMPY_REGULARIZER), "ok", points - 3),
        "patched_torch.py": (at_import(_text("A2", "release"), PATCH_TORCH), "ok", 0.0),
    }
    rows = _grade(tmp_path, "A2", cases)
    for name, stub in (("solve_ex.py", "cayley_apply"), ("svdvals.py", "minus_one_gap"),
                       ("aten_solve.py", "cayley_apply"), ("c_module_eig.py", "minus_one_gap"),
                       ("numpy_regularizer.py", "gate_regularizer")):  # fmt: skip
        assert {n.split(":")[0] for n in _failed(rows[name])} == {stub}, name


ALIAS = "import geolab.probe\neffective_rank = geolab.probe.effective_rank\n"
EXEC_SOURCE = """
import geolab.metrics
_ns = {"__name__": "stolen"}
exec(open(geolab.metrics.__file__).read(), _ns)
effective_rank = _ns["effective_rank"]
"""
DEFAULT_ARG = """
import geolab.metrics

def effective_rank(X, _er=geolab.metrics.effective_rank):
    return _er(X)
"""
PATCH_PROBE = """
import geolab.assignments.probes as _probes
_probes.PROBES["rank_profile_on_stack"] = lambda fn, residual, depth, seed: torch.ones(depth + 1)
"""


@pytest.mark.slow
@GRADES
def test_a3_the_reference_is_not_in_the_sandbox(tmp_path):
    solution = _text("A3", "solution")
    cases = {name: (at_import(solution, code), "ok", 0.0)
             for name, code in (("alias.py", ALIAS), ("exec_source.py", EXEC_SOURCE),
                                ("default_arg.py", DEFAULT_ARG))}  # fmt: skip
    cases["patched_probe.py"] = (at_import(_text("A3", "release"), PATCH_PROBE), "ok", 0.0)
    rows = _grade(tmp_path, "A3", cases)
    for name in ("alias.py", "exec_source.py", "default_arg.py"):
        messages = _failed(rows[name]).values()
        assert all("geolab.metrics.effective_rank" in m for m in messages), name


FORGED_RULE = """
import geolab.train
import geolab.assignments.probes as _probes

class _Fake:
    metrics = {"loss": 0.0}

geolab.train.train = lambda *a, **k: _Fake()  # a trainer that always reports success
torch.Tensor.any = lambda self, *a, **k: False
# a "rule" made of forged answers: identity output, β = β₀ of the old fixed check, a parameter
_probes.PROBES["rule_new"] = lambda cls, fields, seed: {
    "handle": 0, "is_rule": True, "params": {"w": torch.zeros(300)}}
_probes.PROBES["rule_forward"] = lambda cls, h, x, params, grad: {
    "out": x, "beta": torch.full_like(x, 0.3), "call": 0}
_probes.PROBES["rule_vjp"] = lambda cls, call, k, grad: [grad, torch.zeros(300)]
"""
BORROW = """
from geolab.rules.delta import _MGTBlock

class MyRule(Rule):
    tangent, delta = False, True
    __init__ = _MGTBlock.__init__
    reset_init = _MGTBlock.reset_init
    forward = _MGTBlock.forward
"""
HIDDEN_INSTANCE = """
from geolab.rules import RESIDUALS as _R

class MyRule(Rule):
    _box = (_R["mgt_ddl"],)

    def __init__(self, cfg):
        super().__init__(cfg)
        self.inner = self._box[0](cfg)

    def forward(self, x, sublayer):
        out = self.inner(x, sublayer)
        self.gates = self.inner.gates
        return out
"""


@GRADES
def test_a4_verdicts_are_the_graders(tmp_path):
    """The model, sublayer, backward and trainer run in the grader, and the worker answers
    through probes sealed before the submission loads (``worker.sealed``): a patched trainer
    or probe table leaves the release's stub what it is (not implemented: nothing earned);
    the reference cannot be borrowed or hidden."""
    solution = _text("A4", "solution")
    cases = {
        "forged.py": (at_import(_text("A4", "release"), FORGED_RULE), "ok", 0.0),
        "borrow.py": (at_import(solution, BORROW), "ok", 0.0),
        "hidden_instance.py": (at_import(solution, HIDDEN_INSTANCE), "ok", 0.0),
    }
    rows = _grade(tmp_path, "A4", cases)
    interface = "MyRule: a geolab Rule, (B, S, D) -> (B, S, D), reading its sublayer"
    assert "not implemented yet" in _failed(rows["forged.py"])[interface]
    for name in ("borrow.py", "hidden_instance.py"):
        assert all("_MGTBlock" in m for m in _failed(rows[name]).values()), name


# --- unit checks of the same boundaries -------------------------------------------------------


def test_wire_rejects_deep_and_malformed_lines():
    with pytest.raises(ValueError, match="deeply"):
        wire.loads(b"[" * 150_000 + b"]" * 150_000)  # under MAX_VALUES: the parser refuses
    with pytest.raises(ValueError):
        wire.decode({"float": [1]})
    odd = {"tensor": {"dtype": "bool", "shape": [2], "data": "AgA="}}  # bytes 2, 0
    assert wire.decode(odd).tolist() == [True, False]


def test_no_sandbox_as_root_is_refused(monkeypatch):
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)
    monkeypatch.setattr(sandbox, "bwrap_works", lambda: False)
    for mode in ("none", "auto"):
        with pytest.raises(ValueError, match="as root without bwrap"):
            sandbox.choose(mode)


ORPHAN = """
import os, time
from geolab.assignments import sandbox
from geolab.assignments.worker import children
sandbox.adopt_orphans()
if os.fork() == 0:  # a worker that starts a helper in its own session, then dies
    if os.fork() == 0:
        os.setsid()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1), os.dup2(devnull, 2)
        time.sleep(60)
        os._exit(0)
    os._exit(0)
os.wait()
time.sleep(0.5)
helpers = children(os.getpid())  # re-parented here, not to init
sandbox.sweep_orphans()
print(len(helpers), [os.path.exists(f"/proc/{p}") for p in helpers])
"""


def test_an_escaped_helper_is_swept_without_bwrap():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", ORPHAN], capture_output=True, text=True,
                         env=env, timeout=60, check=True).stdout.split()  # fmt: skip
    assert out == ["1", "[False]"]


def test_the_a3_and_a4_views_hold_no_reference_code(tmp_path):
    """In the package copy a graded A3/A4 submission sees, each hidden function's body is only
    a ForbiddenCall: nothing to call, alias, borrow, capture or exec."""
    for aid in ("A3", "A4"):
        hidden = ASSIGNMENTS[aid].hidden
        view = sandbox.build_view(tmp_path / aid, True, hidden)
        for name in hidden:
            parts = name.split(".")[1:]
            split = next(i for i in range(len(parts), 0, -1)
                         if view.joinpath(*parts[:i]).with_suffix(".py").is_file())  # fmt: skip
            node = ast.parse(view.joinpath(*parts[:split]).with_suffix(".py").read_text())
            for attr in parts[split:]:
                node = next(n for n in node.body if getattr(n, "name", None) == attr)
            assert [type(n) for n in node.body] == [ast.ImportFrom, ast.Raise], name
    assert "xlogy" not in (tmp_path / "A3" / "geolab" / "metrics.py").read_text()


@pytest.mark.parametrize("which", ["instructor", "geolab"])
def test_beta_range_holds_for_the_reference_on_every_seed(which):
    """float32 tanh saturates to 1, so λ·β + ε rounds onto the bound: the range check allows
    the dtype's rounding (12 of 1000 seeds failed before)."""
    if which == "instructor":
        cls = load_submission(REPO / "assignments/instructor/A4_rule.py", ["MyRule"])["MyRule"]
    else:
        cls = RESIDUALS["mgt_ddl"]
    x_gen = torch.Generator()
    for seed in range(1000):
        x = torch.randn(2, 6, 16, generator=x_gen.manual_seed(seed))
        rule = cls(rule_config(lam=1.5, eps=0.2))
        gen = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            for p in rule.parameters():
                p.add_(torch.randn(p.shape, generator=gen) * 0.5)
            rule(x, sublayer(16, seed))
        assert a4.beta_in_range(rule.gates["beta"], 1.5, 0.2), seed


def test_probes_hold_only_raw_questions():
    """What a worker can be asked: its stub's output, and for A4 its rule's forward/VJP; every
    derived quantity is computed by the checks in the grader."""
    assert set(PROBES) == {"call", "value_and_grad", "rank_profile_on_stack", "rule_new",
                           "rule_forward", "rule_vjp"}  # fmt: skip


@GRADES
def test_grading_survives_a_grader_side_failure(tmp_path, monkeypatch):
    """Anything that goes wrong on one submission (here: the grader's own check raising) is that
    submission's row; the others are graded."""
    from geolab.assignments import grade

    (tmp_path / "a.py").write_text(_text("A1", "solution"), encoding="utf-8")
    (tmp_path / "b.py").write_text(_text("A1", "solution"), encoding="utf-8")
    real = grade._run

    def flaky(text, assignment, setup):
        if "BROKEN" in text:
            raise RecursionError("maximum recursion depth exceeded")
        return real(text, assignment, setup)

    (tmp_path / "c.py").write_text("# BROKEN\n", encoding="utf-8")
    monkeypatch.setattr(grade, "_run", flaky)
    rows = {r["submission"]: r for r in grade_dir(tmp_path, "A1", TIMEOUT, TASK_TIMEOUT, jobs=2)}
    assert rows["c.py"]["status"] == "crash" and "RecursionError" in rows["c.py"]["error"]
    assert rows["a.py"]["score"] == rows["b.py"]["score"] == _points("A1")


class _ZeroGradient(torch.autograd.Function):
    """4γ(1 − γ) whose backward claims 0 everywhere: right at ½ only."""

    @staticmethod
    def forward(ctx, g):
        return 4 * g * (1 - g)

    @staticmethod
    def backward(ctx, grad):
        return grad * 0


class _TwiceGradient(torch.autograd.Function):
    """The identity, whose backward doubles the gradient."""

    @staticmethod
    def forward(ctx, y):
        return y.clone()

    @staticmethod
    def backward(ctx, grad):
        return 2 * grad


def test_a_reported_gradient_must_be_the_measured_slope():
    """The grader takes no gradient on trust: A2's flatness and A4's backward are compared with
    slopes measured from the function's own outputs (here in place; at grading the same checks
    run on the worker's answers)."""
    from geolab.assignments import a2

    fails = {c.name: c.message for c in a2.check_gate_regularizer(_ZeroGradient.apply)
             if not c.passed}  # fmt: skip
    gate = "gate_regularizer: zero gradient at γ = ½ only, from autograd"
    assert "vs the slope of your r" in fails[gate]
    # the gradient check gates the stub: the value checks hold but earn nothing without it
    others = {name: message for name, message in fails.items() if name != gate}
    assert list(others) == [
        "gate_regularizer: matches 4γ(1 − γ)",
        "gate_regularizer: r(γ) = r(1 − γ), largest at γ = ½",
    ]
    assert all(message.startswith("holds, but counts only when") for message in others.values())

    solution = load_submission(REPO / "assignments/instructor/A4_rule.py", ["MyRule"])["MyRule"]

    class Twice(solution):
        def forward(self, x, sublayer):
            return _TwiceGradient.apply(super().forward(x, sublayer))

    fails = {c.name: c.message for c in a4.check_my_rule(Twice) if not c.passed}
    assert list(fails) == ["MyRule: gradients reach x and every parameter"]
    assert "is something detached?" in fails["MyRule: gradients reach x and every parameter"]


# --- issue 55: a file the parser cannot read, beside an honest one ----------------------------
LETHAL = {"minus.py": "-" * 200_000 + "1", "nots.py": "not " * 100_000 + "1"}


@pytest.mark.slow
@GRADES
def test_a_file_nested_too_deeply_to_parse_is_one_zero_row(tmp_path):
    solution = _text("A3", "solution")
    cases = {"honest.py": (solution, "ok", _points("A3"))}
    for name, expression in LETHAL.items():
        code = f"def lethal():\n    return {expression}\n"
        cases[name] = (at_import(solution, code), "error", 0.0)
    rows = _grade(tmp_path, "A3", cases)
    for name in LETHAL:
        assert "cannot parse this file" in rows[name]["error"], rows[name]["error"]
        assert "\n" not in rows[name]["error"]


def test_a_reply_of_many_objects_is_refused_before_it_is_parsed():
    """500,000 plain objects (an 11 MB line) used to build a class each: 1.3 GiB, two minutes."""
    import tracemalloc

    many = wire.dumps({"value": {"list": [{"opaque": f"Foo{i}"} for i in range(500_000)]}})
    assert len(many) > 10 * 2**20
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="at most 200,000"):
            wire.loads(many)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.1 * 2**20
    # at the limit, decoding costs a small multiple of the reply's bytes, one Opaque per object
    line = wire.dumps({"value": {"list": [{"opaque": "Foo"}] * (wire.MAX_VALUES // 2 - 2)}})
    tracemalloc.start()
    try:
        got = wire.decode(wire.loads(line)["value"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 * len(line)
    assert wire.type_name(got[0]) == "Foo" and wire.type_name(1.0) == "float"


def _straight_through(gamma):
    """4γ(1 − γ) computed in numpy, with the right first derivative passed straight through."""
    import numpy as np

    g = np.asarray(gamma.detach())
    slope = torch.as_tensor(4 - 8 * g)
    return torch.as_tensor(4 * g * (1 - g)) + gamma * slope - (gamma * slope).detach()


def test_a_regulariser_computed_outside_torch_earns_nothing():
    """README: "a regulariser computed outside torch earns nothing" — its first derivative may be
    passed straight through, but autograd sees no curvature in it."""
    from geolab.assignments import a2

    honest = a2.check_gate_regularizer(lambda gamma: 4 * gamma * (1 - gamma), seed=3)
    assert all(c.passed for c in honest), [c.message for c in honest]
    results = a2.check_gate_regularizer(_straight_through, seed=3)
    assert not any(c.passed for c in results)
    gate = next(c for c in results if c.name.endswith("from autograd"))
    assert "autograd differentiates it twice" in gate.message, gate.message


def _mean_over_max(X):
    """A statistic that computes nothing of Eq. 8: 0 for a zero matrix, and scale invariant."""
    top = X.abs().amax((-2, -1))
    return torch.where(top > 0, X.abs().mean((-2, -1)) / top.clamp_min(1e-308), 0.0)


@pytest.mark.parametrize("seed", [0, 7])
def test_a3_a_meaningless_statistic_earns_nothing(seed):
    from geolab.assignments import a3

    solution = load_submission(REPO / "assignments/instructor/A3_rank.py", ["effective_rank"])
    assert all(c.passed for c in a3.check_effective_rank(solution["effective_rank"], seed))
    assert not any(c.passed for c in a3.check_effective_rank(_mean_over_max, seed))


def test_the_a3_scale_check_reaches_where_an_unscaled_gram_breaks():
    from geolab.assignments import a3

    def unscaled(X):  # Eq. 8 through the Gram's eigenvalues, without dividing X by its scale
        gram = X.mT @ X if X.shape[-2] >= X.shape[-1] else X @ X.mT
        sigma = torch.linalg.eigvalsh(gram).clamp_min(0).sqrt()
        total = sigma.sum(-1, keepdim=True)
        p = torch.where(total > 0, sigma / total, 0.0)
        h = -(torch.where(p > 0, p * p.log(), 0.0)).sum(-1)
        return torch.where(total[..., 0] > 0, h.exp() / min(X.shape[-2:]), 0.0)

    fails = {c.name for c in a3.check_effective_rank(unscaled, 3) if not c.passed}
    assert fails == {"effective_rank: scale invariant, from 1e-300 to 1e300"}


_PRIVATE_EIG = {
    "C module": "torch._C._linalg.linalg_eigvals(block)",
    "aten": "torch.ops.aten.linalg_eigvals(block)",
    "dispatcher": "torch.ops.aten.linalg_eig.default(block)[0]",
    "numpy private": "torch.as_tensor(numpy.linalg._linalg.eigvals(block.numpy()))",
    "numpy gufunc": "torch.as_tensor(numpy.linalg._umath_linalg.eigvals(block.numpy()))",
}


@pytest.mark.parametrize("call", list(_PRIVATE_EIG.values()), ids=list(_PRIVATE_EIG))
def test_a2_an_eigensolver_is_banned_by_kind_not_by_name(call):
    """The O(d) attack of issue 55: eigenvalues of Q's 2×2 block in span{u, v}, through a private
    entry point of a banned solver. The large-d check cannot see an O(d) method: the ban must."""
    import numpy
    import numpy.linalg._linalg
    import numpy.linalg._umath_linalg  # noqa: F401 — the names the stub reaches

    from geolab.assignments import a2

    def minus_one_gap(u, v, beta):
        e1 = u / u.norm()
        w = v - (v @ e1) * e1
        e2 = w / w.norm()
        basis = torch.stack([e1, e2])  # the block of A = uvᵀ − vuᵀ in span{u, v}
        a = basis @ (torch.outer(u, v) - torch.outer(v, u)) @ basis.T
        eye = torch.eye(2, dtype=u.dtype)
        block = (eye + beta / 2 * a).inverse() @ (eye - beta / 2 * a)  # noqa: F841
        return (eval(call, {"torch": torch, "numpy": numpy, "block": block}) + 1).abs().min()

    for c in a2.check_minus_one_gap(minus_one_gap, seed=4):
        assert not c.passed and "your code called" in c.message, (c.name, c.message)
