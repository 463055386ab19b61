"""Notebook 05 — streams: Sinkhorn and the gain of composite mixing products.

Sinkhorn (docs/design.md §2.5) and the stream mixers of the hyper-connection rules (§3.3).
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from geolab import figures
from geolab.explore.view import F64, View, check_int, check_range, num
from geolab.metrics import composite_gain_curve
from geolab.operators import (
    cayley,
    sinkhorn,
)

STREAMS = 4
MAX_ITERS = 50


def mixers(family: str, depth: int, spread: float, iters: int, seed: int) -> torch.Tensor:
    """``depth`` seeded n×n stream mixers of one family, (depth, n, n) float64.

    HC: I + tanh(σG) (unconstrained, tanh-bounded entries, docs/design.md §3.3); mHC: Sinkhorn(σG)
    with ``iters`` iterations in float32, as mHC runs it; orthogonal: the dense Cayley map of the
    skew part of σG (exactly orthogonal, as JPmHC's mixer aims to be). G ~ N(0, 1) entrywise,
    the same G for all three.
    """
    gen = torch.Generator().manual_seed(seed)
    G = spread * torch.randn(depth, STREAMS, STREAMS, generator=gen, dtype=F64)
    if family == "HC":
        return torch.eye(STREAMS, dtype=F64) + torch.tanh(G)
    if family == "mHC":
        return sinkhorn(G.float(), iters=iters).double()
    if family == "orthogonal":
        return cayley((G - G.transpose(-1, -2)) / 2, 1.0)
    raise ValueError(f"family={family!r} is not allowed; choose HC, mHC or orthogonal")


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


def streams_view(iters: int, spread: float, depth: int, seed: int = 0) -> View:
    """05: Sinkhorn on one 4×4 logit matrix, and Amax gains of composite mixers over depth.

    Numbers: after ``iters`` iterations the row sums are exact and the column sums are off by
    an error that shrinks with iterations and grows with the logit spread (docs/design.md §2.5); the
    spectral norm; the final forward (row) and backward (column) Amax gains for HC, mHC and
    orthogonal mixers of the same random draws.
    """
    iters = check_int("iters", iters, 1, MAX_ITERS)
    spread = check_range("spread", spread, 0.0, 10.0)
    depth = check_int("depth", depth, 1, 1000)
    logits = _stream_logits(spread, seed)
    M, err = sinkhorn(logits, iters=iters, return_error=True)
    errors = sinkhorn_errors(spread, seed)
    first = sinkhorn(logits, iters=1)
    start = torch.exp(logits - logits.max())
    gains, finals = {}, {}
    for family in ("HC", "mHC", "orthogonal"):
        fwd, bwd = composite_gain_curve(mixers(family, depth, spread, iters, seed))
        gains[f"{family} forward (rows)"] = fwd
        gains[f"{family} backward (cols)"] = bwd
        finals[family] = (fwd[-1].item(), bwd[-1].item())
    numbers = {
        "row_error": (M.sum(-1) - 1).abs().max().item(),
        "col_error": err.item(),
        "spectral_norm": torch.linalg.matrix_norm(M, ord=2).item(),
        "min_entry": M.min().item(),
        "errors": errors,
        "final_gain": finals,
    }
    readout = [
        (
            r"max $\lvert\text{row sum} - 1\rvert$ (the last step normalises rows)",
            num(numbers["row_error"]),
        ),
        (r"max $\lvert\text{column sum} - 1\rvert$ (the Sinkhorn residual)", num(err.item())),
        (r"$\lVert M\rVert_2$", num(numbers["spectral_norm"])),
    ] + [
        (f"{family}: Amax gain at depth {depth}, forward / backward", f"{num(f)} / {num(b)}")
        for family, (f, b) in finals.items()
    ]
    figs = {
        "heatmaps": figures.heatmaps_figure(
            [start / start.sum(-1, keepdim=True), first, M],
            ["exp(logits), rows normalised", "1 iteration", f"{iters} iterations"],
        ),
        "error": figures.sweep_figure(
            ERROR_ITERS,
            # An exactly converged float32 error is 0; floor it so the log axis can show it.
            {"max |column sum − 1|": np.maximum(errors, 1e-9)},
            current=iters,
            log_y=True,
            title="Finite Sinkhorn is only approximately doubly stochastic",
            x_title="iterations",
            y_title="error",
        ),
        "gain": figures.composite_gain_figure(np.arange(1, depth + 1), gains),
    }
    return View(numbers, readout, figs)
