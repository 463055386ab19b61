"""The device a model runs on: which one ("auto": cuda → mps → cpu) and how it is named."""

import platform

import torch


def pick_device(name: str = "auto", local_rank: int = 0) -> torch.device:
    """ "auto": cuda (this rank's GPU) → mps → cpu; otherwise the named device, if present."""
    mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", local_rank)
        return torch.device("mps" if mps else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"TrainConfig.device={name!r}: CUDA is not available on this machine")
    if device.type == "mps" and not mps:
        raise ValueError(f"TrainConfig.device={name!r}: MPS is not available on this machine")
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", local_rank)
    return device


def describe_device(device: torch.device) -> str:
    """ "cuda (GPU name)", or the device type with the machine and processor."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"{device.type} ({platform.machine()}, {platform.processor() or 'unknown processor'})"
