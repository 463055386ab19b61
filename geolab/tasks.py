"""Seeded tasks for the trainer (docs/design.md §6): the E∆ synthetic suite, copy, two corpora.

Every task is a :class:`Task`: inputs, targets and (optional) loss masks per split, the loss it is
trained with and the metrics ``geolab.train.evaluate`` reports for it. Generators draw from a
``torch.Generator`` seeded by ``(seed, split)``, so a task is a pure function of its arguments:
``get_task("gyroscope", seed=42)`` is the same tensors on every machine, and changing ``n_train``
leaves the validation set unchanged.

Sequence tasks are next-step prediction: a trajectory of ``steps`` states s₁…s_T is split into
inputs s₁…s_{T−1} and targets s₂…s_T (the E∆ convention "inputs steps 1..127, targets 2..128").

| task | kind | shapes (per sample) | defaults (E∆ public code unless marked geolab's) |
|---|---|---|---|
| copy | tokens | (2m−1,) ids | m = 32, vocab 16, 8000/1000 (geolab's choices) |
| echo | regression | (127, 64) | unit key, noise σ = 1e-3, 128 steps, 900/100 |
| gyroscope | regression | (255, 16) | θ ~ U[0.1, 2.5], random plane, 256 steps, 9000/1000 |
| inversion | regression | (32, 64) | y = −x, x ~ N(0, I), 500 train (S = 32, 100 val: geolab's) |
| near_pi | regression | (127, 64) | plane (0,1), θ = 3.10, 128 steps, 1000/500 |
| near_pi_multi | regression | (127, 64) | all 32 planes (2i, 2i+1), θ = 3.14, 128 steps, 1000/500 |
| wikitext2 | tokens | windows of 128 | word level, 33,278 types with ``<eos>`` |
| shakespeare | tokens | windows of 256 | character level, 90/10 split |

Text tasks hold one token stream per split; a sample index is a window offset (random offsets in
training, non-overlapping windows in evaluation).
"""

import hashlib
import inspect
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from geolab import data
from geolab.choices import TASK_LINES
from geolab.config import check_seed, plain
from geolab.memory import check_allocation
from geolab.registry import FLAVORS

SPLIT_SEED = {"train": 0, "val": 1}


@dataclass
class Task:
    """A dataset with its loss and metrics.

    x, y, mask: dicts split -> tensor. Fixed-size tasks: x[s] (N, S, d_in) float or (N, S) int64,
    y[s] (N, S, d_out) or (N, S), mask[s] (N, S) bool or absent (loss on every position).
    Stream tasks (``stream=True``): x[s] is a 1-D int64 token stream and y, mask are empty.
    metrics: names ``evaluate`` reports, from "mse", "cos", "norm_dev", "loss", "acc", "ppl"
    (``evaluate`` adds "gamma" for models with E∆ gates). info: generator details per split (e.g. θ
    and the rotation plane per sample).
    """

    name: str
    kind: str  # "regression" | "tokens"
    description: str
    seq_len: int
    x: dict[str, torch.Tensor]
    y: dict[str, torch.Tensor] = field(default_factory=dict)
    mask: dict[str, torch.Tensor] = field(default_factory=dict)
    d_in: int | None = None
    d_out: int | None = None
    vocab_size: int | None = None
    stream: bool = False
    metrics: tuple[str, ...] = ("mse",)
    info: dict = field(default_factory=dict)

    @property
    def splits(self) -> tuple[str, ...]:
        return tuple(self.x)

    def model_fields(self) -> dict:
        """The GeoConfig fields this task fixes: seq_len and vocab_size or d_in/d_out."""
        if self.kind == "tokens":
            return {"seq_len": self.seq_len, "vocab_size": self.vocab_size}
        return {"seq_len": self.seq_len, "d_in": self.d_in, "d_out": self.d_out}

    def n_samples(self, split: str) -> int:
        """How many sample indices ``batch`` accepts (window offsets for stream tasks)."""
        self._check_split(split)
        if self.stream:
            return self.x[split].numel() - self.seq_len
        return self.x[split].shape[0]

    def fingerprint(self) -> str:
        """The SHA-256 (hex) of the task's data: every split's x, y and mask (name, dtype, shape
        and bytes) and a text task's vocabulary. A run records it and a resume compares it, so
        other data (an edited text file, a generator a code update changed) is never trained on
        without a word."""
        digest = hashlib.sha256()
        for part in ("x", "y", "mask"):
            for split, t in sorted(getattr(self, part).items()):
                t = t.detach().cpu().contiguous()
                digest.update(f"{part}/{split}/{t.dtype}/{tuple(t.shape)}".encode())
                digest.update(t.reshape(-1).view(torch.uint8).numpy())
        if "vocab" in self.info:
            digest.update(json.dumps(self.info["vocab"]).encode())
        return digest.hexdigest()

    def eval_index(self, split: str) -> torch.Tensor:
        """Sample indices of a full deterministic pass: all samples, or non-overlapping windows."""
        if self.stream:
            return torch.arange(0, self.n_samples(split), self.seq_len)
        return torch.arange(self.n_samples(split))

    def batch(self, split: str, idx: torch.Tensor):
        """(x, y, mask) for sample indices idx (B,); mask is None when every position counts."""
        self._check_split(split)
        if self.stream:
            windows = self.x[split][idx[:, None] + torch.arange(self.seq_len + 1)]
            return windows[:, :-1], windows[:, 1:], None
        mask = self.mask.get(split)
        return self.x[split][idx], self.y[split][idx], None if mask is None else mask[idx]

    def loss(self, out: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None = None):
        """Mean loss over the positions in mask (all positions when mask is None), float32.

        regression: MSE, mean over features of (out − y)², then over positions.
        tokens: cross-entropy of logits out (B, S, V) against ids y (B, S).
        """
        return masked_mean(self.position_loss(out, y), mask)

    def position_loss(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Per-position loss (B, S) in float32."""
        if self.kind == "regression":
            return (out.float() - y.float()).pow(2).mean(-1)
        return F.cross_entropy(out.float().flatten(0, 1), y.flatten(), reduction="none").view(
            y.shape
        )

    def _check_split(self, split: str) -> None:
        if split not in self.x:
            raise ValueError(f"task {self.name!r} has no split {split!r}; allowed: {self.splits}")


def masked_mean(values: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    if mask is None:
        return values.mean()
    return (values * mask).sum() / mask.sum()


def _generator(seed: int, split: str) -> torch.Generator:
    return torch.Generator().manual_seed(seed * 1000 + SPLIT_SEED[split])


def _unit(shape, g: torch.Generator) -> torch.Tensor:
    v = torch.randn(shape, generator=g, dtype=torch.float64)
    return v / v.norm(dim=-1, keepdim=True)


def _splits(seed: int, n_train: int, n_val: int, flavor: str, draw) -> dict:
    """``reference_draws`` for flavor "reference", else {} (geolab draws each split itself)."""
    if flavor not in FLAVORS:
        raise ValueError(f"flavor={flavor!r} is not allowed; allowed: {', '.join(FLAVORS)}")
    return reference_draws(seed, n_train, n_val, draw) if flavor == "reference" else {}


def reference_draws(seed: int, n_train: int, n_val: int, draw) -> dict:
    """The public E∆ generators' sampling: one numpy stream ``np.random.seed(seed)`` for both
    splits, ``draw(rs)`` once per trajectory, the first ``n_train`` for train, the rest for val.
    """
    rs = np.random.RandomState(seed)  # the legacy global stream np.random.seed(seed) sets up
    samples = [draw(rs) for _ in range(n_train + n_val)]
    return {"train": samples[:n_train], "val": samples[n_train:]}


def _positive(task: str, **values) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"task {task!r}: {name}={value!r} must be a positive integer")


def _finite(task: str, **values) -> None:
    for name, value in values.items():
        real = isinstance(value, int | float) and not isinstance(value, bool)
        if not real or not math.isfinite(value):
            raise ValueError(f"task {task!r}: {name}={value!r} must be a finite number")


def _check_size(task: str, n_train: int, n_val: int, shape: tuple, kept: int, transient: int):
    """Refuse, before drawing, a task whose samples cannot fit in memory: a lower bound of
    ``kept`` bytes per value of every sample (the tensors the task holds) plus ``transient``
    per value of the larger split (its float64 draft)."""
    values = math.prod(shape)
    need = (n_train + n_val) * values * kept + max(n_train, n_val) * values * transient
    size = " × ".join(map(str, shape))
    check_allocation(
        need,
        f"task {task!r} with n_train={n_train}, n_val={n_val} samples of {size} values",
        "lower n_train, n_val or the sample size",
    )


def _next_step(traj: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Trajectory (N, T, d) -> inputs steps 1..T−1, targets steps 2..T (float32)."""
    traj = traj.float()
    return traj[:, :-1].contiguous(), traj[:, 1:].contiguous()


def rotate_in_planes(
    v0: torch.Tensor, theta: torch.Tensor, planes: torch.Tensor, steps: int
) -> torch.Tensor:
    """Trajectory v_t = R^t v₀, t = 0..steps−1, R a rotation by θ in each plane (i, j).

    Closed form per plane: (v_i, v_j)_t = (c v_i − s v_j, s v_i + c v_j) with c, s = cos tθ,
    sin tθ, so no error accumulates over the steps. v0 (N, d), theta (N,), planes (N, P, 2)
    disjoint coordinate pairs -> (N, steps, d) in v0's dtype.
    """
    t = torch.arange(steps, dtype=v0.dtype)
    angle = t[None, :] * theta.to(v0.dtype)[:, None]  # (N, T)
    c, s = torch.cos(angle)[..., None], torch.sin(angle)[..., None]  # (N, T, 1)
    traj = v0[:, None, :].expand(-1, steps, -1).clone()
    i, j = planes[..., 0], planes[..., 1]  # (N, P)
    vi = torch.gather(v0, 1, i)[:, None, :]  # (N, 1, P)
    vj = torch.gather(v0, 1, j)[:, None, :]
    idx_i = i[:, None, :].expand(-1, steps, -1)
    idx_j = j[:, None, :].expand(-1, steps, -1)
    traj.scatter_(2, idx_i, c * vi - s * vj)
    traj.scatter_(2, idx_j, s * vi + c * vj)
    return traj


def _regression(name, x, y, dim, metrics=("mse", "norm_dev"), info=None) -> Task:
    return Task(
        name=name,
        kind="regression",
        description=TASK_LINES[name],
        seq_len=x["train"].shape[1],
        x=x,
        y=y,
        d_in=dim,
        d_out=dim,
        metrics=metrics,
        info=info or {},
    )


def copy(seed: int = 0, m: int = 32, vocab_size: int = 16, n_train: int = 8000, n_val: int = 1000):
    """MGT synthetic copy (Su & You 2026, experiments): a₁…a_m a₁…a_m, next-token prediction.

    Input is the sequence without its last token (2m−1 ids), the target is it shifted by one; the
    loss mask selects exactly the m targets of the second half (positions m−1 … 2m−2), which are
    predictable by copying. Sizes are geolab's choices (the paper gives none).
    """
    _positive("copy", m=m, vocab_size=vocab_size, n_train=n_train, n_val=n_val)
    _check_size("copy", n_train, n_val, (2 * m - 1,), kept=17, transient=24)  # int64 x, y; mask
    x, y, mask = {}, {}, {}
    for split, n in (("train", n_train), ("val", n_val)):
        a = torch.randint(vocab_size, (n, m), generator=_generator(seed, split))
        seq = torch.cat([a, a], dim=1)
        x[split], y[split] = seq[:, :-1].contiguous(), seq[:, 1:].contiguous()
        mask[split] = (torch.arange(2 * m - 1) >= m - 1).expand(n, -1).contiguous()
    return Task(
        name="copy",
        kind="tokens",
        description=TASK_LINES["copy"],
        seq_len=2 * m - 1,
        x=x,
        y=y,
        mask=mask,
        vocab_size=vocab_size,
        metrics=("loss", "acc"),
    )


def echo(
    seed: int = 0,
    dim: int = 64,
    steps: int = 128,
    noise: float = 1e-3,
    n_train: int = 900,
    n_val: int = 100,
    flavor: str = "geolab",
):
    """E∆ stability task (Shahmansoori 2026, experiments): a unit key k ∈ R^dim repeated, s_t = k +
    noise·ε_t.

    ε_t ~ N(0, I); inputs s₁…s_{T−1}, targets s₂…s_T; the ideal map is the identity on the key.
    flavor "reference" draws as the public E∆ generator does (``reference_draws``): per
    trajectory the key, then its noise, train trajectories first.
    """
    _positive("echo", dim=dim, steps=steps, n_train=n_train, n_val=n_val)
    _finite("echo", noise=noise)
    if steps < 2 or not noise >= 0:
        raise ValueError(f"task 'echo': steps={steps} must be >= 2 and noise={noise} finite >= 0")
    _check_size("echo", n_train, n_val, (steps, dim), kept=8, transient=16)

    def draw(rs):
        key = rs.randn(dim)
        key = key / np.linalg.norm(key)
        return key, key + noise * rs.randn(steps, dim)

    x, y, info = {}, {}, {}
    splits = _splits(seed, n_train, n_val, flavor, draw)
    for split, n in (("train", n_train), ("val", n_val)):
        if flavor == "reference":
            key, traj = (torch.from_numpy(np.stack(a)) for a in zip(*splits[split], strict=True))
        else:
            g = _generator(seed, split)
            key = _unit((n, dim), g)
            noise_t = torch.randn(n, steps, dim, generator=g, dtype=key.dtype)
            traj = key[:, None, :] + noise * noise_t
        x[split], y[split] = _next_step(traj)
        if not torch.isfinite(x[split]).all():
            raise ValueError(
                f"task 'echo': noise={noise:g} is not allowed; the noisy states overflow float32 "
                "(the models' dtype, |s| < 3.4e38): choose a far smaller noise"
            )
        info[split] = {"key": key.float()}
    return _regression("echo", x, y, dim, info=info)


def gyroscope(
    seed: int = 0,
    dim: int = 16,
    steps: int = 256,
    theta_min: float = 0.1,
    theta_max: float = 2.5,
    n_train: int = 9000,
    n_val: int = 1000,
    flavor: str = "geolab",
):
    """E∆ rotation task: v₀ unit in R^dim, θ ~ U[θ_min, θ_max], a random coordinate plane (i, j),
    v_{t+1} = R v_t with R the rotation by θ in that plane; next-step prediction.

    geolab draws the plane uniformly among the dim(dim−1)/2 pairs; flavor "reference" draws as
    the public E∆ generator does (``reference_draws``): i uniform in 0..dim−2, then j uniform in
    i+1..dim−1 (so pairs with a high i are likelier than among uniform pairs); per trajectory
    v₀, θ, i, j, train trajectories first.
    """
    _positive("gyroscope", dim=dim, steps=steps, n_train=n_train, n_val=n_val)
    _finite("gyroscope", theta_min=theta_min, theta_max=theta_max)
    if dim < 2 or steps < 2 or not 0 <= theta_min <= theta_max:
        raise ValueError(
            f"task 'gyroscope': need dim >= 2 (got {dim}), steps >= 2 (got {steps}) and "
            f"0 <= theta_min <= theta_max (got {theta_min}, {theta_max})"
        )
    _check_size("gyroscope", n_train, n_val, (steps, dim), kept=8, transient=8)

    def draw(rs):
        v0 = rs.randn(dim)
        v0 = v0 / np.linalg.norm(v0)
        theta = rs.uniform(theta_min, theta_max)
        i = rs.randint(0, dim - 1)
        return v0, theta, (i, rs.randint(i + 1, dim))

    x, y, info = {}, {}, {}
    splits = _splits(seed, n_train, n_val, flavor, draw)
    for split, n in (("train", n_train), ("val", n_val)):
        if flavor == "reference":
            v0, theta, planes = (
                torch.from_numpy(np.array(a)) for a in zip(*splits[split], strict=True)
            )
        else:
            g = _generator(seed, split)
            v0 = _unit((n, dim), g)
            theta = theta_min + (theta_max - theta_min) * torch.rand(n, generator=g, dtype=v0.dtype)
            planes = torch.rand(n, dim, generator=g).argsort(dim=1)[:, :2].sort(dim=1).values
        traj = rotate_in_planes(v0, theta, planes[:, None, :], steps)
        x[split], y[split] = _next_step(traj)
        info[split] = {"theta": theta.float(), "plane": planes}
    return _regression("gyroscope", x, y, dim, info=info)


def inversion(
    seed: int = 0, dim: int = 64, seq_len: int = 32, n_train: int = 500, n_val: int = 100
):
    """E∆ reflection diagnostic: y = −x per token, x ~ N(0, I_dim).

    Reports cosine alignment of prediction and target (E∆: 0.96) and the mean gate γ (E∆: γ → 0.05,
    the Householder branch). seq_len and n_val are geolab's choices.
    """
    _positive("inversion", dim=dim, seq_len=seq_len, n_train=n_train, n_val=n_val)
    _check_size("inversion", n_train, n_val, (seq_len, dim), kept=8, transient=0)
    x, y = {}, {}
    for split, n in (("train", n_train), ("val", n_val)):
        x[split] = torch.randn(n, seq_len, dim, generator=_generator(seed, split))
        y[split] = -x[split]
    return _regression("inversion", x, y, dim, metrics=("mse", "cos"))


def near_pi(
    seed: int = 0,
    mode: str = "single",
    theta: float | None = None,
    dim: int = 64,
    steps: int = 128,
    n_train: int = 1000,
    n_val: int = 500,
):
    """E∆ near-π rotation: v₀ unit in R^dim, rotated by θ per step.

    mode="single": plane (0, 1), θ = 3.10 by default; mode="multi": every plane (2i, 2i+1),
    θ = 3.14 by default. Close to π a Cayley rotation needs β → ∞; exactly π needs a reflection.
    """
    if mode not in ("single", "multi"):
        raise ValueError(f"task 'near_pi': mode={mode!r} is not allowed; allowed: single, multi")
    _positive("near_pi", dim=dim, steps=steps, n_train=n_train, n_val=n_val)
    if dim < 2 or steps < 2 or dim % 2 and mode == "multi":
        raise ValueError(
            f"task 'near_pi': need dim >= 2 (even for multi) and steps >= 2, got "
            f"dim={dim}, steps={steps}"
        )
    if theta is not None:
        _finite("near_pi", theta=theta)
    _check_size("near_pi", n_train, n_val, (steps, dim), kept=8, transient=8)
    theta = (3.10 if mode == "single" else 3.14) if theta is None else float(theta)
    pairs = torch.tensor([[0, 1]]) if mode == "single" else torch.arange(dim).view(-1, 2)
    x, y = {}, {}
    for split, n in (("train", n_train), ("val", n_val)):
        v0 = _unit((n, dim), _generator(seed, split))
        traj = rotate_in_planes(
            v0, torch.full((n,), theta, dtype=torch.float64), pairs.expand(n, -1, -1), steps
        )
        x[split], y[split] = _next_step(traj)
    name = "near_pi" if mode == "single" else "near_pi_multi"
    return _regression(name, x, y, dim, info={"theta": theta, "planes": pairs})


def near_pi_multi(seed: int = 0, **kwargs):
    return near_pi(seed, mode="multi", **kwargs)


def _text_task(name: str, corpus: data.Corpus, seq_len: int) -> Task:
    _positive(name, seq_len=seq_len)
    shortest = min(s.numel() for s in corpus.splits.values())
    if seq_len >= shortest:
        raise ValueError(
            f"task {name!r}: seq_len={seq_len} must be < the shortest split ({shortest} tokens)"
        )
    return Task(
        name=name,
        kind="tokens",
        description=TASK_LINES[name],
        seq_len=seq_len,
        x=dict(corpus.splits),
        vocab_size=len(corpus.vocab),
        stream=True,
        metrics=("loss", "ppl"),
        info={"vocab": corpus.vocab},
    )


def wikitext2(seed: int = 0, seq_len: int = 128, data_dir=None, cache_dir=None):
    """Word-level WikiText-2 (Merity et al. 2016): splits train / val / test as token streams.

    seed is unused (the corpus is fixed; the trainer's seed orders the windows).
    """
    return _text_task("wikitext2", data.load_wikitext2(data_dir, cache_dir), seq_len)


def shakespeare(seed: int = 0, seq_len: int = 256, data_dir=None, cache_dir=None):
    """Character-level tiny-shakespeare, first 90 % train, last 10 % val (nanoGPT). seed unused."""
    return _text_task("shakespeare", data.load_shakespeare(data_dir, cache_dir), seq_len)


TASKS: dict[str, Callable[..., Task]] = {
    "copy": copy,
    "echo": echo,
    "gyroscope": gyroscope,
    "inversion": inversion,
    "near_pi": near_pi,
    "near_pi_multi": near_pi_multi,
    "wikitext2": wikitext2,
    "shakespeare": shakespeare,
}


def get_task(name: str, seed: int = 0, flavor: str = "geolab", **overrides) -> Task:
    """Build task ``name`` with ``seed``; overrides change its sizes (e.g. n_train=64, steps=32).

    ``flavor="reference"`` draws gyroscope and echo as the public E∆ generators do; the other
    tasks have one generator for both flavors. Unknown names or override fields raise ValueError
    listing what is allowed.
    """
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; allowed: {', '.join(TASKS)}")
    seed = check_seed(seed, "seed")
    overrides = {k: plain(v) for k, v in overrides.items()}  # np.int64(64) is a count too
    fixed = ("seed", "mode") if name == "near_pi_multi" else ("seed",)
    builder = near_pi if name == "near_pi_multi" else TASKS[name]
    allowed = [p for p in inspect.signature(builder).parameters if p not in fixed]
    unknown = sorted(set(overrides) - set(allowed))
    if unknown:
        given = ", ".join(f"{k}={overrides[k]!r}" for k in unknown)  # as set, so a flag's named
        raise ValueError(f"task {name!r} has no option(s) {given}; allowed: {', '.join(allowed)}")
    if "flavor" in allowed:
        overrides["flavor"] = flavor
    elif flavor not in FLAVORS:
        raise ValueError(f"flavor={flavor!r} is not allowed; allowed: {', '.join(FLAVORS)}")
    return TASKS[name](seed, **overrides)
