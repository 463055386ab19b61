"""The doubly stochastic stream-mixing matrices of mHC and mHC-lite (docs/design.md §2.5).

Pure, batched, differentiable functions beside ``geolab.operators``: the residual operators act
on one stream, these mix n streams (``geolab.rules.streams``). ``sinkhorn`` approaches the
doubly stochastic matrices by iterating (mHC); ``birkhoff`` builds one exactly as a convex
combination of the n! permutation matrices (mHC-lite).
"""

import itertools

import torch

from geolab.operators import defer, deferrable

# Below this logit spread every entry of every iterate stays a normal float32: each iterate is
# diag(r) M⁰ diag(c) with r and c each spread by at most exp(spread), so after every normalisation
# each entry is ≥ exp(−2·spread)/n, and exp(−60)/n ≫ 1.2e-38.
LINEAR_SPREAD = 30.0


def sinkhorn(logits, iters=20, return_error=False):
    """Sinkhorn–Knopp projection towards the doubly stochastic matrices (mHC).

    Source: docs/design.md §2.5 (mHC residual mixing; Shahmansoori 2026 on its approximation error).
    M⁰ = exp(logits − max), then `iters` rounds of column normalisation followed by row
    normalisation, so rows sum to 1 exactly (to rounding) and columns only approximately.
    logits: (..., n, n) -> M (..., n, n); with return_error=True returns (M, err), err (...) the
    max |column sum − 1| of each matrix (the residual Shahmansoori 2026 criticises).

    Computed in float32 (float64 input stays float64), with autocast disabled, and returned in
    that dtype. The rounds run in the log domain, each normalisation one ``log_softmax``
    (f ← f − lse f, `_sinkhorn_log`), so a column that underflows to zero in exp(logits − max)
    cannot produce 0/0 and every finite input gives a finite M; inside a graph compiled on a CPU
    (``geolab.compiling.checked``) they divide by sums instead (``_SinkhornLinear``; identical
    iterates in exact arithmetic), with "every logit spread below ``LINEAR_SPREAD``" deferred to
    the step's caller. A row or column of −∞ logits (no mass to place) is taken as the limit of a
    constant one (``_revive_dead``), so it gives a finite M too; NaN or +∞ logits give NaN.
    """
    if not isinstance(logits, torch.Tensor) or logits.ndim < 2:
        got = (
            f"shape {tuple(logits.shape)}"
            if isinstance(logits, torch.Tensor)
            else type(logits).__name__
        )
        raise ValueError(f"logits: expected a (..., n, n) tensor, got {got}")
    if logits.shape[-1] != logits.shape[-2]:
        raise ValueError(f"logits: expected square (..., n, n), got shape {tuple(logits.shape)}")
    if not logits.is_floating_point():
        raise ValueError(f"logits: expected a floating-point tensor, got dtype {logits.dtype}")
    if isinstance(iters, bool) or not isinstance(iters, int) or iters < 1:
        raise ValueError(f"iters: must be an int >= 1, got {iters!r}")
    dtype = torch.promote_types(logits.dtype, torch.float32)
    with torch.autocast(device_type=logits.device.type, enabled=False):
        n = logits.shape[-1]
        # Matrices along the last axis, (n, n, T): a sum over a matrix's rows or columns then
        # adds n contiguous vectors instead of reducing T strided runs of n (≈ 3.5× at n = 4).
        stacked = logits.to(dtype).reshape(-1, n, n).permute(1, 2, 0).contiguous()
        if deferrable() and stacked.device.type == "cpu" and stacked.numel():
            # In a compiled CPU step inductor fuses the divisions into one kernel: a compiled
            # call of 32 matrices took 55 µs against 88 µs with the log_softmax rounds. No host
            # read in a graph: the condition goes to the step's caller (geolab.compiling.checked
            # reruns the step eagerly, in the log domain, if it is False).
            defer(_spread(stacked) < LINEAR_SPREAD)
            M = _SinkhornLinear.apply(stacked, iters)
        else:
            M = _sinkhorn_log(_revive_dead(stacked) if _may_be_dead(stacked) else stacked, iters)
        M = M.permute(2, 0, 1).contiguous().view(logits.shape)
    if not return_error:
        return M
    return M, (M.sum(-2) - 1).abs().amax(-1)


def _spread(stacked) -> torch.Tensor:
    """The largest logit spread (max − min) among the matrices of (n, n, T), 0-d: inf with a
    −∞ logit, NaN with a NaN."""
    return (stacked.amax((0, 1)) - stacked.amin((0, 1))).max()


def _may_be_dead(stacked) -> bool:
    """Whether (n, n, T) logits may hold a −∞ (then `_revive_dead` runs): read on a CPU outside
    a graph, where one host read costs a few µs and `_revive_dead` six operators (≈ 10 % of a
    32-token call); elsewhere assumed, without a read (an accelerator would sync, a graph would
    break)."""
    if stacked.device.type != "cpu" or torch.compiler.is_compiling():
        return True
    return bool(torch.isneginf(stacked).any())


def _revive_dead(stacked):
    """(n, n, T) logits with every row, then every column, that is −∞ throughout set to 0.

    Such a row has no mass to normalise (0/0: NaN everywhere). Sinkhorn is invariant to adding
    a constant to a row or a column, so a row of equal logits c gives the same M for every c,
    and 0 is its limit as c → −∞. Finite entries pass through unchanged (bit for bit).
    """
    for dim in (1, 0):  # (n, n, T): a matrix's row runs along dim 1, its column along dim 0
        dead = torch.isneginf(stacked).all(dim, keepdim=True)
        stacked = torch.where(dead, 0.0, stacked)
    return stacked


class _SinkhornLinear(torch.autograd.Function):
    """`sinkhorn`'s rounds as divisions by sums, one autograd node (exact gradient), on
    matrices stacked along the last axis: (n, n, T) -> (n, n, T).

    Forward: M ← exp(f − max f), then `iters` × (M ← M / Σ_col M; M ← M / Σ_row M). Each
    normalisation g = M / s (s = Σ M over the normalised axis) has the vector-Jacobian product
        ∂M = (∂g − Σ ∂g ⊙ g) / s,
    and exp has ∂f = ∂M₀ ⊙ M₀; the backward replays the stored iterates and sums in reverse.
    The form a compiled CPU step takes (``sinkhorn``), safe below ``LINEAR_SPREAD``.
    """

    @staticmethod
    def forward(ctx, logits, iters):
        M = (logits - logits.amax((0, 1), keepdim=True)).exp()
        saved = [M]
        for _ in range(iters):
            for dim in (0, 1):
                s = M.sum(dim, keepdim=True)
                M = M / s
                saved += [s, M]
        ctx.save_for_backward(*saved)
        return M

    @staticmethod
    def backward(ctx, grad):
        M0, *steps = ctx.saved_tensors
        g = grad.contiguous()  # it arrives in the caller's (T, n, n) order
        for i in range(len(steps) // 2 - 1, -1, -1):
            s, out = steps[2 * i], steps[2 * i + 1]
            dim = 0 if i % 2 == 0 else 1
            g = (g - (g * out).sum(dim, keepdim=True)) / s
        return g * M0, None


def _sinkhorn_log(stacked, iters):
    """`sinkhorn`'s rounds in the log domain on matrices stacked along the last axis:
    (n, n, T) -> (n, n, T).

    f ← logits, then `iters` × (f ← log_softmax over each column; f ← log_softmax over each row),
    M = exp f. log_softmax(f) = f − lse(f) is one kernel forward and one backward
    (∂f = ∂g − exp(g)·Σ∂g), and shift-invariant, so no max is subtracted first: 2·iters + 1
    operators and autograd nodes per call. Measured against the division form in one process
    (n = 4, one thread): ≈ 2.2× faster for the views' 32 tokens without a gradient, equal for
    training's 1024 tokens forward + backward (bench/README.md, "Ninth pass").
    """
    f = stacked
    for _ in range(iters):
        for dim in (0, 1):
            f = torch.log_softmax(f, dim)
    return f.exp()


def permutation_matrices(n: int, dtype=torch.float32, device=None) -> torch.Tensor:
    """The n! permutation matrices of size n, (n!, n, n), in ``itertools.permutations`` order:
    P_k[i, σ_k(i)] = 1, so P_0 is the identity. Their convex hull is the Birkhoff polytope."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n: must be an int >= 1, got {n!r}")
    perms = torch.tensor(list(itertools.permutations(range(n))), device=device)
    return torch.eye(n, dtype=dtype, device=device)[perms]


def birkhoff(logits, perms):
    """An exactly doubly stochastic matrix per logit vector, without iterations (mHC-lite).

    Source: Yang & Gao 2026, mHC-lite: You Don't Need 20 Sinkhorn-Knopp Iterations,
    arXiv:2601.05732 (its method, after the Birkhoff–von Neumann theorem: the doubly stochastic
    matrices are exactly the convex combinations of permutation matrices); docs/design.md §2.5.

        a = softmax(logits) ∈ Δ^{n!−1},   H = Σ_k a_k P_k

    Every row and column of H sums to Σ_k a_k = 1 and every entry is ≥ 0 by construction, to
    float rounding only (no truncated iteration, unlike ``sinkhorn``). logits: (..., n!);
    perms: (n!, n, n) from ``permutation_matrices(n)``; returns H (..., n, n). Computed in
    float32 (float64 stays float64) with autocast disabled. Finite logits of any size give a
    finite H (softmax subtracts the max); NaN, +∞ or all −∞ logits give NaN.
    """
    if not isinstance(logits, torch.Tensor) or logits.ndim < 1:
        got = type(logits).__name__ if not isinstance(logits, torch.Tensor) else "a 0-d tensor"
        raise ValueError(f"logits: expected a (..., n!) tensor, got {got}")
    if not logits.is_floating_point():
        raise ValueError(f"logits: expected a floating-point tensor, got dtype {logits.dtype}")
    if perms.ndim != 3 or perms.shape[-1] != perms.shape[-2] or perms.shape[0] != logits.shape[-1]:
        raise ValueError(
            f"perms: expected ({logits.shape[-1]}, n, n) permutation matrices for logits of "
            f"shape {tuple(logits.shape)}, got shape {tuple(perms.shape)}"
        )
    dtype = torch.promote_types(logits.dtype, torch.float32)
    with torch.autocast(device_type=logits.device.type, enabled=False):
        weights = torch.softmax(logits.to(dtype), dim=-1)
        mixed = weights @ perms.to(dtype).flatten(1)  # (..., n!) · (n!, n²): one product
    return mixed.unflatten(-1, perms.shape[1:])
