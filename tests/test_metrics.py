"""Tests for geolab.metrics against closed forms and independent numpy computations."""

import json
import math
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from geolab.metrics import (
    amax_gain,
    beta_stats,
    beta_stats_per_layer,
    composite_gain_curve,
    cosine_alignment,
    effective_rank,
    norm_deviation,
    rank_collapse_residual,
    synergy,
)

PROPERTY = settings(max_examples=50, deadline=None)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def np_effective_rank(X: np.ndarray) -> float:
    """Reference Eq. 8 for one matrix, in float64 numpy."""
    s = np.linalg.svd(np.asarray(X, dtype=np.float64), compute_uv=False)
    if s.sum() == 0:
        return 0.0
    p = s / s.sum()
    p = p[p > 0]
    return float(np.exp(-(p * np.log(p)).sum()) / min(X.shape))


def random_matrices(seed, batch, S, D, kind, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    if kind == "gaussian":
        X = torch.randn(*batch, S, D, generator=g, dtype=torch.float64)
    elif kind == "low_rank":
        r = max(1, min(S, D) // 3)
        U = torch.randn(*batch, S, r, generator=g, dtype=torch.float64)
        X = U @ torch.randn(*batch, r, D, generator=g, dtype=torch.float64)
    else:  # "spread": singular values over many orders of magnitude
        X = torch.randn(*batch, S, D, generator=g, dtype=torch.float64)
        X = X * torch.logspace(0, -6, D, dtype=torch.float64)
    return X.to(dtype)


def orthonormal(n, k, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    Q, _ = torch.linalg.qr(torch.randn(n, k, generator=g, dtype=dtype))
    return Q


# ---------------------------------------------------------------- effective_rank (Eq. 8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_effective_rank_zero_matrix_is_zero(dtype):
    r = effective_rank(torch.zeros(2, 3, 5, 4, dtype=dtype))
    assert r.shape == (2, 3)
    assert torch.equal(r, torch.zeros_like(r))


@pytest.mark.parametrize("S,D", [(1, 1), (1, 7), (7, 1), (5, 9), (12, 3), (40, 40)])
def test_effective_rank_rank_one(S, D):
    g = torch.Generator().manual_seed(S * 100 + D)
    u = torch.randn(S, 1, generator=g, dtype=torch.float64)
    v = torch.randn(1, D, generator=g, dtype=torch.float64)
    assert effective_rank(u @ v).item() == pytest.approx(1 / min(S, D), abs=1e-12)
    # float32 SVD adds ~1e-7 noise singular values: still 1/min(S, D) to within 1e-3.
    assert effective_rank((u @ v).float()).item() == pytest.approx(1 / min(S, D), abs=1e-3)


@pytest.mark.parametrize("S,D", [(6, 6), (10, 4), (4, 10), (33, 17)])
def test_effective_rank_equal_singular_values_is_one(S, D):
    k = min(S, D)
    Q = orthonormal(S, k, seed=S) @ orthonormal(D, k, seed=D + 1).T
    assert effective_rank(Q).item() == pytest.approx(1.0, abs=1e-12)
    assert effective_rank(3.7 * Q.float()).item() == pytest.approx(1.0, abs=1e-5)


def test_effective_rank_never_exceeds_one_in_float32():
    # exp(H)/n of a flat float32 spectrum rounds to 1 ± 5e-7; the contract is [0, 1] exactly.
    g = torch.Generator().manual_seed(0)
    for n in (5, 7, 40, 64):
        Q, _ = torch.linalg.qr(torch.randn(8, n, n, generator=g))
        r = effective_rank(torch.cat([Q, torch.eye(n)[None]]))
        assert (r <= 1).all() and (r > 1 - 1e-5).all()


def test_effective_rank_known_spectrum():
    # 5×3 with σ = (3, 1, 0): σ̂ = (3/4, 1/4, 0), H = −¾ log ¾ − ¼ log ¼, rank = exp(H) / 3.
    U, V = orthonormal(5, 2, seed=0), orthonormal(3, 2, seed=1)
    X = U @ torch.diag(torch.tensor([3.0, 1.0], dtype=torch.float64)) @ V.T
    H = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert effective_rank(X).item() == pytest.approx(math.exp(H) / 3, abs=1e-12)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-10), (torch.float32, 1e-4)])
def test_effective_rank_matches_numpy(dtype, tol):
    X = random_matrices(7, (3, 2), 17, 11, "spread", dtype)
    r = effective_rank(X)
    assert r.dtype == dtype
    expected = [np_effective_rank(m) for m in X.double().reshape(-1, 17, 11).numpy()]
    np.testing.assert_allclose(r.reshape(-1).double().numpy(), expected, atol=tol)


def svd_effective_rank(X: torch.Tensor) -> torch.Tensor:
    """The plain Eq. 8: float64 ``svdvals`` of each matrix, no Gram matrix."""
    s = torch.linalg.svdvals(X.double())
    total = s.sum(-1, keepdim=True)
    p = s / total.clamp_min(1e-300)
    rank = torch.exp(-torch.xlogy(p, p).sum(-1)) / min(X.shape[-2:])
    return torch.where(total.squeeze(-1) > 0, rank.clamp(max=1), 0.0)


@pytest.mark.parametrize("kind", ["gaussian", "low_rank", "spread", "collapsed"])
@pytest.mark.parametrize("S,D", [(32, 128), (64, 256), (40, 9), (17, 17)])
def test_effective_rank_float32_gram_path_matches_svd(kind, S, D):
    # float32 input takes the float64 Gram eigenvalues; it must agree with the SVD to 1e-5,
    # also for collapsed (rank 1 + 1e-6 noise) states, where a float32 Gram would not.
    if kind == "collapsed":
        g = torch.Generator().manual_seed(S + D)
        X = torch.randn(5, S, 1, generator=g) * torch.randn(5, 1, D, generator=g)
        X = (X + 1e-6 * torch.randn(5, S, D, generator=g)).float()
    else:
        X = random_matrices(S * D, (5,), S, D, kind)
    r = effective_rank(X)
    assert r.dtype == torch.float32
    torch.testing.assert_close(r.double(), svd_effective_rank(X), rtol=0, atol=1e-5)


def test_effective_rank_float32_zero_and_non_finite_matrices():
    X = torch.randn(4, 6, 10)
    X[1] = 0
    X[2, 3, 4] = math.inf
    X[3, 0, 0] = math.nan
    r = effective_rank(X)
    assert r[1] == 0 and r[2].isnan() and r[3].isnan()
    torch.testing.assert_close(r[0].double(), svd_effective_rank(X[0]), rtol=0, atol=1e-5)


@PROPERTY
@given(
    seed=st.integers(0, 2**31 - 1),
    batch=st.lists(st.integers(1, 3), max_size=2),
    S=st.integers(1, 40),
    D=st.integers(1, 40),
    kind=st.sampled_from(["gaussian", "low_rank", "spread"]),
    exponent=st.floats(-20, 20),
)
def test_effective_rank_properties(seed, batch, S, D, kind, exponent):
    X = random_matrices(seed, batch, S, D, kind)
    scaled = X * 10.0**exponent
    r, r_scaled = effective_rank(X), effective_rank(scaled)
    assert r.shape == tuple(batch)
    assert not torch.isnan(r_scaled).any()
    assert ((r_scaled >= 0) & (r_scaled <= 1)).all()
    torch.testing.assert_close(r_scaled, r, atol=1e-4, rtol=0)
    expected = [np_effective_rank(m) for m in X.double().reshape(-1, S, D).numpy()]
    np.testing.assert_allclose(r.reshape(-1).double().numpy(), expected, atol=1e-4)


@pytest.mark.parametrize(
    "dtype,scales", [(torch.float32, (1e-30, 1e30, 1e37)), (torch.float64, (1e-300, 1e300))]
)
def test_effective_rank_extreme_scales(dtype, scales):
    X = random_matrices(3, (4,), 8, 6, "gaussian", torch.float64)
    reference = effective_rank(X)
    for c in scales:
        r = effective_rank((X * c).to(dtype))
        torch.testing.assert_close(r.double(), reference, atol=1e-5, rtol=0)


def test_effective_rank_nonfinite_matrix_gives_nan_only_there():
    X = random_matrices(5, (3,), 6, 6, "gaussian")
    X[1, 2, 3] = math.inf
    r = effective_rank(X)
    assert torch.isnan(r[1]) and not torch.isnan(r[[0, 2]]).any()


@pytest.mark.parametrize("S,D", [(6, 4), (4, 6)])
@pytest.mark.parametrize("bad", [math.nan, -math.inf])
def test_effective_rank_nonfinite_entry_found_on_either_side(S, D, bad):
    """The float32 path reads finiteness off the Gram's diagonal (X Xᵀ or Xᵀ X): one bad entry
    anywhere marks its matrix, and only its matrix, NaN."""
    X = random_matrices(6, (3,), S, D, "gaussian")
    X[2, S - 1, 0] = bad
    r = effective_rank(X)
    assert torch.isnan(r[2]) and not torch.isnan(r[:2]).any()
    torch.testing.assert_close(r[:2].double(), svd_effective_rank(X[:2]), rtol=0, atol=1e-5)


def test_effective_rank_bfloat16_is_computed_in_float32():
    X = random_matrices(9, (2,), 16, 8, "gaussian").bfloat16()
    r = effective_rank(X)
    assert r.dtype == torch.float32
    torch.testing.assert_close(r, effective_rank(X.float()))


def test_effective_rank_empty_batch():
    assert effective_rank(torch.zeros(0, 4, 3)).shape == (0,)


@pytest.mark.parametrize("shape", [(5,), (), (3, 0, 4), (2, 4, 0)])
def test_effective_rank_rejects_bad_shapes(shape):
    with pytest.raises(ValueError, match=r"effective_rank: X .*" + re.escape(str(shape))):
        effective_rank(torch.zeros(shape))


def test_effective_rank_rejects_complex():
    with pytest.raises(ValueError, match="complex"):
        effective_rank(torch.zeros(3, 3, dtype=torch.complex64))


# ---------------------------------------------------------------- rank_collapse_residual


@pytest.mark.parametrize("norm", ["fro", "l1inf"])
def test_rank_collapse_residual_identical_tokens_is_zero(norm):
    x = torch.randn(2, 1, 9, dtype=torch.float64)
    # Only the rounding of the token mean is left: ~1e-16 relative.
    assert (rank_collapse_residual(x.expand(2, 13, 9), norm) < 1e-14).all()
    assert (rank_collapse_residual(x.expand(2, 13, 9).float(), norm) < 1e-6).all()


@pytest.mark.parametrize("norm", ["fro", "l1inf"])
def test_rank_collapse_residual_zero_input(norm):
    r = rank_collapse_residual(torch.zeros(3, 4, 5), norm)
    assert torch.equal(r, torch.zeros(3))


def test_rank_collapse_residual_matches_manual_formula():
    X = random_matrices(11, (4,), 10, 7, "gaussian", torch.float64)
    fro, l1inf = rank_collapse_residual(X), rank_collapse_residual(X, norm="l1inf")
    for i, M in enumerate(X.numpy()):
        R = M - M.mean(axis=0, keepdims=True)
        assert fro[i].item() == pytest.approx(np.linalg.norm(R) / np.linalg.norm(M), rel=1e-12)

        def composite(A):
            return math.sqrt(np.linalg.norm(A, 1) * np.linalg.norm(A, np.inf))

        assert l1inf[i].item() == pytest.approx(composite(R) / composite(M), rel=1e-12)


@PROPERTY
@given(
    seed=st.integers(0, 2**31 - 1),
    S=st.integers(1, 30),
    D=st.integers(1, 30),
    exponent=st.floats(-20, 20),
)
def test_rank_collapse_residual_range_and_scale_invariance(seed, S, D, exponent):
    X = random_matrices(seed, (2,), S, D, "gaussian")
    for norm, upper in (("fro", 1.0), ("l1inf", 2.0)):
        r, r_scaled = (
            rank_collapse_residual(X, norm),
            rank_collapse_residual(X * 10.0**exponent, norm),
        )
        assert torch.isfinite(r_scaled).all()
        assert ((r_scaled >= 0) & (r_scaled <= upper + 1e-6)).all()
        torch.testing.assert_close(r_scaled, r, atol=1e-5, rtol=0)


def test_rank_collapse_residual_no_overflow_at_1e30():
    X = random_matrices(2, (), 5, 5, "gaussian")
    torch.testing.assert_close(rank_collapse_residual(X * 1e30), rank_collapse_residual(X))


def test_rank_collapse_residual_rejects_bad_input():
    with pytest.raises(ValueError, match="norm='nuc'"):
        rank_collapse_residual(torch.ones(3, 3), norm="nuc")
    with pytest.raises(ValueError, match=r"X must have shape .*\(4,\)"):
        rank_collapse_residual(torch.ones(4))


# ---------------------------------------------------------------- norm_deviation


def test_norm_deviation_of_scaling_is_factor_minus_one():
    x = torch.randn(5, 8, dtype=torch.float64)
    assert norm_deviation(x, 2 * x).item() == pytest.approx(1.0, abs=1e-12)
    assert norm_deviation(x, -0.5 * x).item() == pytest.approx(0.5, abs=1e-12)
    assert norm_deviation(x, x).item() == 0.0


def test_norm_deviation_zero_for_orthogonal_map():
    Q = orthonormal(8, 8, seed=4)
    x = torch.randn(3, 100, 8, dtype=torch.float64)
    assert norm_deviation(x, x @ Q.T).item() < 1e-12


@pytest.mark.parametrize("dtype,atol", [(torch.float64, 1e-12), (torch.float32, 1e-5)])
def test_norm_deviation_matches_numpy_per_vector(dtype, atol):
    # Absolute tolerance: |‖b‖ − ‖a‖| cancels when the norms are close.
    x_in, x_out = torch.randn(4, 6, 5, dtype=dtype), torch.randn(4, 6, 5, dtype=dtype)
    a, b = x_in.double().numpy(), x_out.double().numpy()
    n_in, n_out = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)
    expected = np.abs(n_out - n_in) / n_in
    per = norm_deviation(x_in, x_out, reduce="none")
    assert per.shape == (4, 6) and per.dtype == dtype
    np.testing.assert_allclose(per.double().numpy(), expected, rtol=0, atol=atol)
    assert norm_deviation(x_in, x_out).item() == pytest.approx(expected.mean(), abs=atol)


def test_norm_deviation_zero_input_vector():
    x_in = torch.zeros(2, 3)
    x_out = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    assert norm_deviation(x_in, x_out, reduce="none").tolist() == [0.0, math.inf]


def test_norm_deviation_broadcasts_and_handles_huge_values():
    x_in = torch.randn(2, 1, 4) * 1e30
    x_out = torch.cat([x_in, 3 * x_in], dim=1)
    torch.testing.assert_close(
        norm_deviation(x_in, x_out, reduce="none"), torch.tensor([[0.0, 2.0]] * 2)
    )


def test_norm_deviation_rejects_bad_input():
    with pytest.raises(ValueError, match="last dim"):
        norm_deviation(torch.ones(3, 4), torch.ones(3, 5))
    with pytest.raises(ValueError, match="reduce='sum'"):
        norm_deviation(torch.ones(3), torch.ones(3), reduce="sum")
    with pytest.raises(ValueError, match="x_in must have shape"):
        norm_deviation(torch.tensor(1.0), torch.ones(3))


# ---------------------------------------------------------------- cosine_alignment


def test_cosine_alignment_identities():
    x = torch.randn(10, 7, dtype=torch.float64)
    assert cosine_alignment(x, -x).item() == pytest.approx(-1.0, abs=1e-12)
    assert cosine_alignment(x, 3 * x).item() == pytest.approx(1.0, abs=1e-12)
    e = torch.eye(4)
    assert cosine_alignment(e[0], e[1]).item() == 0.0


def test_cosine_alignment_matches_numpy():
    p, t = torch.randn(3, 5, 6), torch.randn(3, 5, 6)
    a, b = p.double().numpy(), t.double().numpy()
    expected = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    np.testing.assert_allclose(cosine_alignment(p, t, reduce="none").numpy(), expected, atol=1e-6)
    assert cosine_alignment(p, t).item() == pytest.approx(expected.mean(), abs=1e-6)


def test_cosine_alignment_zero_vectors_give_zero():
    z, x = torch.zeros(2, 3), torch.randn(2, 3)
    assert cosine_alignment(z, x, reduce="none").tolist() == [0.0, 0.0]
    assert cosine_alignment(z, z).item() == 0.0


def test_cosine_alignment_extreme_scales():
    x = torch.randn(4, 5)
    assert cosine_alignment(x * 1e30, -x * 1e-30).item() == pytest.approx(-1.0, abs=1e-6)


# ---------------------------------------------------------------- synergy (Eq. 9)


def test_synergy_hand_example():
    # gains: MGT 4−2 = 2, mHC 4−3.5 = 0.5, DDL 4−3 = 1 -> 𝒮 = 2 − 0.5 − 1 = 0.5
    s = synergy(4.0, 3.5, 3.0, 2.0)
    assert isinstance(s, float) and s == pytest.approx(0.5)
    assert synergy(4.0, 3.0, 3.0, 3.0) == pytest.approx(-1.0)


def test_synergy_tensors_equal_simplified_form():
    L = torch.rand(4, 3, dtype=torch.float64)
    s = synergy(L[0], L[1], L[2], L[3])
    assert isinstance(s, torch.Tensor) and s.shape == (3,)
    torch.testing.assert_close(s, L[1] + L[2] - L[0] - L[3])


def test_synergy_rejects_non_numbers():
    with pytest.raises(ValueError, match="L_ddl"):
        synergy(1.0, 1.0, "0.5", 1.0)


# ---------------------------------------------------------------- amax_gain


def test_amax_gain_of_permutation_products_is_one():
    g = torch.Generator().manual_seed(0)
    perms = [torch.eye(5)[torch.randperm(5, generator=g)] for _ in range(30)]
    forward, backward = amax_gain(perms)
    assert forward.item() == 1.0 and backward.item() == 1.0


def test_amax_gain_of_doubly_stochastic_products_is_one():
    g = torch.Generator().manual_seed(1)
    Hs = []
    for _ in range(50):
        w = torch.rand(3, generator=g, dtype=torch.float64)
        w = w / w.sum()
        perms = [torch.eye(4, dtype=torch.float64)[torch.randperm(4, generator=g)] for _ in w]
        Hs.append(sum(wi * P for wi, P in zip(w, perms, strict=True)))
    forward, backward = amax_gain(Hs)
    assert forward.item() == pytest.approx(1.0, abs=1e-12)
    assert backward.item() == pytest.approx(1.0, abs=1e-12)


def test_amax_gain_hand_built_2x2_and_order():
    H1 = torch.tensor([[1.0, 2.0], [0.0, 1.0]])
    H2 = torch.tensor([[1.0, 0.0], [-3.0, 1.0]])
    # H1 first: P = H2 H1 = [[1, 2], [-3, -5]]: row sums 3, 8; column sums 4, 7.
    forward, backward = amax_gain([H1, H2])
    assert (forward.item(), backward.item()) == (8.0, 7.0)
    # H2 first: P = H1 H2 = [[-5, 2], [-3, 1]]: row sums 7, 4; column sums 8, 3.
    forward, backward = amax_gain([H2, H1])
    assert (forward.item(), backward.item()) == (7.0, 8.0)


def test_amax_gain_matches_numpy_batched():
    Hs = torch.randn(6, 3, 4, 4)
    P = np.broadcast_to(np.eye(4), (3, 4, 4))
    for H in Hs.double().numpy():
        P = H @ P
    forward, backward = amax_gain(Hs)
    assert forward.dtype == torch.float64 and forward.shape == (3,)
    np.testing.assert_allclose(forward.numpy(), np.abs(P).sum(axis=2).max(axis=1), rtol=1e-12)
    np.testing.assert_allclose(backward.numpy(), np.abs(P).sum(axis=1).max(axis=1), rtol=1e-12)
    list_forward, _ = amax_gain(list(Hs))
    torch.testing.assert_close(list_forward, forward)


def test_composite_gain_curve_prefixes_and_last_element():
    Hs = list(torch.randn(7, 2, 3, 3))
    forward, backward = composite_gain_curve(Hs)
    assert forward.shape == backward.shape == (7, 2)
    for layer in range(7):
        f, b = amax_gain(Hs[: layer + 1])
        torch.testing.assert_close(forward[layer], f)
        torch.testing.assert_close(backward[layer], b)


def test_composite_gain_curve_geometric_growth_and_broadcast():
    Hs = [2 * torch.eye(3)] * 199 + [torch.eye(3).expand(4, 3, 3)]
    forward, backward = composite_gain_curve(Hs)
    expected = 2.0 ** torch.arange(1, 201, dtype=torch.float64).clamp(max=199)
    assert forward.shape == (200, 4)
    torch.testing.assert_close(forward, expected[:, None].expand(200, 4))
    assert torch.isfinite(backward).all()


@pytest.mark.parametrize("fn", [amax_gain, composite_gain_curve])
def test_gain_rejects_bad_input(fn):
    with pytest.raises(ValueError, match="H_list is empty"):
        fn([])
    with pytest.raises(ValueError, match=r"H_list\[1\] must be square"):
        fn([torch.eye(3), torch.ones(3, 2)])
    with pytest.raises(ValueError, match=r"H_list\[1\] is 2×2"):
        fn([torch.eye(3), torch.eye(2)])
    with pytest.raises(ValueError, match="do not broadcast"):
        fn([torch.eye(2).expand(3, 2, 2), torch.eye(2).expand(4, 2, 2)])
    with pytest.raises(ValueError, match=r"H_list as a tensor .*\(3, 3\)"):
        fn(torch.eye(3))


# ---------------------------------------------------------------- beta_stats


def test_beta_stats_hand_built():
    beta = torch.tensor([[-2.0, -1.0, 0.0], [0.5, 1.0, 3.0]])
    s = beta_stats(beta, bins=5)
    values = np.array([-2.0, -1.0, 0.0, 0.5, 1.0, 3.0])
    assert s["count"] == 6
    assert s["frac_negative"] == pytest.approx(2 / 6)
    assert s["mean"] == pytest.approx(values.mean())
    assert s["std"] == pytest.approx(values.std())
    assert (s["min"], s["max"]) == (-2.0, 3.0)
    assert s["edges"] == pytest.approx([-2.0, -1.0, 0.0, 1.0, 2.0, 3.0])
    assert s["hist"] == [1, 1, 2, 1, 1]
    json.dumps(s)


def test_beta_stats_zero_is_not_negative_and_constant_beta():
    s = beta_stats(torch.zeros(4, 4), bins=3)
    assert s["frac_negative"] == 0.0 and s["std"] == 0.0
    assert s["hist"] == [0, 4 * 4, 0] and s["edges"] == pytest.approx([-0.5, -1 / 6, 1 / 6, 0.5])


def test_beta_stats_range_excludes_outside_values():
    s = beta_stats(torch.tensor([-5.0, -0.5, 0.5, 5.0]), bins=2, range=(-1, 1))
    assert s["hist"] == [1, 1] and s["frac_negative"] == 0.5


def test_beta_stats_per_layer_shares_edges():
    betas = [torch.full((3, 2), -1.0), torch.tensor([0.0, 1.0, 2.0])]
    out = beta_stats_per_layer(betas, bins=3)
    assert out["frac_negative"] == [1.0, 0.0]
    assert out["mean"] == pytest.approx([-1.0, 1.0])
    assert out["edges"] == pytest.approx([-1.0, 0.0, 1.0, 2.0])
    assert out["hist"] == [[6, 0, 0], [0, 1, 2]]
    assert out["hist"][1] == beta_stats(betas[1], bins=3, range=(-1, 2))["hist"]
    json.dumps(out)


def test_beta_stats_rejects_bad_input():
    with pytest.raises(ValueError, match="beta is empty"):
        beta_stats(torch.zeros(0))
    with pytest.raises(ValueError, match="1 non-finite"):
        beta_stats(torch.tensor([0.0, math.nan]))
    with pytest.raises(ValueError, match="bins=0"):
        beta_stats(torch.ones(3), bins=0)
    with pytest.raises(ValueError, match="lo < hi"):
        beta_stats(torch.ones(3), range=(1, 1))
    with pytest.raises(ValueError, match="betas must be a non-empty"):
        beta_stats_per_layer([])
    with pytest.raises(ValueError, match=r"betas\[1\] has 1 non-finite"):
        beta_stats_per_layer([torch.ones(2), torch.tensor([math.inf])])
