"""The fixed setups the assignment checks, the probes and the notebooks share: A3's stack, A4's
config, sublayer, copy task, short training run and temporary rule registration.

The checks (``a3``, ``a4``) build their references from these and the probes (run where the
student's code runs) build the student's side from the same ones, so both see the same model.
"""

import threading
from contextlib import contextmanager

import torch

from geolab.config import GeoConfig
from geolab.model import GeoTransformer
from geolab.rules import RESIDUALS, Rule, register, unregister
from geolab.tasks import get_task
from geolab.train import TrainConfig

REFERENCE = "mgt_ddl"  # the rule A4's MyRule reimplements


_GLOBAL_RNG = threading.Lock()


@contextmanager
def seeded(seed: int):
    """torch's global generator seeded with ``seed`` for the block, which no other thread seeds
    or draws from meanwhile (a model draws its init from it; the grader builds references and
    A4's models in several threads)."""
    with _GLOBAL_RNG:
        torch.manual_seed(seed)
        yield


def make_stack(residual: str, depth: int, seed: int = 0, width: int = 32, tokens: int = 16):
    """An attention-only stack (``mlp=False``: with ``noskip`` it is Dong et al.'s pure
    attention) at random init, and a random input (2, tokens, width). Returns (model, x)."""
    cfg = GeoConfig(
        residual=residual,
        n_layer=depth,
        d_model=width,
        n_head=4,
        seq_len=tokens,
        d_in=width,
        d_out=width,
        mlp=False,
    )
    with seeded(seed):
        model = GeoTransformer(cfg).eval()
    x = torch.randn(2, tokens, width, generator=torch.Generator().manual_seed(seed))
    return model, x


@contextmanager
def register_rule(name: str, rule_cls: type):
    """Make ``rule_cls`` available as ``GeoConfig(residual=name)`` inside the block; removed on
    exit, also when the block raises. ``name`` must not shadow a geolab rule."""
    if not isinstance(rule_cls, type) or not issubclass(rule_cls, Rule):
        raise ValueError(
            f"rule_cls={rule_cls!r} is not allowed; it must subclass geolab.rules.Rule"
        )
    if not isinstance(name, str) or not name or name in RESIDUALS:
        raise ValueError(
            f"name={name!r} is not allowed; use a new name, not one of {list(RESIDUALS)}"
        )
    register(name)(rule_cls)
    try:
        yield name
    finally:
        unregister(name)


def copy_task(seed: int = 0):
    """The small copy task of the training check and the notebook: m = 4 symbols of 8."""
    return get_task("copy", seed=seed, m=4, vocab_size=8, n_train=512, n_val=64)


def train_config(steps: int = 50, seed: int = 0) -> TrainConfig:
    """A short CPU run: batch 32, lr 3e-3 after 5 warm-up steps, evaluation at the end."""
    return TrainConfig(
        steps=steps, batch_size=32, lr=3e-3, warmup=5, eval_every=0, ckpt_every=0,
        device="cpu", bf16=False, seed=seed, progress=False,
    )  # fmt: skip


def trained_loss(rule_cls: type, seed: int) -> float:
    """Validation loss after 50 steps of the geolab trainer on the copy task, for a 2-layer
    model (d = 32) built on ``rule_cls``, registered under a name of its own for the run (so
    runs in parallel threads do not meet in the registry)."""
    from geolab.train import train

    task = copy_task(seed)
    with register_rule(f"student_rule_{id(rule_cls):x}", rule_cls) as name:
        cfg = GeoConfig(residual=name, n_layer=2, d_model=32, n_head=4, **task.model_fields())
        if hasattr(rule_cls, "prefetch"):  # a rule answered from a sandbox: no call while seeded
            rule_cls.prefetch(cfg, cfg.n_layer * (2 if cfg.mlp else 1))
        with seeded(seed):
            model = GeoTransformer(cfg)
        return float(train(cfg, task, train_config(50, seed), model=model).metrics["loss"])


def rule_config(**changes) -> GeoConfig:
    """The small config every MyRule check builds its rule from (``changes`` override it)."""
    base = dict(residual=REFERENCE, n_layer=2, d_model=16, n_head=2, seq_len=6, d_in=16, d_out=16)
    return GeoConfig(**{**base, **changes})


def sublayer(width: int, seed: int):
    """A fixed nonlinear per-token map standing in for attention or the MLP."""
    W = torch.randn(width, width, generator=torch.Generator().manual_seed(seed)) / width**0.5
    return lambda h: torch.tanh(h @ W)
