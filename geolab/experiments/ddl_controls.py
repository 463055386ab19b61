"""DDL's missing controls: does erasing help, and does the expanded state help? (issue 54)

The DDL paper (Zhang et al. 2026, arXiv:2601.00417; its official repository's README, 2026-07)
says its comparisons lack a write-only control. Two controls answer its two design choices,
each against DDL itself, on tasks this CPU scale learns:

* **erasing helps** — DDL's update x′ = x + β k̂ (v − k̂ᵀx) (Eq. 2.2, §2.1) against ``ddl_write``,
  the same update with the erase term removed, x′ = x + β k̂ v: claim "DDL's validation MSE is
  below ddl_write's";
* **the expanded state helps** — ``ddl_state`` (DDL's residual state of d_v = 4 columns per
  token and its compress–process–rewrite step, ``geolab.rules.expanded``) against DDL: claim
  "ddl_state's validation MSE is below DDL's".

Two tasks, each run on seeds 2001–2003 for 2000 iterations: **reflection** — bare operators on
y = −x (x ~ N(0, I₆₄)), as ``geolab.experiments.reflection`` trains them (every parameter net
Linear(64, 128)–GELU–Linear, AdamW lr 1e-3, batch 32, no schedule; DDL as its geolab flavor, the
controls with the same nets and gates) — and **near-π** — 8-layer D = 32 transformers on the
near-π single task of the E∆ table (dim 16, 64 steps, batch 16, the E∆ table's trainer), the
controls' MLP widths moved until their counts are DDL's (``match_params``).

Rule (fixed before the runs; the claimed-quantity rule of ``geolab.experiments.settled`` read on
log-MSE): for a claim "model a's MSE is below model b's", each seed's gap ln MSE_a − ln MSE_b,
recorded at T/4, T/2 and T, must be settled below 0, and Welch's 95 % interval of ln MSE_a −
ln MSE_b across seeds must lie below 0: reproduced; settled above 0 with the interval above 0:
not reproduced; else inconclusive, naming what failed. Gated on both models having learned (MSE at
most half the task's best trivial baseline) and on their parameter counts within 3 %.
"""

import torch
from torch import nn

from geolab.experiments import baselines, pack, reflection, settled
from geolab.experiments import verdicts as v
from geolab.experiments.plan import SUSTAINED_FLOPS, n_params
from geolab.experiments.runs import baseline, judge_runs, model_config, train_run
from geolab.experiments.stats import welch
from geolab.model import match_params
from geolab.operators import (
    delta_update,
    delta_update_matrix,
    delta_write,
    state_compress,
    state_expand,
)
from geolab.tasks import get_task

NAME = "ddl_controls"
TITLE = "DDL's controls: erase or write only, one vector or an expanded state"
RULES = ("ddl", "ddl_write", "ddl_state")
LABELS = {"ddl": "DDL", "ddl_write": "DDL write-only", "ddl_state": "DDL expanded state"}
TASKS = ("reflection", "near_pi")
# claim id -> (the model whose MSE should be lower, the one it is compared with)
CLAIMS = {"erasing helps": ("ddl", "ddl_write"), "the expanded state helps": ("ddl_state", "ddl")}
STATE_COLUMNS = 4  # d_v of the official repository's expanded state

SCALES = {
    "tiny": {
        "seeds": [2001],
        "reflection": {
            "dim": 8,
            "hidden": 16,
            "n_train": 16,
            "n_val": 8,
            "train": {"batch_size": 4, "lr": 1e-3, "eval_every": 2},
        },
        "near_pi": {
            "n_layer": 2,
            "d_model": 8,
            "n_head": 2,
            "task": {"dim": 4, "steps": 8, "n_train": 16, "n_val": 4},
            "train": {"batch_size": 4, "warmup": 1, "eval_batches": 1},
        },
        "train": {"steps": 8},
        "reductions": {"everything": "a smoke test of the code path, not a measurement"},
    },
    "small": {
        "seeds": [2001, 2002, 2003],
        "reflection": {
            "dim": 64,
            "hidden": 128,
            "n_train": 500,
            "n_val": 500,
            "train": {"batch_size": 32, "lr": 1e-3, "eval_every": 50},
        },
        "near_pi": {
            "n_layer": 8,
            "d_model": 32,
            "n_head": 4,
            "task": {"dim": 16, "steps": 64, "n_val": 100},
            "train": {"batch_size": 16, "warmup": 20, "eval_batches": 8},
        },
        "train": {"steps": 2000},
        "reductions": {
            "none": "controls defined here (no published numbers): the reflection script's bare "
            "operators at its own sizes, and the E∆ table's near-π task at its small scale's "
            "width (D = 32, dim 16, 64 steps) trained 2000 iterations"
        },
    },
}
SCALES["paper"] = {**SCALES["small"], "reductions": {}}


class BareOperator(nn.Module):
    """One bare DDL-family operator ŷ = f(x) on a vector (the reflection script's setting):
    k = MLP_k(x), β = 2σ(MLP_β(x)), v = MLP_v(x), each MLP Linear(dim, hidden)–GELU–Linear.

    * ``ddl``: ŷ = x + β k̂ (v − k̂ᵀx) (``delta_update``; DDL Eq. 2.2);
    * ``ddl_write``: ŷ = x + β k̂ v (``delta_write``: the erase term removed);
    * ``ddl_state``: X = x 1ᵀ ∈ R^{dim×4} (``state_expand``), X′ = X + β k̂ (vᵀ − k̂ᵀX) with
      v ∈ R⁴ (``delta_update_matrix``), ŷ[i] = Σ_j r_j w_ij X′_ij (``state_compress`` on a
      one-position sequence: its short convolution keeps only the current tap), w and r
      learned and started at 1 and 1/4, so that compress(expand(x)) = x at init.
    """

    def __init__(self, kind: str, dim: int, hidden: int):
        super().__init__()
        self.kind = kind
        columns = STATE_COLUMNS if kind == "ddl_state" else 1
        self.k = reflection.mlp(dim, hidden, dim)
        self.beta = reflection.mlp(dim, hidden, 1)
        self.value = reflection.mlp(dim, hidden, columns)
        if kind == "ddl_state":
            self.conv = nn.Parameter(torch.ones(dim, columns, 1))
            self.read = nn.Parameter(torch.full((columns,), 1 / columns))
        self.gates = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        beta = 2 * torch.sigmoid(self.beta(x)).squeeze(-1)
        self.gates = {"beta": beta}
        k, value = self.k(x), self.value(x)
        if self.kind == "ddl":
            return delta_update(x, k, beta, value.squeeze(-1))
        if self.kind == "ddl_write":
            return delta_write(x, k, beta, value.squeeze(-1))
        state = delta_update_matrix(state_expand(x, STATE_COLUMNS), k, beta, value)
        return state_compress(state[:, None], self.conv, self.read)[:, 0]


def reflection_run(seed: int, kind: str, settings: dict, log) -> dict:
    """One bare operator trained on y = −x (a job of ``run``), seeded as the reflection
    protocol's geolab flavor: data from ``get_task("inversion")``, the model from ``seed``,
    batches from their own generator."""
    s = of_task(settings, "reflection")
    task = reflection.data(s, seed, "geolab")
    torch.manual_seed(seed)
    model = BareOperator(kind, s["dim"], s["hidden"])
    gen = torch.Generator().manual_seed(seed)

    def batches(n, b):
        return torch.randint(0, n, (b,), generator=gen)

    out = reflection.train_one(model, task, s, batches)
    log(f"  seed {seed} reflection {LABELS[kind]}: mse {v.fmt(out['val']['mse'])}")
    return out


def of_task(settings: dict, task: str) -> dict:
    """The settings of one task: its own, with the steps every run shares (``train.steps``,
    which ``--steps`` changes)."""
    own = settings[task]
    return {**own, "train": {**own["train"], "steps": settings["train"]["steps"]}}


def near_pi_task(settings: dict, seed: int):
    return get_task("near_pi", seed=seed, **settings["near_pi"]["task"])


def near_pi_config(settings: dict, task, rule: str):
    """The GeoConfig of ``rule`` on near-π: the scale's layers and width; the controls' MLP
    hidden width moved until their parameter count is DDL's (``match_params``)."""
    s = of_task(settings, "near_pi")
    cfg = model_config(s, task, rule)
    if rule == "ddl":
        return cfg
    return match_params(cfg, n_params(model_config(s, task, "ddl")), vary="d_mlp")


def near_pi_run(seed: int, rule: str, settings: dict, log) -> dict:
    """One transformer trained on near-π (a job of ``run``)."""
    task = near_pi_task(settings, seed)
    cfg = near_pi_config(settings, task, rule)
    return train_run(cfg, task, of_task(settings, "near_pi"), seed, log)


def job(seed: int, task: str, rule: str, settings: dict, log) -> dict:
    return (reflection_run if task == "reflection" else near_pi_run)(seed, rule, settings, log)


def run(settings: dict, seeds: list[int], log) -> v.Outcome:
    jobs = [(seed, task, rule) for seed in seeds for task in TASKS for rule in RULES]
    rows = pack.run_jobs(job, jobs, settings, log)
    per_seed = {str(seed): {} for seed in seeds}
    for (seed, task, rule), row in zip(jobs, rows, strict=True):
        per_seed[str(seed)][f"{task}/{rule}"] = row
    summary, hyps = conclude(settings, seeds, per_seed)
    return v.Outcome(per_seed, summary, hyps)


def gap_series(run_a: dict, run_b: dict, budget: int) -> dict:
    """ln MSE_a − ln MSE_b at the steps the claimed-quantity rule reads at ``budget``, from the
    runs' recorded series (bare operators) or validation curves (transformers)."""
    steps = settled.reads(budget)

    def at(run):
        if "series" in run:
            curve = dict(zip(run["series"]["steps"], run["series"]["mse"], strict=True))
        else:
            curve = dict(zip(run["val_curve"]["steps"], run["val_curve"]["values"], strict=True))
        return [reflection.log(curve[s]) for s in steps]

    return {
        "steps": list(steps),
        "values": [a - b for a, b in zip(at(run_a), at(run_b), strict=True)],
    }


def conclude(settings: dict, seeds: list[int], per_seed: dict) -> tuple[dict, list]:
    """(summary, hypotheses): each run judged against its task's best trivial baseline, then the
    two claims on each task under the module docstring's rule."""
    found, table, hyps = {}, {}, []
    for task in TASKS:
        for seed in seeds:
            s = of_task(settings, task)
            if task == "reflection":
                data = reflection.data(s, seed, "geolab")
                base = baselines.of_task(data, {"batch_size": s["n_val"]})
            else:
                base = baseline(near_pi_task(settings, seed), s, seed)
            found[f"{seed}/{task}"] = base
            steps = settings["train"]["steps"]
            judge_runs([per_seed[str(seed)][f"{task}/{r}"] for r in RULES], base, steps)
        for rule in RULES:
            runs = [per_seed[str(seed)][f"{task}/{rule}"] for seed in seeds]
            table[f"{task}/{rule}"] = {
                "mse": v.mean_std([r["val"]["mse"] for r in runs]),
                "n_params": runs[0]["n_params"],
            }
        hyps += judge(task, [per_seed[str(seed)] for seed in seeds], seeds, settings)
    summary = {
        "table": table,
        "claimed_quantity_rule": {"text": settled.RULE, "hash": settled.RULE_HASH},
        "baselines": {"rule": baselines.LEARNED_RULE, "tasks": found},
    }
    return summary, hyps


def judge(task: str, rows: list[dict], seeds: list[int], settings: dict) -> list[v.Hypothesis]:
    """The two control claims on ``task`` (module docstring)."""
    budget = settings["train"]["steps"]
    hyps = []
    for claim, (a, b) in CLAIMS.items():
        runs = {m: [row[f"{task}/{m}"] for row in rows] for m in (a, b)}
        logs = {m: [reflection.log(r["val"]["mse"]) for r in runs[m]] for m in (a, b)}
        out = settled.judge(
            f"log-MSE {LABELS[a]} − {LABELS[b]}",
            [gap_series(x, y, budget) for x, y in zip(runs[a], runs[b], strict=True)],
            seeds,
            budget,
            0.0,
            -1,
            interval=welch(logs[a], logs[b]),
        )
        mean = {m: sum(r["val"]["mse"] for r in runs[m]) / len(runs[m]) for m in (a, b)}
        h = v.Hypothesis(
            id=f"{task}: {claim}",
            claim=f"{LABELS[a]}'s validation MSE is below {LABELS[b]}'s (a control DDL's paper "
            "names as missing)",
            measured=f"MSE {LABELS[a]} {v.fmt(mean[a])}, {LABELS[b]} {v.fmt(mean[b])}",
            verdict=out["verdict"],
            rule=f"claimed-quantity rule {settled.RULE_HASH} at T = {budget:,} on {out['text']}",
            interval=out["text"],
            reasons=[out["reason"]] if out["verdict"] == v.INCONCLUSIVE else [],
        )
        hyps.append(v.gate(h, runs, on=("learned",), seeds=len(seeds), compared=(a, b)))
    return hyps


def plan_rows(settings: dict, seeds: int, flops_per_s: float = SUSTAINED_FLOPS) -> list[dict]:
    """The dry-run rows (``plan.protocol_plan``): each run's size and FLOPs over ``seeds``."""
    rows = []
    s = of_task(settings, "reflection")
    for rule in RULES:
        with torch.device("meta"):
            n = sum(p.numel() for p in BareOperator(rule, s["dim"], s["hidden"]).parameters())
        flops = reflection.operator_flops(n, s["train"]) * seeds
        rows.append(_plan_row(f"reflection/{rule}", 1, s["dim"], 1, n, s["train"], seeds, flops))
    p = of_task(settings, "near_pi")
    task = near_pi_task(settings, 0)
    for rule in RULES:
        cfg = near_pi_config(settings, task, rule)
        n = n_params(cfg)
        tokens = p["train"]["batch_size"] * task.seq_len
        flops = 6 * n * tokens * p["train"]["steps"] * seeds
        rows.append(
            _plan_row(
                f"near_pi/{rule}",
                cfg.n_layer,
                cfg.d_model,
                task.seq_len,
                n,
                p["train"],
                seeds,
                flops,
            )
        )
    for row in rows:
        row["gpu_hours"] = row["flops"] / flops_per_s / 3600
    return rows


def _plan_row(run, n_layer, d_model, seq_len, n, train, seeds, flops) -> dict:
    return {
        "run": run,
        "n_layer": n_layer,
        "d_model": d_model,
        "seq_len": seq_len,
        "n_params": n,
        "steps": train["steps"],
        "batch_size": train["batch_size"],
        "seeds": seeds,
        "flops": flops,
    }


def findings(result: dict) -> list[str]:
    """Each model's mean validation MSE and size per task, in words."""
    table = result["summary"]["table"]
    return [
        f"{task}: "
        + "; ".join(
            f"{LABELS[r]} MSE {v.fmt(table[f'{task}/{r}']['mse']['mean'])} "
            f"({table[f'{task}/{r}']['n_params']:,} parameters)"
            for r in RULES
        )
        + "."
        for task in TASKS
    ]


def make_figures(settings: dict, per_seed: dict, summary: dict) -> dict:
    from geolab.experiments import figures  # plotly, only where figures are drawn

    table = summary["table"]
    first = next(iter(per_seed))
    return {
        "mse": figures.bars_with_errors(
            {LABELS[r]: {task: table[f"{task}/{r}"]["mse"] for task in TASKS} for r in RULES},
            "DDL's controls: validation MSE per task (mean ± std over seeds)",
            "validation MSE",
            rules={LABELS[r]: r for r in RULES},
        ),
        "learning-curves": figures.learning_curves(
            {f"{k} ({LABELS[k.split('/')[1]]})": r for k, r in per_seed[first].items()},
            f"Validation MSE during training, seed {first}",
            group=lambda name: name.split("/")[1].split()[0],  # "task/rule (label)": the rule
        ),
    }
