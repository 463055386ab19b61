"""Each residual rule's update equals its equation in docs/design.md §3 on a hand-built case.

The expected values are computed here from the rule's own parameters with plain tensor algebra
(per-token loops, dense solves), independently of the rule's vectorised code path.
"""

import math

import pytest
import torch
import torch.nn.functional as F

from geolab import GeoConfig
from geolab.rules import RESIDUALS

D, S, B = 8, 5, 2


def cfg_for(rule, **kw):
    base = dict(residual=rule, n_layer=2, d_model=D, n_head=2, seq_len=S, d_in=D, d_out=D)
    base.update(kw)
    return GeoConfig(**base)


def sublayer_for(width, seed=1):
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(width, width, generator=g, dtype=torch.float64) / math.sqrt(width)
    return lambda z: torch.tanh(z @ m)


def ln(z):
    return F.layer_norm(z, z.shape[-1:])


def rms(z):
    return z / torch.sqrt(z.pow(2).mean(-1, keepdim=True) + torch.finfo(z.dtype).eps)


def make(rule, **kw):
    torch.manual_seed(0)
    r = RESIDUALS[rule](cfg_for(rule, **kw)).double()
    with torch.no_grad():  # move every parameter off its init so no term hides behind a zero
        for p in r.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return r


def x_state(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)


@pytest.mark.parametrize("rule", ["postln", "preln", "rezero", "layerscale", "deepnorm", "noskip"])
def test_classic_rules(rule):
    r, f, x = make(rule), sublayer_for(D), x_state(B, S, D)
    lnw = lambda z: r.ln(z)  # noqa: E731 — the rule's own affine norm, checked separately below
    expected = {
        "postln": lambda: lnw(x + f(x)),
        "preln": lambda: x + f(lnw(x)),
        "rezero": lambda: x + r.a * f(x),
        "layerscale": lambda: x + r.s * f(lnw(x)),
        "deepnorm": lambda: lnw((2 * 2) ** 0.25 * x + f(x)),
        "noskip": lambda: f(lnw(x)),
    }[rule]()
    torch.testing.assert_close(r(x, f), expected)
    if hasattr(r, "ln"):
        w, b = r.ln.weight, r.ln.bias
        torch.testing.assert_close(r.ln(x), ln(x) * w + b)


def test_layerscale_follows_cait_depth_rule():
    for layers, s0 in [(12, 0.1), (18, 0.1), (24, 1e-5), (48, 1e-6)]:
        r = RESIDUALS["layerscale"](cfg_for("layerscale", n_layer=layers))
        assert torch.all(r.s == torch.tensor(s0, dtype=r.s.dtype))
    assert torch.all(RESIDUALS["layerscale"](cfg_for("layerscale", layerscale_init=0.3)).s == 0.3)


def test_rezero_is_identity_at_init():
    r = RESIDUALS["rezero"](cfg_for("rezero"))
    x = torch.randn(B, S, D)
    torch.testing.assert_close(r(x, lambda z: z * 7 + 1), x)


@pytest.mark.parametrize("rule", ["mgt_mhc", "mgt_ddl", "mgt"])
def test_mgt_family(rule):
    r, f, x = make(rule, lam=1.5, eps=0.2), sublayer_for(D), x_state(B, S, D)
    v = f(r.ln(x))
    if r.tangent:
        z = x @ r.w_gate.weight.T
        v = v * torch.sigmoid(ln(z) * r.ln_gate.weight + r.ln_gate.bias)
    if not r.delta:
        expected = x + v
    else:
        beta = 1.5 * torch.tanh(x @ r.w_beta.weight.T + r.w_beta.bias) + 0.2
        expected = x + beta * (v - r.alpha * x)
    torch.testing.assert_close(r(x, f), expected)


def test_mgt_beta_starts_at_beta0_for_every_token():
    r = RESIDUALS["mgt"](cfg_for("mgt", beta0=0.3, lam=2.0, eps=0.1))
    r(torch.randn(B, S, D) * 5, lambda z: z)
    torch.testing.assert_close(r.gates["beta"], torch.full((B, S, D), 0.3))


def test_ddl_per_token():
    r, f, x = make("ddl"), sublayer_for(D), x_state(B, S, D)
    out = r(x, f)
    for b in range(B):
        for t in range(S):
            xt = x[b, t]
            xn = rms(xt) * r.norm.weight
            k = f(xn)
            k = k / k.norm()
            beta = 2 * torch.sigmoid(r.w_beta.weight[0] @ xn + r.w_beta.bias[0])
            v = 4 * torch.sigmoid(r.w_v.weight[0] @ xt + r.w_v.bias[0])
            torch.testing.assert_close(out[b, t], xt + beta * (v - k @ xt) * k)


def test_ddl_beta_starts_at_beta0():
    r = RESIDUALS["ddl"](cfg_for("ddl", beta0=1.6))
    r(torch.randn(B, S, D), lambda z: z)
    torch.testing.assert_close(r.gates["beta"], torch.full((B, S), 1.6))


def sinkhorn_ref(logits, iters=20):
    m = torch.exp(logits - logits.max())
    for _ in range(iters):
        m = m / m.sum(0, keepdim=True)
        m = m / m.sum(1, keepdim=True)
    return m


@pytest.mark.parametrize("rule", ["hc", "mhc"])
def test_stream_rules_per_token(rule):
    n = 3
    r, f, x = make(rule, n_streams=n), sublayer_for(D), x_state(B, S, n, D)
    out = r(x, f)
    a_pre, a_post, a_res = r.alpha
    for b in range(B):
        for t in range(S):
            xt = x[b, t]
            z = r.phi.weight @ (rms(xt.flatten()) * r.norm_in.weight)
            h_pre = torch.sigmoid(a_pre * z[:n] + r.b_pre)
            h_post = 2 * torch.sigmoid(a_post * z[n : 2 * n] + r.b_post)
            zr = z[2 * n :].reshape(n, n)
            if rule == "mhc":
                h_res = sinkhorn_ref(a_res * zr + r.b_res)
            else:
                h_res = r.b_res + a_res * torch.tanh(zr)
            expected = h_res @ xt + torch.outer(h_post, f(r.ln(h_pre @ xt)))
            torch.testing.assert_close(out[b, t], expected)


def test_mhc_starts_near_identity_mixing():
    r = RESIDUALS["mhc"](cfg_for("mhc"))
    x = torch.randn(B, S, 4, D)
    r(x, lambda z: z)
    eye = torch.eye(4).expand(B, S, 4, 4)
    assert (r.gates["H_res"] - eye).abs().max() < 2e-3
    torch.testing.assert_close(r.gates["H_pre"], torch.full((B, S, 4), 0.25), atol=0.02, rtol=0)
    torch.testing.assert_close(r.gates["H_post"], torch.ones(B, S, 4), atol=0.05, rtol=0)


def test_jpmhc_per_token():
    n = 2
    r, x = make("jpmhc", n_streams=n), x_state(B, S, D)
    f = sublayer_for(D // n)
    out = r(x, f)
    a = r.CAYLEY_A
    for b in range(B):
        for t in range(S):
            z = r.w(r.ln_in(x[b, t]))
            h_pre, h_post = torch.softmax(z[:n], 0), torch.softmax(z[n : 2 * n], 0)
            hr = z[2 * n :].reshape(n, n)
            w = hr - hr.T
            # Two fixed-point steps from Y = I give the series I + aW + (a²/2)W².
            y = torch.eye(n, dtype=x.dtype) + a * w + a * a / 2 * w @ w
            streams = x[b, t].reshape(n, D // n)
            expected = y @ streams + torch.outer(h_post, f(r.ln(h_pre @ streams)))
            torch.testing.assert_close(out[b, t], expected.flatten())


def dense_geometry(r, xt):
    """u, v, k, β, γ for one token from the rule's own heads, recomputed by hand."""
    h = F.gelu(r.trunk.weight @ xt + r.trunk.bias)
    o = r.heads.weight @ h + r.heads.bias
    if r.mode != "hybrid":
        return o, None
    return o, torch.sigmoid(r.w_gamma.weight[0] @ xt + r.w_gamma.bias[0])


@pytest.mark.parametrize("rule", ["edelta", "cayley", "householder"])
@pytest.mark.parametrize("geometry", ["full", "streams"])
def test_geometric_rules_per_token(rule, geometry):
    n = 4
    r, f, x = make(rule, geometry=geometry, n_streams=n), sublayer_for(D), x_state(B, S, D)
    out = r(x, f)
    g = n if geometry == "streams" else D
    eye = torch.eye(g, dtype=x.dtype)
    for b in range(B):
        for t in range(S):
            o, gamma = dense_geometry(r, x[b, t])
            if rule == "householder":
                k, gamma = o / o.norm(), 0.0
                u = v = torch.zeros(g, dtype=x.dtype)
                beta = 0.0
            else:
                u, v, beta = o[:g], o[g : 2 * g], F.softplus(o[2 * g])
                k = o[2 * g + 1 :] / o[2 * g + 1 :].norm() if rule == "edelta" else torch.zeros(g)
                gamma = 1.0 if rule == "cayley" else gamma
            a = torch.outer(u, v) - torch.outer(v, u)
            q = torch.linalg.solve(eye + beta / 2 * a, eye - beta / 2 * a)
            h2 = eye - 2 * torch.outer(k.to(x.dtype), k.to(x.dtype))
            op = gamma * q + (1 - gamma) * h2
            if geometry == "full":
                y = op @ x[b, t]
            else:
                y = (op @ x[b, t].reshape(n, D // n)).flatten()
            expected = y + r.h_post.weight @ f(r.h_pre.weight @ r.ln(y))
            torch.testing.assert_close(out[b, t], expected)


def test_edelta_gate_starts_at_half_and_regulariser_is_one():
    r = RESIDUALS["edelta"](cfg_for("edelta"))
    r(torch.randn(B, S, D), lambda z: z)
    torch.testing.assert_close(r.gates["gamma"], torch.full((B, S), 0.5))
    torch.testing.assert_close(r.reg, torch.tensor(1.0))


def test_sequence_pool_warns():
    with pytest.warns(UserWarning, match="non-causal"):
        RESIDUALS["edelta"](cfg_for("edelta", pool="sequence"))
