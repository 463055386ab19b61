"""Notebook 08's numbers: the one-backward Jacobians against torch.autograd.functional.jacobian,
the per-layer gradient norms against finite differences, ReZero's identity at init, the view."""

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
    assert [t.name for t in jac.data] == [n for n in names for _ in range(2)]
    assert len(jac.data[0].x) == 13 and jac.data[0].x[0] == 0
    for fig in view.figures.values():
        go.Figure(fig.to_dict())  # validates
    assert "σ" in view.markdown() or "sigma" in view.markdown()
    with pytest.raises(ValueError, match="rules"):
        explore.gradient_view(("nope",), 12)
    with pytest.raises(ValueError, match="n_layer"):
        explore.gradient_view(("preln",), 0)
