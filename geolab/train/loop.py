"""The training loop: one loop for a laptop CPU, a GPU, and ``torchrun`` data parallelism.

See ``geolab.train`` for what ``train`` does, step by step.
"""

import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from geolab.config import GeoConfig
from geolab.device import pick_device
from geolab.model import GeoTransformer, count_params
from geolab.tasks import Task
from geolab.train.checkpoint import (
    CKPT,
    CONFIG,
    METRICS,
    atomic_write,
    check_out_dir,
    load_checkpoint,
    read_history,
    save_checkpoint,
    set_rng_state,
)
from geolab.train.config import TrainConfig, lr_at
from geolab.train.evaluate import autocast, evaluate


class TrainingDiverged(RuntimeError):
    """Raised when the loss or the gradient norm becomes NaN or ±Inf."""


@dataclass
class TrainResult:
    """What ``train`` returns: the model, its final validation metrics and the per-step history."""

    model: nn.Module
    metrics: dict
    history: list[dict] = field(default_factory=list)
    out_dir: Path | None = None
    steps_per_s: float = 0.0  # optimizer steps per second, evaluation and checkpoints excluded


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


def _dist_env() -> tuple[int, int, int]:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    return int(os.environ.get("RANK", "0")), world, int(os.environ.get("LOCAL_RANK", "0"))


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
    check_out_dir(out, tc.resume)
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
        set_rng_state(saved["rng"][rank], device)
        start = saved["step"]
        history = read_history(out / METRICS, start) if rank == 0 else []
    net = raw
    if world > 1:
        ids = [device.index] if device.type == "cuda" else None
        # The reference flavor keeps tables its wrapper never reads (see GeoTransformer).
        unused = model_cfg.flavor == "reference"
        net = nn.parallel.DistributedDataParallel(
            raw, device_ids=ids, find_unused_parameters=unused
        )
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
            atomic_write(out / CONFIG, lambda p: p.write_text(json.dumps(meta, indent=2) + "\n"))
        lines = "".join(json.dumps(row) + "\n" for row in history)
        atomic_write(out / METRICS, lambda p: p.write_text(lines))
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
            with autocast(device, tc.bf16):
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
                    metrics = {"step": done, **validate(raw, task, tc)}
                    t_other += time.perf_counter() - t_eval
                    record.update({f"val_{k}": v for k, v in metrics.items() if k != "step"})
                    if bar is not None:
                        bar.write(summary(metrics))
            if done == tc.steps or (tc.ckpt_every and done % tc.ckpt_every == 0):
                if out is not None:
                    t_save = time.perf_counter()
                    save_checkpoint(
                        out / CKPT, raw, opt, data_gen, done, model_cfg, tc, device, world, lead
                    )
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


def validate(model: nn.Module, task: Task, tc: TrainConfig) -> dict:
    """The validation metrics ``tc`` asks for: a deterministic pass (geolab) or the reference's
    mean over random batches."""
    if tc.flavor == "reference":
        return evaluate(
            model,
            task,
            "val",
            tc.batch_size,
            bf16=tc.bf16,
            random_batches=tc.eval_batches,
            seed=tc.seed,
        )
    return evaluate(model, task, "val", tc.batch_size, tc.eval_batches, tc.bf16)


def summary(metrics: dict) -> str:
    return "  ".join(
        f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in metrics.items()
    )
