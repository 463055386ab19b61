"""Which code runs: the geolab version and the git commit of the checkout that holds it.

A run records ``code_record()`` in its config.json and checkpoint, so a resume can say when the
code changed since the checkpoint (``geolab.train.loop.prepare``); results record it too
(``geolab.experiments.provenance``).
"""

import functools
import subprocess
from pathlib import Path


def git_revision() -> dict:
    """{"commit", "dirty"} of the checkout holding geolab, or {"commit": None} outside git."""
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", "geolab"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": None, "dirty": None}
    if commit.returncode:
        return {"commit": None, "dirty": None}
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


@functools.cache
def code_record() -> dict:
    """{"geolab": version, "commit", "dirty"}: the code this process imported, read once (a
    checkout changed later does not change the code already running)."""
    from geolab import __version__

    return {"geolab": __version__, **git_revision()}


def describe(code: dict) -> str:
    """``code_record()`` in words: 'geolab 0.1.0 at commit 1a2b3c4d5e (with uncommitted
    changes)', or '... outside git'."""
    where = f"at commit {code['commit'][:10]}" if code.get("commit") else "outside git"
    dirty = " with uncommitted changes" if code.get("dirty") else ""
    return f"geolab {code.get('geolab')} {where}{dirty}"
