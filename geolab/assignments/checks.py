"""The machinery shared by every assignment's checks: results, comparisons, the reference guard.

A check is one property of one student function, e.g. "delta_operator: det A = 1 − β". It runs
the student's code on fresh random inputs (so a pasted output cannot pass), compares against
geolab's reference implementation or a mathematical property, and says on failure which
property broke on which input. While a student's function runs, the geolab function it is meant
to replace is swapped for one that raises :class:`ForbiddenCall` (see :func:`forbid`), so
delegating to the reference fails with a clear message instead of passing.

The student's object is only ever touched through a probe (:func:`observe`, ``probes``). In a
notebook the probe runs in place; at grading time the object is a proxy for a sandboxed process
(``remote.Stub``): the probe and the guard run there, and only plain data comes back, so the
comparison with the reference happens where the student's code cannot reach it.
"""

import importlib
import sys
from collections.abc import Callable, Iterable
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from geolab.assignments.wire import type_name

NOT_IMPLEMENTED = "not implemented yet: replace `raise NotImplementedError` in the stub"
# "From the formula alone" / "no dense solve", as the grader can measure it: the answer at a size
# where no d×d float64 matrix fits in the worker's memory (20 GB; 4 GiB by default) and no dense
# O(d³) method ends within a stub's time limit, whatever function the code calls. In a notebook
# (no memory limit) the same property runs at SMALL_D and the guard names forbidden calls.
BIG_D, SMALL_D = 50_000, 1_000


# Bans by kind: what a banned solver is below its public name. A torch solver reaches ATen's
# kernel of its kind whatever entry point calls it (torch.linalg, torch.inverse, torch.ops.aten,
# torch._C._linalg): the ops seen at the dispatcher, measured with torch 2.x (eigvals and eig both
# run linalg_eig). A numpy solver runs a gufunc of numpy.linalg._umath_linalg, which its private
# module (numpy.linalg._linalg) calls through that module.
ATEN_KINDS = {
    "eigvals": ("linalg_eig",), "eig": ("linalg_eig",), "eigvalsh": ("_linalg_eigh",),
    "eigh": ("_linalg_eigh",), "svdvals": ("_linalg_svd",), "svd": ("_linalg_svd",),
    "solve": ("_linalg_solve_ex",), "solve_ex": ("_linalg_solve_ex",),
    "inv": ("linalg_inv_ex",), "inv_ex": ("linalg_inv_ex",), "inverse": ("linalg_inv_ex",),
    "lu_factor": ("linalg_lu_factor_ex",), "lu_solve": ("linalg_lu_solve",),
    "solve_triangular": ("linalg_solve_triangular", "triangular_solve"),
    "cholesky_solve": ("cholesky_solve", "_cholesky_solve_helper"),
    "matrix_exp": ("linalg_matrix_exp",), "lstsq": ("linalg_lstsq",), "pinv": ("linalg_pinv",),
    "det": ("_linalg_det",), "slogdet": ("_linalg_slogdet",),
}  # fmt: skip
GUFUNC_KINDS = {
    "eigvals": ("eigvals",), "eig": ("eig",), "eigvalsh": ("eigvalsh_lo", "eigvalsh_up"),
    "eigh": ("eigh_lo", "eigh_up"), "solve": ("solve", "solve1"), "inv": ("inv",),
    "lstsq": ("lstsq",), "pinv": ("svd", "svd_f", "svd_s"), "det": ("det",),
    "slogdet": ("slogdet",),
}  # fmt: skip
# the private modules that hold the banned solvers under their own names (aliases by identity)
SOLVER_MODULES = ("torch.linalg", "torch._C._linalg", "numpy.linalg", "scipy.linalg")


def big_d(obj) -> int:
    """The large size of a "no d×d matrix" property: BIG_D at grading, SMALL_D in place."""
    return BIG_D if getattr(obj, "runs_elsewhere", False) else SMALL_D


@dataclass
class Check:
    """One graded property: ``name`` (e.g. "delta_operator: spectrum"), ``passed``, the
    ``message`` shown to the student (what failed, on which input) and its ``points``."""

    name: str
    passed: bool
    message: str = ""
    points: float = 1.0

    def to_dict(self) -> dict:
        return asdict(self)


class Failed(AssertionError):
    """A property does not hold; the message names the property and the input."""


class ForbiddenCall(RuntimeError):
    """The student's code called the geolab function it is asked to implement."""


class TaskStopped(BaseException):
    """A task could not finish: it ran past its time limit or its process died. Every check of
    the task fails with the message. A BaseException, so no ``except Exception`` swallows it."""


class TimeLimit(TaskStopped):
    """A task ran past the grader's per-task time limit."""


class _RefuseKinds(TorchDispatchMode):
    """Raise ForbiddenCall when an ATen op of a banned kind runs (``ops``: {"aten::name": the
    banned path it stands for}), whichever Python entry point called it."""

    def __init__(self, ops: dict[str, str]):
        super().__init__()
        self.ops = ops

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if (path := self.ops.get(func._schema.name)) is not None:
            raise ForbiddenCall(
                f"your code called {path} (as {func._schema.name}, by whatever name); the point "
                "of this exercise is to write it yourself (use torch operations instead)"
            )
        return func(*args, **(kwargs or {}))


def _aten_kinds(paths: list[str]) -> dict[str, str]:
    """{"aten::op": banned path} of the banned torch solvers in ``paths``."""
    return {f"aten::{op}": path for path in paths if path.startswith("torch.")
            for op in ATEN_KINDS.get(path.rsplit(".", 1)[1], ())}  # fmt: skip


def _gufuncs(path: str) -> list[tuple[object, str]]:
    """(module, name) of the numpy gufuncs a banned ``numpy.linalg`` solver runs."""
    if not path.startswith("numpy.linalg.") or "numpy" not in sys.modules:
        return []
    module = importlib.import_module("numpy.linalg._umath_linalg")
    names = GUFUNC_KINDS.get(path.rsplit(".", 1)[1], ())
    return [(module, name) for name in names if hasattr(module, name)]


def _solver_modules() -> list:
    """The loaded modules of the banned solvers' libraries, their private ones included."""
    return [m for name, m in list(sys.modules.items()) if m is not None
            and any(name == p or name.startswith(p + ".") for p in SOLVER_MODULES)]  # fmt: skip


def observe(obj, probe: str, *args):
    """``probes.PROBES[probe](obj, *args)``: where the student's code runs, which for a proxy
    (``runs_elsewhere``) is its sandboxed process, returning plain data."""
    if getattr(obj, "runs_elsewhere", False):
        return obj.observe(probe, *args)
    from geolab.assignments.probes import PROBES

    return PROBES[probe](obj, *args)


def run_check(name: str, prop: Callable[[], None], points: float = 1.0) -> Check:
    """Run one property; every exception from student code becomes a failed :class:`Check`
    (the grader's TimeLimit is a BaseException and passes through to stop the whole task)."""
    try:
        prop()
    except NotImplementedError:
        return Check(name, False, NOT_IMPLEMENTED, points)
    except (Failed, ForbiddenCall) as err:
        return Check(name, False, str(err), points)
    except SystemExit:
        return Check(name, False, "your code called sys.exit() / exit()", points)
    except Exception as err:  # student code may raise anything; report it, do not crash
        text = f"your code raised {type(err).__name__}: {err}"
        return Check(name, False, text if len(text) <= 500 else text[:500] + " …", points)
    return Check(name, True, "", points)


def fail(message: str) -> None:
    raise Failed(message)


def describe(**inputs) -> str:
    """'k of shape (4, 5), beta = 0.7' — how a failure message names its input."""
    parts = []
    for key, value in inputs.items():
        if isinstance(value, torch.Tensor) and value.ndim > 0:
            parts.append(f"{key} of shape {tuple(value.shape)}")
        elif isinstance(value, torch.Tensor):
            parts.append(f"{key} = {value.item():.4g}")
        else:
            parts.append(f"{key} = {value!r}")
    return ", ".join(parts)


def as_tensor(got, what: str, shape: tuple[int, ...] | None = None) -> torch.Tensor:
    """The student's output as a tensor of the expected shape, or a Failed naming the mismatch."""
    if not isinstance(got, torch.Tensor):
        fail(f"{what} should return a torch.Tensor, got {type_name(got)}")
    if shape is not None and tuple(got.shape) != tuple(shape):
        fail(f"{what} returned shape {tuple(got.shape)}, expected {tuple(shape)}")
    return got


def close(got, want: torch.Tensor, what: str, atol: float = 1e-5, rtol: float = 1e-4) -> None:
    """Fail unless ``got`` has the shape and values of ``want``; the message names the worst."""
    got = as_tensor(got, what, tuple(want.shape)).to(want.dtype)
    if not torch.isfinite(got).all():
        fail(f"{what} contains NaN or inf")
    err = (got - want).abs()
    bad = err > atol + rtol * want.abs()
    if bad.any():
        idx = tuple(int(i) for i in torch.unravel_index(torch.argmax(err), err.shape))
        fail(
            f"{what}: max |error| {err.max().item():.3g}; at index {idx} you gave "
            f"{got[idx].item():.6g}, expected {want[idx].item():.6g}"
        )


def _resolve(path: str):
    """(module, attribute), or None where the module is absent: a graded submission's sandbox
    hides geolab's reference modules, so there is nothing to guard."""
    module_name, attr = path.rsplit(".", 1)
    try:
        return importlib.import_module(module_name), attr
    except ImportError:
        return None


def _globals_of(obj) -> Iterable[dict]:
    """The global namespaces the student's function or class methods look names up in."""
    if isinstance(obj, type):
        for value in vars(obj).values():
            yield from _globals_of(value)
    elif hasattr(obj, "__globals__"):
        yield obj.__globals__


@contextmanager
def forbid(paths: Iterable[str], *student, label: str | None = None):
    """Run student code: inside the block, each dotted path (``geolab.operators.delta_operator``,
    ``torch.linalg.solve``) raises :class:`ForbiddenCall` when called — through its module, the
    ``geolab`` package namespace, or any name the ``student`` functions/classes bound to it
    (``from geolab.operators import delta_operator as d``). Everything is restored on exit.
    With ``label`` (the call with its inputs, e.g. "skew(u of shape (2, 5), …)") an error
    raised in the block becomes a Failed that names the input.

    A banned solver is also refused by kind, under names no one bound: a torch solver's ATen ops
    (:data:`ATEN_KINDS`, whatever entry point calls them: ``torch._C._linalg.linalg_eigvals``,
    ``torch.ops.aten``), a numpy solver's gufuncs (``numpy.linalg._umath_linalg``), and every
    alias of its function in the libraries' private modules (``numpy.linalg._linalg``).

    Checks compute their reference values outside the block (the paths are patched in place).
    A proxy for a sandboxed submission gets the paths instead: they are guarded in its process.
    """
    paths = list(paths)
    saved = []  # (owner, key, original, setter), restored in reverse order
    remote = [obj for obj in student if getattr(obj, "runs_elsewhere", False)]

    def patch(owner, key, original, setter, guard):
        saved.append((owner, key, original, setter))
        setter(owner, key, guard)

    try:
        for obj in remote:
            saved.append((obj, "banned", obj.banned, setattr))
            obj.banned = obj.banned + paths
        for path in paths if not remote else ():
            if (found := _resolve(path)) is None:
                continue
            module, attr = found
            original = getattr(module, attr, None)
            if original is None:
                continue

            def guard(*args, _path=path, **kwargs):
                raise ForbiddenCall(
                    f"your code called {_path}; the point of this exercise is to write it "
                    "yourself (use torch operations instead)"
                )

            if any(obj is original for obj in student):  # the stub *is* the reference
                guard()

            patch(module, attr, original, setattr, guard)
            for owner, name in _gufuncs(path):  # what numpy's solver runs, by any name
                patch(owner, name, getattr(owner, name), setattr, guard)
            # every alias: geolab.probe.effective_rank, numpy.linalg._linalg.eigvals, ...
            for owner in _geolab_modules() + _solver_modules():
                for key, value in list(vars(owner).items()):
                    if value is original:
                        patch(owner, key, value, setattr, guard)
            for namespace in _globals_of_all(student):
                for key, value in list(namespace.items()):
                    if value is original:
                        patch(namespace, key, value, dict.__setitem__, guard)
            for fn in _functions_of(student):  # captured as a default: def f(x, _solve=solve)
                if any(v is original for v in fn.__defaults__ or ()):
                    new = tuple(guard if v is original else v for v in fn.__defaults__)
                    patch(fn, "__defaults__", fn.__defaults__, setattr, new)
                kw = fn.__kwdefaults__ or {}
                if any(v is original for v in kw.values()):
                    new = {k: guard if v is original else v for k, v in kw.items()}
                    patch(fn, "__kwdefaults__", kw, setattr, new)
        kinds = {} if remote else _aten_kinds(paths)
        with _RefuseKinds(kinds) if kinds else nullcontext():
            yield
    except (Failed, ForbiddenCall, NotImplementedError):
        raise
    except Exception as err:
        if label is None:
            raise
        raise Failed(f"{label} raised {type(err).__name__}: {err}") from err
    finally:
        for owner, key, value, setter in reversed(saved):
            setter(owner, key, value)


def _geolab_modules() -> list:
    """The loaded modules of the geolab package (the package itself first)."""
    return [m for name, m in list(sys.modules.items())
            if (name == "geolab" or name.startswith("geolab.")) and m is not None]  # fmt: skip


def _functions_of(objs) -> list:
    """The student's functions, and the functions of its classes (methods, static and class
    methods), each once."""
    found = {}
    for obj in objs:
        values = vars(obj).values() if isinstance(obj, type) else [obj]
        for value in values:
            value = getattr(value, "__func__", value)
            if hasattr(value, "__defaults__") and hasattr(value, "__code__"):
                found[id(value)] = value
    return list(found.values())


def _globals_of_all(objs) -> list[dict]:
    seen, out = set(), []
    for obj in objs:
        for namespace in _globals_of(obj):
            if id(namespace) not in seen:
                seen.add(id(namespace))
                out.append(namespace)
    return out


def score(results: list[Check]) -> tuple[float, float]:
    """(points earned, points available)."""
    return sum(r.points for r in results if r.passed), sum(r.points for r in results)


def callout(title: str, results: list[Check]):
    """A marimo callout: green when every check passes, amber while the stub is untouched,
    red otherwise, listing each check with its message."""
    import marimo as mo

    earned, total = score(results)
    if all(r.passed for r in results):
        kind, head = "success", f"**{title}** — all {len(results)} checks pass"
    elif all(r.message == NOT_IMPLEMENTED for r in results if not r.passed) and earned == 0:
        kind, head = "warn", f"**{title}** — waiting for your code"
    else:
        kind, head = "danger", f"**{title}** — {earned:g}/{total:g} points"
    # words, not ✅/❌: without an emoji font both draw as the same box, told apart by colour only
    lines = [
        f"- pass: {r.name}" if r.passed else f"- **FAIL**: {r.name}: {r.message}" for r in results
    ]
    if mo.app_meta().mode == "script":  # `python A1_delta.py`: no page shows the callout
        failed = [] if kind == "warn" else [f"  {line[2:]}" for line in lines if "FAIL" in line]
        print("\n".join([head, *failed]).replace("**", ""), flush=True)
    return mo.callout(mo.md(head + "\n\n" + "\n".join(lines)), kind=kind)


def demo(render: Callable[[], object], waiting: str):
    """``render()`` for a notebook's exploration cell, or a short note while the student's stub
    is not implemented or raises — so the notebook never stops on a half-written stub."""
    import marimo as mo

    try:
        return render()
    except NotImplementedError:
        return mo.md(f"*{waiting}*")
    except Exception as err:  # the student's code; show the error instead of stopping the cell
        return mo.md(f"*Your code raised {type(err).__name__}: {err}*")
