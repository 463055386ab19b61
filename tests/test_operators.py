"""Tests for geolab.operators against independent computations (dense solves, eigen-
decompositions, hand-derived gradients) and hypothesis properties."""

import math

import pytest
import torch
from conftest import F32, F64, FAST, batch_shapes, dtypes, randn
from hypothesis import given
from hypothesis import strategies as st

from geolab.operators import (
    cayley,
    cayley_angle,
    cayley_apply,
    delta_operator,
    delta_update,
    delta_update_matrix,
    gate_regularizer,
    householder,
    householder_apply,
    hybrid_apply,
    hybrid_operator,
    skew,
)


def ref_cayley(u, v, beta):
    """(I + cA)⁻¹(I − cA) in float64 with A = u vᵀ − v uᵀ built here, c = β/2."""
    u, v = u.double(), v.double()
    A = torch.einsum("...i,...j->...ij", u, v)
    A = A - A.transpose(-1, -2)
    c = torch.as_tensor(beta, dtype=F64)[..., None, None] / 2
    eye = torch.eye(u.shape[-1], dtype=F64)
    return torch.linalg.inv(eye + c * A) @ (eye - c * A)


def q_matrix(u, v, beta):
    """Dense Q from cayley_apply on the identity columns (Q[:, j] = Q e_j), u, v: (d,)."""
    eye = torch.eye(u.shape[-1], dtype=u.dtype)
    return cayley_apply(eye, u, v, beta).T


def omega_ref(u, v):
    u, v = u.double(), v.double()
    return torch.sqrt((u @ u) * (v @ v) - (u @ v) ** 2)


# ---------------------------------------------------------------- Cayley (rank-2 closed form)


@FAST
@given(
    d=st.integers(2, 64),
    lead=batch_shapes,
    log_beta=st.floats(-4, 3),
    sign=st.sampled_from([1.0, -1.0]),
    dtype=dtypes,
    seed=st.integers(0, 2**31 - 1),
)
def test_cayley_closed_form_matches_dense_solve(d, lead, log_beta, sign, dtype, seed):
    beta = sign * 10.0**log_beta
    u, v = randn(*lead, d, dtype=dtype, seed=seed), randn(*lead, d, dtype=dtype, seed=seed + 1)
    x = randn(*lead, d, dtype=dtype, seed=seed + 2)
    want = (ref_cayley(u, v, beta) @ x.double().unsqueeze(-1)).squeeze(-1)
    got = cayley_apply(x, u, v, beta)
    assert got.dtype == dtype and got.shape == x.shape
    tol = 1e-5 if dtype == F32 else 1e-10
    torch.testing.assert_close(got.double(), want, rtol=0, atol=tol * max(1.0, x.abs().max()))
    # the dense solve itself loses accuracy with cond(I + cA) = √(1 + t²), and an LU solve's
    # backward error grows with d (Higham, Accuracy and Stability, Thm 9.4: γ_{3d}); seen on an
    # Intel host at d = 38, β = 100: 2.6e-11 where 50·eps·cond allowed 2.1e-11
    cond = 1 + abs(beta) / 2 * (u.double().norm(dim=-1) * v.double().norm(dim=-1)).max().item()
    dense = cayley(skew(u, v), beta)
    torch.testing.assert_close(
        dense.double(), ref_cayley(u, v, beta), rtol=0, atol=3 * d * torch.finfo(dtype).eps * cond
    )


def test_cayley_beta_tensor_per_leading_index_and_broadcasting():
    x, u, v = randn(2, 3, 6, seed=1), randn(3, 6, seed=2), randn(1, 1, 6, seed=3)
    beta = torch.tensor([[0.1, 1.0, 30.0], [2.0, 0.0, -5.0]], dtype=F64)
    got = cayley_apply(x, u, v, beta)
    for i in range(2):
        for j in range(3):
            want = ref_cayley(u[j], v[0, 0], beta[i, j].item()) @ x[i, j]
            torch.testing.assert_close(got[i, j], want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("beta", [0.1, 1.0, 10.0, 1e3, 1e6])
def test_cayley_orthogonal_det_one_and_rotation_spectrum(dtype, beta):
    d = 12
    u, v = randn(d, dtype=dtype, seed=4), randn(d, dtype=dtype, seed=5)
    Q = q_matrix(u, v, beta)
    tol = 2e-6 if dtype == F32 else 1e-13
    torch.testing.assert_close(Q.T @ Q, torch.eye(d, dtype=dtype), rtol=0, atol=tol)
    assert abs(torch.linalg.det(Q.double()).item() - 1) < 10 * tol

    theta = 2 * math.atan(beta / 2 * omega_ref(u, v).item())
    torch.testing.assert_close(
        cayley_angle(u, v, beta).double(), torch.tensor(theta, dtype=F64), rtol=1e-5, atol=0
    )
    lam = torch.linalg.eigvals(Q.double())
    moved = (lam - 1).abs() > (1e-4 if dtype == F32 else 1e-8)
    assert moved.sum() == 2, "exactly one plane rotates; d-2 eigenvalues equal 1"
    torch.testing.assert_close(
        lam[moved].angle().abs().sort().values,
        torch.tensor([theta, theta], dtype=F64),
        rtol=0,
        atol=1e-4 if dtype == F32 else 1e-9,
    )


@pytest.mark.parametrize("beta", [1e2, 1e4, 1e6, 1e8])
def test_cayley_never_reaches_minus_one(beta):
    """θ < π strictly: |λ + 1| = 2 cos(θ/2) = 2/√(1 + t²) > 0 for every finite β."""
    u, v = randn(8, seed=6), randn(8, seed=7)
    t = beta / 2 * omega_ref(u, v).item()
    lam = torch.linalg.eigvals(q_matrix(u, v, beta))
    gap = (lam + 1).abs().min().item()
    assert gap > 0
    assert gap == pytest.approx(2 / math.sqrt(1 + t * t), rel=1e-4)
    assert abs(cayley_angle(u, v, beta).item()) < math.pi


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("beta", [1e6, 1e12, 1e30])
def test_cayley_huge_beta_stays_orthogonal_and_tends_to_plane_reflection(dtype, beta):
    d = 16
    u, v = randn(4, d, dtype=dtype, seed=8), randn(4, d, dtype=dtype, seed=9)
    x = randn(4, d, dtype=dtype, seed=10)
    y = cayley_apply(x, u, v, beta)
    assert torch.isfinite(y).all()
    rtol = 1e-5 if dtype == F32 else 1e-12
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1), rtol=rtol, atol=0)
    tol = 2e-6 if dtype == F32 else 1e-13
    for b in range(4):
        Q = q_matrix(u[b], v[b], beta).double()
        torch.testing.assert_close(Q.T @ Q, torch.eye(d, dtype=F64), rtol=0, atol=tol)
        assert torch.linalg.det(Q).item() == pytest.approx(1, abs=10 * tol)
        basis, _ = torch.linalg.qr(torch.stack([u[b], v[b]], -1).double())
        reflection = torch.eye(d, dtype=F64) - 2 * basis @ basis.T  # the θ = π limit
        torch.testing.assert_close(Q, reflection, rtol=0, atol=1e-4)


PARALLEL = {
    "v=u": lambda u: (u, u.clone()),
    "v=2u": lambda u: (u, 2 * u),
    "v=-u": lambda u: (u, -u),
    "v=u/2": lambda u: (u, 0.5 * u),
    "u=0": lambda u: (torch.zeros_like(u), u),
    "v=0": lambda u: (u, torch.zeros_like(u)),
    "u=v=0": lambda u: (torch.zeros_like(u), torch.zeros_like(u)),
}


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("beta", [0.0, 0.5, 10.0, 1e6, 1e30, -3.0])
@pytest.mark.parametrize("case", sorted(PARALLEL))
def test_cayley_degenerate_generators_give_exact_identity(case, beta, dtype):
    u, v = PARALLEL[case](randn(3, 10, dtype=dtype, seed=11))
    x = randn(3, 10, dtype=dtype, seed=12)
    assert torch.equal(cayley_apply(x, u, v, beta), x)
    assert torch.equal(cayley_angle(u, v, beta), torch.zeros(3, dtype=dtype))
    assert torch.equal(q_matrix(u[0], v[0], beta), torch.eye(10, dtype=dtype))


@pytest.mark.parametrize("dtype", [F32, F64])
def test_cayley_beta_zero_is_exact_identity_for_generic_generators(dtype):
    u, v, x = (randn(5, 7, dtype=dtype, seed=s) for s in (13, 14, 15))
    assert torch.equal(cayley_apply(x, u, v, 0.0), x)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("beta", [0.5, 1e6, 1e30])
def test_cayley_inexactly_parallel_generators_stay_orthogonal(dtype, beta):
    """v = 3u is parallel only up to rounding: any rotation is acceptable, but it is one."""
    u = randn(6, 10, dtype=dtype, seed=16)
    x = randn(6, 10, dtype=dtype, seed=17)
    y = cayley_apply(x, u, 3 * u, beta)
    assert torch.isfinite(y).all()
    rtol = 1e-5 if dtype == F32 else 1e-12
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1), rtol=rtol, atol=0)
    if beta == 0.5:
        torch.testing.assert_close(y, x, rtol=0, atol=1e3 * rtol)


def hand_grad_at_flat_generator(x, u, v, g, c):
    """At A = 0 (u = 0 or v = 0 or u ∥ v): d(Qx) = −2c dA x, so ∂⟨g, Qx⟩/∂u = −2c[(v·x)g − (g·v)x]
    and ∂/∂v = −2c[(g·u)x − (u·x)g]."""
    return -2 * c * ((v @ x) * g - (g @ v) * x), -2 * c * ((g @ u) * x - (u @ x) * g)


@pytest.mark.parametrize("beta", [0.5, 10.0, 1e6, 1e30])
@pytest.mark.parametrize("case", ["u=0", "v=0", "v=u small", "v=2u small"])
def test_cayley_gradient_exact_at_flat_generators(case, beta):
    base = randn(10, seed=18)
    if case.endswith("small"):  # keep c‖u‖‖v‖ ≤ 1, where the gradient is exact
        base = base / base.norm() / math.sqrt(beta)
    u, v = PARALLEL[case.split()[0]](base)
    x, g = randn(10, seed=19), randn(10, seed=20)
    u, v = u.clone().requires_grad_(), v.clone().requires_grad_()
    (cayley_apply(x, u, v, beta) @ g).backward()
    gu, gv = hand_grad_at_flat_generator(x, u.detach(), v.detach(), g, beta / 2)
    torch.testing.assert_close(u.grad, gu, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(v.grad, gv, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("beta", [0.0, 0.5, 10.0, 1e6, 1e30])
@pytest.mark.parametrize("case", sorted(PARALLEL) + ["v=3u"])
def test_cayley_gradients_finite_at_degenerate_inputs(case, beta, dtype):
    base = randn(10, dtype=dtype, seed=21)
    u, v = (base, 3 * base) if case == "v=3u" else PARALLEL[case](base)
    u, v = u.clone().requires_grad_(), v.clone().requires_grad_()
    b = torch.tensor(beta, dtype=dtype, requires_grad=True)
    x = randn(10, dtype=dtype, seed=22).requires_grad_()
    (cayley_apply(x, u, v, b) @ randn(10, dtype=dtype, seed=23)).backward()
    cayley_angle(u, v, b).backward()
    for t in (u, v, b, x):
        assert torch.isfinite(t.grad).all()


@pytest.mark.parametrize("beta", [0.3, 4.0, 300.0])
def test_cayley_gradients_match_dense_solve(beta):
    u, v, x = (randn(2, 7, seed=s).requires_grad_() for s in (24, 25, 26))
    b = torch.tensor(beta, dtype=F64, requires_grad=True)
    g = randn(2, 7, seed=27)
    got = torch.autograd.grad((cayley_apply(x, u, v, b) * g).sum(), (u, v, x, b))
    want_out = (ref_cayley(u, v, b) @ x.unsqueeze(-1)).squeeze(-1)
    want = torch.autograd.grad((want_out * g).sum(), (u, v, x, b))
    for a, w in zip(got, want, strict=True):
        torch.testing.assert_close(a, w, rtol=1e-8, atol=1e-10)


def test_cayley_gradcheck_both_regimes():
    u, v, x = (randn(2, 5, seed=s).requires_grad_() for s in (28, 29, 30))
    scale = torch.tensor([[0.05], [3.0]], dtype=F64)  # row 0: c‖u‖‖v‖ < 1, row 1: > 1
    b = torch.tensor([0.7, 2.0], dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda *a: cayley_apply(a[0], a[1] * scale, a[2], a[3]), (x, u, v, b)
    )


def test_cayley_angle_is_antisymmetric_in_beta_and_batched():
    u, v = randn(2, 3, 5, seed=31), randn(2, 3, 5, seed=32)
    beta = randn(2, 3, seed=33).abs() * 10
    theta = cayley_angle(u, v, beta)
    assert theta.shape == (2, 3)
    want = 2 * torch.atan(
        beta / 2 * torch.sqrt((u * u).sum(-1) * (v * v).sum(-1) - (u * v).sum(-1) ** 2)
    )
    torch.testing.assert_close(theta, want, rtol=1e-12, atol=0)
    torch.testing.assert_close(cayley_angle(u, v, -beta), -theta)


# ------------------------------------------------------------------- dense Cayley (n × n)


@FAST
@given(
    n=st.integers(1, 10),
    lead=batch_shapes,
    log_beta=st.floats(-3, 3),
    dtype=dtypes,
    seed=st.integers(0, 2**31 - 1),
)
def test_dense_cayley_of_general_skew_generator(n, lead, log_beta, dtype, seed):
    B = randn(*lead, n, n, dtype=dtype, seed=seed)
    A = B - B.transpose(-1, -2)
    beta = 10.0**log_beta
    Q = cayley(A, beta)
    # a solve loses accuracy with cond(I + cA) ≈ 1 + c‖A‖₂
    cond = 1 + beta / 2 * torch.linalg.matrix_norm(A.double(), ord=2).max().item()
    tol = 50 * torch.finfo(dtype).eps * cond
    eye = torch.eye(n, dtype=dtype)
    torch.testing.assert_close(Q.transpose(-1, -2) @ Q, eye.expand_as(Q), rtol=0, atol=tol)
    assert torch.allclose(torch.linalg.det(Q.double()), torch.ones(lead, dtype=F64), atol=tol)
    c = beta / 2
    want = torch.linalg.inv(eye + c * A.double()) @ (eye - c * A.double())
    torch.testing.assert_close(Q.double(), want, rtol=0, atol=tol)


def test_dense_cayley_beta_tensor_and_validation():
    B = randn(3, 4, 4, seed=34)
    A = B - B.transpose(-1, -2)
    beta = torch.tensor([0.0, 1.0, 5.0], dtype=F64)
    Q = cayley(A, beta)
    assert torch.equal(Q[0], torch.eye(4, dtype=F64))
    torch.testing.assert_close(Q[2], cayley(A[2], 5.0))
    with pytest.raises(ValueError, match=r"A: .*square.*\(3, 4\)"):
        cayley(torch.zeros(3, 4, dtype=F64), 1.0)
    with pytest.raises(ValueError, match="A: .*square"):
        cayley(torch.zeros(4, dtype=F64), 1.0)


def test_skew_is_skew_and_rank_two():
    u, v = randn(3, 6, seed=35), randn(3, 6, seed=36)
    A = skew(u, v)
    torch.testing.assert_close(A.transpose(-1, -2), -A)
    assert (torch.linalg.matrix_rank(A) == 2).all()
    w2 = (u * u).sum(-1) * (v * v).sum(-1) - (u * v).sum(-1) ** 2
    torch.testing.assert_close(A @ A @ A, -w2[:, None, None] * A)  # A³ = −ω² A


# ----------------------------------------------------------------------- delta operator


@FAST
@given(
    d=st.integers(2, 24),
    lead=batch_shapes,
    beta=st.floats(-3, 5),
    dtype=dtypes,
    seed=st.integers(0, 2**31 - 1),
)
def test_delta_operator_spectrum_and_determinant(d, lead, beta, dtype, seed):
    k = randn(*lead, d, dtype=dtype, seed=seed) * 10.0 ** (seed % 7 - 3)
    A = delta_operator(k, beta)
    assert A.shape == (*lead, d, d) and A.dtype == dtype
    tol = 2e-5 if dtype == F32 else 1e-11
    torch.testing.assert_close(A, A.transpose(-1, -2))
    eig = torch.linalg.eigvalsh(A.double())
    want = torch.tensor(sorted([1.0] * (d - 1) + [1.0 - beta]), dtype=F64).expand_as(eig)
    torch.testing.assert_close(eig, want, rtol=0, atol=tol * max(1, abs(beta)))
    det = torch.linalg.det(A.double())
    torch.testing.assert_close(
        det, torch.full(lead, 1.0 - beta, dtype=F64), rtol=0, atol=tol * d * max(1, abs(beta))
    )
    khat = (k / k.norm(dim=-1, keepdim=True)).unsqueeze(-1)
    torch.testing.assert_close(A @ khat, (1 - beta) * khat, rtol=0, atol=tol * max(1, abs(beta)))


def test_delta_operator_modes():
    k = randn(4, 9, seed=37)
    eye = torch.eye(9, dtype=F64)
    assert torch.equal(delta_operator(k, 0.0), eye.expand(4, 9, 9))
    P = delta_operator(k, 1.0)  # erasure: projection onto k⊥
    torch.testing.assert_close(P @ P, P)
    torch.testing.assert_close(P @ k.unsqueeze(-1), torch.zeros(4, 9, 1, dtype=F64))
    torch.testing.assert_close(torch.linalg.det(P), torch.zeros(4, dtype=F64), atol=1e-12, rtol=0)
    H = delta_operator(k, 2.0)  # Householder reflection
    torch.testing.assert_close(H @ H, eye.expand(4, 9, 9))
    torch.testing.assert_close(torch.linalg.det(H), -torch.ones(4, dtype=F64))
    torch.testing.assert_close(H, householder(k))
    khat = k / k.norm(dim=-1, keepdim=True)
    torch.testing.assert_close(H, eye - 2 * khat.unsqueeze(-1) * khat.unsqueeze(-2))


@pytest.mark.parametrize("beta", [-1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0])
def test_delta_operator_orthogonal_iff_beta_in_0_2(beta):
    A = delta_operator(randn(7, seed=38), beta)
    err = torch.linalg.matrix_norm(A.T @ A - torch.eye(7, dtype=F64), ord=2).item()
    if beta in (0.0, 2.0):
        assert err < 1e-14
    else:
        assert err == pytest.approx(abs((1 - beta) ** 2 - 1), rel=1e-9)


def test_delta_operator_beta_per_leading_index():
    k = randn(2, 3, 5, seed=39)
    beta = randn(2, 3, seed=40)
    A = delta_operator(k, beta)
    torch.testing.assert_close(A[1, 2], delta_operator(k[1, 2], beta[1, 2].item()))


@pytest.mark.parametrize("dtype", [F32, F64])
def test_zero_key_is_identity_with_finite_gradient(dtype):
    k = torch.zeros(2, 6, dtype=dtype, requires_grad=True)
    x = randn(2, 6, dtype=dtype, seed=41)
    eye = torch.eye(6, dtype=dtype).expand(2, 6, 6)
    assert torch.equal(delta_operator(k, 1.0), eye)
    assert torch.equal(householder(k), eye)
    assert torch.equal(householder_apply(x, k), x)
    assert torch.equal(delta_update(x, k, 0.7, 2.0), x)
    X = randn(2, 6, 3, dtype=dtype, seed=42)
    assert torch.equal(delta_update_matrix(X, k, 0.7, randn(2, 3, dtype=dtype, seed=43)), X)
    out = delta_operator(k, 1.5).sum() + delta_update(x, k, 0.5, 1.0).sum()
    out = out + hybrid_apply(x, x, x.flip(-1), k, 1.0, 0.3).sum()
    out.backward()
    assert torch.isfinite(k.grad).all()


@pytest.mark.parametrize("scale", [1e-30, 1e30])
def test_tiny_and_huge_keys_are_normalised_without_under_or_overflow(scale):
    k = randn(3, 5, dtype=F32, seed=44)
    torch.testing.assert_close(delta_operator(k * scale, 1.0), delta_operator(k, 1.0))


# -------------------------------------------------------------------- delta updates


@FAST
@given(d=st.integers(1, 20), lead=batch_shapes, dtype=dtypes, seed=st.integers(0, 2**31 - 1))
def test_delta_update_vector_equals_operator_form(d, lead, dtype, seed):
    x, k = randn(*lead, d, dtype=dtype, seed=seed), randn(*lead, d, dtype=dtype, seed=seed + 1)
    beta = randn(*lead, dtype=dtype, seed=seed + 2)
    v = randn(*lead, dtype=dtype, seed=seed + 3)
    got = delta_update(x, k, beta, v)
    khat = k / k.norm(dim=-1, keepdim=True)
    expanded = x + beta[..., None] * (v[..., None] - (khat * x).sum(-1, keepdim=True)) * khat
    operator = (delta_operator(k, beta) @ x.unsqueeze(-1)).squeeze(-1) + (beta * v)[
        ..., None
    ] * khat
    tol = 1e-5 if dtype == F32 else 1e-12
    torch.testing.assert_close(got, expanded, rtol=tol, atol=tol)
    torch.testing.assert_close(got, operator, rtol=tol, atol=tol)


@FAST
@given(
    d=st.integers(1, 16),
    dv=st.integers(1, 8),
    lead=batch_shapes,
    dtype=dtypes,
    seed=st.integers(0, 2**31 - 1),
)
def test_delta_update_matrix_equals_operator_form(d, dv, lead, dtype, seed):
    X = randn(*lead, d, dv, dtype=dtype, seed=seed)
    k = randn(*lead, d, dtype=dtype, seed=seed + 1)
    v = randn(*lead, dv, dtype=dtype, seed=seed + 2)
    beta = randn(*lead, dtype=dtype, seed=seed + 3)
    got = delta_update_matrix(X, k, beta, v)
    khat = k / k.norm(dim=-1, keepdim=True)
    b = beta[..., None, None]
    # A(k, β) X + β k̂ vᵀ
    want = delta_operator(k, beta) @ X + b * khat.unsqueeze(-1) * v.unsqueeze(-2)
    # X + β k̂ (vᵀ − k̂ᵀX), written with einsum
    erase = v - torch.einsum("...i,...ij->...j", khat, X)
    expanded = X + b * torch.einsum("...i,...j->...ij", khat, erase)
    tol = 1e-5 if dtype == F32 else 1e-12
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)
    torch.testing.assert_close(got, expanded, rtol=tol, atol=tol)
    if dv == 1:
        vec = delta_update(X[..., 0], k, beta, v[..., 0])
        torch.testing.assert_close(got[..., 0], vec, rtol=tol, atol=tol)


def test_delta_update_python_scalars_and_broadcast():
    x, k = randn(4, 3, 5, seed=45), randn(5, seed=46)
    got = delta_update(x, k, 0.25, -1.0)
    khat = k / k.norm()
    torch.testing.assert_close(got, x + 0.25 * (-1.0 - x @ khat)[..., None] * khat)


# ------------------------------------------------------------------ Householder, hybrid


def test_householder_apply_matches_matrix():
    x, k = randn(3, 2, 8, seed=47), randn(2, 8, seed=48)
    want = (householder(k) @ x.unsqueeze(-1)).squeeze(-1)
    torch.testing.assert_close(householder_apply(x, k), want)
    torch.testing.assert_close(householder_apply(householder_apply(x, k), k), x)


@FAST
@given(
    d=st.integers(2, 16),
    lead=batch_shapes,
    log_beta=st.floats(-2, 6),
    gamma=st.floats(0, 1),
    dtype=dtypes,
    seed=st.integers(0, 2**31 - 1),
)
def test_hybrid_apply_matches_dense_and_never_expands(d, lead, log_beta, gamma, dtype, seed):
    u, v, k, x = (randn(*lead, d, dtype=dtype, seed=seed + i) for i in range(4))
    beta = 10.0**log_beta
    G = hybrid_operator(u, v, k, beta, gamma)
    y = hybrid_apply(x, u, v, k, beta, gamma)
    tol = 2e-5 if dtype == F32 else 1e-11
    torch.testing.assert_close(y, (G @ x.unsqueeze(-1)).squeeze(-1), rtol=tol, atol=tol)
    sv = torch.linalg.svdvals(G.double())
    assert (sv <= 1 + 10 * tol).all()  # convex combination of two orthogonal maps


def test_hybrid_endpoints_are_orthogonal_and_midpoint_contracts():
    u, v, k = randn(10, seed=49), randn(10, seed=50), randn(10, seed=51)
    beta = 1.3
    eye = torch.eye(10, dtype=F64)
    G1, G0 = hybrid_operator(u, v, k, beta, 1.0), hybrid_operator(u, v, k, beta, 0.0)
    torch.testing.assert_close(G1, ref_cayley(u, v, beta))
    torch.testing.assert_close(G0, householder(k))
    for G in (G0, G1):
        torch.testing.assert_close(G.T @ G, eye)
    sv = torch.linalg.svdvals(hybrid_operator(u, v, k, beta, 0.5))
    assert sv.min() < 0.9  # not orthogonal in the interior
    assert sv.max() <= 1 + 1e-12


def test_hybrid_gamma_per_leading_index():
    u, v, k, x = (randn(3, 6, seed=s) for s in (52, 53, 54, 55))
    gamma = torch.tensor([0.0, 0.4, 1.0], dtype=F64)
    beta = torch.tensor([0.5, 2.0, 7.0], dtype=F64)
    y = hybrid_apply(x, u, v, k, beta, gamma)
    for i in range(3):
        want = hybrid_operator(u[i], v[i], k[i], beta[i].item(), gamma[i].item()) @ x[i]
        torch.testing.assert_close(y[i], want)


def test_gate_regularizer_value_and_gradient():
    assert gate_regularizer(0.5) == 1.0
    assert gate_regularizer(0.0) == 0.0 and gate_regularizer(1.0) == 0.0
    g = torch.linspace(0, 1, 101, dtype=F64, requires_grad=True)
    r = gate_regularizer(g)
    torch.testing.assert_close(r, gate_regularizer(1 - g))  # symmetric r(γ) = r(1−γ)
    (grad,) = torch.autograd.grad(r.sum(), g)
    torch.testing.assert_close(grad, 4 - 8 * g.detach())
    assert grad[50].item() == 0.0  # zero push at γ = ½ (E∆ Theorem 7.3)
    assert grad[0] > 0 and grad[-1] < 0


# --------------------------------------------------------------------- validation


def test_validation_errors_name_argument_value_and_allowed():
    x, k = torch.zeros(3, 4), torch.ones(3, 5)
    with pytest.raises(ValueError, match=r"k: last dim is 5 .*d=4.*x"):
        householder_apply(x, k)
    with pytest.raises(ValueError, match=r"v: last dim is 3"):
        cayley_apply(torch.zeros(4), torch.ones(4), torch.ones(3), 1.0)
    with pytest.raises(ValueError, match=r"leading shapes do not broadcast.*x: \(3,\).*u: \(2,\)"):
        cayley_apply(torch.zeros(3, 4), torch.ones(2, 4), torch.ones(4), 1.0)
    with pytest.raises(ValueError, match=r"beta: must be finite, got inf"):
        cayley_apply(torch.zeros(4), torch.ones(4), torch.ones(4), math.inf)
    with pytest.raises(ValueError, match=r"beta: expected a Python number or a tensor.*str"):
        delta_operator(torch.ones(4), "1")
    with pytest.raises(ValueError, match=r"leading shapes do not broadcast.*beta: \(2,\)"):
        delta_operator(torch.ones(3, 4), torch.ones(2))
    with pytest.raises(ValueError, match=r"x: expected a floating-point tensor, got dtype"):
        cayley_apply(torch.zeros(4, dtype=torch.int64), torch.ones(4), torch.ones(4), 1.0)
    with pytest.raises(ValueError, match=r"X: expected a tensor of shape \(\.\.\., d, dv\)"):
        delta_update_matrix(torch.zeros(4), torch.ones(4), 1.0, torch.ones(1))
    with pytest.raises(ValueError, match=r"k: last dim is 3 .*d=4.*X"):
        delta_update_matrix(torch.zeros(4, 2), torch.ones(3), 1.0, torch.ones(2))
    with pytest.raises(ValueError, match=r"gamma: expected a number or a tensor"):
        gate_regularizer(None)


# ------------------------------------------------- property tests over extreme values


@FAST
@given(
    d=st.integers(2, 48),
    lead=batch_shapes,
    beta=st.sampled_from([0.0, 1e-30, 1e-3, -0.7, 1.0, 42.0, 1e6, 1e12, 1e30, -1e30]),
    su=st.sampled_from([0.0, 1e-3, 1.0, 1e3]),
    sv=st.sampled_from([1e-3, 1.0, 1e3]),
    parallel=st.booleans(),
    dtype=dtypes,
    seed=st.integers(0, 2**31 - 1),
)
def test_cayley_apply_is_an_isometry_for_extreme_inputs(
    d, lead, beta, su, sv, parallel, dtype, seed
):
    u = randn(*lead, d, dtype=dtype, seed=seed) * su
    v = u * 2 * sv if parallel else randn(*lead, d, dtype=dtype, seed=seed + 1) * sv
    x = randn(*lead, d, dtype=dtype, seed=seed + 2)
    y = cayley_apply(x, u, v, beta)
    assert torch.isfinite(y).all()
    rtol = 1e-5 if dtype == F32 else 1e-12
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1), rtol=rtol, atol=0)
    if (parallel and sv == 1.0) or su == 0.0 or beta == 0.0:  # v = 2u is exactly parallel
        assert torch.equal(y, x)
    theta = cayley_angle(u, v, beta)
    assert torch.isfinite(theta).all() and (theta.abs() <= math.pi).all()
    h = hybrid_apply(x, u, v, u + 1, beta, 0.3)
    assert (h.norm(dim=-1) <= x.norm(dim=-1) * (1 + rtol)).all()
