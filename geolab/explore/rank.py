"""Notebook 04 — rank collapse in deep stacks (docs/design.md §5, §8 protocol 1)."""

from __future__ import annotations

import functools
import math
from collections import OrderedDict
from contextlib import nullcontext

import numpy as np
import torch

from geolab import disk_cache, figures
from geolab.config import GeoConfig
from geolab.explore.view import View, check_int, check_names, num, power_text
from geolab.metrics import effective_rank, rank_collapse_residual
from geolab.model import GeoTransformer
from geolab.probe import record
from geolab.rules import RESIDUALS, rule_class
from geolab.rules.delta import MAX_INIT_GROWTH
from geolab.stack import as_module, stack_states

RANK_DEPTHS = (12, 24, 48, 100, 200)
REFERENCE = "pure attention"
RANK_VOCAB = 256  # 04's token vocabulary (and geolab rank's)
MAX_WIDTH = 1024  # the views' largest width and sequence length (04 and 08 use 32–128)


def rank_rules() -> tuple[str, ...]:
    """The rules 04 offers: every registered rule (yours too) but ``noskip``, the reference's."""
    return tuple(name for name in RESIDUALS if name != "noskip")


def rule_colors() -> dict[str, str]:
    """One colour per 04 curve that stays with it in every figure and every notebook, for any
    choice of rules: ``figures.rule_color`` (pure attention, ``noskip``'s, black)."""
    return {**figures.rule_colors(rank_rules()), REFERENCE: figures.rule_color("noskip")}


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
def layer_states(model: GeoTransformer, x: torch.Tensor, with_input: bool = False) -> torch.Tensor:
    """The token states after every *layer* (its last residual step), stream states merged as
    the head sees them: (n_layer, batch, seq_len, d_model); with ``with_input`` the embedded
    tokens first, (n_layer + 1, batch, seq_len, d_model)."""
    with record(model) as rec:
        model(x)
    per_layer = len(rec.states) // model.cfg.n_layer
    merge = model.rule_cls.merge
    first = rec.embedding[:1] if with_input else []
    return torch.stack(first + [merge(s) for s in rec.states[per_layer - 1 :: per_layer]])


def precision_lost(states: torch.Tensor) -> int | None:
    """The first layer whose state has left its float's range, or None: (L, ..., S, D) states.

    A state whose largest |entry| is below tiny/eps (2⁻¹⁰³ ≈ 1e-31 in float32, 2⁻⁹⁷⁰ ≈ 1e-292 in
    float64) has entries within the float's relative precision of that largest one that are
    subnormal: they carry fewer bits than the float's mantissa, and below tiny·eps they are 0.
    Its effective rank then measures rounding (float32 MGT at α₀ = 1 read 0.05, 0.41, 0, 0 …
    from layer 85 of 200), not the tokens. geolab's threshold, from IEEE 754's formats.
    """
    finfo = torch.finfo(states.dtype)
    scale = states.abs().flatten(1).amax(dim=1)
    low = torch.nonzero(scale < finfo.tiny / finfo.eps)
    return int(low[0]) if len(low) else None


def float64_states(cfg: GeoConfig, seed: int, tokens: torch.Tensor) -> torch.Tensor:
    """The states ``stack_states(cfg, seed, tokens, with_input=True)`` computes, in float64:
    the module model holding the stack's weights (``stack.as_module``) cast to float64.
    (n_layer + 1, B, S, D). Float64's exponent reaches 1e-292 where float32's stops at 1e-31,
    so a stack whose state decays geometrically (MGT with a large α₀β₀: the state shrinks by
    ≈ 0.5–0.8 decades a layer once LayerNorm's ε dominates its variance) keeps its precision
    for hundreds of layers more.

    The model of the last (rule, sizes, depth, seed) is kept (≈ 0.4 GB at 200 layers of
    D = 128) and its rules reset to ``cfg``'s constants, so a slider move does not rebuild it;
    the reset runs in float32, as the stack's does, so the float64 model holds the float32
    model's constants exactly (lossless casts both ways), not their float64 neighbours.
    """
    model = _float64_model(cfg.replace(**_init_defaults(cfg)), seed).float()
    for rule in model.rules:
        rule.reset_init(cfg)
    return layer_states(model.double(), tokens, with_input=True)


def _init_defaults(cfg: GeoConfig) -> dict:
    """``cfg``'s init constants (the rule's ``init_fields``) at GeoConfig's defaults."""
    return {name: getattr(GeoConfig, name) for name in RESIDUALS[cfg.residual].init_fields}


@functools.lru_cache(maxsize=1)
def _float64_model(cfg: GeoConfig, seed: int) -> GeoTransformer:
    return as_module(cfg, seed)


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
    X Xᵀ scaled by σ_i when S ≤ D, and X times the top eigenvectors of XᵀX otherwise. Each
    layer is first divided by its largest |entry| (the picture is scale-free), so a float64
    state of 1e-200 is not squared to 0.
    """
    X = states.double()
    top = X.abs().amax(dim=(-2, -1), keepdim=True)
    X = X / torch.where(top > 0, top, 1.0)
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


_PROFILES: OrderedDict = OrderedDict()  # rule_profile's results, least recently used first
_MAX_PROFILES = 256


def profile_kept(*key) -> bool:
    """Whether ``rule_profile(*key)`` is kept (costs no work)."""
    return key in _PROFILES


def rule_profile(
    rule: str, n_layer: int, d_model: int, seq_len: int, seed: int, fields: tuple
) -> tuple[np.ndarray, np.ndarray, torch.Tensor, int | None]:
    """Effective rank and Dong's residual (``layer_profile``) of the input (index 0, the
    embedded tokens) and after every layer (index l) of one 04 curve, the states themselves
    ((n_layer + 1, S, D), for ``token_plane`` at the layer shown), and the layer where the
    state left even float64's range (``precision_lost``; None for almost every curve), cached
    by everything that can change them (the arrays are read-only: every caller shares them).
    Index l is ``geolab rank``'s layer l.

    Precision: float32, as the rules run; a curve whose float32 state decays out of float32's
    range (``precision_lost``) is recomputed in float64 (``float64_states``), and from the
    layer where that one too runs out, its rank and residual are NaN (no number), not the
    rounding noise the metrics would return.

    The states come from the views' stacked model (``geolab.stack``): each layer's weights
    drawn once per (rule, width, sequence length, seed), any depth a prefix of the deepest
    asked so far, slider constants re-applied without a redraw, so a slider move is one forward
    of the curves it changes. ``rule_profile.cache_clear()`` forgets the kept results.

    A result is also kept on disk (``geolab.disk_cache``, keyed by these arguments, the rule's
    source and geolab's), so a later session's first load reads it instead of drawing the
    stack: the same arrays, bit for bit. ``GEOLAB_DISK_CACHE=0`` turns that off.
    """
    key = (rule, n_layer, d_model, seq_len, seed, fields)
    if key not in _PROFILES:
        _PROFILES[key] = _stored_profile(*key)
        if len(_PROFILES) > _MAX_PROFILES:
            _PROFILES.popitem(last=False)
    _PROFILES.move_to_end(key)
    return _PROFILES[key]


rule_profile.cache_clear = _PROFILES.clear


def _disk_key(rule, n_layer, d_model, seq_len, seed, fields) -> str | None:
    """``rule_profile``'s key on disk: its arguments and the rule class's source."""
    cfg = rank_config(rule, n_layer, d_model, seq_len, **dict(fields))  # a refusal raises here
    parts = dict(rule=rule, n_layer=n_layer, d_model=d_model, seq_len=seq_len, seed=seed)
    return disk_cache.key("rank_profile", (rule_class(cfg),), fields=list(fields), **parts)


def _stored_profile(*key):
    """``rule_profile`` read from disk if kept there, else computed and written there."""
    n_layer, d_model, seq_len = key[1:4]
    key_text = _disk_key(*key) if disk_cache.enabled() else None
    check = functools.partial(_from_disk, n_layer + 1, seq_len, d_model)
    kept = disk_cache.load("rank_profile", key_text, check)
    if kept is not None:
        return kept
    ranks, residual, states, lost = _profile(*key)
    arrays = {"ranks": ranks, "residual": residual, "states": states.numpy()}
    disk_cache.save(
        "rank_profile", key_text, {**arrays, "lost": np.array(-1 if lost is None else lost)}
    )
    return ranks, residual, states, lost


def _from_disk(n: int, seq_len: int, d_model: int, arrays: dict):
    """``_profile``'s result from its stored arrays; ValueError when they are not one: shapes,
    float dtypes, finite states, and ranks and residuals finite before ``lost`` and NaN from it."""
    ranks, residual, states, lost = (arrays[k] for k in ("ranks", "residual", "states", "lost"))
    lost = int(lost) if lost.shape == () and lost.dtype.kind == "i" else -2
    floats = (np.float32, np.float64)
    if (
        ranks.shape != (n,)
        or residual.shape != (n,)
        or states.shape != (n, seq_len, d_model)
        or not {ranks.dtype, residual.dtype, states.dtype} <= set(map(np.dtype, floats))
        or not -1 <= lost < n
        or not np.isfinite(states).all()
    ):
        raise ValueError("not a stored rank profile")
    end = n if lost == -1 else lost
    for curve in (ranks, residual):
        if not (np.isfinite(curve[:end]).all() and np.isnan(curve[end:]).all()):
            raise ValueError("not a stored rank profile")
        curve.setflags(write=False)
    return ranks, residual, torch.from_numpy(states), None if lost == -1 else lost


def _profile(rule, n_layer, d_model, seq_len, seed, fields):
    """``rule_profile`` computed."""
    cfg = rank_config(rule, n_layer, d_model, seq_len, **dict(fields))
    tokens = rank_tokens(seq_len, seed)
    states = stack_states(cfg, seed, tokens, with_input=True)[:, 0]
    if precision_lost(states) is not None:
        states = float64_states(cfg, seed, tokens)[:, 0]
    lost = precision_lost(states)
    ranks = effective_rank(states).numpy()
    residual = rank_collapse_residual(states).numpy()
    if lost is not None:
        ranks[lost:] = residual[lost:] = np.nan
    for array in (ranks, residual):
        array.setflags(write=False)
    return ranks, residual, states, lost


def growth_text(r: float, steps: int) -> str:
    """r**steps as "6.3e118", through its base-10 logarithm: α₀ = 1e30 makes r ≈ 5e29, whose
    800th power is past float64's range (≈ 1.8e308), where ``r**steps`` raises OverflowError."""
    if r == 0:
        return "0"
    exponent = steps * math.log10(r)
    whole = math.floor(exponent)
    return f"{10 ** (exponent - whole):.1f}e{whole}"


def not_drawn_note(
    rule: str, error: ValueError, beta0: float, lam: float, alpha0: float, n_layer: int
) -> str:
    """Why 04 leaves a rule out, in the learner's terms: the config's refusal (``error``)
    restated with the numbers behind it. MGT's two refusals (``rules.delta``): β₀ outside
    β's range (−λ, λ), or a stream that grows by |1 − α₀β₀| per residual step past
    ``MAX_INIT_GROWTH`` over the 2L steps."""
    if "beta0" not in RESIDUALS[_residual(rule)].init_fields:
        return str(error)
    if not -lam < beta0 < lam:
        return (
            f"β₀ = {beta0:g} lies outside β's range (-λ, λ) = ({-lam:g}, {lam:g}): β = λ·tanh(·)"
            " never reaches it. Raise λ or move β₀ inside."
        )
    r, steps = abs(1 - alpha0 * beta0), 2 * n_layer
    growth = growth_text(r, steps)
    limit = f"{MAX_INIT_GROWTH:.0e}".replace("e+", "e")
    return (
        f"each of its {steps} residual steps multiplies the stream by 1 − α₀β₀ = {r:.6g}, so"
        f" at init it grows {r:.6g}^{steps} ≈ {growth} times, past {limit}, beyond which"
        " LayerNorm's squares overflow float32."
        " Use fewer layers, a β₀ ≥ 0 or a smaller α₀."
    )


# Dong's residual of tokens that are equal up to rounding, per float: ‖X − 1x̄ᵀ‖/‖X‖ of a
# state whose rows differ by a few units in the last place. Measured (tokens equal but for
# one-ulp noise per token, 20 seeds, S = 32, D = 128): at most 1.7e-7 in float32 and 3.4e-16
# in float64; pure attention's float32 curve flattens at 1.8e-7–2.1e-7 and a float64 MGT
# curve at 5.6e-16–8.1e-16 (04's defaults, α₀β₀ = 0.95, 200 layers). Below this line a curve
# is "all tokens equal" to that float's precision: two curves there are not comparable.
RESIDUAL_FLOOR = {"float32": 4 * 2.0**-23, "float64": 4 * 2.0**-52}


def residual_text(value: float, precision: str) -> str:
    """Dong's residual as the readout prints it: ``num(value)``, or "< floor (float32
    rounding: tokens equal)" at or below its precision's ``RESIDUAL_FLOOR``."""
    floor = RESIDUAL_FLOOR[precision]
    if value > floor:
        return num(value)
    return f"< {floor:.0e} ({precision} rounding: tokens equal)".replace("e-0", "e-")


def underflow_note(layer: int) -> str:
    """What a curve cut by ``precision_lost`` at ``layer`` says instead of a number."""
    return f"no number from layer {layer}: the state fell below 1e-292, out of float64's range"


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
    config's message in ``numbers["rejected"]`` and the readout; the other curves stay. A curve
    whose state falls out of float64's range (``rule_profile``) stops at that layer, labelled on
    the plot and in the readout, its layer in ``numbers["underflow"]``.
    ``layer`` (default: the last; 0 is the input) picks the layer of the token clouds
    (``token_plane``).
    ``progress`` (optional) wraps the list of curves as they are computed, e.g. a progress bar
    (notebook 04 passes marimo's: a first load draws weights and takes seconds).
    """
    n_layer = check_int("n_layer", n_layer, 1, 400)
    layer = n_layer if layer is None else check_int("layer", layer, 0, n_layer)
    rules = check_names("rules", rules, rank_rules())
    d_model = check_int("d_model", d_model, 2, MAX_WIDTH)
    seq_len = check_int("seq_len", seq_len, 2, MAX_WIDTH)  # one token has no rank to lose
    names = list(dict.fromkeys(rules)) + ([REFERENCE] if reference else [])
    ranks, residuals, clouds, rejected, lost, precision = {}, {}, {}, {}, {}, {}
    for name in names if progress is None else progress(names):
        fields = rule_fields(name, beta0, lam, alpha0, gamma0)
        try:
            ranks[name], residuals[name], states, lost_at = rule_profile(
                name, n_layer, d_model, seq_len, seed, tuple(sorted(fields.items()))
            )
        except ValueError as err:
            rejected[name] = not_drawn_note(name, err, beta0, lam, alpha0, n_layer)
            continue
        precision[name] = str(states.dtype).removeprefix("torch.")
        if lost_at is not None:
            lost[name] = lost_at
        if lost_at is None or layer < lost_at:
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
        "underflow": lost,
        "precision": precision,
    }
    readout = [
        (
            f"{name}: rank / residual at layer {n_layer}",
            f"{final[name]:.3f} / {residual_text(r[-1], precision[name])}",
        )
        if name not in lost
        else (f"{name}: rank / residual at layer {n_layer}", underflow_note(lost[name]))
        for name, r in residuals.items()
    ] + [(f"{name}: not drawn", message) for name, message in rejected.items()]
    if "mgt" in ranks or "mgt_ddl" in ranks:
        r = 1 - alpha0 * beta0
        readout.append(
            (
                r"MGT: what is left of the input, $(1-\alpha_0\beta_0)^{2L}$",
                power_text(r, 2 * n_layer),
            )
        )
        numbers["mgt_memory"] = r ** (2 * n_layer)  # 0.0 where it underflows float64
        numbers["mgt_memory_log10"] = 2 * n_layer * math.log10(abs(r)) if r else -math.inf
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
            breaks={name: (at, underflow_note(at)) for name, at in lost.items()},
            residual_floors={p: RESIDUAL_FLOOR[p] for p in sorted(set(precision.values()))},
        ),
        "cloud": figures.token_cloud_figure(
            clouds, title=f"The {seq_len} tokens: {where}, top-2 directions", colors=colors
        ),
    }
    return View(numbers, readout, figs)


def compare_rows(
    n_layer: int,
    beta0: float = 0.5,
    lam: float = 1.0,
    alpha0: float = 0.1,
    gamma0: float = 0.5,
    d_model: int = 128,
    seq_len: int = 32,
    seed: int = 0,
    progress=None,
) -> list[dict]:
    """04's "every rule at this depth" table: per ``rank_rules`` rule, its effective rank and
    Dong's residual after layer ``n_layer`` (``rank_view``'s numbers, 4 and 4 significant
    digits), or why it has none.

    ``progress`` (optional) is called once with the work to do, in residual steps of the curves
    not yet kept (a kept curve, e.g. one on 04's plot, costs none), and returns a context
    manager whose ``update(increment=k)`` is told each curve's steps as it is done (notebook 04
    passes marimo's progress bar, whose rate and ETA then count work, not rules). Not called
    when every curve is kept.
    """
    n_layer = check_int("n_layer", n_layer, 1, 400)
    gates = {"beta0": beta0, "lam": lam, "alpha0": alpha0, "gamma0": gamma0}
    work = {}
    for name in rank_rules():
        fields = tuple(sorted(rule_fields(name, **gates).items()))
        try:
            steps = rank_config(name, n_layer, d_model, seq_len, **dict(fields)).n_steps
        except ValueError:  # refused: no work, the table says why
            steps = 0
        kept = profile_kept(name, n_layer, d_model, seq_len, seed, fields)
        work[name] = 0 if kept else steps
    total = sum(work.values())
    rows = []
    with nullcontext() if progress is None or total == 0 else progress(total) as bar:
        for name in rank_rules():
            one = rank_view(
                [name],
                n_layer,
                reference=False,
                d_model=d_model,
                seq_len=seq_len,
                seed=seed,
                **gates,
            )
            n = one.numbers
            if name in n["rejected"] or name in n["underflow"]:
                why = n["rejected"].get(name) or underflow_note(n["underflow"][name])
                rows.append(
                    {"rule": name, "effective rank": None, "Dong residual": None, "note": why}
                )
            else:
                precision = n["precision"][name]
                floored = n["final_residual"][name] <= RESIDUAL_FLOOR[precision]
                rows.append(
                    {
                        "rule": name,
                        "effective rank": float(f"{n['final_rank'][name]:.4g}"),
                        "Dong residual": float(f"{n['final_residual'][name]:.4g}"),
                        "note": f"residual at {precision} rounding: tokens equal"
                        if floored
                        else "",
                    }
                )
            if bar is not None and work[name]:
                bar.update(increment=work[name])
    return rows
