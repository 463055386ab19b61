"""MGT protocol 1 — rank evolution (Su & You 2026, experiment 1; docs/design.md §8).

Effective rank per layer (Su & You 2026, Eq. 8, ``geolab.rank_profile``: exp(H(σ̂))/min(S, D), mean
over a fixed batch of validation windows) of post-LN, pre-LN, DeepNorm and the three MGT variants at
depths L, at initialisation and after training. The paper measures trained models (WikiText-2,
50 epochs); its hypotheses:

* H1 — the standard (post-LN) transformer's rank falls monotonically towards 0 as L → 100;
* H2 — MGT keeps Rank_eff > 0.5 at 100 layers.

"Rank at depth L" is the rank of the state after the last layer (before the final norm). Verdict
rules (geolab's, the paper gives no threshold for "→ 0"), on the 95 % Student interval of the
final-layer rank over seeds (``stats.t_interval``; one seed: the value itself, and the claim reads
"inconclusive: fewer than 3 seeds"): H1 is reproduced when the trained post-LN mean rank is
non-increasing in L (tolerance 0.02) and its interval at the deepest stack lies below 0.1; H2 when
the trained MGT interval at the deepest stack lies above 0.5. An interval that straddles the
threshold is inconclusive.
"""

import math

import torch

from geolab.experiments import baselines
from geolab.experiments import verdicts as v
from geolab.experiments.runs import (
    baseline,
    fit,
    judge_runs,
    model_config,
    parallel_map,
    text_shape,
    text_task,
)
from geolab.experiments.scales import PAPER, SMALL, SMALL_TRAIN, paper_train, smoke
from geolab.experiments.snapshots import text_probe
from geolab.experiments.stats import fmt_interval, t_interval
from geolab.model import GeoTransformer
from geolab.probe import rank_profile

NAME = "rank_evolution"
TITLE = "MGT 1: effective rank per layer at initialisation and after training"
RULES = ["postln", "preln", "deepnorm", "mgt_mhc", "mgt_ddl", "mgt"]
H1_MAX, MONOTONE_TOL, H2_MIN = 0.1, 0.02, 0.5
TRAINED_KEYS = ("val", "val_curve", "state", "converged", "improvement", "seconds")

SCALES = {
    "tiny": smoke(
        3, depths=[2, 4], rules=RULES, train_rules=["postln", "mgt"], probe_batch=4, seeds=[42]
    ),
    "small": {
        **SMALL,
        "depths": [12, 24, 48, 100, 200],
        "max_trained_depth": 100,
        "rules": RULES,
        "train_rules": ["postln", "preln", "deepnorm", "mgt"],
        "probe_batch": 8,
        "seeds": [42, 123, 456],
        "train": SMALL_TRAIN,
        "reductions": {
            "task": "character-level tiny-shakespeare instead of WikiText-2 (65-token vocabulary)",
            "d_model": "32 instead of 256",
            "seq_len": "32 instead of 128 (so Rank_eff divides by min(S, D) = 32)",
            "depths": "12, 24, 48, 100, 200 at initialisation; trained up to 100 layers (200 "
            "at initialisation only)",
            "training": "800 AdamW steps of batch 16 × 32 characters (≈ 0.4 epoch) instead of 50 "
            "epochs of batch 64 × 128 tokens; trial runs at L = 24 and 100 converged by the "
            "2 % rule at these sizes",
            "trained rules": "postln, preln, deepnorm, mgt; mgt_mhc and mgt_ddl at init only",
        },
    },
    "paper": {
        **PAPER,
        "depths": [12, 24, 48, 100, 200],
        "rules": RULES,
        "train_rules": RULES,
        "probe_batch": 16,
        "seeds": [42, 123, 456],
        "grad_checkpoint": True,
        "train": paper_train(12750),
        "reductions": {"training": "50 epochs of WikiText-2 ≈ 12,750 steps of 64 × 128 tokens"},
    },
}


def trained_depths(settings: dict) -> list[int]:
    """The depths whose train_rules are trained: up to ``max_trained_depth`` (all if unset)."""
    cap = settings.get("max_trained_depth")
    return [d for d in settings["depths"] if cap is None or d <= cap]


def layer_ranks(profile: torch.Tensor) -> list[float]:
    """Per-step profile (2L+1,) -> [embedding, after layer 1, …, after layer L] (L+1 values)."""
    return profile[0::2].tolist()


def measure(seed: int, depth: int, rule: str, settings: dict, log) -> dict:
    """Rank per layer of ``rule`` at ``depth`` for one seed: at init, and after training when
    it is a trained run (a job of :func:`run`)."""
    task = text_task(settings)
    probe = text_probe(task, settings["probe_batch"])
    cfg = model_config(settings, task, rule, n_layer=depth)
    torch.manual_seed(seed)
    model = GeoTransformer(cfg).eval()
    row = {"init": layer_ranks(rank_profile(model, probe))}
    if is_trained(settings, depth, rule):
        numbers, trained = fit(cfg, task, settings, seed, model=model)
        device = next(trained.parameters()).device
        row["trained"] = layer_ranks(rank_profile(trained.eval(), probe.to(device)))
        row["val_loss"] = numbers["val"]["loss"]
        row.update({k: numbers[k] for k in TRAINED_KEYS})
    msg = " ".join(f"{k} {v.fmt(row[k][-1])}" for k in ("init", "trained") if k in row)
    state = f" ({row['state']})" if "state" in row else ""
    log(f"  seed {seed} L={depth} {rule}: final-layer rank {msg}{state}")
    return row


def is_trained(settings: dict, depth: int, rule: str) -> bool:
    return rule in settings["train_rules"] and depth in trained_depths(settings)


def planned(settings: dict) -> list:
    """(label, GeoConfig) of every trained run (``plan.protocol_plan``)."""
    task = text_shape(settings)
    return [
        (f"{r}/L{d}", model_config(settings, task, r, n_layer=d))
        for d in trained_depths(settings)
        for r in settings["train_rules"]
    ]


def run(settings: dict, seeds: list[int], log) -> v.Outcome:
    """The trained runs through the packed runner (``parallel_map``), then the init-only
    ranks (one forward each) in this process."""
    every = [(s, d, r) for s in seeds for d in settings["depths"] for r in settings["rules"]]
    jobs = [job for job in every if is_trained(settings, *job[1:])]
    done = dict(zip(jobs, parallel_map(measure, jobs, settings, log), strict=True))
    per_seed = {str(s): {} for s in seeds}
    for job in every:
        seed, depth, rule = job
        row = done[job] if job in done else measure(*job, settings, log)
        per_seed[str(seed)][f"{rule}/L{depth}"] = row
    summary, hyps = conclude(settings, seeds, per_seed)
    return v.Outcome(per_seed, summary, hyps)


def conclude(settings: dict, seeds: list[int], per_seed: dict) -> tuple[dict, list]:
    """(summary, hypotheses) from the measured numbers (each trained run re-judged:
    convergence, ratio to the best trivial baseline, learned)."""
    found = baseline(text_task(settings), settings, seeds[0])
    trained = [row for seed_rows in per_seed.values() for row in seed_rows.values()]
    trained = [row for row in trained if "val_curve" in row]
    for row in trained:
        row.setdefault("val", {"loss": row["val_loss"], "ppl": math.exp(row["val_loss"])})
    judge_runs(trained, found, settings["train"]["steps"])
    summary = {}
    for key in per_seed[str(seeds[0])]:
        rows = [per_seed[str(s)][key] for s in seeds]
        summary[key] = {
            phase: v.mean_std([r[phase][-1] for r in rows])
            for phase in ("init", "trained")
            if phase in rows[0]
        }
    summary["baselines"] = {"rule": baselines.LEARNED_RULE, "tasks": {settings["task"]: found}}
    return summary, hypotheses(settings, summary, per_seed)


def final_verdict(finals: list[float], low=None, high=None) -> tuple[str, str]:
    """(verdict, interval text) of "final-layer rank ≥ low" (or "≤ high") over seeds: on the 95 %
    interval of the mean for two or more seeds, on the one value otherwise."""
    iv = t_interval(finals)
    point = {"low": finals[0], "high": finals[0]}
    return v.threshold_verdict(iv or point, low, high), fmt_interval(iv) if iv else ""


def hypotheses(settings: dict, summary: dict, per_seed: dict) -> list[v.Hypothesis]:
    depths = settings["depths"]
    deep = max(d for d in depths if d <= 100) if min(depths) <= 100 else max(depths)
    trained = trained_depths(settings)
    seeds = len(per_seed)
    over = f"mean of {seeds} seed{'s' if seeds > 1 else ''}"

    def runs(rule, chosen):
        return [row[f"{rule}/L{d}"] for row in per_seed.values() for d in chosen if d in trained]

    def finals(rule, phase):
        return [row[f"{rule}/L{deep}"][phase][-1] for row in per_seed.values()]

    phase = "trained" if "postln" in settings["train_rules"] and deep in trained else "init"
    post = [summary[f"postln/L{d}"][phase]["mean"] for d in depths if d <= deep]
    monotone = all(b <= a + MONOTONE_TOL for a, b in zip(post, post[1:], strict=False))
    low_enough, h1_interval = final_verdict(finals("postln", phase), high=H1_MAX)
    curve = ", ".join(f"L={d}: {v.fmt(rank)}" for d, rank in zip(depths, post, strict=False))
    pre = summary.get(f"preln/L{deep}", {}).get(phase)
    extra = f"; pre-LN at L={deep}: {v.fmt(pre['mean'])}" if pre else ""
    h1 = v.Hypothesis(
        id="H1",
        claim="standard (post-LN) Rank_eff decreases monotonically towards 0 as L → 100",
        measured=f"post-LN final-layer rank ({phase}, {over}) {curve}{extra}",
        verdict=low_enough if monotone else v.NOT_REPRODUCED,
        rule=f"mean non-increasing in L (tol {MONOTONE_TOL}) and the 95 % interval at L={deep} "
        f"below {H1_MAX}",
        interval=h1_interval and f"post-LN L={deep}: {h1_interval}",
    )
    v.gate(
        h1,
        {"postln": runs("postln", [d for d in depths if d <= deep])} if phase == "trained" else {},
        seeds=seeds,
    )
    mgt_phase = "trained" if "mgt" in settings["train_rules"] and deep in trained else "init"
    mgt = summary[f"mgt/L{deep}"][mgt_phase]["mean"]
    high_enough, h2_interval = final_verdict(finals("mgt", mgt_phase), low=H2_MIN)
    h2 = v.Hypothesis(
        id="H2",
        claim="MGT keeps Rank_eff > 0.5 at 100 layers",
        measured=f"MGT final-layer rank ({mgt_phase}, {over}) at L={deep}: {v.fmt(mgt)}",
        verdict=high_enough,
        rule=f"the 95 % interval of MGT's final-layer rank at L={deep} above {H2_MIN}",
        interval=h2_interval and f"MGT L={deep}: {h2_interval}",
    )
    v.gate(h2, {"mgt": runs("mgt", [deep])} if mgt_phase == "trained" else {}, seeds=seeds)
    return [h1, h2]


def findings(result: dict) -> list[str]:
    """Plain-words findings computed from a result file (``report.findings_markdown``)."""
    settings, summary = result["config"], result["summary"]
    top, deep = max(settings["depths"]), max(trained_depths(settings))
    init = [summary[f"{r}/L{top}"]["init"]["mean"] for r in settings["rules"]]
    trained = [summary[f"{r}/L{deep}"]["trained"]["mean"] for r in settings["train_rules"]]
    return [
        f"Final-layer effective rank at initialisation, L={top}: {v.fmt(min(init))}–"
        f"{v.fmt(max(init))} over {len(init)} rules; after training, L={deep}: "
        f"{v.fmt(min(trained))}–{v.fmt(max(trained))} over {len(trained)} rules."
    ]


def make_figures(settings: dict, per_seed: dict, summary: dict) -> dict:
    from geolab.experiments import figures  # plotly, only where figures are drawn

    depths = settings["depths"]
    first = per_seed[next(iter(per_seed))]
    deepest = max(depths)
    out = {
        "final-rank-vs-depth": figures.final_rank_vs_depth(depths, settings["rules"], summary),
        f"layers-init-L{deepest}": figures.rank_per_layer(
            {r: first[f"{r}/L{deepest}"]["init"][1:] for r in settings["rules"]},
            f"Effective rank per layer at init, L={deepest}",
        ),
    }
    deep = max(trained_depths(settings))
    if settings["train_rules"]:
        out[f"layers-trained-L{deep}"] = figures.rank_per_layer(
            {r: first[f"{r}/L{deep}"]["trained"][1:] for r in settings["train_rules"]},
            f"Effective rank per layer after training, L={deep}",
        )
        out["learning-curves"] = figures.learning_curves(
            {
                f"{r} L={d}": first[f"{r}/L{d}"]
                for d in trained_depths(settings)
                for r in settings["train_rules"]
            },
            "Validation loss during training, seed " + next(iter(per_seed)),
            group=lambda name: name.split()[0],
        )
    return out
