"""Provenance of a result: package versions, the git revision and the device it ran on."""

import importlib.metadata
import platform
import subprocess
from pathlib import Path

from geolab.device import describe_device, pick_device

PACKAGES = ("torch", "numpy", "plotly", "marimo", "datasets", "kaleido")


def git_revision() -> dict:
    """{"commit", "dirty"} of the checkout holding geolab, or {"commit": None} outside git."""
    root = Path(__file__).resolve().parents[2]
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


def versions() -> dict:
    import geolab

    out = {"python": platform.python_version(), "geolab": geolab.__version__}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def device_name(settings: dict) -> str:
    """The device the scale trains on ("cpu" for tiny/small, "auto" → cuda/mps/cpu for paper)."""
    return describe_device(pick_device(settings.get("train", {}).get("device", "cpu")))
