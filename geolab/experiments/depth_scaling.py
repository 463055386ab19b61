"""MGT protocol 4 — depth scaling at a fixed parameter budget (Su & You 2026, experiment 4).

For each rule and depth L the width, then the MLP's hidden width, is chosen by
``geolab.match_params`` (``vary``: d_model, then d_mlp) so every model has the same number of
parameters to well under 1 % (the paper: ≈ 20M, L ∈ {24, 48, 100, 200}; this answers "is MGT's
gain just its ≈ 25 % extra parameters?").
Reported per run: validation perplexity, convergence speed (the first step at which the training
loss, averaged over a trailing window, reaches a threshold common to all runs: the worst final
averaged loss, so every run reaches it) and, over seeds, the std of the final loss.

Claim (the paper's hypothesis): at fixed parameters MGT reaches lower perplexity than the
baselines and the gap grows with depth. Verdict (geolab's rule): reproduced if at the deepest L
Welch's 95 % interval of ppl(best baseline) − ppl(MGT) over seeds lies above 0 and the gap is
larger than at the shallowest L; not reproduced if the interval lies below 0; inconclusive
otherwise — and only on three seeds, sizes within 3 % and converged runs that learned
(perplexity at most 0.9 × the best n-gram's, ``baselines``; ``verdicts.gate``).
"""

from geolab.experiments import baselines
from geolab.experiments import verdicts as v
from geolab.experiments.runs import (
    baseline,
    judge_runs,
    model_config,
    parallel_map,
    text_shape,
    text_task,
    train_rule,
)
from geolab.experiments.scales import SMALL_TRAIN, SMOKE, paper_train
from geolab.experiments.stats import fmt_interval, sign_of, welch

NAME = "depth_scaling"
TITLE = "MGT 4: depth scaling at a fixed parameter budget (width matched with match_params)"
SMOOTH = 10

SCALES = {
    "tiny": {
        "task": "shakespeare",
        "seq_len": 16,
        "n_head": 2,
        "budget": 20_000,
        "vary": ["d_model", "d_mlp"],
        "depths": [1, 2],
        "rules": ["preln", "mgt"],
        "seeds": [42, 123],
        "train": {"steps": 3, "batch_size": 4, "warmup": 1, "eval_batches": 1},
        "reductions": SMOKE,
    },
    "small": {
        "task": "shakespeare",
        "seq_len": 32,
        "n_head": 4,
        "budget": 150_000,
        "vary": ["d_model", "d_mlp"],
        "depths": [6, 12, 24, 48],
        "rules": ["postln", "preln", "mgt"],
        "seeds": [42, 123, 456],
        "train": SMALL_TRAIN,
        "reductions": {
            "task": "character-level tiny-shakespeare instead of WikiText-2",
            "budget": "≈150k parameters instead of ≈20M (widths move in steps of the 4 heads, "
            "the MLP's hidden width then by one unit; n_params per run in the summary)",
            "depths": "6, 12, 24, 48 instead of 24, 48, 100, 200 (at 150k parameters a "
            "200-layer model would be 4 channels wide)",
            "rules": "postln, preln, mgt (no deepnorm, mgt_mhc, mgt_ddl)",
            "training": "800 AdamW steps of batch 16 × 32 characters instead of 50 epochs of "
            "batch 64 × 128 tokens",
        },
    },
    "paper": {
        "task": "wikitext2",
        "seq_len": 128,
        "n_head": 8,
        "budget": 20_000_000,
        "vary": ["d_model", "d_mlp"],
        "depths": [24, 48, 100, 200],
        "rules": ["postln", "preln", "deepnorm", "mgt"],
        "seeds": [42, 123, 456],
        "grad_checkpoint": True,
        "train": paper_train(12750),
        "reductions": {},
    },
}


def smoothed(curve: list[float], window: int = SMOOTH) -> list[float]:
    """Trailing moving average (the first values average over what exists so far)."""
    out, total = [], 0.0
    for i, value in enumerate(curve):
        total += value
        if i >= window:
            total -= curve[i - window]
        out.append(total / min(i + 1, window))
    return out


def planned(settings: dict) -> list:
    """(label, GeoConfig) of every trained run (``plan.protocol_plan``), widths matched."""
    task = text_shape(settings)
    return [
        (
            f"{r}/L{d}",
            model_config(settings, task, r, n_layer=d, d_model=settings["n_head"] * 4),
        )
        for d in settings["depths"]
        for r in settings["rules"]
    ]


def depth_run(seed: int, depth: int, rule: str, settings: dict, log) -> dict:
    """One run (a job of :func:`run`): ``rule`` at ``depth`` layers, its widths matched to the
    scale's budget (``runs.model_config``)."""
    task = text_task(settings)
    return train_rule(
        task, settings, seed, log, rule, n_layer=depth, d_model=settings["n_head"] * 4
    )


def run(settings: dict, seeds: list[int], log) -> v.Outcome:
    jobs = [(s, d, r) for s in seeds for d in settings["depths"] for r in settings["rules"]]
    per_seed = {str(s): {} for s in seeds}
    for (seed, depth, rule), out in zip(
        jobs, parallel_map(depth_run, jobs, settings, log), strict=True
    ):
        per_seed[str(seed)][f"{rule}/L{depth}"] = out
    summary, hyps = conclude(settings, seeds, per_seed)
    return v.Outcome(per_seed, summary, hyps)


def conclude(settings: dict, seeds: list[int], per_seed: dict) -> tuple[dict, list]:
    """(summary, hypotheses) from the trained runs' numbers (each run re-judged: convergence,
    ratio to the best trivial baseline, learned; the common loss threshold and the steps to it)."""
    runs = [r for row in per_seed.values() for r in row.values()]
    found = baseline(text_task(settings), settings, seeds[0])
    judge_runs(runs, found, settings["train"]["steps"])
    threshold = max(smoothed(r["curve"])[-1] for r in runs)
    for r in runs:
        r["steps_to_threshold"] = next(
            i + 1 for i, loss in enumerate(smoothed(r["curve"])) if loss <= threshold
        )
    summary = {
        "threshold_loss": threshold,
        "runs": {},
        "baselines": {"rule": baselines.LEARNED_RULE, "tasks": {settings["task"]: found}},
    }
    for key in per_seed[str(seeds[0])]:
        rows = [per_seed[str(s)][key] for s in seeds]
        summary["runs"][key] = {
            "d_model": rows[0]["d_model"],
            "n_params": rows[0]["n_params"],
            "val_ppl": v.mean_std([x["val"]["ppl"] for x in rows]),
            "val_loss": v.mean_std([x["val"]["loss"] for x in rows]),
            "steps_to_threshold": v.mean_std([x["steps_to_threshold"] for x in rows]),
        }
    keys = list(per_seed[str(seeds[0])])
    by_key = {k: [per_seed[str(s)][k] for s in seeds] for k in keys}
    h = v.gate(judge(settings, summary, by_key), by_key, seeds=len(seeds), compared=keys)
    return summary, [h]


def judge(settings: dict, summary: dict, by_key: dict) -> v.Hypothesis:
    runs, depths = summary["runs"], settings["depths"]
    baselines_ = [r for r in settings["rules"] if r != "mgt"]

    def gap(depth):
        """(best baseline, Welch interval of its ppl − MGT's, difference of the means)."""
        best = min(baselines_, key=lambda r: runs[f"{r}/L{depth}"]["val_ppl"]["mean"])
        ppl = {k: [x["val"]["ppl"] for x in by_key[f"{k}/L{depth}"]] for k in (best, "mgt")}
        mean = (
            runs[f"{best}/L{depth}"]["val_ppl"]["mean"] - runs[f"mgt/L{depth}"]["val_ppl"]["mean"]
        )
        return best, welch(ppl[best], ppl["mgt"]), mean

    best, deep, deep_gap = gap(depths[-1])
    _, shallow, shallow_gap = gap(depths[0])
    if sign_of(deep) > 0 and deep_gap > shallow_gap:
        verdict = v.REPRODUCED
    elif sign_of(deep) < 0:
        verdict = v.NOT_REPRODUCED
    else:
        verdict = v.INCONCLUSIVE
    text = "; ".join(
        f"L={d}: "
        + ", ".join(f"{r} {v.fmt_ms(runs[f'{r}/L{d}']['val_ppl'])}" for r in settings["rules"])
        for d in depths
    )
    return v.Hypothesis(
        id="depth scaling",
        claim="at a fixed parameter budget MGT reaches lower perplexity, the gap growing with "
        "depth",
        measured=f"val perplexity at ≈{settings['budget']:,} params — {text}. Gap to the best "
        f"baseline ({best}) at L={depths[-1]}: {v.fmt(deep_gap)} "
        f"(L={depths[0]}: {v.fmt(shallow_gap)})",
        verdict=verdict,
        rule="Welch's 95 % interval of ppl(best baseline) − ppl(MGT) at the deepest L: reproduced "
        "if above 0 and the gap exceeds the shallowest L's; not reproduced if below 0; else "
        "inconclusive",
        interval=f"L={depths[-1]} {fmt_interval(deep)}; L={depths[0]} {fmt_interval(shallow)}",
    )


def findings(result: dict) -> list[str]:
    """Plain-words findings computed from a result file (``report.findings_markdown``)."""
    runs, settings = result["summary"]["runs"], result["config"]
    best = []
    for d in settings["depths"]:
        rule = min(settings["rules"], key=lambda r: runs[f"{r}/L{d}"]["val_ppl"]["mean"])
        best.append(f"L={d} {rule} ({v.fmt(runs[f'{rule}/L{d}']['val_ppl']['mean'])})")
    return ["Lowest validation perplexity per depth: " + ", ".join(best) + "."]


def make_figures(settings: dict, per_seed: dict, summary: dict) -> dict:
    from geolab.experiments import figures  # plotly, only where figures are drawn

    runs, depths = summary["runs"], settings["depths"]
    per_rule = {
        key: {r: [runs[f"{r}/L{d}"][key] for d in depths] for r in settings["rules"]}
        for key in ("val_ppl", "steps_to_threshold")
    }
    return {
        "ppl-vs-depth": figures.metric_vs_depth(
            depths,
            per_rule["val_ppl"],
            f"Validation perplexity at ≈{settings['budget']:,} parameters",
            "perplexity",
        ),
        "convergence-vs-depth": figures.metric_vs_depth(
            depths,
            per_rule["steps_to_threshold"],
            f"Steps to reach the common loss threshold {v.fmt(summary['threshold_loss'])}",
            "steps",
        ),
        "learning-curves": figures.learning_curves(
            next(iter(per_seed.values())),
            f"Validation loss during training, seed {next(iter(per_seed))}",
            group=lambda name: name.split("/")[0],
        ),
    }
