"""The classic shortcuts (docs/design.md §3): post-LN, pre-LN, ReZero, LayerScale, DeepNorm, none.

Notation: X the residual state (B, S, D), F the sublayer, LN the configured norm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from geolab.layers import make_norm
from geolab.registry import register
from geolab.rules.base import Rule

if TYPE_CHECKING:
    from geolab.config import GeoConfig


class _Normed(Rule):
    """A rule with one norm LN over the width D (the configured ``cfg.norm``)."""

    def __init__(self, cfg: GeoConfig):
        super().__init__(cfg)
        self.ln = make_norm(cfg.norm, cfg.d_model)


@register("postln")
class PostLN(_Normed):
    """Post-LN: ``X' = LN(X + F(X))``, the MGT paper's "Standard" baseline — Vaswani et al. 2017,
    Attention Is All You Need, arXiv:1706.03762."""

    def forward(self, x, sublayer):
        return self.ln(x + sublayer(x))


@register("preln")
class PreLN(_Normed):
    """Pre-LN: ``X' = X + F(LN X)``, the strong modern baseline — Xiong et al. 2020, On Layer
    Normalization in the Transformer Architecture, arXiv:2002.04745."""

    def forward(self, x, sublayer):
        return x + sublayer(self.ln(x))


@register("rezero")
class ReZero(Rule):
    """ReZero: ``X' = X + a·F(X)``, scalar a = 0 at init, no norm — Bachlechner et al. 2021, ReZero
    is All You Need, arXiv:2003.04887."""

    def __init__(self, cfg: GeoConfig):
        super().__init__(cfg)
        self.a = nn.Parameter(torch.zeros(()))

    def forward(self, x, sublayer):
        self.keep(a=self.a)
        return x + self.a * sublayer(x)


def cait_layerscale_init(n_layer: int) -> float:
    """CaiT's s₀ (Touvron et al. 2021, §3): 0.1 up to 18 layers, 1e-5 up to 24, 1e-6 deeper."""
    if n_layer <= 18:
        return 0.1
    if n_layer <= 24:
        return 1e-5
    return 1e-6


@register("layerscale")
class LayerScale(_Normed):
    """LayerScale: ``X' = X + diag(s)·F(LN X)``, s = s₀·1 — Touvron et al. 2021 (CaiT), Going
    deeper with Image Transformers, arXiv:2103.17239."""

    def __init__(self, cfg: GeoConfig):
        super().__init__(cfg)
        self.s = nn.Parameter(torch.empty(cfg.d_model))
        self.reset_init(cfg)

    def reset_init(self, cfg):
        """s = s₀·1, s₀ from ``layerscale_init`` or CaiT's depth rule (a depth change re-applies
        it: the views serve shallower stacks from one built deeper)."""
        super().reset_init(cfg)
        with torch.no_grad():
            self.s.fill_(float(cfg.layerscale_init or cait_layerscale_init(cfg.n_layer)))

    def forward(self, x, sublayer):
        self.keep(s=self.s)
        return x + self.s * sublayer(self.ln(x))


@register("deepnorm")
class DeepNorm(_Normed):
    """DeepNorm: ``X' = LN(a·X + F(X))``, a = (2N)^¼, decoder-only — Wang et al. 2022, DeepNet:
    Scaling Transformers to 1,000 Layers, arXiv:2203.00555.

    The FFN, value and output projections are initialised ×b with b = (8N)^−¼, N = layers.
    """

    def __init__(self, cfg: GeoConfig):
        super().__init__(cfg)
        self.reset_init(cfg)

    def reset_init(self, cfg):
        """a = (2N)^¼ from the depth N (re-applied on a depth change, as LayerScale's s₀)."""
        super().reset_init(cfg)
        self.alpha = (2 * cfg.n_layer) ** 0.25

    @staticmethod
    def init_sublayers(cfg, attn, mlp):
        b = (8 * cfg.n_layer) ** -0.25
        d = cfg.d_model
        with torch.no_grad():
            attn.qkv.weight[2 * d :].mul_(b)  # value rows of the fused QKV projection
            attn.proj.weight.mul_(b)
            if mlp is not None:
                mlp.fc.weight.mul_(b)
                mlp.proj.weight.mul_(b)

    def forward(self, x, sublayer):
        return self.ln(self.alpha * x + sublayer(x))


@register("noskip")
class NoSkip(_Normed):
    """No shortcut: ``X' = F(LN X)``; with ``mlp=False`` pure attention, whose token
    representations collapse to rank 1 doubly exponentially with depth — Dong et al. 2021,
    Attention is not all you need: pure attention loses rank doubly exponentially with depth,
    arXiv:2103.03404."""

    def forward(self, x, sublayer):
        return sublayer(self.ln(x))
