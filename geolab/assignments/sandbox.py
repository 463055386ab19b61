"""Where a submission runs: a bubblewrap sandbox, or (without bwrap) a plain limited process.

With ``bwrap`` (Debian/Ubuntu package ``bubblewrap``) the worker sees a read-only view of the
Python environment and nothing else of the machine: no home folder, no repository, no other
submission, no gradebook. Its own copy of its one submission is mounted read-only, /tmp is a
private size-capped tmpfs, there is no network (new net namespace), and it runs in a new PID
namespace tied to the grader (``--die-with-parent``): when the grader kills it, every process it
started dies too. No host folder is writable: what it prints goes to a file descriptor the
grader holds. The geolab package it sees is a filtered copy (:func:`build_view`): for
assignments whose notebook does not build models, only the assignment helpers; for the others
the whole package with the reference functions' code removed (:func:`hide`) — the reference
cannot be imported, borrowed, read or exec'd. Run as root, it switches first to a uid of its own
(:func:`claim_uid`), since the process limit does not bind root and counts every process of a
uid: with one uid for all, one submission could use up every other's process limit (that
rlimit is the process limit where no cgroup bounds each worker: ``cgroup``).

Without bwrap the worker is an ordinary process in its own session with the same rlimits,
importing the same filtered copy; it can read what your user can read (:func:`warning` says so).
The grader becomes the subreaper of its workers (:func:`adopt_orphans`) and kills what escapes
them (:func:`sweep_orphans`). As root without bwrap nothing fences a submission: refused.
"""

import ast
import itertools
import json
import math
import os
import shutil
import signal
import site
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

import geolab

PACKAGE = Path(geolab.__file__).resolve().parent
# what a graded submission of an assignment without models may import from geolab
HELPERS = ("__init__", "catalog", "checks", "probes", "run_checks", "wire", "worker")
MODES = ("auto", "bwrap", "none")
# Workers started as root run under uids from UID_BASE up, which no account uses (useradd stops at
# 60000, containers' subordinate ranges lie far below): a block of UID_SLOTS per grader process
# (by its pid), so two graders on one machine do not share a process limit either.
UID_BASE, UID_SLOTS = 2**30, 2**10


@dataclass(frozen=True)
class Limits:
    """Limits of a student's process: address space (GiB; also the memory of all of a stub's
    processes together, ``worker``), CPU seconds, processes (threads) it may add, bytes per file
    it writes or prints, /tmp size (MiB)."""

    memory_gb: float = 4.0
    cpu_seconds: int = 600
    processes: int = 64
    file_bytes: int = 16 * 2**20
    tmp_mb: int = 256

    def __post_init__(self):
        for name, value in asdict(self).items():
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f"{name}={value!r} is not allowed; must be a finite number > 0")

    def for_worker(self) -> dict:
        return {
            "memory_bytes": int(self.memory_gb * 2**30),
            "cpu_seconds": int(self.cpu_seconds),
            "processes": int(self.processes),
            "file_bytes": int(self.file_bytes),
            "tmp_bytes": int(self.tmp_mb * 2**20),
        }


def bwrap_works() -> bool:
    """bwrap is installed and can create its namespaces here (containers may forbid it)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return False
    probe = [exe, *_unshare(), "--ro-bind", "/", "/", "--die-with-parent", "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def choose(mode: str) -> str:
    """'bwrap' or 'none' for a --sandbox value; ValueError when bwrap is asked for and absent."""
    if mode not in MODES:
        raise ValueError(f"sandbox={mode!r} is not allowed; choose from {', '.join(MODES)}")
    if mode != "none" and bwrap_works():
        return "bwrap"
    if mode == "bwrap":
        raise ValueError("sandbox='bwrap' but bwrap is missing or cannot create namespaces here")
    if os.geteuid() == 0:  # root: no process limit binds and nothing fences the processes
        raise ValueError(
            f"sandbox={mode!r} would run submissions as root without bwrap, which is refused: "
            "install bubblewrap, or grade as an ordinary user"
        )
    return "none"


def warning(mode: str) -> str | None:
    """What the teacher must know about a run without bwrap (None with bwrap)."""
    if mode == "bwrap":
        return None
    return (
        "warning: bubblewrap (bwrap) is not available, so submissions run as ordinary processes "
        "with resource limits only: they can read your files (the instructor notebooks, other "
        "submissions), reach the network, and write wherever your user can. Install the "
        "'bubblewrap' package for isolation, or grade in a throwaway account or container."
    )


_LIVE: dict[int, int | None] = {}  # the workers this grader started and has not killed: uid
_LOCK = threading.Lock()
_SLOT = itertools.count()


def _claim_uid() -> int:
    """A uid for one worker started as root, held by no other live worker of this grader. Slots
    are handed out in turn, so a uid comes back only after every other one did: the processes
    of the worker that held it last are long gone. Called under ``_LOCK``."""
    block = UID_BASE + (os.getpid() % 2**20) * UID_SLOTS
    taken = set(_LIVE.values())
    for _ in range(UID_SLOTS):
        uid = block + next(_SLOT) % UID_SLOTS
        if uid not in taken:
            return uid
    raise RuntimeError(f"more than {UID_SLOTS} workers at once")


def adopt_orphans() -> None:
    """Without bwrap: make this process the subreaper of everything its workers start, so a
    process that left its worker's tree (double fork, ``setsid``, its parent killed) is
    re-parented here, where :func:`sweep_orphans` finds it."""
    from geolab.assignments.worker import PR_SET_CHILD_SUBREAPER, _prctl

    _prctl(PR_SET_CHILD_SUBREAPER, 1)


def sweep_orphans() -> None:
    """Kill (with their trees) and reap the children of this process that are not live workers:
    what escaped a killed worker. Only meaningful after :func:`adopt_orphans`."""
    from geolab.assignments.worker import children, kill_tree

    with _LOCK:
        for _ in range(100):
            strays = [pid for pid in children(os.getpid()) if pid not in _LIVE]
            if not strays:
                return
            for pid in strays:
                kill_tree(pid, reap=False)
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError, PermissionError):
                    pass


def forget(pid: int) -> None:
    """``pid`` (a worker) is dead and reaped: its uid is free."""
    with _LOCK:
        _LIVE.pop(pid, None)


def _unshare() -> list[str]:
    if os.geteuid() == 0:  # no user namespace: the worker switches to its own uid itself
        return ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try"]  # fmt: skip
    return ["--unshare-all"]


def build_view(folder: Path, needs_model: bool, hidden: tuple[str, ...] = ()) -> Path:
    """The geolab package as a graded submission sees it, written under ``folder``: the whole
    package (the notebook builds models) with the code of each ``hidden`` function or method
    removed (:func:`hide`), or only the assignment helpers with an empty ``geolab/__init__.py``;
    so no reference implementation exists in the sandbox, to call, borrow, alias or exec."""
    view = Path(folder) / "geolab"
    ignore = shutil.ignore_patterns("__pycache__")
    if needs_model:
        shutil.copytree(PACKAGE, view, ignore=ignore)
        for name in hidden:
            hide(view, name)
    else:
        (view / "assignments").mkdir(parents=True)
        (view / "__init__.py").write_text(
            '"""geolab as a graded submission sees it: the assignment helpers only."""\n'
        )
        for name in HELPERS:
            shutil.copy(PACKAGE / "assignments" / f"{name}.py", view / "assignments")
    for path in [view, *view.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return view


def hide(view: Path, name: str) -> None:
    """Replace the body of function or method ``name`` (``geolab.module.func`` or
    ``geolab.module.Class.method``) in the package copy ``view`` with a ``ForbiddenCall``: its
    signature stays (imports and class definitions still work), its code is gone from the file."""
    parts = name.split(".")
    for split in range(len(parts) - 1, 1, -1):
        path = view.joinpath(*parts[1:split]).with_suffix(".py")
        if path.is_file():
            break
    else:
        raise ValueError(f"hidden={name!r}: no module of geolab holds it")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    scope, *rest = parts[split:]
    node = next(n for n in tree.body if getattr(n, "name", None) == scope)
    for attr in rest:
        node = next(n for n in node.body if getattr(n, "name", None) == attr)
    message = f"{name} is not available while your submission is graded: write it yourself"
    node.body = ast.parse(
        f"from geolab.assignments.checks import ForbiddenCall\nraise ForbiddenCall({message!r})"
    ).body
    path.write_text(ast.unparse(tree) + "\n", encoding="utf-8")


def _environment_roots() -> list[str]:
    """The read-only part of the machine the worker needs: system libraries and Python."""
    roots = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc"]
    roots += [sys.prefix, sys.base_prefix, *site.getsitepackages()]
    return [r for r in dict.fromkeys(roots) if os.path.exists(r)]


ENV = {
    "PATH": "/usr/bin:/bin",
    "PYTHONDONTWRITEBYTECODE": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    # RLIMIT_AS counts address space, and glibc reserves 64 MiB of it for each malloc arena it
    # adds when threads contend for one (up to 8 per CPU, more often under load): an honest file
    # that computes in threads could reach 1 GiB with 0.3 GiB in use and fail "can't start new
    # thread". Two arenas keep the address space near the memory a submission uses.
    "MALLOC_ARENA_MAX": "2",
}


def _mount_parents(paths: list[str]) -> list[str]:
    """The folders above ``paths`` that none of them contains, outermost first."""
    above = {str(p) for path in paths for p in Path(path).parents if str(p) != "/"}
    inside = {a for a in above for path in paths if Path(a).is_relative_to(path)}
    return sorted(above - inside, key=lambda p: p.count("/"))


def command(mode: str, view: Path, box: Path, submission: str, settings: dict) -> list[str]:
    """The command line of one worker. ``box`` holds ``in/`` (the submission copy, read-only
    inside) and, without bwrap, ``tmp/`` (its working folder). Nothing of the host is writable
    inside bwrap: the student's output goes to a file descriptor the grader holds."""
    python = [sys.executable, "-m", "geolab.assignments.worker"]
    if mode == "none":
        return [*python, str(box / "in" / submission), json.dumps(settings)]
    args = ["bwrap", *_unshare(), "--die-with-parent", "--new-session", "--clearenv"]
    # The private /tmp first: a Python or checkout that lives under /tmp is bound over it.
    args += ["--proc", "/proc", "--dev", "/dev", "--size", str(settings["tmp_bytes"])]
    args += ["--perms", "1777", "--tmpfs", "/tmp"]
    roots = _environment_roots()
    for folder in _mount_parents([*roots, str(PACKAGE)]):  # bwrap would make them 0700
        args += ["--perms", "0755", "--dir", folder]
    for root in roots:
        args += ["--ro-bind", root, root]
    args += ["--ro-bind", str(view), str(PACKAGE)]  # hides the real package (and its siblings)
    args += ["--ro-bind", str(box / "in"), "/submission", "--chdir", "/tmp"]
    if os.geteuid() == 0:  # to switch to its uid; the worker has no capability after that
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    # geolab is imported from where the view is mounted, whatever installed the real one
    for key, value in {**ENV, "HOME": "/tmp", "MPLCONFIGDIR": "/tmp",
                       "PYTHONPATH": str(PACKAGE.parent)}.items():  # fmt: skip
        args += ["--setenv", key, value]
    return [*args, *python, f"/submission/{submission}", json.dumps(settings)]


def start(mode: str, view: Path, box: Path, submission: str, settings: dict, output: int,
          group=None):  # fmt: skip
    """Start one worker in its own session (the grader kills the whole process group): its
    stdin carries requests, its stdout the child's replies, ``settings["control"]`` (a pipe's
    write end, passed through) the supervisor's messages, and ``output`` (a file the grader
    opened) everything the student's code prints. Run as root (only with bwrap), the worker
    gets a uid of its own in ``settings["uid"]``, free again when :func:`forget` is called.
    ``group`` (a :class:`~geolab.assignments.cgroup.Group`): the worker starts inside it."""
    tmp = str(box / "tmp")
    env = {**ENV, "PATH": os.environ.get("PATH", ENV["PATH"]), "HOME": tmp, "MPLCONFIGDIR": tmp}
    env["PYTHONPATH"] = str(view.parent)  # without bwrap too, the worker imports the view
    with _LOCK:  # registered before a sweep can see it
        uid = _claim_uid() if mode == "bwrap" and os.geteuid() == 0 else None
        args = command(mode, view, box, submission, {**settings, "uid": uid})
        proc = subprocess.Popen(
            group.command(args) if group is not None else args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=output,
            cwd=tmp,
            env=env,
            start_new_session=True,
            pass_fds=(settings["control"],),
        )
        _LIVE[proc.pid] = uid
    return proc
