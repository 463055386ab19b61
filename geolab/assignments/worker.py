"""The process a graded submission runs in (started by ``sandbox``, spoken to by ``remote``).

    python -m geolab.assignments.worker SUBMISSION LIMITS_JSON

A supervisor imports torch and marimo once, then for every request ``{"op": "open", "stub"}``
forks a fresh child that applies the resource limits, loads the submission and answers the
grader's probe calls for that one stub (``{"op": "call", "probe", "args", "banned"}`` ->
``{"value"}`` or ``{"raised"}``) until ``{"op": "end"}``. When the child is gone — finished,
crashed, ``os._exit``-ed — the supervisor kills every process it left behind (it is their
subreaper, so double forks and ``setsid`` do not escape it) and reports ``{"closed": code}``.
So a stub that kills or forks its process costs that stub only.

Three channels, so the student's code cannot speak for the supervisor: requests arrive on
stdin, the child's replies leave on stdout, and the supervisor's own messages (``ready``,
``closed``) on a control pipe (``limits["control"]``) that every child closes before it loads
the submission; the supervisor is not dumpable, so no child can reopen it through /proc.
Everything the student code prints goes to stderr: a file the grader opened and holds (it is
not reachable by name from the sandbox), capped by the file-size limit. Nothing here decides a
score.

Where the kernel bounds the worker's memory and processes (``limits["kernel_limits"]``: it runs
in a cgroup of its own, ``cgroup``), that is all. Elsewhere, while a child runs, the supervisor
sums the memory of every process of the stub (their proportional shares of anonymous and shared
memory, so the pages a child shares with the supervisor count once; all of a process's pages
when it hides its memory map) and kills them all when the sum passes ``limits["memory_bytes"]``:
the rlimit on address space binds one process only, and six processes under it could still hold
six times the limit together; and the rlimit on processes is the student's process limit.
"""

import ctypes
import json
import os
import resource
import signal
import sys
import time
import traceback
import types
from contextlib import contextmanager
from pathlib import Path

PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36
TICKS = os.sysconf("SC_CLK_TCK")  # units of the CPU times in /proc/<pid>/stat
WATCH_SECONDS = 0.1  # how often the supervisor sums the memory of a stub's processes


def _prctl(option: int, value: int) -> None:
    ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def _tasks_of(uid: int) -> int:
    """Threads (the unit RLIMIT_NPROC counts) of ``uid`` visible in /proc."""
    count = 0
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and os.stat(f"/proc/{pid}").st_uid == uid:
                count += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
    return count


def apply_limits(limits: dict) -> None:
    """Hard rlimits for the student's process (it cannot raise them again): address space,
    CPU seconds, file size, no core dumps, and — unless its cgroup bounds them — processes
    (threads) beyond those already running. Its processes are the first the kernel's OOM killer
    takes (in its cgroup and on the machine), before the supervisor or anything else."""
    Path("/proc/self/oom_score_adj").write_text("1000")  # raising it needs no privilege
    rlimits = [
        ("RLIMIT_AS", limits["memory_bytes"]),
        ("RLIMIT_CPU", limits["cpu_seconds"]),
        ("RLIMIT_FSIZE", limits["file_bytes"]),
        ("RLIMIT_CORE", 0),
    ]
    if not limits.get("kernel_limits"):
        rlimits.append(("RLIMIT_NPROC", _tasks_of(os.getuid()) + limits["processes"]))
    for name, value in rlimits:
        resource.setrlimit(getattr(resource, name), (value, value))


def _stats() -> dict[int, list[str]]:
    """{pid: the fields of /proc/<pid>/stat after the command name} of every visible process
    (index 1 is the parent pid, 11–14 utime, stime, cutime, cstime in clock ticks)."""
    stats = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 14:
            stats[int(pid)] = fields
    return stats


def _parents(stats: dict | None = None) -> dict[int, int]:
    """{pid: parent pid} of every process visible in /proc."""
    return {pid: int(fields[1]) for pid, fields in (stats or _stats()).items()}


def children(root: int) -> list[int]:
    """The processes whose parent is ``root``."""
    return [pid for pid, ppid in _parents().items() if ppid == root]


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of ``root`` and every process below it, the reaped ones
    included (a reaped child's time is added to its parent's cutime and cstime)."""
    stats = _stats()
    pids = [root, *descendants(root, _parents(stats))] if root in stats else []
    return sum(int(t) for pid in pids if pid in stats for t in stats[pid][11:15]) / TICKS


def _memory(pid: int) -> int:
    """Bytes of anonymous and shared memory (tmpfs, memfd) process ``pid`` holds: its
    proportional share (a page shared by n processes counts 1/n; smaps_rollup, readable while
    the process is dumpable), else all of its resident pages of both kinds (status)."""
    for name, keys in (("smaps_rollup", ("Pss_Anon:", "Pss_Shmem:")),
                       ("status", ("RssAnon:", "RssShmem:"))):  # fmt: skip
        try:
            lines = Path(f"/proc/{pid}/{name}").read_text().splitlines()
        except OSError:
            continue
        sizes = [int(line.split()[1]) * 1024 for line in lines if line.startswith(keys)]
        if sizes:
            return sum(sizes)
    return 0


def tree_memory(root: int) -> int:
    """Bytes of memory the processes below ``root`` hold together (:func:`_memory` of each)."""
    return sum(_memory(pid) for pid in descendants(root))


def descendants(root: int, parent: dict[int, int] | None = None) -> list[int]:
    """Every process below ``root`` (orphans are re-parented to a subreaper, so they stay below
    the supervisor)."""
    parent = _parents() if parent is None else parent
    found, frontier = [], {root}
    while frontier:
        kids = {pid for pid, ppid in parent.items() if ppid in frontier}
        found += kids
        frontier = kids
    return found


def kill_tree(root: int, reap: bool = True) -> None:
    """Stop then kill every descendant of ``root`` (a stopped process cannot fork) until none
    is left; ``reap`` when ``root`` is this process and must collect them."""
    for _ in range(1000):
        pids = descendants(root)
        if not pids:
            return
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
        if reap:
            _reap()
        else:
            time.sleep(0.01)


def _reap() -> None:
    """Collect killed children (and the orphans handed to us as they die)."""
    idle = 0
    while idle < 3:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        idle = idle + 1 if pid == 0 else 0
        if pid == 0:
            time.sleep(0.01)


def _send(fd: int, message: dict, dumps=None) -> None:
    """``message`` as one protocol line on ``fd`` (``dumps``: a stub's sealed encoder)."""
    if dumps is None:
        from geolab.assignments.wire import dumps

    data = dumps(message)
    while data:
        data = data[os.write(fd, data) :]


_PENDING = bytearray()  # read past a line; empty whenever a child forks (requests alternate)


def _readline(fd: int) -> bytes:
    """One line from the raw pipe, each byte searched for the end of the line once (a large
    request is read in linear time). The grader sends a request only after the answer to the
    last, so nothing past a line is ever waiting when the supervisor forks the next child."""
    scanned = 0
    while (end := _PENDING.find(b"\n", scanned)) < 0:
        scanned = len(_PENDING)
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            line = bytes(_PENDING)
            _PENDING.clear()
            return line
        _PENDING.extend(chunk)
    line = bytes(_PENDING[: end + 1])
    del _PENDING[: end + 1]
    return line


def _raised(err: BaseException) -> dict:
    from geolab.assignments.checks import ForbiddenCall

    kind = {ForbiddenCall: "forbidden", NotImplementedError: "not-implemented"}.get(
        type(err), "exit" if isinstance(err, SystemExit) else "error"
    )
    return {"raised": type(err).__name__[:100], "kind": kind, "message": str(err)[:2000]}


def sealed(namespace: dict, names: list[str]) -> dict:
    """{name: a copy of the function ``namespace[name]``}, taken now, whose global names are
    looked up in a copy of ``namespace`` (in which ``names`` are the copies).

    A stub's child seals what answers the grader — the probe table, the wire encoder, its pipe
    reader and writer — before it loads the submission, whose code then shares the process:
    a rewrite of ``probes.PROBES``, of a probe's ``__code__`` or of a name in those modules
    (issue 43's "patched probe dictionary") changes nothing the grader is asked or sent. What
    the copies call in other libraries (torch, json, os) stays the submission's to rewrite in
    its own process; that is why no verdict rests on a value the process sends without the
    grader checking it against one it computes: a reported gradient is compared with the slope
    measured from the function's outputs (``a2.check_gate_regularizer``, ``a4``), so a rewrite
    of torch itself can report only the true derivative — what a ``torch.autograd.Function``
    with a hand-written backward reports honestly.
    """
    scope = dict(namespace)
    copies = {}
    for name in names:
        fn = scope[name]
        copies[name] = types.FunctionType(fn.__code__, scope, name, fn.__defaults__,
                                          fn.__closure__)  # fmt: skip
        copies[name].__kwdefaults__ = fn.__kwdefaults__
    scope.update(copies)
    return copies


def sealed_guard():
    """``checks.forbid`` sealed like the probes (:func:`sealed`): every function of the checks
    module copied before the submission loads, so a submission that rebinds a name there
    (``_aten_kinds``, ``_resolve``, ``ATEN_KINDS``, ``forbid`` itself) changes nothing the
    guard does. Its tables cannot be changed in place (mapping proxies of tuples), and it holds
    torch's dispatcher functions and the library modules it guards as taken then (``warm``).
    It also gates numpy's and scipy's solver entry points (``checks.gate_entries``), with a
    state of its own the checks module does not hold."""
    from geolab.assignments import checks

    own = [n for n, v in vars(checks).items() if isinstance(v, types.FunctionType)]
    names = [n for n in own if vars(checks)[n].__module__ == checks.__name__]
    guard = sealed(vars(checks), names)
    guard["_forbid"].__globals__["_BANNED_NOW"] = {}
    guard["gate_entries"]()
    return contextmanager(guard["_forbid"])


def serve_stub(path: Path, stub: str | None, limits: dict, fd_in: int, fd_out: int) -> None:
    """The child: load the submission, then answer calls on ``stub`` (None: load only) through
    the probes and the wire functions sealed before it loads (:func:`sealed`). A probe may ask
    the grader a question mid-call (``probes.ask``: A4's sublayer)."""
    from geolab.assignments import probes, wire
    from geolab.assignments.run_checks import load_submission

    def ask(payload):
        send(fd_out, {"ask": encode(payload)})
        answer = loads(readline(fd_in))
        if answer.get("op") != "answer":
            raise RuntimeError("the grader did not answer")
        return decode(answer["value"])

    probes.ask = ask
    table = sealed(vars(probes), list(probes.PROBES))
    codec = sealed(vars(wire), ["encode", "_array", "_opaque", "decode", "_from_array", "dumps",
                                "values_at_most", "loads"])  # fmt: skip
    encode, decode, loads = codec["encode"], codec["decode"], codec["loads"]
    own = sealed(globals(), ["_send", "_readline"])
    forbid = sealed_guard()
    readline = own["_readline"]

    def send(fd, message):
        own["_send"](fd, message, codec["dumps"])

    _prctl(PR_SET_DUMPABLE, 1)  # the supervisor reads its memory map (only its own uid can)
    apply_limits(limits)
    try:
        names = load_submission(path, limits["stubs"])
    except BaseException as err:  # noqa: B036 — SystemExit from a submission is a load failure too
        send(fd_out, {"error": f"loading the submission raised {type(err).__name__}: {err}"})
        return
    send(fd_out, {"loaded": [s for s in limits["stubs"] if s in names]})
    obj = names.get(stub)
    while stub is not None:
        request = loads(readline(fd_in) or b'{"op": "end"}')
        if request.get("op") != "call":
            return
        try:
            args = decode(request["args"])
            with forbid([str(p) for p in request.get("banned", [])], obj):
                reply = {"value": encode(table[request["probe"]](obj, *args))}
        except BaseException as err:  # noqa: B036 — whatever the student's code raised
            reply = _raised(err)
        send(fd_out, reply)


def _watch(pid: int, limit: int | None) -> tuple[int, bool]:
    """Wait for the stub's child ``pid``: (its wait status, whether it was killed because the
    stub's processes together held more than ``limit`` bytes; None: the kernel bounds them)."""
    if limit is None:
        return os.waitpid(pid, 0)[1], False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status, False
        if tree_memory(os.getpid()) > limit:  # the rest of the tree goes in kill_tree
            os.kill(pid, signal.SIGKILL)
            return os.waitpid(pid, 0)[1], True
        time.sleep(WATCH_SECONDS)


def main(argv: list[str]) -> None:
    path, limits = Path(argv[0]), json.loads(argv[1])
    uid = limits.get("uid")
    if os.geteuid() == 0 and uid is not None:
        # rlimits bind only a non-root uid, and RLIMIT_NPROC counts every process of that uid:
        # a uid of this worker's own, so no other submission shares its process limit
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    _prctl(PR_SET_DUMPABLE, 0)  # no ptrace or /proc/<pid>/mem|fd from the student's processes
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    fd_in, fd_out, control = os.dup(0), os.dup(1), int(limits["control"])
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # what the submission prints goes to the grader's capped file, never a channel
    import marimo  # noqa: F401 — imported once here instead of once per stub
    import torch

    import geolab.assignments.probes  # noqa: F401
    import geolab.assignments.run_checks  # noqa: F401
    from geolab.assignments import checks

    checks.warm()  # numpy's and scipy's solver modules, once, before any submission loads
    torch.set_num_threads(1)
    _send(control, {"ready": True})
    while True:
        line = _readline(fd_in)
        if not line:
            return
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if not isinstance(request, dict) or request.get("op") == "quit":
            return
        if request.get("op") != "open":
            continue  # an "end" or "call" for a child that is already gone
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(control)  # the child never holds the supervisor's channel
                serve_stub(path, request.get("stub"), limits, fd_in, fd_out)
            except BaseException:  # noqa: B036
                traceback.print_exc()
                code = 1
            os._exit(code)
        kernel = limits.get("kernel_limits")
        status, over = _watch(pid, None if kernel else limits["memory_bytes"])
        kill_tree(os.getpid())
        closed = {"closed": os.waitstatus_to_exitcode(status)}
        _send(control, {**closed, "over": "memory"} if over else closed)


if __name__ == "__main__":
    main(sys.argv[1:])
