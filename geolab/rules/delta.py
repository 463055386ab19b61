"""The Delta family: MGT's gated updates (Su & You 2026, Eq. 5–7, Algorithm 1), DDL (d_v = 1)
and DDL's write-only control ``ddl_write`` (its update without the erase term).

MGT (Algorithm 1), elementwise over the width D:
    V_raw  = F(LN X)
    V_mHC  = V_raw ⊙ σ(LN(X W_gate))             soft tangent gate, Eq. 5
    β      = λ·tanh(X W_β + b_β) + ε             Delta controller, Eq. 6
    X'     = X + β ⊙ (V_mHC − α X)               update, Eq. 7
Both gates read the raw state X (not LN X); only the sublayer reads LN X. The ablations drop one
gate: ``mgt_mhc`` keeps the tangent gate only (X + V_mHC), ``mgt_ddl`` the controller only.
Defaults (docs/design.md §3.1, geolab's own — the paper gives none): λ = 1, ε = 0, α₀ = 0.1
learnable, W_β = 0 and b_β = atanh((β₀ − ε)/λ) with β₀ = 0.5 so every token starts at β₀,
W_gate ~ N(0, 0.02).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from torch import nn

from geolab.layers import make_norm
from geolab.registry import config_error, register
from geolab.rules.base import Rule, float32_gates, logit, upcast

if TYPE_CHECKING:
    from geolab.config import GeoConfig


class _MGTBlock(Rule):
    """Shared body of ``mgt_mhc``, ``mgt_ddl`` and ``mgt``; ``tangent``/``delta`` pick the gates."""

    tangent = True
    delta = True

    def __init__(self, cfg: GeoConfig):
        super().__init__(cfg)
        d = cfg.d_model
        self.ln = make_norm(cfg.norm, d)
        if self.tangent:
            self.w_gate = nn.Linear(d, d, bias=False)
            nn.init.normal_(self.w_gate.weight, std=0.02)
            self.ln_gate = make_norm(cfg.norm, d)
        if self.delta:
            self.w_beta = nn.Linear(d, d)
            nn.init.zeros_(self.w_beta.weight)
            self.alpha = nn.Parameter(torch.empty(()))
            # λ and ε again as a tensor: a compiled step reads them as inputs, so a slider
            # move reuses its graph (Python numbers would be guarded on and recompiled).
            self.register_buffer("lam_eps", torch.empty(2), persistent=False)
            self.reset_init(cfg)

    @classmethod
    def check(cls, cfg):
        # The whole family shares the controller's convention, so β₀ is checked even where
        # the tangent-only ablation leaves it unread.
        low, high = -cfg.lam + cfg.eps, cfg.lam + cfg.eps
        if cfg.beta0 is not None and not low < cfg.beta0 < high:
            raise config_error(
                "beta0", cfg.beta0, f"MGT's β = λ·tanh(·)+ε needs β₀ in ({low:g}, {high:g})"
            )
        if cls.delta:
            check_growth(cfg)

    @classmethod
    def beta_range(cls, cfg):
        """β = λ·tanh(·) + ε lives in (−λ+ε, λ+ε) (Eq. 6); None without the controller."""
        return (-cfg.lam + cfg.eps, cfg.lam + cfg.eps) if cls.delta else None

    def reset_init(self, cfg):
        """b_β = atanh((β₀ − ε)/λ) so β starts at β₀ (W_β = 0), α = α₀."""
        super().reset_init(cfg)
        if not self.delta:
            return
        beta0 = 0.5 if cfg.beta0 is None else cfg.beta0
        self.plain(lam=cfg.lam, eps=cfg.eps)
        with torch.no_grad():
            self.w_beta.bias.fill_(math.atanh((beta0 - cfg.eps) / cfg.lam))
            self.alpha.fill_(cfg.alpha0)
            self.lam_eps.copy_(torch.tensor([cfg.lam, cfg.eps]))

    def forward(self, x, sublayer):
        v = sublayer(self.ln(x))
        gates = {}
        with float32_gates(x):
            xf = upcast(x)
            if self.tangent:
                gate = torch.sigmoid(self.ln_gate(self.w_gate(xf)))
                v = v * gate.to(v.dtype)
                gates["gate"] = gate
            if self.delta:
                beta = torch.tanh(self.w_beta(xf))
                if torch.compiler.is_compiling():  # λ·β + ε with λ = 1, ε = 0 is β exactly
                    beta = self.lam_eps[0] * beta + self.lam_eps[1]
                elif (self.lam, self.eps) != (1.0, 0.0):  # the default is exact as is
                    beta = self.lam * beta + self.eps
                gates.update(beta=beta, alpha=self.alpha)
        self.keep(**gates)
        if not self.delta:
            return x + v
        # x + β ⊙ (v − α x) as two fused multiply-adds (one pass over (B, S, D) each).
        inner = torch.addcmul(v, x, self.alpha.to(x.dtype), value=-1)
        return torch.addcmul(x, beta.to(x.dtype), inner)


# The largest factor by which an MGT stack may scale the residual stream at init. LayerNorm
# squares the state, so float32 (max 3.4e38) overflows once entries pass ~1.8e19; embeddings
# start near 0.02, and at 04's sizes the states turn NaN at growth ≈ 2e21–5e21 (measured):
# 1e15 leaves a margin of 1e6.
MAX_INIT_GROWTH = 1e15


def check_growth(cfg: GeoConfig) -> None:
    """Refuse an MGT config whose stack overflows float32 at init.

    At init β = β₀ on every token (W_β = 0) and α = α₀, so each step is
    X' = (1 − α₀β₀) X + β₀ V: the old state is scaled by r = 1 − α₀β₀ per residual step, by
    |r|^{n_steps} through the stack. |r| ≤ 1 for 0 ≤ α₀β₀ ≤ 2 (MGT's defaults: r = 0.95); a
    negative β₀ (or α₀β₀ > 2) makes it grow geometrically with depth.
    """
    beta0 = 0.5 if cfg.beta0 is None else cfg.beta0
    r = abs(1 - cfg.alpha0 * beta0)
    if r <= 1 or cfg.n_steps * math.log10(r) <= math.log10(MAX_INIT_GROWTH):
        return
    raise config_error(
        "beta0",
        beta0,
        f"with alpha0={cfg.alpha0:g} and {cfg.n_steps} residual steps the stream grows by "
        f"|1 − α₀β₀|^steps = {r:.3g}^{cfg.n_steps} = 1e{cfg.n_steps * math.log10(r):.0f} at init "
        f"and overflows float32; allowed: |1 − α₀β₀|^steps <= {MAX_INIT_GROWTH:.0e} "
        "(fewer layers, β₀ >= 0 or a smaller α₀)",
    )


@register("mgt_mhc")
class MGTmHC(_MGTBlock):
    """MGT ablation "+mHC only": ``X' = X + F(LN X) ⊙ σ(LN(X W_gate))`` — Su & You 2026, Geometric
    and Dynamic Scaling in Deep Transformers, arXiv:2601.01014, Eq. 5, §3."""

    tangent, delta = True, False


@register("mgt_ddl")
class MGTDDL(_MGTBlock):
    """MGT ablation "+DDL only": ``X' = X + β ⊙ (F(LN X) − α X)`` — Su & You 2026, Geometric and
    Dynamic Scaling in Deep Transformers, arXiv:2601.01014, Eq. 6–7, §3."""

    tangent, delta = False, True
    init_fields = ("beta0", "lam", "eps", "alpha0")


@register("mgt")
class MGT(_MGTBlock):
    """MGT full: ``X' = X + β ⊙ (F(LN X) ⊙ σ(LN(X W_gate)) − α X)`` — Su & You 2026, Geometric
    and Dynamic Scaling in Deep Transformers, arXiv:2601.01014, Algorithm 1, §3."""

    tangent, delta = True, True
    init_fields = ("beta0", "lam", "eps", "alpha0")


class DDLGates(Rule):
    """DDL's gates, shared by ``ddl``, ``ddl_write`` and ``ddl_state``: the sublayer's norm, the
    gate β = 2σ(w_β·RMSNorm(·) + b_β) and ``values`` written values v = 4σ(W_v·(·) + b_v).

    Init (geolab's, docs/design.md §3.2): w_β = 0 and b_β = logit(β₀/2), β₀ = 1 by default, so β
    starts exactly at β₀; W_v ~ N(0, 0.02²), b_v = 0 so every v starts near 2.
    """

    values = 1  # d_v, the number of written values per token

    def __init__(self, cfg: GeoConfig):
        super().__init__(cfg)
        d = cfg.d_model
        beta0 = 1.0 if cfg.beta0 is None else cfg.beta0
        self.norm = nn.RMSNorm(d)
        self.w_beta = nn.Linear(d, 1)
        nn.init.zeros_(self.w_beta.weight)
        nn.init.constant_(self.w_beta.bias, logit(beta0 / 2))
        self.w_v = nn.Linear(d, self.values)
        nn.init.normal_(self.w_v.weight, std=0.02)
        nn.init.zeros_(self.w_v.bias)

    @staticmethod
    def check(cfg):
        if cfg.beta0 is not None and not 0 < cfg.beta0 < 2:
            raise config_error(
                "beta0",
                cfg.beta0,
                f"{cfg.residual}'s β = 2σ(·) needs β₀ in the open interval (0, 2)",
            )

    @staticmethod
    def beta_range(cfg):
        """β = 2σ(·) lives in (0, 2)."""
        return 0.0, 2.0


@register("ddl")
class DDL(DDLGates):
    """Deep Delta Learning, d_v = 1: ``x' = x + β (v − kᵀx) k`` per token, as in the official code
    — Zhang et al. 2026, Deep Delta Learning, arXiv:2601.00417.

    k = F(RMSNorm x)/‖F(RMSNorm x)‖ (the sublayer output is the direction),
    β = 2σ(w_β·RMSNorm(x) + b_β) with b_β = logit(β₀/2), β₀ = 1 (β ∈ (0, 2): identity → erasure
    → reflection), v = 4σ(w_v·x + b_v) a scalar per token read from the raw state
    (docs/design.md §3.2). DDL always uses RMSNorm, as its code does. geolab's choices: w_β = 0
    so β starts exactly at β₀; w_v ~ N(0, 0.02), b_v = 0 so v starts near 2.
    """

    erase = True  # the −β (kᵀx) k term; ``ddl_write`` sets it False

    def forward(self, x, sublayer):
        xn = self.norm(x)
        k = sublayer(xn)
        with float32_gates(x):
            beta = 2 * torch.sigmoid(self.w_beta(upcast(xn))).squeeze(-1)
            v = 4 * torch.sigmoid(self.w_v(upcast(x))).squeeze(-1)
            # x + β(v − k̂·x)k̂ with k̂ = k/n, n = max(‖k‖, 1e-12) (F.normalize's k̂), written
            # as x + β(v − (k·x)/n)/n · k: two dot products and one fused multiply-add over
            # (B, S, D), no normalised copy of k. `ddl_write` drops the erased (k·x)/n.
            xf, kf = upcast(x), upcast(k)
            n = torch.linalg.vecdot(kf, kf).sqrt().clamp_min(1e-12)
            inner = v - torch.linalg.vecdot(kf, xf) / n if self.erase else v
            coeff = (beta * inner / n).unsqueeze(-1)
            out = torch.addcmul(xf, coeff, kf)
        self.keep(beta=beta, v=v)
        return out.to(x.dtype)


@register("ddl_write")
class DDLWrite(DDL):
    """DDL's write without its erase term (the write-only control), d_v = 1: ``x' = x + β v k``
    per token — Zhang et al. 2026, Deep Delta Learning, arXiv:2601.00417.

    DDL's update is X' = X + β k (vᵀ − kᵀX) (arXiv:2601.00417 §2.1, Eq. (2.2), with the Delta
    operator A = I − β k kᵀ of Eq. (2.1)); this rule keeps the write β k vᵀ and removes the erasure
    −β k kᵀX, so the shortcut is the plain identity and β only scales what is written: the
    write-only control of issue 54, which tells what DDL's erasure adds. Same
    parameters, gates and initialisation as ``ddl`` (k = F(RMSNorm x)/‖·‖, β = 2σ(·) from
    RMSNorm x with β₀ = 1, v = 4σ(w_v·x + b_v) from the raw x; 3D + 2 parameters per step), so
    the two differ by the erase term alone. Shapes as ``ddl``: x (B, S, D) -> (B, S, D);
    ``geolab.operators.delta_write`` is the same update as a pure function.
    """

    erase = False
