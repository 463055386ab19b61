"""The sublayers F of a transformer layer: causal self-attention and a GELU MLP, plus norms.

Spec §1: F is causal multi-head self-attention (``F.scaled_dot_product_attention``) or a GELU MLP
of width 4D. Residual rules receive these as plain callables on an un-normalised input and decide
themselves where the norm goes. Shapes: (..., S, D) in, (..., S, D) out.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from geolab.choices import NORMS


def make_norm(kind: str, dim: int, bias: bool = True) -> nn.Module:
    """LayerNorm (default) or RMSNorm over the last dimension ``dim``; ``bias=False`` drops the
    LayerNorm's shift (the E∆ reference builds its norms without one; RMSNorm has none)."""
    if kind == "layernorm":
        return nn.LayerNorm(dim, bias=bias)
    if kind == "rmsnorm":
        return nn.RMSNorm(dim)
    raise ValueError(f"norm={kind!r} is not a norm; allowed: {', '.join(NORMS)}")


def rope(x: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding (Su et al. 2021) on (B, H, S, hd), rotating pairs (i, i + hd/2)."""
    seq, hd = x.shape[-2], x.shape[-1]
    half = hd // 2
    freq = 10000.0 ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)
    ang = torch.arange(seq, device=x.device, dtype=torch.float32)[:, None] * freq
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half : 2 * half]
    rotated = torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    return torch.cat([rotated, x[..., 2 * half :]], dim=-1)


class CausalSelfAttention(nn.Module):
    """Causal multi-head self-attention: softmax(QKᵀ/√hd + causal mask) V, then W_o.

    ``proj_std`` is the init std of W_o (GPT-2 scales it by 1/√(number of residual steps));
    ``bias=False`` builds the projections without biases (the E∆ reference's GPT blocks).
    """

    def __init__(
        self, dim: int, n_head: int, dropout: float, use_rope: bool, proj_std: float, bias=True
    ):
        super().__init__()
        self.n_head, self.dropout, self.use_rope = n_head, dropout, use_rope
        self.qkv = nn.Linear(dim, 3 * dim, bias=bias)
        self.proj = nn.Linear(dim, dim, bias=bias)
        init_linear(self.qkv, 0.02)
        init_linear(self.proj, proj_std)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        qkv, proj = self.qkv, self.proj
        drop = self.dropout if self.training else 0.0
        return attention(
            x, qkv.weight, qkv.bias, proj.weight, proj.bias, self.n_head, self.use_rope, drop
        )


class MLP(nn.Module):
    """Position-wise GELU MLP: W₂ GELU(W₁ x), (…, dim) → (…, hidden) → (…, dim); GPT-2's hidden
    width is 4 × dim (``GeoConfig.mlp_hidden``)."""

    def __init__(self, dim: int, hidden: int, dropout: float, proj_std: float, bias: bool = True):
        super().__init__()
        self.fc = nn.Linear(dim, hidden, bias=bias)
        self.proj = nn.Linear(hidden, dim, bias=bias)
        self.drop = nn.Dropout(dropout)
        init_linear(self.fc, 0.02)
        init_linear(self.proj, proj_std)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        fc, proj = self.fc, self.proj
        return self.drop(mlp(x, fc.weight, fc.bias, proj.weight, proj.bias))


def _project(y, weight, bias, scale):
    """``y Wᵀ + b``, or ``scale · y Wᵀ + b``: a stack whose projections were drawn for another
    depth takes GPT-2's 1/√(steps) factor here, a scalar per layer, not in a copy of W."""
    if scale is None:
        return F.linear(y, weight, bias)
    out = F.linear(y, weight) * scale
    return out if bias is None else out + bias


def attention(x, qkv_w, qkv_b, proj_w, proj_b, n_head, use_rope=False, dropout=0.0, scale=None):
    """Causal multi-head self-attention as a function of its weights (``CausalSelfAttention``
    and the views' stacked model both call it): softmax(QKᵀ/√hd + causal mask) V W_oᵀ (+ b_o),
    W_o's output times ``scale`` if given. x (…, S, D), qkv_w (3D, D), proj_w (D, D)."""
    *lead, seq, dim = x.shape
    qkv = F.linear(x, qkv_w, qkv_b).reshape(-1, seq, 3, n_head, dim // n_head)
    q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (B, heads, S, hd): one view op
    if use_rope:
        q, k = rope(q), rope(k)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout)
    return _project(y.transpose(1, 2).reshape(*lead, seq, dim), proj_w, proj_b, scale)


def mlp(x, fc_w, fc_b, proj_w, proj_b, scale=None):
    """The GELU MLP as a function of its weights: W₂ GELU(W₁ x + b₁) + b₂, W₂'s output times
    ``scale`` if given. x (…, D), fc_w (4D, D), proj_w (D, 4D)."""
    return _project(F.gelu(F.linear(x, fc_w, fc_b)), proj_w, proj_b, scale)


def rms_norm_linear(x: torch.Tensor, norm: nn.RMSNorm, lin: nn.Linear) -> torch.Tensor:
    """``lin(norm(x))`` for an RMSNorm ``norm`` (Zhang & Sennrich 2019), as
    ``r · x (W diag g)ᵀ + b`` with the per-token ``r = (mean x² + ε)^−½``.

    The same map, with the norm's gain g folded into the projection W and the scale r applied to
    the narrow output: the wide input is read by one reduction and one matrix product instead of
    passing through the norm's elementwise operators and their gradients. HC/mHC read their
    (…, nD) streams this way to produce 2n + n² mixing logits per token. (…, D) -> (…, out).
    """
    eps = torch.finfo(x.dtype).eps if norm.eps is None else norm.eps
    weight = lin.weight if norm.weight is None else lin.weight * norm.weight
    r = torch.rsqrt(x.square().mean(-1, keepdim=True) + eps)
    z = F.linear(x, weight) * r
    return z if lin.bias is None else z + lin.bias


def init_linear(lin: nn.Linear, std: float) -> None:
    """GPT-2's init: weight ~ N(0, std²), bias 0."""
    nn.init.normal_(lin.weight, std=std)
    if lin.bias is not None:
        nn.init.zeros_(lin.bias)


def gpt2_proj_std(n_steps: int) -> float:
    """GPT-2's init for projections that write into the residual stream: 0.02/√(n_steps)."""
    return 0.02 / math.sqrt(max(n_steps, 1))
