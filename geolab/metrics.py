"""Metrics on residual states and gates (docs/design.md §5): pure functions on torch tensors.

Every function is batched over leading dimensions and works on any device. Inputs in bf16/fp16
(or integer) are cast up to float32 before any reduction; float64 stays float64. Results come
back in that computation dtype, except `amax_gain`/`composite_gain_curve` (always float64) and
the `beta_stats` family (Python floats and lists, ready for JSON and plotly).

Scale: the norm-based metrics divide each matrix/vector by its largest absolute entry before
squaring, so they are exactly scale-invariant and neither overflow at 1e30 nor underflow at 1e-30
(``effective_rank`` squares float32 input in float64 instead, where no square can).
Degenerate inputs (all-zero matrices, zero vectors) have documented finite values, never NaN.
Non-finite entries (a diverged run) make the affected result NaN, like any torch reduction,
except in `beta_stats`, which raises.
"""

import math
import sys
from collections.abc import Sequence
from numbers import Real

import torch

# 2^100 takes the smallest subnormal of float64 (2^-1074) to a normal number whose inverse is
# finite, and cannot overflow a matrix whose largest entry is subnormal.
SUBNORMAL_LIFT = 2.0**100


def _real_float(x, name: str, fn: str) -> torch.Tensor:
    """`x` as a real float tensor, at least float32 (bf16/fp16/int cast up, float64 kept)."""
    x = torch.as_tensor(x)
    if x.is_complex():
        raise ValueError(f"{fn}: {name} has complex dtype {x.dtype}; only real tensors are allowed")
    return x if x.dtype == torch.float64 else x.to(torch.float32)


def _check_matrix(X: torch.Tensor, name: str, fn: str) -> None:
    if X.ndim < 2:
        raise ValueError(
            f"{fn}: {name} must have shape (..., S, D) with at least 2 dims; "
            f"got shape {tuple(X.shape)}"
        )
    if X.shape[-2] == 0 or X.shape[-1] == 0:
        raise ValueError(f"{fn}: {name} needs S >= 1 and D >= 1; got shape {tuple(X.shape)}")


def _check_vectors(x: torch.Tensor, name: str, fn: str) -> None:
    if x.ndim < 1 or x.shape[-1] == 0:
        raise ValueError(
            f"{fn}: {name} must have shape (..., d) with d >= 1; got shape {tuple(x.shape)}"
        )


def _vector_pair(a, b, name_a: str, name_b: str, fn: str):
    """Two batches of d-vectors as real float tensors of one dtype, leading dims broadcast."""
    a, b = _real_float(a, name_a, fn), _real_float(b, name_b, fn)
    _check_vectors(a, name_a, fn)
    _check_vectors(b, name_b, fn)
    names = f"{name_a} and {name_b}"
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"{fn}: {names} must share the last dim; got shapes {tuple(a.shape)} and "
            f"{tuple(b.shape)}"
        )
    try:
        a, b = torch.broadcast_tensors(a, b)
    except RuntimeError as e:
        raise ValueError(
            f"{fn}: {names} leading dims must broadcast; got shapes {tuple(a.shape)} and "
            f"{tuple(b.shape)}"
        ) from e
    dtype = torch.promote_types(a.dtype, b.dtype)
    return a.to(dtype), b.to(dtype)


def _safe_div(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """num / den where den > 0, else num unchanged (callers only hit den = 0 with num = 0)."""
    return num / torch.where(den > 0, den, torch.ones_like(den))


def _unit_scale(x: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    """Divide by max |x| over `dims` (all-zero blocks stay zero): makes later squares safe."""
    return _safe_div(x, x.abs().amax(dim=dims, keepdim=True))


def _check_reduce(reduce: str, fn: str) -> None:
    if reduce not in ("mean", "none"):
        raise ValueError(f"{fn}: reduce={reduce!r} is not allowed; use 'mean' or 'none'")


def effective_rank(X) -> torch.Tensor:
    """Normalised effective rank of each S×D matrix — Su & You 2026, Eq. 8 (docs/design.md §5).

        Rank_eff(X) = exp(H(σ̂)) / min(S, D),   H(σ̂) = −Σ_i σ̂_i log σ̂_i,   σ̂ = σ / Σ_j σ_j

    σ are the singular values of X and 0·log 0 = 0. exp(H) is the Roy & Vetterli (2007)
    effective rank; dividing by min(S, D) puts it in [0, 1]: 1/min(S, D) for rank 1, 1 when all
    singular values are equal (e.g. orthogonal X).

    How σ is computed (geolab's own, same values): for float32 (and lower) input, σ_i² are the
    eigenvalues of the Gram matrix of the shorter side (X Xᵀ, S×S, when S ≤ D), formed and
    solved in float64 — a batch of small symmetric eigenproblems is several times faster than
    an SVD of S×D, and float64 keeps the σ that the Gram's squared condition number would lose
    in float32 (tests compare it with the SVD to 1e-5). float64 input takes
    ``torch.linalg.svdvals`` directly, whose σ near 0 are exact to float64 rounding.

    Geolab's choices: an all-zero matrix (no spectrum) gives exactly 0; floating-point rounding
    above 1 is clipped to 1. Overflow and underflow cannot reach σ: a float32 matrix's Gram in
    float64 holds every square of a float32 number (up to 1e77, down to 1e-90), and a float64
    matrix is divided by its largest |entry| before its SVD (the metric is scale-invariant).

    X: (..., S, D), S, D >= 1 -> (...), float32 (float64 for float64 input). Matrices with a
    non-finite entry give NaN; subnormal ones (a state decayed towards 0) their rank, e.g.
    1/min(S, D) for identical rows.
    """
    fn = "effective_rank"
    X = _real_float(X, "X", fn)
    _check_matrix(X, "X", fn)
    sigma, finite = _singular_values(X)
    total = sigma.sum(dim=-1, keepdim=True)
    p = _safe_div(sigma, total)
    entropy = -torch.xlogy(p, p).sum(dim=-1)
    rank = (torch.exp(entropy) / min(X.shape[-2], X.shape[-1])).clamp(max=1.0)
    rank = torch.where(total.squeeze(-1) > 0, rank, torch.zeros_like(rank))
    return torch.where(finite, rank, torch.full_like(rank, math.nan))


def _singular_values(X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(σ of each matrix, whether its entries are all finite), as ``effective_rank`` describes;
    a matrix with a non-finite entry gets σ = 0 (LAPACK refuses it; the caller marks it NaN)."""
    if X.dtype == torch.float64:
        return _scaled_svdvals(X)
    Xd = X.double()  # the one pass over the states: no scaling pass before it
    gram = Xd @ Xd.mT if X.shape[-2] <= X.shape[-1] else Xd.mT @ Xd
    # Each diagonal entry sums the squares of one row (column) of X: NaN or inf exactly when
    # one of its entries is, so the small Gram tells which matrices are finite.
    finite = torch.isfinite(gram.diagonal(dim1=-2, dim2=-1)).all(dim=-1)
    gram.masked_fill_(~finite[..., None, None], 0.0)
    sigma = torch.linalg.eigvalsh(gram).clamp_min(0).sqrt()
    return sigma.to(X.dtype), finite


def _scaled_svdvals(X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``_singular_values`` of float64 X: the SVD of each matrix divided by its largest |entry|,
    so its σ neither overflow nor underflow."""
    scale = X.abs().amax(dim=(-2, -1))
    finite = torch.isfinite(scale)  # amax propagates NaN, so this is "every entry finite"
    # A subnormal scale has no finite 1/scale: lift those matrices by an exact power of two
    # first (rank is scale-invariant); others × 1.
    subnormal = finite & (scale > 0) & torch.isinf(1 / scale)
    if bool(subnormal.any()):
        lift = torch.where(subnormal, SUBNORMAL_LIFT, 1.0)
        X, scale = X * lift[..., None, None], scale * lift
    inv = torch.where(finite & (scale > 0), 1 / scale, torch.zeros_like(scale))[..., None, None]
    return torch.linalg.svdvals(torch.where(inv > 0, X * inv, 0.0)), finite


def rank_collapse_residual(X, norm: str = "fro") -> torch.Tensor:
    """Relative distance of each S×D matrix from rank 1 with identical rows (docs/design.md §5).

        r(X) = ‖X − 1 x̄ᵀ‖ / ‖X‖,   x̄ = (1/S) Σ_t X_t  (mean over tokens)

    Source: Dong, Cordonnier & Loukas, "Attention is not all you need: pure attention loses rank
    doubly exponentially with depth", ICML 2021, §2: res(X) = X − 1xᵀ with
    x = argmin_x ‖X − 1xᵀ‖, measured in the composite ℓ1,ℓ∞ "norm" ‖M‖_{1,∞} = √(‖M‖_1 ‖M‖_∞)
    (‖·‖_1 max absolute column sum, ‖·‖_∞ max absolute row sum).

    norm="fro" (default, geolab's choice): Frobenius norm. Here the token mean is exactly Dong's
    argmin, so r is their residual relative to ‖X‖_F; r in [0, 1].
    norm="l1inf": Dong's composite norm with the token mean as x (geolab's choice: an upper bound
    of Dong's minimum, which has no closed form); r in [0, 2).

    r = 0 iff all tokens are identical; an all-zero matrix gives 0. Each matrix is divided by its
    largest |entry| first (r is scale-invariant) so the norms cannot overflow.

    X: (..., S, D), S, D >= 1 -> (...), float32 (float64 for float64 input).
    """
    fn = "rank_collapse_residual"
    if norm not in ("fro", "l1inf"):
        raise ValueError(f"{fn}: norm={norm!r} is not allowed; use 'fro' or 'l1inf'")
    X = _real_float(X, "X", fn)
    _check_matrix(X, "X", fn)
    X = _unit_scale(X, (-2, -1))
    R = X - X.mean(dim=-2, keepdim=True)
    if norm == "fro":
        num, den = torch.linalg.matrix_norm(R, "fro"), torch.linalg.matrix_norm(X, "fro")
    else:
        num = torch.sqrt(torch.linalg.matrix_norm(R, 1) * torch.linalg.matrix_norm(R, math.inf))
        den = torch.sqrt(torch.linalg.matrix_norm(X, 1) * torch.linalg.matrix_norm(X, math.inf))
    return _safe_div(num, den)


def norm_deviation(x_in, x_out, reduce: str = "mean") -> torch.Tensor:
    """Relative change of vector norms between input and output (docs/design.md §5, §8).

        dev_i = | ‖x_out,i‖ − ‖x_in,i‖ | / ‖x_in,i‖      (Euclidean norms over the last dim)

    reduce="mean" returns the mean of dev_i over all vectors i (a 0-dim tensor); reduce="none"
    returns dev per vector. This is the E∆ "norm deviation" of Shahmansoori 2026, experiments /
    docs/design.md §8 (0.001 for E∆-MHC-Geo on echo): pass the inputs and the model's outputs over
    the 100 evaluated steps, e.g. x_in, x_out of shape (B, 100, d); an exactly norm-preserving map
    gives 0.

    Geolab's choice for ‖x_in,i‖ = 0: dev_i = 0 if ‖x_out,i‖ = 0 too (norm kept), else +inf (an
    unbounded relative change) — never NaN. Each pair is divided by its common largest |entry|
    first, so norms cannot overflow.

    x_in, x_out: (..., d), same d, leading dims broadcast -> () or (...). Dtype float32 (float64
    if either input is float64).
    """
    fn = "norm_deviation"
    _check_reduce(reduce, fn)
    x_in, x_out = _vector_pair(x_in, x_out, "x_in", "x_out", fn)
    scale = torch.maximum(x_in.abs().amax(dim=-1), x_out.abs().amax(dim=-1)).unsqueeze(-1)
    n_in = torch.linalg.vector_norm(_safe_div(x_in, scale), dim=-1)
    n_out = torch.linalg.vector_norm(_safe_div(x_out, scale), dim=-1)
    diff = (n_out - n_in).abs()
    dev = torch.where(
        n_in > 0,
        _safe_div(diff, n_in),
        torch.where(diff > 0, torch.full_like(diff, math.inf), torch.zeros_like(diff)),
    )
    return dev.mean() if reduce == "mean" else dev


def cosine_alignment(pred, target, reduce: str = "mean") -> torch.Tensor:
    """Cosine similarity between predictions and targets over the last dim (docs/design.md §5, §8).

        cos_i = ⟨p_i, t_i⟩ / (‖p_i‖ ‖t_i‖)

    reduce="mean" returns the mean over all vectors i (0-dim tensor), reduce="none" returns cos
    per vector. This is the E∆ inversion-task alignment of Shahmansoori 2026, experiments (target y
    = −x; E∆ 0.96).

    Geolab's choices: a pair with a zero vector gives 0 (no direction, no alignment), never NaN;
    each vector is divided by its largest |entry| first (cos is scale-invariant); rounding outside
    [−1, 1] is clipped.

    pred, target: (..., d), same d, leading dims broadcast -> () or (...). Dtype float32 (float64
    if either input is float64).
    """
    fn = "cosine_alignment"
    _check_reduce(reduce, fn)
    pred, target = _vector_pair(pred, target, "pred", "target", fn)
    p, t = _unit_scale(pred, (-1,)), _unit_scale(target, (-1,))
    norms = torch.linalg.vector_norm(p, dim=-1) * torch.linalg.vector_norm(t, dim=-1)
    cos = _safe_div((p * t).sum(dim=-1), norms).clamp(-1.0, 1.0)
    return cos.mean() if reduce == "mean" else cos


def synergy(L_base, L_mhc, L_ddl, L_mgt):
    """Synergy coefficient of the MGT ablation — Su & You 2026, Eq. 9 (docs/design.md §5, §8
    protocol 2).

        𝒮 = (L_base − L_MGT) − (L_base − L_mHC) − (L_base − L_DDL)

    i.e. the MGT gain minus the gains of its two components alone (losses: lower is better).
    𝒮 > 0 means the combination beats the sum of its parts (the "orthogonal synergy" hypothesis).

    Arguments are Python numbers (-> float) or tensors of broadcastable shapes (-> tensor), e.g.
    per-seed losses of shape (n_seeds,).
    """
    args = {"L_base": L_base, "L_mhc": L_mhc, "L_ddl": L_ddl, "L_mgt": L_mgt}
    for name, value in args.items():
        if isinstance(value, bool) or not isinstance(value, Real | torch.Tensor):
            raise ValueError(
                f"synergy: {name}={value!r} is not allowed; pass a real number or a tensor"
            )
    return (L_base - L_mgt) - (L_base - L_mhc) - (L_base - L_ddl)


def _stream_mixers(H_list, fn: str) -> list[torch.Tensor]:
    if isinstance(H_list, torch.Tensor):
        if H_list.ndim < 3:
            raise ValueError(
                f"{fn}: H_list as a tensor must have shape (L, ..., n, n); "
                f"got shape {tuple(H_list.shape)}"
            )
        H_list = list(H_list.unbind(0))
    elif not isinstance(H_list, Sequence):
        raise ValueError(f"{fn}: H_list must be a sequence of (..., n, n) tensors or a tensor")
    if len(H_list) == 0:
        raise ValueError(f"{fn}: H_list is empty; pass at least one (..., n, n) matrix")
    mats = []
    for i, H in enumerate(H_list):
        H = _real_float(H, f"H_list[{i}]", fn).to(torch.float64)
        if H.ndim < 2 or H.shape[-1] != H.shape[-2] or H.shape[-1] == 0:
            raise ValueError(
                f"{fn}: H_list[{i}] must be square with shape (..., n, n), n >= 1; "
                f"got shape {tuple(H.shape)}"
            )
        if mats and H.shape[-1] != mats[0].shape[-1]:
            raise ValueError(
                f"{fn}: H_list[{i}] is {H.shape[-1]}×{H.shape[-1]} but H_list[0] is "
                f"{mats[0].shape[-1]}×{mats[0].shape[-1]}; all mixers must share n"
            )
        mats.append(H)
    return mats


def _gains(P: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(‖P‖_∞, ‖P‖_1): max absolute row sum and max absolute column sum of (..., n, n)."""
    return P.abs().sum(dim=-1).amax(dim=-1), P.abs().sum(dim=-2).amax(dim=-1)


def _compose(P: torch.Tensor, H: torch.Tensor, i: int, fn: str) -> torch.Tensor:
    try:
        return H @ P
    except RuntimeError as e:
        raise ValueError(
            f"{fn}: leading dims of H_list[{i}] {tuple(H.shape)} do not broadcast with the "
            f"product so far {tuple(P.shape)}"
        ) from e


def amax_gain(H_list) -> tuple[torch.Tensor, torch.Tensor]:
    """Amax gain of the composite stream mixer — the mHC stability measure (docs/design.md §5).

        P = H_L ⋯ H_2 H_1
        forward = ‖P‖_∞ = max_i Σ_j |P_ij|,   backward = ‖P‖_1 = max_j Σ_i |P_ij|

    Source: Xie et al., "mHC: Manifold-Constrained Hyper-Connections" (2025), the "Amax Gain
    Magnitude" of the composite residual mapping: the forward signal gain is the max absolute
    row sum, the backward gradient gain the max absolute column sum. A product of doubly
    stochastic (mHC) or permutation matrices has both gains exactly 1; unconstrained HC mixers
    can grow or vanish geometrically with depth.

    H_list: the H_res matrices in order of application (H_list[0] acts first), each (..., n, n)
    with broadcastable leading dims, or one tensor (L, ..., n, n). Products run in float64
    (a 200-layer product of HC mixers overflows float32).
    Returns (forward, backward), each (...) float64.
    """
    fn = "amax_gain"
    mats = _stream_mixers(H_list, fn)
    P = mats[0]
    for i, H in enumerate(mats[1:], start=1):
        P = _compose(P, H, i, fn)
    return _gains(P)


def composite_gain_curve(H_list) -> tuple[torch.Tensor, torch.Tensor]:
    """Amax gains of the partial products over depth (docs/design.md §9, notebook 05).

        P_l = H_l ⋯ H_1,   forward[l−1] = ‖P_l‖_∞,   backward[l−1] = ‖P_l‖_1,   l = 1..L

    so forward[-1], backward[-1] equal `amax_gain(H_list)`. Same input and dtype rules as
    `amax_gain`. Returns (forward_curve, backward_curve), each (L, ...) float64, with the leading
    dims broadcast over all of H_list.
    """
    fn = "composite_gain_curve"
    mats = _stream_mixers(H_list, fn)
    P = mats[0]
    curve = [_gains(P)]
    for i, H in enumerate(mats[1:], start=1):
        P = _compose(P, H, i, fn)
        curve.append(_gains(P))
    shape = P.shape[:-2]
    forward = torch.stack([f.expand(shape) for f, _ in curve])
    backward = torch.stack([b.expand(shape) for _, b in curve])
    return forward, backward


def compound2(H) -> torch.Tensor:
    """The second compound matrix of (..., n, n) matrices, (..., m, m) with m = n(n − 1)/2.

        C₂(A)[(i, j), (k, l)] = A_ik A_jl − A_il A_jk,   i < j, k < l (lexicographic pairs)

    Its entries are the 2×2 minors of A. Cauchy–Binet gives C₂(AB) = C₂(A) C₂(B), and the
    eigenvalues of C₂(A) are the products λ_i λ_j (i < j) of A's eigenvalues, so its spectral
    radius is |λ₁| |λ₂| (compound matrices and Cauchy–Binet: Horn & Johnson, *Matrix Analysis*,
    2nd ed. 2013, §0.8.1). Same dtype as H.
    """
    n = H.shape[-1]
    i, j = torch.triu_indices(n, n, offset=1, device=H.device)
    rows_i, rows_j = H[..., i, :], H[..., j, :]  # (..., m, n): rows i and j of every pair
    return rows_i[..., i] * rows_j[..., j] - rows_i[..., j] * rows_j[..., i]


def _log10_spectral_radius_curve(mats: list[torch.Tensor]) -> torch.Tensor:
    """log₁₀ ρ(H_l ⋯ H_1) for l = 1..L, (L,) float64, from (n, n) float64 mixers.

    The product is rescaled by its largest entry after every factor and the scale kept as a
    log, so neither the product nor the result overflows or underflows at any depth (HC's
    product passes 1e308 within a few hundred layers; a doubly stochastic product's second
    eigenvalue falls below 1e−308). The eigenvalues of each rescaled product come from one
    batched ``eigvals``; ρ of a zero product is 0 (−∞ here)."""
    P, log_scale = torch.eye(mats[0].shape[-1], dtype=torch.float64), 0.0
    scaled, logs = [], []
    for H in mats:
        P = H @ P
        top = P.abs().max()
        if top == 0:  # the product vanished: every later one is 0 too
            scaled.append(P)
            logs.append(-math.inf)
            continue
        log_scale += math.log10(top.item())
        P = P / top
        scaled.append(P)
        logs.append(log_scale)
    radius = torch.linalg.eigvals(torch.stack(scaled)).abs().amax(-1)
    return torch.log10(radius) + torch.tensor(logs, dtype=torch.float64)


def second_eigenvalue_curve(H_list) -> tuple[torch.Tensor, torch.Tensor]:
    """|λ₁| and |λ₂| of the partial products P_l = H_l ⋯ H_1 over depth, as log₁₀.

        log₁₀|λ₁(P_l)| = log₁₀ ρ(P_l),   log₁₀|λ₂(P_l)| = log₁₀ ρ(C₂(P_l)) − log₁₀ ρ(P_l),

    with C₂(P_l) = C₂(H_l) ⋯ C₂(H_1) (``compound2``, Cauchy–Binet). Both are the *largest*
    eigenvalue of a product, which a rescaled product gives to float64's relative precision at
    any depth; the explicit product's own second eigenvalue would drown in its rounding once
    |λ₂/λ₁| falls below about 1e−16. |λ₂| is the second largest modulus (= |λ₁| when the top
    eigenvalues are a complex pair). For doubly stochastic mixers λ₁ = 1 and |λ₂|^L measures
    how fast the streams approach their mean (mHC's stream collapse; Xie et al. 2025,
    arXiv:2512.24880, §4.1, on the composite mapping; docs/design.md §2.5).

    H_list: (L, n, n) tensor or a sequence of L (n, n) matrices, n ≥ 2, any real dtype
    (computed in float64). Returns (log10_lambda1, log10_lambda2), each (L,) float64.
    """
    fn = "second_eigenvalue_curve"
    mats = _stream_mixers(H_list, fn)
    if mats[0].ndim != 2 or mats[0].shape[-1] < 2:
        raise ValueError(
            f"{fn}: H_list must hold single (n, n) matrices with n >= 2; "
            f"got shape {tuple(mats[0].shape)}"
        )
    first = _log10_spectral_radius_curve(mats)
    pairs = _log10_spectral_radius_curve([compound2(H) for H in mats])
    return first, pairs - first


def _flat_beta(beta, name: str, fn: str) -> torch.Tensor:
    b = _real_float(beta, name, fn).detach().to("cpu", torch.float64).flatten()
    if b.numel() == 0:
        raise ValueError(f"{fn}: {name} is empty; pass at least one β value")
    bad = int((~torch.isfinite(b)).sum())
    if bad:
        raise ValueError(
            f"{fn}: {name} has {bad} non-finite entries of {b.numel()}; only finite β allowed"
        )
    return b


def _hist_range(lo: float, hi: float, range, fn: str) -> tuple[float, float]:
    if range is None:
        # A constant β (e.g. at init) still gets one bin of width 1 centred on it (wider where
        # ±½ would round away: |β| ≥ 2^19).
        half, big = max(0.5, abs(lo) * 2.0**-20), sys.float_info.max
        return (max(lo - half, -big), min(hi + half, big)) if lo == hi else (lo, hi)
    try:
        r_lo, r_hi = (float(v) for v in range)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{fn}: range={range!r} must be a pair (lo, hi) of numbers") from e
    if not (math.isfinite(r_lo) and math.isfinite(r_hi) and r_lo < r_hi):
        raise ValueError(f"{fn}: range={range!r} must be finite with lo < hi")
    return r_lo, r_hi


# Above this |β| the statistics are computed on β scaled by a power of two (``_stats``).
HUGE_BETA = 2.0**500


def _check_bins(bins, fn: str) -> None:
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise ValueError(f"{fn}: bins={bins!r} is not allowed; use an int >= 1")


def _stats(b: torch.Tensor, bins: int, lo: float, hi: float) -> dict:
    # Sums and squares of β beyond ~1e154 overflow float64 (std of ±1e308 would be inf): such
    # β are scaled by an exact power of two, so every number is the unscaled one's rounding.
    top = max(abs(lo), abs(hi), b.abs().max().item())
    shift = math.frexp(top)[1] if top >= HUGE_BETA else 0
    scaled = b * 2.0**-shift
    hist, edges = torch.histogram(scaled, bins=bins, range=(lo * 2.0**-shift, hi * 2.0**-shift))
    return {
        "count": b.numel(),
        "mean": math.ldexp(scaled.mean().item(), shift),
        "std": math.ldexp(scaled.std(correction=0).item(), shift),
        "frac_negative": (b < 0).double().mean().item(),
        "min": b.min().item(),
        "max": b.max().item(),
        "hist": [int(c) for c in hist.tolist()],
        "edges": [math.ldexp(e, shift) for e in edges.tolist()],
    }


def beta_stats(beta, bins: int = 20, range=None) -> dict:
    """Summary of a set of β gates (docs/design.md §5; Su & You 2026, experiment 3, the β sign
    "phase transition": E[β] > 0 in early layers, a sizeable fraction β < 0 in deep ones).

    beta: tensor of any shape (e.g. one layer's (B, S) or (B, S, D) gates), flattened; finite.
    bins: number of equal-width histogram bins (int >= 1).
    range: (lo, hi) of the histogram; default (min β, max β), widened to (β − ½, β + ½) when
      all β are equal (geolab's choice). Values outside a given range are not counted in "hist".

    Returns Python values (JSON-ready): "count" (number of β), "mean", "std" (population,
    correction 0, so one value gives 0), "frac_negative" (fraction with β < 0 strictly), "min",
    "max", "hist" (list of `bins` ints; the last bin includes its right edge), "edges" (list of
    bins + 1 floats).
    """
    fn = "beta_stats"
    _check_bins(bins, fn)
    b = _flat_beta(beta, "beta", fn)
    lo, hi = _hist_range(b.min().item(), b.max().item(), range, fn)
    return _stats(b, bins, lo, hi)


def beta_stats_per_layer(betas, bins: int = 20, range=None) -> dict:
    """`beta_stats` for each layer, with one histogram range shared by all layers.

    betas: sequence of tensors, one per layer (or residual step), any shapes.
    range: as in `beta_stats`, but the default spans the min/max over all layers so the
      histograms line up as rows of a depth × β heatmap.

    Returns a dict of lists over layers for "count", "mean", "std", "frac_negative", "min",
    "max" and "hist" (list of per-layer count lists), plus "edges": the shared bins + 1 edges.
    """
    fn = "beta_stats_per_layer"
    _check_bins(bins, fn)
    if isinstance(betas, torch.Tensor) or not isinstance(betas, Sequence) or len(betas) == 0:
        raise ValueError(f"{fn}: betas must be a non-empty sequence of tensors, one per layer")
    flat = [_flat_beta(b, f"betas[{i}]", fn) for i, b in enumerate(betas)]
    lo = min(b.min().item() for b in flat)
    hi = max(b.max().item() for b in flat)
    lo, hi = _hist_range(lo, hi, range, fn)
    per_layer = [_stats(b, bins, lo, hi) for b in flat]
    out = {key: [s[key] for s in per_layer] for key in per_layer[0] if key != "edges"}
    out["edges"] = per_layer[0]["edges"]
    return out
