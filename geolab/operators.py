"""Residual operators as pure, batched, differentiable functions (docs/design.md §2).

Every function broadcasts over arbitrary leading dimensions. `beta`, `gamma` (and the scalar
write value `v` of `delta_update`) may be Python numbers or tensors broadcastable to the leading
shape `(...)`. Shapes below use `d` for the operator width.

Sources: Su & You 2026 = "Geometric and Dynamic Scaling in Deep Transformers", arXiv:2601.01014
(MGT, with DDL's operator); Shahmansoori 2026 = "The E∆-MHC-Geo Transformer", arXiv:2605.06729
(full references: docs/design.md, References). Where a choice is geolab's own it says so.
"""

import contextlib
import math

import torch


def _vec(name, t, d=None, ref=None):
    """Validate a (..., d) floating tensor; `d`/`ref` name the width it must match."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(
            f"{name}: expected a torch.Tensor of shape (..., d), got {type(t).__name__}"
        )
    if t.ndim < 1:
        raise ValueError(f"{name}: expected shape (..., d) with at least one dim, got shape ()")
    if not t.is_floating_point():
        raise ValueError(f"{name}: expected a floating-point tensor, got dtype {t.dtype}")
    if d is not None and t.shape[-1] != d:
        raise ValueError(
            f"{name}: last dim is {t.shape[-1]} (shape {tuple(t.shape)}); it must equal "
            f"d={d}, the last dim of {ref}"
        )
    return t


def _lead(**shapes):
    """Broadcast the leading shapes of the named arguments, or raise naming all of them."""
    first, *rest = shapes.values()
    if all(s == first for s in rest):  # the usual case; torch.broadcast_shapes is ≈ 80 µs here
        return torch.Size(first)
    try:
        return torch.broadcast_shapes(*shapes.values())
    except RuntimeError as err:
        listed = ", ".join(f"{k}: {tuple(s)}" for k, s in shapes.items())
        raise ValueError(
            f"leading shapes do not broadcast ({listed}); allowed: broadcastable (...)"
        ) from err


def _scalar(name, value, like, lead, trailing):
    """A per-leading-index scalar (Python number or tensor) as a tensor ready to broadcast.

    `trailing` singleton dims are appended so it lines up with (..., d) or (..., d, d) operands.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, torch.Tensor)):
        raise ValueError(
            f"{name}: expected a Python number or a tensor of the leading shape, "
            f"got {type(value).__name__}"
        )
    if not isinstance(value, torch.Tensor):
        if not math.isfinite(value):
            raise ValueError(f"{name}: must be finite, got {value}")
        return torch.tensor(value, dtype=like.dtype, device=like.device)
    if not (value.is_floating_point() or value.dtype in (torch.int32, torch.int64)):
        raise ValueError(f"{name}: expected a real tensor, got dtype {value.dtype}")
    _lead(**{"operands": lead, name: value.shape})
    value = value.to(torch.promote_types(value.dtype, like.dtype))
    return value.reshape(value.shape + (1,) * trailing)


def _unit(x):
    """(‖x‖, x/‖x‖) over the last dim; the unit vector is 0 where x = 0.

    Pre-scaling by max|x_i| keeps ‖x‖ free of overflow/underflow for huge or tiny x; the where()
    guards keep both values and gradients finite at x = 0.
    """
    scale = x.abs().amax(-1, keepdim=True)
    nz = scale > 0
    xs = x / torch.where(nz, scale, torch.ones_like(scale))
    n = torch.linalg.vector_norm(xs, dim=-1, keepdim=True)
    return scale * n, xs / torch.where(nz, n, torch.ones_like(n))


def _dot(a, b):
    return (a * b).sum(-1, keepdim=True)


def delta_operator(k, beta):
    """Delta operator of Deep Delta Learning, `A(k, β) = I − β k kᵀ / ‖k‖²`.

    Source: Su & You 2026, Eq. 1, Appendix A.1–A.3 (docs/design.md §2.1). Eigenvalues: 1 on k⊥ (d−1
    times) and 1−β along k; det A = 1−β; β=1 projects onto k⊥, β=2 is the Householder reflection.

    k: (..., d); beta: number or (...) tensor -> (..., d, d).
    k = 0 (geolab's choice): the direction is undefined, so nothing is erased and the result is
    the identity, not NaN; the gradient w.r.t. k there is 0.
    """
    _vec("k", k)
    _, kh = _unit(k)
    b = _scalar("beta", beta, k, k.shape[:-1], 2)
    eye = torch.eye(k.shape[-1], dtype=k.dtype, device=k.device)
    return eye - b * kh.unsqueeze(-1) * kh.unsqueeze(-2)


def householder(k):
    """Householder reflection `H₂(k) = I − 2 k̂ k̂ᵀ`, k̂ = k/‖k‖.

    Source: Su & You 2026, Appendix A.1, Shahmansoori 2026 (docs/design.md §2.4). k: (..., d) ->
    (..., d, d). k = 0 gives the identity (same choice as `delta_operator`; it is not a reflection
    there).
    """
    return delta_operator(k, 2.0)


def householder_apply(x, k):
    """`H₂(k) x = x − 2 k̂ (k̂ᵀx)` in O(d), without forming the matrix.

    Source: Shahmansoori 2026 (docs/design.md §2.4). x: (..., d), k: (..., d) -> (..., d). k = 0
    gives x.
    """
    _vec("x", x)
    _vec("k", k, x.shape[-1], "x")
    _lead(x=x.shape[:-1], k=k.shape[:-1])
    _, kh = _unit(k)
    return x - 2 * kh * _dot(kh, x)


def delta_update(x, k, beta, v):
    """Vector delta residual update `x' = x + β (v − k̂ᵀx) k̂` (= A(k,β) x + β v k̂).

    Source: Su & You 2026, Eq. 2 with d_v = 1, Appendix A.5–A.6, Eq. 16 (docs/design.md §2.2).
    x: (..., d); k: (..., d); beta, v: numbers or (...) tensors -> (..., d).
    k is normalised here (k̂ = k/‖k‖); k = 0 leaves x unchanged.
    """
    _vec("x", x)
    _vec("k", k, x.shape[-1], "x")
    lead = _lead(x=x.shape[:-1], k=k.shape[:-1])
    b = _scalar("beta", beta, x, lead, 1)
    val = _scalar("v", v, x, lead, 1)
    _, kh = _unit(k)
    return x + b * (val - _dot(kh, x)) * kh


def delta_update_matrix(X, k, beta, v):
    """Matrix delta residual update `X' = X + β k̂ (vᵀ − k̂ᵀX)` (= A(k,β) X + β k̂ vᵀ).

    Source: Su & You 2026, Eq. 2, 13–15 (docs/design.md §2.2). X: (..., d, dv); k: (..., d); v:
    (..., dv); beta: number or (...) tensor -> (..., d, dv). k is normalised here; k = 0 leaves X
    unchanged.
    """
    if not isinstance(X, torch.Tensor) or X.ndim < 2:
        raise ValueError(f"X: expected a tensor of shape (..., d, dv), got {_shape_of(X)}")
    _vec("X", X)
    _vec("k", k, X.shape[-2], "X (its dim -2)")
    _vec("v", v, X.shape[-1], "X")
    lead = _lead(X=X.shape[:-2], k=k.shape[:-1], v=v.shape[:-1])
    b = _scalar("beta", beta, X, lead, 2)
    _, kh = _unit(k)
    erased = (kh.unsqueeze(-1) * X).sum(-2)
    return X + b * kh.unsqueeze(-1) * (v - erased).unsqueeze(-2)


def delta_write(x, k, beta, v):
    """Write-only delta update `x' = x + β v k̂`: `delta_update` without its erase term −β (k̂ᵀx) k̂.

    Source: the write half of DDL's update (Zhang et al. 2026, Deep Delta Learning,
    arXiv:2601.00417, §2.1, Eq. (2.2): X' = X + β k (vᵀ − kᵀX)) with the erasure kᵀX removed —
    the write-only control the DDL paper names as missing (docs/design.md §2.2, §3.2). Nothing
    is projected out of x, so the step is the identity plus a gated rank-1 write.
    x: (..., d); k: (..., d); beta, v: numbers or (...) tensors -> (..., d). k is normalised
    here; k = 0 leaves x unchanged.
    """
    _vec("x", x)
    _vec("k", k, x.shape[-1], "x")
    lead = _lead(x=x.shape[:-1], k=k.shape[:-1])
    b = _scalar("beta", beta, x, lead, 1)
    val = _scalar("v", v, x, lead, 1)
    _, kh = _unit(k)
    return x + b * val * kh


def state_expand(h, d_v):
    """DDL's expanded residual state at the embedding: each token's d-vector copied into d_v
    columns, `X₀ = h 1ᵀ ∈ R^{d×d_v}`.

    Source: the official DDL code, github.com/yifanzhang-pro/deep-delta-learning,
    `model/DDL-gpt-mha-rope.py` (`GPT.forward`: the token embedding repeated over the d_v value
    channels). h: (..., d) -> (..., d, d_v), contiguous.
    """
    _vec("h", h)
    if isinstance(d_v, bool) or not isinstance(d_v, int) or d_v < 1:
        raise ValueError(f"d_v={d_v!r} is not allowed; it must be a positive integer")
    return h.unsqueeze(-1).expand(*h.shape, d_v).contiguous()


def state_compress(X, conv, read):
    """DDL's compressor: the d-vector a sublayer reads from the expanded state X.

        c_t[i] = Σ_j r_j Σ_{τ=0}^{K−1} w[i, j, τ] · X_{t−K+1+τ}[i, j]     (X_s = 0 for s < 0)

    a causal depthwise short convolution of kernel K along the sequence, one filter per state
    entry (i, j), then a learned read vector r ∈ R^{d_v} summing the d_v columns. Position t
    reads positions t−K+1 … t only, so the compressor is causal.

    Source: the official DDL code, github.com/yifanzhang-pro/deep-delta-learning,
    `model/DDL-gpt-mha-rope.py` (`ResidualShortConvCompressor`: `DepthwiseShortConv1d` over the
    flattened d·d_v channels, then `sum(conv(X) * read, dim=-1)`; `model/shortconv.py`: the
    causal kernel, whose last tap w[·, K−1] multiplies the current position).

    X: (..., S, d, d_v), the sequence at dim −3; conv: (d, d_v, K); read: (d_v,) ->
    (..., S, d).
    """
    if not isinstance(X, torch.Tensor) or X.ndim < 3:
        raise ValueError(f"X: expected a tensor of shape (..., S, d, d_v), got {_shape_of(X)}")
    _vec("X", X)
    d, d_v = X.shape[-2:]
    if not isinstance(conv, torch.Tensor) or conv.ndim != 3 or conv.shape[:2] != (d, d_v):
        raise ValueError(
            f"conv: expected a tensor of shape (d, d_v, K) = ({d}, {d_v}, K), got {_shape_of(conv)}"
        )
    _vec("read", read, d_v, "X")
    if read.ndim != 1:
        raise ValueError(f"read: expected shape (d_v,) = ({d_v},), got {_shape_of(read)}")
    # The read vector folds into the filters (both are linear in X): one (d, d_v) weight per tap.
    weight = conv * read.unsqueeze(-1)
    kernel, seq = conv.shape[-1], X.shape[-3]
    # K − 1 zero positions before the first: tap τ of position t then reads padded row t + τ.
    padded = torch.nn.functional.pad(X, (0, 0, 0, 0, kernel - 1, 0))
    out = (padded[..., kernel - 1 :, :, :] * weight[..., -1]).sum(-1)
    for tap in range(kernel - 1):
        out = out + (padded[..., tap : tap + seq, :, :] * weight[..., tap]).sum(-1)
    return out


def _shape_of(t):
    return f"shape {tuple(t.shape)}" if isinstance(t, torch.Tensor) else type(t).__name__


def skew(u, v):
    """Rank-2 skew-symmetric generator `A = u vᵀ − v uᵀ` (Aᵀ = −A for any u, v).

    Source: Shahmansoori 2026 (docs/design.md §2.3). u, v: (..., d) -> (..., d, d).
    """
    _vec("u", u)
    _vec("v", v, u.shape[-1], "u")
    _lead(u=u.shape[:-1], v=v.shape[:-1])
    return u.unsqueeze(-1) * v.unsqueeze(-2) - v.unsqueeze(-1) * u.unsqueeze(-2)


def _plane(u, v):
    """Orthonormal basis (e1, e2) of span{u, v}, ‖u‖, ‖v‖ and sin∠(u, v).

    e2 comes from p = (û·û) v̂ − (û·v̂) û, which is exactly 0 when v̂ = ±û (e.g. v = u, v = 2u),
    so exactly parallel inputs give e2 = 0 and sin = 0; one re-orthogonalisation pass keeps
    e2 ⟂ e1 to rounding even when p is tiny (nearly parallel u, v).
    """
    nu, uh = _unit(u)
    nv, vh = _unit(v)
    p = _dot(uh, uh) * vh - _dot(uh, vh) * uh
    p = p - _dot(p, uh) * uh
    sin, e2 = _unit(p)
    return uh, e2, nu, nv, sin


def _cayley_planes(x, u, v, c):
    """Q x for c = β/2 (..., 1) by the two full-width forms of `cayley_apply`'s numerics note.

    The slow, always-safe path: `cayley_apply` runs it only for leading indices whose scalar
    coefficients it cannot trust (nearly parallel u, v with m > 1, extreme ‖u‖, ‖v‖ or β).
    """
    e1, e2, nu, nv, sin = _plane(u, v)
    small = c.abs() * nu * nv <= 1

    # Polynomial form, written with cA (u scaled by c) so that c² is never formed: no overflow
    # in values or gradients for huge β with tiny ‖u‖‖v‖. c is zeroed where this branch is not
    # selected, which keeps its backward finite there.
    c1 = torch.where(small, c, torch.zeros_like(c))
    uc = c1 * u
    cax = uc * _dot(v, x) - v * _dot(uc, x)
    ccax = uc * _dot(v, cax) - v * _dot(uc, cax)
    # t² = c²ω² = (c‖u‖‖v‖)² − (c u·v)² is ≥ 0 exactly; the computed difference can be
    # −O(eps)·m² by cancellation when u ∥ v. Clamping that rounding at 0 changes no input.
    t2 = ((c1.abs() * nu * nv) ** 2 - _dot(uc, v) ** 2).clamp_min(0)
    q_poly = x - 2 / (1 + t2) * (cax - ccax)

    # Plane form: t = cω with ω = ‖u‖‖v‖ sin∠(u, v); multiplying sin in first keeps t = 0
    # (not inf·0) for parallel u, v even when c‖u‖‖v‖ overflows.
    t = c * (nu * (nv * sin))
    big = t.abs() > 1
    t_lo = torch.where(big, torch.zeros_like(t), t)
    r = 1 / torch.where(big, t, torch.ones_like(t))
    sin_theta = torch.where(big, 2 * r / (1 + r * r), 2 * t_lo / (1 + t_lo * t_lo))
    one_m_cos = torch.where(big, 2 / (1 + r * r), 2 * t_lo * t_lo / (1 + t_lo * t_lo))
    p1, p2 = _dot(e1, x), _dot(e2, x)
    q_plane = x - sin_theta * (e1 * p2 - e2 * p1) - one_m_cos * (e1 * p1 + e2 * p2)
    return torch.where(small, q_poly, q_plane)


def _cayley_dots(x, u, v):
    """The five dot products u·u, v·v, u·v, u·x, v·x, each (..., 1): all the Cayley
    coefficients read of width d."""
    return _dot(u, u), _dot(v, v), _dot(u, v), _dot(u, x), _dot(v, x)


def _cayley_coeffs(c, uu, vv, uv, ux, vx):
    """Per-index scalars (a, b, ok), each (..., 1), with Q x = x + a u + b v where ok is True,
    from c = β/2 and `_cayley_dots` — the guarded form, for inputs `_polynomial_everywhere`
    turned down.

    Everything here runs on (..., 1) tensors. Where ok is False, a = b = 0 with zero gradient
    (the caller substitutes `_cayley_planes` there).
    """
    lo, hi, tame_c = _limits(uu.dtype)
    with torch.no_grad():
        in_range = ((uu == 0) | ((uu >= lo) & (uu <= hi))) & ((vv == 0) | ((vv >= lo) & (vv <= hi)))
        nn = uu.sqrt() * vv.sqrt()
        small = c.abs() * nn <= 1
        sin2 = (uu * vv - uv * uv) / torch.where(nn > 0, nn * nn, torch.ones_like(nn))
        # The plane form from u, v needs 1/sin² ≤ 4: the rounding of the cancelling
        # coefficients grows like eps/sin², so nearly parallel u, v go to `_cayley_planes`.
        tame = c.abs() <= tame_c
        ok = in_range & torch.where(small, tame, sin2 >= 0.25)
    zero, one = torch.zeros_like(uu), torch.ones_like(uu)
    uu, vv, uv, ux, vx = (torch.where(ok, z, zero) for z in (uu, vv, uv, ux, vx))
    vax, uax, g = _cross_terms(uu, vv, uv, ux, vx)

    # Each form is computed only where some index takes it (at init every m ≪ 1, so the plane
    # form's two dozen operators are skipped); entries no form selects stay exactly 0.
    a = b = zero
    poly = ok & small
    if _some(poly):
        # Huge β on tiny u, v is left to `_cayley_planes` (`tame`), so no product overflows.
        cp = torch.where(poly, c, torch.zeros_like(c))
        a, b = _poly_coeffs(cp, ux, vx, vax, uax, g, where=(poly, zero))
    plane = ok & ~small
    if _some(plane):
        # m > 1: Q x = x − sinθ B x + (1 − cosθ) B² x with B = A/ω, in r = 1/t for |t| > 1.
        w = torch.where(plane, g, one).sqrt()
        cb = torch.where(plane, c, one)
        with torch.no_grad():
            big = cb.abs() * w > 1
        t_lo = torch.where(big, zero, cb * w)
        r = torch.where(big, 1 / cb, one) / w
        sin_theta = torch.where(big, 2 * r / (1 + r * r), 2 * t_lo / (1 + t_lo * t_lo))
        one_m_cos = torch.where(big, 2 / (1 + r * r), 2 * t_lo * t_lo / (1 + t_lo * t_lo))
        s1, s2 = sin_theta / w, one_m_cos / (w * w)
        a = torch.where(plane, s2 * vax - s1 * vx, a)
        b = torch.where(plane, s1 * ux - s2 * uax, b)
    return a, b, ok


def _cross_terms(uu, vv, uv, ux, vx):
    """v·(A x), u·(A x) and ω² = ‖u‖²‖v‖² − (u·v)² from the five dot products, A = u vᵀ − v uᵀ
    (A²x = u (v·Ax) − v (u·Ax))."""
    vax = uv * vx - vv * ux
    uax = uu * vx - uv * ux
    g = (uu * vv - uv * uv).clamp_min(0)  # ω² ≥ 0 exactly; see `_cayley_planes` on the clamp
    return vax, uax, g


def _poly_coeffs(c, ux, vx, vax, uax, g, where=None):
    """m ≤ 1: Q x = x − k1 (Ax − c A²x), k1 = 2c/(1+t²), t² = c·(c ω²): the coefficients
    (a, b) of u and v, from u·x, v·x and `_cross_terms`; ``where`` = (mask, other) keeps each
    where mask is set, other elsewhere."""

    def keep(t):
        return t if where is None else torch.where(where[0], t, where[1])

    k1 = 2 * c / (1 + c * (c * g))
    a = keep(k1 * (c * vax - vx))
    return a, keep(k1 * (ux - c * uax))


def _limits(dtype):
    """(lo, hi, tame_c) of `_cayley_coeffs`' guards: ‖u‖², ‖v‖² in [√tiny, √max] (or exactly 0)
    keep uu·vv and ω² free of under/overflow; the polynomial's gradient carries c³ (through
    t² = c·(c ω²)), and |c| ≤ max^(1/5) keeps it finite."""
    fin = torch.finfo(dtype)
    return fin.tiny**0.5, fin.max**0.5, fin.max**0.2


# Checks a compiled step could not read on the host: bool tensors its caller reads after it
# (`take_deferred`; geolab.compiling reruns the step eagerly when one is False). Only inside
# `deferring`: a graph compiled elsewhere (torch.compile of a whole model) reads them on the
# host, breaking there, as nobody would read a deferred one.
_DEFERRED: list[torch.Tensor] = []
_deferring = False


@contextlib.contextmanager
def deferring():
    """Inside: a graph being traced defers its checks (`defer`) instead of reading them."""
    global _deferring
    old, _deferring = _deferring, True
    take_deferred()  # none left over from an interrupted step
    try:
        yield
    finally:
        _deferring = old


def deferrable() -> bool:
    """Whether a check may be deferred: a graph being traced inside `deferring`."""
    return _deferring and torch.compiler.is_compiling()


def take_deferred() -> list[torch.Tensor]:
    """The deferred checks (0-d bool tensors) left since the last call, and forget them."""
    flags = list(_DEFERRED)
    _DEFERRED.clear()
    return flags


def defer(flag: torch.Tensor) -> None:
    """Leave ``flag`` (0-d bool tensor, True when the branch a compiled graph took was right)
    for the compiled step's caller."""
    _DEFERRED.append(flag)


def _polynomial_everywhere(c, uu, vv, *squares, finite=None) -> bool:
    """Whether every index takes the polynomial form with no guard needed: ‖u‖², ‖v‖² in
    [lo, hi] of `_limits` or exactly 0, each of ``squares`` (squared norms of vectors that get
    normalised, where an underflow to 0 would lose the direction) in [lo, hi], m = |c|‖u‖‖v‖ ≤ 1,
    |c| ≤ tame_c, and ``finite`` (a (..., 1) tensor) finite throughout. Then the guards of
    `_cayley_coeffs` would change no value and no gradient, so the callers use the polynomial
    directly (as at init and in training, where every m ≪ 1). NaN anywhere answers False (the
    guarded path handles it).

    Eagerly, one host read per call: on a CPU a few µs, on an accelerator one sync (the guarded
    path syncs too, on its ``ok.all()``). In a graph traced inside `deferring` there is no host
    read (it would break the graph inside the rule, splitting each layer into two dozen
    frames): the graph takes the polynomial form and the same conditions go, as a bool tensor,
    to `defer`; the compiled step's caller reads them after it and reruns the step eagerly if
    one failed (``geolab.compiling.checked``). Any other graph breaks at the host read.
    """
    if deferrable():
        defer(_polynomial_mask(c, uu, vv, *squares, finite=finite))
        return True
    return _polynomial_on_host(c, uu, vv, *squares, finite=finite)


@torch.compiler.disable
def _polynomial_on_host(c, uu, vv, *squares, finite=None) -> bool:
    """`_polynomial_everywhere` by one host read (left out of a graph: a break there)."""
    if not all(t.numel() for t in (c, uu, vv)):
        return False
    lo, hi, tame_c = _limits(uu.dtype)
    m = c.abs()
    mnn = m * (uu.sqrt() * vv.sqrt())  # the same m as `_cayley_coeffs`' guards compute
    cols = [uu, vv, *squares, mnn, m] + ([] if finite is None else [finite.abs()])
    shape = mnn.shape
    if any(t.shape != shape for t in cols):  # broadcast leading dims, or a number β
        shape = _lead(**{str(i): t.shape for i, t in enumerate(cols)})
        cols = [t.expand(shape) for t in cols]
    # One host read of every column's min and max: ≈ 10 small operators on (..., 1) tensors.
    low, high = torch.aminmax(torch.cat(cols, -1).reshape(-1, len(cols)), dim=0)
    got = torch.cat([low, high]).tolist()
    n, squared = len(cols), 2 + len(squares)
    low, high = got[:squared], got[n : n + squared]
    m_nn, m_max, big = got[n + squared :] + [0.0] * (finite is None)
    # Written so that NaN (every comparison False) answers False.
    if not (all(b <= hi for b in high) and m_nn <= 1 and m_max <= tame_c and math.isfinite(big)):
        return False
    if all(lo <= a for a in low):
        return True
    # ‖u‖ = 0 or ‖v‖ = 0 is allowed (the polynomial gives Q = I there exactly): the minima
    # again without zeros, once, and only here.
    if not all(lo <= a for a in low[2:]):
        return False
    return all(lo <= torch.where(s == 0, lo, s).amin().item() for s in (uu, vv))


def _polynomial_mask(c, uu, vv, *squares, finite=None) -> torch.Tensor:
    """`_polynomial_everywhere`'s conditions as a 0-d bool tensor, no host read (for a graph)."""
    lo, hi, tame_c = _limits(uu.dtype)
    m = c.abs()
    ok = (m * (uu.sqrt() * vv.sqrt()) <= 1) & (m <= tame_c)
    for s in (uu, vv):
        ok = ok & ((s == 0) | ((s >= lo) & (s <= hi)))
    for s in squares:
        ok = ok & (s >= lo) & (s <= hi)
    if finite is not None:
        ok = ok & finite.isfinite()
    return ok.all()


def _some(mask):
    """Whether any entry of ``mask`` is set — asked on a CPU only: on an accelerator the answer
    costs a host sync, dearer than computing a form no index takes. (A step compiled inside
    `deferring` never gets here: it takes the polynomial form, `_polynomial_everywhere`.)"""
    return mask.device.type != "cpu" or bool(mask.any())


def _patch(y, ok, fn, *args):
    """y (..., d) with the rows where ok (..., 1) is False replaced by fn(*args) on those rows.

    args are (..., k) tensors or scalars broadcastable to y's leading shape; fn sees only the
    selected rows (flattened to (n, k)), so the full-width fallback costs in proportion to them.
    """
    lead = y.shape[:-1]
    rows = (~ok).expand(*lead, 1).reshape(-1).nonzero().squeeze(-1)

    def take(a):
        k = a.shape[-1] if a.ndim else 1
        return a.expand(*lead, k).reshape(-1, k)[rows]

    fixed = fn(*(take(a) for a in args))
    return y.reshape(-1, y.shape[-1]).index_put((rows,), fixed).reshape(y.shape)


def cayley_apply(x, u, v, beta):
    """Cayley rotation `Q x`, `Q = (I + cA)⁻¹(I − cA)`, `A = u vᵀ − v uᵀ`, `c = β/2`, no solve.

    Source: Shahmansoori 2026 (docs/design.md §2.3). With ω² = ‖u‖²‖v‖² − (u·v)² (A³ = −ω²A), t =
    cω:
        Q = I − 2c/(1+t²)·A + 2c²/(1+t²)·A²      (rotation of span{u,v} by θ = 2·atan t).
    x, u, v: (..., d); beta: number or (...) tensor -> (..., d). O(d) per vector.

    Since Ax = u (v·x) − v (u·x) and A²x = u (v·Ax) − v (u·Ax), Q x = x + a u + b v with
    per-index scalars a, b built from the five dot products u·u, v·v, u·v, u·x, v·x; only those
    and the final combine touch width d (geolab's own arrangement, same Q).

    Numerics (geolab's own): two exact forms of the same Q, chosen per leading index by the
    size of the generator m = |c|‖u‖‖v‖ ≥ |t|.
    * m ≤ 1: the polynomial above, a = k1(c (v·Ax) − v·x), b = k1(u·x − c (u·Ax)),
      k1 = 2c/(1+t²). It is a rational function of (u, v, β), so values and gradients are
      exact at u = 0, v = 0, u ∥ v and β = 0 (a u + b v = 0 exactly there, Q x = x).
    * m > 1: the same rotation written with B = A/ω (B² = −projector onto the plane),
        Q x = x − sinθ·Bx + (1 − cosθ)·B²x,
      with sinθ = 2t/(1+t²), 1−cosθ = 2t²/(1+t²) rewritten in r = 1/t when |t| > 1. No c² or
      t² is ever formed, so huge β (1e30 in float32) gives neither overflow nor inf/inf. The
      coefficients of u and v carry 1/ω and 1/ω², whose cancellation loses ~eps/sin²∠(u, v);
      so this scalar form is used only for sin² ≥ 1/4.
    * Every other index — m > 1 with nearly parallel u, v; m ≤ 1 with |c| > max^(1/5) of the
      dtype (huge β on tiny u, v); ‖u‖², ‖v‖² outside [√tiny, √max] — takes the full-width
      form (`_cayley_planes`, computed only on the indices that need it): the polynomial as
      above, or the rotation in a re-orthogonalised orthonormal basis (e1, e2) of the plane,
      which keeps Q orthogonal to rounding even for nearly parallel u, v.
    θ → π as β → ∞ but the exact θ never reaches π. Exactly parallel u, v (v̂ = ±û) with m > 1
    return x exactly, but the gradient there is that of the identity (0 w.r.t. u, v): the plane
    basis is undefined, so the exact derivative −2c(dA)x is not recovered in that branch (it is
    for m ≤ 1, which covers u = 0 and v = 0).
    """
    _vec("x", x)
    d = x.shape[-1]
    _vec("u", u, d, "x")
    _vec("v", v, d, "x")
    lead = _lead(x=x.shape[:-1], u=u.shape[:-1], v=v.shape[:-1])
    c = _scalar("beta", beta, x, lead, 1) / 2
    dots = _cayley_dots(x, u, v)
    if _polynomial_everywhere(c, *dots[:2]):
        a, b = _poly_coeffs(c, *dots[3:], *_cross_terms(*dots))
        ok = None
    else:
        a, b, ok = _cayley_coeffs(c, *dots)
    # a u + b v is summed (rounded products, no fused multiply-add) before x is added, so it
    # cancels to exactly 0 when u ∥ v exactly.
    y = x + (a * u + b * v)
    if ok is not None and not ok.all():
        y = _patch(y, ok, _cayley_planes, x, u, v, c)
    return y


def cayley_angle(u, v, beta):
    """Rotation angle of the rank-2 Cayley map, `θ = 2·arctan(β/2 · ω)`, ω = ‖u‖‖v‖ sin∠(u,v).

    Source: Shahmansoori 2026, Theorem 4.6 (docs/design.md §2.3). Q has eigenvalues e^{±iθ} and 1
    (d−2 times); |θ| < π for every finite β (the computed value rounds to π once tan(θ/2) exceeds
    ~1/eps).
    u, v: (..., d); beta: number or (...) tensor -> (...). ω is computed from an orthonormal
    basis of the plane (no cancellation for nearly parallel u, v); u = 0, v = 0, u ∥ v give 0.
    """
    _vec("u", u)
    _vec("v", v, u.shape[-1], "u")
    lead = _lead(u=u.shape[:-1], v=v.shape[:-1])
    c = _scalar("beta", beta, u, lead, 1) / 2
    _, _, nu, nv, sin = _plane(u, v)
    return (2 * torch.atan(c * (nu * (nv * sin)))).squeeze(-1)


def cayley(A, beta):
    """Dense Cayley transform `Q = (I + βA/2)⁻¹ (I − βA/2)` via `torch.linalg.solve`.

    Source: Shahmansoori 2026 (docs/design.md §2.3, §3.5 streams). A: (..., n, n), beta: number or
    (...) tensor -> (..., n, n). Q is orthogonal with det +1 when A is skew-symmetric (Aᵀ = −A);
    that is not checked here (a data-dependent check would force a host sync). I + cA is invertible
    for every skew A and real c. Reference and teaching path; models use `cayley_apply`.
    """
    if not isinstance(A, torch.Tensor) or A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"A: expected a square (..., n, n) tensor, got {_shape_of(A)}")
    if not A.is_floating_point():
        raise ValueError(f"A: expected a floating-point tensor, got dtype {A.dtype}")
    c = _scalar("beta", beta, A, A.shape[:-2], 2) / 2
    eye = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    return torch.linalg.solve(eye + c * A, eye - c * A)


def fixed_point_cayley(w_s, a, iters, start=None):
    """JPmHC's iterative Cayley: ``Y ← I + (a/2) W_s (I + Y)``, ``iters`` rounds from ``start``.

    Source: Sengupta, Wang & Brunswic, JPmHC, Algorithm 8 (docs/design.md §3.4). w_s: (..., n, n)
    skew; start: (..., n, n) or None for Y₀ = I (geolab's ``jpmhc``; the JPmHC paper and the E∆
    reference start at I + a·W_s). The fixed point is the Cayley transform
    (I − aW_s/2)⁻¹(I + aW_s/2); a few rounds are only approximately orthogonal.
    """
    eye = torch.eye(w_s.shape[-1], device=w_s.device, dtype=w_s.dtype)
    y = eye.expand_as(w_s) if start is None else start
    for _ in range(iters):
        y = eye + (a / 2) * w_s @ (eye + y)
    return y


def _cayley_matrix(u, v, beta):
    """Dense rank-2 Cayley Q (..., d, d) from the closed form applied to the identity columns."""
    d = u.shape[-1]
    eye = torch.eye(d, dtype=u.dtype, device=u.device)
    if isinstance(beta, torch.Tensor):
        beta = beta.unsqueeze(-1)
    return cayley_apply(eye, u.unsqueeze(-2), v.unsqueeze(-2), beta).transpose(-1, -2)


def hybrid_operator(u, v, k, beta, gamma):
    """Dense E∆-MHC-Geo hybrid `G_γ = γ Q(u, v, β) + (1 − γ) H₂(k)`.

    Source: Shahmansoori 2026 (docs/design.md §2.4). Orthogonal only at γ ∈ {0, 1}; in between its
    singular values drop below 1 (a convex combination of two orthogonal maps has ‖G‖₂ ≤ 1).
    u, v, k: (..., d); beta, gamma: numbers or (...) tensors -> (..., d, d).
    Q is built from the closed form (`cayley_apply`) applied to the identity.
    """
    _vec("u", u)
    d = u.shape[-1]
    _vec("v", v, d, "u")
    _vec("k", k, d, "u")
    lead = _lead(u=u.shape[:-1], v=v.shape[:-1], k=k.shape[:-1])
    g = _scalar("gamma", gamma, u, lead, 2)
    return g * _cayley_matrix(u, v, beta) + (1 - g) * householder(k)


def hybrid_apply(x, u, v, k, beta, gamma):
    """`G_γ x = γ Q x + (1 − γ) H₂(k) x` in O(d) per vector.

    Source: Shahmansoori 2026 (docs/design.md §2.4, §3.5).

    x, u, v, k: (..., d); beta, gamma: numbers or (...) tensors -> (..., d).
    Fused with the scalar form of `cayley_apply` (Q x = x + a u + b v) and H₂(k) x = x − 2
    (k·x)/(k·k) k (geolab's arrangement, same G_γ):
        G_γ x = x + γa u + γb v − 2(1 − γ)(k·x)/(k·k) k,
    from seven dot products (u·u, v·v, u·v, u·x, v·x, k·k, k·x) and three fused multiply-adds,
    when one host check (`_polynomial_everywhere`, ‖k‖² in range too) finds every index in the
    polynomial form — at init and in training, with or without a graph. Otherwise the guarded
    form (`_hybrid_guarded`) runs, as `cayley_apply` does; k = 0 (or ‖k‖² outside [√tiny, √max])
    goes there, and k = 0 gives γ Q x + (1 − γ) x with zero gradient w.r.t. k.
    """
    _vec("x", x)
    d = x.shape[-1]
    _vec("u", u, d, "x")
    _vec("v", v, d, "x")
    _vec("k", k, d, "x")
    lead = _lead(x=x.shape[:-1], u=u.shape[:-1], v=v.shape[:-1], k=k.shape[:-1])
    c = _scalar("beta", beta, x, lead, 1) / 2
    g = _scalar("gamma", gamma, c, lead, 1)
    dots = _cayley_dots(x, u, v)
    kk = _dot(k, k)
    # (k·x)/‖k‖², the coefficient of k in H₂(k) x = x − 2 (k·x)/‖k‖² k (used only where the
    # check found every ‖k‖² in range).
    kx = _dot(k, x) / kk
    if not _polynomial_everywhere(c, *dots[:2], kk, finite=kx):
        return _hybrid_guarded(x, u, v, k, c, g, dots)
    a, b = _poly_coeffs(c, *dots[3:], *_cross_terms(*dots))
    y = torch.addcmul(x, u, g * a)
    # In place on a fresh tensor: addcmul's backward reads its operands, never its output.
    y.addcmul_(v, g * b)
    return y.addcmul_(k, -2 * (1 - g) * kx)


def _hybrid_guarded(x, u, v, k, c, g, dots):
    """`hybrid_apply` for inputs outside the polynomial regime: `_cayley_coeffs`' per-index
    forms, k̂ through the overflow-safe `_unit`, and the full-width forms on the indices that
    need them (γ Q x + (1 − γ) H₂ x there)."""
    a, b, ok = _cayley_coeffs(c, *dots)
    _, kh = _unit(k)
    h = -2 * (1 - g) * _dot(kh, x)
    y = x + ((g * a) * u + (g * b) * v + h * kh)
    if not ok.all():
        y = _patch(y, ok, _hybrid_planes, x, u, v, c, kh, g)
    return y


def _hybrid_planes(x, u, v, c, kh, g):
    return g * _cayley_planes(x, u, v, c) + (1 - g) * (x - 2 * kh * _dot(kh, x))


def gate_regularizer(gamma):
    """Midpoint-collapse regulariser `L_gate(γ) = 4γ(1 − γ)`; dL/dγ = 4 − 8γ, zero at γ = ½.

    Source: Shahmansoori 2026, Theorem 7.3 (docs/design.md §2.4). gamma: number or tensor -> same
    shape.
    """
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float, torch.Tensor)):
        raise ValueError(f"gamma: expected a number or a tensor, got {type(gamma).__name__}")
    return 4 * gamma * (1 - gamma)
