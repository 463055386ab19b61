"""Notebook 04 — rank collapse in deep stacks (docs/design.md §5, §8 protocol 1)."""

from __future__ import annotations

import functools

import numpy as np
import torch
from plotly.colors import qualitative

from geolab import figures
from geolab.config import GeoConfig
from geolab.explore.view import View, check_int, num
from geolab.metrics import effective_rank, rank_collapse_residual
from geolab.model import GeoTransformer
from geolab.probe import record
from geolab.rules import RESIDUALS
from geolab.stack import stack_states

RANK_DEPTHS = (12, 24, 48, 100, 200)
REFERENCE = "pure attention"
RANK_VOCAB = 256  # 04's token vocabulary (and geolab rank's)


def rank_rules() -> tuple[str, ...]:
    """The rules 04 offers: every registered rule (yours too) but ``noskip``, the reference's."""
    return tuple(name for name in RESIDUALS if name != "noskip")


def rule_colors() -> dict[str, str]:
    """One colour per 04 curve that stays with it in every figure and for any choice of rules:
    pure attention black, each rule its place in ``rank_rules`` on plotly's 24-colour palette."""
    palette = qualitative.Dark24
    colors = {name: palette[i % len(palette)] for i, name in enumerate(rank_rules())}
    return {**colors, REFERENCE: "black"}


def _residual(rule: str) -> str:
    return "noskip" if rule == REFERENCE else rule


def rule_fields(rule: str, beta0: float, lam: float, alpha0: float, gamma0: float) -> dict:
    """The GeoConfig fields the 04 sliders set for one rule: those among its ``init_fields``.

    β₀, λ, α₀ reach the MGT rules with a Delta controller and γ₀ ``edelta``; every other rule
    keeps its own defaults, so moving a slider recomputes only the rules it changes.
    """
    sliders = {"beta0": beta0, "lam": lam, "alpha0": alpha0, "gamma0": gamma0}
    wanted = RESIDUALS[_residual(rule)].init_fields
    return {name: value for name, value in sliders.items() if name in wanted}


def rank_config(rule: str, n_layer: int, d_model: int, seq_len: int, **fields) -> GeoConfig:
    """The token-model GeoConfig of one 04 curve; ``REFERENCE`` is ``noskip`` with
    ``mlp=False``, Dong et al. 2021's pure attention."""
    return GeoConfig(
        residual=_residual(rule),
        n_layer=n_layer,
        d_model=d_model,
        n_head=4,
        seq_len=seq_len,
        vocab_size=RANK_VOCAB,
        mlp=rule != REFERENCE,
        **fields,
    )


def rank_tokens(seq_len: int, seed: int, batch: int = 1) -> torch.Tensor:
    """Seeded random tokens, (batch, seq_len) int64 (04 feeds one sequence, ``geolab rank``
    ``--batch`` of them; the first row is the same for every batch)."""
    gen = torch.Generator().manual_seed(seed + 1)
    return torch.randint(0, RANK_VOCAB, (batch, seq_len), generator=gen)


@torch.inference_mode()
def layer_states(model: GeoTransformer, x: torch.Tensor) -> torch.Tensor:
    """The token states after every *layer* (its last residual step), stream states merged as
    the head sees them: (n_layer, batch, seq_len, d_model)."""
    with record(model) as rec:
        model(x)
    per_layer = len(rec.states) // model.cfg.n_layer
    merge = model.rule_cls.merge
    return torch.stack([merge(s) for s in rec.states[per_layer - 1 :: per_layer]])


def layer_profile(model: GeoTransformer, x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Effective rank (Eq. 8) and Dong's residual after every layer (``layer_states``).
    Returns two (n_layer,) float arrays."""
    states = layer_states(model, x)
    ranks = effective_rank(states).mean(dim=-1)
    residual = rank_collapse_residual(states).mean(dim=-1)
    return ranks.numpy(), residual.numpy()


def token_plane(states: torch.Tensor) -> np.ndarray:
    """The S tokens of each layer as points in 2-D: (n_layer, S, D) -> (n_layer, S, 2).

    Each layer's X is scaled to mean squared token norm 1 and projected on its own top two
    right singular vectors (uncentred, so "all tokens equal" is one point at distance 1 from the
    origin, not a point at 0), signs fixed so the mean point has non-negative coordinates.
    Collapse shows as the cloud shrinking to a point (geolab's picture; the numbers behind it are
    the effective rank and Dong's residual). An all-zero layer is one point at the origin.

    Computed from the Gram matrix of the shorter side in float64, not an SVD of S×D (≈ 3× faster
    for 200 layers of 32×128): X v_i = σ_i u_i, so the coordinates are the top eigenvectors of
    X Xᵀ scaled by σ_i when S ≤ D, and X times the top eigenvectors of XᵀX otherwise.
    """
    X = states.double()
    energy = X.square().sum(dim=(-2, -1), keepdim=True)
    X = X * torch.where(energy > 0, X.shape[-2] / energy, 0.0).sqrt()
    if X.shape[-2] <= X.shape[-1]:
        lam, U = torch.linalg.eigh(X @ X.mT)  # ascending: the top two are last
        points = U[..., -2:] * lam[..., -2:].clamp_min(0).sqrt().unsqueeze(-2)
    else:
        points = X @ torch.linalg.eigh(X.mT @ X).eigenvectors[..., -2:]
    points = points.flip(-1)
    sign = torch.where(points.mean(dim=-2, keepdim=True) < 0, -1.0, 1.0)
    return (points * sign).numpy()


@functools.lru_cache(maxsize=256)
def rule_profile(
    rule: str, n_layer: int, d_model: int, seq_len: int, seed: int, fields: tuple
) -> tuple[np.ndarray, np.ndarray, torch.Tensor]:
    """Effective rank and Dong's residual (``layer_profile``) of the input (index 0, the
    embedded tokens) and after every layer (index l) of one 04 curve, and the states themselves
    ((n_layer + 1, S, D), for ``token_plane`` at the layer shown), cached by everything that can
    change them (the arrays are read-only: every caller shares them). Index l is ``geolab
    rank``'s layer l.

    The states come from the views' stacked model (``geolab.stack``): each layer's weights
    drawn once per (rule, width, sequence length, seed), any depth a prefix of the deepest
    asked so far, slider constants re-applied without a redraw, so a slider move is one forward
    of the curves it changes.
    """
    cfg = rank_config(rule, n_layer, d_model, seq_len, **dict(fields))
    states = stack_states(cfg, seed, rank_tokens(seq_len, seed), with_input=True)[:, 0]
    ranks = effective_rank(states).numpy()
    residual = rank_collapse_residual(states).numpy()
    for array in (ranks, residual):
        array.setflags(write=False)
    return ranks, residual, states


def rank_view(
    rules: tuple[str, ...] | list[str],
    n_layer: int,
    beta0: float = 0.5,
    lam: float = 1.0,
    alpha0: float = 0.1,
    gamma0: float = 0.5,
    layer: int | None = None,
    reference: bool = True,
    d_model: int = 128,
    seq_len: int = 32,
    seed: int = 0,
    progress=None,
) -> View:
    """04: effective rank and Dong's residual per layer for each rule at init, one seed.

    Curves have length n_layer + 1: the input (index 0, the embedded tokens) and the state after
    each layer (index l). ``reference`` adds pure attention
    (``noskip``, ``mlp=False``), whose rank collapses doubly exponentially (Dong et al. 2021)
    down to the floor 1/min(S, D) (one direction left). A rule whose config rejects the slider
    values (e.g. β₀ outside (−λ, λ) for MGT) is left out of the plot and named with the
    config's message in ``numbers["rejected"]`` and the readout; the other curves stay.
    ``layer`` (default: the last; 0 is the input) picks the layer of the token clouds
    (``token_plane``).
    ``progress`` (optional) wraps the list of curves as they are computed, e.g. a progress bar
    (notebook 04 passes marimo's: a first load draws weights and takes seconds).
    """
    n_layer = check_int("n_layer", n_layer, 1, 400)
    layer = n_layer if layer is None else check_int("layer", layer, 0, n_layer)
    allowed = rank_rules()
    unknown = [r for r in rules if r not in allowed]
    if unknown:
        raise ValueError(f"rules: {unknown} not allowed; choose from {', '.join(allowed)}")
    names = list(dict.fromkeys(rules)) + ([REFERENCE] if reference else [])
    ranks, residuals, clouds, rejected = {}, {}, {}, {}
    for name in names if progress is None else progress(names):
        fields = rule_fields(name, beta0, lam, alpha0, gamma0)
        try:
            ranks[name], residuals[name], states = rule_profile(
                name, n_layer, d_model, seq_len, seed, tuple(sorted(fields.items()))
            )
        except ValueError as err:
            rejected[name] = str(err)
            continue
        clouds[name] = token_plane(states[layer : layer + 1])[0]  # the layer shown only
    floor = 1 / min(seq_len, d_model)
    final = {name: float(r[-1]) for name, r in ranks.items()}
    numbers = {
        "ranks": ranks,
        "residuals": residuals,
        "final_rank": final,
        "final_residual": {name: float(r[-1]) for name, r in residuals.items()},
        "rank_floor": floor,
        "clouds": clouds,
        "rejected": rejected,
    }
    readout = [
        (f"{name}: rank / residual at layer {n_layer}", f"{final[name]:.3f} / {num(r[-1])}")
        for name, r in residuals.items()
    ] + [(f"{name}: not drawn", message) for name, message in rejected.items()]
    if "mgt" in ranks or "mgt_ddl" in ranks:
        memory = (1 - alpha0 * beta0) ** (2 * n_layer)
        readout.append(
            (
                r"MGT: what is left of the input, $(1-\alpha_0\beta_0)^{2L}$",
                num(memory),
            )
        )
        numbers["mgt_memory"] = memory
    colors = rule_colors()
    where = "the input (layer 0)" if layer == 0 else f"after layer {layer}"
    figs = {
        "rank": figures.rank_figure(
            ranks,
            residuals,
            title=f"Effective rank per layer at init (L = {n_layer}, D = {d_model})",
            floor=floor,
            colors=colors,
            first_layer=0,
        ),
        "cloud": figures.token_cloud_figure(
            clouds, title=f"The {seq_len} tokens: {where}, top-2 directions", colors=colors
        ),
    }
    return View(numbers, readout, figs)
