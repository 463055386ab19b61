"""Planning a protocol before running it: its training runs, their sizes and the GPU-hours.

Each protocol lists the models it trains (``module.planned(settings)`` -> [(label, GeoConfig)]).
The compute of one run is estimated as (Kaplan et al. 2020, "Scaling laws for neural language
models", §2.1, Table 1: forward 2N + 2·L·S·D per token, backward twice the forward)

    FLOPs ≈ 6 · (N + L·S·D) · tokens,      tokens = steps × batch_size × S,

with N the parameter count (embeddings included, counted exactly on the meta device), L the
layers, S the sequence length and D the width; validation passes (≈ 20 over training, a few
batches each) and the rank/β probes are left out. GPU-hours = FLOPs / ``SUSTAINED_FLOPS`` / 3600
per seed, summed over seeds.

``SUSTAINED_FLOPS`` = 1e14 FLOP/s is an assumption, not a measurement: one H100/H200-class GPU
sustaining ≈ 10 % of its ≈ 990 TFLOP/s dense bf16 peak, because models of width 128–512 run
kernels too small to fill it (launch- and memory-bound). Divide by the GPU count for the wall
time of a ``torchrun`` data-parallel job, which splits each batch across the GPUs.
"""

import torch

from geolab.model import GeoTransformer, count_params

SUSTAINED_FLOPS = 1e14
ASSUMPTION = (
    "GPU-hours = 6·(N + L·S·D)·tokens / (1e14 FLOP/s) / 3600 per seed: N parameters, "
    "tokens = steps × batch × S (Kaplan et al. 2020, §2.1; validation and probes left out), "
    "1e14 FLOP/s = an assumed sustained bf16 throughput of one H100/H200-class GPU on these "
    "narrow models (≈ 10 % of its dense peak), not a measurement"
)


def n_params(cfg) -> int:
    """Exact trainable parameter count of ``GeoTransformer(cfg)``, built on the meta device."""
    with torch.device("meta"):
        return count_params(GeoTransformer(cfg))


def run_plan(label: str, cfg, train: dict, seeds: int) -> dict:
    """One planned run: its sizes, training tokens, FLOPs and GPU-hours over ``seeds`` seeds."""
    n = n_params(cfg)
    tokens = train["steps"] * train["batch_size"] * cfg.seq_len
    flops = 6 * (n + cfg.n_layer * cfg.seq_len * cfg.d_model) * tokens
    return {
        "run": label,
        "n_layer": cfg.n_layer,
        "d_model": cfg.d_model,
        "seq_len": cfg.seq_len,
        "n_params": n,
        "steps": train["steps"],
        "batch_size": train["batch_size"],
        "seeds": seeds,
        "flops": flops * seeds,
        "gpu_hours": flops * seeds / SUSTAINED_FLOPS / 3600,
    }


def protocol_plan(module, settings: dict, seeds: int) -> list[dict]:
    """:func:`run_plan` of every run the protocol trains at ``settings`` (a protocol whose runs
    are no ``GeoTransformer`` gives its own rows: ``module.plan_rows``)."""
    if hasattr(module, "plan_rows"):
        return module.plan_rows(settings, seeds)
    return [
        run_plan(label, cfg, settings["train"], seeds) for label, cfg in module.planned(settings)
    ]


def plan_text(name: str, scale: str, rows: list[dict]) -> str:
    """The dry-run printout: one line per run, the total and the assumption behind it."""
    lines = [
        f"{name} at scale {scale!r}: {len(rows)} trained runs",
        f"{'run':<28} {'L':>4} {'D':>5} {'S':>5} {'params':>12} {'steps':>7} {'batch':>6} "
        f"{'seeds':>5} {'GPU-h':>8}",
    ]
    for r in rows:
        lines.append(
            f"{r['run']:<28} {r['n_layer']:>4} {r['d_model']:>5} {r['seq_len']:>5} "
            f"{r['n_params']:>12,} {r['steps']:>7} {r['batch_size']:>6} {r['seeds']:>5} "
            f"{r['gpu_hours']:>8.2f}"
        )
    total = sum(r["gpu_hours"] for r in rows)
    lines += [f"total ≈ {total:.1f} GPU-hours ({total / 8:.1f} h wall on 8 GPUs)", ASSUMPTION]
    return "\n".join(lines)
