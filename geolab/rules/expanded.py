"""DDL's expanded residual state: d_v = 4 columns per token (docs/design.md §3.2).

The official DDL code (github.com/yifanzhang-pro/deep-delta-learning, ``model/DDL-gpt-mha-rope.py``)
keeps, per token, a state matrix X ∈ R^{d×d_v} instead of a d-vector, and wraps each sublayer in
one compress–process–rewrite step:

    c  = compress(X)                       the d-vector the sublayer reads (a causal short
                                           convolution along the sequence, then a read vector)
    k  = F(RMSNorm c)                      the sublayer output is the write direction
    β  = 2σ(w_β · RMSNorm c + b_β)         one gate per token, in (0, 2)
    v  = 4σ(W_v c + b_v) ∈ R^{d_v}         one value per column
    X' = X + β k̂ (vᵀ − k̂ᵀX)               the Delta update, arXiv:2601.00417 §2.1, Eq. (2.2)

The embedding is copied into the d_v columns (``geolab.operators.state_expand``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from torch import nn

from geolab.operators import delta_update_matrix, state_compress, state_expand
from geolab.registry import register
from geolab.rules.base import float32_gates, upcast
from geolab.rules.delta import DDLGates

if TYPE_CHECKING:
    from geolab.config import GeoConfig

VALUE_COLUMNS = 4  # d_v: the official code's default ``ddl_value_channels``
SHORT_CONV = 4  # K: its default ``ddl_state_shortconv_kernel_size``


@register("ddl_state")
class DDLState(DDLGates):
    """DDL with its expanded state, d_v = 4: ``X' = X + β k (vᵀ − kᵀX)``, X ∈ R^{d×4} per token,
    k = F(RMSNorm(compress X)) — Zhang et al. 2026, Deep Delta Learning, arXiv:2601.00417.

    The Delta update of arXiv:2601.00417 §2.1, Eq. (2.2) (its operator A = I − β k kᵀ is
    Eq. (2.1)) on a matrix state, with the compress–process–rewrite step of the official code,
    github.com/yifanzhang-pro/deep-delta-learning, ``model/DDL-gpt-mha-rope.py``
    (``ResidualShortConvCompressor``, ``DeepDeltaResidualExpanded``, ``Block``):
    c = Σ_j r_j conv_K(X)[:, j] (``geolab.operators.state_compress``: a causal depthwise
    convolution of K = 4 taps along the sequence, then a read vector r), k = F(RMSNorm c) with
    k̂ = k/‖k‖, β = 2σ(w_β·RMSNorm c + b_β), v = 4σ(W_v c + b_v) ∈ R^4 (v reads the compressed
    c before its norm, as the official ``v_in``). Causal: position t reads X at t−3 … t only.

    Init: the official's conv weights ~ N(0, (0.5/√d)²) (its ``init_gpt_weights`` on every
    matrix) and r = 1/d_v; the gates as ``ddl`` (w_β = 0 and b_β = logit(β₀/2), β₀ = 1, so β
    starts at β₀; W_v ~ N(0, 0.02²), b_v = 0), so it differs from ``ddl`` by the state alone.
    Two departures from the official, both geolab's: each residual step has its own compressor
    (the official block shares one between its attention and MLP steps), and the final state is
    read out as the mean of its d_v columns (``merge``; the official reads it with one more
    learned compressor). Parameters per step: d (norm) + 16d + 4 (conv, read) + d + 1 (w_β, b_β)
    + 4d + 4 (W_v, b_v) = 22d + 9, against ``ddl``'s 3d + 2.
    Shapes: state (B, S, D, 4); the sublayer maps (B, S, D) -> (B, S, D).
    """

    values = VALUE_COLUMNS

    def __init__(self, cfg: GeoConfig):
        super().__init__(cfg)
        d = cfg.d_model
        self.conv = nn.Parameter(torch.empty(d, VALUE_COLUMNS, SHORT_CONV))
        nn.init.normal_(self.conv, std=0.5 / math.sqrt(d))
        self.read = nn.Parameter(torch.full((VALUE_COLUMNS,), 1 / VALUE_COLUMNS))

    @staticmethod
    def expand(h, cfg):
        """Embedding (B, S, D) -> state (B, S, D, d_v): the token copied into every column."""
        return state_expand(h, VALUE_COLUMNS)

    @staticmethod
    def merge(h):
        """State (B, S, D, d_v) -> (B, S, D): the mean of the columns (geolab's read-out)."""
        return h.mean(-1)

    def forward(self, x, sublayer):
        c = state_compress(x, self.conv.to(x.dtype), self.read.to(x.dtype))
        cn = self.norm(c)
        k = sublayer(cn)
        with float32_gates(x):
            beta = 2 * torch.sigmoid(self.w_beta(upcast(cn))).squeeze(-1)
            v = 4 * torch.sigmoid(self.w_v(upcast(c)))
            out = delta_update_matrix(upcast(x), upcast(k), beta, v)
        self.keep(beta=beta, v=v)
        return out.to(x.dtype)
