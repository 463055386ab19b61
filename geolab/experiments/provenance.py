"""Provenance of a result: package versions, the git revision and the device it ran on."""

import importlib.metadata
import platform

from geolab.device import describe_device, pick_device

PACKAGES = ("torch", "numpy", "plotly", "marimo", "datasets", "kaleido")


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
