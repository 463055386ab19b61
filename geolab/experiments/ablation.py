"""MGT protocol 2 — ablation and synergy (Su & You 2026, experiment 2, Eq. 9; docs/design.md §8).

The four configurations of the paper at 48 layers with the same hyper-parameters — post-LN
("standard"), +mHC only (``mgt_mhc``), +DDL only (``mgt_ddl``), full MGT — plus pre-LN and
DeepNorm as stronger baselines than the paper's (geolab's addition). Final validation loss per seed,
and the synergy coefficient (Eq. 9, ``geolab.synergy``)

    𝒮 = (L_base − L_MGT) − (L_base − L_mHC) − (L_base − L_DDL),

computed per seed with base = post-LN (the paper's) and base = pre-LN, then mean ± std.
Hypothesis: 𝒮 > 0 ("orthogonal synergy"). Verdict: the 95 % t interval of 𝒮 over seeds
(``stats.t_interval``) above 0 reproduces it, below 0 does not, covering 0 is inconclusive — and
only on three seeds, converged runs that learned (perplexity at most 0.9 × the best n-gram's,
``baselines``) and sizes within 3 % (``verdicts.gate``).
The paper keeps every other hyper-parameter identical, so its four configurations differ in size
by the gates' parameters (MGT +33 % at D = 32); here each rule's MLP hidden width is moved so its
count is full MGT's (``SIZED``), the baselines spending the gates' parameters as MLP width.
"""

from geolab.experiments import baselines
from geolab.experiments import verdicts as v
from geolab.experiments.runs import baseline, judge_runs, rule_plan, text_task, train_seeds
from geolab.experiments.scales import PAPER, SMALL, SMALL_TRAIN, paper_train, smoke
from geolab.experiments.stats import fmt_interval, t_interval
from geolab.metrics import synergy

NAME = "ablation"
TITLE = "MGT 2: ablation of the two gates at 48 layers and the synergy coefficient 𝒮 (Eq. 9)"
RULES = ["postln", "mgt_mhc", "mgt_ddl", "mgt", "preln", "deepnorm"]
# Every rule's MLP hidden width moved so its parameter count is full MGT's: the baselines get
# the parameters MGT's gates cost as MLP width, so 𝒮 compares gates, not sizes.
SIZED = {"size_of": "mgt", "vary": ["d_mlp"]}

SCALES = {
    "tiny": smoke(3, n_layer=3, rules=RULES, seeds=[42, 123], **SIZED),
    "small": {
        **SMALL,
        **SIZED,
        "n_layer": 48,
        "rules": RULES,
        "seeds": [42, 123, 456],
        "train": SMALL_TRAIN,
        "reductions": {
            "task": "character-level tiny-shakespeare instead of WikiText-2",
            "d_model": "32 instead of 256",
            "seq_len": "32 instead of 128",
            "training": "800 AdamW steps of batch 16 × 32 characters (lr 1e-3 as the paper) "
            "instead of full training with batch 64 × 128 tokens (the step count that converged "
            "24- and 100-layer trial runs)",
            "validation": "8 batches of 16 × 32 characters, every 40 steps",
        },
    },
    "paper": {
        **PAPER,
        **SIZED,
        "n_layer": 48,
        "rules": RULES,
        "seeds": [42, 123, 456],
        "train": paper_train(12750),
        "reductions": {},
    },
}


planned = rule_plan


def run(settings: dict, seeds: list[int], log) -> v.Outcome:
    per_seed = train_seeds(settings, seeds, log)
    for seed in seeds:
        row = per_seed[str(seed)]
        loss = {r: row[r]["val"]["loss"] for r in settings["rules"]}
        row["synergy_postln"] = synergy(
            loss["postln"], loss["mgt_mhc"], loss["mgt_ddl"], loss["mgt"]
        )
        row["synergy_preln"] = synergy(loss["preln"], loss["mgt_mhc"], loss["mgt_ddl"], loss["mgt"])
        log(
            f"  seed {seed}: 𝒮(post-LN) {row['synergy_postln']:.4g}, "
            f"𝒮(pre-LN) {row['synergy_preln']:.4g}"
        )
    summary, hyps = conclude(settings, seeds, per_seed)
    return v.Outcome(per_seed, summary, hyps)


def conclude(settings: dict, seeds: list[int], per_seed: dict) -> tuple[dict, list]:
    """(summary, hypotheses) from the trained runs' numbers (each run re-judged: convergence,
    ratio to the best trivial baseline, learned)."""
    rows = [per_seed[str(s)] for s in seeds]
    rules = settings["rules"]
    found = baseline(text_task(settings), settings, seeds[0])
    judge_runs([x[r] for x in rows for r in rules], found, settings["train"]["steps"])
    summary = {
        "val_loss": {r: v.mean_std([x[r]["val"]["loss"] for x in rows]) for r in rules},
        "n_params": {r: rows[0][r]["n_params"] for r in rules},
        "synergy_postln": v.mean_std([x["synergy_postln"] for x in rows]),
        "synergy_preln": v.mean_std([x["synergy_preln"] for x in rows]),
        "interval_postln": t_interval([x["synergy_postln"] for x in rows]),
        "interval_preln": t_interval([x["synergy_preln"] for x in rows]),
        "baselines": {"rule": baselines.LEARNED_RULE, "tasks": {settings["task"]: found}},
    }
    hyps = []
    for base, key, rule in (
        ("post-LN", "synergy_postln", "postln"),
        ("pre-LN", "synergy_preln", "preln"),
    ):
        interval = summary[key.replace("synergy", "interval")]
        h = v.Hypothesis(
            id=f"𝒮 > 0 ({base} base)",
            claim="synergy 𝒮 > 0: MGT beats the sum of its two gates' gains (Eq. 9)"
            + (" — the paper's base, post-LN" if base == "post-LN" else " — stronger base"),
            measured=f"𝒮 = {v.fmt_ms(summary[key])} over {len(seeds)} seed(s); val loss "
            + ", ".join(f"{r} {v.fmt_ms(summary['val_loss'][r])}" for r in rules),
            verdict=v.interval_verdict(interval),
            rule="95 % t interval of 𝒮 over seeds: reproduced if above 0, not reproduced if "
            "below 0, else inconclusive",
            interval=fmt_interval(interval),
        )
        compared = (rule, "mgt_mhc", "mgt_ddl", "mgt")
        hyps.append(
            v.gate(
                h, {r: [x[r] for x in rows] for r in compared}, seeds=len(seeds), compared=compared
            )
        )
    return summary, hyps


def findings(result: dict) -> list[str]:
    """Plain-words findings computed from a result file (``report.findings_markdown``)."""
    return [v.lowest(result["summary"]["val_loss"], "validation loss")]


def make_figures(settings: dict, per_seed: dict, summary: dict) -> dict:
    from geolab.experiments import figures  # plotly, only where figures are drawn

    depth = f"at L={settings['n_layer']}"
    return {
        "val-loss": figures.dots_with_errors(
            summary["val_loss"],
            f"Validation loss {depth} (mean ± std over seeds)",
            "cross-entropy (nats)",
        ),
        **figures.first_seed_curves(per_seed, settings["rules"], depth),
    }
