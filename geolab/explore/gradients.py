"""Notebook 08 — what depth does to gradients, at initialisation (docs/design.md §5).

Two measurements on 04's models (same rules, ``rank_config`` and initialisation, a module model
per rule at width 32 with 16 tokens, so a Jacobian per layer stays cheap):

* per-layer gradient norms ``‖∂ℒ/∂θ_l‖`` of next-token cross-entropy on one seeded sequence
  (random tokens, so ℒ ≈ log V at init): how much each layer would move on the first step;
* the singular values of ``J_l = ∂y/∂X_l`` for l = 0..L, where y is the last token's final state
  (what the head reads) and X_l the residual state after layer l (X_0 the embedding): J_0 is
  the input–output Jacobian, and l → L follows a gradient arriving at the output down the stack.
  Dynamical isometry (every σ ≈ 1; Pennington, Schoenholz, Ganguli 2017, arXiv:1711.04735) keeps
  gradients from vanishing or exploding; JPmHC (Sengupta et al. 2026, arXiv:2602.18308) aims at it.

Fast path (geolab's): all J_l of one model from ONE backward pass. The sequence is copied D times
along the batch (copies never interact: every rule and sublayer acts per sequence), copy i's
output gets the cotangent e_i, and the gradient reaching each X_l is then row i of J_l in copy i.
Tested against ``torch.autograd.functional.jacobian`` of the map X_l ↦ y (tests/test_gradients.py).
"""

from __future__ import annotations

import functools

import numpy as np
import torch
import torch.nn.functional as F

from geolab import figures
from geolab.explore.rank import (
    MAX_WIDTH,
    REFERENCE,
    rank_config,
    rank_rules,
    rank_tokens,
    rule_colors,
)
from geolab.explore.view import View, check_int, check_names, num
from geolab.model import GeoTransformer

GRADIENT_DEPTHS = (12, 24, 48, 100)
GRADIENT_WIDTH = 32
GRADIENT_TOKENS = 16


def output_jacobians(model, tokens: torch.Tensor) -> list[torch.Tensor]:
    """``J_l = ∂y/∂X_l`` for l = 0..L, y the last token's merged final state: L + 1 matrices of
    shape (D, N_l), N_l the size of X_l for one sequence (S·D, or S·n·D for stream rules).

    ``tokens``: (1, S). One forward of D copies and one backward (see the module docstring).
    """
    cfg = model.cfg
    d, seq = cfg.d_model, tokens.shape[1]
    with torch.no_grad():
        h0 = model.embed_input(tokens)
    x = h0.expand(d, seq, d).clone().requires_grad_(True)
    states = [x]
    h = model.rule_cls.expand(x, cfg)
    for layer in model.layers:
        h = layer(h)
        states.append(h)
    y = model.rule_cls.merge(h)[:, -1, :]  # (copy, D)
    grads = torch.autograd.grad(y, states, grad_outputs=torch.eye(d, dtype=y.dtype))
    return [g.reshape(d, -1).detach() for g in grads]


def layer_grad_norms(model, tokens: torch.Tensor) -> np.ndarray:
    """``‖∂ℒ/∂θ_l‖`` (all parameters of layer l, rules included) for next-token cross-entropy on
    ``tokens`` (1, S): (n_layer,) floats. Parameters' ``.grad`` are left untouched."""
    logits = model(tokens)
    loss = F.cross_entropy(logits[0, :-1], tokens[0, 1:])
    params = [list(layer.parameters()) for layer in model.layers]
    flat = [p for ps in params for p in ps]
    grads = iter(torch.autograd.grad(loss, flat, allow_unused=True))
    norms = []
    for ps in params:
        # squared in float64: a float32 gradient of 1e-25 squares to 0 in float32
        sq = sum(
            float(g.double().square().sum()) for g in (next(grads) for _ in ps) if g is not None
        )
        norms.append(sq**0.5)
    return np.array(norms)


def out_of_range(jacobians: list[torch.Tensor], norms: np.ndarray, dtype: torch.dtype) -> bool:
    """Whether float ``dtype`` has lost the numbers: some J_l whose largest |entry|, or some
    nonzero gradient norm, is below tiny/eps (2⁻¹⁰³ ≈ 1e-31 in float32), where entries within
    the float's precision of the largest are subnormal (below 1.18e-38 in float32) or 0, as in
    04's ``precision_lost``. Pure attention at 100 layers drew σ_max = 1.7e-41 and σ_min = 0
    in float32: quantised noise, not data."""
    finfo = torch.finfo(dtype)
    low = finfo.tiny / finfo.eps
    tops = [float(j.abs().max()) for j in jacobians]
    return any(t < low for t in tops) or bool(((norms > 0) & (norms < low)).any())


@functools.lru_cache(maxsize=128)
def rule_gradients(
    rule: str, n_layer: int, d_model: int, seq_len: int, seed: int
) -> tuple[np.ndarray, np.ndarray, str]:
    """Per-layer gradient norms (n_layer,) and the singular values of every J_l, descending,
    (n_layer + 1, D), of one rule's model at init (read-only arrays, shared by every caller),
    and the float they were computed in: float32, as the rules run, or float64 where float32
    lost them (``out_of_range``; the same weights cast exactly)."""
    with torch.random.fork_rng():  # seeded weights, the caller's RNG left untouched
        torch.manual_seed(seed)
        model = GeoTransformer(rank_config(rule, n_layer, d_model, seq_len)).eval()
    tokens = rank_tokens(seq_len, seed)
    for dtype in (torch.float32, torch.float64):
        model = model.to(dtype)
        norms = layer_grad_norms(model, tokens)
        jacobians = output_jacobians(model, tokens)
        if not out_of_range(jacobians, norms, dtype):
            break
    sv = torch.stack([torch.linalg.svdvals(j) for j in jacobians]).double().numpy()
    for array in (norms, sv):
        array.setflags(write=False)
    return norms, sv, str(dtype).removeprefix("torch.")


def resolution(sv: np.ndarray, precision: str) -> np.ndarray:
    """The smallest singular value an SVD of J_l resolves in ``precision``, per layer:
    σ_max · D · eps (numpy's ``matrix_rank`` tolerance). Below it σ is rounding, whatever
    it reads (pure attention's σ_min of 7e-10 beside σ_max = 0.6 at 12 layers, float32).
    (L + 1,) for an (L + 1, D) array of singular values."""
    return sv[:, 0] * sv.shape[1] * np.finfo(np.dtype(precision)).eps


def sigma_text(value: float, floor: float) -> str:
    """A singular value as the readout prints it: ``num``, or "< floor" below the SVD's
    resolution (never 0 or a subnormal's digits)."""
    return num(value) if value > floor else f"< {num(floor)} (rounding)"


def gradient_view(
    rules: tuple[str, ...] | list[str],
    n_layer: int,
    reference: bool = True,
    d_model: int = GRADIENT_WIDTH,
    seq_len: int = GRADIENT_TOKENS,
    seed: int = 0,
) -> View:
    """08: per-layer gradient norms and the singular values of ``J_l`` over depth for each rule
    (``reference`` adds pure attention, as in 04), every rule at its own default init."""
    n_layer = check_int("n_layer", n_layer, 1, 400)
    rules = check_names("rules", rules, rank_rules())
    d_model = check_int("d_model", d_model, 2, MAX_WIDTH)
    seq_len = check_int("seq_len", seq_len, 2, MAX_WIDTH)  # one token has no rank to lose
    names = list(dict.fromkeys(rules)) + ([REFERENCE] if reference else [])
    norms, sv, precision, floors = {}, {}, {}, {}
    for name in names:
        norms[name], sv[name], precision[name] = rule_gradients(
            name, n_layer, d_model, seq_len, seed
        )
        floors[name] = resolution(sv[name], precision[name])
    numbers = {
        "grad_norms": norms,
        "singular_values": sv,
        "precision": precision,
        "resolution": floors,
        "input_output": {n: (float(s[0, 0]), float(s[0, -1])) for n, s in sv.items()},
        "grad_ratio": {
            n: float(g[0] / g[-1]) if g[-1] > 0 else float("inf") for n, g in norms.items()
        },
    }
    readout = [
        (
            rf"{name}: $\sigma_{{max}}$ / $\sigma_{{min}}$ of $\partial y/\partial X_0$"
            + (" (float64: float32 underflows)" if precision[name] == "float64" else ""),
            f"{num(hi)} / {sigma_text(lo, floors[name][0])}",
        )
        for name, (hi, lo) in numbers["input_output"].items()
    ] + [
        (rf"{name}: $\lVert\nabla_{{\theta_1}}\rVert / \lVert\nabla_{{\theta_L}}\rVert$", num(r))
        for name, r in numbers["grad_ratio"].items()
    ]
    size = f"L = {n_layer}, D = {d_model}, S = {seq_len}"
    colors = rule_colors()  # 04's: a rule keeps its colour in every figure
    figs = {
        "grad": figures.grad_norm_figure(
            norms, title=f"Gradient norm per layer at init ({size})", colors=colors
        ),
        "jacobian": figures.jacobian_figure(
            sv,
            title=f"Singular values of ∂y/∂X_l, layer l to the output ({size})",
            colors=colors,
            resolution=floors,
        ),
    }
    return View(numbers, readout, figs)
