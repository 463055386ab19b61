"""One writer per output: a lock file that names its holder, for train, reproduce, grade, release.

``hold(folder, what)`` is a context: while it is open this process is the only geolab command
writing ``folder`` (an output folder, created if missing). A second writer is refused with a
one-line ValueError naming the holder's PID and command and ``what`` (the flag); nothing of
the first writer's is touched. The lock is ``flock`` on ``folder/.geolab.lock``, so the kernel
releases it when its holder dies however it dies (SIGKILL, a power cut of the process): a lock
file left behind by a dead holder is taken over, and ``note`` says so. The file holds the
holder's PID and command line for the message; it is removed on release (and the folder too,
when ``hold`` created it and nothing was written there).

Removing the file on release lets a process that opened it just before lock a file no longer
in the folder; so after ``flock`` the holder checks that the path is still its file, and tries
again if not (the usual unlink-safe lock file).
"""

import fcntl
import os
import shlex
import sys
from contextlib import contextmanager
from pathlib import Path

from geolab.outputs import check_dir

LOCK = ".geolab.lock"


def command_line() -> str:
    """This process's command, as a person would have typed it (the program's name, not path)."""
    argv = list(sys.argv) or ["python"]
    if argv[0].endswith("__main__.py"):  # python -m geolab
        program = "python -m " + Path(argv[0]).parent.name
    else:
        program = shlex.quote(Path(argv[0]).name)
    return " ".join([program, *map(shlex.quote, argv[1:])])


@contextmanager
def hold(folder, what: str, note=None):
    """Context: the lock of output ``folder`` (flag ``what``), created with the folder if needed.

    ValueError, before anything is written, when another live process holds it; ``note(text)``
    is called when a lock left by a process that has died is taken over.
    """
    folder = check_dir(folder, what)
    made = [p for p in (folder, *folder.absolute().parents) if not p.exists()]
    path = folder / LOCK
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = _acquire(path, _named(what, folder), what, note)
    except OSError as err:  # what check_dir could not foresee (a disk full to the last inode)
        _remove_empty(made)
        raise ValueError(
            f"{_named(what, folder)} cannot be written ({err.strerror}); choose another {what}"
        ) from None
    except ValueError:
        _remove_empty(made)
        raise
    try:
        yield path
    finally:
        _release(path, fd)
        _remove_empty(made)


def _release(path: Path, fd: int) -> None:
    """Unlock: remove the lock file, then close it. A folder made read-only (or taken away)
    while the command ran keeps its lock file: the command's own message about that folder is
    the one the user needs, not a second traceback from here. The flock goes with the
    descriptor either way, so the next writer takes the file over."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass
    os.close(fd)  # the flock goes with the last descriptor


def _named(what: str, folder: Path) -> str:
    """How a message names the folder: ``--out 'x'`` for a flag, ``out_dir='x'`` for a field."""
    return f"{what} {str(folder)!r}" if what.startswith("-") else f"{what}={str(folder)!r}"


def _remove_empty(made: list[Path]) -> None:
    """Remove the folders ``hold`` created (deepest first) while they are empty: a refused or
    failed command leaves nothing behind."""
    for folder in made:
        try:
            folder.rmdir()
        except OSError:  # not empty (its parents then are not either), or a name like x/..
            continue


def _acquire(path: Path, name: str, what: str, note) -> int:
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd) or "another process"  # (one that has not written its name yet)
            os.close(fd)
            raise ValueError(
                f"{name} is in use by {holder} (lock {str(path)!r}); wait "
                f"for it to finish, or choose another {what}"
            ) from None
        except OSError as err:  # a file system without flock
            os.close(fd)
            raise ValueError(
                f"{name} cannot be locked ({err.strerror}); choose a folder on a local disk"
            ) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder released and removed it between our open and flock: again
    left = _read(fd)
    if left is not None and note is not None:
        note(f"{name}: took over the lock left by {left}, which no longer runs")
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n{command_line()}\n".encode(), 0)
    return fd


def _read(fd: int) -> str | None:
    """'process PID (COMMAND)' of the lock file's content; None when it is empty."""
    text = os.pread(fd, 4096, 0).decode("utf-8", "replace")
    if not text.strip():
        return None
    pid, _, cmd = text.partition("\n")
    if not pid.strip().isdigit():
        return "another process"
    cmd = cmd.strip()
    return f"process {pid.strip()}" + (f" ({cmd})" if cmd else "")
