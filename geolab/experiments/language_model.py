"""MGT protocol 5 — word-level language modelling on WikiText-2 (Su & You 2026, experiment 5).

The same architecture (paper: D = 512, L = 24, 8 heads, WikiText-103, 100 epochs) with the
standard post-LN residual, pre-LN, DeepNorm and MGT. Reported: validation perplexity (mean ± std
over seeds) and the training curves. Claim: MGT reaches a lower perplexity than the standard
transformer (and, as a stronger test, geolab's addition, than pre-LN and DeepNorm). Verdict
per baseline: Welch's 95 % interval of ppl(baseline) − ppl(MGT) over seeds (``stats.welch``):
reproduced above 0, not reproduced below 0, inconclusive otherwise — and only on three seeds,
sizes within 3 %, converged runs that learned: perplexity at most 0.9 × the best n-gram's
(``baselines``, ``verdicts.gate``).
"""

from geolab.experiments import baselines
from geolab.experiments import verdicts as v
from geolab.experiments.runs import baseline, judge_runs, rule_plan, text_task, train_seeds
from geolab.experiments.scales import PAPER, SMOKE, paper_train, smoke
from geolab.experiments.stats import fmt_interval, welch

CORPUS_NAMES = {"wikitext2": "WikiText-2", "shakespeare": "tiny-shakespeare"}  # what a scale reads

NAME = "language_model"
TITLE = "MGT 5: WikiText-2 language modelling, MGT vs post-LN, pre-LN and DeepNorm"
RULES = ["postln", "preln", "deepnorm", "mgt"]

SCALES = {
    "tiny": smoke(
        2,
        n_layer=2,
        rules=RULES,
        seeds=[42, 123],
        reductions={
            **SMOKE,
            "corpus": "character-level tiny-shakespeare (shipped in data/, so the smoke test "
            "runs offline) instead of WikiText-2",
        },
    ),
    "small": {
        "task": "wikitext2",
        "seq_len": 32,
        "d_model": 64,
        "n_head": 4,
        "n_layer": 6,
        "rules": RULES,
        "seeds": [42, 123, 456],
        "train": {"steps": 1200, "batch_size": 16, "warmup": 60, "eval_batches": 8},
        "reductions": {
            "corpus": "WikiText-2 as at paper scale here (the paper itself uses WikiText-103)",
            "d_model": "64 instead of 512 (4 heads instead of 8)",
            "n_layer": "6 instead of 24",
            "seq_len": "32 instead of 128",
            "training": "1200 AdamW steps of batch 16 × 32 tokens (≈ 0.6M tokens, ≈ 30 % of one "
            "epoch) instead of 100 epochs",
            "validation": "the first 8 batches of 16 × 32 tokens (4,096 tokens) of the val split, "
            "every 60 steps",
        },
    },
    "paper": {
        **PAPER,
        "d_model": 512,
        "n_layer": 24,
        "rules": RULES,
        "seeds": [42, 123, 456],
        "train": paper_train(25500, warmup=1000, eval_batches=None),
        "reductions": {"corpus": "WikiText-2 (the paper names WikiText-103 for this experiment)"},
    },
}


planned = rule_plan


def run(settings: dict, seeds: list[int], log) -> v.Outcome:
    per_seed = train_seeds(settings, seeds, log)
    summary, hyps = conclude(settings, seeds, per_seed)
    return v.Outcome(per_seed, summary, hyps)


def conclude(settings: dict, seeds: list[int], per_seed: dict) -> tuple[dict, list]:
    """(summary, hypotheses) from the trained runs' numbers (each run re-judged: convergence,
    ratio to the best trivial baseline, learned)."""
    rows = [per_seed[str(s)] for s in seeds]
    rules = settings["rules"]
    corpus = CORPUS_NAMES[settings["task"]]
    found = baseline(text_task(settings), settings, seeds[0])
    judge_runs([x[r] for x in rows for r in rules], found, settings["train"]["steps"])

    def ppl(rule):
        return [x[rule]["val"]["ppl"] for x in rows]

    summary = {
        "val_ppl": {r: v.mean_std(ppl(r)) for r in rules},
        "val_loss": {r: v.mean_std([x[r]["val"]["loss"] for x in rows]) for r in rules},
        "n_params": {r: rows[0][r]["n_params"] for r in rules},
        "advantage_ppl": {
            r: v.mean_std([a - b for a, b in zip(ppl(r), ppl("mgt"), strict=True)])
            for r in rules
            if r != "mgt"
        },
        "welch_ppl": {r: welch(ppl(r), ppl("mgt")) for r in rules if r != "mgt"},
        "baselines": {"rule": baselines.LEARNED_RULE, "tasks": {settings["task"]: found}},
    }
    hyps = [
        v.gate(
            v.Hypothesis(
                id=f"MGT < {r} ({corpus} ppl)",
                claim=f"MGT reaches a lower perplexity than {r}"
                + (
                    " (the paper's standard transformer)"
                    if r == "postln"
                    else " (stronger baseline)"
                ),
                measured=f"val ppl {r} {v.fmt_ms(summary['val_ppl'][r])} vs MGT "
                f"{v.fmt_ms(summary['val_ppl']['mgt'])}; difference "
                f"{v.fmt_ms(summary['advantage_ppl'][r])}; best trivial baseline "
                f"({found['best']}) {v.fmt(found['value'])}",
                verdict=v.interval_verdict(summary["welch_ppl"][r]),
                rule="Welch's 95 % interval of ppl(baseline) − ppl(MGT) over seeds: reproduced "
                "if above 0, not reproduced if below 0, else inconclusive",
                interval=fmt_interval(summary["welch_ppl"][r]),
            ),
            {r: [x[r] for x in rows], "mgt": [x["mgt"] for x in rows]},
            seeds=len(seeds),
            compared=(r, "mgt"),
        )
        for r in rules
        if r != "mgt"
    ]
    return summary, hyps


def findings(result: dict) -> list[str]:
    """Plain-words findings computed from a result file (``report.findings_markdown``)."""
    return [v.lowest(result["summary"]["val_ppl"], "validation perplexity")]


def make_figures(settings: dict, per_seed: dict, summary: dict) -> dict:
    from geolab.experiments import figures  # plotly, only where figures are drawn

    corpus = CORPUS_NAMES[settings["task"]]
    return {
        "val-ppl": figures.dots_with_errors(
            summary["val_ppl"],
            f"{corpus} validation perplexity (mean ± std over seeds)",
            "perplexity",
        ),
        **figures.first_seed_curves(per_seed, settings["rules"], f"on {corpus}"),
    }
