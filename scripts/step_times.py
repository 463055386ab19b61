"""Step time of every rule at a scale's sizes: one line per model, for scripts/gpu_check.sh.

    python3 scripts/step_times.py --scale paper --steps 20      # on the GPU, bf16 as the scale
    python3 scripts/step_times.py --scale tiny --steps 4        # the same path on a CPU
    python3 scripts/step_times.py --only "edelta_benchmarks geolab/gyroscope/edelta" \
        --modes eager,default,reduce-overhead                   # one model, three ways

Models: the E∆ table's five (both flavors) on gyroscope at ``edelta_benchmarks``' sizes, and the
MGT protocol's rules at ``ablation``'s (its depth, width, sequence length and batch). The text
models train on a random token stream of the corpus' stated vocabulary (``runs.VOCAB_SIZES``):
a step's time does not depend on which tokens it reads, and the corpus need not be there. A
line gives the median time of the steps after the first ``--warmup`` (allocation, kernel
selection), steps per second and the FLOP/s it sustains (6·(N + L·S·D) per token,
``plan.train_flops``).

``--modes`` times each model once per mode, one line each: ``eager``, or its layer step
compiled (``TrainConfig.compile``; ``geolab.compiling``) with inductor's ``default`` mode or
``reduce-overhead`` (CUDA graphs on top; on a CPU torch skips them). The compile itself falls in
the first ``--warmup`` steps, outside the median.
"""

import argparse
import statistics
import sys

import torch

from geolab.compiling import MODE_NAMES, compiled
from geolab.experiments import get_protocol
from geolab.experiments.edelta_benchmarks import FLAVORS, models_of
from geolab.experiments.plan import train_flops
from geolab.experiments.runs import VOCAB_SIZES, model_config
from geolab.model import count_params
from geolab.tasks import Task, get_task
from geolab.train import TrainConfig, train


def token_stream(settings: dict) -> Task:
    """A random token stream of the scale's text task's sizes (train and val splits)."""
    vocab = VOCAB_SIZES[settings["task"]]
    gen = torch.Generator().manual_seed(0)
    x = {
        s: torch.randint(vocab, (n,), generator=gen)
        for s, n in (("train", 200_000), ("val", 20_000))
    }
    return Task(
        settings["task"],
        "tokens",
        "random tokens",
        settings["seq_len"],
        x,
        vocab_size=vocab,
        stream=True,
        metrics=("loss", "ppl"),
    )


def models(scale: str):
    """(label, GeoConfig, task, settings) of every model timed at ``scale``."""
    edelta = get_protocol("edelta_benchmarks").SCALES[scale]
    for flavor in FLAVORS:
        task = get_task("gyroscope", seed=0, flavor=flavor, **edelta["task_sizes"]["gyroscope"])
        for key, (rule, changes) in models_of(edelta, flavor).items():
            cfg = model_config(edelta, task, rule, flavor=flavor, **changes)
            yield f"edelta_benchmarks {flavor}/gyroscope/{key}", cfg, task, edelta
    ablation = get_protocol("ablation").SCALES[scale]
    task = token_stream(ablation)
    for rule in ablation["rules"]:
        yield f"ablation {rule}", model_config(ablation, task, rule), task, ablation


MODES = ("eager", *MODE_NAMES)  # eager, default, reduce-overhead


def step_time(cfg, task, settings: dict, steps: int, warmup: int, mode: str = "eager") -> dict:
    train_cfg = settings["train"]
    tc = TrainConfig(
        steps=steps,
        batch_size=train_cfg["batch_size"],
        warmup=1,
        eval_every=0,
        eval_batches=1,
        ckpt_every=0,
        device=train_cfg.get("device", "cpu"),
        bf16=train_cfg.get("bf16", False),
        flavor=cfg.flavor,
        progress=False,
        compile=mode != "eager",
        compile_mode=MODE_NAMES.get(mode),
    )
    res = train(cfg, task, tc)
    at = [row["elapsed"] for row in res.history]
    step = statistics.median(b - a for a, b in zip(at[warmup:], at[warmup + 1 :], strict=False))
    flops = train_flops(count_params(res.model), cfg, 1, tc.batch_size)
    return {"step_s": step, "flops_per_s": flops / step, "n_params": count_params(res.model)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", choices=("tiny", "small", "paper"), default="paper")
    p.add_argument("--steps", type=int, default=20, help="steps per model (default 20)")
    p.add_argument("--warmup", type=int, default=5, help="first steps not timed (default 5)")
    p.add_argument(
        "--modes",
        default=None,
        help=f"comma-separated, each a line per model: {', '.join(MODES)} (default: eager, "
        "without a mode in the line)",
    )
    p.add_argument("--only", default=None, help="time only the model with this label")
    args = p.parse_args(argv)
    if args.steps < args.warmup + 2:
        p.error(
            f"--steps {args.steps} is not allowed; it must be >= --warmup + 2 = {args.warmup + 2}"
        )
    modes = ["eager"] if args.modes is None else args.modes.split(",")
    for mode in modes:
        if mode not in MODES:
            p.error(
                f"--modes {args.modes!r} is not allowed; each must be one of {', '.join(MODES)}"
            )
    chosen = list(models(args.scale))
    if args.only is not None:
        labels = [label for label, *_ in chosen]
        if args.only not in labels:
            p.error(f"--only {args.only!r} is not allowed; allowed: {', '.join(labels)}")
        chosen = [m for m in chosen if m[0] == args.only]
    failed = 0
    for (label, cfg, task, settings), mode in ((m, mode) for m in chosen for mode in modes):
        if args.modes is not None:
            label = f"{label} [{mode}]"
        if mode != "eager":  # each compiled mode from empty in-process caches
            torch._dynamo.reset()
            compiled.cache_clear()
        try:
            r = step_time(cfg, task, settings, args.steps, args.warmup, mode)
        except Exception as err:  # one mode failing (CUDA graphs) leaves the others' lines
            if args.modes is None:
                raise
            print(f"{label:<50} failed: {type(err).__name__}: {(str(err).splitlines() or [''])[0]}")
            failed = 1
            continue
        batch = settings["train"]["batch_size"]
        print(
            f"{label:<50} L={cfg.n_layer:<3} D={cfg.d_model:<4} S={task.seq_len:<4} B={batch:<3} "
            f"{r['n_params']:>11,} params  step {r['step_s'] * 1e3:8.2f} ms  "
            f"{1 / r['step_s']:7.1f} steps/s  {r['flops_per_s']:.3g} FLOP/s",
            flush=True,
        )
    return failed


if __name__ == "__main__":
    sys.exit(main())
