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
import secrets
import sys
import warnings
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from types import MappingProxyType

import torch

from geolab.assignments.wire import type_name

NOT_IMPLEMENTED = "not implemented yet: replace `raise NotImplementedError` in the stub"
# "From the formula alone" / "no dense solve", as the grader can measure it: the answer at a size
# where no d×d float64 matrix fits in the worker's memory (20 GB; 4 GiB by default) and no dense
# O(d³) method ends within a stub's time limit, whatever function the code calls. In a notebook
# (no memory limit) the same property runs at SMALL_D and the guard names forbidden calls.
BIG_D, SMALL_D = 50_000, 1_000


# Bans by kind: what a banned solver is below its public name. The kind of a banned path of
# torch, numpy or scipy is its function's name (SAME_KIND joins the names of one solver), and a
# kind is refused in every library, whichever library's name the assignment lists.
SOLVER_LIBRARIES = ("torch", "numpy", "scipy")
SAME_KIND = MappingProxyType({
    "eig": "eigvals", "eigh": "eigvalsh", "svd": "svdvals", "solve_ex": "solve", "inv_ex": "inv",
    "inverse": "inv", "expm": "matrix_exp",
})  # fmt: skip
# A torch solver reaches ATen's kernel of its kind whatever entry point calls it (torch.linalg,
# torch.inverse, torch.ops.aten, torch._C._linalg): the ops at the bottom of the dispatcher,
# measured with torch 2.13 (eigvals runs _linalg_eigvals, or linalg_eig where autograd may
# follow).
ATEN_KINDS = MappingProxyType({
    "eigvals": ("linalg_eig", "linalg_eigvals", "_linalg_eigvals"), "eigvalsh": ("_linalg_eigh",),
    "svdvals": ("_linalg_svd",), "solve": ("_linalg_solve_ex",), "inv": ("linalg_inv_ex",),
    "lu_factor": ("linalg_lu_factor_ex",), "lu_solve": ("linalg_lu_solve",),
    "solve_triangular": ("linalg_solve_triangular", "triangular_solve"),
    "cholesky_solve": ("cholesky_solve", "_cholesky_solve_helper"),
    "matrix_exp": ("linalg_matrix_exp",), "lstsq": ("linalg_lstsq",), "pinv": ("linalg_pinv",),
    "det": ("_linalg_det",), "slogdet": ("_linalg_slogdet",),
})  # fmt: skip
# A numpy solver runs a gufunc of numpy.linalg._umath_linalg (lstsq also lapack_lite's own
# wrappers); scipy's solve, inv, det, lu and expm run C code of their own modules, and its sparse
# direct solver (SuperLU) solves a dense system as well.
_UMATH, _BATCHED = "numpy.linalg._umath_linalg", "scipy.linalg._batched_linalg"
_SUPERLU = "scipy.sparse.linalg._dsolve._superlu"  # spsolve and splu: a direct sparse solver
ENTRY_KINDS = MappingProxyType({
    "eigvals": ((_UMATH, ("eig", "eigvals")),),
    "eigvalsh": ((_UMATH, ("eigh_lo", "eigh_up", "eigvalsh_lo", "eigvalsh_up")),),
    "svdvals": ((_UMATH, ("svd", "svd_f", "svd_s")),),
    "solve": ((_UMATH, ("solve", "solve1")), (_BATCHED, ("_solve",)), (_SUPERLU, ("gssv",))),
    "inv": ((_UMATH, ("inv",)), (_BATCHED, ("_inv",))),
    "lu_factor": (("scipy.linalg._decomp_lu_cython", ("lu_dispatcher",)), (_SUPERLU, ("gstrf",))),
    "matrix_exp": (("scipy.linalg._matfuncs_expm", ("pick_pade_structure", "pade_UV_calc")),),
    "lstsq": ((_UMATH, ("lstsq",)), ("numpy.linalg.lapack_lite", ("dgelsd", "zgelsd"))),
    "pinv": ((_UMATH, ("svd", "svd_f", "svd_s")),),
    "det": ((_UMATH, ("det",)), ("scipy.linalg._cythonized_array_utils", ("find_det_from_lu",))),
    "slogdet": ((_UMATH, ("slogdet",)),),
})  # fmt: skip
# scipy's own LAPACK and BLAS wrappers (scipy.linalg._flapack, _fblas; re-exported by
# scipy.linalg.lapack and .blas, handed out by get_lapack_funcs): the routines of each kind,
# each for s, d, c and z. A determinant is an LU factorisation (getrf) and its diagonal.
ROUTINE_KINDS = MappingProxyType({
    "eigvals": ("geev", "geevx", "ggev", "gees", "gges"),
    "eigvalsh": ("syev", "syevd", "syevr", "syevx", "heev", "heevd", "heevr", "heevx", "sygv",
                 "sygvd", "sygvx", "hegv", "hegvd", "hegvx", "sbev", "sbevd", "sbevx", "hbevd",
                 "hbevx", "stev", "stevd", "stebz", "stemr", "sterf", "pteqr"),
    "svdvals": ("gesdd", "gesvd", "gejsv"),
    "solve": ("gesv", "gesvx", "sysv", "sysvx", "hesv", "hesvx", "posv", "posvx", "ppsv", "gbsv",
              "gtsv", "gtsvx", "ptsv", "ptsvx", "pbsv", "getrs", "potrs", "sytrs", "hetrs",
              "gttrs", "pttrs", "pbtrs", "pptrs", "gbtrs"),
    "inv": ("getri", "potri", "sytri", "hetri", "trtri", "pptri", "pftri"),
    "lu_factor": ("getrf", "getc2", "gbtrf", "gttrf"), "lu_solve": ("getrs", "gbtrs", "gttrs"),
    "solve_triangular": ("trtrs", "tbtrs", "tfsm", "trsm", "trsv", "tbsv", "tpsv"),
    "cholesky_solve": ("potrs", "pbtrs", "pptrs", "pftrs", "pttrs"),
    "lstsq": ("gels", "gelsd", "gelss", "gelsy", "gglse"), "pinv": ("gesdd", "gesvd", "gejsv"),
    "det": ("getrf",), "slogdet": ("getrf",),
})  # fmt: skip
ROUTINE_MODULES = ("scipy.linalg._flapack", "scipy.linalg._flapack_64", "scipy.linalg._fblas",
                   "scipy.linalg._fblas_64")  # fmt: skip
# the modules whose caches hand out routines looked up before a ban (get_lapack_funcs' memo)
_MEMOS = (("scipy.linalg.lapack", "get_lapack_funcs"), ("scipy.linalg.blas", "get_blas_funcs"))
LIBRARY_MODULES = tuple(dict.fromkeys(
    [m for kinds in ENTRY_KINDS.values() for m, _ in kinds] + list(ROUTINE_MODULES)
    + [m for m, _ in _MEMOS]))  # fmt: skip
# the private modules that hold the banned solvers under their own names (aliases by identity)
SOLVER_MODULES = ("torch.linalg", "torch._C._linalg", "numpy.linalg", "scipy.linalg",
                  "scipy.sparse.linalg")  # fmt: skip
# What the ban on torch's solvers holds: the dispatcher's own registration functions and each
# banned op's overloads, taken when geolab loads, before a submission can rewrite torch's Python
# layer (torch.library, torch.ops); every device torch can compute a solver on.
_IMPORT = importlib.import_module
_LIBRARY, _DUMP = torch._C._dispatch_library, torch._C._dispatch_dump
_IMPL, _RESET = torch._C._DispatchModule.impl, torch._C._DispatchModule.reset
_OVERLOADS = MappingProxyType({op: tuple(getattr(torch.ops.aten, op).overloads())
                               for ops in ATEN_KINDS.values() for op in ops
                               if hasattr(torch.ops.aten, op)})  # fmt: skip
BACKENDS = ("CPU", "CUDA", "MPS", "XPU")
GUARD_FILE = "<geolab guard>"  # where the dispatcher says the refusals come from
GUARD_OFF = (
    "your code switched off the grader's guard against the solvers this exercise bans (it "
    "removed or replaced a refusal while it ran); a call that does so fails its check"
)
_LOADED: MappingProxyType | None = None  # LIBRARY_MODULES, imported once (see warm)
_BANNED_NOW: dict[str, dict] = {}  # the kinds the block running now bans (see gate_entries)


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


def warm() -> None:
    """Import the library modules the bans reach into (LIBRARY_MODULES, where installed) and keep
    them. A worker calls this before any submission loads: the modules guarded are then the real
    ones, not any a submission puts in ``sys.modules``, and a library the student imports inside
    a stub is already guarded there."""
    global _LOADED
    loaded = {}
    for name in LIBRARY_MODULES:
        try:
            loaded[name] = _IMPORT(name)
        except ImportError:  # scipy is optional; an ILP64 build only where scipy has one
            continue
    _LOADED = MappingProxyType(loaded)


def gate_entries() -> None:
    """Put a gate in place of every C entry point of every solver kind (numpy's gufuncs, scipy's
    own C code and its LAPACK and BLAS routines: :func:`_entries`), in its module and wherever
    the libraries' modules alias it. A gate calls its entry point, or refuses it while a
    :func:`forbid` block bans its kind. A worker does this before the submission loads, so any
    reference the submission takes or keeps (in a list, a dict, an object) is a gate."""
    if _LOADED is None:
        warm()
    found = {}  # id of an entry point: (it, its kinds, where it lives)
    for kind in dict.fromkeys([*ENTRY_KINDS, *ROUTINE_KINDS]):
        for owner, name in _entries(kind):
            value = getattr(owner, name)
            found.setdefault(id(value), (value, set(), f"{owner.__name__}.{name}"))[1].add(kind)
    gates = {i: _gate(value, frozenset(kinds), where) for i, (value, kinds, where) in found.items()}
    for owner in _solver_modules():
        for key, value in list(vars(owner).items()):
            if id(value) in gates:
                setattr(owner, key, gates[id(value)])
    for memo in _memos():  # routines looked up earlier would come back ungated
        memo.clear()


def _gate(entry, kinds: frozenset, where: str) -> Callable:
    library = where.split(".", 1)[0]

    def gate(*args, **kwargs):
        for kind in kinds:
            if (named := _BANNED_NOW.get(kind)) is not None:
                raise ForbiddenCall(_called(named[library], f"as {where}"))
        return entry(*args, **kwargs)

    return gate


def _kind(path: str) -> str | None:
    """The solver kind of a banned path of torch, numpy or scipy ("torch.inverse" -> "inv")."""
    if path.split(".", 1)[0] not in SOLVER_LIBRARIES:
        return None
    name = path.rsplit(".", 1)[1]
    return SAME_KIND.get(name, name)


def _named(paths: list[str], kind: str, library: str) -> str:
    """The banned path of ``kind`` a refusal names: one of ``library``'s where the list has one."""
    of_kind = [p for p in paths if _kind(p) == kind]
    return next((p for p in of_kind if p.startswith(library + ".")), of_kind[0])


def _aten_kinds(paths: list[str]) -> dict[str, str]:
    """{ATen op: banned path} of the banned solvers in ``paths``."""
    kinds = dict.fromkeys(k for p in paths if (k := _kind(p)) is not None)
    return {op: _named(paths, kind, "torch") for kind in kinds for op in ATEN_KINDS.get(kind, ())}


def _entries(kind: str) -> list[tuple[object, str]]:
    """(module, name) of the C entry points of a solver kind: numpy's gufuncs, scipy's own C
    code, and scipy's LAPACK and BLAS routines of that kind."""
    if _LOADED is None:
        warm()
    found = [(_LOADED[m], n) for m, names in ENTRY_KINDS.get(kind, ()) if m in _LOADED
             for n in names]  # fmt: skip
    for m in ROUTINE_MODULES:
        if m in _LOADED:
            found += [(_LOADED[m], p + stem) for stem in ROUTINE_KINDS.get(kind, ())
                      for p in "sdcz"]  # fmt: skip
    return [(owner, name) for owner, name in found if hasattr(owner, name)]


def _memos() -> list[dict]:
    """The caches of scipy's get_lapack_funcs and get_blas_funcs, which would hand back a routine
    looked up before the ban."""
    found = []
    for module, name in _MEMOS if _LOADED else ():
        memo = getattr(vars(_LOADED[module]).get(name), "memo", None) if module in _LOADED else None
        if isinstance(memo, dict):
            found.append(memo)
    return found


def _refill(memo: dict, _key, contents: dict) -> None:
    """Set a cache's contents (the setter :func:`forbid` restores a cache with)."""
    memo.clear()
    memo.update(contents)


def _refusal(message: str) -> Callable:
    def refuse(*args, **kwargs):
        raise ForbiddenCall(message)

    return refuse


def _called(path: str, how: str) -> str:
    return (f"your code called {path} ({how}, by whatever name); the point of this exercise is "
            "to write it yourself (use torch operations instead)")  # fmt: skip


def _refuse_ops(ops: dict[str, str]) -> tuple | None:
    """Register, for each ATen op of ``ops`` ({op: banned path}) and each of its overloads, a
    kernel that raises ForbiddenCall on every backend: the bottom of torch's dispatcher, which
    every route reaches (torch.ops, torch._C, another thread, with dispatch modes popped or the
    Python key off). (handle, token, names) for :func:`_refusals_intact`; None without ops."""
    if not ops:
        return None
    token = secrets.randbelow(2**31 - 1) + 1
    handle = _LIBRARY("IMPL", "aten", "", GUARD_FILE, token)
    names = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Overriding a registered kernel": that is the point
            for op, path in ops.items():
                refuse = _refusal(_called(path, f"as aten::{op}"))
                for overload in _OVERLOADS.get(op, ()):
                    name = op if overload == "default" else f"{op}.{overload}"
                    names.append(name)
                    for key in BACKENDS:
                        _IMPL(handle, name, key, refuse, False)
    except BaseException:  # never leave a refusal behind for the grader's own computations
        _RESET(handle)
        raise
    return handle, token, names


def _refusals_intact(refusal: tuple | None) -> bool:
    """Whether every kernel of :func:`_refuse_ops` is still the one the dispatcher runs."""
    if refusal is None:
        return True
    _, token, names = refusal
    mark = f"CPU: registered at {GUARD_FILE}:{token} "
    return all(mark in _DUMP(f"aten::{name}") for name in names)


def _current(owner, key, setter):
    """What ``owner`` holds at ``key`` now (a module, function, cell or namespace)."""
    return owner.get(key) if setter is dict.__setitem__ else getattr(owner, key, None)


def _solver_modules() -> list:
    """The loaded modules of the banned solvers' libraries, their private ones included."""
    inside = tuple(p + "." for p in SOLVER_MODULES)
    return [m for name, m in list(sys.modules.items()) if m is not None
            and (name in SOLVER_MODULES or name.startswith(inside))]  # fmt: skip


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
        return _IMPORT(module_name), attr
    except ImportError:
        return None


def _globals_of(obj) -> Iterable[dict]:
    """The global namespaces the student's function or class methods look names up in."""
    if isinstance(obj, type):
        for value in vars(obj).values():
            yield from _globals_of(value)
    elif hasattr(obj, "__globals__"):
        yield obj.__globals__


def _forbid(paths: Iterable[str], *student, label: str | None = None):
    """Run student code: inside the block, each dotted path (``geolab.operators.delta_operator``,
    ``torch.linalg.solve``) raises :class:`ForbiddenCall` when called — through its module, the
    ``geolab`` package namespace, or any name the ``student`` functions/classes bound to it
    (``from geolab.operators import delta_operator as d``, a default argument, a closure).
    Everything is restored on exit. With ``label`` (the call with its inputs, e.g. "skew(u of
    shape (2, 5), …)") an error raised in the block becomes a Failed that names the input.

    A banned solver is also refused by kind, under names no one bound, whichever library's name
    the list holds: a torch solver's ATen ops (:data:`ATEN_KINDS`) at the bottom of the
    dispatcher, so no entry point (``torch._C._linalg``, ``torch.ops.aten``), popped dispatch
    mode or other thread reaches them; numpy's gufuncs and scipy's own C code
    (:data:`ENTRY_KINDS`); scipy's LAPACK and BLAS routines (:data:`ROUTINE_KINDS`, also through
    ``scipy.linalg.lapack`` and ``get_lapack_funcs``); and every alias of these in the
    libraries' private modules. A block whose code removed or replaced any of these refusals
    while it ran fails with :data:`GUARD_OFF`, whatever it returned.

    Checks compute their reference values outside the block (the paths are patched in place).
    A proxy for a sandboxed submission gets the paths instead: they are guarded in its process.
    """
    paths = list(paths)
    saved = []  # (owner, key, original, setter, guard), restored in reverse order
    remote = [obj for obj in student if getattr(obj, "runs_elsewhere", False)]
    refusal, switched_off = None, False

    def patch(owner, key, original, setter, guard):
        saved.append((owner, key, original, setter, guard))
        setter(owner, key, guard)

    try:
        for obj in remote:  # the proxy's list of bans grows; nothing here to switch off
            saved.append((obj, "banned", obj.banned, setattr, None))
            obj.banned = obj.banned + paths
        targets = {}  # id of a banned object: (the object, its guard)
        for path in paths if not remote else ():
            if (found := _resolve(path)) is None:
                continue
            module, attr = found
            original = getattr(module, attr, None)
            if original is None:
                continue
            guard = _refusal(
                f"your code called {path}; the point of this exercise is to write it yourself "
                "(use torch operations instead)"
            )
            if any(obj is original for obj in student):  # the stub *is* the reference
                guard()
            targets.setdefault(id(original), (original, guard))
        banned_now = {}  # {kind: {library: the path its refusals name}}, also for the gates
        for kind in dict.fromkeys(k for p in paths if (k := _kind(p))) if not remote else ():
            named = banned_now[kind] = {lib: _named(paths, kind, lib) for lib in SOLVER_LIBRARIES}
            for owner, name in _entries(kind):  # what the solvers run below their names
                value, module = getattr(owner, name), owner.__name__
                refuse = _refusal(_called(named[module.split(".")[0]], f"as {module}.{name}"))
                targets.setdefault(id(value), (value, refuse))
        if targets:
            _replace_all(targets, student, patch)
        if banned_now:
            for memo in _memos():
                patch(memo, None, dict(memo), _refill, {})
            patch(_BANNED_NOW, None, dict(_BANNED_NOW), _refill, {**_BANNED_NOW, **banned_now})
        refusal = None if remote else _refuse_ops(_aten_kinds(paths))
        try:
            yield
        finally:
            switched_off = not _refusals_intact(refusal) or any(
                guard is not None and _current(owner, key, setter) is not guard
                for owner, key, _, setter, guard in saved if setter is not _refill)  # fmt: skip
            switched_off |= bool(banned_now) and _BANNED_NOW != {**_BANNED_NOW, **banned_now}
    except Exception as err:
        if switched_off:
            raise ForbiddenCall(GUARD_OFF) from err
        if label is None or isinstance(err, (Failed, ForbiddenCall, NotImplementedError)):
            raise
        raise Failed(f"{label} raised {type(err).__name__}: {err}") from err
    finally:
        if refusal is not None:
            _RESET(refusal[0])
        for owner, key, value, setter, _ in reversed(saved):
            setter(owner, key, value)
    if switched_off:
        raise ForbiddenCall(GUARD_OFF)


forbid = contextmanager(_forbid)


def _replace_all(targets: dict[int, tuple], student, patch) -> None:
    """Put each target's guard (``targets``: {id: (object, guard)}) in place of every alias of
    the object: in geolab's and the solver libraries' modules (``geolab.probe.effective_rank``,
    ``numpy.linalg._linalg.eigvals``, ``scipy.linalg.lapack.dgeev``), the student's global
    names, default arguments (``def f(x, _solve=solve)``) and closures."""
    for owner in _geolab_modules() + _solver_modules():
        for key, value in list(vars(owner).items()):
            if id(value) in targets:
                patch(owner, key, value, setattr, targets[id(value)][1])
    for namespace in _globals_of_all(student):
        for key, value in list(namespace.items()):
            if id(value) in targets:
                patch(namespace, key, value, dict.__setitem__, targets[id(value)][1])
    for fn in _functions_of(student):
        if any(id(v) in targets for v in fn.__defaults__ or ()):
            new = tuple(targets[id(v)][1] if id(v) in targets else v for v in fn.__defaults__)
            patch(fn, "__defaults__", fn.__defaults__, setattr, new)
        kw = fn.__kwdefaults__ or {}
        if any(id(v) in targets for v in kw.values()):
            new = {k: targets[id(v)][1] if id(v) in targets else v for k, v in kw.items()}
            patch(fn, "__kwdefaults__", kw, setattr, new)
        for cell in fn.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:  # a cell not yet filled
                continue
            if id(value) in targets:
                patch(cell, "cell_contents", value, setattr, targets[id(value)][1])


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
