"""A1 — the Delta operator (docs/design.md §2.1–§2.2; Su & You 2026, Eq. 1–2, Appendix A.1–A.3).

Stubs: ``delta_operator(k, beta)``, ``spectrum_and_det(d, beta)``, ``delta_update(x, k, beta, v)``,
``mode(beta)``. Each check function takes the student's object and returns a list of
:class:`~geolab.assignments.checks.Check`; inputs are fresh random float64 tensors.
"""

import torch

from geolab import operators as ref
from geolab.assignments.checks import BIG_D, as_tensor, big_d, close, describe, fail, forbid
from geolab.assignments.properties import Properties, stubs

MODES = ("identity", "erase", "reflect", "general")
OPS = "geolab.operators."
LINALG = ("torch.linalg.eigvalsh", "torch.linalg.eigvals", "torch.linalg.eigh")
LINALG += ("torch.linalg.eig", "torch.linalg.det", "torch.linalg.slogdet", "torch.det")
LINALG += tuple(f"numpy.linalg.{f}" for f in ("eigvalsh", "eigvals", "eigh", "eig", "det"))
LINALG += ("numpy.linalg.slogdet",)


def _rand(g, *shape):
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def _generic_betas(g, n: int) -> list[float]:
    """``n`` values of β in (−1, 3), three decimals, none of the special 0, 1, 2; the first
    negative and the second above 1, so every draw covers both ends of the ascending spectrum
    (1 − β above the ones, and below them)."""
    betas = torch.rand(n, generator=g, dtype=torch.float64) * 4 - 1
    betas[0] = -betas[0].abs() / 4  # in (−1, 0]
    if n > 1:
        betas[1] = 1 + (betas[1] + 1) / 2  # in (1, 3)
    betas = [round(float(b), 3) for b in betas]
    return [b + 0.0005 if b in (-0.0, 0.0, 1.0, 2.0) else b for b in betas]


def check_delta_operator(fn, seed: int = 0):
    """``delta_operator(k, beta) -> I − β k kᵀ/‖k‖²`` of shape (..., d, d)."""
    g = torch.Generator().manual_seed(seed)
    k, beta = _rand(g, 3, 5), torch.rand(3, generator=g, dtype=torch.float64) * 2.5 - 0.25
    k1, k2 = _rand(g, 4), _rand(g, 4)
    b_neg, b_pos, b_any = _generic_betas(g, 3)

    def call(k, beta):
        banned = ["geolab.operators.delta_operator", "geolab.operators.householder"]
        with forbid(banned, fn, label=f"delta_operator({describe(k=k, beta=beta)})"):
            out = fn(k, beta)
        return as_tensor(out, "delta_operator", (*k.shape, k.shape[-1]))

    checks = Properties()

    @checks.add("delta_operator: matches I − β k kᵀ/‖k‖² (batched k, tensor β)")
    def matches():
        want = ref.delta_operator(k, beta)
        close(call(k, beta), want, f"delta_operator({describe(k=k, beta=beta)})")
        close(call(k1, 0.7), ref.delta_operator(k1, 0.7), f"delta_operator({describe(k=k1)}, 0.7)")

    @checks.add("delta_operator: symmetric, with k an eigenvector: A k = (1 − β) k")
    def symmetric():
        A = call(k1, b_any)
        close(A.transpose(-1, -2), A, f"Aᵀ for {describe(k=k1, beta=b_any)} (A must be symmetric)")
        close(A @ k1, (1 - b_any) * k1, f"A k for {describe(k=k1, beta=b_any)} (must be (1 − β) k)")

    @checks.add("delta_operator: d−1 eigenvalues 1, one 1 − β")
    def spectrum():
        for b in (b_neg, 1.0, b_pos, 2.0):
            got = torch.linalg.eigvalsh(call(k1, b))
            want = torch.sort(torch.tensor([1.0] * 3 + [1 - b], dtype=torch.float64)).values
            close(got, want, f"eigenvalues of delta_operator({describe(k=k1, beta=b)})")

    @checks.add("delta_operator: det A = 1 − β")
    def determinant():
        for b in (b_any, 1.0, 2.0, b_neg):
            close(
                torch.linalg.det(call(k1, b)),
                torch.tensor(1 - b, dtype=torch.float64),
                f"det delta_operator({describe(k=k1, beta=b)}) (should be 1 − β)",
            )

    @checks.add("delta_operator: depends on k only through its direction")
    def scale_free():
        for c in (7.5, -0.02):
            close(
                call(c * k1, b_pos),
                call(k1, b_pos),
                f"delta_operator({c:g}·k, β) vs (k, β): "
                "the operator must depend only on the direction of k — divide by ‖k‖²",
            )
        if not (call(k2, b_pos) - call(k1, b_pos)).abs().max() > 1e-6:
            fail("delta_operator gives the same matrix for two directions of k: it must depend "
                 "on the direction")  # fmt: skip

    @checks.add("delta_operator: β=2 reflects (H² = I), β=1 erases (A k = 0, P² = P)")
    def modes():
        I = torch.eye(4, dtype=torch.float64)
        H = call(k1, 2.0)
        close(H @ H, I, f"H·H for β = 2 ({describe(k=k1)}): a reflection undoes itself")
        P = call(k1, 1.0)
        close(P @ k1, torch.zeros(4, dtype=torch.float64), "A(k, 1)·k: β = 1 must erase k")
        close(P @ P, P, "A(k, 1)²: the erasure is a projection, so P² = P")

    return checks.run()


def check_spectrum_and_det(fn, seed: int = 0):
    """``spectrum_and_det(d, beta) -> (eigenvalues (d,) ascending, det)`` from the formula alone.

    The cases are drawn from ``seed`` (a table of answers cannot pass), and at grading time one
    has d = 50,000: a d×d matrix of that size does not fit in the worker's memory, so only the
    formula gets it right — whatever eigen-solver or determinant the code would call."""
    g = torch.Generator().manual_seed(seed)
    dims = torch.randint(2, 9, (5,), generator=g).tolist()
    betas = _generic_betas(g, 3)
    cases = list(
        zip(dims, [*betas, 1.0, 2.0], strict=True)
    )  # the erase and reflect cases at a random d
    big = (big_d(fn), betas[0])

    def call(d, b):
        with forbid(LINALG + (OPS + "delta_operator",), fn, label=f"spectrum_and_det({d}, {b})"):
            out = fn(d, b)
        if not (isinstance(out, tuple) and len(out) == 2):
            fail(f"spectrum_and_det({d}, {b}) should return a pair (eigenvalues, det)")
        return out

    checks = Properties()

    @checks.add("spectrum_and_det: matches the numerical spectrum and det", 2.0)
    def predicted():
        for d, b in cases:
            A = ref.delta_operator(_rand(g, d), b)
            want_eig, want_det = torch.linalg.eigvalsh(A), torch.linalg.det(A)
            eig, det = call(d, b)
            close(
                torch.as_tensor(eig, dtype=torch.float64),
                want_eig,
                f"eigenvalues (ascending) for d = {d}, β = {b}",
            )
            close(torch.as_tensor(det, dtype=torch.float64), want_det, f"det for d = {d}, β = {b}")

    @checks.add(f"spectrum_and_det: from the formula alone (d = {BIG_D:,} at grading)", gate=True)
    def formula():
        d, b = big
        eig, det = call(d, b)
        # the spectrum checked at small d above: d − 1 ones and 1 − β, ascending
        want = torch.ones(d, dtype=torch.float64)
        want[0] = 1 - b
        want = torch.sort(want).values
        close(torch.as_tensor(eig, dtype=torch.float64), want, f"eigenvalues for d = {d}, β = {b}")
        close(torch.as_tensor(det, dtype=torch.float64), torch.tensor(1 - b, dtype=torch.float64),
              f"det for d = {d}, β = {b}")  # fmt: skip

    return checks.run()


def check_delta_update(fn, seed: int = 0):
    """``delta_update(x, k, beta, v) -> x + β (v − k̂ᵀx) k̂`` of shape (..., d)."""
    g = torch.Generator().manual_seed(seed)
    x, k = _rand(g, 2, 3, 6), _rand(g, 2, 3, 6)
    beta, v = torch.rand(2, 3, generator=g, dtype=torch.float64) * 2, _rand(g, 2, 3)
    x1, k1 = _rand(g, 6), _rand(g, 6)
    kh1 = k1 / k1.norm()
    b_neg, b_pos = _generic_betas(g, 2)

    def call(x, k, beta, v):
        label = f"delta_update({describe(x=x, k=k, beta=beta, v=v)})"
        with forbid([OPS + "delta_update", OPS + "delta_update_matrix"], fn, label=label):
            return as_tensor(fn(x, k, beta, v), "delta_update", tuple(x.shape))

    checks = Properties()

    @checks.add("delta_update: matches x + β (v − k̂ᵀx) k̂ (batched)")
    def matches():
        close(
            call(x, k, beta, v),
            ref.delta_update(x, k, beta, v),
            f"delta_update({describe(x=x, k=k, beta=beta, v=v)})",
        )

    @checks.add("delta_update: equals A(k, β) x + β v k̂")
    def expanded():
        want = ref.delta_operator(k1, 0.8) @ x1 + 0.8 * 1.5 * kh1
        close(
            call(x1, k1, 0.8, 1.5),
            want,
            "delta_update(x, k, 0.8, 1.5) vs the expanded form A(k, β) x + β v k̂ (k̂ = k/‖k‖)",
        )

    @checks.add("delta_update: β = 1 writes v along k")
    def writes_v():
        out = call(x1, k1, 1.0, -2.0)
        close(
            out @ kh1,
            torch.tensor(-2.0, dtype=torch.float64),
            "k̂ᵀx' for β = 1, v = −2: β = 1 must overwrite the k-component with v",
        )

    @checks.add("delta_update: changes x only along k")
    def only_along_k():
        b, w = b_neg, float(x1 @ kh1) + 1.0  # a write that differs from what x holds
        change = call(x1, k1, b, w) - x1
        close(
            change - (change @ kh1) * kh1,
            torch.zeros(6, dtype=torch.float64),
            "the part of x' − x orthogonal to k: the update must only move x along k",
        )
        if not abs(float(change @ kh1)) > 1e-6:
            fail(f"delta_update(x, k, β = {b}, v ≠ k̂ᵀx) did not move x: it must move it along k")

    @checks.add("delta_update: β = 0 is the identity, and only β = 0")
    def identity_at_zero():
        close(call(x1, k1, 0.0, 3.0), x1, "delta_update(x, k, β = 0, v): β = 0 must return x")
        moved = call(x1, k1, b_pos, float(x1 @ kh1) - 2.0) - x1
        if not moved.norm() > 1e-6:
            fail(f"delta_update(x, k, β = {b_pos}, v ≠ k̂ᵀx) returned x: only β = 0 leaves x as is")

    return checks.run()


def check_mode(fn, seed: int = 0):
    """``mode(beta) -> "identity" | "erase" | "reflect" | "general"``; the generic β are drawn
    from ``seed``."""
    g = torch.Generator().manual_seed(seed)
    k = _rand(g, 5)
    generic = _generic_betas(g, 5)

    checks = Properties()

    @checks.add("mode: names β = 0, 1, 2 and a generic β")
    def named():
        for b, want in (
            (0.0, "identity"),
            (1.0, "erase"),
            (2.0, "reflect"),
            (generic[0], "general"),
        ):
            got = fn(b)
            if got != want:
                fail(f"mode({b}) returned {got!r}, expected one of {MODES} — here {want!r}")

    @checks.add("mode: orthogonal exactly for identity/reflect, singular exactly for erase")
    def consistent():
        eye = torch.eye(5, dtype=torch.float64)
        for b in (0.0, 1.0, 2.0, *generic[1:]):
            A = ref.delta_operator(k, b)
            orthogonal = torch.allclose(A.T @ A, eye, atol=1e-12)
            said = fn(b)
            if orthogonal != (said in ("identity", "reflect")):
                is_ = "is" if orthogonal else "is not"
                fail(f"mode({b}) = {said!r}, but A(k, {b}) {is_} orthogonal (AᵀA = I)")
            if (said == "erase") != bool(abs(torch.linalg.det(A)) < 1e-12):
                fail(f"mode({b}) = {said!r}, but det A(k, {b}) = {torch.linalg.det(A):.3g}")

    return checks.run()


TASKS = stubs(check_delta_operator, check_spectrum_and_det, check_delta_update, check_mode)
