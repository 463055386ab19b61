"""``evaluate``: the task's metrics on a deterministic pass over a split (docs/design.md §7).

"mse" (regression), "loss"/"ppl"/"acc" (tokens), "cos" (cosine alignment, inversion), "norm_dev"
(norm deviation between inputs and outputs over the first 100 positions), "norm_dev_ref" (the
E∆ reference's norm deviation, ``reference_norm_deviation``) and "gamma", the mean E∆ gate γ,
for models that have one.

With ``random_batches=N`` the pass is the public E∆ trainer's estimate instead: N batches of
``batch_size`` indices drawn with replacement from a generator seeded by ``seed``
(docs/design.md §12); the batches are equally sized, so the mean over positions is the mean of
the per-batch means it reports.
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


def batch_indices(
    task: Task,
    split: str,
    batch_size: int,
    max_batches: int | None = None,
    random_batches: int | None = None,
    seed: int = 0,
) -> list[torch.Tensor]:
    """The sample indices of each batch ``evaluate`` reads: the first ``max_batches`` batches of
    a deterministic pass, or ``random_batches`` batches drawn with replacement (seeded)."""
    if random_batches is None:
        return list(task.eval_index(split).split(batch_size)[:max_batches])
    gen = torch.Generator().manual_seed(seed)
    n = task.n_samples(split)
    return [torch.randint(n, (batch_size,), generator=gen) for _ in range(random_batches)]


@torch.no_grad()
def evaluate(
    model: nn.Module,
    task: Task,
    split: str = "val",
    batch_size: int = 64,
    max_batches: int | None = None,
    bf16: bool = True,
    random_batches: int | None = None,
    seed: int = 0,
    progress: bool = False,
) -> dict:
    """Metrics of ``model`` on a pass over ``split`` (see the module docstring); ``progress``
    shows a tqdm bar over the batches, removed when done."""
    check_int("batch_size", batch_size, low=1)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    sums = dict.fromkeys(("loss", "n", "acc", "cos", "norm_dev", "nd_n", "gamma", "g_n"), 0.0)
    batches = batch_indices(task, split, batch_size, max_batches, random_batches, seed)
    if progress:
        from tqdm.auto import tqdm

        batches = tqdm(batches, desc=f"evaluating {split}", unit="batch", leave=False)
    for idx in batches:
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
        steps = min(NORM_DEV_STEPS, task.seq_len)
        result["norm_dev_ref"] = reference_norm_deviation(model, task.d_in, steps, bf16=bf16)
    if sums["g_n"]:
        result["gamma"] = sums["gamma"] / sums["g_n"]
    return result


@torch.no_grad()
def reference_norm_deviation(
    model: nn.Module, d_in: int, seq_len: int = 100, n_sequences: int = 50, seed: int = 0, bf16=True
) -> float:
    """The E∆ reference's norm deviation: mean over positions of |mean_i ‖y_{i,t}‖ − 1|.

    As the public E∆ code's stability figure computes it: ``n_sequences`` inputs of ``seq_len``
    random unit vectors (x = normalize(randn)), y the model's outputs, the output norm averaged
    over sequences at each position t, then |· − 1| averaged over positions. Unlike ``norm_dev``
    it compares the outputs with 1, not with the inputs, on inputs off the task's distribution.
    """
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n_sequences, seq_len, d_in, generator=gen)
    x = torch.nn.functional.normalize(x, dim=-1)
    with autocast(device, bf16):
        out = model(x.to(device))
    model.train(was_training)
    mean_norm = out.float().norm(dim=-1).mean(0)
    return (mean_norm - 1).abs().mean().item()
