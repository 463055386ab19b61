"""A2 — the Cayley rotation of a rank-2 generator, Householder, and the hybrid gate
(docs/design.md §2.3–§2.4; Shahmansoori 2026, Theorems 4.6 and 7.3).

Stubs: ``skew``, ``cayley_apply`` (closed form, no solve), ``cayley_angle``, ``cayley_matrix``,
``minus_one_gap``, ``householder_apply``, ``hybrid_apply``, ``gate_regularizer``. References
are computed with geolab's operators before the student's function runs.
"""

import torch

from geolab import operators as ref
from geolab.assignments.checks import (
    BIG_D,
    as_tensor,
    big_d,
    close,
    describe,
    fail,
    forbid,
    observe,
)
from geolab.assignments.properties import Properties, stubs

F64 = torch.float64
NO_SOLVE = (
    "torch.linalg.solve",
    "torch.linalg.solve_ex",
    "torch.linalg.inv",
    "torch.linalg.inv_ex",
    "torch.linalg.lu_factor",
    "torch.linalg.lu_solve",
    "torch.linalg.solve_triangular",
    "torch.cholesky_solve",
    "torch.inverse",
    "torch.linalg.matrix_exp",
    "torch.matrix_exp",
    "torch.linalg.lstsq",
    "torch.linalg.pinv",
    "numpy.linalg.solve",
    "numpy.linalg.inv",
    "numpy.linalg.lstsq",
    "numpy.linalg.pinv",
    "scipy.linalg.solve",
    "scipy.linalg.inv",
    "scipy.linalg.expm",
)
NO_EIG = ("torch.linalg.eigvals", "torch.linalg.eig", "torch.linalg.eigvalsh", "torch.linalg.eigh")
NO_EIG += ("torch.linalg.svdvals", "torch.linalg.svd")
NO_EIG += ("numpy.linalg.eigvals", "numpy.linalg.eig", "numpy.linalg.eigvalsh", "numpy.linalg.eigh")
OPS = "geolab.operators."


def _rand(g, *shape):
    return torch.randn(*shape, generator=g, dtype=F64)


def _dense_q(u, v, beta):
    """(I + cA)⁻¹(I − cA), c = β/2, A = u vᵀ − v uᵀ, by a linear solve (the teaching path)."""
    return ref.cayley(ref.skew(u, v), beta)


def _signed(g, *magnitudes: float) -> list[float]:
    """The ``magnitudes`` with a sign drawn from ``g`` each, at least one negative when there
    are several: β is any real number (c = β/2), so the checks meet β < 0 too."""
    signs = torch.randint(0, 2, (len(magnitudes),), generator=g) * 2 - 1
    if len(magnitudes) > 1 and bool((signs > 0).all()):
        signs[0] = -1
    return [float(s) * m for s, m in zip(signs.tolist(), magnitudes, strict=True)]


def _signed_betas(g, n: int, scale: float) -> torch.Tensor:
    """``n`` values of β in (−scale, scale), the first negative and the second positive."""
    beta = (torch.rand(n, generator=g, dtype=F64) * 2 - 1) * scale
    beta[0] = -beta[0].abs()
    beta[1] = beta[1].abs()
    return beta


def _plane_vector(g, u, v):
    """A unit vector in span{u, v}."""
    w = torch.rand(2, generator=g, dtype=F64) + 0.5
    x = w[0] * u + w[1] * v
    return x / x.norm()


def check_skew(fn, seed: int = 0):
    """``skew(u, v) -> u vᵀ − v uᵀ`` of shape (..., d, d)."""
    g = torch.Generator().manual_seed(seed)
    u, v = _rand(g, 2, 5), _rand(g, 2, 5)

    def call(u, v):
        with forbid([OPS + "skew"], fn, label=f"skew({describe(u=u, v=v)})"):
            return as_tensor(fn(u, v), "skew", (*u.shape, u.shape[-1]))

    checks = Properties()

    @checks.add("skew: matches u vᵀ − v uᵀ (batched)")
    def matches():
        close(call(u, v), ref.skew(u, v), f"skew({describe(u=u, v=v)})")

    @checks.add("skew: Aᵀ = −A, skew(u, u) = 0, rank 2 with singular values ω, ω")
    def antisymmetric():
        A = call(u[0], v[0])
        close(A.T, -A, "skew(u, v)ᵀ (must equal −skew(u, v))")
        close(call(u[0], u[0]), torch.zeros(5, 5, dtype=F64), "skew(u, u) (must be 0)")
        omega = (u[0].dot(u[0]) * v[0].dot(v[0]) - u[0].dot(v[0]) ** 2).sqrt()
        want = torch.cat([omega.expand(2), torch.zeros(3, dtype=F64)])
        close(torch.linalg.svdvals(A), want, "singular values of skew(u, v) (ω = ‖u‖‖v‖ sin∠)")

    return checks.run()


def check_cayley_apply(fn, seed: int = 0):
    """``cayley_apply(x, u, v, beta) -> Q x`` from the closed form, O(d), no solve."""
    g = torch.Generator().manual_seed(seed)
    x, u, v = _rand(g, 3, 6), _rand(g, 3, 6), _rand(g, 3, 6)
    beta = _signed_betas(g, 3, 3.0)
    u1, v1, x1 = _rand(g, 6), _rand(g, 6), _rand(g, 6)
    b_norm, b_fix, b_big, b_huge = _signed(g, 1.7, 0.9, 0.9, 1e6)
    banned = [OPS + n for n in ("cayley_apply", "cayley", "hybrid_apply", "hybrid_operator")]

    def call(x, u, v, beta):
        label = f"cayley_apply({describe(x=x, u=u, v=v, beta=beta)})"
        with forbid(banned + list(NO_SOLVE), fn, label=label):
            return as_tensor(fn(x, u, v, beta), "cayley_apply", tuple(x.shape))

    checks = Properties()

    @checks.add("cayley_apply: matches (I + cA)⁻¹(I − cA) x (batched, tensor β)", 2.0)
    def matches():
        want = (_dense_q(u, v, beta) @ x.unsqueeze(-1)).squeeze(-1)
        close(call(x, u, v, beta), want, f"cayley_apply({describe(x=x, u=u, v=v, beta=beta)})")

    @checks.add("cayley_apply: preserves the norm")
    def norm():
        out = as_tensor(call(x1, u1, v1, b_norm), "cayley_apply", (6,))
        close(out.norm(), x1.norm(), f"‖Q x‖ for β = {b_norm:g} (a rotation keeps lengths)")

    @checks.add("cayley_apply: fixes vectors orthogonal to u and v")
    def fixes_complement():
        basis = torch.stack([u1, v1, x1])
        q, _ = torch.linalg.qr(basis.T)
        w = x1 - q[:, :2] @ (q[:, :2].T @ x1)  # x with its span{u, v} part removed
        close(call(w, u1, v1, b_fix), w, "Q w for w ⟂ u, v (vectors outside the plane stay put)")

    @checks.add("cayley_apply: β = 0 and u ∥ v give x exactly")
    def degenerate():
        close(call(x1, u1, v1, 0.0), x1, "cayley_apply(x, u, v, β = 0) (must return x)")
        close(call(x1, u1, 2 * u1, 1.3), x1, "cayley_apply(x, u, 2u, 1.3): u ∥ v means A = 0")

    @checks.add(f"cayley_apply: the closed form, O(d) (d = {BIG_D:,} at grading)", gate=True)
    def closed_form():
        # both call paths at the size no d×d matrix fits: one vector and a float β, a batch
        # of two and a tensor β (one of each sign)
        d = big_d(fn)
        xb, ub, vb = _rand(g, 2, d), _rand(g, 2, d), _rand(g, 2, d)
        bb = _signed_betas(g, 2, 3.0)
        close(call(xb[0], ub[0], vb[0], b_big), ref.cayley_apply(xb[0], ub[0], vb[0], b_big),
              f"cayley_apply at d = {d:,} (no d×d matrix fits: use the closed form)")  # fmt: skip
        close(
            call(xb, ub, vb, bb),
            ref.cayley_apply(xb, ub, vb, bb),
            f"cayley_apply on a batch at d = {d:,} (no d×d matrix fits: use the closed form)",
        )

    @checks.add("cayley_apply: finite and orthogonal for |β| = 1e6")
    def huge_beta():
        out = as_tensor(call(x1, u1, v1, b_huge), "cayley_apply", (6,))
        if not torch.isfinite(out).all():
            fail(f"cayley_apply(x, u, v, β = {b_huge:g}) contains NaN or inf")
        close(out.norm(), x1.norm(), f"‖Q x‖ for β = {b_huge:g} (must stay a rotation)")

    return checks.run()


def check_cayley_angle(fn, seed: int = 0):
    """``cayley_angle(u, v, beta) -> θ = 2·arctan(β/2 · ω)``, shape (...)."""
    g = torch.Generator().manual_seed(seed)
    u, v = _rand(g, 4, 5), _rand(g, 4, 5)
    beta = _signed_betas(g, 4, 4.0)
    (b_measured,) = _signed(g, 1.1)

    def call(u, v, beta):
        with forbid([OPS + "cayley_angle"], fn, label=f"cayley_angle({describe(beta=beta)}, …)"):
            return fn(u, v, beta)

    checks = Properties()

    @checks.add("cayley_angle: matches 2·arctan(β/2 · ω)")
    def matches():
        want = ref.cayley_angle(u, v, beta)
        close(call(u, v, beta), want, f"cayley_angle({describe(u=u, v=v, beta=beta)})")

    @checks.add("cayley_angle: equals the measured rotation angle in the plane")
    def measured():
        x = _plane_vector(g, u[0], v[0])
        qx = ref.cayley_apply(x, u[0], v[0], b_measured)
        angle = torch.arccos((x @ qx).clamp(-1, 1))
        got = as_tensor(call(u[0], v[0], b_measured), "cayley_angle").abs()
        close(got, angle, "cayley_angle vs the angle between x and Q x for x in span{u, v}")

    @checks.add("cayley_angle: approaches π as |β| grows, and stays below it")
    def below_pi():
        last = 0.0
        for b in _signed(g, 10.0, 1e3, 1e6):
            theta = as_tensor(call(u[0], v[0], b), "cayley_angle").abs()
            if not theta < torch.pi:
                fail(f"cayley_angle(u, v, β = {b:g}) = {float(theta):.17g} is not < π")
            if not theta > last:
                fail(f"|cayley_angle(u, v, β)| = {float(theta):.6g} at β = {b:g} does not grow "
                     "with |β| (θ = 2·arctan(β/2 · ω) → π)")  # fmt: skip
            last = float(theta)
        if not torch.pi - last < 1e-3:
            fail(f"|cayley_angle| at |β| = 1e6 is {last:.6g}, not within 1e-3 of π")

    return checks.run()


def check_cayley_matrix(fn, seed: int = 0):
    """``cayley_matrix(u, v, beta) -> Q`` (d, d): orthogonal, det +1, the Cayley transform."""
    g = torch.Generator().manual_seed(seed)
    u, v = _rand(g, 5), _rand(g, 5)
    eye = torch.eye(5, dtype=F64)
    b_match, *b_orth = _signed(g, 0.8, 0.3, 2.0, 50.0)

    def call(u, v, beta):
        label = f"cayley_matrix({describe(u=u, v=v, beta=beta)})"
        with forbid([OPS + "cayley", OPS + "hybrid_operator"], fn, label=label):
            return as_tensor(fn(u, v, beta), "cayley_matrix", (5, 5))

    checks = Properties()

    @checks.add("cayley_matrix: matches the dense Cayley transform")
    def matches():
        close(call(u, v, b_match), _dense_q(u, v, b_match), f"cayley_matrix(u, v, {b_match:g})")

    @checks.add("cayley_matrix: QᵀQ = I, and Q = I only at β = 0")
    def orthogonal():
        close(call(u, v, 0.0), eye, "cayley_matrix(u, v, β = 0) (must be I)")
        for b in b_orth:
            Q = call(u, v, b)
            close(Q.T @ Q, eye, f"QᵀQ for β = {b:g} (must be I)")
            if not (Q - eye).abs().max() > 1e-3:
                fail(f"cayley_matrix(u, v, β = {b:g}) is I: for β ≠ 0 it rotates the (u, v) plane")

    @checks.add("cayley_matrix: det Q = +1, one plane turned by θ (tr Q = d − 2 + 2 cos θ)")
    def rotation():
        for b in b_orth:
            Q = call(u, v, b)
            close(torch.linalg.det(Q), torch.tensor(1.0, dtype=F64),
                  f"det Q for β = {b:g} (a rotation has det +1)")  # fmt: skip
            theta = ref.cayley_angle(u, v, b)
            close(torch.trace(Q), 3 + 2 * torch.cos(theta),
                  f"tr Q for β = {b:g} (d − 2 axes fixed, one plane turned by θ)")  # fmt: skip

    return checks.run()


def check_minus_one_gap(fn, seed: int = 0):
    """``minus_one_gap(u, v, beta) -> min over eigenvalues λ of Q of |λ + 1|`` from θ alone."""
    g = torch.Generator().manual_seed(seed)
    u, v = _rand(g, 4), _rand(g, 4)
    b_match = _signed(g, 0.5, 3.0, 40.0)
    b_theta, *b_grow = _signed(g, 2.5, 1.0, 1e2, 1e4)

    def call(u, v, beta):
        banned = list(NO_EIG) + [OPS + "cayley", OPS + "cayley_angle"]
        with forbid(banned, fn, label=f"minus_one_gap({describe(u=u, v=v, beta=beta)})"):
            return as_tensor(fn(u, v, beta), "minus_one_gap")

    checks = Properties()

    @checks.add("minus_one_gap: matches the numerical distance of the spectrum from −1")
    def matches():
        for b in b_match:
            lam = torch.linalg.eigvals(_dense_q(u, v, b))
            want = (lam + 1).abs().min()
            close(call(u, v, b), want, f"minus_one_gap(u, v, β = {b:g}) vs numerical eigenvalues")

    @checks.add(f"minus_one_gap: from θ alone (d = {BIG_D:,} at grading)", gate=True)
    def from_theta():
        d = big_d(fn)
        ub, vb = _rand(g, d), _rand(g, d)
        theta = ref.cayley_angle(ub, vb, b_theta)  # |e^{iθ} + 1| = 2 cos(θ/2), |θ| < π
        close(call(ub, vb, b_theta), 2 * torch.cos(theta / 2),
              f"minus_one_gap at d = {d:,} (no d×d matrix fits: use θ)")  # fmt: skip

    @checks.add("minus_one_gap: positive for every finite β, shrinking as |β| grows")
    def positive():
        gaps = [float(call(u, v, b)) for b in b_grow]
        where = ", ".join(f"{b:g}" for b in b_grow)
        if not all(gap > 0 for gap in gaps):
            fail(f"gaps for β = {where} are {gaps}: −1 must stay out of reach (gap > 0)")
        if not gaps[0] > gaps[1] > gaps[2]:
            fail(f"gaps for β = {where} are {gaps}: they should shrink as |β| grows")

    return checks.run()


def check_householder_apply(fn, seed: int = 0):
    """``householder_apply(x, k) -> x − 2 k̂ (k̂ᵀx)`` of shape (..., d)."""
    g = torch.Generator().manual_seed(seed)
    x, k = _rand(g, 3, 5), _rand(g, 3, 5)
    x1, k1 = _rand(g, 5), _rand(g, 5)
    banned = [OPS + n for n in ("householder_apply", "householder", "delta_operator")]

    def call(x, k):
        label = f"householder_apply({describe(x=x, k=k)})"
        with forbid(banned + [OPS + "delta_update"], fn, label=label):
            return as_tensor(fn(x, k), "householder_apply", tuple(x.shape))

    checks = Properties()

    @checks.add("householder_apply: matches x − 2 k̂ (k̂ᵀx) (batched)")
    def matches():
        want = ref.householder_apply(x, k)
        close(call(x, k), want, f"householder_apply({describe(x=x, k=k)})")

    @checks.add("householder_apply: H² = I, det H = −1")
    def involution():
        close(call(call(x1, k1), k1), x1, "H(H x) (a reflection undoes itself)")
        H = as_tensor(call(torch.eye(5, dtype=F64), k1), "householder_apply on the rows of I")
        close(torch.linalg.det(H), torch.tensor(-1.0, dtype=F64), "det H (a reflection: −1)")

    @checks.add(f"householder_apply: O(d) (d = {BIG_D:,} at grading)", gate=True)
    def linear_time():
        # both call paths at the size no d×d matrix fits: one vector, and a batch of two
        d = big_d(fn)
        xb, kb = _rand(g, 2, d), _rand(g, 2, d)
        for xs, ks in ((xb[0], kb[0]), (xb, kb)):
            label = f"householder_apply({describe(x=xs, k=ks)}) (no d×d matrix fits: O(d))"
            close(call(xs, ks), ref.householder_apply(xs, ks), label)

    @checks.add("householder_apply: k → −k, k⟂ fixed")
    def flips_k():
        close(call(3 * k1, k1), -3 * k1, "H(3k) with mirror normal k (must be −3k)")
        w = x1 - (x1 @ k1) / (k1 @ k1) * k1
        close(call(w, k1), w, "H w for w ⟂ k (the mirror plane stays put)")

    return checks.run()


def check_hybrid_apply(fn, seed: int = 0):
    """``hybrid_apply(x, u, v, k, beta, gamma) -> γ Q x + (1 − γ) H₂(k) x``."""
    g = torch.Generator().manual_seed(seed)
    x, u, v, k = (_rand(g, 2, 5) for _ in range(4))
    beta, gamma = _signed_betas(g, 2, 2.0), torch.rand(2, generator=g, dtype=F64)
    u1, v1, k1 = u[0], v[0], k[0]
    b_end, b_half = _signed(g, 0.7, 0.7)
    eye = torch.eye(5, dtype=F64)
    banned = [OPS + n for n in ("hybrid_apply", "hybrid_operator", "cayley_apply", "cayley")]

    def call(x, u, v, k, beta, gamma):
        label = f"hybrid_apply({describe(x=x, u=u, v=v, k=k, beta=beta, gamma=gamma)})"
        with forbid(banned + [OPS + "householder_apply", OPS + "householder"], fn, label=label):
            return as_tensor(fn(x, u, v, k, beta, gamma), "hybrid_apply", tuple(x.shape))

    checks = Properties()

    @checks.add("hybrid_apply: matches γ Q x + (1 − γ) H₂(k) x (batched)")
    def matches():
        want = ref.hybrid_apply(x, u, v, k, beta, gamma)
        close(call(x, u, v, k, beta, gamma), want, f"hybrid_apply({describe(beta=beta)}, …)")

    @checks.add("hybrid_apply: γ = 1 rotates, γ = 0 reflects")
    def endpoints():
        close(call(x[0], u1, v1, k1, b_end, 1.0), ref.cayley_apply(x[0], u1, v1, b_end),
              "hybrid_apply with γ = 1 (must be the Cayley rotation)")  # fmt: skip
        close(call(x[0], u1, v1, k1, b_end, 0.0), ref.householder_apply(x[0], k1),
              "hybrid_apply with γ = 0 (must be the Householder reflection)")  # fmt: skip

    @checks.add("hybrid_apply: orthogonal at γ = 0, 1, not at γ = ½ (singular values below 1)")
    def shrinks():
        for end in (0.0, 1.0):
            G = as_tensor(call(eye, u1, v1, k1, b_half, end), "hybrid_apply on the rows of I")
            close(G.T @ G, eye, f"GᵀG at γ = {end:g} (a rotation or a reflection: I)")
        G = as_tensor(call(eye, u1, v1, k1, b_half, 0.5), "hybrid_apply on the rows of I", (5, 5))
        s = torch.linalg.svdvals(G)
        if s.max() > 1 + 1e-9 or s.min() > 1 - 1e-3:
            fail(f"singular values of G at γ = ½ are {s.tolist()}: expected all ≤ 1, some < 1")

    return checks.run()


def check_gate_regularizer(fn, seed: int = 0):
    """``gate_regularizer(gamma) -> 4γ(1 − γ)``, differentiable."""
    g = torch.Generator().manual_seed(seed)
    gamma = torch.rand(7, generator=g, dtype=F64)
    # where the slope is checked: ½ and three points at least 0.1 from it (slope ≥ 0.8 there)
    off_half = 0.05 + 0.35 * torch.rand(3, generator=g, dtype=F64)
    off_half[1] = 1 - off_half[1]

    def call(gamma):
        label = f"gate_regularizer({describe(gamma=gamma)})"
        with forbid([OPS + "gate_regularizer"], fn, label=label):
            return as_tensor(fn(gamma), "gate_regularizer", tuple(gamma.shape))

    checks = Properties()

    @checks.add("gate_regularizer: matches 4γ(1 − γ)")
    def matches():
        close(
            call(gamma), ref.gate_regularizer(gamma), f"gate_regularizer({describe(gamma=gamma)})"
        )

    @checks.add("gate_regularizer: r(γ) = r(1 − γ), largest at γ = ½")
    def symmetric():
        close(call(1 - gamma), call(gamma), "r(1 − γ) vs r(γ) (the regulariser is symmetric)")
        top = as_tensor(call(torch.tensor(0.5, dtype=F64)), "gate_regularizer", ())
        if not (call(gamma) < top).all():
            fail(f"r(½) = {float(top):.4g} is not above r(γ) at γ ≠ ½: a regulariser that "
                 "pushes γ away from ½ peaks there")  # fmt: skip

    @checks.add("gate_regularizer: zero gradient at γ = ½ only, from autograd", gate=True)
    def flat_at_half():
        # The slope is measured here from your raw outputs; the gradient your code's autograd
        # reports (its process says it) must equal that slope, at ½ and at random γ.
        h = 1e-4
        half = torch.tensor(0.5, dtype=F64)
        slope = (as_tensor(call(half + h), "gate_regularizer", ()) - call(half)) / h
        if not abs(float(slope)) < 1e-3:
            fail(f"the slope of r at γ = ½ is {float(slope):.3g} (E∆ Theorem 7.3: exactly 0)")
        curvature = []
        for point in [half, *off_half]:
            with forbid([OPS + "gate_regularizer"], fn, label=f"gate_regularizer(γ = {point:.3g})"):
                seen = observe(fn, "value_and_grad", point)
            curvature.append((point, seen["second"]))
            as_tensor(seen["out"], "gate_regularizer", ())
            if seen["differentiable"] is not True:
                fail("gate_regularizer(γ) must be differentiable in γ (use torch operations)")
            numeric = (call(point + 1e-6) - call(point - 1e-6)) / 2e-6
            close(seen["grad"], numeric, f"dr/dγ from autograd at γ = {point:.3g} vs the slope "
                  "of your r there", atol=1e-5)  # fmt: skip
            if point != half and not abs(float(numeric)) > 0.1:
                fail(f"the slope of r at γ = {point:.3g} is {float(numeric):.3g}: only γ = ½ is "
                     "flat (dr/dγ = 4 − 8γ)")  # fmt: skip
        for point, second in curvature:  # after every slope: a wrong slope is named first
            _second_derivative(call, point, second)

    return checks.run()


def _second_derivative(call, point: torch.Tensor, reported) -> None:
    """Fail unless autograd's d²r/dγ² at ``point`` (``reported``) equals the curvature measured
    from the outputs, (r(γ+h) − 2r(γ) + r(γ−h)) / h² (−8 for 4γ(1 − γ)). A value computed
    outside torch with a straight-through gradient (``γ·c`` with c = 4 − 8γ from numpy) has the
    right first derivative, but autograd sees no curvature in it: it earns nothing, like a
    regulariser with no gradient at all."""
    if reported is None:
        fail(f"dr/dγ at γ = {point:.3g} has no derivative from autograd: compute r with torch "
             "operations, so autograd differentiates it twice")  # fmt: skip
    h = 1e-3
    numeric = (call(point + h) - 2 * call(point) + call(point - h)) / h**2
    close(reported, numeric, f"d²r/dγ² from autograd at γ = {point:.3g} vs the curvature of "
          "your r there (compute r with torch operations)", atol=1e-3)  # fmt: skip


TASKS = stubs(
    check_skew,
    check_cayley_apply,
    check_cayley_angle,
    check_cayley_matrix,
    check_minus_one_gap,
    check_householder_apply,
    check_hybrid_apply,
    check_gate_regularizer,
)
