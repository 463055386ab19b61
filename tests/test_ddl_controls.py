"""DDL's two controls (issue 54): ``ddl_write`` (DDL's update without its erase term) and
``ddl_state`` (DDL's expanded d×4 state with its compress–process–rewrite step).

Each is checked against an independent dense computation — explicit loops over batch, position,
column and tap in float64, from the rule's own parameters — for causality, its parameter count,
and a short training run through ``geolab train``.
"""

import json
import math

import pytest
import torch
import torch.nn.functional as F
from conftest import TINY_TRAIN

from geolab import GeoConfig, GeoTransformer, count_params
from geolab.cli.train import main as train_main
from geolab.operators import delta_update, delta_write, state_compress, state_expand
from geolab.rules import RESIDUALS
from geolab.rules.expanded import SHORT_CONV, VALUE_COLUMNS

D, S, B = 8, 6, 2
DV, K = VALUE_COLUMNS, SHORT_CONV


def cfg_for(rule, **kw):
    base = dict(residual=rule, n_layer=2, d_model=D, n_head=2, seq_len=S, d_in=D, d_out=D)
    return GeoConfig(**{**base, **kw})


def make(rule, **kw):
    """The rule in float64 with every parameter moved off its init (no term hides behind 0)."""
    torch.manual_seed(0)
    r = RESIDUALS[rule](cfg_for(rule, **kw)).double()
    with torch.no_grad():
        for p in r.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return r


def per_token_sublayer(width, seed=1):
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(width, width, generator=g, dtype=torch.float64) / math.sqrt(width)
    return lambda z: torch.tanh(z @ m)


def mixing_sublayer(width, seed=2):
    """A causal sublayer that mixes positions (a prefix mean), as attention does."""
    f = per_token_sublayer(width, seed)

    def g(z):
        counts = torch.arange(1, z.shape[-2] + 1, dtype=z.dtype).unsqueeze(-1)
        return f(z.cumsum(-2) / counts)

    return g


def randn(*shape, seed=3):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def rms(z, weight):
    return z / torch.sqrt(z.pow(2).mean() + torch.finfo(z.dtype).eps) * weight


# --- the operators ---------------------------------------------------------------------------


def test_delta_write_is_the_update_without_its_erase_term():
    x, k = randn(3, 5, D), randn(3, 5, D, seed=4)
    beta, v = 2 * torch.rand(3, 5, dtype=torch.float64), randn(3, 5, seed=5)
    got = delta_write(x, k, beta, v)
    for a in range(3):
        for t in range(5):
            kh = k[a, t] / k[a, t].norm()
            torch.testing.assert_close(got[a, t], x[a, t] + beta[a, t] * v[a, t] * kh)
            erase = beta[a, t] * (kh @ x[a, t]) * kh
            torch.testing.assert_close(delta_update(x, k, beta, v)[a, t], got[a, t] - erase)
    assert torch.equal(delta_write(x, torch.zeros_like(k), beta, v), x)  # k = 0: nothing written


def test_state_expand_copies_the_token_into_every_column():
    h = randn(2, S, D)
    X = state_expand(h, DV)
    assert X.shape == (2, S, D, DV) and X.is_contiguous()
    for j in range(DV):
        assert torch.equal(X[..., j], h)
    with pytest.raises(ValueError, match="d_v=0 is not allowed"):
        state_expand(h, 0)


def compress_loops(X, conv, read):
    """c[b, t, i] = Σ_j read_j Σ_τ conv[i, j, τ] X[b, t − K + 1 + τ, i, j], term by term."""
    b_, s_, d_, dv_ = X.shape
    kernel = conv.shape[-1]
    out = torch.zeros(b_, s_, d_, dtype=X.dtype)
    for b in range(b_):
        for t in range(s_):
            for i in range(d_):
                for j in range(dv_):
                    for tau in range(kernel):
                        src = t - kernel + 1 + tau
                        if src >= 0:
                            out[b, t, i] += read[j] * conv[i, j, tau] * X[b, src, i, j]
    return out


@pytest.mark.parametrize("seq", [1, 3, S])  # shorter than, near and above the kernel
def test_state_compress_equals_its_sum_and_torch_conv1d(seq):
    X, conv, read = randn(B, seq, D, DV), randn(D, DV, K, seed=6), randn(DV, seed=7)
    got = state_compress(X, conv, read)
    torch.testing.assert_close(got, compress_loops(X, conv, read))
    # The official form: a causal depthwise conv1d over the d·d_v channels, then the read.
    flat = X.reshape(B, seq, D * DV).transpose(1, 2)
    conv1d = F.conv1d(F.pad(flat, (K - 1, 0)), conv.reshape(D * DV, 1, K), groups=D * DV)
    official = (conv1d.transpose(1, 2).reshape(B, seq, D, DV) * read).sum(-1)
    torch.testing.assert_close(got, official)


def test_state_compress_rejects_bad_shapes():
    X = randn(B, S, D, DV)
    with pytest.raises(ValueError, match=r"conv: expected a tensor of shape \(d, d_v, K\)"):
        state_compress(X, randn(D, DV + 1, K), randn(DV))
    with pytest.raises(ValueError, match="read: last dim is 3"):
        state_compress(X, randn(D, DV, K), randn(3))
    with pytest.raises(ValueError, match=r"X: expected a tensor of shape \(\.\.\., S, d, d_v\)"):
        state_compress(randn(D, DV), randn(D, DV, K), randn(DV))


# --- the rules against per-token loops -------------------------------------------------------


def test_ddl_write_per_token():
    r, f, x = make("ddl_write"), per_token_sublayer(D), randn(B, S, D)
    out = r(x, f)
    for b in range(B):
        for t in range(S):
            xt = x[b, t]
            xn = rms(xt, r.norm.weight)
            k = f(xn)
            k = k / k.norm()
            beta = 2 * torch.sigmoid(r.w_beta.weight[0] @ xn + r.w_beta.bias[0])
            v = 4 * torch.sigmoid(r.w_v.weight[0] @ xt + r.w_v.bias[0])
            torch.testing.assert_close(out[b, t], xt + beta * v * k)
    torch.testing.assert_close(out, delta_write(x, f(r.norm(x)), r.gates["beta"], r.gates["v"]))


def test_ddl_write_has_ddls_parameters_and_differs_by_the_erase_term_alone():
    ddl, write = make("ddl"), make("ddl_write")
    assert {n: p.shape for n, p in ddl.named_parameters()} == {
        n: p.shape for n, p in write.named_parameters()
    }
    for (_, a), (_, b) in zip(ddl.state_dict().items(), write.state_dict().items(), strict=True):
        assert torch.equal(a, b)  # same seed, same draws: the same initialisation
    f, x = per_token_sublayer(D), randn(B, S, D)
    k = f(ddl.norm(x))
    kh = k / k.norm(dim=-1, keepdim=True)
    erase = ddl(x, f) - write(x, f)
    beta = write.gates["beta"].unsqueeze(-1)
    torch.testing.assert_close(erase, -beta * (kh * x).sum(-1, keepdim=True) * kh)


def test_ddl_state_per_token():
    r, f, X = make("ddl_state"), per_token_sublayer(D), randn(B, S, D, DV)
    out = r(X, f)
    c_all = compress_loops(X, r.conv, r.read)
    for b in range(B):
        for t in range(S):
            c = c_all[b, t]
            cn = rms(c, r.norm.weight)
            k = f(cn)
            k = k / k.norm()
            beta = 2 * torch.sigmoid(r.w_beta.weight[0] @ cn + r.w_beta.bias[0])
            for j in range(DV):
                v = 4 * torch.sigmoid(r.w_v.weight[j] @ c + r.w_v.bias[j])
                col = X[b, t, :, j]
                torch.testing.assert_close(out[b, t, :, j], col + beta * (v - k @ col) * k)
    assert r.gates["beta"].shape == (B, S) and r.gates["v"].shape == (B, S, DV)


def test_ddl_state_starts_from_the_official_init_and_ddls_gates():
    torch.manual_seed(0)
    r = RESIDUALS["ddl_state"](cfg_for("ddl_state", d_model=64, beta0=1.6))
    assert torch.equal(r.read, torch.full((DV,), 1 / DV))
    assert abs(r.conv.std().item() - 0.5 / math.sqrt(64)) < 0.01  # 1024 draws of N(0, 0.0625²)
    X = state_expand(torch.randn(B, S, 64), DV)
    r(X, lambda z: z)
    torch.testing.assert_close(r.gates["beta"], torch.full((B, S), 1.6))
    model = GeoTransformer(cfg_for("ddl_state"))
    h = torch.randn(B, S, D)
    torch.testing.assert_close(model.rule_cls.merge(model.rule_cls.expand(h, model.cfg)), h)


# --- causality, parameter counts, training ---------------------------------------------------


@pytest.mark.parametrize("rule", ["ddl_write", "ddl_state"])
def test_a_step_is_causal(rule):
    r, f = make(rule), mixing_sublayer(D)
    x = randn(B, S, D, DV) if rule == "ddl_state" else randn(B, S, D)
    t = 2
    later = x.clone()
    later[:, t + 1 :] = randn(*later[:, t + 1 :].shape, seed=9) * 3
    a, b = r(x, f), r(later, f)
    torch.testing.assert_close(a[:, : t + 1], b[:, : t + 1], rtol=0, atol=0)
    assert (a[:, t + 1 :] - b[:, t + 1 :]).abs().max() > 1e-3


@pytest.mark.parametrize("rule", ["ddl_write", "ddl_state"])
def test_the_model_is_causal(rule):
    torch.manual_seed(0)
    cfg = GeoConfig(residual=rule, n_layer=3, d_model=16, n_head=2, seq_len=8, vocab_size=11)
    model = GeoTransformer(cfg).eval()
    x = torch.randint(11, (2, 8), generator=torch.Generator().manual_seed(0))
    later = x.clone()
    later[:, 4:] = (later[:, 4:] + 1) % 11
    with torch.no_grad():
        a, b = model(x), model(later)
    torch.testing.assert_close(a[:, :4], b[:, :4], rtol=0, atol=1e-6)
    assert (a[:, 4:] - b[:, 4:]).abs().max() > 1e-4


@pytest.mark.parametrize(
    "rule, per_step", [("ddl", 3 * 64 + 2), ("ddl_write", 3 * 64 + 2), ("ddl_state", 22 * 64 + 9)]
)
def test_parameter_counts(rule, per_step):
    """Per residual step: ddl and ddl_write 3D + 2 (norm, w_β, b_β, w_v, b_v); ddl_state
    22D + 9 (norm D, conv 16D, read 4, w_β and b_β D + 1, W_v and b_v 4D + 4)."""
    cfg = GeoConfig(residual=rule, n_layer=2, d_model=64, n_head=4, seq_len=8, d_in=64, d_out=64)
    model = GeoTransformer(cfg)
    assert all(count_params(step) == per_step for step in model.rules)
    plain = GeoTransformer(cfg.replace(residual="preln"))
    preln_step = 2 * 64  # preln's LayerNorm (weight and bias)
    assert count_params(model) - count_params(plain) == 4 * (per_step - preln_step)


@pytest.mark.parametrize("rule", ["ddl_write", "ddl_state"])
def test_geolab_train_trains_it(rule, tmp_path, capsys):
    """20 steps of the 1-layer gyroscope model: every loss finite, the last below the first
    (measured: 0.069 -> 0.042 for ddl_write, 0.066 -> 0.044 for ddl_state)."""
    out = tmp_path / rule
    steps = ["--residual", rule, "--steps", "20", "--warmup", "2", "--out", str(out)]
    assert train_main([*TINY_TRAIN, *steps]) == 0
    text = capsys.readouterr().out
    assert f"gyroscope with {rule}" in text and "done: step 20  mse" in text
    losses = [json.loads(line)["loss"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(losses) == 20 and all(math.isfinite(x) for x in losses)
    assert losses[-1] < 0.8 * losses[0]
