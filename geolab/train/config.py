"""``TrainConfig``: the optimisation settings, validated on construction, and the lr schedule.

Defaults are the E∆ protocol (docs/design.md §8): 2000 steps, batch 64, AdamW lr 1e-3 cosine to
1e-4 after 100 linear warm-up steps, weight decay 0.1, clip 1.0, seed 42.
"""

import math
import re
from dataclasses import dataclass, fields

from geolab.choices import MODES
from geolab.config import check_seed, finite_number, plain
from geolab.registry import FLAVORS
from geolab.threads import check_threads

REFERENCE_EVAL_BATCHES = 100  # the public E∆ trainer's final estimate_loss(…, eval_iters=100)
# AdamW moves each weight by about lr per step, so an lr above 10 only diverges (the protocols
# use 1e-3); far above it the first step overflows float32 inside the optimizer.
LR_MAX = 10.0
# The most optimizer steps a run may ask for: a billion is weeks at 1000 steps/s, far past any
# protocol here (paper scale: 64,000). A larger number is a typo, and a run asking for 10**30
# would train until it is killed instead of answering.
STEPS_MAX = 10**9


@dataclass
class TrainConfig:
    """Optimisation settings; defaults are the E∆ protocol of docs/design.md §8.

    batch_size is the global batch (split evenly across DDP ranks). eval_every / ckpt_every = 0
    mean "only at the end"; eval_batches None evaluates the whole validation split. device:
    "auto" | "cpu" | "cuda" | "cuda:N" | "mps". clip None disables clipping.

    flavor "reference" trains as the public E∆ code's continuous trainer does
    (docs/design.md §12): AdamW betas (0.9, 0.95) unless ``betas`` is given, a warm-up that starts
    at lr 0 (lr·s/warmup), and validation as the mean over ``eval_batches`` (default 100) random
    batches of ``batch_size`` drawn with replacement from a generator seeded by ``seed``.

    progress (default on) shows a tqdm bar of the steps and of each evaluation, which terminals
    and notebooks render; ``progress=False`` trains silently.

    compile: compile each layer's step (``geolab.compiling``); compile_mode None (inductor's
    default) or ``"reduce-overhead"`` (CUDA graphs on top, on a GPU), only with ``compile``.

    threads: torch's CPU threads in this process while it trains (``geolab.threads``); None
    takes ``GEOLAB_THREADS``, else 1, which measured fastest at the README's CPU sizes.
    """

    steps: int = 2000
    batch_size: int = 64
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup: int = 100
    weight_decay: float = 0.1
    betas: tuple[float, float] | None = None  # None: (0.9, 0.999); (0.9, 0.95) for "reference"
    clip: float | None = 1.0
    seed: int = 42
    device: str = "auto"
    compile: bool = False
    compile_mode: str | None = None
    bf16: bool = True
    eval_every: int = 200
    eval_batches: int | None = None
    ckpt_every: int = 100
    out_dir: str | None = None
    resume: bool = False
    progress: bool = True
    flavor: str = "geolab"
    threads: int | None = None

    def __post_init__(self):
        for f in fields(self):  # numpy numbers as Python's, so checks and JSON take them
            setattr(self, f.name, plain(getattr(self, f.name)))
        if self.flavor not in FLAVORS:
            _bad("flavor", self.flavor, f"allowed: {', '.join(FLAVORS)}")
        if self.betas is None:
            self.betas = (0.9, 0.95) if self.flavor == "reference" else (0.9, 0.999)
        check_int("steps", self.steps, low=1, high=STEPS_MAX)
        check_int("batch_size", self.batch_size, low=1)
        for name in ("warmup", "eval_every", "ckpt_every"):
            check_int(name, getattr(self, name), low=0)
        check_seed(self.seed, "TrainConfig.seed")
        if self.eval_batches is not None:
            check_int("eval_batches", self.eval_batches, low=1)
        if self.threads is not None:
            check_threads(self.threads, "TrainConfig.threads")
        elif self.flavor == "reference":
            self.eval_batches = REFERENCE_EVAL_BATCHES
        if not (finite_number(self.lr) and 0 < self.lr <= LR_MAX):
            _bad("lr", self.lr, f"must be a number in (0, {LR_MAX:g}]")
        if not (finite_number(self.min_lr) and self.min_lr >= 0):
            _bad("min_lr", self.min_lr, "must be a finite number >= 0")
        if self.min_lr > self.lr:  # the pair is wrong, so name both: either may be the typo
            raise ValueError(
                f"TrainConfig.lr={self.lr!r} with TrainConfig.min_lr={self.min_lr!r} is not "
                "allowed; the peak rate must be >= the rate the cosine ends at (raise the first "
                "or lower the second)"
            )
        if not (finite_number(self.weight_decay) and self.weight_decay >= 0):
            _bad("weight_decay", self.weight_decay, "must be a finite number >= 0")
        if self.clip is not None and not (finite_number(self.clip) and self.clip > 0):
            _bad("clip", self.clip, "must be a finite number > 0, or None for no clipping")
        if len(self.betas) != 2 or not all(finite_number(b) and 0 <= b < 1 for b in self.betas):
            _bad("betas", self.betas, "must be two numbers in [0, 1)")
        self.betas = tuple(float(b) for b in self.betas)
        if isinstance(self.out_dir, str) and not self.out_dir.strip():
            _bad("out_dir", self.out_dir, "name a folder (or None to write nothing)")
        if self.compile_mode not in MODES:
            allowed = "None (inductor's default) or 'reduce-overhead' (CUDA graphs)"
            _bad("compile_mode", self.compile_mode, f"allowed: {allowed}")
        if self.compile_mode is not None and not self.compile:
            _bad("compile_mode", self.compile_mode, "it needs compile=True (--compile)")
        if not isinstance(self.device, str) or not re.fullmatch(
            r"auto|cpu|mps|cuda(:\d+)?", self.device
        ):
            _bad("device", self.device, "allowed: auto, cpu, cuda, cuda:N, mps")


def _bad(name, value, allowed):
    raise ValueError(f"TrainConfig.{name}={value!r} is not allowed; {allowed}")


def check_int(name, value, low, high=None):
    """An integer in [low, high] (no upper bound for None); a bool is not one."""
    allowed = f"must be an integer >= {low}" + ("" if high is None else f" and <= {high:,}")
    if isinstance(value, bool) or not isinstance(value, int):
        _bad(name, value, allowed)
    if value < low or (high is not None and value > high):
        _bad(name, value, allowed)


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate of optimizer step ``step`` (0-based): linear warm-up, then cosine to min_lr.

    The warm-up reaches lr at its last step, lr·(s+1)/warmup; the reference flavor's starts at 0,
    lr·s/warmup, as the public E∆ trainer's does.
    """
    if step < cfg.warmup:
        return cfg.lr * (step + (cfg.flavor == "geolab")) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * progress))
