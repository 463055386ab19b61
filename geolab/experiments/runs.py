"""Seeded training runs of a protocol: its model and train configs, one run, one run per rule.

A scale's settings dict gives ``n_layer``, ``d_model``, ``n_head``, ``grad_checkpoint``, the
``train`` dict of ``TrainConfig`` fields and the ``rules``; these helpers turn it into configs and
JSON-ready numbers. Every trained run records its validation curve and its convergence state
(``geolab.experiments.convergence``); ``judge_runs`` adds its ratio to the task's best trivial
baseline and whether it learned (``geolab.experiments.baselines``).
"""

import functools
import multiprocessing
import os
import sys
import time

import torch

from geolab.config import GeoConfig
from geolab.data import bundled_dir
from geolab.experiments import baselines, convergence
from geolab.experiments.verdicts import fmt
from geolab.model import count_params, match_params
from geolab.tasks import get_task
from geolab.train import TrainConfig, train
from geolab.train.loop import validation_batches


def data_dir(settings: dict):
    """Where text corpora come from: the settings' data_dir, else $GEOLAB_DATA, else the copy the
    repository ships in data/ (tiny-shakespeare only), else the hub."""
    given = settings.get("data_dir") or os.environ.get("GEOLAB_DATA")
    return given or bundled_dir(settings["task"])


def text_task(settings: dict):
    """The scale's text task (``task`` at ``seq_len``, corpora from :func:`data_dir`)."""
    return get_task(settings["task"], seq_len=settings["seq_len"], data_dir=data_dir(settings))


def train_config(settings: dict, seed: int, **changes):
    """The protocol's ``TrainConfig`` for one seed: settings["train"] plus ``changes``.

    No checkpoints or metric files (the protocol writes one JSON), a validation point every
    ``convergence.eval_every(steps)`` steps (≈ 20 over training) unless the scale sets
    eval_every, float32 (bf16 only where a scale asks for it on CUDA), and a progress bar of
    the run only where a person watches (:func:`watched`).
    """
    merged = {**settings["train"], **changes}
    every = convergence.eval_every(merged.get("steps", TrainConfig.steps))
    base = {"eval_every": every, "ckpt_every": 0, "bf16": False, "device": "cpu"}
    base["progress"] = watched()
    return TrainConfig(seed=seed, **{**base, **merged})


def watched() -> bool:
    """Whether a person watches this process's runs: standard error is a terminal and this is
    not a worker process of :func:`parallel_map` (whose bars would overwrite each other; each
    finished run logs its line instead)."""
    return sys.stderr.isatty() and multiprocessing.parent_process() is None


def fit(cfg, task, settings: dict, seed: int, log=None, model=None, callback=None):
    """Train ``GeoTransformer(cfg)`` (or ``model``) on ``task`` with the scale's settings and seed.

    Returns (numbers, trained model). The numbers are JSON-ready: "val" (final validation
    metrics), "n_params", "curve" (training loss per step), "val_curve" ({"metric", "steps",
    "values"}), "state", "converged" and "improvement" (``convergence.judge``), "seconds".
    """
    tc = train_config(settings, seed, flavor=cfg.flavor)
    t0 = time.perf_counter()
    res = train(cfg, task, tc, callback=callback, model=model)
    curve = convergence.val_curve(res.history, "mse" if task.kind == "regression" else "loss")
    out = {
        "val": {k: v for k, v in res.metrics.items() if k != "step"},
        "n_params": count_params(res.model),
        "curve": [row["loss"] for row in res.history],
        "val_curve": curve,
        **convergence.judge(curve, tc.steps),
        "seconds": time.perf_counter() - t0,
    }
    if log is not None:
        vals = " ".join(f"{k} {fmt(v)}" for k, v in out["val"].items())
        log(
            f"  seed {seed} {cfg.residual} L={cfg.n_layer} D={cfg.d_model}: {vals} ({out['state']})"
        )
    return out, res.model


def train_run(cfg, task, settings: dict, seed: int, log=None) -> dict:
    """The numbers of :func:`fit` (the trained model dropped)."""
    return fit(cfg, task, settings, seed, log)[0]


def baseline(task, settings: dict, seed: int, flavor: str = "geolab") -> dict:
    """The task's trivial baselines (``baselines.of_task``) on the validation batches a run of
    ``seed`` and ``flavor`` with the scale's settings is scored on."""
    return baselines.of_task(task, validation_batches(train_config(settings, seed, flavor=flavor)))


def judge_runs(runs, found: dict, steps: int) -> None:
    """Re-judge trained runs from their stored numbers: convergence state from the curve of a
    ``steps``-step training, ratio to the baseline ``found`` and the learned flag."""
    for run in runs:
        run.update(convergence.judge(run["val_curve"], steps))
        baselines.judge_run(run, found)


def _job(args):
    """One ``parallel_map`` job in a worker process, with the parent's threads and kernels."""
    fn, job, settings, threads = args
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    return fn(*job, settings, functools.partial(print, flush=True))  # stdout may be a pipe


def parallel_map(fn, jobs: list[tuple], settings: dict, log) -> list:
    """[fn(*job, settings, log) for job in jobs], in ``settings["jobs"]`` worker processes.

    Jobs are independent seeded runs, so their numbers do not depend on how they are spread;
    workers are spawned (not forked: torch's thread pools do not survive a fork), run with the
    parent's torch thread count and deterministic kernels, and log to standard output.
    """
    workers = settings.get("jobs", 1)
    if workers <= 1 or len(jobs) <= 1:
        return [fn(*job, settings, log) for job in jobs]
    threads = torch.get_num_threads()
    pool = multiprocessing.get_context("spawn").Pool(min(workers, len(jobs)))
    try:
        return pool.map(_job, [(fn, job, settings, threads) for job in jobs], chunksize=1)
    finally:
        pool.close()  # let the workers exit on their own, so no semaphore is left behind
        pool.join()


def model_config(settings: dict, task, rule: str, **changes):
    """The protocol's ``GeoConfig`` for residual rule ``rule`` on ``task``.

    The scale's ``n_layer``, ``d_model`` and ``n_head`` (those it sets) and ``grad_checkpoint``
    (off unless set), then ``changes``, plus the task's fields (``task.model_fields()``).
    """
    fields = {k: settings[k] for k in ("n_layer", "d_model", "n_head") if k in settings}
    fields["grad_checkpoint"] = settings.get("grad_checkpoint", False)
    return GeoConfig(residual=rule, **{**fields, **changes}, **task.model_fields())


def rule_plan(settings: dict) -> list:
    """(rule, GeoConfig) of each of the scale's rules on its text task: the ``planned`` runs
    (``plan.protocol_plan``) of a protocol that trains every rule once per seed."""
    task = text_task(settings)
    return [(r, model_config(settings, task, r)) for r in settings["rules"]]


def train_rule(
    task,
    settings: dict,
    seed: int,
    log,
    rule: str,
    budget: int | None = None,
    **changes,
) -> dict:
    """:func:`train_run` of ``model_config(settings, task, rule, **changes)``.

    With ``budget`` the width is first matched to that many parameters
    (``match_params(cfg, budget, vary="d_model")``) and recorded as "d_model".
    """
    cfg = model_config(settings, task, rule, **changes)
    if budget is not None:
        cfg = match_params(cfg, budget, vary="d_model")
    out = train_run(cfg, task, settings, seed, log)
    if budget is not None:
        out["d_model"] = cfg.d_model
    return out


def train_rules(task, settings: dict, seed: int, log, rules=None, **changes) -> dict:
    """rule -> :func:`train_rule` numbers, for ``rules`` (default: the scale's) in order."""
    rules = settings["rules"] if rules is None else rules
    return {rule: train_rule(task, settings, seed, log, rule, **changes) for rule in rules}


def seed_rules(seed: int, settings: dict, log) -> dict:
    """:func:`train_rules` of the scale's rules on its text task, one seed (a job of
    :func:`train_seeds`)."""
    return train_rules(text_task(settings), settings, seed, log)


def train_seeds(settings: dict, seeds: list[int], log) -> dict:
    """str(seed) -> :func:`seed_rules` numbers, the seeds spread over ``settings["jobs"]``
    worker processes (``parallel_map``)."""
    rows = parallel_map(seed_rules, [(seed,) for seed in seeds], settings, log)
    return {str(seed): row for seed, row in zip(seeds, rows, strict=True)}
