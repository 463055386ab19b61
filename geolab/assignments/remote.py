"""The grader's side of a submission's worker: a session of sandboxed processes, and proxies.

:class:`Session` starts the worker (``sandbox.start``), opens one stub at a time, sends probe
calls and reads plain-data replies, each read bounded by the time limits and a size. Replies come on
the worker's stdout, the supervisor's ``ready``/``closed`` on a control pipe no student process
holds, and what the student prints on a file the grader holds (:meth:`Session.output_tail`).
Whatever arrives is checked field by field; anything else is a :class:`BadReply` for that stub.
A stub that runs past its limit or whose process dies raises
:class:`~geolab.assignments.checks.TaskStopped` (its checks fail, the next stub gets a fresh
process); a submission past its whole time limit raises :class:`SubmissionTimeout`.

The limits are CPU time — of every process the submission's workers ran and of the grader's own
thread working for it — so a loaded machine, which slows an honest stub down, does not fail it;
a wall-clock backstop stops code that waits instead of computing: ``BACKSTOP`` times the limit,
a fixed bound the submission cannot stretch by raising the machine's load (:func:`backstop`).
Requests go to the worker through a non-blocking pipe under the same limits (a child that stops
reading cannot hold the grader in a write), and what the worker sends is bounded before
anything is served: a line of at most ``MAX_LINE`` bytes, at most ``MAX_ASKS`` questions
in one call.

:class:`Stub` is what the checks receive instead of the student's function: calling it or
:func:`~geolab.assignments.checks.observe`-ing it runs the probe in the worker, under the
guards :func:`~geolab.assignments.checks.forbid` put on it.
"""

import math
import os
import selectors
import signal
import time
from contextlib import contextmanager
from pathlib import Path

from geolab.assignments import cgroup, sandbox
from geolab.assignments.checks import ForbiddenCall, TaskStopped, TimeLimit
from geolab.assignments.wire import decode, dumps, encode, loads
from geolab.assignments.worker import kill_tree, tree_cpu

MAX_LINE = 64 * 2**20  # bytes of one reply; more is a malformed reply
MAX_ASKS = 16  # questions one call may ask the grader (A4: a rule's sublayer calls); mgt_ddl asks 1
CLOSE_SECONDS = 10.0  # for a stub's processes to be gone once its checks are done
BACKSTOP = 4.0  # wall-clock seconds a time limit allows per CPU second on an idle machine
POLL_SECONDS = 0.25  # how often the CPU time is measured while the grader waits


def backstop(seconds: float) -> float:
    """Wall-clock seconds allowed for a limit of ``seconds`` of CPU time: BACKSTOP times as many,
    whatever the machine's load. Not scaled by the load average: a submission can raise that
    from inside the sandbox (processes blocked in uninterruptible sleep count as load, and cost
    no CPU), and so stretch the time it holds a job slot while it sleeps. An honest stub needs a
    few CPU seconds of its limit; on a machine with 4 runnable processes per CPU it still ends
    within the backstop."""
    return BACKSTOP * seconds


class SubmissionTimeout(BaseException):
    """The submission ran past its whole time limit."""


class ProcessLost(TaskStopped):
    """The stub's process ended without answering (crash, os._exit, a limit)."""


class BadReply(TaskStopped):
    """The stub's process answered something that is not a reply."""


class StudentError(Exception):
    """An exception the student's code raised in its process (re-created by name)."""


def _raise(reply: dict):
    """Re-raise the student's exception by name (a SystemExit as a StudentError: nothing the
    worker sends can stop the grader)."""
    name = "".join(c for c in str(reply["raised"]) if c.isalnum() or c == "_")[:100]
    message = str(reply["message"])[:2000]
    kind = reply["kind"]
    if kind == "forbidden":
        raise ForbiddenCall(message)
    if kind == "not-implemented":
        raise NotImplementedError(message)
    if kind == "exit":
        raise type("SystemExit", (StudentError,), {})(message)
    raise type(name or "Error", (StudentError,), {})(message)


def _load_report(reply: dict) -> dict:
    """A child's load report, checked: ``{"loaded": [names]}`` or ``{"error": text}``."""
    if set(reply) == {"loaded"} and isinstance(reply["loaded"], list):
        if all(isinstance(name, str) for name in reply["loaded"]):
            return reply
    if set(reply) == {"error"} and isinstance(reply["error"], str):
        return reply
    raise BadReply("the process sent something that is not a load report")


def _rewrite(path: Path, text: str) -> None:
    """Put the submission's text back at ``path`` as a new file (whatever a stub left there, a
    link included, is replaced, not followed)."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


class Session:
    """One submission's worker processes. ``timeout``: the submission's CPU seconds (its
    processes' and the grader thread's, :meth:`cpu`) from ``began``, with a wall-clock backstop
    (:func:`backstop`); ``stub_limit`` (start time, CPU then, CPU seconds) bounds the current
    stub the same way, ``close_by`` (monotonic seconds) the end of its processes. ``output``:
    the file (a descriptor the grader holds) the student's prints go to; :meth:`output_tail`
    reads its end. ``cgroups`` (``cgroup.probe``): each worker starts in a cgroup of its own
    there, which bounds the memory and processes of all of its processes; None: the worker
    polls the memory of a stub's processes and applies rlimits."""

    def __init__(self, mode: str, view: Path, box: Path, submission: str, settings: dict,
                 timeout: float, output: int, cgroups: cgroup.Hierarchy | None = None):  # fmt: skip
        self.mode, self.view, self.box, self.submission = mode, view, box, submission
        self.text = (box / "in" / submission).read_text(encoding="utf-8")
        self.settings, self.output = settings, output
        self.began, self.timeout = time.monotonic(), timeout
        self.stub_limit = self.close_by = None
        self.cpu_gone, self.cpu_thread = 0.0, time.thread_time()
        self.measured = -math.inf  # when the CPU time was last measured (monotonic seconds)
        self.proc = self.control = None
        self.cgroups, self.group = cgroups, None
        self.ooms_gone = self.ooms_seen = 0  # OOM kills in removed groups; all, at stub start
        self.buffers, self.scanned = {}, {}
        self.stub = None

    # --- the process ---------------------------------------------------------------------

    def _start(self) -> None:
        read, write = os.pipe()
        try:
            settings = {**self.settings, "control": write}
            if self.cgroups is not None:  # removed by kill(), whatever happens from here
                self.group = cgroup.Group(self.cgroups, self.settings["memory_bytes"])
            self.proc = sandbox.start(self.mode, self.view, self.box, self.submission, settings,
                                      self.output, self.group)  # fmt: skip
        finally:
            os.close(write)
        self.control = read
        os.set_blocking(self.proc.stdin.fileno(), False)  # a write waits in select, under limits
        self.buffers = {read: bytearray(), self.proc.stdout.fileno(): bytearray()}
        self.scanned = dict.fromkeys(self.buffers, 0)
        if self._control() != {"ready": True}:
            self.kill()
            raise BadReply("the grading process did not start")
        if self.group is not None:  # the student may add processes beyond the supervisor's own
            self.group.cap_processes(1 + self.settings["processes"])

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (with bwrap: its PID namespace) and every
        process in its cgroup, and remove that."""
        if self.proc is not None:
            self._kill_worker()
        if self.group is not None:
            self.ooms_gone += self.group.ooms()
            self.group.remove()
            self.group = None

    def _kill_worker(self) -> None:
        self.cpu_gone += tree_cpu(self.proc.pid)  # what the killed processes used stays counted
        if self.group is not None:  # escaped or not, every process the worker started
            self.group.kill()
        # every process below the worker, a PID namespace's too: killed, and gone (reaped by
        # their parents) before this returns — a namespace's processes killed only through its
        # init can outlive a grading by the seconds a large address space takes to free
        kill_tree(self.proc.pid, reap=False)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.kill()
        self.proc.wait()
        sandbox.forget(self.proc.pid)
        if self.mode == "none":
            sandbox.sweep_orphans()
        for pipe in (self.proc.stdin, self.proc.stdout):
            pipe.close()
        os.close(self.control)
        self.proc, self.control, self.stub, self.buffers = None, None, None, {}

    def cpu(self) -> float:
        """CPU seconds spent on this submission: by every process its workers ran (the killed
        ones included) and by this grader thread since the session began."""
        alive = tree_cpu(self.proc.pid) if self.proc is not None else 0.0
        return self.cpu_gone + alive + time.thread_time() - self.cpu_thread

    def _check_time(self) -> None:
        """Kill the worker and raise TimeLimit (the stub) or SubmissionTimeout past a limit: CPU
        time (measured every POLL_SECONDS) or the wall-clock backstop."""
        now = time.monotonic()
        cpu = None
        if now >= self.measured + POLL_SECONDS:
            self.measured, cpu = now, self.cpu()
        if self.stub_limit is not None:
            start, cpu_then, limit = self.stub_limit
            if cpu is not None and cpu - cpu_then >= limit:
                self.kill()
                raise TimeLimit(f"did not finish within {limit:g} s of CPU time (an endless loop?)")
            if now - start >= backstop(limit):
                self.kill()
                raise TimeLimit(
                    f"did not finish within {now - start:.0f} s, the wall-clock backstop of its "
                    f"{limit:g} s of CPU time (waiting for something that never comes?)"
                )
        if self.close_by is not None and now >= self.close_by:
            self.kill()
            raise TimeLimit(f"its processes did not end within {CLOSE_SECONDS:g} s")
        limit = f"the {self.timeout:g} s time limit (CPU time)"
        if cpu is not None and cpu >= self.timeout:
            self.kill()
            raise SubmissionTimeout(f"killed after {limit}")
        if now - self.began >= backstop(self.timeout):
            self.kill()
            raise SubmissionTimeout(
                f"killed after {now - self.began:.0f} s, the wall-clock backstop of {limit}"
            )

    def output_tail(self, size: int = 2000) -> str:
        """The last ``size`` bytes the student's code printed (a bounded read of the grader's own
        file: nothing the student left at a path is followed)."""
        end = os.fstat(self.output).st_size
        return os.pread(self.output, size, max(0, end - size)).decode("utf-8", "replace")

    def _send(self, message: dict) -> None:
        """Write one request, waiting for the pipe (and reading what arrives meanwhile) only
        within the limits: a child that stops reading costs its stub's time, no more."""
        data = memoryview(dumps(message))
        stdin = self.proc.stdin.fileno()
        while data:
            try:
                data = data[os.write(stdin, data) :]
            except BlockingIOError:
                self._wait((self.proc.stdout.fileno(), self.control), stdin)
            except OSError:  # the worker is gone: the read that follows reports it
                return

    def _wait(self, fds: tuple[int, ...], writing: int | None = None) -> None:
        """Wait until one of ``fds`` has bytes (read into its buffer) or ``writing`` takes some,
        at most POLL_SECONDS; TaskStopped/SubmissionTimeout past a limit or when the process is
        gone, BadReply past MAX_LINE."""
        self._check_time()
        wait = min(self.measured + POLL_SECONDS, self.close_by or math.inf) - time.monotonic()
        with selectors.DefaultSelector() as sel:
            for fd in fds:
                sel.register(fd, selectors.EVENT_READ)
            if writing is not None:
                sel.register(writing, selectors.EVENT_WRITE)
            ready = sel.select(max(wait, 0.0))
        for key, _ in ready:
            if key.fd == writing:
                continue
            chunk = os.read(key.fd, 1 << 20)
            if not chunk:
                code = self.proc.wait()
                self.kill()
                raise ProcessLost(f"the process ended without an answer (exit code {code})")
            self.buffers[key.fd] += chunk
            if len(self.buffers[key.fd]) > MAX_LINE:
                self.kill()
                raise BadReply("the process sent a reply larger than the grader accepts")

    def _line(self, fds: tuple[int, ...]) -> tuple[int, bytes]:
        """(fd, the next whole line from one of ``fds``), each byte searched for the end of the
        line once; raises as :meth:`_wait`."""
        while True:
            for fd in fds:
                buffer = self.buffers[fd]
                end = buffer.find(b"\n", self.scanned[fd])
                if end >= 0:
                    line = bytes(buffer[:end])
                    del buffer[: end + 1]
                    self.scanned[fd] = 0
                    return fd, line
                self.scanned[fd] = len(buffer)
            self._wait(fds)

    def _control(self) -> dict:
        """The supervisor's next message (the child's replies meanwhile are dropped)."""
        out = self.proc.stdout.fileno()
        while True:
            fd, line = self._line((self.control, out))
            if fd == self.control:
                return self._parse(line)

    def _ooms(self) -> int:
        """Processes of this session's workers the kernel killed for their memory limit."""
        return self.ooms_gone + (self.group.ooms() if self.group is not None else 0)

    def _reply(self) -> dict:
        """The child's next reply; ProcessLost when the supervisor reports it gone first, or
        when the kernel killed one of the stub's processes for the memory limit (the worker is
        killed then: nothing it sent after counts)."""
        try:
            message = self._next_reply()
        except ProcessLost:
            if self._ooms() > self.ooms_seen:
                raise self._memory_exceeded() from None
            raise
        if self._ooms() > self.ooms_seen:
            raise self._memory_exceeded()
        return message

    def _memory_exceeded(self) -> ProcessLost:
        """Kill the worker (nothing it sent after the kernel's OOM kill counts); the stub's
        failure."""
        self.kill()
        self.stub, self.ooms_seen = None, self._ooms()
        gib = self.settings["memory_bytes"] / 2**30
        return ProcessLost(f"memory limit exceeded: the processes running your code needed more "
                           f"than {gib:g} GiB of memory together (the kernel's limit for all of "
                           "them)")  # fmt: skip

    def _next_reply(self) -> dict:
        # The reply pipe is read first: a child that answers and then exits (os._exit after the
        # reply) wrote its answer before the supervisor could report it gone, so whenever the
        # "closed" line is there, the answer is too; on a loaded machine both land in one read.
        fd, line = self._line((self.proc.stdout.fileno(), self.control))
        message = self._parse(line)
        if fd == self.control:
            if "closed" not in message:
                self.kill()
                raise BadReply("the grading process sent something that is not a reply")
            self.stub = None
            if message.get("over") == "memory":
                gib = self.settings["memory_bytes"] / 2**30
                raise ProcessLost(f"the processes running your code held more than {gib:g} GiB "
                                  "of memory together (the limit is for all of them)")  # fmt: skip
            raise ProcessLost(
                f"the process running your code ended (exit code {message['closed']}): a crash, "
                "os._exit(), a signal or a resource limit"
            )
        return message

    def _parse(self, line: bytes) -> dict:
        try:
            return loads(line)
        except ValueError as err:
            self.kill()
            raise BadReply(f"the process sent something that is not a reply ({err})") from err

    def _drain(self) -> None:
        """Drop whatever the last child left on the reply pipe (it is dead: the supervisor
        killed its processes before reporting ``closed``)."""
        fd = self.proc.stdout.fileno()
        os.set_blocking(fd, False)
        try:
            while os.read(fd, 1 << 20):
                pass
        except BlockingIOError:
            pass
        finally:
            os.set_blocking(fd, True)
        self.buffers[fd], self.scanned[fd] = bytearray(), 0

    # --- one stub at a time ------------------------------------------------------------------

    def open(self, stub: str | None) -> dict:
        """A fresh child for ``stub`` (None: load only); the child's load report: ``{"loaded":
        [stubs found]}`` or ``{"error": message}``. ProcessLost if it died loading."""
        self.close()
        self.ooms_seen = self._ooms()  # what an earlier stub's processes did is not this one's
        if self.mode == "none":  # no read-only mount: a stub may have rewritten its own copy
            _rewrite(self.box / "in" / self.submission, self.text)
        if self.proc is None:
            self._start()
        self._drain()
        self._send({"op": "open", "stub": stub})
        try:
            reply = _load_report(self._reply())
        except BadReply:
            self.kill()
            raise
        if stub is None or "loaded" not in reply:
            self._control()  # the child is done: the supervisor's "closed"
        else:
            self.stub = stub
        return reply

    def close(self) -> None:
        """End the open stub: its child and every process it left are killed."""
        if self.stub is not None and self.proc is not None:
            self.stub = None
            self._send({"op": "end"})
            if "closed" not in self._control():
                self.kill()

    def call(self, stub: str, probe: str, args: tuple, banned: list[str], on_ask=None):
        """``probe(student's stub, *args)`` in the worker; the plain value, or the student's
        exception re-raised. ``on_ask(value)`` answers the probe's questions mid-call (computed
        here, in the grader). Anything else the child sends is a BadReply for this stub."""
        if self.stub != stub:
            reply = self.open(stub)
            if "loaded" not in reply:
                raise ProcessLost(reply.get("error", "the submission did not load again"))
        self._send({"op": "call", "probe": probe, "args": encode(tuple(args)), "banned": banned})
        reply, asked = self._reply(), 0
        while set(reply) == {"ask"} and on_ask is not None:
            asked += 1
            if asked > MAX_ASKS:  # each answer is computed and kept here: the count is bounded
                self.kill()
                raise BadReply(f"the process asked more than {MAX_ASKS} questions in one call")
            try:
                answer = on_ask(self._decode(reply["ask"]))
            except BaseException:  # the worker waits for an answer it will not get
                self.kill()
                raise
            self._send({"op": "answer", "value": encode(answer)})
            reply = self._reply()
        if set(reply) == {"raised", "kind", "message"}:
            _raise(reply)
        if set(reply) != {"value"}:
            self.kill()
            raise BadReply("the process sent something that is not a reply")
        return self._decode(reply["value"])

    def _decode(self, data):
        try:
            return decode(data)
        except (ValueError, TypeError, OverflowError) as err:
            self.kill()
            raise BadReply(f"the reply is not plain data ({err})") from err

    def limit(self, task_timeout: float):
        """The per-stub limit for ``catalog.check_all``: ``task_timeout`` CPU seconds (and the
        wall-clock backstop, :func:`backstop`), and a fresh child after."""

        @contextmanager
        def stub_limit(_stub):
            self.stub_limit = (time.monotonic(), self.cpu(), task_timeout)
            try:
                yield
            finally:  # the stub's checks are done: its processes get a short time to go
                self.stub_limit, self.close_by = None, time.monotonic() + CLOSE_SECONDS
                try:
                    self.close()
                except TaskStopped:
                    pass  # killed: the next stub starts a fresh worker
                finally:
                    self.close_by = None

        return stub_limit


class Stub:
    """The student's ``name`` as the checks see it: a proxy whose probes run in the worker."""

    runs_elsewhere = True

    def __init__(self, session: Session, name: str):
        self.session, self.name, self.banned = session, name, []

    def observe(self, probe: str, *args, on_ask=None):
        return self.session.call(self.name, probe, args, list(self.banned), on_ask)

    def __call__(self, *args):
        return self.observe("call", *args)
