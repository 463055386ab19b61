"""Tests for geolab.mixing (Sinkhorn–Knopp) against a linear-domain reference, with hypothesis
properties, degenerate logits and bad arguments."""

import pytest
import torch
from conftest import F32, F64, FAST, batch_shapes, dtypes, randn
from hypothesis import given
from hypothesis import strategies as st

from geolab.mixing import sinkhorn


def ref_sinkhorn(logits, iters):
    """Linear-domain Sinkhorn as docs/design.md writes it, float64 (for moderate logits only)."""
    M = torch.exp(logits.double() - logits.double().amax((-2, -1), keepdim=True))
    for _ in range(iters):
        M = M / M.sum(-2, keepdim=True)
        M = M / M.sum(-1, keepdim=True)
    return M


@FAST
@given(
    n=st.integers(1, 8),
    lead=batch_shapes,
    std=st.floats(0, 3),
    iters=st.integers(1, 40),
    dtype=dtypes,
    seed=st.integers(0, 2**31 - 1),
)
def test_sinkhorn_matches_reference_rows_exact(n, lead, std, iters, dtype, seed):
    logits = randn(*lead, n, n, dtype=dtype, seed=seed) * std
    M, err = sinkhorn(logits, iters, return_error=True)
    assert M.dtype == dtype and M.shape == logits.shape and err.shape == lead
    tol = 1e-6 if dtype == F32 else 1e-12
    torch.testing.assert_close(M.double(), ref_sinkhorn(logits, iters), rtol=0, atol=tol)
    torch.testing.assert_close(M.sum(-1), torch.ones(*lead, n, dtype=dtype), rtol=0, atol=tol)
    col_dev = (M.double().sum(-2) - 1).abs().amax(-1)
    torch.testing.assert_close(err.double(), col_dev, rtol=0, atol=tol)
    assert (M >= 0).all()


def test_sinkhorn_column_error_shrinks_with_iterations():
    logits = randn(500, 4, 4, dtype=F32, seed=56) * 2
    errs = [sinkhorn(logits, it, return_error=True)[1].mean().item() for it in (1, 3, 10, 30)]
    assert errs[0] > errs[1] > errs[2] > errs[3]


def test_sinkhorn_error_grows_with_logit_spread():
    """Spec §2.5 (4×4, 20 iterations; the quoted values are the worst case over ~1000 draws):
    ≈1e-7 at std 0.5, ≈3e-4 at std 1, ≈2e-2 at std 2. Checked as order-of-magnitude bands."""
    g = torch.Generator().manual_seed(0)
    worst = {}
    for std in (0.5, 1.0, 2.0):
        logits = torch.randn(1000, 4, 4, generator=g) * std
        worst[std] = sinkhorn(logits, 20, return_error=True)[1].max().item()
    assert worst[0.5] < 1e-6
    assert 1e-6 < worst[1.0] < 3e-3
    assert 2e-3 < worst[2.0] < 2e-1
    assert worst[0.5] < worst[1.0] < worst[2.0]


def test_products_of_doubly_stochastic_matrices_do_not_expand():
    exact = sinkhorn(randn(30, 5, 5, seed=57) * 0.3, 500)
    perms = torch.stack(
        [
            torch.eye(5, dtype=F64)[torch.randperm(5, generator=torch.Generator().manual_seed(s))]
            for s in range(40)
        ]
    ).reshape(10, 4, 5, 5)
    weights = torch.softmax(randn(10, 4, seed=58), -1)
    birkhoff = (weights[..., None, None] * perms).sum(1)  # convex mixtures of permutations
    for mats in (exact, birkhoff):
        P = torch.eye(5, dtype=F64)
        for m in mats:
            P = m @ P
            assert torch.linalg.matrix_norm(P, ord=2) <= 1 + 1e-9
        torch.testing.assert_close(P.sum(-1), torch.ones(5, dtype=F64))
        torch.testing.assert_close(P.sum(-2), torch.ones(5, dtype=F64), atol=1e-9, rtol=0)


def test_sinkhorn_runs_in_float32_under_bf16_autocast():
    logits = randn(2, 4, 4, dtype=F32, seed=59).to(torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        M, err = sinkhorn(logits, 20, return_error=True)
    assert M.dtype == F32 and err.dtype == F32
    torch.testing.assert_close(M, sinkhorn(logits.float(), 20), rtol=0, atol=0)
    torch.testing.assert_close(M.sum(-1), torch.ones(2, 4), rtol=0, atol=1e-6)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("scale", [0.0, 1e2, 1e4, 1e30])
def test_sinkhorn_degenerate_logits_finite_with_finite_gradients(scale, dtype):
    logits = (randn(3, 4, 4, dtype=dtype, seed=60) * scale).requires_grad_()
    M, err = sinkhorn(logits, 20, return_error=True)
    assert torch.isfinite(M).all() and torch.isfinite(err).all()
    torch.testing.assert_close(M.sum(-1), torch.ones(3, 4, dtype=dtype), rtol=0, atol=1e-6)
    if scale == 0.0:
        torch.testing.assert_close(M, torch.full_like(M, 0.25), rtol=0, atol=0)
    (M * randn(3, 4, 4, dtype=dtype, seed=61)).sum().backward()
    assert torch.isfinite(logits.grad).all()


@pytest.mark.parametrize("iters", [0, -1, 1.5, True, "20"])
def test_sinkhorn_rejects_bad_iters(iters):
    with pytest.raises(ValueError, match=r"iters: must be an int >= 1, got"):
        sinkhorn(torch.zeros(3, 3), iters)


def test_sinkhorn_rejects_non_square():
    with pytest.raises(ValueError, match=r"logits: expected square \(\.\.\., n, n\), got shape"):
        sinkhorn(torch.zeros(2, 3, 4))
