"""Notebook 05b — Sinkhorn–Knopp: a positive matrix pushed onto the doubly stochastic ones,
one round at a time (docs/design.md §2.5)."""

from __future__ import annotations

import torch

from geolab import figures
from geolab.explore.streams import CYCLE, STREAMS, size
from geolab.explore.view import F64, View, check_int
from geolab.mixing import sinkhorn
from geolab.operators import cayley

MAX_ROUNDS = 30
TOLERANCE = 1e-6
# float32's machine epsilon: mHC runs Sinkhorn in float32, whose sums cannot get much closer.
FLOAT32_EPS = float(torch.finfo(torch.float32).eps)
FLOAT64_EPS = float(torch.finfo(F64).eps)


def _noise(seed: int) -> torch.Tensor:
    """One seeded 4×4 draw with N(0, 1) entries, float64."""
    return torch.randn(STREAMS, STREAMS, generator=torch.Generator().manual_seed(seed), dtype=F64)


def _identity_ish(noise):
    return 3.0 * torch.eye(STREAMS, dtype=F64) + 0.3 * noise


def _random(noise):
    return 2.0 * noise


def _near_permutation(noise):
    return 5.0 * CYCLE + 0.3 * noise


def _rotation(noise):
    """log(Q ∘ Q) for an orthogonal Q (the exact Cayley map that JPmHC's iteration converges
    to, of a 4-cycle rotation plus noise): exp of it is the squared entries of Q, whose rows
    and columns each sum to 1 because Q's rows and columns are unit vectors."""
    skew = (CYCLE - CYCLE.T) + 0.25 * (noise - noise.T)
    Q = cayley(skew, 1.0)
    return torch.log(Q * Q)


SINKHORN_PRESETS = {
    "identity-ish": _identity_ish,
    "random": _random,
    "near-permutation": _near_permutation,
    "JPmHC rotation": _rotation,
}


def preset_matrix_logits(preset: str, seed: int = 0) -> torch.Tensor:
    """The 4×4 float64 logits of a preset (``SINKHORN_PRESETS``): identity-ish 3I + 0.3N,
    random 2N, near-permutation 5P + 0.3N (P a 4-cycle), JPmHC rotation log(Q ∘ Q)."""
    if preset not in SINKHORN_PRESETS:
        raise ValueError(f"preset={preset!r} is not allowed; choose {', '.join(SINKHORN_PRESETS)}")
    return SINKHORN_PRESETS[preset](_noise(seed))


def sinkhorn_rounds(logits: torch.Tensor, rounds: int) -> torch.Tensor:
    """Sinkhorn–Knopp's iterates after 0, 1, …, ``rounds`` rounds, (rounds + 1, n, n).

    M⁽⁰⁾ = exp(logits − max); round k divides every column by its sum, then every row
    (``mixing.sinkhorn`` with iters = k, the function the ``mhc`` rule calls, in the logits'
    dtype: float64 here, so the rounding floor sits at 1e−16 instead of float32's 1e−7).
    Source: Sinkhorn & Knopp 1967; docs/design.md §2.5."""
    start = torch.exp(logits - logits.max())
    return torch.stack([start] + [sinkhorn(logits, iters=k) for k in range(1, rounds + 1)])


def sum_errors(mats: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(max_i |Σ_j M_ij − 1|, max_j |Σ_i M_ij − 1|) of (..., n, n): rows, then columns."""
    return (mats.sum(-1) - 1).abs().amax(-1), (mats.sum(-2) - 1).abs().amax(-1)


def sinkhorn_view(preset: str, rounds: int = MAX_ROUNDS, seed: int = 0) -> View:
    """05b: Sinkhorn–Knopp on one preset's 4×4 logits, rounds 0 … ``rounds`` as an animation.

    Numbers: ``row_errors``, ``col_errors`` (rounds + 1,) per round; ``first_within``: the
    first round with both below ``TOLERANCE`` (None if none within ``rounds``); ``at20``:
    the column error after 20 rounds, what mHC runs (None if fewer rounds); ``rate``: the
    factor by which the error shrank per round over the last rounds (``_rate``)."""
    rounds = check_int("rounds", rounds, 1, MAX_ROUNDS)
    mats = sinkhorn_rounds(preset_matrix_logits(preset, seed), rounds)
    row, col = sum_errors(mats)
    worst = torch.maximum(row, col)
    within = torch.nonzero(worst <= TOLERANCE).flatten()
    numbers = {
        "row_errors": row.numpy(),
        "col_errors": col.numpy(),
        "first_within": int(within[0]) if len(within) else None,
        "at20": col[20].item() if rounds >= 20 else None,
        "rate": _rate(worst),
    }
    first = numbers["first_within"]
    readout = [
        (
            r"round 1: max $\lvert$row sum $- 1\rvert$ / max $\lvert$column sum $- 1\rvert$",
            f"{size(row[1].item())} / {size(col[1].item())}",
        ),
        (
            f"round {rounds}: the same",
            f"{size(row[-1].item())} / {size(col[-1].item())}",
        ),
        (
            f"first round with both within {TOLERANCE:.0e}",
            str(first) if first is not None else f"none of the {rounds}",
        ),
    ]
    figs = {
        "animation": figures.sinkhorn_animation_figure(
            mats,
            row,
            col,
            floors={
                "float32 rounding (mHC runs float32)": FLOAT32_EPS,
                "float64 rounding (this page)": FLOAT64_EPS,
            },
            title=f"Sinkhorn–Knopp on the {preset} preset",
        )
    }
    return View(numbers, readout, figs)


def _rate(worst: torch.Tensor) -> float | None:
    """The mean factor per round by which the error shrank over the last ten rounds (or
    all rounds after the first, if fewer), (e_K / e_{K−m})^{1/m}: about constant for a
    positive matrix, whose Sinkhorn error falls geometrically (Franklin & Lorenz 1989). None
    once the error has reached float64 rounding, where no rate is left to read."""
    last = min(10, len(worst) - 2)
    start, end = worst[-1 - last].item(), worst[-1].item()
    if last < 1 or end <= 4 * FLOAT64_EPS:
        return None
    return (end / start) ** (1 / last)
