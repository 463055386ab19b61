"""Probes: capture the residual state after every step and every rule's gates (docs/design.md §5).

``record(model)`` is a context manager in the spirit of TransformerLens hook points: inside it,
every forward pass appends the embedding output, the state after each residual step and each
rule's gate dict; on exit — also when the forward raises — every hook is removed, so a marimo
cell that re-runs never stacks stale hooks.
"""

from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from geolab.metrics import effective_rank


@dataclass
class Recording:
    """What ``record`` captured: ``embedding`` (B, S, D) per forward, then per residual step
    ``states`` ((B, S, D), or (B, S, n, D) for stream rules) and ``gates`` (dict per step)."""

    embedding: list[torch.Tensor] = field(default_factory=list)
    states: list[torch.Tensor] = field(default_factory=list)
    gates: list[dict[str, torch.Tensor]] = field(default_factory=list)


@contextmanager
def record(model):
    """Capture states and gates of ``model`` (a ``GeoTransformer``) during forwards in the block."""
    rec = Recording()
    handles = [
        model.hook_embed.register_forward_hook(
            lambda _m, _i, out: rec.embedding.append(out.detach())
        )
    ]

    def on_step(rule, _inputs, out):
        rec.states.append(out.detach())
        rec.gates.append(dict(rule.gates))

    try:
        handles += [rule.register_forward_hook(on_step) for rule in model.rules]
        yield rec
    finally:
        for handle in handles:
            handle.remove()


@torch.no_grad()
def rank_profile(model, x: torch.Tensor) -> torch.Tensor:
    """Effective rank (Eq. 8, mean over the batch) of the embedding output, then after every
    residual step, stream states merged as the head sees them. Shape (n_steps + 1,)."""
    with record(model) as rec:
        model(x)
    merge = model.rule_cls.merge
    states = torch.stack([rec.embedding[0]] + [merge(s) for s in rec.states])
    return effective_rank(states.float()).mean(dim=-1)
