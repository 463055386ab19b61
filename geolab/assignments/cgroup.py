"""A kernel-enforced memory and process limit per submission: a cgroup for each worker.

Where the grader may create cgroups with the memory and pids controllers below the cgroup it
runs in — cgroup v2 (``memory.max``, ``memory.swap.max``, ``pids.max``; the grader's cgroup
must offer both controllers to its sub-groups, ``cgroup.subtree_control``) or the v1 memory
and pids hierarchies (``memory.limit_in_bytes``, ``memory.memsw.limit_in_bytes``,
``pids.max``), as root usually — each bwrap worker starts inside a group of its own
(:meth:`Group.command`: the shell that execs bwrap joins the group first), so every process
the submission ever runs is in it, double forks and ``setsid`` included, and none can leave it
(the sandbox mounts no cgroup file system). The kernel then bounds what all of them hold
together, page by page at allocation time — reclaim, then the OOM killer inside the group —
and how many tasks they are, each submission alone: one that takes every process it may have
takes none of another's. The grader reads the group's OOM kills to tell the student why a stub
died (:meth:`Group.ooms`), and kills what is left in the group and removes it when the worker
ends; the groups of a grader that died are removed when the next grading starts (:func:`sweep`).

Elsewhere (an ordinary user without a delegated cgroup, no cgroup file system, no bwrap: a
worker outside bwrap sees /sys/fs/cgroup and could rewrite its own group) :func:`probe` says
why in one line and the worker keeps its per-process rlimits and polls the memory of a stub's
processes (``worker``). Source: the kernel's Documentation/admin-guide/cgroup-v2.rst and
cgroup-v1/{memory,pids}.rst.
"""

import errno
import itertools
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PREFIX = "geolab-"
# geolab-<grader pid>-<its start time in clock ticks>-<n>: a stale group's grader is gone
NAME = re.compile(rf"{PREFIX}(\d+)-(\d+)-\d+$")
# the file names of each version: limit, swap limit (v1: memory + swap), OOM kill count
FILES = {
    2: ("memory.max", "memory.swap.max", "memory.events"),
    1: ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.oom_control"),
}
# run by /bin/sh: write its own pid into each cgroup.procs named first, then become the command
ENTER = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); '
    'done; exec "$@"'
)
_COUNT = itertools.count()


@dataclass(frozen=True)
class Hierarchy:
    """Where this process may create groups: its own cgroup in the memory and the pids
    hierarchy (one folder in v2), and the mount points, searched for stale groups."""

    version: int
    memory: Path
    pids: Path
    mounts: tuple[Path, ...]


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:  # gone, or a file this kernel does not have
        return ""


def _unescape(field: str) -> str:
    """A path as /proc/self/mountinfo writes it (space, tab, newline, backslash as \\ooo)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), field)


def _below(root: str, mount: Path, path: str) -> Path | None:
    """The folder of cgroup ``path`` in a mount of its hierarchy whose root is ``root``."""
    rel = os.path.relpath(path, root)
    return None if rel.startswith("..") else mount / rel


def find(proc: Path = Path("/proc/self")) -> Hierarchy | None:
    """The hierarchy to create groups in: v2 when the cgroup this process runs in offers memory
    and pids to its sub-groups, else v1 when both controllers are mounted; None without."""
    own = {}  # {controller ("" in v2): this process's cgroup}
    for line in _read(proc / "cgroup").splitlines():
        _, controllers, path = line.split(":", 2)
        own.update(dict.fromkeys(controllers.split(","), path))
    v1, mounts = {}, []
    for line in _read(proc / "mountinfo").splitlines():
        left, right = line.split(" - ", 1)
        fields, (fstype, _, options) = left.split(), right.split()[:3]
        root, mount = _unescape(fields[3]), Path(_unescape(fields[4]))
        if fstype == "cgroup2" and "" in own:
            base = _below(root, mount, own[""])
            offered = _read(base / "cgroup.subtree_control").split() if base else []
            if {"memory", "pids"} <= set(offered):
                return Hierarchy(2, base, base, (mount,))
        for name in ("memory", "pids"):
            if fstype == "cgroup" and name in options.split(",") and name in own:
                v1.setdefault(name, _below(root, mount, own[name]))
                mounts.append(mount)
    if v1.get("memory") and v1.get("pids"):
        return Hierarchy(1, v1["memory"], v1["pids"], tuple(dict.fromkeys(mounts)))
    return None


def _start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot; None: no such process)."""
    fields = _read(Path(f"/proc/{pid}/stat")).rsplit(")", 1)[-1].split()
    return int(fields[19]) if len(fields) > 19 else None


class Group:
    """One worker's cgroup: ``memory_bytes`` for all its processes together (swap included),
    created now; :meth:`cap_processes` once the worker is ready."""

    def __init__(self, where: Hierarchy, memory_bytes: int):
        pid = os.getpid()
        name = f"{PREFIX}{pid}-{_start_time(pid)}-{next(_COUNT)}"
        self.version, self.memory, self.pids = where.version, where.memory / name, where.pids / name
        self.folders = list(dict.fromkeys([self.memory, self.pids]))
        limit, swap, self.events = FILES[where.version]
        try:
            for folder in self.folders:
                folder.mkdir()
            (self.memory / limit).write_text(str(memory_bytes))
            if (self.memory / swap).exists():  # v2 counts swap apart, v1 memory and swap
                (self.memory / swap).write_text("0" if self.version == 2 else str(memory_bytes))
        except OSError:
            self.remove()
            raise

    def command(self, args: list[str]) -> list[str]:
        """``args`` run inside the group: the process joins it before it execs ``args``."""
        procs = [str(folder / "cgroup.procs") for folder in self.folders]
        return ["/bin/sh", "-c", ENTER, "geolab-cgroup", str(len(procs)), *procs, *args]

    def cap_processes(self, more: int) -> None:
        """Allow ``more`` tasks (processes and threads) beyond those in the group now."""
        now = int(_read(self.pids / "pids.current") or 0)
        (self.pids / "pids.max").write_text(str(now + more))

    def ooms(self) -> int:
        """Processes of the group the kernel killed for its memory limit so far."""
        for line in _read(self.memory / self.events).splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0

    def kill(self) -> None:
        """SIGKILL every process in the group until none is left."""
        _kill(self.folders)

    def remove(self) -> None:
        """Kill what is left in the group, then remove its folders."""
        _remove(self.folders)


def _kill(folders: list[Path]) -> None:
    """SIGKILL every process in ``folders`` (groups) until none is left: one forked meanwhile
    is caught on the next pass, and none can leave its group."""
    for _ in range(1000):
        pids = {int(p) for f in folders for p in _read(f / "cgroup.procs").split()}
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)


def _remove(folders: list[Path]) -> None:
    """Kill what is left in ``folders``, then remove them (a group whose last process is still
    exiting is busy for a moment: retried for up to 5 s)."""
    _kill(folders)
    for folder in folders:
        _rmdir(folder)


def _rmdir(folder: Path) -> None:
    for _ in range(500):
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as err:
            if err.errno != errno.EBUSY:
                raise
            time.sleep(0.01)


def groups(where: Hierarchy) -> list[Path]:
    """Every geolab group in the hierarchies, whichever grader made it."""
    found = []
    for mount in where.mounts:
        for folder, subs, _ in os.walk(mount):
            found += [Path(folder) / s for s in subs if NAME.match(s)]
            subs[:] = [s for s in subs if not NAME.match(s)]  # a geolab group has no sub-groups
    return found


def sweep(where: Hierarchy) -> None:
    """Remove (their processes killed) the groups of graders that are gone: what a grading
    killed before it could remove them left behind."""
    for folder in groups(where):
        pid, started = map(int, NAME.match(folder.name).groups())
        if _start_time(pid) != started:
            _remove([folder])


def probe(mode: str) -> tuple[Hierarchy | None, str]:
    """(where to create each worker's group, or None; the one line saying which limits are in
    force). A group is created, limited and removed here: what works once works for each."""
    fallback = "limits: per-process rlimits, the memory of a stub's processes polled"
    if mode != "bwrap":
        return None, f"{fallback} (no cgroup without bwrap: the worker could rewrite its own)"
    where = find()
    if where is None:
        return None, f"{fallback} (no cgroup hierarchy with memory and pids here)"
    try:
        group = Group(where, 2**30)
        group.cap_processes(1)
        counted = (group.memory / group.events).read_text()
        group.remove()
    except OSError as err:
        return None, f"{fallback} (cannot create a cgroup in {where.memory}: {err.strerror})"
    if "oom_kill " not in counted:  # the grader could not tell the student why a stub died
        return None, f"{fallback} (this kernel's cgroup does not count OOM kills)"
    places = ", ".join(dict.fromkeys(str(p) for p in (where.memory, where.pids)))
    return where, (
        f"limits: kernel-enforced per submission, memory and processes of all its processes "
        f"together (cgroup v{where.version} in {places})"
    )
