"""GeoTransformer over every rule: forward/backward, causality, configs, parameter matching."""

import warnings

import pytest
import torch

from geolab import RESIDUALS, GeoConfig, GeoTransformer, count_params, match_params
from geolab.memory import weight_count
from geolab.model import Layer, param_count

RULES = list(RESIDUALS)


def small(rule, layers=2, kind="vector", **kw):
    base = dict(residual=rule, n_layer=layers, d_model=16, n_head=2, seq_len=6)
    base.update(dict(vocab_size=11) if kind == "token" else dict(d_in=3, d_out=5))
    base.update(kw)
    return GeoConfig(**base)


def inputs(cfg, batch=2, generator=None):
    g = generator or torch.Generator().manual_seed(0)
    if cfg.vocab_size:
        return torch.randint(cfg.vocab_size, (batch, cfg.seq_len), generator=g)
    return torch.randn(batch, cfg.seq_len, cfg.d_in, generator=g)


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("kind", ["token", "vector"])
@pytest.mark.parametrize("layers", [2, 48])
def test_forward_backward(rule, kind, layers):
    torch.manual_seed(0)
    cfg = small(rule, layers, kind)
    model = GeoTransformer(cfg)
    out = model(inputs(cfg))
    width = cfg.vocab_size if kind == "token" else cfg.d_out
    assert out.shape == (2, cfg.seq_len, width)
    assert torch.isfinite(out).all()
    (out.square().mean() + model.aux_loss()).backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    if not (rule == "noskip" and layers == 48):  # no shortcut: the gradient vanishes, by design
        assert model.embed.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("rule", RULES)
def test_causal_by_default(rule):
    torch.manual_seed(0)
    cfg = small(rule, 3)
    model = GeoTransformer(cfg).eval()
    x = inputs(cfg)
    t = 2
    x2 = x.clone()
    x2[:, t + 1 :] = torch.randn_like(x2[:, t + 1 :]) * 3
    with torch.no_grad():
        a, b = model(x), model(x2)
    torch.testing.assert_close(a[:, : t + 1], b[:, : t + 1], rtol=0, atol=1e-6)
    assert (a[:, t + 1 :] - b[:, t + 1 :]).abs().max() > 1e-4  # the change did reach later tokens


def test_sequence_pool_breaks_causality():
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cfg = small("edelta", 2, pool="sequence")
        model = GeoTransformer(cfg).eval()
    x = inputs(cfg)
    x2 = x.clone()
    x2[:, -1] += 5.0
    with torch.no_grad():
        diff = (model(x)[:, 0] - model(x2)[:, 0]).abs().max()
    assert diff > 1e-5, "token 0 should see the last token through the pooled gates"


@pytest.mark.parametrize(
    "change, field",
    [
        (dict(residual="resnet"), "residual"),
        (dict(d_model=30, n_head=4), "n_head"),
        (dict(residual="jpmhc", d_model=18, n_head=2, n_streams=4), "d_model"),
        (dict(residual="edelta", geometry="streams", d_model=18, n_head=2, n_streams=4), "d_model"),
        (dict(n_layer=0), "n_layer"),
        (dict(d_model=-8), "d_model"),
        (dict(n_head=0), "n_head"),
        (dict(seq_len=0), "seq_len"),
        (dict(geometry="sphere"), "geometry"),
        (dict(pool="max"), "pool"),
        (dict(norm="batchnorm"), "norm"),
        (dict(pos="sinusoid"), "pos"),
        (dict(residual="mgt", beta0=1.5), "beta0"),
        (dict(gamma0=1.0), "gamma0"),
        (dict(lam=0.0), "lam"),
    ],
)
def test_bad_config_names_field_value_and_allowed(change, field):
    with pytest.raises(ValueError) as err:
        small("preln", **change)
    msg = str(err.value)
    assert f"GeoConfig.{field}=" in msg
    assert repr(change[field]) in msg
    assert "allowed" in msg or "must" in msg


def test_io_must_be_tokens_or_vectors():
    with pytest.raises(ValueError, match="vocab_size"):
        GeoConfig(residual="preln", vocab_size=10, d_in=3, d_out=3)
    with pytest.raises(ValueError, match="d_in"):
        GeoConfig(residual="preln")


def test_too_long_input_is_an_error():
    cfg = small("preln")
    with pytest.raises(ValueError, match="seq_len"):
        GeoTransformer(cfg)(torch.randn(1, cfg.seq_len + 1, cfg.d_in))


EDELTA_CONFIGS = [
    dict(residual="preln", n_layer=9, d_model=128),
    dict(residual="ddl", n_layer=8, d_model=128),
    dict(residual="mhc", n_layer=9, d_model=128),
    dict(residual="jpmhc", n_layer=7, d_model=512),
    dict(residual="edelta", n_layer=6, d_model=128),
]


@pytest.mark.parametrize("spec", EDELTA_CONFIGS, ids=lambda s: s["residual"])
def test_match_params_lands_within_two_percent(spec):
    cfg = GeoConfig(n_head=4, seq_len=128, d_in=16, d_out=16, **spec)
    matched = match_params(cfg, 1_790_000, vary="d_model")
    n = count_params(GeoTransformer(matched))
    assert abs(n - 1_790_000) / 1_790_000 < 0.02, (spec, matched.d_model, n)
    assert matched.n_layer == spec["n_layer"]


REFERENCE_RULES = ["preln", "ddl", "edelta", "mhc", "jpmhc"]  # the ones flavor="reference" builds


@pytest.mark.parametrize(
    "rule, kind, flavor",
    [(r, k, "geolab") for r in RULES for k in ("token", "vector")]
    + [(r, "vector", "reference") for r in REFERENCE_RULES],
)
def test_param_count_is_the_built_models_count(rule, kind, flavor):
    cfg = small(rule, layers=5, kind=kind, flavor=flavor, pos="learned")
    with torch.device("meta"):
        built = count_params(GeoTransformer(cfg))
    assert param_count(cfg) == built


def test_param_count_builds_two_layers_whatever_the_depth(monkeypatch):
    built = []
    init = Layer.__init__
    monkeypatch.setattr(Layer, "__init__", lambda self, cfg: built.append(1) or init(self, cfg))
    param_count(small("mgt", layers=48))
    assert len(built) == 2


def test_match_params_vary_layers_is_nearest():
    cfg = small("preln", 1)
    per_layer = count_params(GeoTransformer(cfg.replace(n_layer=2))) - count_params(
        GeoTransformer(cfg)
    )
    base = count_params(GeoTransformer(cfg)) - per_layer
    matched = match_params(cfg, base + 7 * per_layer + per_layer // 3, vary="n_layer")
    assert matched.n_layer == 7
    with pytest.raises(ValueError, match="vary"):
        match_params(cfg, 1000, vary="width")


@pytest.mark.parametrize("rule", ["postln", "mgt", "mgt_ddl", "hc", "edelta"])
def test_d_mlp_sets_the_hidden_width_and_its_count(rule):
    """One MLP unit costs 2·w + 1 parameters per MLP step (a row of W₁ with its bias, a column of
    W₂), so matching by d_mlp lands within one unit's cost of any reachable budget."""
    cfg = small(rule, 3)
    wide = cfg.replace(d_mlp=4 * cfg.d_model + 5)
    model = GeoTransformer(wide)
    w = model.layers[0].mlp.fc.in_features
    assert model.layers[0].mlp.fc.out_features == 4 * cfg.d_model + 5
    assert count_params(model) - count_params(GeoTransformer(cfg)) == 3 * 5 * (2 * w + 1)
    assert weight_count(wide) - weight_count(cfg) == 3 * 5 * (2 * w + 1)  # the memory bound too
    budget = count_params(model) + 1_000
    matched = match_params(cfg, budget, vary="d_mlp")
    assert abs(count_params(GeoTransformer(matched)) - budget) <= (3 * (2 * w + 1) + 1) // 2


def test_d_mlp_bad_values_and_no_mlp_are_refused():
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="d_mlp"):
            small("preln", 1).replace(d_mlp=bad)
    with pytest.raises(ValueError, match="d_mlp.*mlp=False"):
        match_params(small("preln", 1).replace(mlp=False), 10_000, vary="d_mlp")
    ref = GeoConfig(residual="ddl", flavor="reference", d_in=4, d_out=4, d_model=8, n_head=2)
    with pytest.raises(ValueError, match="d_mlp"):
        ref.replace(d_mlp=16)


def test_mgt_overhead_is_two_d_squared_per_step():
    cfg = small("preln", 4, d_model=32)
    extra = count_params(GeoTransformer(cfg.replace(residual="mgt"))) - count_params(
        GeoTransformer(cfg)
    )
    d, steps = 32, cfg.n_steps
    # W_gate (D²), W_β (D² + D), the gate's LN (2D), α (1) per step.
    assert extra == steps * (2 * d * d + d + 2 * d + 1)


def test_aux_loss_is_weighted_sum_of_gate_regulariser():
    cfg = small("edelta", 3, reg_weight=0.25)
    model = GeoTransformer(cfg)
    model(inputs(cfg))
    # γ = ½ everywhere at init, so each of the 6 operators contributes 4·½·½ = 1.
    torch.testing.assert_close(model.aux_loss(), torch.tensor(0.25 * 6))
    assert GeoTransformer(small("preln")).aux_loss() == 0


@pytest.mark.parametrize("rule", ["preln", "mgt", "edelta", "mhc"])
def test_grad_checkpoint_gives_the_same_gradients(rule):
    grads = []
    for ckpt in (False, True):
        torch.manual_seed(0)
        cfg = small(rule, 3, grad_checkpoint=ckpt)
        model = GeoTransformer(cfg)
        out = model(inputs(cfg))
        (out.square().mean() + model.aux_loss()).backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b)


def test_rmsnorm_and_rope_switches():
    cfg = small("preln", norm="rmsnorm", pos="rope")
    model = GeoTransformer(cfg)
    assert model.pos is None
    assert not any(isinstance(m, torch.nn.LayerNorm) for m in model.modules())
    assert torch.isfinite(model(inputs(cfg))).all()
