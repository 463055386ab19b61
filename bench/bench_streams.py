"""mHC against mHC-lite, side by side in one process (issue 38): the same block, H_res by 20
Sinkhorn iterations (``mhc``) or as an exact convex combination of the n! permutation matrices
(``mhc_lite``, ``geolab.mixing.birkhoff``).

Three comparisons, each timed interleaved or bracketed with what it is divided by:

- the mixer alone, forward + backward on the (B·S) per-token logits of a training step (n = 4,
  16 × 64 tokens): ``birkhoff`` / ``sinkhorn``;
- ``rank_profile`` on the views' stacked model (200 layers, D = 128, S = 32) / its ``F.linear``
  floor, as bench_live's profile rows (issue 38's target for mhc: ≤ 3.5; none for mhc_lite);
- the training step (12 layers, D = 128, S = 64, B = 16) / preln's ÷ the linear-map FLOP ratio,
  as bench_live's training rows.

``python -m bench --only streams --threads 1`` runs this group alone; with ``GEOLAB_COMPILE=1``
it adds, as bench_live does, each rule's views step compile time in a fresh process (cold and
from the cache folder), the profile rows with the views' layer step compiled (against the same
eager floors; the compile happens in the warm-up round) and the training rows with every
model's layer step compiled (preln's too).
"""

import math
import statistics

import torch

from bench.bench_live import (
    PROFILE_TARGETS,
    _compile_rows,
    _marked,
    _profile_floors,
    _profile_fns,
    _profile_rows,
    _train_rows,
    _views_compiled,
)
from bench.timing import interleaved, median_ratio, spread
from geolab import compiling
from geolab.mixing import birkhoff, permutation_matrices, sinkhorn

RULES = ("mhc", "mhc_lite")


def _mixer_rows(tokens: int, rounds: int) -> list[dict]:
    n = 4
    g = torch.Generator().manual_seed(0)
    sk_logits = torch.randn(tokens, n, n, generator=g).requires_grad_()
    lite_logits = torch.randn(tokens, math.factorial(n), generator=g).requires_grad_()
    perms = permutation_matrices(n)
    w = torch.randn(tokens, n, n, generator=g)

    def step(fn, z):
        def run():
            z.grad = None
            (fn(z) * w).sum().backward()

        return run

    times = interleaved(
        {
            "sinkhorn": step(lambda z: sinkhorn(z, iters=20), sk_logits),
            "birkhoff": step(lambda z: birkhoff(z, perms), lite_logits),
        },
        rounds=rounds,
        min_time=0.05,
    )
    ratios = [a / b for a, b in zip(times["birkhoff"], times["sinkhorn"], strict=True)]
    ms = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    return [
        {
            "group": "streams",
            "name": f"H_res mixer, forward + backward, n={n}, {tokens} tokens: "
            "birkhoff (mhc_lite) / sinkhorn 20 iterations (mhc)",
            "value": median_ratio(times["birkhoff"], times["sinkhorn"]),
            "unit": "× time",
            "target": None,
            "met": None,
            "notes": f"{ms['birkhoff']:.3g} ms vs {ms['sinkhorn']:.3g} ms (medians); "
            f"{spread(ratios)}",
        }
    ]


def _profile_only(n_layer, d, seq, targets: dict, rounds: int, compiled=False) -> list[dict]:
    """bench_live's profile rows for ``RULES``; ``compiled``: the views' layer step compiled
    (``GEOLAB_COMPILE=1``; compiled in the warm-up round), the floors the same eager replays."""
    with _views_compiled(False):  # the floors record eager F.linear calls
        floors = _profile_floors(RULES, n_layer, d, seq)
    with _views_compiled(compiled):
        times = interleaved(_profile_fns(RULES, n_layer, d, seq, floors), rounds=rounds)
    label = f"{n_layer} layers, D={d}, S={seq}"
    return _marked(_profile_rows(RULES, times, label, targets), compiled)


def run(quick: bool) -> list[dict]:
    if quick:
        rows = (
            _mixer_rows(64, rounds=2)
            + _profile_only(4, 32, 8, {}, rounds=2)
            + _train_rows(2, 32, 16, 2, rounds=2, rules=RULES)
        )
        if compiling.views_compile():
            rows += _profile_only(4, 32, 8, {}, rounds=2, compiled=True)
    else:
        rows = (
            _mixer_rows(16 * 64, rounds=7)
            + _profile_only(200, 128, 32, PROFILE_TARGETS, rounds=5)
            + _train_rows(12, 128, 64, 16, rounds=5, rules=RULES)
        )
        if compiling.views_compile():
            rows += _compile_rows(200, 128, 32, RULES)
            rows += _profile_only(200, 128, 32, PROFILE_TARGETS, rounds=5, compiled=True)
            rows += _train_rows(12, 128, 64, 16, rounds=3, compiled=True, rules=RULES)
    for row in rows:
        row["group"] = "streams"
    return rows
