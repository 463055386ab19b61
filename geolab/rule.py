"""The interface every residual rule shares (spec §3).

A rule is an ``nn.Module`` called as ``rule(x, sublayer) -> x_next``; ``sublayer`` is the
attention or MLP callable on an un-normalised input, and the rule decides where the norm goes.
After each call ``rule.gates`` holds that call's gate values (detached) for probes, and
``rule.reg`` the E∆ gate regulariser of the call (still attached to the graph) or ``None``.

Rules whose state is wider than (B, S, D) override ``expand``/``merge``; rules whose sublayers
work at another width override ``sublayer_width``; rules that rescale the sublayers' init
override ``init_sublayers``.
"""

import math
from contextlib import nullcontext

import torch
from torch import nn

from geolab.config import GeoConfig


class Rule(nn.Module):
    """Base of the residual rules: holds the config, the last gates and the last regulariser."""

    def __init__(self, cfg: GeoConfig):
        super().__init__()
        self.cfg = cfg
        self.gates: dict[str, torch.Tensor] = {}
        self.reg: torch.Tensor | None = None

    @staticmethod
    def sublayer_width(cfg: GeoConfig) -> int:
        return cfg.d_model

    @staticmethod
    def expand(h: torch.Tensor, cfg: GeoConfig) -> torch.Tensor:
        """Embedding (B, S, D) -> the rule's residual state."""
        return h

    @staticmethod
    def merge(h: torch.Tensor) -> torch.Tensor:
        """The rule's residual state -> (B, S, D), as the final norm and head see it."""
        return h

    @staticmethod
    def init_sublayers(cfg: GeoConfig, attn: nn.Module, mlp: nn.Module | None) -> None:
        """Hook for rules that prescribe the sublayers' init (DeepNet)."""

    def keep(self, **gates: torch.Tensor) -> None:
        self.gates = {name: g.detach() for name, g in gates.items()}


def upcast(x: torch.Tensor) -> torch.Tensor:
    """x in at least float32: gates never run in bf16/fp16, float64 stays float64."""
    return x.float() if x.element_size() < 4 else x


def float32_gates(x: torch.Tensor):
    """A context where gate arithmetic runs in float32 even under bf16 autocast (spec §1)."""
    if torch.is_autocast_enabled(x.device.type):
        return torch.autocast(device_type=x.device.type, enabled=False)
    return nullcontext()


def logit(p: float) -> float:
    """log(p / (1 − p)): the bias that makes a sigmoid start at p."""
    return math.log(p / (1 - p))
