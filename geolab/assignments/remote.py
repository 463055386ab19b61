"""The grader's side of a submission's worker: a session of sandboxed processes, and proxies.

:class:`Session` starts the worker (``sandbox.start``), opens one stub at a time, sends probe
calls and reads plain-data replies, each read bounded by a deadline. A stub that runs past its
deadline or whose process dies raises :class:`~geolab.assignments.checks.TaskStopped` (its
checks fail, the next stub gets a fresh process); a submission past its whole time limit raises
:class:`SubmissionTimeout`. :class:`Stub` is what the checks receive instead of the student's
function: calling it or :func:`~geolab.assignments.checks.observe`-ing it runs the probe in the
worker, under the guards :func:`~geolab.assignments.checks.forbid` put on it.
"""

import os
import selectors
import signal
import time
from pathlib import Path

from geolab.assignments import sandbox
from geolab.assignments.checks import ForbiddenCall, TaskStopped, TimeLimit
from geolab.assignments.wire import decode, dumps, encode, loads
from geolab.assignments.worker import kill_tree

MAX_LINE = 256 * 2**20  # bytes of one reply; more is a malformed reply
CLOSE_SECONDS = 10.0  # for a stub's processes to be gone once its checks are done


class SubmissionTimeout(BaseException):
    """The submission ran past its whole time limit."""


class ProcessLost(TaskStopped):
    """The stub's process ended without answering (crash, os._exit, a limit)."""


class BadReply(TaskStopped):
    """The stub's process answered something that is not a reply."""


class StudentError(Exception):
    """An exception the student's code raised in its process (re-created by name)."""


def _raise(reply: dict):
    name = "".join(c for c in str(reply.get("raised", "Error")) if c.isalnum() or c == "_")
    message = str(reply.get("message", ""))
    kind = reply.get("kind")
    if kind == "forbidden":
        raise ForbiddenCall(message)
    if kind == "not-implemented":
        raise NotImplementedError(message)
    if kind == "exit":
        raise SystemExit(message)
    raise type(name or "Error", (StudentError,), {})(message)


class Session:
    """One submission's worker processes. ``deadline`` (monotonic seconds) bounds the current
    stub; ``end`` the whole submission."""

    def __init__(self, mode: str, view: Path, box: Path, submission: str, settings: dict,
                 timeout: float):  # fmt: skip
        self.mode, self.view, self.box, self.submission = mode, view, box, submission
        self.text = (box / "in" / submission).read_text(encoding="utf-8")
        self.settings = settings
        self.end = time.monotonic() + timeout
        self.timeout = timeout
        self.deadline = self.end
        self.proc = None
        self.buffer = b""
        self.stub = None

    # --- the process ---------------------------------------------------------------------

    def _start(self) -> None:
        self.proc = sandbox.start(self.mode, self.view, self.box, self.submission, self.settings)
        self.buffer = b""
        reply = self._read()
        if reply.get("ready") is not True:
            raise BadReply("the grading process did not start")

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (with bwrap: its PID namespace)."""
        if self.proc is None:
            return
        if self.mode == "none":  # no PID namespace: hunt down what escaped its process group
            kill_tree(self.proc.pid, reap=False)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            pipe.close()
        self.proc, self.stub = None, None

    def _send(self, message: dict) -> None:
        try:
            self.proc.stdin.write(dumps(message))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the read that follows reports the lost process

    def _read(self) -> dict:
        """The next reply line, or TaskStopped/SubmissionTimeout at the deadline or on EOF."""
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self.buffer:
                left = min(self.deadline, self.end) - time.monotonic()
                if left <= 0 or not sel.select(left):
                    self.kill()
                    if self.deadline < self.end:
                        raise TimeLimit(f"did not finish within {self.task_timeout:g} s "
                                        "(an endless loop?)")  # fmt: skip
                    raise SubmissionTimeout(f"killed after the {self.timeout:g} s time limit")
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    code = self.proc.poll() if self.proc.poll() is not None else self.proc.wait()
                    self.kill()
                    raise ProcessLost(f"the process ended without an answer (exit code {code})")
                self.buffer += chunk
                if len(self.buffer) > MAX_LINE:
                    self.kill()
                    raise BadReply("the process sent a reply larger than the grader accepts")
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            return loads(line)
        except ValueError as err:
            self.kill()
            raise BadReply(f"the process sent something that is not a reply ({err})") from err

    # --- one stub at a time ------------------------------------------------------------------

    def open(self, stub: str | None) -> dict:
        """A fresh child for ``stub`` (None: load only); the child's load report: ``{"loaded":
        [stubs found]}`` or ``{"error": message}``. ProcessLost if it died loading."""
        self.close()
        if self.mode == "none":  # no read-only mount: a stub may have rewritten its own copy
            (self.box / "in" / self.submission).write_text(self.text, encoding="utf-8")
        if self.proc is None:
            self._start()
        self._send({"op": "open", "stub": stub})
        reply = self._read()
        if "closed" in reply:
            raise ProcessLost(f"the process died with exit code {reply['closed']}")
        if stub is None or "loaded" not in reply:
            self._closed()
        else:
            self.stub = stub
        return reply

    def _closed(self) -> None:
        """Read up to the supervisor's ``closed`` (stray lines from the child are skipped)."""
        while "closed" not in self._read():
            pass

    def close(self) -> None:
        """End the open stub: its child and every process it left are killed."""
        if self.stub is not None and self.proc is not None:
            self.stub = None
            self._send({"op": "end"})
            self._closed()

    def call(self, stub: str, probe: str, args: tuple, banned: list[str]):
        """``probe(student's stub, *args)`` in the worker; the plain value, or the student's
        exception re-raised."""
        if self.stub != stub:
            reply = self.open(stub)
            if "loaded" not in reply:
                raise ProcessLost(reply.get("error", "the submission did not load again"))
        self._send({"op": "call", "probe": probe, "args": encode(tuple(args)), "banned": banned})
        reply = self._read()
        if "closed" in reply:
            self.stub = None
            raise ProcessLost(
                f"the process running your code ended (exit code {reply['closed']}): a crash, "
                "os._exit(), a signal or a resource limit"
            )
        if "raised" in reply:
            _raise(reply)
        if "value" not in reply:
            self.kill()
            raise BadReply("the process sent something that is not a reply")
        try:
            return decode(reply["value"])
        except (ValueError, TypeError) as err:
            raise BadReply(f"the reply is not plain data ({err})") from err

    def limit(self, task_timeout: float):
        """The per-stub limit for ``catalog.check_all``: a deadline, and a fresh child after."""
        from contextlib import contextmanager

        @contextmanager
        def stub_limit(_stub):
            self.task_timeout = task_timeout
            self.deadline = time.monotonic() + task_timeout
            try:
                yield
            finally:  # the stub's checks are done: its processes get a short time to go
                self.deadline = time.monotonic() + CLOSE_SECONDS
                try:
                    self.close()
                except TaskStopped:
                    pass  # killed: the next stub starts a fresh worker
                finally:
                    self.deadline = self.end

        return stub_limit


class Stub:
    """The student's ``name`` as the checks see it: a proxy whose probes run in the worker."""

    runs_elsewhere = True

    def __init__(self, session: Session, name: str):
        self.session, self.name, self.banned = session, name, []

    def observe(self, probe: str, *args):
        return self.session.call(self.name, probe, args, list(self.banned))

    def __call__(self, *args):
        return self.observe("call", *args)
