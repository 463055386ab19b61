"""Trivial baselines: what a task's validation batches cost a predictor that learns nothing.

A trained run has *learned* its task only when it beats the best of these by a stated margin
(``LEARNED_RULE``); every result file stores them with the run's ratio to the best
(docs/design.md §8). Each is evaluated on exactly the validation batches the trainer scores
(``geolab.train.loop.validation_batches``), so the ratio compares like with like.

Regression (the MSE, mean over features and positions, as ``Task.loss``):

* predict-zero:  ŷ = 0, the MSE mean(y²);
* copy-the-input: ŷ_t = x_t (the last state seen);
* the task-aware predictors that need no learning —
  gyroscope (every state s_{t+1} = R s_t, R a rotation by θ in a coordinate plane (i, j)):
  - "plane known, mean rotation": the plane of each trajectory known and the mean rotation
    E[R(θ)] = [[E cos θ, −E sin θ], [E sin θ, E cos θ]] (θ over the training split) applied in
    it, the other coordinates copied: the best prediction that does not infer θ from the context;
  - "plane known, angle from the last two states": θ̂ the angle from (a_i, a_j) to (b_i, b_j),
    a, b the last two states seen, and b rotated by θ̂ in the plane (exact from the second
    position on; the first position, one state seen, uses the mean rotation);
  - "nothing known, plane and angle from the last two states": the plane taken as the two
    coordinates that moved most from a to b (the task's planes are coordinate planes; the
    others do not move), then as above (the first position: copy);
  - "least squares on the previous states": per trajectory the linear map A minimising
    Σ‖s_{k+1} − A s_k‖² over the states seen (minimum-norm, singular values below ``LSQ_RTOL``
    of the largest dropped: the states are float32), applied to the last (the first: copy);
  echo: the running mean of the inputs, x̄_t = (x₁ + … + x_t)/t, the least-squares estimate of
  the repeated key; near-π single and multi: the rotation by π in the task's planes (x ↦ −x
  there), which needs no θ — the single angle θ ≈ π is what a model learns;
  inversion: none (its closed form −x is the task's answer, nothing less informed exists).

A task whose targets carry noise no predictor can know (echo: s_{t+1} − key, the fresh noise) has
a floor: the mean square of that noise on the same batches (``floor``). When the floor is above
``MSE_FRACTION`` × the best baseline, no run can pass the learned gate, at any size: the task
cannot decide a claim gated on it (``undecidable``).

Text (perplexity, exp of the mean cross-entropy in nats), counts from the training split, each
window's targets scored with the context inside the window only (the window's first target has
its input token as context):

* unigram: add-one (Laplace) frequencies p(w) = (c(w) + 1)/(N + V);
* n-grams, n = 2 … 5 (those whose keys fit in int64: V^n < 2^63), Witten–Bell interpolation
  p_n(w | h) = (c(h, w) + T(h) p_{n−1}(w | h′)) / (c(h) + T(h)), h the last n − 1 tokens, h′ its
  last n − 2, T(h) the number of distinct tokens seen after h, and p_n = p_{n−1} for a history
  never seen or not inside the window (Witten & Bell 1991; Chen & Goodman 1999 §2.5).
"""

import math

import torch

from geolab.tasks import Task
from geolab.train.evaluate import batch_indices

MSE_FRACTION = 0.5  # learned: MSE at most half the best trivial baseline's
PPL_FRACTION = 0.9  # learned: perplexity at most 0.9 × the best trivial baseline's
LSQ_RTOL = 1e-5  # least squares: singular values below this × the largest are float32 noise
LEARNED_RULE = (
    f"learned when the final validation MSE is at most {MSE_FRACTION:g} × the best trivial "
    f"baseline's (regression) or the perplexity at most {PPL_FRACTION:g} × the best baseline's "
    "(text); the baselines (predict-zero, copy-the-input, the task-aware closed forms — gyroscope: "
    "the plane known with the mean rotation or the angle of the last two states, nothing known "
    "with plane and angle from the last two states, least squares on the previous states; "
    "unigram and Witten–Bell n-grams up to 5 for text, "
    "the window's own tokens as context) are scored on the same validation batches "
    "(geolab.experiments.baselines)"
)
GYROSCOPE = (
    "plane known, mean rotation",
    "plane known, angle from the last two states",
    "nothing known, plane and angle from the last two states",
    "least squares on the previous states",
)
AWARE = {
    "echo": "running mean of the inputs",
    "near_pi": "rotation by π in the plane",
    "near_pi_multi": "rotation by π in the planes",
}
MAX_ORDER = 5
NGRAM = {1: "unigram", 2: "bigram", 3: "trigram", 4: "4-gram", 5: "5-gram"}


def _mse(pred: torch.Tensor, y: torch.Tensor) -> float:
    return (pred - y).pow(2).mean(-1).mean().item()


def _rotate(x: torch.Tensor, planes: torch.Tensor, cos, sin) -> torch.Tensor:
    """x (B, S, d) with each sample's coordinate planes (B, P, 2) rotated by the angle (cos, sin):
    numbers, or tensors (B, S, 1) of one angle per position."""
    out = x.clone()
    idx = planes[:, None, :, :].expand(-1, x.shape[1], -1, -1)  # (B, S, P, 2)
    xi, xj = x.gather(2, idx[..., 0]), x.gather(2, idx[..., 1])
    out.scatter_(2, idx[..., 0], cos * xi - sin * xj)
    out.scatter_(2, idx[..., 1], sin * xi + cos * xj)
    return out


def _dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a * b).sum(-1, keepdim=True)


def _angle(pa: tuple, pb: tuple) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin) of the angle from the 2-vector pa = (p, q) to pb; (1, 0) for a zero vector."""
    dot = pa[0] * pb[0] + pa[1] * pb[1]
    cross = pa[0] * pb[1] - pa[1] * pb[0]
    r = torch.hypot(dot, cross)
    ok = r > 0
    safe = r.clamp_min(1e-300)
    return torch.where(ok, dot / safe, 1.0), torch.where(ok, cross / safe, 0.0)


def _turn(a: torch.Tensor, b: torch.Tensor, u: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """b rotated, in the plane of the orthonormal pair (u, w), by the angle that plane's
    projection of a turns through to reach b's: the next state if a → b was one rotation there."""
    pa, pb = (_dot(a, u), _dot(a, w)), (_dot(b, u), _dot(b, w))
    cos, sin = _angle(pa, pb)
    p, q = pb
    return b + (cos * p - sin * q - p) * u + (sin * p + cos * q - q) * w


def gyroscope_predictions(task: Task, x: torch.Tensor, idx: torch.Tensor) -> dict:
    """{name: prediction (B, S, d)} of the gyroscope closed forms (module docstring) for the
    validation samples ``idx`` with inputs ``x`` (float64): position t predicts state t + 1 from
    x[:, :t + 1] alone."""
    theta = task.info["train"]["theta"].double()
    planes = task.info["val"]["plane"][idx][:, None, :]
    mean_rot = _rotate(x, planes, theta.cos().mean().item(), theta.sin().mean().item())
    a, b = x[:, :-1], x[:, 1:]  # the last two states seen at positions 1 … S−1
    d = x.shape[-1]

    def turn_in(coords):  # b turned in the coordinate planes coords (B, S', 2)
        e_i = torch.nn.functional.one_hot(coords[..., 0], d).to(x.dtype)
        e_j = torch.nn.functional.one_hot(coords[..., 1], d).to(x.dtype)
        return _turn(a, b, e_i, e_j)

    moved = (b - a).abs().topk(2, dim=-1).indices  # the two coordinates that moved most
    return {
        GYROSCOPE[0]: mean_rot,
        GYROSCOPE[1]: torch.cat([mean_rot[:, :1], turn_in(planes)], 1),
        GYROSCOPE[2]: torch.cat([x[:, :1], turn_in(moved)], 1),
        GYROSCOPE[3]: least_squares(x),
    }


def least_squares(x: torch.Tensor) -> torch.Tensor:
    """Per trajectory and position t, A x_t with A = Y X⁺ the minimum-norm least-squares map
    taking x_k to x_{k+1} over k < t (X = [x_0 … x_{t−1}], Y = [x_1 … x_t]; singular values
    below ``LSQ_RTOL`` × the largest dropped); x_t itself at t = 0. x (B, S, d) -> (B, S, d)."""
    out = x.clone()
    for t in range(1, x.shape[1]):
        past = x[:, :t].transpose(1, 2)  # (B, d, t)
        coef = torch.linalg.pinv(past, rtol=LSQ_RTOL) @ x[:, t, :, None]  # (B, t, 1)
        out[:, t] = (x[:, 1 : t + 1].transpose(1, 2) @ coef)[..., 0]
    return out


def aware_predictions(task: Task, x: torch.Tensor, idx: torch.Tensor) -> dict:
    """{name: the task-aware no-learning prediction} for validation samples ``idx`` (module
    docstring); empty for a task without one."""
    if task.name == "gyroscope":
        return gyroscope_predictions(task, x, idx)
    if task.name == "echo":
        steps = torch.arange(1, x.shape[1] + 1, dtype=x.dtype)
        return {AWARE["echo"]: x.cumsum(1) / steps[None, :, None]}
    if task.name in ("near_pi", "near_pi_multi"):
        planes = task.info["planes"].expand(x.shape[0], -1, -1)
        return {AWARE[task.name]: _rotate(x, planes, -1.0, 0.0)}
    return {}


def floor(task: Task, y: torch.Tensor, idx: torch.Tensor) -> float | None:
    """The MSE no predictor can go below on these targets, where the task has one: echo's fresh
    noise, mean (s_{t+1} − key)² over the batches (module docstring); None otherwise."""
    if task.name != "echo":
        return None
    key = task.info["val"]["key"][idx].double()
    return _mse(key[:, None, :].expand_as(y), y)


def regression(task: Task, batches: list[torch.Tensor]) -> dict:
    """{baseline name: MSE} of the regression baselines on the validation ``batches``."""
    idx = torch.cat(batches)
    x, y, _ = task.batch("val", idx)
    x, y = x.double(), y.double()
    out = {"predict-zero": _mse(torch.zeros_like(y), y), "copy-the-input": _mse(x, y)}
    out.update({k: _mse(p, y) for k, p in aware_predictions(task, x, idx).items()})
    return out


def _grams(tokens: torch.Tensor, n: int, vocab: int) -> torch.Tensor:
    """int64 keys of every n-gram along the last axis of ``tokens`` (base-``vocab`` digits,
    the first token most significant): (..., L) -> (..., L − n + 1)."""
    length = tokens.shape[-1] - n + 1
    key = torch.zeros((*tokens.shape[:-1], max(length, 0)), dtype=torch.int64)
    for k in range(n):
        key = key * vocab + tokens[..., k : k + length]
    return key


def _lookup(keys: torch.Tensor, counts: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """counts[keys == query] (0.0 where the query is not among the sorted ``keys``)."""
    if not len(keys):
        return torch.zeros(query.shape, dtype=torch.float64)
    pos = torch.searchsorted(keys, query).clamp(max=len(keys) - 1)
    return torch.where(keys[pos] == query, counts[pos].double(), 0.0)


def ngram_orders(vocab: int) -> list[int]:
    """The n-gram orders scored for a vocabulary: 1 … ``MAX_ORDER`` while V^n fits int64 keys."""
    return [n for n in range(1, MAX_ORDER + 1) if vocab**n < 2**63]


def ngram_probabilities(train: torch.Tensor, vocab: int, windows: torch.Tensor) -> dict:
    """{order: p (B, S)}: each order's probability of every target of the windows (B, S + 1)
    (tokens 0 … S−1 are the inputs, 1 … S the targets), counts from the ``train`` stream
    (module docstring: add-one unigram, Witten–Bell above it); orders longer than a window or
    the stream are left out."""
    counts = torch.bincount(train, minlength=vocab).double()
    target = windows[:, 1:]
    p = ((counts + 1) / (counts.sum() + vocab))[target]
    out = {1: p}
    for n in ngram_orders(vocab)[1:]:
        if n > min(windows.shape[1], len(train)):
            break  # no target of a window this short has n − 1 tokens of context
        keys, gram_counts = torch.unique(_grams(train, n, vocab), return_counts=True)
        hist, hist_counts = torch.unique(_grams(train[:-1], n - 1, vocab), return_counts=True)
        # c(h): n-grams starting with h = (n−1)-grams of the stream without its last token
        kinds_keys, kinds = torch.unique(keys // vocab, return_counts=True)
        query = _grams(windows, n, vocab)  # (B, S + 2 − n): targets n−2 … S−1 with full history
        c_hw = _lookup(keys, gram_counts, query)
        c_h = _lookup(hist, hist_counts, query // vocab)
        t_h = _lookup(kinds_keys, kinds, query // vocab)
        lower = p[:, n - 2 :]
        mixed = torch.where(c_h > 0, (c_hw + t_h * lower) / (c_h + t_h).clamp_min(1), lower)
        p = torch.cat([p[:, : n - 2], mixed], 1)
        out[n] = p
    return out


def text(task: Task, batches: list[torch.Tensor]) -> dict:
    """{baseline name: perplexity} of the unigram and the Witten–Bell n-grams (training-split
    counts) on the validation ``batches``."""
    x, y, _ = task.batch("val", torch.cat(batches))
    windows = torch.cat([x, y[:, -1:]], 1)
    probs = ngram_probabilities(task.x["train"], task.vocab_size, windows)
    return {NGRAM[n]: math.exp(-p.log().mean().item()) for n, p in probs.items()}


def of_task(task: Task, batch_args: dict) -> dict:
    """{"metric", "values" (name -> number), "best", "value"}: the task's trivial baselines on the
    validation batches ``batch_indices(task, "val", **batch_args)``; for a task with a noise
    floor also "floor" and "undecidable" (the floor above ``MSE_FRACTION`` × the best)."""
    batches = batch_indices(task, "val", **batch_args)
    regress = task.kind == "regression"
    values = regression(task, batches) if regress else text(task, batches)
    best = min(values, key=values.get)
    out = {"metric": "mse" if regress else "ppl", "values": values, "best": best}
    out["value"] = values[best]
    if regress:
        idx = torch.cat(batches)
        low = floor(task, task.batch("val", idx)[1].double(), idx)
        if low is not None:
            out["floor"] = low
            out["undecidable"] = low > MSE_FRACTION * values[best]
    return out


def judge_run(run: dict, baseline: dict) -> None:
    """Set a trained run's "baseline_ratio" (its metric over the best baseline's) and "learned"
    (``LEARNED_RULE``)."""
    metric = baseline["metric"]
    ratio = run["val"][metric] / baseline["value"] if baseline["value"] else math.inf
    run["baseline_ratio"] = ratio
    run["learned"] = ratio <= (MSE_FRACTION if metric == "mse" else PPL_FRACTION)
