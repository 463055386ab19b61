"""Notebook 05 — streams: Sinkhorn and the gain of composite mixing products.

Sinkhorn (docs/design.md §2.5) and the stream mixers of the hyper-connection rules (§3.3).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from geolab import figures
from geolab.explore.view import F64, View, check_int, check_range, num
from geolab.metrics import composite_gain_curve, second_eigenvalue_curve
from geolab.mixing import birkhoff, permutation_matrices, sinkhorn
from geolab.operators import cayley, fixed_point_cayley
from geolab.rules.streams import JPmHC

STREAMS = 4
MAX_ITERS = 50


def mixers(family: str, depth: int, spread: float, iters: int, seed: int) -> torch.Tensor:
    """``depth`` seeded n×n stream mixers of one family, (depth, n, n) float64.

    HC: I + tanh(σG) (unconstrained, tanh-bounded entries, docs/design.md §3.3); mHC: Sinkhorn(σG)
    with ``iters`` iterations in float32, as mHC runs it; orthogonal: the exact dense Cayley map
    (I + A/2)⁻¹(I − A/2) of the skew part A of σG (exactly orthogonal: what E∆'s Cayley operator
    computes and what JPmHC's fixed point converges to); JPmHC: the ``jpmhc`` rule's own mixer,
    two fixed-point steps with a = 0.1 on W_s = σ(G − Gᵀ) (``operators.fixed_point_cayley``, only
    approximately orthogonal). G ~ N(0, 1) entrywise, the same G for all four.
    """
    gen = torch.Generator().manual_seed(seed)
    G = spread * torch.randn(depth, STREAMS, STREAMS, generator=gen, dtype=F64)
    if family == "HC":
        return torch.eye(STREAMS, dtype=F64) + torch.tanh(G)
    if family == "mHC":
        return sinkhorn(G.float(), iters=iters).double()
    if family == "orthogonal":
        return cayley((G - G.transpose(-1, -2)) / 2, 1.0)
    if family == "JPmHC":
        return fixed_point_cayley(G - G.transpose(-1, -2), JPmHC.CAYLEY_A, JPmHC.CAYLEY_ITERS)
    raise ValueError(f"family={family!r} is not allowed; choose {', '.join(FAMILIES)}")


FAMILIES = ("HC", "mHC", "orthogonal", "JPmHC")
# One colour per mixer family, one dash per kind of gain, in every 05 figure: each family has
# the colour of the rule that uses it (figures.RULE_COLORS; the exact Cayley map is E∆'s
# `cayley` operator).
FAMILY_RULES = {"HC": "hc", "mHC": "mhc", "orthogonal": "cayley", "JPmHC": "jpmhc"}
FAMILY_COLORS = {family: figures.rule_color(rule) for family, rule in FAMILY_RULES.items()}
GAIN_DASH = {"Amax forward (rows)": "solid", "Amax backward (cols)": "dash", "2-norm": "dot"}


def spectral_gain_curve(mats: torch.Tensor) -> torch.Tensor:
    """‖H_l ⋯ H_1‖₂ for l = 1..L, (L,) float64: the largest factor by which the product can
    stretch a vector of stream values (1 for every orthogonal product; ≤ the Amax gains · √n)."""
    P, out = torch.eye(mats.shape[-1], dtype=F64), []
    for H in mats:
        P = H.to(F64) @ P
        out.append(torch.linalg.matrix_norm(P, ord=2))
    return torch.stack(out)


OVERFLOW = 1e300  # a product's entries past this leave float64 within a few more layers


def finite_depth(mats: torch.Tensor) -> int:
    """How many leading mixers the product H_l ⋯ H_1 takes with its largest entry still below
    ``OVERFLOW`` (all of them unless it grows past float64: HC at a wide spread over hundreds
    of layers), at least 1. The product is rescaled as it goes, its scale kept as a log, so the
    count itself never overflows."""
    P, log_scale = torch.eye(mats.shape[-1], dtype=F64), 0.0
    for depth, H in enumerate(mats):
        P = H.to(F64) @ P
        top = P.abs().max().item()
        if top == 0:  # a product that vanished stays finite
            return len(mats)
        log_scale += math.log(top)
        if log_scale > math.log(OVERFLOW):
            return max(depth, 1)
        P = P / top
    return len(mats)


def _padded(curve: torch.Tensor, depth: int) -> torch.Tensor:
    """``curve`` with NaN after its end up to ``depth`` (a gap on the plot, not an inf)."""
    gap = torch.full((depth - len(curve), *curve.shape[1:]), float("nan"), dtype=curve.dtype)
    return torch.cat([curve, gap])


ERROR_ITERS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 35, 40, 45, 50)


def _stream_logits(spread: float, seed: int) -> torch.Tensor:
    """One seeded n×n logit matrix with entries N(0, spread²), float32 as mHC runs it."""
    gen = torch.Generator().manual_seed(seed + 7919)
    return spread * torch.randn(STREAMS, STREAMS, generator=gen)


@functools.lru_cache(maxsize=64)
def sinkhorn_errors(spread: float, seed: int) -> tuple[float, ...]:
    """Column-sum error of ``sinkhorn`` after each count in ``ERROR_ITERS`` (cached: it does
    not depend on the iteration or depth sliders)."""
    logits = _stream_logits(spread, seed)
    return tuple(sinkhorn(logits, iters=i, return_error=True)[1].item() for i in ERROR_ITERS)


def lite_mixer(spread: float, seed: int) -> torch.Tensor:
    """mHC-lite's mixer (``mixing.birkhoff``, Yang & Gao 2026, arXiv:2601.05732) from the same
    logit matrix L that Sinkhorn normalises, (n, n) float32, no iterations.

    mHC-lite weighs the n! permutation matrices by a softmax of its own n! logits; here the
    logit of permutation σ is its score Σ_i L[i, σ(i)], so the matrix keeps the larger entries
    of L: a_σ ∝ exp(Σ_i L[i, σ(i)]), H = Σ_σ a_σ P_σ — exactly doubly stochastic at any spread,
    to float32 rounding."""
    logits = _stream_logits(spread, seed)
    perms = permutation_matrices(STREAMS)
    return birkhoff(torch.einsum("ij,kij->k", logits, perms), perms)


def streams_view(iters: int, spread: float, depth: int, seed: int = 0) -> View:
    """05: Sinkhorn on one 4×4 logit matrix, and Amax gains of composite mixers over depth.

    Numbers: after ``iters`` iterations the row sums are exact and the column sums are off by
    an error that shrinks with iterations and grows with the logit spread (docs/design.md §2.5); the
    spectral norm; mHC-lite's column error on the same logits, with no iterations
    (``lite_mixer``); the final forward (row) and backward (column) Amax gains for HC, mHC and
    orthogonal mixers of the same random draws. A family whose product would leave float64
    (``finite_depth``) stops its curves at the last layer it holds, named in
    ``numbers["overflow"]`` and the readout, so no inf is drawn or shown.
    """
    iters = check_int("iters", iters, 1, MAX_ITERS)
    spread = check_range("spread", spread, 0.0, 10.0)
    depth = check_int("depth", depth, 1, 1000)
    logits = _stream_logits(spread, seed)
    M, err = sinkhorn(logits, iters=iters, return_error=True)
    errors = sinkhorn_errors(spread, seed)
    first = sinkhorn(logits, iters=1)
    start = torch.exp(logits - logits.max())
    gains, finals, norms, lines = {}, {}, {}, {}
    jp_step = None
    overflow = {}  # family -> the depth its product stays within float64 (where it is less)
    for family in FAMILIES:
        mats = mixers(family, depth, spread, iters, seed)
        if family == "JPmHC":
            jp_step = torch.linalg.matrix_norm(mats, ord=2).mean().item()
        held = finite_depth(mats)
        if held < depth:
            overflow[family] = held
        fwd, bwd = (_padded(c, depth) for c in composite_gain_curve(mats[:held]))
        two = _padded(spectral_gain_curve(mats[:held]), depth)
        gains[f"{family} Amax forward (rows)"] = fwd
        if family in ("HC", "mHC"):
            gains[f"{family} Amax backward (cols)"] = bwd
        if family != "HC":
            gains[f"{family} 2-norm"] = two
        finals[family] = (fwd[held - 1].item(), bwd[held - 1].item())
        norms[family] = two[held - 1].item()
        for kind, dash in GAIN_DASH.items():
            lines[f"{family} {kind}"] = {"color": FAMILY_COLORS[family], "dash": dash}
    numbers = {
        "row_error": (M.sum(-1) - 1).abs().max().item(),
        "col_error": err.item(),
        "lite_col_error": (lite_mixer(spread, seed).sum(-2) - 1).abs().max().item(),
        "spectral_norm": torch.linalg.matrix_norm(M, ord=2).item(),
        "min_entry": M.min().item(),
        "errors": errors,
        "final_gain": finals,
        "final_two_norm": norms,
        "jpmhc_step_norm": jp_step,
        "overflow": overflow,
    }
    readout = (
        [
            (
                r"max $\lvert\text{row sum} - 1\rvert$ (the last step normalises rows)",
                num(numbers["row_error"]),
            ),
            (r"max $\lvert\text{column sum} - 1\rvert$ (the Sinkhorn residual)", num(err.item())),
            (
                r"mHC-lite, no iterations: max $\lvert\text{column sum} - 1\rvert$",
                num(numbers["lite_col_error"]),
            ),
            (r"$\lVert M\rVert_2$", num(numbers["spectral_norm"])),
        ]
        + [
            (
                f"{family}: Amax gain at depth {overflow.get(family, depth)}, forward / "
                "backward; 2-norm"
                + (
                    f" (deeper, the product passes {OVERFLOW:.0e}, beyond float64: its curves "
                    "stop there)"
                    if family in overflow
                    else ""
                ),
                f"{num(f)} / {num(b)}; {num(norms[family])}",
            )
            for family, (f, b) in finals.items()
        ]
        + [
            (
                r"JPmHC: mean $\lVert H\rVert_2$ of one two-step mixer ($1$ if orthogonal)",
                num(jp_step),
            )
        ]
    )
    # One panel per iteration count: at 1 iteration the last panel would repeat the middle one.
    shown = [start / start.sum(-1, keepdim=True), first] + ([M] if iters > 1 else [])
    titles = ["exp(logits), rows normalised", "1 iteration"] + (
        [f"{iters} iterations"] if iters > 1 else []
    )
    # nine lines: each family named on the log panel at the end of its forward gain
    forward = {family: gains[f"{family} Amax forward (rows)"] for family in FAMILIES}
    figs = {
        "heatmaps": figures.heatmaps_figure(shown, titles),
        "error": figures.sweep_figure(
            ERROR_ITERS,
            # An exactly converged float32 error is 0; floor it so the log axis can show it.
            {
                "mHC (Sinkhorn)": np.maximum(errors, 1e-9),
                # mHC-lite has no iterations: one level, drawn across the axis for comparison
                "mHC-lite (no iterations)": np.full(
                    len(ERROR_ITERS), max(numbers["lite_col_error"], 1e-9)
                ),
            },
            current=iters,
            current_on=("mHC (Sinkhorn)",),
            log_y=True,
            title="Finite Sinkhorn is only approximately doubly stochastic; mHC-lite is exact",
            x_title="iterations",
            y_title="max |column sum − 1|",
        ),
        "gain": figures.composite_gain_figure(
            np.arange(1, depth + 1),
            gains,
            zoomed=[name for name in gains if not name.startswith("HC")],
            bound=STREAMS**0.5,
            lines=lines,
            named={family: (forward[family], FAMILY_COLORS[family]) for family in FAMILIES},
            dash_key=GAIN_DASH,  # the legend says what each dash means
        ),
        # what the predict-first question asks: HC's forward gain, mHC's beside it
        "hc_gain": figures.composite_gain_figure(
            np.arange(1, depth + 1),
            {name: gains[f"{name} forward (rows)"] for name in ("HC Amax", "mHC Amax")},
            lines={f"{f} Amax": {"color": FAMILY_COLORS[f]} for f in ("HC", "mHC")},
            title=f"Gain of the composite mixing product: HC vs mHC, {depth} mixers",
        ),
    }
    for name, rule in (("mHC (Sinkhorn)", "mhc"), ("mHC-lite (no iterations)", "mhc_lite")):
        figs["error"].update_traces(line_color=figures.rule_color(rule), selector={"name": name})
    return View(numbers, readout, figs)


# --- notebook 05: the spectrum of the mixer product over depth

SPECTRUM_FAMILIES = ("HC", "mHC", "mHC-lite", "JPmHC")
SPECTRUM_RULES = {"HC": "hc", "mHC": "mhc", "mHC-lite": "mhc_lite", "JPmHC": "jpmhc"}
MAX_DEPTH = 200
# A 4-cycle: stream i hands its content to stream i + 1 (mod 4).
CYCLE = torch.eye(STREAMS, dtype=F64).roll(1, dims=0)
# Each preset: the fixed part B of every layer's logits and the spread σ of the random part,
# G_l = B + σ N_l with N_l ~ N(0, 1) entrywise. The families read the same G_l.
PRESETS = {
    "identity-ish": (4.0 * torch.eye(STREAMS, dtype=F64), 0.5),
    "random": (torch.zeros(STREAMS, STREAMS, dtype=F64), 1.0),
    "near-permutation": (4.0 * CYCLE, 0.5),
    "JPmHC rotation": (2.0 * (CYCLE - CYCLE.T), 0.5),
}


def preset_logits(preset: str, depth: int, same: bool, seed: int = 0) -> torch.Tensor:
    """The logits G_l = B + σ N_l of ``depth`` layers for a preset (``PRESETS``), (depth, n, n)
    float64; ``same``: one draw N_1 at every layer (one mixer repeated), else a fresh draw per
    layer (a network whose mixers differ from layer to layer)."""
    if preset not in PRESETS:
        raise ValueError(f"preset={preset!r} is not allowed; choose {', '.join(PRESETS)}")
    bias, spread = PRESETS[preset]
    gen = torch.Generator().manual_seed(seed)
    noise = torch.randn(1 if same else depth, STREAMS, STREAMS, generator=gen, dtype=F64)
    return bias + spread * noise.expand(depth, STREAMS, STREAMS)


def family_mixers(family: str, logits: torch.Tensor) -> torch.Tensor:
    """Each layer's n×n mixer of one family from its logits G, (L, n, n) float64.

    HC (Zhu et al. 2024, arXiv:2409.19606): I + tanh(G), the identity plus an unconstrained
    bounded update (docs/design.md §3.3). mHC (Xie et al. 2025, arXiv:2512.24880): Sinkhorn(G),
    20 iterations in float32 as the ``mhc`` rule runs it (§2.5). mHC-lite (Yang & Gao 2026,
    arXiv:2601.05732): Σ_σ a_σ P_σ with a_σ ∝ exp Σ_i G[i, σ(i)] (``lite_mixer``'s weights).
    JPmHC (Sengupta et al. 2026, arXiv:2602.18308): the ``jpmhc`` rule's two fixed-point Cayley
    steps on W_s = G − Gᵀ, a = 0.1 (§3.4), orthogonal up to its truncation error.
    """
    if family == "HC":
        return torch.eye(STREAMS, dtype=F64) + torch.tanh(logits)
    if family == "mHC":
        return sinkhorn(logits.float(), iters=20).double()
    if family == "mHC-lite":
        perms = permutation_matrices(STREAMS, dtype=F64)
        return birkhoff(torch.einsum("lij,kij->lk", logits, perms), perms)
    if family == "JPmHC":
        skew = logits - logits.transpose(-1, -2)
        return fixed_point_cayley(skew, JPmHC.CAYLEY_A, JPmHC.CAYLEY_ITERS)
    raise ValueError(f"family={family!r} is not allowed; choose {', '.join(SPECTRUM_FAMILIES)}")


def power_of_ten(log10: float) -> str:
    """10^``log10`` written as "≈ 5.6e−32" from its logarithm, so a value below float64's range
    (a |λ₂| of 1e−520) is printed as what it is, never as 0 or inf."""
    if not math.isfinite(log10):
        return "0" if log10 < 0 else "inf"
    exponent = math.floor(log10)
    mantissa = 10 ** (log10 - exponent)
    if mantissa >= 9.995:  # 9.996e3 rounds to 10.0e3: write 1.0e4
        mantissa, exponent = 1.0, exponent + 1
    if -3 <= exponent < 4:
        return f"{10**log10:.4g}"
    return f"≈ {mantissa:.1f}e{exponent}".replace("-", "−")


def size(x: float) -> str:
    """A non-negative number as ``power_of_ten`` writes it (an exact 0 as "0")."""
    return power_of_ten(math.log10(x)) if x > 0 else "0"


def spectrum_view(preset: str, depth: int, same: bool = False, seed: int = 0) -> View:
    """05: |λ₁| and |λ₂| of the product H_L ⋯ H_1 of L stream mixers, for HC, mHC, mHC-lite
    and JPmHC on the same logits (``preset_logits``, ``family_mixers``).

    |λ₂| comes from ``metrics.second_eigenvalue_curve`` (exact to float64's relative precision
    at any depth, as a log₁₀). The overlay is what one-layer eigenvalues predict,
    Σ_l log₁₀|λ₂(H_l)|: with one mixer repeated (``same``) it is L·log₁₀|λ₂(H)|, i.e. |λ₂|^L,
    which the product's own |λ₂| equals exactly (the eigenvalues of H^L are λ^L); with a fresh
    mixer per layer the two differ, because the mixers' eigenvectors differ.
    Numbers: ``lambda1``, ``lambda2``, ``overlay`` (family -> (depth,) log₁₀ curve), ``final``
    (family -> (log₁₀|λ₁|, log₁₀|λ₂|) at depth L).
    """
    depth = check_int("depth", depth, 1, MAX_DEPTH)
    if not isinstance(same, bool):
        raise ValueError(f"same={same!r} is not allowed; expected True or False")
    logits = preset_logits(preset, depth, same, seed)
    lambda1, lambda2, overlay, final = {}, {}, {}, {}
    for family in SPECTRUM_FAMILIES:
        # one mixer repeated is built once: float32 Sinkhorn on a batch of equal logits can
        # round each copy differently, and "the same mixer" must be the same bits
        mats = family_mixers(family, logits[:1] if same else logits).expand(depth, -1, -1)
        one, two = second_eigenvalue_curve(mats)
        # one mixer's |λ₂|: its eigenvalues' second largest modulus, all layers in one call
        single = torch.linalg.eigvals(mats).abs().sort(-1, descending=True).values[:, 1]
        lambda1[family], lambda2[family] = one.numpy(), two.numpy()
        overlay[family] = torch.cumsum(torch.log10(single), 0).numpy()
        final[family] = (one[-1].item(), two[-1].item())
    depths = np.arange(1, depth + 1)
    colors = {family: figures.rule_color(rule) for family, rule in SPECTRUM_RULES.items()}
    panels = {f: (lambda2[f], overlay[f], colors[f]) for f in SPECTRUM_FAMILIES}
    kind = "one mixer repeated" if same else "a fresh mixer per layer"
    figs = {
        "spectrum": figures.second_eigenvalue_figure(
            depths, panels, title=f"|λ₂| of the product of L mixers ({preset}, {kind})"
        ),
        # one panel per family: what a question about one family shows
        **{
            family: figures.second_eigenvalue_figure(
                depths,
                {family: panels[family]},
                title=f"|λ₂| of the product of L {family} mixers ({preset}, {kind})",
            )
            for family in SPECTRUM_FAMILIES
        },
    }
    readout = [
        (
            f"{family}: $\\lvert\\lambda_1\\rvert$ / $\\lvert\\lambda_2\\rvert$ of the product at"
            f" depth {depth}; $\\lvert\\lambda_2\\rvert^L$ prediction",
            f"{power_of_ten(one)} / {power_of_ten(two)}; {power_of_ten(overlay[family][-1])}",
        )
        for family, (one, two) in final.items()
    ]
    numbers = {"lambda1": lambda1, "lambda2": lambda2, "overlay": overlay, "final": final}
    return View(numbers, readout, figs)
