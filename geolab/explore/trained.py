"""The end of notebook 04: rank per layer at init next to the same model after training, from
the committed ``rank_evolution`` result (data/results/rank_evolution-small.json, docs/design.md
§8 protocol 1), so no training runs in the notebook."""

from __future__ import annotations

from geolab import figures
from geolab.explore.rank import rule_colors
from geolab.explore.view import View

# 09's question: the four things training can do to the last layer's effective rank.
RANK_MOVES = (
    "higher than at init for every rule",
    "about the same as at init",
    "lower than at init for every rule",
    "it differs from rule to rule",
)
# A change of the effective rank (a number in [1/min(S, D), 1]) this small counts as "about the
# same": 0.02 is 2 % of the whole range; the committed runs moved by 0.24–0.57 (issue 52).
SAME_RANK = 0.02


def rank_move(final: dict, same: float = SAME_RANK) -> str:
    """Which of ``RANK_MOVES`` holds for ``final`` {rule: (init, trained)}: every rule within
    ``same`` of its init rank -> "about the same"; every rule below (above) it by more ->
    "lower" ("higher"); any other mix -> "it differs from rule to rule"."""
    moves = [b - a for a, b in final.values()]
    if all(abs(m) <= same for m in moves):
        return RANK_MOVES[1]
    if all(m < -same for m in moves):
        return RANK_MOVES[2]
    if all(m > same for m in moves):
        return RANK_MOVES[0]
    return RANK_MOVES[3]


def trained_depths(result: dict) -> tuple[int, ...]:
    """The depths at which the result has trained runs (its first seed)."""
    runs = next(iter(result["per_seed"].values()))
    return tuple(sorted({int(key.split("/L")[1]) for key, run in runs.items() if "trained" in run}))


def rank_bridge_view(result: dict, n_layer: int) -> View:
    """Effective rank per layer (0 = embedding .. L) at init and after training for every rule
    ``result`` trained at depth ``n_layer``, each layer's rank the mean over the result's seeds
    (rules it measured at init only are left out).

    numbers: ``init`` and ``trained`` {rule: curve}, ``final`` {rule: (init, trained)} after
    the last layer, ``all_lower`` (every rule ended below its init rank), ``move`` (which of
    ``RANK_MOVES`` holds, ``rank_move``), ``val_loss``
    {rule: float}, ``config`` (the run's sizes and training steps).
    """
    depths = trained_depths(result)
    if n_layer not in depths:
        allowed = ", ".join(map(str, depths))
        raise ValueError(f"n_layer={n_layer!r} is not allowed; trained depths: {allowed}")
    seeds = list(result["per_seed"].values())
    init, trained, val_loss = {}, {}, {}
    for key, run in seeds[0].items():
        rule, depth = key.split("/L")
        if int(depth) == n_layer and "trained" in run:
            runs = [rows[key] for rows in seeds]
            init[rule], trained[rule] = _mean_curve(runs, "init"), _mean_curve(runs, "trained")
            val_loss[rule] = sum(r["val_loss"] for r in runs) / len(runs)
    cfg = result["config"]
    final = {r: (float(init[r][-1]), float(trained[r][-1])) for r in init}
    readout = [
        (f"{rule}: rank after layer {n_layer}, init → trained", f"{a:.3f} → {b:.3f}")
        for rule, (a, b) in final.items()
    ] + [(f"{rule}: validation loss", f"{loss:.3f}") for rule, loss in val_loss.items()]
    floor = 1 / min(cfg["seq_len"], cfg["d_model"])
    title = (
        f"Rank per layer, dotted at init, solid after {cfg['train']['steps']} steps "
        f"(L = {n_layer}, D = {cfg['d_model']}, {cfg['task']}, mean of {len(seeds)} "
        f"seed{'s' if len(seeds) > 1 else ''})"
    )
    numbers = {
        "all_lower": all(b < a for a, b in final.values()),
        "move": rank_move(final),
        "init": init,
        "trained": trained,
        "final": final,
        "val_loss": val_loss,
        "config": cfg,
    }
    bridge = figures.rank_bridge_figure(init, trained, title, floor, colors=rule_colors())
    return View(numbers, readout, {"bridge": bridge})


def _mean_curve(runs: list[dict], phase: str) -> list[float]:
    """The per-layer mean of ``phase``'s rank curves over one run per seed."""
    return [sum(layer) / len(layer) for layer in zip(*(r[phase] for r in runs), strict=True)]
