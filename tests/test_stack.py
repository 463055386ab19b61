"""The views' stacked model equals the module model with the same weights, for every rule.

``geolab.stack`` draws weights once at the deepest depth and serves shallower depths as
prefixes, slider constants re-applied without a redraw; each test compares it with the plain
path: a ``GeoTransformer`` holding the same weights, probed with ``record`` (float32 round-off:
the stack scales the projections' output instead of their weights), or with a stack drawn
fresh (bit for bit).
"""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from geolab import explore, stack
from geolab.layers import MLP, CausalSelfAttention, attention, mlp
from geolab.probe import record

RULES = (*explore.rank_rules(), explore.REFERENCE)


def _module_states(cfg, seed, tokens):
    model = stack.as_module(cfg, seed)
    with torch.inference_mode(), record(model) as rec:
        model(tokens)
    merge = model.rule_cls.merge
    return torch.stack([rec.embedding[0]] + [merge(s) for s in rec.states])


@pytest.mark.parametrize("rule", RULES)
def test_a_prefix_of_a_deeper_stack_equals_the_module_model(rule):
    stack.clear()
    cfg = explore.rank_config(rule, 4, 32, 8)
    tokens = explore.rank_tokens(8, 0, batch=2)
    fast = stack.stack_states(cfg, 5, tokens, every_step=True, draw_depth=30)
    assert stack.stack_weights(cfg, 5)[0].depth == 30  # served as a prefix, not redrawn
    torch.testing.assert_close(fast, _module_states(cfg, 5, tokens))
    per_layer = stack.stack_states(cfg, 5, tokens)
    assert torch.equal(per_layer, fast[2 if cfg.mlp else 1 :: 2 if cfg.mlp else 1])
    with_input = stack.stack_states(cfg, 5, tokens, with_input=True)  # 04's curves
    assert torch.equal(with_input, torch.cat([fast[:1], per_layer]))


@pytest.mark.parametrize("rule", ["preln", "mgt", "edelta"])
def test_an_mlp_of_its_own_width_equals_the_module_model(rule):
    stack.clear()
    cfg = explore.rank_config(rule, 3, 32, 8).replace(d_mlp=40)
    tokens = explore.rank_tokens(8, 0)
    fast = stack.stack_states(cfg, 5, tokens, every_step=True, draw_depth=6)
    assert stack.stack_weights(cfg, 5)[0].fc.shape[1] == 40
    torch.testing.assert_close(fast, _module_states(cfg, 5, tokens))
    assert not torch.equal(fast, stack.stack_states(cfg.replace(d_mlp=None), 5, tokens, True))


@pytest.mark.parametrize("rule", RULES)
def test_the_numbers_do_not_depend_on_the_depth_drawn(rule):
    cfg = explore.rank_config(rule, 3, 32, 8)
    tokens = explore.rank_tokens(8, 1)
    stack.clear()
    deep = stack.stack_states(cfg, 2, tokens, every_step=True, draw_depth=20)
    stack.clear()
    exact = stack.stack_states(cfg, 2, tokens, every_step=True, draw_depth=3)
    assert torch.equal(deep, exact)


@pytest.mark.parametrize(
    "rule, fields",
    [("mgt", {"beta0": -0.3, "lam": 0.8, "alpha0": 0.25}), ("edelta", {"gamma0": 0.2})],
)
def test_slider_constants_on_kept_weights_equal_a_fresh_draw(rule, fields):
    tokens = explore.rank_tokens(8, 0)
    stack.clear()
    stack.stack_states(explore.rank_config(rule, 6, 32, 8), 3, tokens, draw_depth=6)
    cfg = explore.rank_config(rule, 4, 32, 8, **fields)
    moved = stack.stack_states(cfg, 3, tokens)
    stack.clear()
    assert torch.equal(moved, stack.stack_states(cfg, 3, tokens, draw_depth=4))
    stack.stack_states(explore.rank_config(rule, 4, 32, 8), 3, tokens)  # the sliders back
    # as_module moves them again, outside the forward's no_grad: the kept weights allow it.
    torch.testing.assert_close(moved, _module_states(cfg, 3, tokens)[2::2])


@pytest.mark.parametrize(
    "rule, fields",
    [
        ("mgt", {"beta0": -0.3, "alpha0": 0.25}),
        ("layerscale", {"layerscale_init": 0.3}),
        ("edelta", {"gamma0": 0.2}),
    ],
)
def test_a_deep_stack_after_a_shallow_move_equals_a_fresh_draw(rule, fields):
    # A shallow depth resets only its prefix of the kept rules; the deep one after it must
    # reset the rest (LayerScale's s₀ and the sliders' constants alike).
    tokens = explore.rank_tokens(8, 0)
    for cfg in (explore.rank_config(rule, 6, 32, 8, **fields), explore.rank_config(rule, 6, 32, 8)):
        stack.clear()
        stack.stack_states(explore.rank_config(rule, 6, 32, 8), 3, tokens)
        stack.stack_states(explore.rank_config(rule, 2, 32, 8, **fields), 3, tokens)
        kept = stack.stack_states(cfg, 3, tokens, every_step=True)
        stack.clear()
        assert torch.equal(kept, stack.stack_states(cfg, 3, tokens, True, draw_depth=6))


@pytest.mark.parametrize("rule", RULES)
def test_a_grown_stack_equals_a_fresh_draw(rule):
    # 04 opens shallow and draws deeper layers only when asked; moving a slider first must not
    # leave the layers drawn later at their defaults.
    tokens = explore.rank_tokens(8, 0)
    fields = {"beta0": -0.3} if rule.startswith("mgt") and rule != "mgt_mhc" else {}
    deep = explore.rank_config(rule, 7, 32, 8, **fields)
    stack.clear()
    stack.stack_states(explore.rank_config(rule, 3, 32, 8, **fields), 4, tokens)
    shallow_qkv = stack.stack_weights(explore.rank_config(rule, 3, 32, 8), 4)[0].qkv
    grown = stack.stack_states(deep, 4, tokens, every_step=True)
    sub = stack.stack_weights(deep, 4)[0]
    assert sub.depth == 7 and torch.equal(sub.qkv[:3], shallow_qkv)
    stack.clear()
    assert torch.equal(grown, stack.stack_states(deep, 4, tokens, every_step=True))


def test_an_mlp_grown_after_a_deeper_pure_attention_stack_equals_a_fresh_draw():
    tokens = explore.rank_tokens(8, 0)
    full = explore.rank_config("preln", 5, 32, 8)
    stack.clear()
    stack.stack_states(full.replace(n_layer=2), 0, tokens)  # MLPs of 2 layers
    stack.stack_states(explore.rank_config(explore.REFERENCE, 8, 32, 8), 0, tokens)
    kept = stack.stack_states(full, 0, tokens, every_step=True)  # MLPs grown to 8
    assert stack.stack_weights(full, 0)[0].fc.shape[0] == 8
    stack.clear()
    assert torch.equal(kept, stack.stack_states(full, 0, tokens, every_step=True))


def test_pure_attention_reads_the_attention_weights_of_the_full_stack():
    stack.clear()
    full = explore.rank_config("preln", 3, 32, 8)
    pure = explore.rank_config(explore.REFERENCE, 3, 32, 8)
    stack.stack_states(full, 0, explore.rank_tokens(8, 0))
    shared = stack.stack_weights(full, 0)[0]
    assert stack.stack_weights(pure, 0)[0] is shared
    stack.clear()
    alone = stack.stack_weights(pure, 0)[0]
    assert alone.fc is None and torch.equal(alone.qkv, shared.qkv)
    grown = stack.stack_weights(full, 0)[0]  # the MLP's weights drawn, the rest lent
    assert grown.qkv is alone.qkv and torch.equal(grown.fc, shared.fc)
    assert torch.equal(grown.mlp_proj, shared.mlp_proj)


def test_vector_models_are_refused():
    cfg = explore.rank_config("preln", 2, 32, 8).replace(vocab_size=None, d_in=32, d_out=32)
    with pytest.raises(ValueError, match="vocab_size"):
        stack.stack_states(cfg, 0, torch.zeros(1, 8, dtype=torch.long))


@settings(max_examples=20, deadline=None)
@given(
    rule=st.sampled_from(RULES),
    depth=st.integers(1, 5),
    extra=st.integers(0, 6),
    seed=st.integers(0, 2**20),
    seq=st.integers(2, 9),
)
def test_any_prefix_equals_the_module_model(rule, depth, extra, seed, seq):
    stack.clear()
    cfg = explore.rank_config(rule, depth, 16, seq)
    tokens = explore.rank_tokens(seq, seed)
    fast = stack.stack_states(cfg, seed, tokens, every_step=True, draw_depth=depth + extra)
    torch.testing.assert_close(fast, _module_states(cfg, seed, tokens))


@settings(max_examples=25, deadline=None)
@given(
    width=st.sampled_from([8, 16, 24]),
    hidden=st.integers(1, 100),
    heads=st.sampled_from([1, 2, 4]),
    seq=st.integers(1, 7),
    scale=st.floats(0.05, 3.0),
    bias=st.booleans(),
    seed=st.integers(0, 2**20),
)
def test_sublayer_functions_equal_the_modules(width, hidden, heads, seq, scale, bias, seed):
    """``layers.attention`` / ``layers.mlp`` with an output scale equal the modules whose
    projection weights carry that scale (biases 0, as at init)."""
    torch.manual_seed(seed)
    attn = CausalSelfAttention(width, heads, 0.0, False, 0.02, bias).eval()
    ffn = MLP(width, hidden, 0.0, 0.02, bias).eval()
    x = torch.randn(2, seq, width)
    fast_attn = attention(x, attn.qkv.weight, None, attn.proj.weight, None, heads, scale=scale)
    fast_mlp = mlp(x, ffn.fc.weight, None, ffn.proj.weight, None, scale=scale)
    with torch.no_grad():
        attn.proj.weight.mul_(scale)
        ffn.proj.weight.mul_(scale)
        torch.testing.assert_close(fast_attn, attn(x))
        torch.testing.assert_close(fast_mlp, ffn(x))
