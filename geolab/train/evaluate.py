"""``evaluate``: the task's metrics on a deterministic pass over a split (docs/design.md §7).

"mse" (regression), "loss"/"ppl"/"acc" (tokens), "cos" (cosine alignment, inversion), "norm_dev"
(norm deviation between inputs and outputs over the first 100 positions) and "gamma", the mean
E∆ gate γ, for models that have one.
"""

import math

import torch
from torch import nn

from geolab.metrics import cosine_alignment, norm_deviation
from geolab.tasks import Task
from geolab.train.config import check_int

NORM_DEV_STEPS = 100  # the E∆ protocol's "norm deviation over 100 steps" (docs/design.md §8)


def autocast(device: torch.device, bf16: bool):
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16 and device.type == "cuda")


@torch.no_grad()
def evaluate(
    model: nn.Module,
    task: Task,
    split: str = "val",
    batch_size: int = 64,
    max_batches: int | None = None,
    bf16: bool = True,
) -> dict:
    """Metrics of ``model`` on a deterministic pass over ``split`` (see the module docstring)."""
    check_int("batch_size", batch_size, low=1)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    sums = dict.fromkeys(("loss", "n", "acc", "cos", "norm_dev", "nd_n", "gamma", "g_n"), 0.0)
    batches = task.eval_index(split).split(batch_size)
    for idx in batches[:max_batches]:
        x, y, mask = (None if t is None else t.to(device) for t in task.batch(split, idx))
        with autocast(device, bf16):
            out = model(x)
        out = out.float()
        m = torch.ones(y.shape[:2], device=device) if mask is None else mask.float()
        sums["loss"] += (task.position_loss(out, y) * m).sum().item()
        sums["n"] += m.sum().item()
        if "acc" in task.metrics:
            sums["acc"] += ((out.argmax(-1) == y).float() * m).sum().item()
        if "cos" in task.metrics:
            sums["cos"] += (cosine_alignment(out, y, reduce="none") * m).sum().item()
        if "norm_dev" in task.metrics:
            dev = norm_deviation(x[:, :NORM_DEV_STEPS], out[:, :NORM_DEV_STEPS], reduce="none")
            sums["norm_dev"] += dev.sum().item()
            sums["nd_n"] += dev.numel()
        for rule in getattr(model, "rules", []):
            if "gamma" in rule.gates:
                sums["gamma"] += rule.gates["gamma"].float().mean().item()
                sums["g_n"] += 1
    model.train(was_training)
    loss = sums["loss"] / sums["n"]
    result = {"mse": loss} if task.kind == "regression" else {"loss": loss, "ppl": math.exp(loss)}
    if "acc" in task.metrics:
        result["acc"] = sums["acc"] / sums["n"]
    if "cos" in task.metrics:
        result["cos"] = sums["cos"] / sums["n"]
    if sums["nd_n"]:
        result["norm_dev"] = sums["norm_dev"] / sums["nd_n"]
    if sums["g_n"]:
        result["gamma"] = sums["gamma"] / sums["g_n"]
    return result
