"""Training engine (docs/design.md §7): one loop for a laptop CPU, a GPU, and ``torchrun`` DDP.

API (notebooks, experiments and outside scripts build on these names)::

    from geolab.train import TrainConfig, train, evaluate
    task = get_task("gyroscope", seed=42)
    cfg = GeoConfig(residual="edelta", n_layer=6, d_model=128, **task.model_fields())
    result = train(cfg, task, TrainConfig(steps=2000, out_dir="runs/gyro"), callback=print)
    result.metrics        # final validation metrics, e.g. {"step": 2000, "mse": ..., "gamma": ...}
    result.history        # one dict per optimizer step (the metrics.jsonl lines)
    result.model          # the trained GeoTransformer (unwrapped, on its training device)

``TrainConfig`` defaults are the E∆ protocol (docs/design.md §8): 2000 steps, batch 64, AdamW lr
1e-3 cosine to 1e-4 after 100 linear warm-up steps, weight decay 0.1, clip 1.0, seed 42.

``train(model_cfg, task, train_cfg=None, callback=None, model=None, plan=None) -> TrainResult``
  * AdamW, decoupled weight decay on parameters with ≥ 2 dimensions only (weights, embeddings;
    not biases, norms, gates' scalars), as nanoGPT.
  * lr(s) = lr·(s+1)/warmup for s < warmup, then min_lr + ½(lr − min_lr)(1 + cos π·p),
    p = (s − warmup)/(steps − warmup); a pure function of the step, so the step *is* the
    scheduler state.
  * loss = task loss + ``model.aux_loss()`` (the E∆ gate regulariser of docs/design.md §3.5);
    gradients clipped to global norm ``clip``.
  * device "auto" picks cuda → mps → cpu; bf16 autocast on CUDA (``bf16=True``); optional
    per-layer ``torch.compile`` (``compile=True``: one layer's step compiled once, reused by
    every layer, inductor's cache in geolab's cache folder; ``geolab.compiling``); gradient
    checkpointing is ``GeoConfig.grad_checkpoint`` (the model does it).
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
    uninterrupted one. Resuming needs the same model config, rank count and optimisation
    settings; ``steps`` and the logging/checkpoint/device settings may change, and each change
    is recorded in ``config.json`` under "resumes". A folder without ``ckpt.pt`` left by a run
    that stopped before its first checkpoint is reused (``resume=True`` restarts it at step 0);
    one whose log shows a checkpoint that is gone is refused. The checkpoint records the task
    (name, window, both split sizes, ``Task.fingerprint`` of its data) and the code
    (``geolab.revision.code_record``) so a resume checks them even without ``config.json``:
    other data are refused, other code continues with a note, a config field added since takes
    its default with a note. A checkpoint holding NaN/Inf (weights, moments, or AdamW settings)
    is neither saved nor resumed. A write that fails (full disk)
    raises ValueError and leaves the last checkpoint and the log whole.
  * ``prepare(model_cfg, task, train_cfg) -> Plan`` runs every check a user's input can fail
    (model vs task, batch vs ranks, the memory estimate of ``geolab.memory``, the run folder, the
    checkpoint) before anything is built or written; ``train`` runs it first, or takes its
    ``plan=``.
  * NaN/Inf guard: a non-finite loss or gradient norm stops training *before* the optimizer step
    with :class:`TrainingDiverged`, naming the step and the last good checkpoint, which is left
    untouched.
  * ``callback(record)`` gets each step's dict — step, steps, loss (the task loss, averaged over
    ranks), aux (the regulariser), lr, grad_norm (before clipping), elapsed (s), plus
    ``val_<metric>`` on evaluation steps — for a marimo progress bar or a live plot.
    ``progress`` (default True) shows a tqdm bar of the steps and one of each evaluation;
    ``progress=False`` trains silently.
  * Ctrl-C (SIGINT) or SIGTERM with an ``out_dir``: the step in flight finishes, its checkpoint
    is saved (atomically) and :class:`TrainingInterrupted` (a KeyboardInterrupt) is raised,
    naming the step and ``ckpt.pt``; ``resume=True`` continues from it exactly. A second signal
    interrupts at once; ``geolab train`` prints one line and exits 128 + the signal number
    (130 for Ctrl-C, 143 for SIGTERM).
  * ``TrainResult``: model, metrics (the last evaluation, rank 0; {} on other ranks), history,
    out_dir, steps_per_s (optimizer steps per second, evaluation and checkpoints excluded),
    trained_steps (steps this call ran; a finished run resumed runs none and returns the metrics
    of its last evaluation, read from ``metrics.jsonl``).

``evaluate(model, task, split="val", batch_size=64, max_batches=None) -> dict``: a deterministic
pass over the split (all samples, or non-overlapping windows for text) reporting the task's
metrics — "mse" (regression), "loss"/"ppl"/"acc" (tokens), "cos" (cosine alignment, inversion),
"norm_dev" (norm deviation between inputs and outputs over the first 100 positions) — and
"gamma", the mean E∆ gate γ, for models that have one.

Modules: ``config`` (TrainConfig, the lr schedule), ``loop`` (train), ``evaluate``,
``checkpoint`` (run directories). The command line is ``geolab train`` (``geolab.cli.train``);
under ``torchrun`` it is ``-m geolab train``. Every ``torch.load`` uses
``weights_only=True``.
"""

from geolab.train.checkpoint import load_checkpoint
from geolab.train.config import TrainConfig, lr_at
from geolab.train.evaluate import evaluate
from geolab.train.loop import (
    Plan,
    TrainingDiverged,
    TrainingInterrupted,
    TrainResult,
    param_groups,
    prepare,
    train,
)

__all__ = [
    "Plan",
    "TrainConfig",
    "TrainResult",
    "TrainingDiverged",
    "TrainingInterrupted",
    "evaluate",
    "load_checkpoint",
    "lr_at",
    "param_groups",
    "prepare",
    "train",
]
