"""The interface every residual rule shares (docs/design.md §3).

A rule is an ``nn.Module`` called as ``rule(x, sublayer) -> x_next``; ``sublayer`` is the
attention or MLP callable on an un-normalised input, and the rule decides where the norm goes.
After each call ``rule.gates`` holds that call's gate values (detached) for probes, and
``rule.reg`` the E∆ gate regulariser of the call (still attached to the graph) or ``None``.

Each rule class also carries its own facts, so nothing outside it lists rule names:
``check(cfg)`` validates the config fields it reads; ``d_model_step`` is the granularity
``match_params`` keeps d_model at; ``beta_range`` is the interval of its β gate, if it has one;
``init_fields`` are the fields that set only init constants, which ``reset_init`` re-applies to
a built rule (a notebook slider moves them without a rebuild). Rules whose state is wider than
(B, S, D) override ``expand``/``merge``; rules whose sublayers work at another width override
``sublayer_width``; rules that rescale the sublayers' init override ``init_sublayers``.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from typing import TYPE_CHECKING

import torch
from torch import nn

from geolab.registry import config_error

if TYPE_CHECKING:
    from geolab.config import GeoConfig


class Rule(nn.Module):
    """Base of the residual rules: holds the config, the last gates and the last regulariser."""

    init_fields: tuple[str, ...] = ()

    def __init__(self, cfg: GeoConfig):
        super().__init__()
        self.cfg = cfg
        self.gates: dict[str, torch.Tensor] = {}
        self.reg: torch.Tensor | None = None

    @staticmethod
    def check(cfg: GeoConfig) -> None:
        """Raise ``config_error`` if ``cfg`` sets a field this rule reads to a bad value."""

    @staticmethod
    def sublayer_width(cfg: GeoConfig) -> int:
        return cfg.d_model

    @staticmethod
    def d_model_step(cfg: GeoConfig) -> int:
        """The granularity d_model must keep (``match_params(vary="d_model")``)."""
        return cfg.n_head

    @staticmethod
    def beta_range(cfg: GeoConfig) -> tuple[float, float] | None:
        """The open interval the rule's β gate lives in, or None for rules without one."""
        return None

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

    def reset_init(self, cfg: GeoConfig) -> None:
        """Re-apply the init constants of ``init_fields`` from ``cfg`` (no random draw), so the
        rule equals one built from ``cfg`` with the same seed."""
        self.plain(cfg=cfg)

    def keep(self, **gates: torch.Tensor) -> None:
        self.plain(gates={name: g.detach() for name, g in gates.items()})

    def plain(self, **values) -> None:
        """Set attributes that are neither parameters, buffers nor modules (the config, the
        last gates, slider constants) straight into the instance: ``nn.Module.__setattr__``'s
        checks cost a few µs each, paid by every residual step of a forward and by every rule
        of a 200-layer stack on each slider move."""
        self.__dict__.update(values)


def upcast(x: torch.Tensor) -> torch.Tensor:
    """x in at least float32: gates never run in bf16/fp16, float64 stays float64."""
    return x.float() if x.element_size() < 4 else x


def float32_gates(x: torch.Tensor):
    """A context where gate arithmetic runs in float32 even under bf16 autocast.

    docs/design.md §1: gates never run in reduced precision.
    """
    if torch.is_autocast_enabled(x.device.type):
        return torch.autocast(device_type=x.device.type, enabled=False)
    return nullcontext()


def logit(p: float) -> float:
    """log(p / (1 − p)): the bias that makes a sigmoid start at p."""
    return math.log(p / (1 - p))


def check_divides(cfg: GeoConfig, n: int) -> None:
    """d_model must split into ``n`` equal chunks (streams as a reshape of D)."""
    if cfg.d_model % n:
        raise config_error("d_model", cfg.d_model, f"must be divisible by n_streams={n}")
