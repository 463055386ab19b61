"""The E∆-MHC-Geo family: a geometric shortcut, then a mapped sublayer (docs/design.md §3.5).

Source: Shahmansoori 2026.

Per residual step and token t:
  1. u_t, v_t, k_t, β_t from a small MLP of x_t (hidden D/4, GELU; one hidden layer shared by the
     heads — geolab's choice, which lands the six-layer D = 128 model at the paper's ≈1.79M
     parameters), β = softplus(·), k normalised, and the gate γ_t = σ(w_γ·x_t + b_γ) with w_γ = 0
     and b_γ = logit(γ₀), γ₀ = ½: exactly where E∆ Theorem 7.3 says the regulariser is flat.
     Geometric shortcut ``Y = G_γ X = γ Q(u, v, β) X + (1 − γ) H₂(k) X``.
  2. ``X' = Y + H_post F(H_pre LN(Y))``, H_pre and H_post D×D linear maps initialised to I.
  3. The loss adds ``reg_weight · mean 4γ(1−γ)`` summed over operators (``rule.reg`` holds the
     mean of this step; the model sums and weights them). The regulariser trains the gate, not
     the state the gate reads: its γ is the same number computed from the detached state, so
     its gradient reaches w_γ and b_γ but not the residual stream (geolab's choice; the public
     code lets it through). Let through, it gives the optimiser a cheaper way to push every
     4γ(1−γ) to 0 than deciding: grow one direction of the state until |w_γ·x| is large for
     every token. Measured on gyroscope (4 layers, D = 64, 120 steps, batch 8): the
     regulariser fell 0.80 → 0.08 while 97% of the state's norm (160, from ≈1 at init) came
     to lie along w_γ, the same vector in every token, and the validation MSE rose to the
     predict-zero 1/16 (docs/design.md §3.5).

``geometry="full"`` (default, geolab's own): u, v, k ∈ R^D and the rank-2 Cayley acts on the
whole width through the O(D) closed form. ``geometry="streams"``: u, v, k ∈ R^n, X is viewed as
n streams of D/n and the dense n×n Q and H₂ act on the stream axis (the reference layout).
``pool="sequence"`` computes u, v, k, β, γ from the mean over the whole sequence, as the
reference does; it lets token t see tokens after t, so it warns.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from geolab.layers import make_norm
from geolab.operators import (
    cayley,
    cayley_apply,
    gate_regularizer,
    householder,
    householder_apply,
    hybrid_apply,
    hybrid_operator,
    skew,
)
from geolab.registry import config_error, register
from geolab.rules.base import Rule, check_divides, float32_gates, logit, upcast

if TYPE_CHECKING:
    from geolab.config import GeoConfig

POOL_WARNING = (
    "pool='sequence' computes the geometric gates from the mean over the whole sequence, so "
    "token t sees tokens after t: next-step prediction becomes non-causal. Use pool='token' "
    "unless you are reproducing the reference implementation."
)


class _Geometric(Rule):
    """Shared body; ``mode`` is "hybrid" (edelta), "rotation" (cayley) or "reflection"."""

    mode = "hybrid"

    def __init__(self, cfg: GeoConfig):
        super().__init__(cfg)
        d = cfg.d_model
        self.streams = cfg.geometry == "streams"
        self.pool = cfg.pool
        if cfg.pool == "sequence":
            warnings.warn(POOL_WARNING, UserWarning, stacklevel=2)
        g = cfg.n_streams if self.streams else d
        heads = {"rotation": 2 * g + 1, "reflection": g, "hybrid": 3 * g + 1}[self.mode]
        self.g = g
        self.trunk = nn.Linear(d, d // 4)
        self.heads = nn.Linear(d // 4, heads)
        for lin in (self.trunk, self.heads):
            nn.init.normal_(lin.weight, std=0.02)
            nn.init.zeros_(lin.bias)
        if self.mode == "hybrid":
            self.w_gamma = nn.Linear(d, 1)
            nn.init.zeros_(self.w_gamma.weight)
        self.ln = make_norm(cfg.norm, d)
        self.h_pre = nn.Linear(d, d, bias=False)
        self.h_post = nn.Linear(d, d, bias=False)
        nn.init.eye_(self.h_pre.weight)
        nn.init.eye_(self.h_post.weight)
        self.reset_init(cfg)

    @staticmethod
    def check(cfg):
        if cfg.geometry == "streams":
            if cfg.n_streams < 2:
                raise config_error(
                    "n_streams", cfg.n_streams, "geometry='streams' needs at least 2 streams"
                )
            check_divides(cfg, cfg.n_streams)

    @staticmethod
    def d_model_step(cfg):
        if cfg.geometry == "streams":
            return math.lcm(cfg.n_head, cfg.n_streams)
        return cfg.n_head

    def reset_init(self, cfg):
        """b_γ = logit(γ₀), so with w_γ = 0 the gate starts at γ₀ (hybrid only)."""
        super().reset_init(cfg)
        if self.mode == "hybrid":
            with torch.no_grad():
                self.w_gamma.bias.fill_(logit(cfg.gamma0))

    def _geometry(self, x: torch.Tensor):
        """u, v, k (…, g; k unnormalised), β, γ (…) from the (pooled) raw state, in float32."""
        src = x.mean(dim=-2, keepdim=True).expand_as(x) if self.pool == "sequence" else x
        src = upcast(src)
        out = self.heads(F.gelu(self.trunk(src)))
        g = self.g
        u = v = k = beta = gamma = None
        if self.mode == "reflection":
            k = out
        else:
            # One split, not four slices: a slice's backward writes its gradient into a zeroed
            # copy of the whole (…, 3g + 1) output and the copies are summed; a split's is one
            # concatenation (same values).
            sizes = [g, g, 1, g] if self.mode == "hybrid" else [g, g, 1]
            u, v, b, *rest = out.split(sizes, -1)
            beta = F.softplus(b.squeeze(-1))
            if self.mode == "hybrid":
                (k,) = rest
        # k stays unnormalised: every operator below uses only k̂ = k/‖k‖ and normalises it
        # itself (overflow-safe), so a normalisation here would be a second pass for nothing.
        if self.mode == "hybrid":
            gamma = torch.sigmoid(self.w_gamma(src)).squeeze(-1)
        return u, v, k, beta, gamma

    def _shortcut(self, x, u, v, k, beta, gamma):
        """Y = γ Q X + (1 − γ) H₂ X, per token (full) or on the stream axis (streams)."""
        if not self.streams:
            if self.mode == "rotation":
                return cayley_apply(x, u, v, beta)
            if self.mode == "reflection":
                return householder_apply(x, k)
            return hybrid_apply(x, u, v, k, beta, gamma)
        if self.mode == "rotation":
            op = cayley(skew(u, v), beta)
        elif self.mode == "reflection":
            op = householder(k)
        else:
            op = hybrid_operator(u, v, k, beta, gamma)
        return (op @ x.unflatten(-1, (self.g, -1))).flatten(-2)

    def _gate_for_regulariser(self, x: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
        """γ again, from the detached state: the regulariser's gradient stops at w_γ and b_γ.
        Without a graph (per token) that is ``gamma`` itself, the same numbers."""
        if not torch.is_grad_enabled() and self.pool == "token":
            return gamma
        src = x.detach().mean(dim=-2, keepdim=True) if self.pool == "sequence" else x.detach()
        return torch.sigmoid(self.w_gamma(upcast(src))).squeeze(-1)

    def forward(self, x, sublayer):
        with float32_gates(x):
            u, v, k, beta, gamma = self._geometry(x)
            y = self._shortcut(upcast(x), u, v, k, beta, gamma).to(x.dtype)
            reg = None if gamma is None else gate_regularizer(self._gate_for_regulariser(x, gamma))
        gates = {name: t for name, t in (("beta", beta), ("gamma", gamma)) if t is not None}
        self.keep(**gates)
        self.reg = None if reg is None else reg.mean()
        return y + self.h_post(sublayer(self.h_pre(self.ln(y))))


@register("cayley")
class Cayley(_Geometric):
    """E∆ ablation, rotation only (γ ≡ 1): ``X' = Q X + H_post F(H_pre LN(Q X))`` — Shahmansoori
    2026, The E∆-MHC-Geo Transformer, arXiv:2605.06729."""

    mode = "rotation"


@register("householder")
class Householder(_Geometric):
    """E∆ ablation, reflection only (γ ≡ 0): ``X' = H₂X + H_post F(H_pre LN(H₂X))`` —
    Shahmansoori 2026, The E∆-MHC-Geo Transformer, arXiv:2605.06729."""

    mode = "reflection"


@register("edelta")
class EDelta(_Geometric):
    """E∆-MHC-Geo: ``X' = G_γX + H_post F(H_pre LN(G_γX))``, G_γ = γQ + (1−γ)H₂ — Shahmansoori
    2026, The E∆-MHC-Geo Transformer, arXiv:2605.06729."""

    mode = "hybrid"
    init_fields = ("gamma0",)
