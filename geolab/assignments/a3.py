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


def check_effective_rank(fn, seed: int = 0):
    """``effective_rank(X: (..., S, D)) -> (...)``: exp(entropy of σ/Σσ) / min(S, D)."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(3, 7, 5, generator=g, dtype=torch.float64)
    Y = torch.randn(4, 9, generator=g, dtype=torch.float64)

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

    @checks.add("effective_rank: 0 (not NaN) for an all-zero matrix")
    def zero():
        out = as_tensor(call(torch.zeros(2, 5, 3, dtype=F64)), "effective_rank", (2,))
        if torch.isnan(out).any():
            fail("effective_rank of an all-zero matrix is NaN; return 0 (0·log 0 = 0, Σσ = 0)")
        close(out, torch.zeros(2, dtype=F64), "effective_rank of all-zero 5×3 matrices")

    @checks.add("effective_rank: scale invariant")
    def scale_free():
        close(call(1e3 * X), call(X), "effective_rank(1000·X) vs effective_rank(X)")

    return checks.run()


def check_rank_profile(fn, seed: int = 0):
    """``rank_profile(model, x) -> (n_steps + 1,)``: embedding, then after every residual step."""

    def case(residual, depth):
        model, x = make_stack(residual, depth, seed)
        want = ref_rank_profile(model, x)
        with forbid(BANNED, fn, label=f"rank_profile(a {depth}-layer {residual} stack, x)"):
            got = observe(fn, "rank_profile_on_stack", residual, depth, seed)
        close(got, want, f"rank_profile of a {depth}-layer {residual} stack", atol=1e-4)

    checks = Properties()
    checks.add("rank_profile: matches geolab on a preln stack")(lambda: case("preln", 3))
    checks.add("rank_profile: matches geolab on a pure-attention stack")(lambda: case("noskip", 4))
    checks.add("rank_profile: matches geolab on an mgt stack")(lambda: case("mgt", 2))
    return checks.run()


def check_collapse_curves(fn, seed: int = 0):
    """``collapse_curves(depth, seed) -> {"noskip": (depth+1,), "preln": ..., "mgt": ...}``."""
    depth = 6

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
            want = ref_rank_profile(*make_stack(rule, depth, seed))
            close(torch.as_tensor(curves[rule], dtype=want.dtype), want,
                  f"collapse_curves({depth}, {seed})[{rule!r}]", atol=1e-4)  # fmt: skip

    @checks.add("collapse_curves: pure attention collapses, preln and mgt do not")
    def collapse():
        curves = {k: torch.as_tensor(v, dtype=torch.float64) for k, v in call().items()}
        if not curves["noskip"][-1] < 0.5 * curves["noskip"][0]:
            fail("the pure-attention curve should fall below half its starting rank")
        for rule in ("preln", "mgt"):
            if not curves[rule][-1] > 0.8 * curves[rule][0]:
                fail(f"the {rule} curve should keep at least 80% of its starting rank")

    return checks.run()


TASKS = stubs(check_effective_rank, check_rank_profile, check_collapse_curves)
