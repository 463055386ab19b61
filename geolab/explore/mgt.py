"""Notebook 02 — the MGT block (docs/design.md §2.6): gates, β range, and the Jacobian critique."""

from __future__ import annotations

import copy
import math

import torch

from geolab import figures
from geolab.config import GeoConfig
from geolab.explore.view import F64, View, check_range
from geolab.layers import CausalSelfAttention
from geolab.metrics import beta_stats
from geolab.operators import (
    delta_operator,
)
from geolab.rules import RESIDUALS

MGT_WIDTH = 16
BETA0_STEP = 0.05  # the β₀ slider's step; λ and ε move on the same grid


def beta0_slider(lam: float, eps: float, wanted: float) -> tuple[float, float, float]:
    """02's β₀ slider for the open range (−λ+ε, λ+ε) that β = λ·tanh(·)+ε can reach:
    ``(start, stop, value)``, the ends one step inside (b_β = atanh((β₀−ε)/λ) is infinite at
    the ends) and ``wanted`` held at the nearer end when it lies outside (the notebook says so).
    """
    start = round(-lam + eps + BETA0_STEP, 2)
    stop = round(lam + eps - BETA0_STEP, 2)
    return start, stop, round(min(max(wanted, start), stop), 2)


def mgt_sliders():
    """02's and 02b's four MGT controls, ``(lam, eps, alpha, w_scale)`` marimo sliders: the
    range λ and offset ε of β = λ·tanh(·) + ε, the decay α and the scale of W_β (MGT Eq. 6–7, §3;
    Su & You 2026, arXiv:2601.01014). Each notebook binds them to names in one cell."""
    import marimo as mo

    def slider(start, stop, step, value, label):
        return mo.ui.slider(
            start, stop, step=step, value=value, label=label, show_value=True, full_width=True
        )

    return (
        slider(0.1, 2.0, BETA0_STEP, 1.0, r"range $\lambda$"),
        slider(-0.5, 0.5, BETA0_STEP, 0.0, r"offset $\epsilon$"),
        slider(0.0, 2.0, 0.05, 0.1, r"decay $\alpha$"),
        slider(0.0, 3.0, 0.1, 1.0, r"token dependence: scale of $W_\beta$"),
    )


def beta0_control(lam: float, eps: float, wanted: float, on_change):
    """The β₀ slider over the range λ and ε allow (``beta0_slider``), at ``wanted`` or held at
    the nearer end; ``on_change`` keeps what the learner asked for."""
    import marimo as mo

    start, stop, value = beta0_slider(lam, eps, wanted)
    return mo.ui.slider(
        start,
        stop,
        step=BETA0_STEP,
        value=value,
        label=r"initial gate $\beta_0$ ($b_\beta$)",
        show_value=True,
        full_width=True,
        on_change=on_change,
    )


def beta0_shown(slider, lam: float, eps: float, wanted: float):
    """What the β₀ cell shows: the slider, and a line when ``wanted`` lies outside the range
    and the slider holds it at an end."""
    import marimo as mo

    value = beta0_slider(lam, eps, wanted)[2]  # not slider.value: its own cell cannot read it
    if value == wanted:
        return mo.vstack([slider])
    held = (
        rf"*Your $\beta_0 = {wanted:g}$ lies outside $(-\lambda+\epsilon,\ \lambda+\epsilon) ="
        rf" ({-lam + eps:g}, {lam + eps:g})$: the slider holds it at ${value:g}$ until the"
        r" range reaches it again.*"
    )
    return mo.vstack([slider, mo.md(held)])


BETA0_NOTE = r"""
$\beta_0$ sets the bias $b_\beta = \operatorname{atanh}((\beta_0 - \epsilon)/\lambda)$, so it
must lie inside $(-\lambda + \epsilon, \lambda + \epsilon)$: its slider spans that range and
follows $\lambda$ and $\epsilon$. geolab initialises $W_\beta = 0$ (every token starts at
$\beta_0$). Here $W_\beta$ is drawn at the scale you choose, as a trained controller would
read the token.
"""


def _mgt_rule(lam: float, eps: float, alpha: float, beta0: float, w_scale: float, seed: int):
    """geolab's real ``mgt`` rule and a real causal attention sublayer, seeded.

    W_β is drawn N(0, w_scale²/D) instead of the init's 0 (geolab's choice, to show a controller
    whose β depends on the token, as after training); everything else is the rule's own init.
    """
    cfg = GeoConfig(
        residual="mgt",
        n_layer=1,
        d_model=MGT_WIDTH,
        n_head=2,
        seq_len=64,
        vocab_size=8,
        lam=lam,
        eps=eps,
        alpha0=alpha,
        beta0=beta0,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        rule = RESIDUALS["mgt"](cfg)
        attn = CausalSelfAttention(MGT_WIDTH, 2, 0.0, False, 0.02)
        with torch.no_grad():
            rule.w_beta.weight.normal_(0.0, w_scale / math.sqrt(MGT_WIDTH))
        x = torch.randn(1, 64, MGT_WIDTH)
    return rule.eval(), attn.eval(), x


def token_jacobian(rule, attn, token: torch.Tensor, alpha: float | None = None) -> torch.Tensor:
    """J = ∂x'/∂x of the rule's update on one token (D,), in float64: (D, D).

    A float64 copy of the rule and the attention sublayer (the float32 weights cast exactly),
    so J − I is not float32 rounding: MGT's J − I can be 1e-4 in size (small β, attention's
    output a thousandth of the state), where float32's rounding of J (≈ 1e-7) is a tenth of a
    percent of it. ``alpha`` replaces the rule's α (0: the write alone, no decay).
    """
    rule64, attn64 = copy.deepcopy(rule).double(), copy.deepcopy(attn).double()
    if alpha is not None:
        with torch.no_grad():
            rule64.alpha.fill_(alpha)

    def one_token(t: torch.Tensor) -> torch.Tensor:
        return rule64(t.view(1, 1, -1), attn64).view(-1)

    with torch.enable_grad():
        return torch.autograd.functional.jacobian(one_token, token.double(), vectorize=True)


def rank_off_identity(M: torch.Tensor) -> int:
    """rank(M − I) of a float64 (D, D) matrix: singular values of M − I above
    D · eps₆₄ · max(1, ‖M‖₂), what float64 resolves in M's entries (geolab's tolerance, numpy's
    ``matrix_rank`` rule with ‖M‖ for ‖M − I‖, since the identity is subtracted after
    rounding). D − rank is the number of independent directions M leaves fixed: eigenvalue 1.
    """
    d = M.shape[-1]
    sv = torch.linalg.svdvals(M - torch.eye(d, dtype=M.dtype))
    scale = max(1.0, float(torch.linalg.matrix_norm(M, ord=2)))
    return int((sv > d * torch.finfo(F64).eps * scale).sum())


def jacobian_why(numbers: dict) -> str:
    """02's "why?" for the Jacobian count, from ``mgt_view``'s numbers (markdown, LaTeX).

    J − I = ∂(β ⊙ F(LN x) ⊙ g)/∂x − α ∂(β ⊙ x)/∂x: the write's Jacobian and the decay's. The
    write alone (α = 0) already has rank ``rank_write``: it reads the whole token through the
    layer norm, the attention's value map and both gates, and writes on every channel. The
    Delta operator's write β k (kᵀx) reads one number, kᵀx, so A − I has rank 1.
    """
    d = MGT_WIDTH
    write, rank = numbers["rank_write"], numbers["rank_mgt"]
    if write == 0 and rank == 0:  # β = 0 on every channel: the block is the identity
        return r"**Why?** Here $\beta = 0$ on every channel: nothing is written, $J = I$."
    return (
        r"**Why?** $J - I = \partial(\beta \odot F(\mathrm{LN}\,x) \odot g)/\partial x"
        r" - \alpha\,\partial(\beta \odot x)/\partial x$: the write's Jacobian plus the"
        r" decay's. Even at $\alpha = 0$, with no decay at all, the write's Jacobian has rank"
        f" {write} of {d}: the write reads the whole token (through the layer norm, the"
        " attention's value map and both gates) and writes on every channel, so"
        f" {d - write} of the token's {d} directions stay fixed. With the decay,"
        rf" $\operatorname{{rank}}(J - I) = {rank}$. The Delta"
        r" operator's write $\beta\,k\,(k^\top x)$ reads one number, $k^\top x$, so"
        r" $\operatorname{rank}(A - I) = 1$: the reading *erase along $k$, keep the rest*"
        " does not carry over to MGT."
    )


def mgt_view(
    lam: float, eps: float, alpha: float, beta0: float, w_scale: float = 1.0, seed: int = 0
) -> View:
    """02: X' = X + β ⊙ (F(LN X) ⊙ σ(LN(X W_gate)) − α X), β = λ·tanh(X W_β + b_β) + ε.

    Uses geolab's ``mgt`` rule on 64 random tokens of width 16 with a real attention sublayer.
    Numbers: the allowed β range (−λ+ε, λ+ε), the observed β statistics over tokens × channels
    (mean, fraction negative), the per-channel retention 1 − αβ of the old state (≈1:
    accumulation, ≈0: erasure, >1: amplification when β < 0), and the Jacobian ∂x'/∂x of the
    update on one token vs the rank-1 Delta operator A(k, β₀): the Delta operator has d−1
    eigenvalues exactly 1 (A − I has rank 1), the elementwise update has none (rank d).

    Precision: J in float64 (``token_jacobian``); "eigenvalues equal to 1" is the nullity of
    J − I, d − rank(J − I), with ``rank_off_identity``'s one tolerance, so the count and the
    rank always add up to d. ``rank_write`` is rank(J − I) at α = 0: the write's Jacobian
    ∂(β ⊙ F(LN x) ⊙ g)/∂x alone (``jacobian_why``).
    """
    lam = check_range("lam", lam, 0.05, 2.0)
    eps = check_range("eps", eps, -0.5, 0.5)
    alpha = check_range("alpha", alpha, 0.0, 2.0)
    beta0 = check_range("beta0", beta0, -2.5, 2.5)
    w_scale = check_range("w_scale", w_scale, 0.0, 5.0)
    low, high = -lam + eps, lam + eps
    if not low < beta0 < high:
        raise ValueError(
            f"beta0={beta0} is not allowed; MGT's β = λ·tanh(·)+ε needs β₀ in "
            f"({low:g}, {high:g}) for λ={lam:g}, ε={eps:g}"
        )
    rule, attn, x = _mgt_rule(lam, eps, alpha, beta0, w_scale, seed)
    with torch.no_grad():
        x_new = rule(x, attn)
        beta, gate = rule.gates["beta"], rule.gates["gate"]
        v_raw = attn(rule.ln(x))
    stats = beta_stats(beta, bins=40)
    retention = 1 - alpha * beta
    token = x[0, 0]
    write = beta[0, 0] * v_raw[0, 0]
    gated = beta[0, 0] * (v_raw[0, 0] * gate[0, 0] - alpha * token)

    J = token_jacobian(rule, attn, token)
    J_write = token_jacobian(rule, attn, token, alpha=0.0)
    eig_mgt = torch.linalg.eigvals(J)
    k = v_raw[0, 0].double()
    A = delta_operator(k, beta0)
    eig_delta = torch.linalg.eigvalsh(A)
    rank_mgt, rank_delta = rank_off_identity(J), rank_off_identity(A)
    rank_write = rank_off_identity(J_write)
    numbers = {
        "beta_low": low,
        "beta_high": high,
        "beta_mean": stats["mean"],
        "beta_min": stats["min"],
        "beta_max": stats["max"],
        "frac_negative": stats["frac_negative"],
        "retention_min": retention.min().item(),
        "retention_max": retention.max().item(),
        "gate_mean": gate.mean().item(),
        "gate_min": gate.min().item(),
        "gate_max": gate.max().item(),
        "update_error": (x[0, 0] + gated - x_new[0, 0]).abs().max().item(),
        "unit_eigs_mgt": MGT_WIDTH - rank_mgt,
        "unit_eigs_delta": MGT_WIDTH - rank_delta,
        "rank_mgt": rank_mgt,
        "rank_delta": rank_delta,
        "rank_write": rank_write,
        "eig_mgt": eig_mgt.tolist(),
        "eig_delta": eig_delta.tolist(),
    }
    readout = [
        (
            r"allowed $\beta$ range $(-\lambda+\epsilon,\ \lambda+\epsilon)$",
            f"({low:.3f}, {high:.3f})",
        ),
        (
            r"observed $\beta$: min / mean / max",
            f"{stats['min']:.3f} / {stats['mean']:.3f} / {stats['max']:.3f}",
        ),
        (r"fraction $\beta < 0$", f"{stats['frac_negative']:.3f}"),
        (
            r"retention $1-\alpha\beta$: min / max",
            f"{numbers['retention_min']:.3f} / {numbers['retention_max']:.3f}",
        ),
        (
            r"tangent gate $\sigma(\mathrm{LN}(XW_{gate}))$: min / max (no slider moves it)",
            f"{numbers['gate_min']:.3f} / {numbers['gate_max']:.3f}",
        ),
    ]
    figs = {
        "beta": figures.beta_histogram_figure(beta, low, high),
        "gate": figures.gated_write_figure(
            write,
            write * gate[0, 0],
            gate[0, 0],
            title="One token: the write with and without the tangent gate",
        ),
        "jacobian": figures.eigen_distance_figure(
            {"MGT Jacobian ∂x'/∂x": eig_mgt, "Delta operator A(k, β₀)": eig_delta},
            fixed={
                "MGT Jacobian ∂x'/∂x": MGT_WIDTH - rank_mgt,
                "Delta operator A(k, β₀)": MGT_WIDTH - rank_delta,
            },
            title="How far each eigenvalue sits from 1: elementwise MGT vs rank-1 Delta",
        ),
    }
    return View(numbers, readout, figs)
