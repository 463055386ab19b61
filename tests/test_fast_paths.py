"""The fused rule updates and the one-node Sinkhorn equal the straightforward formulas they replace.

Each test writes the plain formula (as the rule's docstring states it) next to the rule's output
and compares values and gradients in float64. The float32 Gram path of ``effective_rank`` is
compared with the SVD in tests/test_metrics.py.
"""

import pytest
import torch
import torch.nn.functional as F
from conftest import FAST, batch_shapes, dtypes
from hypothesis import given
from hypothesis import strategies as st

from geolab.config import GeoConfig
from geolab.layers import rms_norm_linear
from geolab.mixing import LINEAR_SPREAD, _sinkhorn_log, _SinkhornLinear, sinkhorn
from geolab.operators import (
    _cayley_coeffs,
    _cayley_dots,
    _cayley_planes,
    _hybrid_guarded,
    _patch,
    _polynomial_everywhere,
    cayley_apply,
    deferring,
    delta_update,
    hybrid_apply,
    take_deferred,
)
from geolab.rules import rule_class

D, S, B = 16, 5, 3


def _rule(name, **fields):
    torch.manual_seed(0)
    cfg = GeoConfig(residual=name, d_model=D, n_head=2, seq_len=S, d_in=D, d_out=D, **fields)
    rule = rule_class(cfg)(cfg).double()
    with torch.no_grad():  # move every parameter off its init so no term is trivially 0 or 1
        for p in rule.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return rule


def _sublayer():
    w = torch.randn(D, D, dtype=torch.float64) / D**0.5
    return lambda h: torch.tanh(h @ w)


def _compare(rule, plain, x):
    """Rule output and input gradient vs ``plain(x)`` (same parameters, same sublayer)."""
    f = _sublayer()
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    out, ref = rule(x1, f), plain(x2, f)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    w = torch.randn_like(out)
    (g1,) = torch.autograd.grad((out * w).sum(), x1)
    (g2,) = torch.autograd.grad((ref * w).sum(), x2)
    torch.testing.assert_close(g1, g2, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lam,eps", [(1.0, 0.0), (1.5, 0.1)])
def test_mgt_fused_update_matches_algorithm_1(lam, eps):
    rule = _rule("mgt", lam=lam, eps=eps, beta0=0.3)

    def plain(x, f):
        v = f(rule.ln(x)) * torch.sigmoid(rule.ln_gate(rule.w_gate(x)))
        beta = lam * torch.tanh(rule.w_beta(x)) + eps
        return x + beta * (v - rule.alpha * x)

    _compare(rule, plain, torch.randn(B, S, D, dtype=torch.float64))


def test_ddl_fused_update_matches_delta_update():
    rule = _rule("ddl")

    def plain(x, f):
        xn = rule.norm(x)
        beta = 2 * torch.sigmoid(rule.w_beta(xn)).squeeze(-1)
        v = 4 * torch.sigmoid(rule.w_v(x)).squeeze(-1)
        return delta_update(x, F.normalize(f(xn), dim=-1), beta, v)

    _compare(rule, plain, torch.randn(B, S, D, dtype=torch.float64))


@pytest.mark.parametrize("name", ["hc", "mhc"])
def test_stream_mixing_matches_einsum(name):
    rule = _rule(name)
    n = rule.n

    def plain(x, f):
        z = rule.phi(rule.norm_in(x.flatten(-2)))
        a_pre, a_post, a_res = rule.alpha
        h_pre = torch.sigmoid(a_pre * z[..., :n] + rule.b_pre)
        h_post = 2 * torch.sigmoid(a_post * z[..., n : 2 * n] + rule.b_post)
        h_res, _ = rule.mix(a_res, z[..., 2 * n :].unflatten(-1, (n, n)))
        f_out = f(rule.ln(torch.einsum("...i,...id->...d", h_pre, x)))
        mixed = torch.einsum("...ij,...jd->...id", h_res, x)
        return mixed + h_post.unsqueeze(-1) * f_out.unsqueeze(-2)

    _compare(rule, plain, torch.randn(B, S, n, D, dtype=torch.float64))


def test_jpmhc_stream_mixing_matches_einsum():
    rule = _rule("jpmhc", n_streams=2)
    n = rule.n

    def plain(x, f):
        z = rule.w(rule.ln_in(x))
        h_pre, h_post = torch.softmax(z[..., :n], -1), torch.softmax(z[..., n : 2 * n], -1)
        r = z[..., 2 * n :].unflatten(-1, (n, n))
        w_s = r - r.transpose(-1, -2)
        eye = torch.eye(n, dtype=x.dtype)
        y = eye.expand_as(w_s)
        for _ in range(rule.CAYLEY_ITERS):
            y = eye + (rule.CAYLEY_A / 2) * w_s @ (eye + y)
        streams = x.unflatten(-1, (n, -1))
        f_out = f(rule.ln(torch.einsum("...i,...id->...d", h_pre, streams)))
        mixed = torch.einsum("...ij,...jd->...id", y, streams)
        return (mixed + h_post.unsqueeze(-1) * f_out.unsqueeze(-2)).flatten(-2)

    half = D // 2
    w = torch.randn(half, half, dtype=torch.float64) / half**0.5
    f = lambda h: torch.tanh(h @ w)  # noqa: E731 — jpmhc's sublayers run at width D/n
    x = torch.randn(B, S, D, dtype=torch.float64)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    out, ref = rule(x1, f), plain(x2, f)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    (g1,) = torch.autograd.grad(out.square().sum(), x1)
    (g2,) = torch.autograd.grad(ref.square().sum(), x2)
    torch.testing.assert_close(g1, g2, rtol=1e-12, atol=1e-12)


def _unrolled_sinkhorn(logits, iters):
    f = logits - logits.amax((-2, -1), keepdim=True)
    for _ in range(iters):
        f = f - torch.logsumexp(f, -2, keepdim=True)
        f = f - torch.logsumexp(f, -1, keepdim=True)
    return f.exp()


@pytest.mark.parametrize("form", [_SinkhornLinear.apply, _sinkhorn_log])
@pytest.mark.parametrize("n,iters", [(2, 1), (4, 20), (5, 7)])
def test_sinkhorn_forms_match_unrolled_loop(form, n, iters):
    g = torch.Generator().manual_seed(n)
    logits = (3 * torch.randn(6, n, n, generator=g, dtype=torch.float64)).requires_grad_()
    w = torch.randn(6, n, n, generator=g, dtype=torch.float64)

    def stacked(t):  # the forms take matrices along the last axis, as sinkhorn passes them
        return form(t.permute(1, 2, 0), iters).permute(2, 0, 1)

    out, ref = stacked(logits), _unrolled_sinkhorn(logits, iters)
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-14)
    (g1,) = torch.autograd.grad((out * w).sum(), logits)
    (g2,) = torch.autograd.grad((ref * w).sum(), logits)
    torch.testing.assert_close(g1, g2, rtol=1e-10, atol=1e-13)
    assert torch.autograd.gradcheck(stacked, (logits,))


@pytest.mark.parametrize("spread", [1.0, LINEAR_SPREAD * 0.99, LINEAR_SPREAD * 1.01, 200.0])
def test_sinkhorn_in_float32_matches_float64_on_either_side_of_the_linear_spread(spread):
    g = torch.Generator().manual_seed(3)
    logits = torch.rand(64, 4, 4, generator=g, dtype=torch.float64)
    logits = logits - logits.amin((-2, -1), keepdim=True)
    logits = spread * logits / logits.amax((-2, -1), keepdim=True)  # each matrix spans the spread
    x32 = logits.float().requires_grad_()
    out = sinkhorn(x32, 20)
    (grad,) = torch.autograd.grad(out.square().sum(), x32)
    ref = _unrolled_sinkhorn(logits, 20)
    assert torch.isfinite(out).all() and torch.isfinite(grad).all()
    torch.testing.assert_close(out.double(), ref, rtol=0, atol=2e-6)


def _node_names(t):
    """The class names of every autograd node behind ``t``."""
    seen, stack = set(), [t.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is not None and fn not in seen:
            seen.add(fn)
            stack.extend(f for f, _ in fn.next_functions)
    return {type(fn).__name__ for fn in seen}


@pytest.mark.parametrize("spread", [1.0, LINEAR_SPREAD * 1.01])
def test_sinkhorn_takes_the_log_softmax_form_without_a_graph(spread):
    # Eagerly every spread runs the log_softmax rounds (one autograd node per normalisation);
    # the division form is a compiled CPU step's (test_sinkhorn_under_compile_defers_...).
    logits = torch.zeros(8, 4, 4)
    logits[3, 0, 1] = spread  # one matrix spans the spread, the others nothing
    names = _node_names(sinkhorn(logits.requires_grad_(), 20))
    assert "_SinkhornLinearBackward" not in names
    assert "LogSoftmaxBackward0" in names


@pytest.mark.parametrize("beta", [(0.5, 0.5, 1e-9), (1e-3, 1e-3, 1e-3), (50.0, 50.0, 50.0)])
def test_cayley_computes_every_form_when_it_cannot_ask_which_are_taken(monkeypatch, beta):
    # Mixed polynomial/plane indices, all polynomial (the CPU then skips the plane form), and
    # mostly plane. Without the cheap questions (an accelerator) every form is computed
    # everywhere, and torch.where must keep the same values and gradients.
    from geolab import operators

    g = torch.Generator().manual_seed(5)
    x, u, v = (torch.randn(3, D, generator=g, dtype=torch.float64) for _ in range(3))
    u = (u * torch.tensor([[1e-7], [1.0], [1.0]], dtype=torch.float64)).requires_grad_()
    beta = torch.tensor(beta, dtype=torch.float64)
    eager = cayley_apply(x, u, v, beta)
    (eager_grad,) = torch.autograd.grad(eager.square().sum(), u)
    monkeypatch.setattr(operators, "_polynomial_everywhere", lambda *a, **k: False)
    monkeypatch.setattr(operators, "_some", lambda mask: True)
    every = cayley_apply(x, u, v, beta)
    (every_grad,) = torch.autograd.grad(every.square().sum(), u)
    assert torch.equal(every, eager) and torch.equal(every_grad, eager_grad)


_EXTREMES = [1e-30, 1e-7, 1.0, 1e7, 1e30]


@given(
    shape=batch_shapes,
    dtype=dtypes,
    u_scale=st.sampled_from(_EXTREMES),
    v_scale=st.sampled_from([0.0, *_EXTREMES]),
    k_scale=st.sampled_from([0.0, *_EXTREMES]),
    beta_scale=st.sampled_from([0.0, *_EXTREMES]),
    parallel=st.booleans(),
    seed=st.integers(0, 2**16),
)
@FAST
def test_cayley_and_hybrid_equal_their_guarded_forms(
    shape, dtype, u_scale, v_scale, k_scale, beta_scale, parallel, seed
):
    # The public calls take the polynomial form without guards when one host check finds
    # every index in it, the guarded forms otherwise: over sizes that take each form and the
    # full-width fallback, both must give the guarded forms' numbers — Cayley the same bits,
    # the fused hybrid (another arrangement of H₂) to rounding — with or without a graph.
    g = torch.Generator().manual_seed(seed)
    x, u, v, k = (torch.randn(*shape, 4, 7, generator=g, dtype=dtype) for _ in range(4))
    u = u * u_scale
    v = (u if parallel else v) * v_scale
    k = k * k_scale
    beta = torch.randn(*shape, 4, generator=g, dtype=dtype) * beta_scale
    gamma = torch.rand(*shape, 4, generator=g, dtype=dtype)
    c, gm = beta.unsqueeze(-1) / 2, gamma.unsqueeze(-1)
    dots = _cayley_dots(x, u, v)
    a, b, ok = _cayley_coeffs(c, *dots)
    cayley_guarded = x + (a * u + b * v)
    if not ok.all():
        cayley_guarded = _patch(cayley_guarded, ok, _cayley_planes, x, u, v, c)
    hybrid_guarded = _hybrid_guarded(x, u, v, k, c, gm, dots)
    # G_γ is a mix of two orthogonal maps, so an output entry is bounded by its token's norm,
    # not by the largest entry of x: rounding scales with ‖x‖
    tol = 4 * torch.finfo(dtype).eps * x.norm(dim=-1).amax().item()
    for grad in (True, False):
        with torch.set_grad_enabled(grad):
            got = cayley_apply(x, u, v, beta)
            assert torch.equal(got.isnan(), cayley_guarded.isnan())
            assert torch.equal(got.nan_to_num(), cayley_guarded.nan_to_num())
            got = hybrid_apply(x, u, v, k, beta, gamma)
            assert torch.equal(got.isnan(), hybrid_guarded.isnan())
            torch.testing.assert_close(
                got.nan_to_num(), hybrid_guarded.nan_to_num(), rtol=0, atol=tol
            )


def _dense_hybrid(x, u, v, k, beta, gamma):
    """γ (I + cA)⁻¹(I − cA) x + (1 − γ)(I − 2kkᵀ/kᵀk) x with A = u vᵀ − v uᵀ, c = β/2: dense
    matrices and a solve, written here from the definition (float64, differentiable)."""
    d = x.shape[-1]
    eye = torch.eye(d, dtype=x.dtype)
    A = u.unsqueeze(-1) * v.unsqueeze(-2) - v.unsqueeze(-1) * u.unsqueeze(-2)
    c = (beta / 2)[..., None, None]
    q = torch.linalg.solve(eye + c * A, (eye - c * A) @ x.unsqueeze(-1)).squeeze(-1)
    kk = (k * k).sum(-1, keepdim=True)
    h = x - 2 * k * (k * x).sum(-1, keepdim=True) / kk
    return gamma.unsqueeze(-1) * q + (1 - gamma.unsqueeze(-1)) * h


@given(
    shape=batch_shapes,
    d=st.integers(2, 40),
    scale=st.sampled_from([1e-3, 0.02, 0.3]),
    k_scale=st.sampled_from([1e-8, 1.0, 1e8]),
    x_scale=st.sampled_from([1e-6, 1.0, 1e6]),
    seed=st.integers(0, 2**16),
)
@FAST
def test_fused_hybrid_values_and_gradients_match_a_dense_solve(
    shape, d, scale, k_scale, x_scale, seed
):
    # E∆'s operator at the sizes training meets (m = |β/2|‖u‖‖v‖ ≤ 1, the polynomial form) and
    # extreme ‖k‖, ‖x‖: float32 values and gradients of every input against float64 dense maths.
    g = torch.Generator().manual_seed(seed)
    x, k = (torch.randn(*shape, 3, d, generator=g, dtype=torch.float64) for _ in range(2))
    u, v = (scale * torch.randn(*shape, 3, d, generator=g, dtype=torch.float64) for _ in range(2))
    x, k = x * x_scale, k * k_scale
    beta = torch.rand(*shape, 3, generator=g, dtype=torch.float64) * 2
    gamma = torch.rand(*shape, 3, generator=g, dtype=torch.float64)
    w = torch.randn(*shape, 3, d, generator=g, dtype=torch.float64)
    ins = (x, u, v, k, beta, gamma)
    want = _dense_hybrid(*(t.clone().requires_grad_() for t in ins))
    leaves64 = [t.clone().requires_grad_() for t in ins]
    want = _dense_hybrid(*leaves64)
    want_grads = torch.autograd.grad((want * w).sum(), leaves64)
    leaves32 = [t.float().requires_grad_() for t in ins]
    got = hybrid_apply(*leaves32)
    got_grads = torch.autograd.grad((got * w.float()).sum(), leaves32)
    assert got.dtype == torch.float32
    eps32 = torch.finfo(torch.float32).eps
    torch.testing.assert_close(got.double(), want, rtol=0, atol=20 * eps32 * x_scale)
    for name, a, b in zip("x u v k beta gamma".split(), got_grads, want_grads, strict=True):
        bound = 200 * eps32 * max(1.0, b.abs().max().item())
        torch.testing.assert_close(a.double(), b, rtol=1e-4, atol=bound, msg=name)


def test_polynomial_check_answers_for_every_index():
    g = torch.Generator().manual_seed(1)
    x, u, v, k = (torch.randn(B, S, D, generator=g) for _ in range(4))
    c = torch.full((B, S, 1), 0.25)

    def check(u, v, k, c, x=x):
        uu, vv = _cayley_dots(x, u, v)[:2]
        kk = (k * k).sum(-1, keepdim=True)
        return _polynomial_everywhere(c, uu, vv, kk, finite=(k * x).sum(-1, keepdim=True))

    assert check(u / D, v / D, k, c)  # every m ≪ 1: the polynomial, no guards
    assert check(0 * u, v / D, k, c)  # u = 0: the polynomial gives Q = I exactly
    assert not check(u / D, v / D, 0 * k, c)  # k = 0: no direction, the guarded form
    assert not check(u / D, v / D, 1e-25 * k, c)  # ‖k‖² underflows: the guarded form
    assert not check(u, v, k, 1e3 * c)  # m > 1: the plane form
    u_big = (u / D).clone()
    u_big[1, 2] = 1e-21  # one index whose ‖u‖² is subnormal, below the guards' range
    assert not check(u_big, v / D, k, c)
    k_big = k.clone()
    k_big[0, 0] *= 1e20  # one index whose ‖k‖² overflows
    assert not check(u / D, v / D, k_big, c)
    x_nan = x.clone()
    x_nan[2, 4, 0] = float("nan")
    assert not check(u / D, v / D, k, c, x_nan)


def test_hybrid_under_compile_traces_only_the_polynomial_and_defers_its_check():
    # No host read in a graph: one graph, the polynomial form, and the regime check left as a
    # bool tensor; compiling.checked reads it and reruns the call eagerly where it failed.
    import torch._dynamo
    from torch._dynamo.testing import CompileCounter

    from geolab import compiling

    torch._dynamo.reset()
    compiling.compiled.cache_clear()
    counter = CompileCounter()
    g = torch.Generator().manual_seed(2)
    for scale in (1.0, 0.5, 2.0, 1e3):  # the last: m > 1, outside the polynomial form
        x, u, v, k = (scale * torch.randn(B, S, D, generator=g) / D for _ in range(4))
        beta, gamma = torch.rand(B, S, generator=g), torch.rand(B, S, generator=g)
        args = (x, u, v, k, beta, gamma)
        want = hybrid_apply(*args)
        fn = compiling.compiled(hybrid_apply, backend=counter)
        with deferring():
            fn(*args)
            (flag,) = take_deferred()
        assert bool(flag) == (scale < 1e3)
        got = compiling.checked(hybrid_apply, *args, backend=counter)
        torch.testing.assert_close(got, want)
        assert not take_deferred()
        if scale == 1.0:
            frames = counter.frame_count
    assert frames == counter.frame_count == 1  # one graph, reused by every call
    # Compiled outside `deferring` (a whole model compiled by hand): nobody would read a
    # deferred check, so the graph breaks at the host read and the numbers stay right.
    x, u, v, k = (1e3 * torch.randn(B, S, D, generator=g) / D for _ in range(4))
    args = (x, u, v, k, torch.rand(B, S, generator=g), torch.rand(B, S, generator=g))
    torch.testing.assert_close(fn(*args), hybrid_apply(*args))
    assert not take_deferred()
    torch._dynamo.reset()
    compiling.compiled.cache_clear()


def test_edelta_regulariser_without_a_graph_is_the_same_number():
    # Without a graph E∆ reads its regulariser's γ off the gate itself instead of recomputing
    # it from the detached state.
    rule = _rule("edelta").float()
    x = torch.randn(B, S, D)
    with torch.enable_grad():
        rule(x, _sublayer_float())
        with_graph = rule.reg.detach()
    with torch.no_grad():
        rule(x, _sublayer_float())
    assert torch.equal(rule.reg, with_graph)


def _sublayer_float():
    w = torch.randn(D, D, generator=torch.Generator().manual_seed(2)) / D**0.5
    return lambda h: torch.tanh(h @ w)


@pytest.mark.parametrize("name", ["hc", "mhc"])
def test_stream_merge_hands_the_last_layer_a_materialised_gradient(name):
    # The sum's gradient is expanded along the streams (stride 0); H_res X's backward would take
    # it one matrix at a time. The gradient the streams see must be an ordinary tensor.
    h = torch.randn(B, S, 4, D).requires_grad_().clone()
    merged = rule_class(GeoConfig(residual=name, vocab_size=8)).merge(h)
    seen = []
    h.register_hook(lambda grad: seen.append(grad.stride()))
    merged.backward(torch.randn(B, S, D))
    assert seen == [torch.empty(B, S, 4, D).stride()]


def test_edelta_shortcut_reads_only_the_direction_of_k():
    # E∆ hands its unnormalised k to the operators, which use k̂ = k/‖k‖: scaling k changes nothing.
    from geolab.operators import hybrid_apply

    g = torch.Generator().manual_seed(0)
    x, u, v, k = (torch.randn(B, S, D, generator=g, dtype=torch.float64) for _ in range(4))
    beta, gamma = torch.rand(B, S, dtype=torch.float64), torch.rand(B, S, dtype=torch.float64)
    y = hybrid_apply(x, u, v, k, beta, gamma)
    torch.testing.assert_close(y, hybrid_apply(x, u, v, F.normalize(k, dim=-1), beta, gamma))
    torch.testing.assert_close(y, hybrid_apply(x, u, v, 1e3 * k, beta, gamma))


@pytest.mark.parametrize("eps,bias", [(None, False), (1e-6, True)])
def test_rms_norm_linear_is_the_norm_then_the_linear(eps, bias):
    torch.manual_seed(4)
    norm, lin = torch.nn.RMSNorm(12, eps=eps).double(), torch.nn.Linear(12, 5, bias=bias).double()
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
    x = (3 * torch.randn(B, S, 12, dtype=torch.float64)).requires_grad_()
    out, ref = rms_norm_linear(x, norm, lin), lin(norm(x))
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    w = torch.randn_like(out)
    params = [x, norm.weight, *lin.parameters()]
    got = torch.autograd.grad((out * w).sum(), params)
    want = torch.autograd.grad((ref * w).sum(), params)
    for g1, g2 in zip(got, want, strict=True):
        torch.testing.assert_close(g1, g2, rtol=1e-10, atol=1e-12)


def test_sinkhorn_under_compile_defers_its_spread_check():
    # The spread is not read on the host in a graph (a graph break, and dynamo would guard on
    # its value): the graph takes the division form and defers the check; compiling.checked
    # reruns eagerly (the log domain) for a spread past the linear one.
    import torch._dynamo
    from torch._dynamo.testing import CompileCounter

    from geolab import compiling

    torch._dynamo.reset()
    compiling.compiled.cache_clear()
    counter = CompileCounter()
    g = torch.Generator().manual_seed(6)
    for scale in (0.5, 1.0, 2.0, 4.0, 100.0):
        logits = scale * torch.randn(7, 4, 4, generator=g)
        got = compiling.checked(sinkhorn, logits, 3, backend=counter)
        torch.testing.assert_close(got, sinkhorn(logits, 3))
    assert counter.frame_count == 1
    torch._dynamo.reset()
    compiling.compiled.cache_clear()
