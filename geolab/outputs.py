"""Output locations, checked before any work: a bad ``--out`` costs a line, not a finished run.

``check_dir`` and ``check_file`` raise a one-line ValueError naming the flag or field, the path
and why it cannot be written: it is a file (or a folder), it lies under a file, it is a
symbolic link to nothing (dangling, or looping back on itself), a name in it is longer than the
file system allows, or its nearest existing folder refuses a new entry. Writability is probed by
creating and removing an empty folder there, since permission bits say nothing for root,
read-only mounts or /sys.
"""

import os
import tempfile
from pathlib import Path


def check_dir(path, what: str) -> Path:
    """``path`` as a folder that can be created (if missing) and written in."""
    path = Path(path)
    if _exists(path) and not path.is_dir():
        raise ValueError(f"{what}={str(path)!r} is not allowed: it is a file, not a folder")
    _check_writable(path, path, what)
    return path


def check_file(path, what: str) -> Path:
    """``path`` as a file that can be created or replaced (its folder created if missing)."""
    path = Path(path)
    if _exists(path) and path.is_dir():
        raise ValueError(f"{what}={str(path)!r} is not allowed: it is a folder, not a file")
    _check_writable(path.parent, path, what)
    return path


def _check_writable(folder: Path, path: Path, what: str) -> None:
    base = folder.absolute()
    while not _exists(base):  # False under a file, too: climb to what is there
        if _is_link(base):  # a link to nothing: mkdir would meet the link, not a folder
            raise ValueError(
                f"{what}={str(path)!r} is not allowed: {str(base)!r} is a symbolic link to "
                f"{os.readlink(base)!r}, which does not exist or links back to itself"
            )
        base = base.parent
    if not base.is_dir():
        raise ValueError(
            f"{what}={str(path)!r} is not allowed: it lies under the file {str(base)!r}"
        )
    _check_names(path, base, what)
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".geolab-probe-", dir=base))
    except OSError as err:
        raise ValueError(
            f"{what}={str(path)!r} is not allowed: cannot write in {str(base)!r} ({err.strerror})"
        ) from None


def check_names(path, what: str) -> None:
    """ValueError when a name in ``path`` (a file or folder to read or write) is longer than its
    file system allows: pathlib and open() would raise OSError (ENAMETOOLONG) from deep inside."""
    path = Path(path)
    base = path.absolute()
    while not _exists(base):
        base = base.parent
    _check_names(path, base, what)


def _check_names(path: Path, base: Path, what: str) -> None:
    most = os.pathconf(base, "PC_NAME_MAX")  # ``base`` exists: the file system's own limit
    for part in path.absolute().relative_to(base).parts:
        if len(os.fsencode(part)) > most:
            raise ValueError(
                f"{what}={str(path)!r} is not allowed: the name {part[:40]!r}... is "
                f"{len(os.fsencode(part))} bytes long; this file system allows at most {most}"
            )


def _exists(path: Path) -> bool:
    """``path.exists()``, False where the name itself cannot exist (too long for the file
    system), which ``_check_writable`` then names."""
    try:
        return path.exists()
    except OSError:
        return False


def _is_link(path: Path) -> bool:
    try:
        return path.is_symlink()
    except OSError:
        return False


def replace_atomically(path: Path, write) -> None:
    """``write(tmp)`` into ``.NAME.tmpPID`` beside ``path``, then rename it over ``path``
    (``os.replace``, atomic on POSIX and Windows): a reader sees the old file or the new one,
    never half of one. When ``write`` or the rename fails the temporary file is removed and the
    error raised as it came; the caller says what it means."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
