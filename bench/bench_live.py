"""Live notebooks: slider value -> recomputed numbers and figures, through ``geolab.explore``.

Each row times the exact call a notebook cell makes when a slider moves (the view function:
operators or model forward, metrics, and every plotly figure of that notebook), with the value
changed on every call so no cache answers. Times are on the suite's clock (process CPU time on a
CPU), median over interleaved rounds, minimum in the notes. Targets: ≤ 50 ms for 01 and 03
(issue 4); for 04 at 200 layers, D = 128, S = 32 with three rules (postln, preln, mgt) and the
pure-attention reference (issue 12): β₀ slider ≤ 150 ms, a new depth ≤ 1 s, compare all ≤ 3 s.

Notebook 04 is measured three ways: a β₀ move (only ``mgt`` reads β₀, so only its curve is
recomputed; the other two come from the per-rule cache, as in the notebook), all three curves
recomputed on kept models, a depth move (all models built) and the "compare all rules" button
(every rule built and probed, cold). The notes split the time into forward passes,
effective ranks and the figure.
"""

import itertools
import statistics
import time

import torch

from bench.timing import interleaved, seconds
from geolab import explore, figures

RULES = ("postln", "preln", "mgt")


def _row(name, ms: list[float], target_ms, notes="") -> dict:
    value = statistics.median(ms)
    return {
        "group": "live",
        "name": name,
        "value": value,
        "unit": "ms",
        "target": f"≤ {target_ms} ms" if target_ms else None,
        "met": value <= target_ms if target_ms else None,
        "notes": f"min {min(ms):.1f} ms over {len(ms)} rounds" + (f"; {notes}" if notes else ""),
    }


def _sweep(values):
    """A callable factory: each call takes the next value, so no cache can answer."""
    it = itertools.cycle(values)
    return lambda: next(it)


def _small_views(rounds: int, min_time: float) -> list[dict]:
    beta = _sweep([0.05 * i for i in range(-19, 60)])
    cayley_beta = _sweep([0.1 * i for i in range(0, 200)])
    lam = _sweep([1.0 + 0.01 * i for i in range(50)])
    depth = _sweep(list(range(60, 120)))
    fns = {
        "01": lambda: explore.delta_view(beta(), 0.5, 1.0),
        "03": lambda: explore.cayley_view(cayley_beta(), 1.2, 0.5),
        "02": lambda: explore.mgt_view(lam(), 0.0, 0.1, 0.5),
        "05": lambda: explore.streams_view(20, 2.0, depth()),
    }
    times = interleaved(fns, rounds=rounds, min_time=min_time)
    ms = {k: [t * 1e3 for t in v] for k, v in times.items()}
    return [
        _row("01 delta operator: β slider -> numbers + 4 figures", ms["01"], 50),
        _row("03 Cayley/Householder: β slider -> numbers + 4 figures", ms["03"], 50),
        _row("02 MGT block: λ slider -> numbers + Jacobian + 3 figures", ms["02"], None),
        _row("05 streams: depth slider -> Sinkhorn + gains + 3 figures", ms["05"], None),
    ]


def _rank_rows(
    n_layer: int, d: int, seq: int, target_ms, depth_target_ms, compare_target_ms, rounds: int
) -> list[dict]:
    label = f"{n_layer} layers, D={d}, S={seq}, {'/'.join(RULES)}"
    start = time.process_time()
    built = explore.rank_view(RULES, n_layer, d_model=d, seq_len=seq, reference=True)
    build_ms = (time.process_time() - start) * 1e3
    compare_ms = _compare_all_ms(n_layer, d, seq)
    beta0 = _sweep([0.5 - 0.001 * i for i in range(1, 400)])

    def all_rules():
        explore.rule_profile.cache_clear()
        return explore.rank_view(RULES, n_layer, d_model=d, seq_len=seq, reference=False)

    x = explore.rank_tokens(seq, 0)
    models = {r: explore.build_model(explore.rank_config(r, n_layer, d, seq), 0) for r in RULES}
    fns = {
        "beta0": lambda: explore.rank_view(
            RULES, n_layer, beta0=beta0(), d_model=d, seq_len=seq, reference=False
        ),
        "all": all_rules,
    }
    fns.update({f"fwd {r}": (lambda m=m: _forward(m, x)) for r, m in models.items()})
    fns["profile mgt"] = lambda: explore.layer_profile(models["mgt"], x)
    times = interleaved(fns, rounds=rounds)
    ms = {k: [t * 1e3 for t in v] for k, v in times.items()}
    fwd = {r: statistics.median(ms[f"fwd {r}"]) for r in RULES}
    numbers = built.numbers
    fig_ms = 1e3 * seconds(lambda: figures.rank_figure(numbers["ranks"], numbers["residuals"]))
    split = (
        "forward " + ", ".join(f"{r} {v:.0f}" for r, v in fwd.items()) + " ms; "
        f"mgt forward + probe + effective ranks {statistics.median(ms['profile mgt']):.0f} ms; "
        f"figure {fig_ms:.1f} ms"
    )
    return [
        _row(
            f"04 rank collapse: β₀ slider (mgt recomputed) — {label}", ms["beta0"], target_ms, split
        ),
        _row(
            f"04 rank collapse: all three curves recomputed — {label}", ms["all"], target_ms, split
        ),
        _row(
            f"04 rank collapse: depth slider to a new depth (three models + pure attention "
            f"built) — {label}",
            [build_ms],
            depth_target_ms,
            "one cold call: model construction and init dominate",
        ),
        _row(
            f"04 rank collapse: compare all {len(explore.rank_rules())} rules (models built) — "
            f"{n_layer} layers, D={d}, S={seq}",
            [compare_ms],
            compare_target_ms,
            "one cold call, as the notebook's button runs it (one rule per progress step)",
        ),
    ]


def _compare_all_ms(n_layer: int, d: int, seq: int) -> float:
    """The notebook's "compare all rules" loop on a cold cache, process CPU time in ms."""
    explore.rule_profile.cache_clear()
    explore.rank.clear_models()
    start = time.process_time()
    for name in explore.rank_rules():
        explore.rank_view([name], n_layer, d_model=d, seq_len=seq, reference=False)
    return (time.process_time() - start) * 1e3


@torch.inference_mode()
def _forward(model, x):
    return model(x)


def run(quick: bool) -> list[dict]:
    if quick:
        return _small_views(rounds=2, min_time=0.0) + _rank_rows(
            4, 32, 8, None, None, None, rounds=2
        )
    return _small_views(rounds=7, min_time=0.2) + _rank_rows(
        200, 128, 32, 150, 1000, 3000, rounds=3
    )
