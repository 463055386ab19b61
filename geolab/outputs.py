"""Output locations, checked before any work: a bad ``--out`` costs a line, not a finished run.

``check_dir`` and ``check_file`` raise a one-line ValueError naming the flag or field, the path
and why it cannot be written: it is a file (or a folder), it lies under a file, or its nearest
existing folder refuses a new entry. Writability is probed by creating and removing an empty
folder there, since permission bits say nothing for root, read-only mounts or /sys.
"""

import os
import tempfile
from pathlib import Path


def check_dir(path, what: str) -> Path:
    """``path`` as a folder that can be created (if missing) and written in."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{what}={str(path)!r} is not allowed: it is a file, not a folder")
    _check_writable(path, path, what)
    return path


def check_file(path, what: str) -> Path:
    """``path`` as a file that can be created or replaced (its folder created if missing)."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{what}={str(path)!r} is not allowed: it is a folder, not a file")
    _check_writable(path.parent, path, what)
    return path


def _check_writable(folder: Path, path: Path, what: str) -> None:
    base = folder.absolute()
    while not base.exists():  # exists() is False under a file, too: climb to what is there
        base = base.parent
    if not base.is_dir():
        raise ValueError(
            f"{what}={str(path)!r} is not allowed: it lies under the file {str(base)!r}"
        )
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".geolab-probe-", dir=base))
    except OSError as err:
        raise ValueError(
            f"{what}={str(path)!r} is not allowed: cannot write in {str(base)!r} ({err.strerror})"
        ) from None
