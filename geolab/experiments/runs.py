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
from geolab.experiments import baselines, convergence, pack
from geolab.experiments.plan import train_flops
from geolab.experiments.verdicts import fmt
from geolab.model import count_params, match_params, param_count
from geolab.rules import rule_class
from geolab.tasks import Task, get_task
from geolab.train import TrainConfig, train
from geolab.train.loop import validation_batches

# Vocabulary sizes of the text corpora, stated so a plan (``--dry-run``) needs no data: the
# character set of tiny-shakespeare and WikiText-2's train vocabulary with <eos> (geolab.data);
# tests/test_experiments.py checks them against the corpora.
VOCAB_SIZES = {"shakespeare": 65, "wikitext2": 33278}


def data_dir(settings: dict):
    """Where text corpora come from: the settings' data_dir, else $GEOLAB_DATA, else the copy the
    repository ships in data/ (tiny-shakespeare only), else the hub."""
    given = settings.get("data_dir") or os.environ.get("GEOLAB_DATA")
    return given or bundled_dir(settings["task"])


def text_task(settings: dict):
    """The scale's text task (``task`` at ``seq_len``, corpora from :func:`data_dir`), built once
    per process (its runs share the token streams)."""
    return _text_task(settings["task"], settings["seq_len"], data_dir(settings))


@functools.lru_cache(maxsize=4)
def _text_task(name: str, seq_len: int, folder):
    return get_task(name, seq_len=seq_len, data_dir=folder)


def text_shape(settings: dict) -> Task:
    """The scale's text task without its data: the sizes a model config needs (``seq_len`` and
    the stated ``VOCAB_SIZES``), for planning offline."""
    name = settings["task"]
    return Task(name, "tokens", name, settings["seq_len"], {}, vocab_size=VOCAB_SIZES[name])


def train_config(settings: dict, seed: int, **changes):
    """The protocol's ``TrainConfig`` for one seed: settings["train"] plus ``changes``.

    No checkpoints or metric files (the protocol writes one JSON), a validation point every
    ``convergence.eval_every(steps)`` steps (≈ 20 over training) unless the scale sets
    eval_every, float32 (bf16 only where a scale asks for it on CUDA), the torch threads this
    process was given (``geolab reproduce --threads``, a worker's), and a progress bar of the
    run only where a person watches (:func:`watched`).
    """
    merged = {**settings["train"], **changes}
    every = convergence.eval_every(merged.get("steps", TrainConfig.steps))
    base = {"eval_every": every, "ckpt_every": 0, "bf16": False, "device": "cpu"}
    base["threads"] = torch.get_num_threads()
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
    flops = train_flops(count_params(res.model), cfg, tc.steps, tc.batch_size)
    pack.tally(res.model, flops)
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


def parallel_map(fn, jobs: list[tuple], settings: dict, log) -> list:
    """[fn(*job, settings, log) for job in jobs]: independent seeded runs through the packed
    runner (``pack.run_jobs``): ``settings["jobs"]`` worker processes, each finished run saved
    and skipped on a rerun under the runner's sweep."""
    return pack.run_jobs(fn, jobs, settings, log)


def model_config(settings: dict, task, rule: str, **changes):
    """The protocol's ``GeoConfig`` for residual rule ``rule`` on ``task``, sized as it asks.

    The scale's ``n_layer``, ``d_model``, ``n_head`` and ``dropout`` (those it sets) and
    ``grad_checkpoint`` (off unless set), then ``changes``, plus the task's fields
    (``task.model_fields()``). A scale that sets ``vary`` (fields of ``model.VARY``) then moves
    those fields, in order, with ``match_params`` to the parameter count ``budget``, or, with
    ``size_of``, to that rule's count under the same fields: compared models of different rules
    then differ by well under 1 % (the 3 % of ``verdicts.gate``), instead of by the extra
    parameters one rule's gates bring.
    """
    fields = {k: settings[k] for k in ("n_layer", "d_model", "n_head", "dropout") if k in settings}
    fields["grad_checkpoint"] = settings.get("grad_checkpoint", False)
    cfg = GeoConfig(residual=rule, **{**fields, **changes}, **task.model_fields())
    vary = settings.get("vary", ())
    if not vary:
        return cfg
    if "size_of" in settings:
        budget = param_count(cfg.replace(residual=settings["size_of"]))
    else:
        budget = settings["budget"]
    for field in vary:
        cfg = match_params(cfg, budget, vary=field)
    return cfg


def rule_plan(settings: dict) -> list:
    """(rule, GeoConfig) of each of the scale's rules on its text task: the ``planned`` runs
    (``plan.protocol_plan``) of a protocol that trains every rule once per seed."""
    task = text_shape(settings)
    return [(r, model_config(settings, task, r)) for r in settings["rules"]]


def train_rule(task, settings: dict, seed: int, log, rule: str, **changes) -> dict:
    """:func:`train_run` of ``model_config(settings, task, rule, **changes)``; a sized config
    (the scale sets ``vary``) records its "d_model" and "d_mlp" (the MLP's hidden width)."""
    cfg = model_config(settings, task, rule, **changes)
    out = train_run(cfg, task, settings, seed, log)
    if settings.get("vary"):
        out["d_model"] = cfg.d_model
        out["d_mlp"] = cfg.mlp_hidden(rule_class(cfg).sublayer_width(cfg))
    return out


def seed_rule(seed: int, rule: str, settings: dict, log) -> dict:
    """:func:`train_rule` of one rule and seed on the scale's text task (a job of
    :func:`train_seeds`)."""
    return train_rule(text_task(settings), settings, seed, log, rule)


def train_seeds(settings: dict, seeds: list[int], log) -> dict:
    """str(seed) -> rule -> :func:`seed_rule` numbers, one run per (seed, rule) spread over
    ``settings["jobs"]`` worker processes (``parallel_map``)."""
    jobs = [(seed, rule) for seed in seeds for rule in settings["rules"]]
    rows = parallel_map(seed_rule, jobs, settings, log)
    out = {str(seed): {} for seed in seeds}
    for (seed, rule), row in zip(jobs, rows, strict=True):
        out[str(seed)][rule] = row
    return out
