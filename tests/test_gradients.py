"""Notebook 08's numbers: the one-backward Jacobians against torch.autograd.functional.jacobian,
the per-layer gradient norms against finite differences, ReZero's identity at init, the view."""

import numpy as np
import plotly.graph_objects as go
import pytest
import torch
import torch.nn.functional as F

from geolab import explore
from geolab.explore.rank import REFERENCE, rank_config, rank_tokens
from geolab.model import GeoTransformer

TINY = dict(n_layer=3, d_model=16, seq_len=4)  # jpmhc: D/n = 4 divisible by 4 heads
RULES = ["preln", "postln", "mgt", "ddl", "mhc", "jpmhc", "edelta", REFERENCE]


def tiny_model(rule: str) -> GeoTransformer:
    torch.manual_seed(0)
    cfg = rank_config(rule, TINY["n_layer"], TINY["d_model"], TINY["seq_len"])
    return GeoTransformer(cfg).double().eval()


@pytest.mark.parametrize("rule", RULES)
def test_one_backward_jacobians_match_autograd_functional_jacobian(rule):
    model = tiny_model(rule)
    tokens = rank_tokens(TINY["seq_len"], 0)
    fast = explore.output_jacobians(model, tokens)
    cls, cfg = model.rule_cls, model.cfg
    with torch.no_grad():
        states = [model.embed_input(tokens)]
        h = cls.expand(states[0], cfg)
        for layer in model.layers:
            h = layer(h)
            states.append(h)
    assert len(fast) == cfg.n_layer + 1
    for l, state in enumerate(states):

        def y_of(x, l=l):  # the last token's merged final state from the state after layer l
            h = cls.expand(x, cfg) if l == 0 else x
            for layer in model.layers[l:]:
                h = layer(h)
            return cls.merge(h)[0, -1, :]

        reference = torch.autograd.functional.jacobian(y_of, state).reshape(cfg.d_model, -1)
        torch.testing.assert_close(fast[l], reference, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("rule", ["preln", "mgt", "mhc"])
def test_layer_gradient_norms_match_finite_differences(rule):
    model = tiny_model(rule)
    tokens = rank_tokens(TINY["seq_len"], 1)
    norms = explore.layer_grad_norms(model, tokens)
    assert all(p.grad is None for p in model.parameters())

    def loss():
        logits = model(tokens)
        return float(F.cross_entropy(logits[0, :-1], tokens[0, 1:]))

    for l, layer in enumerate(model.layers):
        params = list(layer.parameters())
        grads = torch.autograd.grad(
            F.cross_entropy(model(tokens)[0, :-1], tokens[0, 1:]), params, allow_unused=True
        )
        direction = [
            torch.zeros_like(p) if g is None else g / norms[l]
            for p, g in zip(params, grads, strict=True)
        ]
        eps = 1e-5
        with torch.no_grad():
            for p, d in zip(params, direction, strict=True):
                p.add_(eps * d)
            up = loss()
            for p, d in zip(params, direction, strict=True):
                p.sub_(2 * eps * d)
            down = loss()
            for p, d in zip(params, direction, strict=True):
                p.add_(eps * d)
        # the derivative along the unit gradient direction is the gradient's norm
        assert (up - down) / (2 * eps) == pytest.approx(norms[l], rel=1e-6)


def test_rezero_is_exactly_the_identity_at_init():
    view = explore.gradient_view(("rezero",), 12, reference=False)
    sv = view.numbers["singular_values"]["rezero"]
    assert sv.shape == (13, explore.gradients.GRADIENT_WIDTH)
    assert abs(sv - 1).max() < 1e-6
    assert view.numbers["input_output"]["rezero"] == pytest.approx((1.0, 1.0), abs=1e-6)


def test_gradient_view_numbers_figures_and_bad_input():
    view = explore.gradient_view(("preln", "hc"), 12)
    names = ["preln", "hc", REFERENCE]
    assert list(view.numbers["grad_norms"]) == names
    assert all(len(g) == 12 for g in view.numbers["grad_norms"].values())
    # pure attention's input-output Jacobian shrinks every direction, pre-LN's stays near 1
    assert view.numbers["input_output"][REFERENCE][0] < 1
    assert (
        0.5
        < view.numbers["input_output"]["preln"][1]
        <= view.numbers["input_output"]["preln"][0]
        < 2
    )
    jac = view.figures["jacobian"]
    lines = [t.name for t in jac.data if t.mode == "lines"]
    assert lines == [n for n in names for _ in range(2)]
    # pure attention's σ_min (7e-10 beside σ_max = 0.6) is below float32's SVD resolution:
    # drawn as ▽ at the resolution, not as a value, and the readout says "< … (rounding)"
    below = [t for t in jac.data if t.mode == "markers"]
    assert [t.name for t in below] == [REFERENCE] and 0 in list(below[0].x)
    assert (
        "(rounding)"
        in dict(view.readout)[
            rf"{REFERENCE}: $\sigma_{{max}}$ / $\sigma_{{min}}$ of $\partial y/\partial X_0$"
        ]
    )
    assert len(jac.data[0].x) == 13 and jac.data[0].x[0] == 0
    for fig in view.figures.values():
        go.Figure(fig.to_dict())  # validates
    assert "σ" in view.markdown() or "sigma" in view.markdown()
    with pytest.raises(ValueError, match="rules"):
        explore.gradient_view(("nope",), 12)
    with pytest.raises(ValueError, match="n_layer"):
        explore.gradient_view(("preln",), 0)


def test_no_subnormal_is_drawn_pure_attention_at_100_layers_is_recomputed_in_float64():
    """Issue 52: pure attention at 100 layers read σ_max / σ_min = 1.72e-41 / 0 in float32 and
    drew σ near 1e-44, subnormal noise. float32 loses it (``out_of_range``), so the view
    recomputes it in float64 with the same weights; every σ drawn is a float64 normal number
    above the SVD's resolution, and the readout prints no 0."""
    view = explore.gradient_view((), 100)
    assert view.numbers["precision"][REFERENCE] == "float64"
    sv = view.numbers["singular_values"][REFERENCE]
    assert sv[0, 0] == pytest.approx(1.7e-41, rel=0.05)  # a float64 number, not a subnormal
    for trace in view.figures["jacobian"].data:
        if trace.mode != "lines":
            continue
        y = np.asarray(trace.y, dtype=float)
        tiny = np.finfo(np.dtype(view.numbers["precision"][trace.name])).tiny
        assert np.all(y[np.isfinite(y)] >= tiny), trace.name  # no subnormal drawn
        if trace.line.dash == "dot":  # σ_min: only where the SVD resolves it
            floor = view.numbers["resolution"][trace.name]
            assert np.all(~np.isfinite(y) | (y > floor)), trace.name
    value = dict(view.readout)[
        rf"{REFERENCE}: $\sigma_{{max}}$ / $\sigma_{{min}}$ of $\partial y/\partial X_0$"
        " (float64: float32 underflows)"
    ]
    assert value.startswith("1.71e-41 / < ") and " 0" not in value
