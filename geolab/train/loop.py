"""The training loop: one loop for a laptop CPU, a GPU, and ``torchrun`` data parallelism.

See ``geolab.train`` for what ``train`` does, step by step.
"""

import json
import math
import os
import signal
import threading
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from geolab.config import GeoConfig
from geolab.device import pick_device
from geolab.memory import check_fits
from geolab.model import GeoTransformer, count_params, param_count
from geolab.revision import code_record, describe
from geolab.tasks import Task
from geolab.threads import use_threads
from geolab.train.checkpoint import (
    CKPT,
    CONFIG,
    METRICS,
    WriteFailed,
    append_line,
    atomic_write,
    check_finite,
    check_optimizer_settings,
    check_out_dir,
    check_space,
    check_state,
    load_checkpoint,
    read_history,
    read_run_config,
    remove_stale_tmp,
    save_checkpoint,
    set_rng_state,
)
from geolab.train.config import TrainConfig, lr_at
from geolab.train.evaluate import autocast, evaluate


class TrainingDiverged(RuntimeError):
    """Raised when the loss or the gradient norm becomes NaN or ±Inf."""


class TrainingInterrupted(KeyboardInterrupt):
    """Raised when SIGINT (Ctrl-C) or SIGTERM stopped ``train`` after a finished step, whose
    checkpoint was saved first: ``signum``, ``step``, ``checkpoint`` (the path of ckpt.pt)."""

    def __init__(self, signum: int, step: int, checkpoint: Path):
        self.signum, self.step, self.checkpoint = signum, step, checkpoint
        name = signal.Signals(signum).name
        super().__init__(
            f"{name} at step {step}: saved {str(checkpoint)!r}; resume with --resume "
            "(TrainConfig(resume=True))"
        )


class stop_signals:
    """Context: SIGINT and SIGTERM ask the loop to stop after the step in flight (``signum``
    holds the first one), so the checkpoint it saves is a consistent step boundary; a second
    signal raises KeyboardInterrupt at once. Installed only in the main thread (the only one
    Python delivers signals to); the previous handlers come back on exit."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, active: bool):
        self.active = active and threading.current_thread() is threading.main_thread()
        self.signum = None
        self._old = {}

    def _handle(self, signum, frame):
        if self.signum is not None:
            raise KeyboardInterrupt
        self.signum = signum

    def __enter__(self):
        if self.active:
            self._old = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        return self

    def __exit__(self, *exc):
        for s, old in self._old.items():
            signal.signal(s, old)
        return False


@dataclass
class TrainResult:
    """What ``train`` returns: the model, its final validation metrics and the per-step history."""

    model: nn.Module
    metrics: dict
    history: list[dict] = field(default_factory=list)
    out_dir: Path | None = None
    steps_per_s: float = 0.0  # optimizer steps per second, evaluation and checkpoints excluded
    trained_steps: int = 0  # steps this call ran (0 for a finished run resumed)


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


# TrainConfig fields a resume may change, applied and recorded in config.json: the run's length
# (the cosine schedule stretches from the checkpoint on), and what only shapes logs and files.
# Every other field (lr, min_lr, warmup, batch, seed, ...) would silently fork the trajectory.
RESUME_MAY_CHANGE = (
    "steps",
    "device",
    "compile",
    "compile_mode",
    "eval_every",
    "eval_batches",
    "ckpt_every",
    "threads",
)
RESUME_IGNORES = ("out_dir", "resume", "progress")


@dataclass
class Plan:
    """What ``prepare`` settled: the device, the run folder, the checkpoint to resume from (or
    None), the process's rank among ``world``, what a resume changes ({field: [old, new]}) and
    notes for the user (a stale folder reused, a setting changed), the task record the run
    trains on (``task_record``) and the code that runs (``revision.code_record``)."""

    device: torch.device
    out: Path | None
    saved: dict | None
    rank: int
    world: int
    changed: dict
    notes: list[str]
    config: dict | None = None  # a resumed run's config.json (None: missing, rewritten)
    task: dict = field(default_factory=dict)
    code: dict = field(default_factory=dict)
    code_changed: bool = False  # a resume runs other code than the checkpoint's


def prepare(model_cfg: GeoConfig, task: Task, tc: TrainConfig) -> Plan:
    """Every check a user's input can fail, before anything is built or written: the model
    against the task, the batch against the ranks, the memory the run needs, the run folder,
    and on resume the checkpoint and the settings it was written with. ValueError if not.
    Sets torch's CPU threads (``TrainConfig.threads``, else ``GEOLAB_THREADS``, else 1)."""
    use_threads(tc.threads)
    check_model_config(model_cfg, task)
    rank, world, local_rank = _dist_env()
    if tc.batch_size % world:
        raise ValueError(
            f"TrainConfig.batch_size={tc.batch_size} is not divisible by the "
            f"{world} ranks of this torchrun job"
        )
    device = pick_device(tc.device, local_rank)
    per = f" ({tc.batch_size // world} per process)" if world > 1 else ""
    shown = f"TrainConfig.batch_size={tc.batch_size}{per}"  # the command line names its flag
    check_fits(model_cfg, tc.batch_size // world, task.seq_len, device, True, shown)
    out = Path(tc.out_dir) if tc.out_dir is not None else None
    notes = check_out_dir(out, tc.resume)
    if out is not None and rank == 0:
        check_space(out, param_count(model_cfg))
    saved = load_checkpoint(out / CKPT) if tc.resume and (out / CKPT).exists() else None
    changed, config, code_changed = {}, None, False
    # only a run folder keeps the task record (hashing the data takes ≈ 1 s per GB)
    record = task_record(task) if out is not None else {}
    if tc.warmup > tc.steps:
        notes.append(
            f"TrainConfig.warmup={tc.warmup} is longer than TrainConfig.steps={tc.steps}: the "
            f"learning rate rises only to {lr_at(tc.steps - 1, tc):.3g}, "
            f"not TrainConfig.lr={tc.lr:g}"
        )
    if saved is not None:
        notes += same_model(saved["model_cfg"], model_cfg)
        if saved["world_size"] != world:
            raise ValueError(
                f"resume: the checkpoint was written by {saved['world_size']} rank(s), "
                f"this job has {world}; exact resumption needs the same count"
            )
        with torch.device("meta"):  # shapes only: nothing is allocated
            meta_model = GeoTransformer(model_cfg)
            meta_opt = torch.optim.AdamW(param_groups(meta_model, tc.weight_decay))
        check_state(saved, meta_model, meta_opt, world, out / CKPT)
        check_finite(saved, out / CKPT)
        check_optimizer_settings(saved, out / CKPT)
        config = read_run_config(out / CONFIG)
        if isinstance(saved.get("task"), dict):  # the checkpoint's own record decides
            check_same_task(saved["task"], record, out / CKPT, not task.stream)
        elif config is None:
            raise ValueError(
                f"resume: {str(out / CONFIG)!r} is missing or damaged and the checkpoint does "
                "not record the run's task and data, so a resume cannot check them; restore "
                f"{CONFIG}, or start a new run elsewhere"
            )
        if config is None:
            notes.append(
                f"{str(out / CONFIG)!r} is missing or damaged: it is written anew from the "
                "checkpoint, whose task and data this run matches"
            )
        else:
            check_same_task(config["task"], record, out / CONFIG, not task.stream)
        code_changed = record_notes(saved, config, notes)
        old_train, new_fields = with_new_fields(TrainConfig, saved["train_cfg"])
        notes += new_fields
        changed = resume_changes(old_train, tc, saved["step"])
        notes += [
            f"resume: TrainConfig.{k} {old!r} -> {new!r} from step {saved['step']} on "
            "(recorded in config.json)"
            for k, (old, new) in changed.items()
        ]
    return Plan(device, out, saved, rank, world, changed, notes, config, record, code_record(),
                code_changed)  # fmt: skip


def record_notes(saved: dict, config: dict | None, notes: list[str]) -> bool:
    """Append to ``notes`` what a resume cannot check or finds changed in the run's record (the
    checkpoint's, else config.json's): no data fingerprint kept, other code. True when the code
    differs from the checkpoint's."""
    config = config or {}
    if "data" not in (saved.get("task") or config.get("task") or {}):
        notes.append(
            "resume: the run recorded no fingerprint of its data (it was written before "
            "geolab kept one), so a change in the data cannot be seen; continuing"
        )
    code = saved.get("code") or config.get("code")
    if code == code_record():
        return False
    notes.append(code_note(code, saved["step"]))
    return True


def code_note(code: dict | None, step: int) -> str:
    """The note of a resume whose code differs from the checkpoint's record ``code`` (None:
    written before runs recorded it): it continues, and says how to get one run of one code."""
    if code is None:
        what = "the checkpoint records no geolab version or commit (it predates that record)"
    else:
        what = (
            f"the code changed since the checkpoint ({describe(code)} -> {describe(code_record())})"
        )
    return (
        f"resume: {what}: continuing from step {step} with the run's settings and data, the "
        "steps after it run this code (for a run of one code, start afresh in another --out)"
    )


def with_new_fields(cls, old: dict) -> tuple[dict, list[str]]:
    """``old``, a record of dataclass ``cls`` written by an earlier geolab, with the fields it
    lacks as ``cls`` fills them from the rest (their defaults), and a note naming them: a field
    a code update added is no setting the user changed, so a resume takes its default."""
    names = [f.name for f in fields(cls)]
    missing = [name for name in names if name not in old]
    if not missing:
        return old, []
    try:
        filled = asdict(cls(**{k: v for k, v in old.items() if k in names}))
    except (TypeError, ValueError):  # a value this geolab refuses: compared (and named) as is
        return old, []
    defaults = ", ".join(f"{name}={filled[name]!r}" for name in missing)
    note = (
        f"resume: the checkpoint predates {cls.__name__} field(s) {', '.join(missing)} (added "
        f"to geolab since); it resumes with the default(s) {defaults}"
    )
    return {**old, **{name: filled[name] for name in missing}}, [note]


def same_model(old: dict, model_cfg: GeoConfig) -> list[str]:
    """Notes of a resume whose model is the checkpoint's (fields added since take their
    defaults); ValueError naming the first field that differs."""
    old, notes = with_new_fields(GeoConfig, old)
    now = model_cfg.to_dict()
    for name, new in now.items():
        if _plain(old.get(name)) != _plain(new):
            raise ValueError(
                f"resume: GeoConfig.{name}={new!r} differs from the checkpoint's {name}="
                f"{old.get(name)!r}; a resumed run keeps its model (pass {old.get(name)!r}, or "
                "start a new run in another --out)"
            )
    gone = sorted(set(old) - set(now))
    if gone:
        notes.append(
            f"resume: the checkpoint's GeoConfig field(s) {', '.join(gone)} are no settings of "
            "this geolab; they are left out"
        )
    return notes


def task_record(task: Task) -> dict:
    """What config.json and the checkpoint record of the task a run trains on (and a resume must
    match): its name, window, the sizes of both splits and the fingerprint of its data
    (``Task.fingerprint``)."""
    return {
        "name": task.name,
        "seq_len": task.seq_len,
        "n_train": task.n_samples("train"),
        "n_val": task.n_samples("val"),
        "data": task.fingerprint(),
    }


def check_same_task(recorded: dict, now: dict, path: Path, sized: bool) -> None:
    """ValueError when a resume would train on another task, or other data, than the run did:
    ``now`` is this task's ``task_record``, ``recorded`` the run's (older runs lack n_val and
    data). Data that changed are refused, never trained on. ``sized``: the split sizes are
    settings (--n-train, --n-val of a synthetic task), named as such; a text task's sizes
    follow its data file."""
    _same_settings(recorded, now, path, ("name", "seq_len") + ("n_train", "n_val") * sized)
    if "data" in recorded and recorded["data"] != now["data"]:
        sizes = "".join(
            f", {key} {recorded[key]} -> {now[key]}"
            for key in ("n_train", "n_val")
            if key in recorded and recorded[key] != now[key]
        )
        raise ValueError(
            f"resume: the data of task {now['name']!r} changed since the checkpoint (sha256 "
            f"{recorded['data'][:12]}… -> {now['data'][:12]}…{sizes}; {str(path)!r}): the data "
            "file, a size setting or the code that draws the task differs; a resumed run never "
            "trains on other data, so nothing was trained: restore the run's data, or start a "
            "new run in another --out"
        )
    _same_settings(recorded, now, path, ("n_train", "n_val"))


def _same_settings(recorded: dict, now: dict, path: Path, keys: tuple) -> None:
    """ValueError naming the first task setting of ``keys`` the run recorded otherwise."""
    for key in keys:
        flag = "task" if key == "name" else key
        if key in recorded and recorded[key] != now[key]:
            raise ValueError(
                f"resume: {flag}={now[key]!r} differs from the run's {flag}={recorded[key]!r} "
                f"({str(path)!r}); a resumed run keeps its task and data (pass "
                f"{recorded[key]!r}, or start a new run elsewhere)"
            )


def resume_changes(old: dict, tc: TrainConfig, step: int) -> dict:
    """{field: [checkpoint's, now]} of the TrainConfig fields a resume changes; ValueError, naming
    both values, for a field it may not change or a run shorter than the checkpoint."""
    changed = {}
    for name, new in asdict(tc).items():
        was = old.get(name)
        if name in RESUME_IGNORES or _plain(was) == _plain(new):
            continue
        if name not in RESUME_MAY_CHANGE:
            raise ValueError(
                f"resume: TrainConfig.{name}={new!r} differs from the checkpoint's {name}={was!r}; "
                f"a resumed run keeps its {name} (pass {was!r}, or start a new run elsewhere)"
            )
        changed[name] = [was, new]
    if tc.steps < step:
        raise ValueError(
            f"resume: TrainConfig.steps={tc.steps} is not allowed; the checkpoint is already at "
            f"step {step} (choose steps >= {step})"
        )
    return changed


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def train(
    model_cfg: GeoConfig,
    task: Task,
    train_cfg: TrainConfig | None = None,
    callback=None,
    model: nn.Module | None = None,
    plan: Plan | None = None,
) -> TrainResult:
    """Train a fresh ``GeoTransformer(model_cfg)`` seeded by ``train_cfg.seed`` on ``task``.

    model: an existing ``GeoTransformer(model_cfg)`` to train instead (e.g. one probed at init).
    callback: called on rank 0 with each step's record. plan: ``prepare(model_cfg, task,
    train_cfg)`` when the caller has already run it (the command line, to report before
    training). Everything is validated before anything is built or written; see the module
    docstring for the details.
    """
    tc = train_cfg if train_cfg is not None else TrainConfig()
    plan = plan if plan is not None else prepare(model_cfg, task, tc)
    joined = plan.world > 1 and not dist.is_initialized()
    if joined:
        if plan.device.type == "cuda":
            torch.cuda.set_device(plan.device)
        dist.init_process_group("nccl" if plan.device.type == "cuda" else "gloo")
    try:
        return _run(model_cfg, task, tc, callback, model, plan)
    finally:
        if joined:
            dist.destroy_process_group()


def _run(model_cfg, task, tc, callback, model, plan: Plan) -> TrainResult:
    device, out, saved, rank, world = plan.device, plan.out, plan.saved, plan.rank, plan.world
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
    # A process group the caller set up runs DDP even with one rank (how tests/test_gpu.py
    # checks the DDP path on one GPU); without one, a single process trains the model plainly.
    if world > 1 or dist.is_initialized():
        ids = [device.index] if device.type == "cuda" else None
        # The reference flavor keeps tables its wrapper never reads (see GeoTransformer).
        unused = model_cfg.flavor == "reference"
        net = nn.parallel.DistributedDataParallel(
            raw, device_ids=ids, find_unused_parameters=unused
        )
    if tc.compile:
        raw.compile_layers(tc.compile_mode)
    lead = rank == 0
    log = None
    if lead and out is not None:
        out.mkdir(parents=True, exist_ok=True)
        remove_stale_tmp(out)
        meta = None
        if saved is None or plan.config is None:
            meta = {
                "task": plan.task,
                "code": plan.code if saved is None else saved.get("code"),
                "model": model_cfg.to_dict(),
                "train": asdict(tc),
                "world_size": world,
                "n_params": count_params(raw),
                "torch": torch.__version__,
            }
        if saved is not None and (plan.changed or plan.code_changed):  # applied, so recorded:
            meta = meta or plan.config  # the settings now and what changed when
            meta["train"] = asdict(tc)
            code = {"code": plan.code} if plan.code_changed else {}
            meta.setdefault("resumes", []).append({"step": saved["step"], **plan.changed, **code})
        if meta is not None:
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
    # With a run folder, Ctrl-C or SIGTERM saves the step just finished and stops (nothing to
    # save without one: then they interrupt as usual).
    stop = stop_signals(active=out is not None)
    try:
        with stop:
            for step in range(start, tc.steps):
                lr = lr_at(step, tc)
                for group in opt.param_groups:
                    group["lr"] = lr
                idx = torch.randint(n_train, (tc.batch_size,), generator=data_gen)
                idx = idx[rank * local : (rank + 1) * local]
                batch = task.batch("train", idx)
                x, y, mask = (None if t is None else t.to(device) for t in batch)
                with autocast(device, tc.bf16):
                    output = net(x)
                loss = task.loss(output, y, mask)
                aux = raw.aux_loss().float()
                opt.zero_grad(set_to_none=True)
                (loss + aux).backward()
                # max_norm=inf only measures: the scale factor clamps to exactly 1.
                gnorm = nn.utils.clip_grad_norm_(raw.parameters(), tc.clip or math.inf)
                stats = torch.stack([loss.detach(), aux.detach(), gnorm.float()]).cpu()
                stopping = stop.signum is not None
                if world > 1:
                    # the stop request rides along, so every rank stops after the same step
                    stats = torch.cat([stats, torch.tensor([float(stopping)])]).to(device)
                    dist.all_reduce(stats)
                    stats = (stats / world).cpu()
                    stopping = stats[3].item() > 0
                loss_v, aux_v, gnorm_v = stats[:3].tolist()
                if not all(map(math.isfinite, (loss_v, aux_v, gnorm_v))):
                    where = (
                        f"the last good checkpoint is {str(out / CKPT)!r} (step {last_ckpt})"
                        if last_ckpt is not None
                        else "no checkpoint was written"
                    )
                    raise TrainingDiverged(
                        f"non-finite training signal at step {step + 1}: loss={loss_v}, "
                        f"aux={aux_v}, grad_norm={gnorm_v}; stopped before the optimizer step; "
                        f"{where}. Lower the learning rate, keep clipping on, or check the "
                        "inputs for NaN/Inf."
                    )
                opt.step()
                done = step + 1
                stopping = stopping or (world == 1 and stop.signum is not None)
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
                        metrics = {"step": done, **validate(raw, task, tc, bar is not None)}
                        t_other += time.perf_counter() - t_eval
                        record.update({f"val_{k}": v for k, v in metrics.items() if k != "step"})
                        if bar is not None:
                            bar.write(summary(metrics))
                periodic = tc.ckpt_every and done % tc.ckpt_every == 0
                if out is not None and (done == tc.steps or periodic or stopping):
                    t_save = time.perf_counter()
                    check_weights(raw, done, out / CKPT, last_ckpt)
                    save_checkpoint(
                        out / CKPT, raw, opt, data_gen, done, model_cfg, tc, device, world, lead,
                        task=plan.task, code=plan.code,
                    )  # fmt: skip
                    last_ckpt = done
                    record["checkpoint"] = True
                    t_other += time.perf_counter() - t_save
                if lead:
                    history.append(record)
                    if log is not None:
                        append_line(log, json.dumps(record) + "\n", out / METRICS)
                    if bar is not None:
                        bar.set_postfix(loss=f"{loss_v:.4g}", lr=f"{lr:.2e}", refresh=False)
                        bar.update(1)
                    if callback is not None:
                        callback(record)
                if stopping and done < tc.steps:
                    raise TrainingInterrupted(stop.signum or signal.SIGTERM, done, out / CKPT)
    except WriteFailed as err:
        kept = (
            f"the checkpoint of step {last_ckpt} and the log are intact; free space (or fix "
            "the folder) and continue with --resume"
            if last_ckpt is not None
            else "no checkpoint was written yet; free space (or fix the folder) and rerun"
        )
        raise ValueError(f"{err}; training stopped: {kept}") from None
    finally:
        if log is not None:
            log.close()
        if bar is not None:
            bar.close()
    train_s = time.perf_counter() - t0 - t_other
    if not metrics and lead:  # a finished run resumed: its last evaluation, from metrics.jsonl
        metrics = last_evaluation(history)
    if world > 1:
        # Rank 0 evaluated and kept the history; every rank returns the same numbers, so code
        # running the same steps on each rank (geolab reproduce under torchrun) agrees.
        shared = [metrics, history]
        dist.broadcast_object_list(shared, src=0)
        metrics, history = shared
    raw.eval()
    trained = tc.steps - start
    return TrainResult(raw, metrics, history, out, trained / max(train_s, 1e-9), trained)


def check_weights(model: nn.Module, step: int, path: Path, last_ckpt: int | None) -> None:
    """TrainingDiverged, before a checkpoint is saved over ``path``, when the step left a weight
    NaN or ±Inf (a finite loss and gradient can still overflow the update): the checkpoint on
    disk stays the last good one."""
    for name, p in model.named_parameters():
        if not p.detach().isfinite().all():
            where = (
                f"the last good checkpoint is {str(path)!r} (step {last_ckpt})"
                if last_ckpt is not None
                else "no checkpoint was written"
            )
            raise TrainingDiverged(
                f"weight {name} is NaN or Inf after step {step}; not saved over the checkpoint; "
                f"{where}. Lower the learning rate or keep clipping on."
            )


def validation_batches(tc: TrainConfig) -> dict:
    """The batch arguments of ``evaluate`` (and ``batch_indices``) for ``tc``'s validation: a
    deterministic pass (geolab) or the reference's mean over random batches seeded by its seed."""
    if tc.flavor == "reference":
        return {"batch_size": tc.batch_size, "random_batches": tc.eval_batches, "seed": tc.seed}
    return {"batch_size": tc.batch_size, "max_batches": tc.eval_batches}


def validate(model: nn.Module, task: Task, tc: TrainConfig, progress: bool = False) -> dict:
    """The validation metrics ``tc`` asks for (``validation_batches``); ``progress`` shows a bar
    over the batches."""
    return evaluate(model, task, "val", bf16=tc.bf16, progress=progress, **validation_batches(tc))


def last_evaluation(history: list[dict]) -> dict:
    """The metrics of the last evaluation recorded in ``history`` ({} if none): the ``val_``
    fields of its row, with its step."""
    for row in reversed(history):
        vals = {k[4:]: v for k, v in row.items() if k.startswith("val_")}
        if vals:
            return {"step": row["step"], **vals}
    return {}


def summary(metrics: dict) -> str:
    return "  ".join(
        f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in metrics.items()
    )
