"""The E∆ table's models rebuilt as the public E∆ code builds them: ``flavor="reference"``.

Source: the E∆-MHC-Geo paper's public code (github arash-shahmansoori/edelta, ``src/models/``
and ``src/training/train_continuous.py``), read and re-measured, not copied; docs/design.md §12
lists every difference from geolab's own rules and why it matters. What all five share:
sublayers and norms without biases, every linear map drawn from N(0, 0.02) with zero bias (the
reference's global init, which also overwrites the identity init its E∆ block asks for), GPT-2's
scaled output projections.

``ddl`` and ``edelta`` compute their operators from the mean over the *whole sequence*, as the
reference does, so token t depends on tokens after t: these models are not causal, and a
next-step predictor built from them can read its answer. ``preln`` (the reference's GPT),
``mhc`` and ``jpmhc`` are causal.

State: (B, S, D) for every model; the stream models view it as n streams of D/n.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from geolab.layers import init_linear, make_norm, rms_norm_linear
from geolab.mixing import sinkhorn
from geolab.operators import delta_update, fixed_point_cayley, gate_regularizer, hybrid_operator
from geolab.registry import config_error, register
from geolab.rules.base import Rule, check_divides, float32_gates, logit, upcast
from geolab.rules.streams import JPmHC

if TYPE_CHECKING:
    from geolab.config import GeoConfig

# What differs between the two flavors, for readers (notebook 07, reports); docs/design.md §12
# has the full table with why each difference matters.
DIFFERENCES = (
    ("causality", "DDL and E∆ read the mean over the whole sequence: not causal", "causal"),
    ("E∆ operator", "one per sequence, on n = 4 streams of D/n, dense Cayley", "per token, rank-2 "
     "Cayley on the full width D, closed form"),
    ("E∆ H_pre, H_post", "N(0, 0.02²) (its global init overwrites the identity)", "identity"),
    ("E∆ regulariser", "its gradient reaches the state", "its gradient stops at the gate"),
    ("DDL", "Delta operator on the state before the sublayer, no value write", "the official "
     "DDL: the sublayer output is k, a value is written back"),
    ("mHC", "D split into n streams; b_res = 2I; Sinkhorn rows first", "n copies of D; H_res ≈ I"),
    ("JPmHC", "n×n H_pre / H_post; Y₀ = I + aW", "vector H_pre / H_post; Y₀ = I"),
    ("blocks", "no biases in attention, MLP, norms", "biases"),
    ("trainer", "AdamW β₂ 0.95, warm-up from 0, 100 random validation batches", "β₂ 0.999, "
     "warm-up from lr/w, one full validation pass"),
    ("gyroscope / echo draws", "one numpy stream; plane i uniform, then j > i", "a torch stream "
     "per split; plane a uniform pair"),
    ("data seeding", "each data set drawn once with seed 42; only the training seed varies",
     "the data drawn from the training seed (the reference flavor follows the public code)"),
    ("batch streams", "training and evaluation batches from one global torch stream",
     "the training and validation batches from separate generators"),
)  # fmt: skip
HIDDEN_RATIO = 4  # the reference's parameter networks: D → D/4 → out, GELU
SINKHORN_ITERS = 20
MHC_ALPHA0 = 0.01
MHC_RES_BIAS = 2.0  # b_res = 2·I
JPMHC_A, JPMHC_ITERS = 0.1, 2


def _mlp(d: int, out: int) -> nn.Sequential:
    """The reference's parameter network: Linear(D, D/4) → GELU → Linear(D/4, out), N(0, 0.02)."""
    hidden = d // HIDDEN_RATIO
    net = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, out))
    for lin in (net[0], net[2]):
        init_linear(lin, 0.02)
    return net


def _linear(d_in: int, d_out: int, bias: bool = False) -> nn.Linear:
    lin = nn.Linear(d_in, d_out, bias=bias)
    init_linear(lin, 0.02)
    return lin


class _Reference(Rule):
    """What every reference model fixes: vector input, learned positions, LayerNorm, an MLP."""

    @staticmethod
    def check(cfg: GeoConfig) -> None:
        if cfg.vocab_size is not None:
            raise config_error(
                "vocab_size", cfg.vocab_size, "flavor='reference' builds vector models (d_in/d_out)"
            )
        for name, value in (
            ("pos", "learned"),
            ("norm", "layernorm"),
            ("mlp", True),
            ("d_mlp", None),  # its MLPs are 4 × wide
        ):
            if getattr(cfg, name) != value:
                raise config_error(name, getattr(cfg, name), f"flavor='reference' uses {value!r}")


@register("preln", flavor="reference")
class RefGPT(_Reference):
    """The reference's GPT: ``X' = X + F(LN X)``, LN without a shift, no biases — a pre-LN block."""

    def __init__(self, cfg: GeoConfig):
        super().__init__(cfg)
        self.ln = make_norm(cfg.norm, cfg.d_model, bias=False)

    def forward(self, x, sublayer):
        return x + sublayer(self.ln(x))


@register("ddl", flavor="reference")
class RefDDL(_Reference):
    """The reference's "DDL": ``X̃ = X − β k̂ (k̂ᵀX)``, then ``X' = X̃ + F(LN X̃)`` (not causal).

    k = MLP(x̄) ∈ R^D and β = 2σ(MLP(x̄)) from the sequence mean x̄: the Delta operator A(k, β) of
    Zhang et al. applied to the state *before* the sublayer, with no value write — unlike
    geolab's ``ddl``, which follows the official DDL code (the sublayer output is the direction
    and a value v is written back).
    """

    def __init__(self, cfg: GeoConfig):
        super().__init__(cfg)
        d = cfg.d_model
        self.k_net = _mlp(d, d)
        self.beta_net = _mlp(d, 1)
        self.ln = make_norm(cfg.norm, d, bias=False)

    def forward(self, x, sublayer):
        with float32_gates(x):
            pooled = upcast(x).mean(dim=-2, keepdim=True)
            k = self.k_net(pooled)
            beta = 2 * torch.sigmoid(self.beta_net(pooled)).squeeze(-1)
            xd = delta_update(upcast(x), k, beta, 0.0).to(x.dtype)
        self.keep(beta=beta)
        return xd + sublayer(self.ln(xd))


@register("edelta", flavor="reference")
class RefEDelta(_Reference):
    """The reference's E∆-MHC-Geo: ``X' = G X + H_post F(H_pre LN(G X))`` on n streams (not causal).

    From the sequence mean x̄, four separate networks give u, v, k ∈ R^n and β = softplus(·),
    and γ = σ(w_γ·x̄ + b_γ) (w_γ = 0, b_γ = logit(γ₀)): one operator per sequence,
    ``G = γ Q + (1 − γ) H₂(k)`` with the dense n×n Cayley Q, acting on the stream axis of X
    viewed as (n, D/n). H_pre, H_post are D×D maps drawn from N(0, 0.02): the reference asks
    for identity and its global init overwrites it. The regulariser ``4γ(1−γ)`` reaches the
    state through x̄, as in the reference.
    """

    init_fields = ("gamma0",)

    def __init__(self, cfg: GeoConfig):
        super().__init__(cfg)
        d, n = cfg.d_model, cfg.n_streams
        self.n = n
        self.u_net, self.v_net, self.k_net = _mlp(d, n), _mlp(d, n), _mlp(d, n)
        self.beta_net = _mlp(d, 1)
        self.gate = nn.Linear(d, 1)
        nn.init.zeros_(self.gate.weight)
        self.ln = make_norm(cfg.norm, d, bias=False)
        self.h_pre, self.h_post = _linear(d, d), _linear(d, d)
        self.reset_init(cfg)

    @staticmethod
    def check(cfg):
        _Reference.check(cfg)
        check_divides(cfg, cfg.n_streams)

    def reset_init(self, cfg):
        """b_γ = logit(γ₀): with w_γ = 0 every sequence's gate starts at γ₀."""
        super().reset_init(cfg)
        with torch.no_grad():
            self.gate.bias.fill_(logit(cfg.gamma0))

    def forward(self, x, sublayer):
        with float32_gates(x):
            pooled = upcast(x).mean(dim=-2)  # (B, D): one operator per sequence
            beta = F.softplus(self.beta_net(pooled)).squeeze(-1)
            k = F.normalize(self.k_net(pooled), dim=-1)
            gamma = torch.sigmoid(self.gate(pooled)).squeeze(-1)
            op = hybrid_operator(self.u_net(pooled), self.v_net(pooled), k, beta, gamma)
            streams = upcast(x).unflatten(-1, (self.n, -1))  # (B, S, n, D/n)
            y = torch.einsum("bij,bsjd->bsid", op, streams).flatten(-2).to(x.dtype)
        self.keep(beta=beta, gamma=gamma)
        self.reg = gate_regularizer(gamma).mean()
        return y + self.h_post(sublayer(self.h_pre(self.ln(y))))


@register("mhc", flavor="reference")
class RefMHC(_Reference):
    """The reference's mHC: ``X' = H_res X + H_post ⊙ F(LN(tile(H_pre X)))`` on n streams of D/n.

    Per token, x̃ = RMSNorm(x) (ε = 1e-6): H_pre = σ(α_pre x̃φ_pre + b_pre), H_post =
    2σ(α_post x̃φ_post + b_post) ∈ R^n, H_res = Sinkhorn(α_res mat(x̃φ_res) + b_res) (rows
    normalised first, 20 rounds). The aggregated stream H_pre X ∈ R^{D/n} is tiled n times back
    to width D for the sublayer, whose output is split into n streams and scaled by H_post.
    Init: φ ~ N(0, 0.02), α's 0.01, b_pre = b_post = 0 (H_pre ≈ ½, H_post ≈ 1), b_res = 2·I.
    Unlike geolab's ``mhc``, the streams split D instead of copying it.
    """

    def __init__(self, cfg: GeoConfig):
        super().__init__(cfg)
        d, n = cfg.d_model, cfg.n_streams
        self.n = n
        self.norm_in = nn.RMSNorm(d, eps=1e-6)
        self.phi = _linear(d, 2 * n + n * n)  # [φ_pre | φ_post | φ_res]
        self.alpha = nn.Parameter(torch.full((3,), MHC_ALPHA0))
        self.b_pre, self.b_post = nn.Parameter(torch.zeros(n)), nn.Parameter(torch.zeros(n))
        self.b_res = nn.Parameter(MHC_RES_BIAS * torch.eye(n))
        self.ln = make_norm(cfg.norm, d, bias=False)

    @staticmethod
    def check(cfg):
        _Reference.check(cfg)
        check_divides(cfg, cfg.n_streams)

    def forward(self, x, sublayer):
        n = self.n
        with float32_gates(x):
            z = rms_norm_linear(upcast(x), self.norm_in, self.phi)
            h_pre = torch.sigmoid(self.alpha[0] * z[..., :n] + self.b_pre)
            h_post = 2 * torch.sigmoid(self.alpha[1] * z[..., n : 2 * n] + self.b_post)
            logits = self.alpha[2] * z[..., 2 * n :].unflatten(-1, (n, n)) + self.b_res
            # geolab's sinkhorn normalises columns first; on the transpose that is rows first.
            h_res = sinkhorn(logits.mT, SINKHORN_ITERS).mT
        self.keep(H_pre=h_pre, H_post=h_post, H_res=h_res)
        streams = x.unflatten(-1, (n, -1))
        agg = torch.einsum("...i,...id->...d", h_pre.to(x.dtype), streams)
        f = sublayer(self.ln(agg.tile(n))).unflatten(-1, (n, -1))
        mixed = torch.einsum("...ij,...jd->...id", h_res.to(x.dtype), streams)
        return (mixed + h_post.to(x.dtype).unsqueeze(-1) * f).flatten(-2)


@register("jpmhc", flavor="reference")
class RefJPmHC(_Reference):
    """The reference's JPmHC: ``X' = Y X + H_post (F(LN(mean_i (H_pre X)_i)) ⊗ 1_n)``.

    Per token, ``[H̃_pre | H̃_post | H̃_res] = W·LN(x)`` (LN with scale and shift, W ~ N(0, 0.02),
    bias 0): H_pre = row softmax and H_post = column softmax, both n×n; Y from the fixed-point
    Cayley iteration ``Y ← I + (a/2) W_s (I + Y)`` started at Y₀ = I + a·W_s (a = 0.1, two
    rounds), W_s = H̃_res − H̃_resᵀ. The sublayer runs once, at width D/n, on the mean of the
    mixed streams, and is added unscaled through H_post's row sums.
    """

    def __init__(self, cfg: GeoConfig):
        super().__init__(cfg)
        d, n = cfg.d_model, cfg.n_streams
        self.n = n
        self.ln_in = nn.LayerNorm(d)
        self.w = _linear(d, 3 * n * n, bias=True)
        self.ln = make_norm(cfg.norm, d // n, bias=False)

    # Its sublayers run at width D/n, as in geolab's jpmhc: the same shape rules.
    sublayer_width = staticmethod(JPmHC.sublayer_width)
    d_model_step = staticmethod(JPmHC.d_model_step)

    @staticmethod
    def check(cfg):
        _Reference.check(cfg)
        JPmHC.check(cfg)

    def forward(self, x, sublayer):
        n = self.n
        with float32_gates(x):
            z = self.w(self.ln_in(upcast(x))).unflatten(-1, (3, n, n))
            h_pre = torch.softmax(z[..., 0, :, :], dim=-1)
            h_post = torch.softmax(z[..., 1, :, :], dim=-2)
            w_s = z[..., 2, :, :] - z[..., 2, :, :].mT
            eye = torch.eye(n, device=x.device, dtype=z.dtype)
            y = fixed_point_cayley(w_s, JPMHC_A, JPMHC_ITERS, start=eye + JPMHC_A * w_s)
        self.keep(H_pre=h_pre, H_post=h_post, H_res=y)
        streams = x.unflatten(-1, (n, -1))
        agg = torch.einsum("...ij,...jd->...id", h_pre.to(x.dtype), streams).mean(-2)
        f = sublayer(self.ln(agg))
        mixed = torch.einsum("...ij,...jd->...id", y.to(x.dtype), streams)
        return (mixed + h_post.sum(-1).to(x.dtype).unsqueeze(-1) * f.unsqueeze(-2)).flatten(-2)
