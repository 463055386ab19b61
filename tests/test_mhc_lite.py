"""mHC-lite (``mhc_lite``, ``geolab.mixing.birkhoff``): H_res exactly doubly stochastic for any
logits, equal — values and gradients — to a dense sum over ``itertools.permutations`` written
here, the rule equal to its equation per token, its start, training and the compiled layer step.
"""

import itertools
import math

import pytest
import torch
from conftest import F32, F64, FAST, batch_shapes, dtypes, randn
from hypothesis import given
from hypothesis import strategies as st

from geolab import GeoConfig, GeoTransformer
from geolab.mixing import birkhoff, permutation_matrices
from geolab.rules import RESIDUALS

D, S, B = 8, 5, 2


def dense_birkhoff(logits):
    """Σ_σ softmax(logits)_σ P_σ, one explicit n×n matrix per permutation, float64, looped."""
    k = logits.shape[-1]
    n = next(m for m in range(1, 8) if math.factorial(m) == k)
    w = torch.exp(logits.double() - logits.double().amax(-1, keepdim=True))
    w = w / w.sum(-1, keepdim=True)
    out = torch.zeros(*logits.shape[:-1], n, n, dtype=torch.float64)
    for idx, sigma in enumerate(itertools.permutations(range(n))):
        p = torch.zeros(n, n, dtype=torch.float64)
        for i in range(n):
            p[i, sigma[i]] = 1.0
        out = out + w[..., idx, None, None] * p
    return out


def test_permutation_matrices_are_the_n_factorial_permutations_identity_first():
    for n in range(1, 6):
        perms = permutation_matrices(n)
        assert perms.shape == (math.factorial(n), n, n)
        assert torch.equal(perms[0], torch.eye(n))
        assert torch.equal(perms.sum(-1), torch.ones(math.factorial(n), n))
        assert torch.equal(perms.sum(-2), torch.ones(math.factorial(n), n))
        assert len({tuple(p.flatten().tolist()) for p in perms}) == math.factorial(n)  # distinct


@FAST
@given(
    n=st.integers(1, 5),
    lead=batch_shapes,
    scale=st.sampled_from([0.0, 1e-3, 1.0, 30.0, 1e4]),
    dtype=dtypes,
    seed=st.integers(0, 2**31 - 1),
)
def test_birkhoff_is_exactly_doubly_stochastic(n, lead, scale, dtype, seed):
    # logits up to ±1e4 (softmax then puts all mass on one or a few permutations): never NaN,
    # entries ≥ 0, every row and column sums to 1 within a few float eps — no iteration left.
    logits = randn(*lead, math.factorial(n), dtype=dtype, seed=seed) * scale
    h = birkhoff(logits, permutation_matrices(n, dtype=dtype))
    assert h.dtype == dtype and h.shape == (*lead, n, n)
    assert torch.isfinite(h).all() and (h >= 0).all()
    eps = torch.finfo(dtype).eps
    ones = torch.ones(*lead, n, dtype=dtype)
    torch.testing.assert_close(h.sum(-1), ones, rtol=0, atol=6 * eps)  # measured ≤ 3 eps
    torch.testing.assert_close(h.sum(-2), ones, rtol=0, atol=6 * eps)
    tol = 1e-6 if dtype == F32 else 1e-12
    torch.testing.assert_close(h.double(), dense_birkhoff(logits), rtol=0, atol=tol)


def test_birkhoff_with_extreme_and_infinite_logits():
    perms = permutation_matrices(3)
    big = torch.tensor([1e4, -1e4, 0.0, 5e3, -5e3, 1e4])  # ties at the top: half and half
    h = birkhoff(big, perms)
    torch.testing.assert_close(h, 0.5 * (perms[0] + perms[5]))
    one = torch.tensor([-math.inf, 0.0, -math.inf, -math.inf, -math.inf, -math.inf])
    assert torch.equal(birkhoff(one, perms), perms[1])  # a −∞ logit is weight 0, exactly
    assert torch.isnan(birkhoff(torch.full((6,), math.nan), perms)).all()


def test_birkhoff_gradient_equals_the_dense_sum():
    n = 4
    logits = (3 * randn(2, 3, math.factorial(n), seed=5)).requires_grad_()
    ref_logits = logits.detach().clone().requires_grad_()
    w = randn(2, 3, n, n, seed=6)
    (g,) = torch.autograd.grad((birkhoff(logits, permutation_matrices(n, F64)) * w).sum(), logits)
    (g_ref,) = torch.autograd.grad((dense_birkhoff(ref_logits) * w).sum(), ref_logits)
    torch.testing.assert_close(g, g_ref, rtol=1e-12, atol=1e-12)
    small = logits.detach()[0, :1].clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda z: birkhoff(z, permutation_matrices(n, F64)), (small,))


@pytest.mark.parametrize(
    "logits, perms, match",
    [
        ([0.0, 1.0], permutation_matrices(2), r"logits: expected a \(\.\.\., n!\) tensor"),
        (torch.zeros(3, dtype=torch.long), permutation_matrices(2), r"floating-point"),
        (torch.zeros(3), permutation_matrices(2), r"perms: expected \(3, n, n\)"),
    ],
)
def test_birkhoff_refuses_bad_input(logits, perms, match):
    with pytest.raises(ValueError, match=match):
        birkhoff(logits, perms)
    with pytest.raises(ValueError, match=r"n: must be an int >= 1, got 0"):
        permutation_matrices(0)


def _cfg(**kw):
    base = dict(residual="mhc_lite", n_layer=2, d_model=D, n_head=2, seq_len=S, d_in=D, d_out=D)
    return GeoConfig(**{**base, **kw})


def rms(z):
    return z / torch.sqrt(z.pow(2).mean(-1, keepdim=True) + torch.finfo(z.dtype).eps)


@pytest.mark.parametrize("n", [1, 3, 4])
def test_mhc_lite_per_token(n):
    torch.manual_seed(0)
    r = RESIDUALS["mhc_lite"](_cfg(n_streams=n)).double()
    with torch.no_grad():  # off the init, so no term hides behind a zero
        for p in r.parameters():
            p.add_(0.1 * torch.randn_like(p))
    m = randn(D, D, seed=1) / math.sqrt(D)
    f = lambda z: torch.tanh(z @ m)  # noqa: E731
    x = randn(B, S, n, D, seed=3)
    out = r(x, f)
    a_pre, a_post, a_res = r.alpha
    for b in range(B):
        for t in range(S):
            xt = x[b, t]
            z = r.phi.weight @ (rms(xt.flatten()) * r.norm_in.weight)
            h_pre = torch.sigmoid(a_pre * z[:n] + r.b_pre)
            h_post = 2 * torch.sigmoid(a_post * z[n : 2 * n] + r.b_post)
            h_res = dense_birkhoff(a_res * z[2 * n :] + r.b_res)
            expected = h_res @ xt + torch.outer(h_post, f(r.ln(h_pre @ xt)))
            torch.testing.assert_close(out[b, t], expected)
    h = r.gates["H_res"]
    torch.testing.assert_close(h.sum(-1), torch.ones(B, S, n, dtype=F64), rtol=0, atol=1e-15)
    torch.testing.assert_close(h.sum(-2), torch.ones(B, S, n, dtype=F64), rtol=0, atol=1e-15)


def test_mhc_lite_starts_as_mhc_does():
    # identity permutation at bias 0, the other 23 at −8 (the authors' static bias): H_res ≈ I
    # with off-diagonal (n−1)!·e⁻⁸/(1 + (n!−1)·e⁻⁸); H_pre and H_post as mhc's.
    lite = RESIDUALS["mhc_lite"](_cfg())
    mhc = RESIDUALS["mhc"](_cfg(residual="mhc"))
    x = torch.randn(B, S, 4, D)
    lite(x, lambda z: z)
    mhc(x, lambda z: z)
    off = 6 * math.exp(-8) / (1 + 23 * math.exp(-8))
    want = torch.full((4, 4), off).fill_diagonal_(1 - 3 * off).expand(B, S, 4, 4)
    torch.testing.assert_close(lite.gates["H_res"], want, rtol=0, atol=1e-4)
    assert lite.b_res.shape == (24,) and lite.phi.weight.shape == (2 * 4 + 24, 4 * D)
    for gate in ("H_pre", "H_post"):
        torch.testing.assert_close(lite.gates[gate], mhc.gates[gate], rtol=0, atol=2e-3)
    assert "perms" not in lite.state_dict()  # a constant, rebuilt with the rule


def test_mhc_lite_refuses_too_many_streams():
    with pytest.raises(ValueError, match=r"GeoConfig.n_streams=7 is not allowed; mhc_lite"):
        _cfg(n_streams=7)


def test_mhc_lite_trains_and_stays_doubly_stochastic():
    torch.manual_seed(0)
    model = GeoTransformer(_cfg(n_layer=2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x = randn(4, S, D, dtype=F32, seed=2)
    y = torch.roll(x, 1, dims=-1)
    losses = []
    for _ in range(8):
        opt.zero_grad()
        loss = (model(x) - y).square().mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(math.isfinite(v) for v in losses) and losses[-1] < losses[0]
    assert all(p.grad is not None for n, p in model.named_parameters() if "b_res" in n)
    for rule in model.rules:
        h = rule.gates["H_res"]
        assert (h >= 0).all()
        torch.testing.assert_close(h.sum(-2), torch.ones(h.shape[:-1]), rtol=0, atol=1e-6)


def test_mhc_lite_compiled_layer_step_follows_eager():
    # dynamo traces one graph for every layer (no code generation: CompileCounter), as for mhc
    import torch._dynamo
    from torch._dynamo.testing import CompileCounter

    from geolab import compiling

    torch._dynamo.reset()
    compiling.compiled.cache_clear()
    counter = CompileCounter()
    try:
        torch.manual_seed(0)
        cfg = GeoConfig(residual="mhc_lite", n_layer=3, d_model=16, n_head=2, seq_len=8,
                        vocab_size=11)  # fmt: skip
        model = GeoTransformer(cfg)
        tokens = torch.randint(0, 11, (1, 8), generator=torch.Generator().manual_seed(0))
        plain = model(tokens)
        model.compile_layers(backend=counter)
        got = model(tokens)
        torch.testing.assert_close(got, plain, rtol=0, atol=0)
        frames = counter.frame_count
        assert frames >= 1
        got.square().sum().backward()
        model(tokens).sum().backward()
        assert counter.frame_count == frames  # three layers, two calls: traced once
    finally:
        torch._dynamo.reset()
        compiling.compiled.cache_clear()
