"""The training lab behind notebook 06: train a few small models live and compare them.

``LAB_TASKS`` are the tasks of docs/design.md §6 at sizes that train in seconds on a laptop CPU
(geolab's choices). :func:`compare_rules` trains one model per residual rule on the same task and
seed, calls ``on_step(rule, record)`` after every optimizer step (a marimo progress bar, a print)
and collects β per layer (``snapshots.beta_snapshot``) at fractions {0, ¼, ½, 1} of training for
the rules that have a β gate (those whose ``Rule.beta_range`` is not None: ``mgt``, ``mgt_ddl``,
``ddl``).
"""

import torch

from geolab.config import GeoConfig
from geolab.experiments import figures, runs
from geolab.experiments.runs import train_config
from geolab.experiments.snapshots import beta_snapshot, snapshot_steps, text_probe
from geolab.figures import DASHES, rule_color
from geolab.model import GeoTransformer
from geolab.rules import rule_class
from geolab.tasks import get_task
from geolab.train import train

LAB_TASKS = {
    "copy": {"m": 8, "n_train": 512, "n_val": 64},
    "echo": {"steps": 32, "n_train": 128, "n_val": 32},
    "gyroscope": {"steps": 32, "n_train": 256, "n_val": 64},
    "inversion": {"seq_len": 8, "n_train": 128, "n_val": 32},
    "near_pi": {"steps": 32, "n_train": 128, "n_val": 32},
    "shakespeare": {"seq_len": 32},
}


def lab_task(name: str, seed: int = 0, data_dir=None):
    """Task ``name`` at the lab's small sizes (the text task reads ``data_dir``, else $GEOLAB_DATA,
    else the copy of tiny-shakespeare in the repository's data/)."""
    if name not in LAB_TASKS:
        raise ValueError(f"lab task {name!r} is not allowed; allowed: {', '.join(LAB_TASKS)}")
    extra = {}
    if name == "shakespeare":
        extra["data_dir"] = runs.data_dir({"task": name, "data_dir": data_dir})
    return get_task(name, seed=seed, **LAB_TASKS[name], **extra)


def compare_rules(
    task,
    rules: list[str],
    n_layer: int = 4,
    d_model: int = 32,
    n_head: int = 4,
    steps: int = 30,
    batch_size: int = 16,
    lr: float = 1e-3,
    seed: int = 0,
    on_step=None,
) -> dict:
    """Train one ``GeoTransformer`` per rule on ``task``; returns JSON-ready numbers.

    {"curves": {rule: [training loss per step]}, "val": {rule: final validation metrics},
     "beta": {rule: {"0%"|"25%"|"50%"|"100%": per-layer β stats}} (β rules only),
     "n_params": {rule: int}}
    """
    if not rules:
        raise ValueError("rules is empty; choose at least one residual rule")
    settings = {"train": {"steps": steps, "batch_size": batch_size, "lr": lr, "warmup": 1}}
    settings["train"]["min_lr"] = min(1e-4, lr)
    probe = text_probe(task, 4)
    out = {"curves": {}, "val": {}, "beta": {}, "n_params": {}}
    for rule in rules:
        cfg = GeoConfig(
            residual=rule, n_layer=n_layer, d_model=d_model, n_head=n_head, **task.model_fields()
        )
        torch.manual_seed(seed)
        model = GeoTransformer(cfg)
        out["n_params"][rule] = sum(p.numel() for p in model.parameters())
        snaps = {}
        at = snapshot_steps(steps)
        beta_range = rule_class(cfg).beta_range(cfg)
        if beta_range is not None:
            snaps["0%"] = beta_snapshot(model, probe, *beta_range)

        def step(rec, rule=rule, model=model, snaps=snaps, at=at, beta_range=beta_range):
            if beta_range is not None and rec["step"] in at:
                snaps[at[rec["step"]]] = beta_snapshot(model, probe, *beta_range)
            if on_step is not None:
                on_step(rule, rec)

        res = train(
            cfg, task, train_config(settings, seed, progress=False), callback=step, model=model
        )
        out["curves"][rule] = [row["loss"] for row in res.history]
        out["val"][rule] = {k: v for k, v in res.metrics.items() if k != "step"}
        if snaps:
            out["beta"][rule] = snaps
    return out


def run_label(number: int, task: str, n_layer: int, d_model: int, steps: int, lr: float) -> str:
    """How the lab names one press of Train in its legends and tables."""
    return f"#{number} {task} L={n_layer} D={d_model} {steps} steps lr={lr:g}"


def live_figure(curves: dict, title: str):
    """The training loss so far, one line per rule in its colour (redrawn while a run trains)."""
    styles = {rule: {"color": rule_color(rule, i)} for i, rule in enumerate(curves)}
    return figures.loss_curves(curves, title, styles=styles)


def lab_figures(runs: list[dict]) -> dict:
    """Every finished run side by side: ``runs`` is ``[{"label": str, "result": compare_rules
    output}, …]``. One figure of all training curves ("#N rule": the rule's colour, one dash per
    run, so a rerun with the same settings, which lies exactly on the earlier one, still shows
    as a second pattern), and β per layer over training for each β rule of each run."""
    curves, styles, figs = {}, {}, {}
    for k, run in enumerate(runs):
        number = run["label"].split()[0]
        for i, (rule, c) in enumerate(run["result"]["curves"].items()):
            curves[f"{number} {rule}"] = c
            styles[f"{number} {rule}"] = {
                "color": rule_color(rule, i),
                "dash": DASHES[k % len(DASHES)],
            }
    figs["curves"] = figures.loss_curves(curves, "Training loss per step, every run", styles=styles)
    for run in runs:
        for rule, snaps in run["result"]["beta"].items():
            figs[f"beta {run['label']} {rule}"] = beta_change_figure(
                snaps, f"{run['label'].split()[0]} {rule}", rule
            )
    return figs


def beta_change_figure(snaps: dict, name: str, rule: str):
    """How far mean β per layer has moved since init, at each later snapshot: E[β] − E[β at
    "0%"], one line per snapshot, 0 (the init) marked. A short run moves β by 1e-4–1e-2 while
    β itself is ≈ β₀ = 0.5: drawn as β itself, every snapshot lay on the init line (issue 52).
    ``snaps``: {"0%"|"25%"|"50%"|"100%": {"mean": [β per layer]}}."""
    init = snaps["0%"]["mean"]
    low, high = min(init), max(init)
    start = f"β₀ = {low:.3g} in every layer" if low == high else f"β {low:.3g}–{high:.3g}"
    changes = {
        f"{label} − init": {"mean": [b - a for a, b in zip(init, stats["mean"], strict=True)]}
        for label, stats in snaps.items()
        if label != "0%"
    }
    return figures.beta_by_layer(
        list(range(1, len(init) + 1)),
        changes,
        "mean",
        f"{name}: change of mean β per layer since init (at init {start})",
        "E[β] − E[β at init]",
        rule=rule,
    )


# Fixed decimals for the token metrics, so a column reads on one scale (rounding to 4
# significant digits printed 0.07617 beside 16.13); every other metric keeps 4 significant
# digits (MSEs span many orders of magnitude).
DECIMALS = {"loss": 3, "ppl": 2, "acc": 3}


def lab_rows(runs: list[dict], digits: int = 4) -> list[dict]:
    """One table row per (run, rule): the run, the rule, its parameters and its final validation
    metrics, loss / ppl / acc to ``DECIMALS`` decimals and the rest to ``digits`` significant
    digits."""
    rows = []
    for run in runs:
        result = run["result"]
        for rule, metrics in result["val"].items():
            rounded = {
                k: round(v, DECIMALS[k]) if k in DECIMALS else float(f"{v:.{digits}g}")
                for k, v in metrics.items()
            }
            row = {"run": run["label"], "rule": rule, "parameters": result["n_params"][rule]}
            rows.append({**row, **rounded})
    return rows


def metric_names(runs: list[dict]) -> list[str]:
    """The validation metrics the runs report, in first-seen order (the table's columns)."""
    names: dict[str, None] = {}
    for run in runs:
        for metrics in run["result"]["val"].values():
            names.update(dict.fromkeys(metrics))
    return list(names)
