"""Computed results kept on disk between sessions, in geolab's cache folder (``views/`` under it).

Notebook 04's first load at 200 layers draws 39 M sublayer weights and ≈ 1,600 rule modules and
runs four 200-layer forwards: 5–8× the matrix products it needs (bench/README.md, "Sixth pass"),
every time a new process opens it. The curves it shows are a pure function of their arguments
(seeded weights and tokens), so a later session can read them instead: ``load`` and ``save``
keep each result as one ``.npz`` file named by the SHA-256 of its key.

What a key holds (``key``): the caller's arguments (rule, depth, widths, sequence length, seed,
every slider value), and everything else that can change a bit of the result — torch's and
numpy's versions, the default dtype, torch's thread count, whether the views compile their layer
step (``GEOLAB_COMPILE``: inductor rounds differently), and a SHA-256 of every ``.py`` file of
the geolab package plus the source file of each class passed as ``sources`` from outside it (a
user's own rule): editing any of them misses the old files. A class whose source cannot be read
(defined at a prompt) has no key, and its results are computed every time.

Safety: a file is written to a temporary name in the same folder and renamed over its final
name (``os.replace``, atomic on POSIX and Windows), so a reader never sees half a file; it is
read with ``np.load(allow_pickle=False)`` (no code runs from it), and the key is stored inside
it and compared, with the caller's ``check`` of shapes and values. A file that fails any of
these (truncated, damaged, another key) is ignored, and the result computed and written again.
A write that fails (full disk, read-only folder) keeps the result in memory only. The folder is
kept under ``BUDGET_BYTES``, least recently used files first out.

``GEOLAB_DISK_CACHE=0`` turns it off (nothing read, nothing written); unset or ``1``, on.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import warnings
import zipfile
from pathlib import Path

import numpy as np
import torch

from geolab.compiling import views_compile
from geolab.data import cache_root
from geolab.outputs import replace_atomically

ENV = "GEOLAB_DISK_CACHE"
SUBFOLDER = "views"
BUDGET_BYTES = 1 << 30  # 1 GiB: ≈ 300 curves of 200 layers at D = 128, S = 32
FORMAT = 1  # bumped when the stored layout changes
_KEY = "__key__"
PACKAGE = Path(__file__).resolve().parent


def enabled() -> bool:
    """Whether ``GEOLAB_DISK_CACHE`` allows the disk cache: unset, empty or ``1`` yes, ``0``
    no; anything else is a ValueError naming the variable."""
    value = os.environ.get(ENV, "").strip()
    if value not in ("", "0", "1"):
        raise ValueError(f"{ENV}={value!r} is not allowed; expected 0 or 1")
    return value != "0"


def folder(kind: str) -> Path:
    """Where results of ``kind`` are kept: ``cache_root()/views/<kind>`` (``$GEOLAB_CACHE``,
    else ``~/.cache/geolab``)."""
    return cache_root() / SUBFOLDER / kind


@functools.cache
def package_digest() -> str:
    """SHA-256 of every ``.py`` file of the geolab package, path and bytes, in sorted order
    (once per process: ≈ 0.9 MB)."""
    h = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        h.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def _source_digest(cls: type) -> str | None:
    """SHA-256 of the source files of ``cls`` and its bases defined outside geolab and torch
    (a user's rule and its own bases), or None when one cannot be read."""
    h = hashlib.sha256()
    for base in cls.__mro__:
        top = base.__module__.split(".")[0]
        if top in ("geolab", "torch", "builtins"):
            continue
        try:
            h.update(Path(inspect.getsourcefile(base)).read_bytes())
        except (TypeError, OSError):  # built at a prompt or in a notebook cell: no file
            return None
    return h.hexdigest()


def key(kind: str, sources: tuple[type, ...] = (), **parts) -> str | None:
    """The key of a result of ``kind`` computed from ``parts`` (JSON-able values) by code that
    includes the classes ``sources``: a JSON text of them and of the environment that can change
    the result (module docstring); None when a source cannot be read (no disk cache then)."""
    digests = [_source_digest(cls) for cls in sources]
    if None in digests:
        return None
    whole = {
        "format": FORMAT,
        "kind": kind,
        "parts": parts,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "dtype": str(torch.get_default_dtype()),
        "threads": torch.get_num_threads(),
        "compile": views_compile(),
        "geolab": package_digest(),
        "sources": digests,
    }
    return json.dumps(whole, sort_keys=True)


def _path(kind: str, key_text: str) -> Path:
    return folder(kind) / (hashlib.sha256(key_text.encode()).hexdigest()[:40] + ".npz")


def load(kind: str, key_text: str | None, check) -> object | None:
    """The result kept for ``key_text``, ``check(arrays)`` of its stored arrays (a dict of numpy
    arrays; ``check`` raises ValueError when they are not a valid result), or None: nothing
    kept, the cache off, or a file that is damaged, holds another key or fails ``check``."""
    if key_text is None or not enabled():
        return None
    path = _path(kind, key_text)
    try:
        with np.load(path, allow_pickle=False) as stored:
            arrays = {name: stored[name] for name in stored.files}
        if bytes(arrays.pop(_KEY, np.zeros(0, np.uint8))).decode() != key_text:
            return None
        result = check(arrays)
        os.utime(path)  # recently used: the last to go when the folder is pruned
    except FileNotFoundError:
        return None
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, UnicodeDecodeError):
        return None  # damaged or foreign: recomputed and written again
    return result


def save(kind: str, key_text: str | None, arrays: dict[str, np.ndarray]) -> None:
    """Keep ``arrays`` for ``key_text``: written to a temporary file in the folder, then renamed
    over the final name. Nothing when the cache is off or ``key_text`` is None; a failed write
    warns and keeps nothing."""
    if key_text is None or not enabled():
        return
    where = folder(kind)
    stored = {**arrays, _KEY: np.frombuffer(key_text.encode(), np.uint8)}

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:  # a file object: np.savez would append ".npz" to a name
            np.savez(f, **stored)

    try:
        where.mkdir(parents=True, exist_ok=True)
        replace_atomically(_path(kind, key_text), write)
        prune(where)
    except OSError as err:
        warnings.warn(f"geolab's disk cache could not write to {where}: {err}", stacklevel=2)


def prune(where: Path, budget: int = BUDGET_BYTES) -> None:
    """Remove the least recently used files of ``where`` until the rest fit in ``budget``
    bytes."""
    files = []
    for entry in os.scandir(where):
        try:
            st = entry.stat()
        except OSError:  # removed by another process meanwhile
            continue
        files.append((st.st_mtime, st.st_size, entry.path))
    total = sum(size for _, size, _ in files)
    for _, size, path in sorted(files):
        if total <= budget:
            break
        Path(path).unlink(missing_ok=True)
        total -= size
