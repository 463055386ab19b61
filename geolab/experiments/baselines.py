"""Trivial baselines: what a task's validation batches cost a predictor that learns nothing.

A trained run has *learned* its task only when it beats the best of these by a stated margin
(``LEARNED_RULE``); every result file stores them with the run's ratio to the best
(docs/design.md §8). Each is evaluated on exactly the validation batches the trainer scores
(``geolab.train.loop.validation_batches``), so the ratio compares like with like.

Regression (the MSE, mean over features and positions, as ``Task.loss``):

* predict-zero:  ŷ = 0, the MSE mean(y²);
* copy-the-input: ŷ_t = x_t (the last state seen);
* the best task-aware predictor that needs no learning —
  gyroscope: the rotation plane (i, j) of each trajectory is known and the mean rotation
  E[R(θ)] = [[E cos θ, −E sin θ], [E sin θ, E cos θ]] (θ over the training split) is applied in
  it, the other coordinates copied: the best prediction that does not infer θ from the context;
  echo: the running mean of the inputs, x̄_t = (x₁ + … + x_t)/t, the least-squares estimate of
  the repeated key; near-π single and multi: the rotation by π in the task's planes (x ↦ −x
  there), which needs no θ — the single angle θ ≈ π is what a model learns;
  inversion: none (its closed form −x is the task's answer, nothing less informed exists).

Text (perplexity, exp of the mean cross-entropy in nats), counts from the training split:

* unigram: add-one (Laplace) frequencies p(w) = (c(w) + 1)/(N + V);
* bigram: Witten–Bell interpolation p(w | v) = (c(v, w) + T(v) p(w)) / (c(v) + T(v)), T(v) the
  number of distinct words seen after v (Witten & Bell 1991; Chen & Goodman 1999 §2.5); the
  first position of a window has no context and is scored by the unigram.
"""

import math

import torch

from geolab.tasks import Task
from geolab.train.evaluate import batch_indices

MSE_FRACTION = 0.5  # learned: MSE at most half the best trivial baseline's
PPL_FRACTION = 0.9  # learned: perplexity at most 0.9 × the best trivial baseline's
LEARNED_RULE = (
    f"learned when the final validation MSE is at most {MSE_FRACTION:g} × the best trivial "
    f"baseline's (regression) or the perplexity at most {PPL_FRACTION:g} × the best baseline's "
    "(text); the baselines (predict-zero, copy-the-input, the task-aware closed form; unigram and "
    "bigram for text) are scored on the same validation batches (geolab.experiments.baselines)"
)
AWARE = {
    "gyroscope": "plane known, mean rotation",
    "echo": "running mean of the inputs",
    "near_pi": "rotation by π in the plane",
    "near_pi_multi": "rotation by π in the planes",
}


def _mse(pred: torch.Tensor, y: torch.Tensor) -> float:
    return (pred - y).pow(2).mean(-1).mean().item()


def _rotate(x: torch.Tensor, planes: torch.Tensor, cos: float, sin: float) -> torch.Tensor:
    """x (B, S, d) with each sample's planes (B, P, 2) rotated by the angle (cos, sin)."""
    out = x.clone()
    idx = planes[:, None, :, :].expand(-1, x.shape[1], -1, -1)  # (B, S, P, 2)
    xi, xj = x.gather(2, idx[..., 0]), x.gather(2, idx[..., 1])
    out.scatter_(2, idx[..., 0], cos * xi - sin * xj)
    out.scatter_(2, idx[..., 1], sin * xi + cos * xj)
    return out


def aware_prediction(task: Task, x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor | None:
    """The task-aware no-learning prediction for validation samples ``idx`` (module docstring);
    None for a task without one."""
    if task.name == "gyroscope":
        theta = task.info["train"]["theta"].double()
        cos, sin = theta.cos().mean().item(), theta.sin().mean().item()
        planes = task.info["val"]["plane"][idx][:, None, :]
        return _rotate(x, planes, cos, sin)
    if task.name == "echo":
        steps = torch.arange(1, x.shape[1] + 1, dtype=x.dtype)
        return x.cumsum(1) / steps[None, :, None]
    if task.name in ("near_pi", "near_pi_multi"):
        planes = task.info["planes"].expand(x.shape[0], -1, -1)
        return _rotate(x, planes, -1.0, 0.0)
    return None


def regression(task: Task, batches: list[torch.Tensor]) -> dict:
    """{baseline name: MSE} of the regression baselines on the validation ``batches``."""
    idx = torch.cat(batches)
    x, y, _ = task.batch("val", idx)
    x, y = x.double(), y.double()
    out = {"predict-zero": _mse(torch.zeros_like(y), y), "copy-the-input": _mse(x, y)}
    aware = aware_prediction(task, x, idx)
    if aware is not None:
        out[AWARE[task.name]] = _mse(aware, y)
    return out


def text(task: Task, batches: list[torch.Tensor]) -> dict:
    """{baseline name: perplexity} of the unigram and Witten–Bell bigram (training-split counts)
    on the validation ``batches``."""
    train, vocab = task.x["train"], task.vocab_size
    counts = torch.bincount(train, minlength=vocab).double()
    p_uni = (counts + 1) / (counts.sum() + vocab)
    keys, pair_counts = torch.unique(train[:-1] * vocab + train[1:], return_counts=True)
    context = torch.bincount(train[:-1], minlength=vocab).double()
    followers = torch.bincount(keys // vocab, minlength=vocab).double()
    x, y, _ = task.batch("val", torch.cat(batches))
    prev, nxt = x.flatten(), y.flatten()
    query = prev * vocab + nxt
    pos = torch.searchsorted(keys, query).clamp(max=len(keys) - 1)
    pair = torch.where(keys[pos] == query, pair_counts[pos].double(), 0.0)
    uni = p_uni[nxt]
    seen = context[prev] > 0
    bigram = torch.where(
        seen, (pair + followers[prev] * uni) / (context[prev] + followers[prev]).clamp(min=1), uni
    ).view(y.shape)
    bigram[:, 0] = p_uni[y[:, 0]]  # the window's first token has no context in the window
    return {
        "unigram": math.exp(-uni.log().mean().item()),
        "bigram": math.exp(-bigram.log().mean().item()),
    }


def of_task(task: Task, batch_args: dict) -> dict:
    """{"metric", "values" (name -> number), "best", "value"}: the task's trivial baselines on the
    validation batches ``batch_indices(task, "val", **batch_args)``."""
    batches = batch_indices(task, "val", **batch_args)
    regress = task.kind == "regression"
    values = regression(task, batches) if regress else text(task, batches)
    best = min(values, key=values.get)
    return {
        "metric": "mse" if regress else "ppl",
        "values": values,
        "best": best,
        "value": values[best],
    }


def judge_run(run: dict, baseline: dict) -> None:
    """Set a trained run's "baseline_ratio" (its metric over the best baseline's) and "learned"
    (``LEARNED_RULE``)."""
    metric = baseline["metric"]
    ratio = run["val"][metric] / baseline["value"] if baseline["value"] else math.inf
    run["baseline_ratio"] = ratio
    run["learned"] = ratio <= (MSE_FRACTION if metric == "mse" else PPL_FRACTION)
