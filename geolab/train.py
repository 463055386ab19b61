"""Training engine (spec §7): one loop for a laptop CPU, a GPU, and ``torchrun`` data parallelism.

API (notebooks, experiments and outside scripts build on these names)::

    from geolab.train import TrainConfig, train, evaluate
    task = get_task("gyroscope", seed=42)
    cfg = GeoConfig(residual="edelta", n_layer=6, d_model=128, **task.model_fields())
    result = train(cfg, task, TrainConfig(steps=2000, out_dir="runs/gyro"), callback=print)
    result.metrics        # final validation metrics, e.g. {"step": 2000, "mse": ..., "gamma": ...}
    result.history        # one dict per optimizer step (the metrics.jsonl lines)
    result.model          # the trained GeoTransformer (unwrapped, on its training device)

``TrainConfig`` defaults are the E∆ protocol (spec §8): 2000 steps, batch 64, AdamW lr 1e-3
cosine to 1e-4 after 100 linear warm-up steps, weight decay 0.1, clip 1.0, seed 42.

``train(model_cfg, task, train_cfg=None, callback=None, model=None) -> TrainResult``
  * AdamW, decoupled weight decay on parameters with ≥ 2 dimensions only (weights, embeddings;
    not biases, norms, gates' scalars), as nanoGPT.
  * lr(s) = lr·(s+1)/warmup for s < warmup, then min_lr + ½(lr − min_lr)(1 + cos π·p),
    p = (s − warmup)/(steps − warmup); a pure function of the step, so the step *is* the
    scheduler state.
  * loss = task loss + ``model.aux_loss()`` (the E∆ gate regulariser of spec §3.5); gradients
    clipped to global norm ``clip``.
  * device "auto" picks cuda → mps → cpu; bf16 autocast on CUDA (``bf16=True``); optional
    ``torch.compile``; gradient checkpointing is ``GeoConfig.grad_checkpoint`` (the model does it).
  * Under ``torchrun`` (WORLD_SIZE > 1) it joins the process group (NCCL on GPU, gloo on CPU) and
    wraps the model in DDP. ``batch_size`` is the *global* batch: every rank draws the same global
    batch indices from the seeded data generator and takes its slice, so a run on N ranks follows
    the single-process run with the same batch up to float rounding. Rank 0 logs, evaluates and
    writes files; ``callback`` runs on rank 0.
  * ``out_dir`` receives ``config.json``, ``metrics.jsonl`` (one JSON object per step; evaluation
    steps add the validation metrics) and ``ckpt.pt`` (every ``ckpt_every`` steps and at the end,
    written atomically, with the model and train configs). ``resume=True`` continues from
    ``ckpt.pt`` exactly: model, optimizer, step, the data generator and every rank's RNG states
    are restored, so on a CPU an interrupted and resumed run is bit-identical to an
    uninterrupted one. Resuming needs the same model config and rank count.
  * NaN/Inf guard: a non-finite loss or gradient norm stops training *before* the optimizer step
    with :class:`TrainingDiverged`, naming the step and the last good checkpoint, which is left
    untouched.
  * ``callback(record)`` gets each step's dict — step, steps, loss (the task loss, averaged over
    ranks), aux (the regulariser), lr, grad_norm (before clipping), elapsed (s), plus
    ``val_<metric>`` on evaluation steps — for a marimo progress bar or a live plot.
    ``progress=True`` shows a tqdm bar (the command line turns it on).
  * ``TrainResult``: model, metrics (the last evaluation, rank 0; {} on other ranks), history,
    out_dir, steps_per_s (optimizer steps per second, evaluation and checkpoints excluded).

``evaluate(model, task, split="val", batch_size=64, max_batches=None) -> dict``: a deterministic
pass over the split (all samples, or non-overlapping windows for text) reporting the task's
metrics — "mse" (regression), "loss"/"ppl"/"acc" (tokens), "cos" (cosine alignment, inversion),
"norm_dev" (norm deviation between inputs and outputs over the first 100 positions) — and
"gamma", the mean E∆ gate γ, for models that have one.

Every ``torch.load`` here uses ``weights_only=True``.
"""

import argparse
import json
import math
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from geolab.config import GeoConfig
from geolab.metrics import cosine_alignment, norm_deviation
from geolab.model import GeoTransformer, count_params
from geolab.tasks import Task, get_task

CKPT = "ckpt.pt"
METRICS = "metrics.jsonl"
CONFIG = "config.json"
NORM_DEV_STEPS = 100  # the E∆ protocol's "norm deviation over 100 steps" (spec §8)


class TrainingDiverged(RuntimeError):
    """Raised when the loss or the gradient norm becomes NaN or ±Inf."""


@dataclass
class TrainConfig:
    """Optimisation settings; defaults are the E∆ protocol of spec §8.

    batch_size is the global batch (split evenly across DDP ranks). eval_every / ckpt_every = 0
    mean "only at the end"; eval_batches None evaluates the whole validation split. device:
    "auto" | "cpu" | "cuda" | "cuda:N" | "mps". clip None disables clipping.
    """

    steps: int = 2000
    batch_size: int = 64
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup: int = 100
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.999)
    clip: float | None = 1.0
    seed: int = 42
    device: str = "auto"
    compile: bool = False
    bf16: bool = True
    eval_every: int = 200
    eval_batches: int | None = None
    ckpt_every: int = 500
    out_dir: str | None = None
    resume: bool = False
    progress: bool = False

    def __post_init__(self):
        for name in ("steps", "batch_size"):
            _check_int(name, getattr(self, name), low=1)
        for name in ("warmup", "eval_every", "ckpt_every", "seed"):
            _check_int(name, getattr(self, name), low=0)
        if self.eval_batches is not None:
            _check_int("eval_batches", self.eval_batches, low=1)
        if not (_finite(self.lr) and self.lr > 0):
            _bad("lr", self.lr, "must be a finite number > 0")
        if not (_finite(self.min_lr) and 0 <= self.min_lr <= self.lr):
            _bad("min_lr", self.min_lr, f"must lie in [0, lr={self.lr}]")
        if not (_finite(self.weight_decay) and self.weight_decay >= 0):
            _bad("weight_decay", self.weight_decay, "must be a finite number >= 0")
        if self.clip is not None and not (_finite(self.clip) and self.clip > 0):
            _bad("clip", self.clip, "must be a finite number > 0, or None for no clipping")
        if len(self.betas) != 2 or not all(_finite(b) and 0 <= b < 1 for b in self.betas):
            _bad("betas", self.betas, "must be two numbers in [0, 1)")
        self.betas = tuple(float(b) for b in self.betas)
        if not isinstance(self.device, str) or not re.fullmatch(
            r"auto|cpu|mps|cuda(:\d+)?", self.device
        ):
            _bad("device", self.device, "allowed: auto, cpu, cuda, cuda:N, mps")


def _bad(name, value, allowed):
    raise ValueError(f"TrainConfig.{name}={value!r} is not allowed; {allowed}")


def _finite(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        _bad(name, value, f"must be an integer >= {low}")


@dataclass
class TrainResult:
    """What ``train`` returns: the model, its final validation metrics and the per-step history."""

    model: nn.Module
    metrics: dict
    history: list[dict] = field(default_factory=list)
    out_dir: Path | None = None
    steps_per_s: float = 0.0  # optimizer steps per second, evaluation and checkpoints excluded


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate of optimizer step ``step`` (0-based): linear warm-up, then cosine to min_lr."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * progress))


def pick_device(name: str = "auto", local_rank: int = 0) -> torch.device:
    """ "auto": cuda (this rank's GPU) → mps → cpu; otherwise the named device, if present."""
    mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", local_rank)
        return torch.device("mps" if mps else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"TrainConfig.device={name!r}: CUDA is not available on this machine")
    if device.type == "mps" and not mps:
        raise ValueError(f"TrainConfig.device={name!r}: MPS is not available on this machine")
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", local_rank)
    return device


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """AdamW groups: decay on tensors with ≥ 2 dims (matrices, embeddings), none on the rest."""
    params = [p for p in model.parameters() if p.requires_grad]
    return [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]


def check_model_config(model_cfg: GeoConfig, task: Task) -> None:
    """The model must read and write what the task feeds it; ValueError naming the field if not."""
    if task.kind == "tokens":
        if model_cfg.vocab_size != task.vocab_size:
            raise ValueError(
                f"GeoConfig.vocab_size={model_cfg.vocab_size!r} does not fit task "
                f"{task.name!r} (vocab_size={task.vocab_size})"
            )
    elif (model_cfg.d_in, model_cfg.d_out) != (task.d_in, task.d_out):
        raise ValueError(
            f"GeoConfig.d_in/d_out=({model_cfg.d_in}, {model_cfg.d_out}) do not fit "
            f"task {task.name!r} (d_in={task.d_in}, d_out={task.d_out})"
        )
    if model_cfg.pos == "learned" and model_cfg.seq_len < task.seq_len:
        raise ValueError(
            f"GeoConfig.seq_len={model_cfg.seq_len} is shorter than task "
            f"{task.name!r}'s sequences ({task.seq_len})"
        )


def _autocast(device: torch.device, bf16: bool):
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
    _check_int("batch_size", batch_size, low=1)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    sums = dict.fromkeys(("loss", "n", "acc", "cos", "norm_dev", "nd_n", "gamma", "g_n"), 0.0)
    batches = task.eval_index(split).split(batch_size)
    for idx in batches[:max_batches]:
        x, y, mask = (None if t is None else t.to(device) for t in task.batch(split, idx))
        with _autocast(device, bf16):
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


def _dist_env() -> tuple[int, int, int]:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    return int(os.environ.get("RANK", "0")), world, int(os.environ.get("LOCAL_RANK", "0"))


def _check_out_dir(out: Path | None, resume: bool) -> None:
    """Refuse to mix runs: a fresh run needs an empty or new directory, a resume needs ckpt.pt."""
    if out is None:
        if resume:
            raise ValueError("TrainConfig.resume=True needs out_dir (where ckpt.pt lives)")
        return
    if out.exists() and not out.is_dir():
        raise ValueError(f"TrainConfig.out_dir={str(out)!r} exists and is not a directory")
    if resume and not (out / CKPT).is_file():
        raise ValueError(f"TrainConfig.resume=True but {str(out / CKPT)!r} does not exist")
    if not resume and any((out / name).exists() for name in (CKPT, METRICS, CONFIG)):
        raise ValueError(
            f"TrainConfig.out_dir={str(out)!r} already holds a run; pass "
            "resume=True (--resume) to continue it or choose another directory"
        )


def _atomic_write(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    write(tmp)
    os.replace(tmp, path)


def _rng_state(device: torch.device) -> dict:
    state = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _set_rng_state(state: dict, device: torch.device) -> None:
    torch.set_rng_state(state["cpu"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def load_checkpoint(path, map_location="cpu") -> dict:
    """A geolab checkpoint as a dict (step, model, optimizer, data_rng, rng, model_cfg, ...)."""
    return torch.load(path, map_location=map_location, weights_only=True)


def _read_history(path: Path, upto: int) -> list[dict]:
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [row for row in rows if row["step"] <= upto]


def train(
    model_cfg: GeoConfig,
    task: Task,
    train_cfg: TrainConfig | None = None,
    callback=None,
    model: nn.Module | None = None,
) -> TrainResult:
    """Train a fresh ``GeoTransformer(model_cfg)`` seeded by ``train_cfg.seed`` on ``task``.

    model: an existing ``GeoTransformer(model_cfg)`` to train instead (e.g. one probed at init).
    callback: called on rank 0 with each step's record. Everything is validated before anything
    is written; see the module docstring for the details.
    """
    tc = train_cfg if train_cfg is not None else TrainConfig()
    check_model_config(model_cfg, task)
    rank, world, local_rank = _dist_env()
    if tc.batch_size % world:
        raise ValueError(
            f"TrainConfig.batch_size={tc.batch_size} is not divisible by the "
            f"{world} ranks of this torchrun job"
        )
    device = pick_device(tc.device, local_rank)
    out = Path(tc.out_dir) if tc.out_dir is not None else None
    _check_out_dir(out, tc.resume)
    saved = load_checkpoint(out / CKPT) if tc.resume else None
    if saved is not None and saved["model_cfg"] != model_cfg.to_dict():
        diff = {k: v for k, v in model_cfg.to_dict().items() if saved["model_cfg"].get(k) != v}
        raise ValueError(f"resume: the model config differs from the checkpoint's in {diff}")
    if saved is not None and saved["world_size"] != world:
        raise ValueError(
            f"resume: the checkpoint was written by {saved['world_size']} rank(s), "
            f"this job has {world}; exact resumption needs the same count"
        )
    joined = world > 1 and not dist.is_initialized()
    if joined:
        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    try:
        return _run(model_cfg, task, tc, callback, model, device, out, saved, rank, world)
    finally:
        if joined:
            dist.destroy_process_group()


def _run(model_cfg, task, tc, callback, model, device, out, saved, rank, world) -> TrainResult:
    torch.manual_seed(tc.seed)
    raw = (model if model is not None else GeoTransformer(model_cfg)).to(device)
    torch.manual_seed(tc.seed + rank)  # dropout masks differ across ranks
    opt = torch.optim.AdamW(param_groups(raw, tc.weight_decay), lr=tc.lr, betas=tc.betas)
    data_gen = torch.Generator().manual_seed(tc.seed)
    start, history = 0, []
    if saved is not None:
        raw.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        data_gen.set_state(saved["data_rng"])
        _set_rng_state(saved["rng"][rank], device)
        start = saved["step"]
        history = _read_history(out / METRICS, start) if rank == 0 else []
    net = raw
    if world > 1:
        ids = [device.index] if device.type == "cuda" else None
        net = nn.parallel.DistributedDataParallel(raw, device_ids=ids)
    if tc.compile:
        net = torch.compile(net)
    lead = rank == 0
    log = None
    if lead and out is not None:
        out.mkdir(parents=True, exist_ok=True)
        if saved is None:
            meta = {
                "task": {
                    "name": task.name,
                    "seq_len": task.seq_len,
                    "n_train": task.n_samples("train"),
                },
                "model": model_cfg.to_dict(),
                "train": asdict(tc),
                "world_size": world,
                "n_params": count_params(raw),
                "torch": torch.__version__,
            }
            _atomic_write(out / CONFIG, lambda p: p.write_text(json.dumps(meta, indent=2) + "\n"))
        lines = "".join(json.dumps(row) + "\n" for row in history)
        _atomic_write(out / METRICS, lambda p: p.write_text(lines))
        log = open(out / METRICS, "a")  # closed in the finally below
    bar = None
    if lead and tc.progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=tc.steps, initial=start, desc=f"{task.name}/{model_cfg.residual}")
    local = tc.batch_size // world
    n_train = task.n_samples("train")
    metrics, last_ckpt = {}, (start if saved is not None else None)
    t0, t_other = time.perf_counter(), 0.0  # t_other: evaluation and checkpoint time
    raw.train()
    try:
        for step in range(start, tc.steps):
            lr = lr_at(step, tc)
            for group in opt.param_groups:
                group["lr"] = lr
            idx = torch.randint(n_train, (tc.batch_size,), generator=data_gen)
            idx = idx[rank * local : (rank + 1) * local]
            x, y, mask = (None if t is None else t.to(device) for t in task.batch("train", idx))
            with _autocast(device, tc.bf16):
                output = net(x)
            loss = task.loss(output, y, mask)
            aux = raw.aux_loss().float()
            opt.zero_grad(set_to_none=True)
            (loss + aux).backward()
            # max_norm=inf only measures: the scale factor clamps to exactly 1.
            gnorm = nn.utils.clip_grad_norm_(raw.parameters(), tc.clip or math.inf)
            stats = torch.stack([loss.detach(), aux.detach(), gnorm.float()]).cpu()
            if world > 1:
                stats = stats.to(device)
                dist.all_reduce(stats)
                stats = (stats / world).cpu()
            loss_v, aux_v, gnorm_v = stats.tolist()
            if not all(map(math.isfinite, (loss_v, aux_v, gnorm_v))):
                where = (
                    f"the last good checkpoint is {str(out / CKPT)!r} (step {last_ckpt})"
                    if last_ckpt is not None
                    else "no checkpoint was written"
                )
                raise TrainingDiverged(
                    f"non-finite training signal at step {step + 1}: loss={loss_v}, aux={aux_v}, "
                    f"grad_norm={gnorm_v}; stopped before the optimizer step; {where}. Lower "
                    "the learning rate, keep clipping on, or check the inputs for NaN/Inf."
                )
            opt.step()
            done = step + 1
            record = {
                "step": done,
                "steps": tc.steps,
                "loss": loss_v,
                "aux": aux_v,
                "lr": lr,
                "grad_norm": gnorm_v,
                "elapsed": time.perf_counter() - t0,
            }
            if done == tc.steps or (tc.eval_every and done % tc.eval_every == 0):
                if lead:
                    t_eval = time.perf_counter()
                    metrics = {
                        "step": done,
                        **evaluate(raw, task, "val", tc.batch_size, tc.eval_batches, tc.bf16),
                    }
                    t_other += time.perf_counter() - t_eval
                    record.update({f"val_{k}": v for k, v in metrics.items() if k != "step"})
                    if bar is not None:
                        bar.write(_summary(metrics))
            if done == tc.steps or (tc.ckpt_every and done % tc.ckpt_every == 0):
                if out is not None:
                    t_save = time.perf_counter()
                    _save(out / CKPT, raw, opt, data_gen, done, model_cfg, tc, device, world, lead)
                    last_ckpt = done
                    t_other += time.perf_counter() - t_save
            if lead:
                history.append(record)
                if log is not None:
                    log.write(json.dumps(record) + "\n")
                    log.flush()
                if bar is not None:
                    bar.set_postfix(loss=f"{loss_v:.4g}", lr=f"{lr:.2e}", refresh=False)
                    bar.update(1)
                if callback is not None:
                    callback(record)
    finally:
        if log is not None:
            log.close()
        if bar is not None:
            bar.close()
    train_s = time.perf_counter() - t0 - t_other
    raw.eval()
    return TrainResult(raw, metrics, history, out, (tc.steps - start) / max(train_s, 1e-9))


def _summary(metrics: dict) -> str:
    return "  ".join(
        f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in metrics.items()
    )


def _save(path, raw, opt, data_gen, step, model_cfg, tc, device, world, lead) -> None:
    rng = [_rng_state(device)]
    if world > 1:
        rng = [None] * world
        dist.all_gather_object(rng, {k: v.cpu() for k, v in _rng_state(device).items()})
    if not lead:
        return
    state = {
        "step": step,
        "model": raw.state_dict(),
        "optimizer": opt.state_dict(),
        "data_rng": data_gen.get_state(),
        "rng": rng,
        "model_cfg": model_cfg.to_dict(),
        "train_cfg": asdict(tc),
        "world_size": world,
    }
    _atomic_write(path, lambda p: torch.save(state, p))


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    d = TrainConfig()
    parser.add_argument("--task", required=True, help="task name (see `geolab tasks`)")
    parser.add_argument("--residual", default="preln", help="residual rule (see `geolab info`)")
    parser.add_argument("--layers", type=int, default=6, help="transformer layers (default 6)")
    parser.add_argument("--d-model", type=int, default=128, help="model width (default 128)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    parser.add_argument("--steps", type=int, default=d.steps, help=f"optimizer steps ({d.steps})")
    parser.add_argument("--batch-size", type=int, default=d.batch_size, help="global batch")
    parser.add_argument("--lr", type=float, default=d.lr, help=f"peak learning rate ({d.lr})")
    parser.add_argument("--min-lr", type=float, default=d.min_lr, help="final cosine lr")
    parser.add_argument("--warmup", type=int, default=d.warmup, help="linear warm-up steps")
    parser.add_argument("--seed", type=int, default=d.seed, help="seeds data, init and batches")
    parser.add_argument("--device", default=d.device, help="auto | cpu | cuda[:N] | mps")
    parser.add_argument("--out", default=None, help="run directory (default runs/TASK-RULE-sSEED)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out exactly")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--grad-checkpoint", action="store_true", help="recompute sublayers")
    parser.add_argument("--eval-every", type=int, default=d.eval_every, help="0: only at the end")
    parser.add_argument("--eval-batches", type=int, default=None, help="cap validation batches")
    parser.add_argument("--ckpt-every", type=int, default=d.ckpt_every, help="0: only at the end")
    parser.add_argument("--seq-len", type=int, default=None, help="window (text, inversion)")
    parser.add_argument("--n-train", type=int, default=None, help="training samples (synthetic)")
    parser.add_argument("--n-val", type=int, default=None, help="validation samples (synthetic)")
    parser.add_argument("--data-dir", default=None, help="local text data (else $GEOLAB_DATA)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run_train_cli(args: argparse.Namespace) -> int:
    """``geolab train``: validate everything, then train, print progress and the final metrics."""
    from geolab.rules import RESIDUALS

    lead = int(os.environ.get("RANK", "0")) == 0
    try:
        if args.residual not in RESIDUALS:
            raise ValueError(
                f"--residual {args.residual!r} is not allowed; allowed: {', '.join(RESIDUALS)}"
            )
        out = args.out or os.path.join("runs", f"{args.task}-{args.residual}-s{args.seed}")
        tc = TrainConfig(
            steps=args.steps,
            batch_size=args.batch_size,
            lr=args.lr,
            min_lr=args.min_lr,
            warmup=args.warmup,
            seed=args.seed,
            device=args.device,
            compile=args.compile,
            eval_every=args.eval_every,
            eval_batches=args.eval_batches,
            ckpt_every=args.ckpt_every,
            out_dir=out,
            resume=args.resume,
            progress=not args.no_progress,
        )
        options = {k: getattr(args, k) for k in ("seq_len", "n_train", "n_val", "data_dir")}
        options = {k: v for k, v in options.items() if v is not None}
        task = get_task(args.task, seed=args.seed, **options)
        cfg = GeoConfig(
            residual=args.residual,
            n_layer=args.layers,
            d_model=args.d_model,
            n_head=args.heads,
            grad_checkpoint=args.grad_checkpoint,
            **task.model_fields(),
        )
        if lead:
            n = count_params(GeoTransformer(cfg))
            print(
                f"geolab train: {task.name} with {cfg.residual}, L={cfg.n_layer}, "
                f"D={cfg.d_model}, {n:,} parameters -> {out}"
            )
        result = train(cfg, task, tc)
    except (ValueError, FileNotFoundError) as err:
        print(f"geolab train: error: {err}", file=sys.stderr)
        return 2
    except TrainingDiverged as err:
        print(f"geolab train: diverged: {err}", file=sys.stderr)
        return 1
    if lead:
        print(f"done: {_summary(result.metrics)}  ({result.steps_per_s:.3g} steps/s)")
    return 0


def add_train_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``geolab train``."""
    parser = subparsers.add_parser("train", help="train a model on a task (CPU, GPU, torchrun)")
    add_train_arguments(parser)
    parser.set_defaults(func=run_train_cli)


def main(argv: list[str] | None = None) -> int:
    """``python -m geolab.train ...`` — the same as ``geolab train``, handy under torchrun."""
    parser = argparse.ArgumentParser(prog="geolab train", description="train a geolab model")
    add_train_arguments(parser)
    return run_train_cli(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
