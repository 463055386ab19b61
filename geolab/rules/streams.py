"""Hyper-connections: n parallel residual streams mixed by per-token matrices.

Source: docs/design.md §3.3–3.4.

``hc``  — Hyper-Connections (Zhu et al. 2024): H_res unconstrained.
``mhc`` — Manifold-constrained HC (Xie et al. 2025, DeepSeek): H_res doubly stochastic by
          Sinkhorn, so products over depth keep spectral norm ≤ 1.
``mhc_lite`` — mHC-lite (Yang & Gao 2026): mhc with H_res an exact convex combination of the n!
          permutation matrices instead of 20 Sinkhorn iterations.
``jpmhc`` — JPmHC: an orthogonal H_res by a fixed-point Cayley iteration, streams as a reshape
          of D. No official code exists; this follows the public description (Shahmansoori 2026,
          experiments).

HC/mHC state: (B, S, n, D). The embedding is copied into the n streams and the streams are
summed before the final norm. Per token, with x̃ = RMSNorm(flatten X) ∈ R^{nD}:
    H_pre  = σ(α_pre · x̃ φ_pre + b_pre)                 ∈ R^n
    H_post = 2σ(α_post · x̃ φ_post + b_post)             ∈ R^n
    H_res  = Sinkhorn(α_res · mat(x̃ φ_res) + b_res)     ∈ R^{n×n}   (mhc, 20 iterations)
    H_res  = Σ_k softmax(α_res · x̃ φ_res + b_res)_k P_k  ∈ R^{n×n}   (mhc_lite, k over n! perms)
    X'     = H_res X + H_postᵀ ⊗ F(LN(H_pre X))
Init (geolab's values, docs/design.md §3.3): α's = 0.01, φ ~ N(0, 0.02); b_pre = logit(1/n) so
H_pre ≈ 1/n (H_pre X is then the mean stream, i.e. the embedding itself); b_post = 0 so H_post ≈ 1;
b_res = 0 on the diagonal and −8 off it, so Sinkhorn gives H_res ≈ I (off-diagonal ≈ 3e-4); for
mhc_lite b_res = 0 on the identity permutation and −8 on the others (H_res ≈ I, off-diagonal
≈ 2e-3 at n = 4).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from torch import nn

from geolab.layers import make_norm, rms_norm_linear
from geolab.mixing import birkhoff, permutation_matrices, sinkhorn
from geolab.operators import fixed_point_cayley
from geolab.registry import config_error, register
from geolab.rules.base import Rule, check_divides, float32_gates, logit, upcast

if TYPE_CHECKING:
    from geolab.config import GeoConfig

SINKHORN_ITERS = 20
OFF_DIAGONAL_BIAS = -8.0


class _Streams(Rule):
    """Shared body of ``hc``, ``mhc`` and ``mhc_lite``: H_pre, H_post and the mixing step are
    one copy; ``res_shape(n)`` is the shape of the H_res logits (n×n, or n! for mhc_lite),
    ``res_bias_init(n)`` their static bias at init, and ``mix`` turns them into the mixer."""

    def __init__(self, cfg: GeoConfig):
        super().__init__(cfg)
        n, d = cfg.n_streams, cfg.d_model
        self.n = n
        self.norm_in = nn.RMSNorm(n * d)
        self.ln = make_norm(cfg.norm, d)
        width = 2 * n + math.prod(self.res_shape(n))
        self.phi = nn.Linear(n * d, width, bias=False)  # [φ_pre | φ_post | φ_res]
        nn.init.normal_(self.phi.weight, std=0.02)
        self.alpha = nn.Parameter(torch.full((3,), 0.01))  # α_pre, α_post, α_res
        self.b_pre = nn.Parameter(torch.full((n,), logit(1 / n) if n > 1 else 4.0))
        self.b_post = nn.Parameter(torch.zeros(n))
        self.b_res = nn.Parameter(self.res_bias_init(n))

    @staticmethod
    def res_shape(n):
        return (n, n)

    @staticmethod
    def expand(h, cfg):
        return h.unsqueeze(-2).expand(*h.shape[:-1], cfg.n_streams, h.shape[-1]).contiguous()

    @staticmethod
    def merge(h):
        if h.requires_grad:
            # The sum hands the streams its gradient expanded (stride 0 along n), and the last
            # layer's H_res X product takes such a gradient one matrix at a time: ≈ 10 ms
            # instead of 1 per step at 16 × 64 tokens (profiled). Materialised, it is one bmm.
            h.register_hook(torch.Tensor.contiguous)
        return h.sum(-2)

    def forward(self, x, sublayer):
        n = self.n
        with float32_gates(x):
            z = rms_norm_linear(upcast(x.flatten(-2)), self.norm_in, self.phi)
            a_pre, a_post, a_res = self.alpha
            h_pre = torch.sigmoid(a_pre * z[..., :n] + self.b_pre)
            h_post = 2 * torch.sigmoid(a_post * z[..., n : 2 * n] + self.b_post)
            h_res, extra = self.mix(a_res, z[..., 2 * n :].unflatten(-1, self.res_shape(n)))
        self.keep(H_pre=h_pre, H_post=h_post, H_res=h_res, **extra)
        return _mix_streams(x, h_pre, h_post, h_res, lambda xin: sublayer(self.ln(xin)))


def _mix_streams(x, h_pre, h_post, h_res, f):
    """``H_res X + H_postᵀ ⊗ f(H_pre X)`` on streams X (…, n, d): the read-out, the mixing and
    the write-back as two batched matrix products and one fused multiply-add (no einsum, whose
    permutes and copies cost more than the n×n products themselves at small n)."""
    h_pre, h_post, h_res = (h.to(x.dtype) for h in (h_pre, h_post, h_res))
    fx = f((h_pre.unsqueeze(-2) @ x).squeeze(-2))
    return torch.addcmul(h_res @ x, h_post.unsqueeze(-1), fx.unsqueeze(-2))


@register("hc")
class HC(_Streams):
    """Hyper-Connections: ``X' = H_res X + H_postᵀ ⊗ F(LN(H_pre X))``, H_res unconstrained —
    Zhu et al. 2024, Hyper-Connections, arXiv:2409.19606.

    As in their dynamic HC, ``H_res = B_res + α_res·tanh(mat(x̃ φ_res))``: a learnable static
    B_res (= I at init) plus a tanh-bounded dynamic part."""

    @staticmethod
    def res_bias_init(n):
        return torch.eye(n)

    def mix(self, a_res, z_res):
        return self.b_res + a_res * torch.tanh(z_res), {}


@register("mhc")
class MHC(_Streams):
    """mHC: ``X' = H_res X + H_postᵀ ⊗ F(LN(H_pre X))``, H_res = Sinkhorn(·) doubly stochastic —
    Xie et al. 2025 (DeepSeek-AI), mHC: Manifold-Constrained Hyper-Connections, arXiv:2512.24880.

    docs/design.md §3.3. The gates report Sinkhorn's column-sum error."""

    @staticmethod
    def res_bias_init(n):
        return OFF_DIAGONAL_BIAS * (1 - torch.eye(n))

    def mix(self, a_res, z_res):
        h_res, err = sinkhorn(a_res * z_res + self.b_res, iters=SINKHORN_ITERS, return_error=True)
        return h_res, {"sinkhorn_error": err}


@register("mhc_lite")
class MHCLite(_Streams):
    """mHC-lite: ``X' = H_res X + H_postᵀ ⊗ F(LN(H_pre X))``, H_res = Σ_k a_k P_k over the n!
    permutation matrices, exactly doubly stochastic — Yang & Gao 2026, mHC-lite: You Don't Need
    20 Sinkhorn-Knopp Iterations, arXiv:2601.05732.

    docs/design.md §3.3. The method (their Fig. 1 and method section, after the Birkhoff–von
    Neumann theorem): per token, a = softmax(α_res · x̃ φ_res + b_res) ∈ Δ^{n!−1} and
    H_res = Σ_{k=1}^{n!} a_k P_k (``geolab.mixing.birkhoff``), so every row and column sums to 1
    to rounding, with no iteration; H_pre, H_post and the mixing step are mhc's (``_Streams``).
    Shapes: x (B, S, n, D); φ_res gives n! logits per token (24 at n = 4, where mhc's gives 16);
    the permutation matrices are a (n!, n, n) buffer, not saved in the state dict.

    Init: b_res = 0 on the identity permutation (P_0) and −8 on the other n! − 1, as the
    authors' code (github.com/FFTYYY/mhc-lite, ``hyper_conn/mhc_lite.py``) sets its static bias,
    with α_res = 0.01 as theirs; the rest is geolab's mhc init, so both start at H_res ≈ I and
    the mean stream as the sublayer input. At n = 4, H_res starts with diagonal 0.9940 and
    off-diagonal 2.0e-3 (mhc: 3.4e-4): each off-diagonal entry collects the (n−1)! = 6
    permutations that move stream i to j. The authors' H_pre/H_post start on one stream and
    their φ at zero; geolab keeps mhc's (H_pre ≈ 1/n, H_post ≈ 1, φ ~ N(0, 0.02²)) so that the
    two rules differ only in how H_res is built. ``n_streams`` ≤ 6 (720 permutations): φ_res and
    the mixture grow as n!.
    """

    MAX_STREAMS = 6

    def __init__(self, cfg: GeoConfig):
        super().__init__(cfg)
        perms = permutation_matrices(self.n, dtype=self.b_res.dtype)
        self.register_buffer("perms", perms, persistent=False)

    @staticmethod
    def check(cfg):
        if cfg.n_streams > MHCLite.MAX_STREAMS:
            raise config_error(
                "n_streams",
                cfg.n_streams,
                f"mhc_lite allows at most {MHCLite.MAX_STREAMS} (it mixes all n! permutation "
                f"matrices: {math.factorial(cfg.n_streams)} at n={cfg.n_streams})",
            )

    @staticmethod
    def res_shape(n):
        return (math.factorial(n),)

    @staticmethod
    def res_bias_init(n):
        bias = torch.full((math.factorial(n),), OFF_DIAGONAL_BIAS)
        bias[0] = 0.0  # P_0, the identity (permutation_matrices' order)
        return bias

    def mix(self, a_res, z_res):
        return birkhoff(a_res * z_res + self.b_res, self.perms), {}


@register("jpmhc")
class JPmHC(Rule):
    """JPmHC: ``X' = Y X + H_postᵀ F(LN(H_pre X))``, Y orthogonal-ish by fixed-point Cayley —
    Sengupta et al. 2026, JPmHC: Dynamical Isometry via Orthogonal Hyper-Connections,
    arXiv:2602.18308.

    Streams are a reshape of D into n chunks of D/n, and the sublayers run at width D/n. Per token,
    ``[H̃_pre | H̃_post | H̃_res] = W·LN(x)``; H_pre, H_post = softmax over streams;
    W_s = H̃_res − H̃_resᵀ (skew); Y from ``Y ← I + (a/2) W_s (I + Y)`` with a = 0.1, two
    iterations from Y = I (the fixed point is the Cayley transform (I − aW_s/2)⁻¹(I + aW_s/2)).
    No official code exists; this follows the public description (docs/design.md §3.4). geolab's
    choices: W = 0 at init (uniform H_pre/H_post, Y = I) and an LN on the sublayer input like every
    pre-LN rule here.
    """

    CAYLEY_A = 0.1
    CAYLEY_ITERS = 2

    def __init__(self, cfg: GeoConfig):
        super().__init__(cfg)
        n, d = cfg.n_streams, cfg.d_model
        self.n = n
        self.ln_in = make_norm(cfg.norm, d)
        self.ln = make_norm(cfg.norm, d // n)
        self.w = nn.Linear(d, 2 * n + n * n)
        nn.init.zeros_(self.w.weight)
        nn.init.zeros_(self.w.bias)

    @staticmethod
    def check(cfg):
        n = cfg.n_streams
        check_divides(cfg, n)
        if (cfg.d_model // n) % cfg.n_head:
            raise config_error(
                "d_model",
                cfg.d_model,
                f"d_model/n_streams={cfg.d_model // n} must be divisible by "
                f"n_head={cfg.n_head} (jpmhc runs its sublayers at width D/n)",
            )

    @staticmethod
    def sublayer_width(cfg):
        return cfg.d_model // cfg.n_streams

    @staticmethod
    def d_model_step(cfg):
        return cfg.n_head * cfg.n_streams

    def forward(self, x, sublayer):
        n = self.n
        with float32_gates(x):
            z = self.w(self.ln_in(upcast(x)))
            h_pre = torch.softmax(z[..., :n], dim=-1)
            h_post = torch.softmax(z[..., n : 2 * n], dim=-1)
            r = z[..., 2 * n :].unflatten(-1, (n, n))
            y = fixed_point_cayley(r - r.transpose(-1, -2), self.CAYLEY_A, self.CAYLEY_ITERS)
        self.keep(H_pre=h_pre, H_post=h_post, H_res=y)
        streams = x.unflatten(-1, (n, -1))
        out = _mix_streams(streams, h_pre, h_post, y, lambda xin: sublayer(self.ln(xin)))
        return out.flatten(-2)
