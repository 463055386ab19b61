"""Live views: how long a notebook waits for the effective-rank profile of a deep random stack.

``rank_profile(model, x)`` (docs/design.md §5/§10) on a freshly initialised 200-layer model in eval
mode, for preln, mgt and edelta, on one input sequence (batch 1: a live view shows one sample's
profile). These are absolute times on the suite's clock (process CPU time on a CPU), each the
median of interleaved repetitions, the minimum in the notes. Targets (issue 7): ≤ 100 ms at
D = 128, S = 32 and ≤ 400 ms at D = 256, S = 64. The time to build the model is reported beside
it, without a target (a slider that changes a rule's init rebuilds the model; one that changes
only the input does not). The notes also split the profile into the forward pass and the
effective ranks of its 401 states, and time preln's linear maps alone: the matrix-product floor
of a 200-layer forward on this machine.
"""

import statistics
import time

import torch

from bench.timing import interleaved
from geolab.config import GeoConfig
from geolab.metrics import effective_rank
from geolab.model import GeoTransformer
from geolab.probe import rank_profile

RULES = ("preln", "mgt", "edelta")
BATCH = 1


def _build(rule, n_layer, d, seq):
    torch.manual_seed(0)
    cfg = GeoConfig(
        residual=rule, n_layer=n_layer, d_model=d, n_head=4, seq_len=seq, d_in=d, d_out=d
    )
    return GeoTransformer(cfg).eval()


def _matmuls_of(model, seq, d):
    """The forward's linear maps alone (QKV, output, MLP in and out of every layer, on inputs of
    their width): the GEMM floor under the profile, without attention, norms or residual adds."""
    linears = [
        m
        for layer in model.layers
        for m in (layer.attn.qkv, layer.attn.proj, layer.mlp.fc, layer.mlp.proj)
    ]
    inputs = {width: torch.randn(BATCH, seq, width) for width in (d, 4 * d)}

    def run():
        for lin in linears:
            lin(inputs[lin.in_features])

    return run


def _rows(n_layer, d, seq, target_ms, rounds) -> list[dict]:
    x = torch.randn(BATCH, seq, d, generator=torch.Generator().manual_seed(0))
    models, build_ms = {}, {}
    for rule in RULES:
        start = time.perf_counter()
        models[rule] = _build(rule, n_layer, d, seq)
        build_ms[rule] = (time.perf_counter() - start) * 1e3
    states = torch.randn(2 * n_layer + 1, BATCH, seq, d)
    fns = {rule: (lambda m=m: rank_profile(m, x)) for rule, m in models.items()}
    fns.update({f"{rule} forward": (lambda m=m: m(x)) for rule, m in models.items()})
    fns["effective ranks"] = lambda: effective_rank(states)
    fns["matrix products"] = _matmuls_of(models["preln"], seq, d)
    times = interleaved(fns, rounds=rounds)
    erank_ms = statistics.median(times["effective ranks"]) * 1e3
    floor_ms = statistics.median(times["matrix products"]) * 1e3
    rows = []
    for rule in RULES:
        ms = [t * 1e3 for t in times[rule]]
        value = statistics.median(ms)
        fwd_ms = statistics.median(times[f"{rule} forward"]) * 1e3
        rows.append(
            {
                "group": "views",
                "name": f"rank_profile {rule} ({n_layer} layers, D={d}, S={seq}, B={BATCH})",
                "value": value,
                "unit": "ms",
                "target": f"≤ {target_ms} ms" if target_ms else None,
                "met": value <= target_ms if target_ms else None,
                "notes": f"min {min(ms):.0f} ms over {len(ms)} runs; forward alone "
                f"{fwd_ms:.0f} ms, effective ranks of {len(states)} states {erank_ms:.0f} ms; "
                f"model build {build_ms[rule]:.0f} ms"
                + (
                    f"; preln's {4 * n_layer} linear maps alone {floor_ms:.0f} ms"
                    if rule == "preln"
                    else ""
                ),
            }
        )
    return rows


def run(quick: bool) -> list[dict]:
    with torch.no_grad():
        if quick:
            return _rows(4, 32, 8, None, rounds=2)
        return _rows(200, 128, 32, 100, rounds=5) + _rows(200, 256, 64, 400, rounds=3)
