"""Probes taken during a protocol's training: validation windows and β per layer at snapshots.

``beta_snapshot`` collects every rule's β (``geolab.record``) during one eval forward and reduces
it per layer (the attention and MLP steps of a layer pooled, all tokens and channels) with
``geolab.metrics.beta_stats_per_layer`` on the rule's own range (``Rule.beta_range``).
"""

import torch

from geolab.metrics import beta_stats_per_layer
from geolab.probe import record

FRACTIONS = (0.0, 0.25, 0.5, 1.0)  # of training: the MGT paper's epochs {0, 25, 50, 100} of 100
BINS = 40


def text_probe(task, n: int) -> torch.Tensor:
    """The first ``n`` non-overlapping validation windows of a stream task (or samples), (n, S)."""
    idx = task.eval_index("val")[:n]
    return task.batch("val", idx)[0]


@torch.no_grad()
def beta_snapshot(model, probe: torch.Tensor, low: float, high: float) -> dict:
    """β statistics per layer from one eval forward (attention and MLP steps pooled)."""
    was_training = model.training
    model.eval()
    with record(model) as rec:
        model(probe.to(next(model.parameters()).device))
    model.train(was_training)
    per_step = [g["beta"].float().cpu() for g in rec.gates]
    k = len(per_step) // model.cfg.n_layer
    layers = [torch.cat(per_step[i * k : (i + 1) * k]) for i in range(model.cfg.n_layer)]
    stats = beta_stats_per_layer(layers, bins=BINS, range=(low, high))
    return {key: stats[key] for key in ("mean", "std", "frac_negative", "hist", "edges")}


def snapshot_steps(steps: int) -> dict[int, str]:
    """Optimizer step -> label for the fractions after 0 (the "0%" snapshot is taken before)."""
    return {max(1, round(f * steps)): f"{round(100 * f)}%" for f in FRACTIONS if f > 0}
