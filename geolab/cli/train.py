"""``geolab train`` (and ``python -m geolab.train``): validate, train, print the result."""

import argparse
import os
import signal
import sys
from contextlib import nullcontext

from geolab.cli.args import (
    add_compile_mode_argument,
    add_model_arguments,
    add_threads_argument,
    compile_option,
    geo_config,
)
from geolab.cli.errors import flag_names, run
from geolab.lock import hold
from geolab.terms import TERMS


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    from geolab.train.config import TrainConfig

    d = TrainConfig()
    parser.add_argument("--task", required=True, help="task name (see `geolab tasks`)")
    add_model_arguments(parser, layers=6)
    parser.add_argument("--steps", type=int, default=d.steps, help=f"optimizer steps ({d.steps})")
    parser.add_argument("--batch-size", type=int, default=d.batch_size, help="global batch")
    parser.add_argument("--lr", type=float, default=d.lr, help=f"peak learning rate ({d.lr})")
    parser.add_argument(
        "--min-lr",
        type=float,
        default=None,
        help=f"final cosine lr ({d.min_lr}; --lr/10 when --lr is below that)",
    )
    parser.add_argument(
        "--warmup", type=int, default=None, help=f"linear warm-up steps ({d.warmup}; <= --steps)"
    )
    parser.add_argument("--seed", type=int, default=d.seed, help="seeds data, init and batches")
    parser.add_argument("--device", default=d.device, help="auto | cpu | cuda[:N] | mps")
    add_threads_argument(parser)
    parser.add_argument("--out", default=None, help="run directory (default runs/TASK-RULE-sSEED)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out exactly")
    parser.add_argument(
        "--compile",
        action="store_true",
        help="compile one layer's step (inductor, reused by every layer; the first compile takes "
        "tens of seconds on a CPU, a later run reads it from the cache folder)",
    )
    add_compile_mode_argument(parser)
    parser.add_argument("--grad-checkpoint", action="store_true", help="recompute sublayers")
    parser.add_argument("--eval-every", type=int, default=d.eval_every, help="0: only at the end")
    parser.add_argument("--eval-batches", type=int, default=None, help="cap validation batches")
    parser.add_argument("--ckpt-every", type=int, default=d.ckpt_every, help="0: only at the end")
    parser.add_argument("--seq-len", type=int, default=None, help="window (text, inversion)")
    parser.add_argument("--n-train", type=int, default=None, help="training samples (synthetic)")
    parser.add_argument("--n-val", type=int, default=None, help="validation samples (synthetic)")
    parser.add_argument(
        "--data-dir",
        default=None,
        help="local text data (else $GEOLAB_DATA, else data/ of the checkout: tiny-shakespeare)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run_train_cli(args: argparse.Namespace) -> int:
    """``geolab train``: check everything (``prepare``), then train and print the final metrics.

    Ctrl-C at any moment ends in one line and exit 130 (``errors.run`` prints it): in the loop
    the step in flight finishes and is saved (``TrainingInterrupted``); before the loop, while
    torch loads or the data is read, the line says that nothing was trained.
    """
    try:
        return _checked_and_trained(args)
    except KeyboardInterrupt as stop:
        if type(stop) is not KeyboardInterrupt or str(stop):  # a line of its own already
            raise
        raise KeyboardInterrupt(
            "interrupted before training started: nothing was trained, nothing written"
        ) from None


def _checked_and_trained(args: argparse.Namespace) -> int:
    # torch and the model load here, after the parser: `geolab --help` and the other commands
    # never pay for them
    from geolab.data import bundled_dir
    from geolab.rules import RESIDUALS
    from geolab.tasks import TASKS, get_task
    from geolab.train.config import TrainConfig

    if args.task not in TASKS:
        raise ValueError(f"--task {args.task!r} is not allowed; allowed: {', '.join(TASKS)}")
    if args.residual not in RESIDUALS:
        raise ValueError(
            f"--residual {args.residual!r} is not allowed; allowed: {', '.join(RESIDUALS)}"
        )
    if args.warmup is not None and args.warmup > args.steps:
        raise ValueError(
            f"--warmup {args.warmup} is not allowed; it must be <= --steps {args.steps} "
            "(a longer warm-up never reaches --lr)"
        )
    default_out = os.path.join("runs", f"{args.task}-{args.residual}-s{args.seed}")
    out = default_out if args.out is None else args.out
    tc = TrainConfig(
        steps=args.steps,
        batch_size=args.batch_size,
        lr=args.lr,
        min_lr=final_lr(args.lr, args.min_lr),
        warmup=TrainConfig.warmup if args.warmup is None else args.warmup,
        seed=args.seed,
        device=args.device,
        compile=args.compile,
        compile_mode=compile_option(args),
        eval_every=args.eval_every,
        eval_batches=args.eval_batches,
        ckpt_every=args.ckpt_every,
        out_dir=out,
        resume=args.resume,
        progress=not args.no_progress,
        flavor=args.flavor,
        threads=args.threads,
    )
    options = {k: getattr(args, k) for k in ("seq_len", "n_train", "n_val", "data_dir")}
    if args.data_dir is None and not os.environ.get("GEOLAB_DATA"):
        options["data_dir"] = bundled_dir(args.task)  # tiny-shakespeare ships in data/
    options = {k: v for k, v in options.items() if v is not None}
    task = get_task(args.task, seed=args.seed, flavor=args.flavor, **options)
    cfg = geo_config(args, grad_checkpoint=args.grad_checkpoint, **task.model_fields())
    # One writer per run folder (rank 0 writes under torchrun): the lock is taken before the
    # folder is judged, so two commands never both find it free and both write it.
    lead = int(os.environ.get("RANK", "0")) == 0
    lock = hold(out, "TrainConfig.out_dir", lambda text: note(flag_names(text, args)))
    with lock if lead else nullcontext():
        return _train(args, cfg, task, tc, out)


def final_lr(lr: float, min_lr: float | None) -> float:
    """The rate the cosine ends at: ``--min-lr`` as given, else its default, or ``lr / 10`` when
    ``lr`` is below the default (a small ``--lr`` alone is a valid schedule, not an error)."""
    from geolab.train.config import TrainConfig

    if min_lr is not None:
        return min_lr
    if lr < TrainConfig.min_lr:
        note(f"--lr {lr:g} is below --min-lr's default {TrainConfig.min_lr:g}: the cosine ends at "
             f"--lr/10 = {lr / 10:g} (pass --min-lr to choose)")  # fmt: skip
        return lr / 10
    return TrainConfig.min_lr


def note(text: str) -> None:
    print(f"geolab train: note: {text}", file=sys.stderr)


class KeptStdout:
    """``sys.stdout`` while ``geolab train`` runs: when its reader leaves (``geolab train … |
    head -1`` closes the pipe), the next write would raise BrokenPipeError and abandon the run.
    Instead standard output goes to the null device from then on, stderr says so once, and the
    run trains on and saves its checkpoints; its numbers are in metrics.jsonl."""

    def __init__(self, stream):
        self.stream, self.gone = stream, False

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            self._reader_left()
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._reader_left()

    def _reader_left(self) -> None:
        os.dup2(os.open(os.devnull, os.O_WRONLY), self.stream.fileno())  # the rest: nowhere
        if not self.gone:
            self.gone = True
            note("standard output was closed (the reader of the pipe left); training goes on, "
                 "saves its checkpoints, and its numbers are in metrics.jsonl")  # fmt: skip

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def _train(args, cfg, task, tc, out: str) -> int:
    stdout, sys.stdout = sys.stdout, KeptStdout(sys.stdout)
    try:
        return _train_kept(args, cfg, task, tc, out)
    finally:
        sys.stdout = stdout


def _train_kept(args, cfg, task, tc, out: str) -> int:
    import torch

    from geolab.model import param_count
    from geolab.train.loop import (
        TrainingDiverged,
        TrainingInterrupted,
        prepare,
        summary,
        train,
    )

    plan = prepare(cfg, task, tc)
    lead = plan.rank == 0
    if lead:
        for line in plan.notes:
            note(flag_names(line, args))
        threads = torch.get_num_threads()  # prepare set it (geolab.threads)
        print(
            f"geolab train: {task.name} with {cfg.residual}, L={cfg.n_layer}, "
            f"D={cfg.d_model}, {param_count(cfg):,} parameters, on {plan.device} with "
            f"{threads} CPU thread{'s' * (threads > 1)} -> {out}"
        )
    try:
        result = train(cfg, task, tc, plan=plan)
    except TrainingDiverged as err:
        print(f"geolab train: diverged: {err}", file=sys.stderr)
        return 1
    except TrainingInterrupted as stop:
        if lead:
            print(
                f"geolab train: {signal.Signals(stop.signum).name} at step {stop.step} of "
                f"{tc.steps}: saved {str(stop.checkpoint)!r}; continue with the same command "
                "and --resume",
                file=sys.stderr,
            )
        return 128 + stop.signum
    except KeyboardInterrupt:  # not the loop's own stop: before its first step, or a second
        raise KeyboardInterrupt(f"interrupted; {_kept(out)}") from None
    if lead and result.trained_steps == 0:
        print(f"done: {out} had already finished its {tc.steps} steps; nothing to train")
        print(f"last evaluation: {summary(result.metrics)}")
    elif lead:
        print(f"done: {summary(result.metrics)}  ({result.steps_per_s:.3g} steps/s)")
    if lead:
        print(legend(result.metrics))
    return 0


def legend(metrics: dict) -> str:
    """One line naming the printed columns in words (``geolab.terms``, the notebooks' glossary,
    for each it defines)."""
    named = [f"{k} = {TERMS[k]}" for k in metrics if k in TERMS]
    return "columns (validation set): " + " ".join(named)


def _kept(out: str) -> str:
    """What a Ctrl-C outside the loop's own handling (before its first step, or a second one
    while a checkpoint is saved, which is written whole or not at all) leaves in ``out``."""
    ckpt = os.path.join(out, "ckpt.pt")
    if os.path.isfile(ckpt):
        return f"{ckpt!r} holds the last saved step; continue with the same command and --resume"
    return "no checkpoint was saved, so nothing of this run is kept"


def add_train_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``geolab train``."""
    # its flags read TrainConfig's defaults (geolab.train loads torch): added on first use
    subparsers.add_parser(
        "train", help="train a model on a task (CPU, GPU, torchrun)", fill=_train_parser
    )


def _train_parser(parser: argparse.ArgumentParser) -> None:
    add_train_arguments(parser)
    parser.set_defaults(func=run_train_cli)


def main(argv: list[str] | None = None) -> int:
    """``python -m geolab.train ...`` — the same as ``geolab train``, handy under torchrun."""
    parser = argparse.ArgumentParser(prog="geolab train", description="train a geolab model")
    add_train_arguments(parser)
    return run("geolab train", run_train_cli, parser.parse_args(argv))
