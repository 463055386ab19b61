"""A3 — effective rank and rank collapse (docs/design.md §5; Su & You 2026, Eq. 8; Dong et al.
2021).

Stubs: ``effective_rank(X)``, ``rank_profile(model, x)``, ``collapse_curves(depth, seed)``.
``setups.make_stack`` is the fixture the notebook and the checks share, so a student's curves
and the reference curves come from the same randomly initialised stack and input.
"""

import torch

from geolab.assignments.checks import as_tensor, close, describe, fail, forbid, observe
from geolab.assignments.properties import Properties, stubs
from geolab.assignments.setups import make_stack
from geolab.metrics import effective_rank as ref_effective_rank
from geolab.probe import rank_profile as ref_rank_profile

F64 = torch.float64
RULES = ("noskip", "preln", "mgt")
BANNED = ("geolab.metrics.effective_rank", "geolab.probe.rank_profile")


def with_spectrum(sigma: torch.Tensor, S: int, D: int, g: torch.Generator) -> torch.Tensor:
    """A random S×D float64 matrix whose nonzero singular values are ``sigma`` (r of them,
    r <= min(S, D)): U diag(σ) Vᵀ with U (S, r), V (D, r) orthonormal columns (QR of Gaussians)."""
    r = len(sigma)
    u, _ = torch.linalg.qr(torch.randn(S, r, generator=g, dtype=F64))
    v, _ = torch.linalg.qr(torch.randn(D, r, generator=g, dtype=F64))
    return u * sigma @ v.T


def eq8(sigma: torch.Tensor, S: int, D: int) -> torch.Tensor:
    """Su & You 2026, Eq. 8 from the nonzero singular values themselves: exp(−Σ p log p) /
    min(S, D), p = σ / Σσ. No SVD: the value an S×D matrix built by :func:`with_spectrum` must
    get, which a statistic of its entries (mean|x| / max|x|, ...) does not."""
    p = sigma / sigma.sum()
    return torch.exp(-(p * p.log()).sum()) / min(S, D)


def _spectra(n: int, S: int, D: int, g: torch.Generator):
    """``n`` S×D matrices of drawn spectra (1 to min(S, D) nonzero σ in [0.1, 1.1]) and their
    Eq. 8 values: (matrices (n, S, D), values (n,))."""
    mats, values = [], []
    for _ in range(n):
        r = 1 + int(torch.randint(0, min(S, D), (), generator=g))
        sigma = 0.1 + torch.rand(r, generator=g, dtype=F64)
        mats.append(with_spectrum(sigma, S, D, g))
        values.append(eq8(sigma, S, D))
    return torch.stack(mats), torch.stack(values)


def check_effective_rank(fn, seed: int = 0):
    """``effective_rank(X: (..., S, D)) -> (...)``: exp(entropy of σ/Σσ) / min(S, D)."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(3, 7, 5, generator=g, dtype=torch.float64)
    Y = torch.randn(4, 9, generator=g, dtype=torch.float64)
    # the guards' edge cases, drawn: a shape with a side of 1 or more, zero matrices at some
    # places of a batch, a block of zero columns (singular values exactly 0)
    S, D = (int(n) for n in torch.randint(1, 7, (2,), generator=g))
    Z, z_want = _spectra(5, S, D, g)
    zeroed = torch.randperm(5, generator=g)[: 1 + int(torch.randint(0, 3, (), generator=g))]
    Z[zeroed], z_want[zeroed] = 0.0, 0.0
    # three 7×5 matrices of drawn spectra, for the scale check: their values are pinned
    K, k_want = _spectra(3, 7, 5, g)
    P = torch.zeros(6, 5, dtype=F64)
    width = 1 + int(torch.randint(0, 4, (), generator=g))
    P[:, :width] = torch.randn(6, width, generator=g, dtype=F64)

    def call(X):
        with forbid(BANNED, fn, label=f"effective_rank({describe(X=X)})"):
            return fn(X)

    checks = Properties()

    @checks.add("effective_rank: matches Eq. 8 (batched, S > D and S < D)", 2.0)
    def matches():
        close(call(X), ref_effective_rank(X), f"effective_rank({describe(X=X)})")
        close(call(Y), ref_effective_rank(Y), f"effective_rank({describe(X=Y)})")

    @checks.add("effective_rank: 1/min(S, D) for rank 1, 1 for orthonormal")
    def extremes():
        a, b = torch.randn(6, 1, generator=g, dtype=F64), torch.randn(1, 4, generator=g, dtype=F64)
        close(call(a @ b), torch.tensor(1 / 4, dtype=F64), "effective_rank of a rank-1 6×4 "
              "matrix (expected 1/min(S, D))")  # fmt: skip
        q, _ = torch.linalg.qr(torch.randn(6, 4, generator=g, dtype=F64))
        close(call(q), torch.tensor(1.0, dtype=F64), "effective_rank of a 6×4 matrix with "
              "orthonormal columns (all σ equal: expected 1)")  # fmt: skip
        # [M 0] has M's singular values and zeros: the same entropy, divided by a larger min
        close(call(P), call(P[:, :width]) * min(6, width) / 5, f"effective_rank of a 6×5 "
              f"matrix whose last {5 - width} columns are 0 (σ exactly 0: 0·log 0 = 0) vs that "
              "of its nonzero columns")  # fmt: skip

    @checks.add("effective_rank: 0 (not NaN) for an all-zero matrix, beside others in a batch")
    def zero():
        out = as_tensor(call(Z), "effective_rank", (5,))
        if torch.isnan(out).any():
            fail("effective_rank of an all-zero matrix is NaN; return 0 (0·log 0 = 0, Σσ = 0)")
        close(out, z_want, f"effective_rank of a batch of {S}×{D} matrices (all-zero ones, and "
              "ones of known singular values: Eq. 8 computed from them)")  # fmt: skip

    @checks.add("effective_rank: scale invariant, from 1e-300 to 1e300")
    def scale_free():
        # at 1e±300 an unscaled float64 Gram XᵀX overflows to inf or underflows to 0 (≈ 1e±154)
        for c in (1e-300, 1e-150, 1.0, 1e3, 1e150, 1e300):
            close(call(c * K), k_want, f"effective_rank({c:g}·X) for 7×5 matrices X of known "
                  "singular values (Eq. 8 computed from them)")  # fmt: skip

    return checks.run()


def check_rank_profile(fn, seed: int = 0):
    """``rank_profile(model, x) -> (n_steps + 1,)``: embedding, then after every residual step."""

    def case(residual, depth):
        model, x = make_stack(residual, depth, seed)
        want = ref_rank_profile(model, x)
        with forbid(BANNED, fn, label=f"rank_profile(a {depth}-layer {residual} stack, x)"):
            got = observe(fn, "rank_profile_on_stack", residual, depth, seed)
        close(got, want, f"rank_profile of a {depth}-layer {residual} stack", atol=1e-4)

    depths = torch.randint(2, 6, (3,), generator=torch.Generator().manual_seed(seed)).tolist()
    checks = Properties()
    checks.add("rank_profile: matches geolab on a preln stack")(lambda: case("preln", depths[0]))
    checks.add("rank_profile: matches geolab on a pure-attention stack")(
        lambda: case("noskip", depths[1])
    )
    checks.add("rank_profile: matches geolab on an mgt stack")(lambda: case("mgt", depths[2]))
    return checks.run()


def check_collapse_curves(fn, seed: int = 0):
    """``collapse_curves(depth, seed) -> {"noskip": (depth+1,), "preln": ..., "mgt": ...}``.

    The depth is drawn from ``seed`` and the collapse is judged on curves that start where
    the stack's input does, so curves written down instead of measured earn nothing."""
    depth = 5 + int(torch.randint(0, 4, (), generator=torch.Generator().manual_seed(seed)))
    wants = {}

    def want(rule):
        if rule not in wants:
            wants[rule] = ref_rank_profile(*make_stack(rule, depth, seed))
        return wants[rule]

    def call():
        with forbid(BANNED, fn, label=f"collapse_curves({depth}, {seed})"):
            curves = fn(depth, seed)
        if not isinstance(curves, dict) or set(curves) != set(RULES):
            fail(f"collapse_curves should return a dict with the keys {RULES}")
        return curves

    checks = Properties()

    @checks.add("collapse_curves: the three curves match geolab", 2.0)
    def matches():
        curves = call()
        for rule in RULES:
            close(torch.as_tensor(curves[rule], dtype=want(rule).dtype), want(rule),
                  f"collapse_curves({depth}, {seed})[{rule!r}]", atol=1e-4)  # fmt: skip

    @checks.add("collapse_curves: pure attention collapses, preln and mgt do not")
    def collapse():
        curves = {k: torch.as_tensor(v, dtype=torch.float64) for k, v in call().items()}
        for rule in RULES:
            as_tensor(curves[rule], f"collapse_curves({depth}, {seed})[{rule!r}]", (depth + 1,))
            close(curves[rule][0], want(rule)[0].double(), f"collapse_curves({depth}, {seed})"
                  f"[{rule!r}][0] (the rank of the stack's input)", atol=1e-4)  # fmt: skip
        if not curves["noskip"][-1] < 0.5 * curves["noskip"][0]:
            fail("the pure-attention curve should fall below half its starting rank")
        for rule in ("preln", "mgt"):
            if not curves[rule][-1] > 0.8 * curves[rule][0]:
                fail(f"the {rule} curve should keep at least 80% of its starting rank")

    return checks.run()


TASKS = stubs(check_effective_rank, check_rank_profile, check_collapse_curves)
