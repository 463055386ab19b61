"""MGT protocol 3 — the β distribution over depth and training (Su & You 2026, experiment 3).

A 100-layer MGT is trained; at fractions {0, ¼, ½, 1} of training (the paper's epochs
{0, 25, 50, 100} of 100) every rule's β = λ·tanh(X W_β + b_β) + ε (Su & You 2026, Eq. 6) is
collected with ``geolab.record`` during an eval forward on a fixed validation batch. Per layer (the
attention and MLP steps of a layer pooled, all tokens and channels): mean, std, fraction
negative and a histogram on the allowed range (−λ+ε, λ+ε) (``geolab.metrics.beta_stats_per_layer``).

The paper predicts a sign "phase transition": E[β] > 0 in early layers (accumulation), a sizeable
fraction β < 0 in deep ones (erasure), sharpening as training goes on. Verdict rules (geolab's):

* transition — reproduced if at the end of training the first quarter of layers has mean β > 0,
  the last quarter has fraction negative ≥ 0.1 and above the first quarter's (seed-averaged
  profile), and *every seed's* Spearman correlation of layer index and fraction negative is
  > 0.5 (a seed's draw moves the profile: a mean profile can correlate where two of three seeds
  do not); not reproduced if the last quarter's fraction negative is < 0.1 (no sizeable erasure
  anywhere deep); inconclusive otherwise.
* sharpening — reproduced if the deep-minus-shallow gap in fraction negative grows at every
  snapshot and ends ≥ 0.1; not reproduced if it ends < 0.1; inconclusive otherwise.

A value within 1 % of its line (``verdicts.knife_edge``, e.g. a gap of 0.1004 against 0.1) is
named in the verdict as a knife edge.

The trained model's effective rank per layer (``geolab.rank_profile`` on the same probe, as
``rank_evolution`` measures it) is recorded too ("trained_rank"), so the same long runs judge H2
(MGT keeps Rank_eff > 0.5 at 100 layers) as a labelled extra beside rank_evolution's H2, by
rank_evolution's rule (``rank_evolution.final_verdict``); runs recorded before it was added
carry no profile and no such row.
"""

import torch

from geolab.experiments import baselines, rank_evolution
from geolab.experiments import verdicts as v
from geolab.experiments.runs import (
    baseline,
    fit,
    judge_runs,
    model_config,
    parallel_map,
    text_shape,
    text_task,
    train_config,
)
from geolab.experiments.scales import PAPER, SMALL, paper_train, smoke
from geolab.experiments.snapshots import beta_snapshot, snapshot_steps, text_probe
from geolab.model import GeoTransformer
from geolab.probe import rank_profile
from geolab.rules import rule_class

NAME = "beta_dynamics"
TITLE = "MGT 3: β per layer over training in a 100-layer MGT (the sign phase transition)"
SIZEABLE, CORRELATED = 0.1, 0.5

SCALES = {
    "tiny": smoke(4, n_layer=4, probe_batch=4, seeds=[42]),
    "small": {
        **SMALL,
        "n_layer": 100,
        "probe_batch": 8,
        "seeds": [42, 123, 456],
        "train": {"steps": 12000, "batch_size": 16, "warmup": 100, "eval_batches": 8},
        "reductions": {
            "task": "character-level tiny-shakespeare instead of WikiText-2",
            "d_model": "32 instead of 256",
            "seq_len": "32 instead of 128",
            "training": "12000 AdamW steps of batch 16 × 32 characters (≈ 6.1 epochs) instead of "
            "100 epochs of batch 64 × 128 tokens; snapshots at steps 0, 3000, 6000, 12000 stand "
            "for epochs 0, 25, 50, 100 (the last quarter still gained 3.1 % at 3000 steps and "
            "2.6 % at 4500; a power law through those two puts the 2 % point near 9,000–10,000 "
            "steps)",
            "seeds": "42, 123, 456 (the committed result trained 42 alone, `--seeds 1`): a run is "
            "≈ 1¾ h of one CPU thread here, three ≈ 5¼ h (`--jobs 2`: two side by side, each "
            "finished seed saved and kept when the command runs again)",
        },
    },
    "paper": {
        **PAPER,
        "n_layer": 100,
        "probe_batch": 16,
        "seeds": [42, 123, 456],
        "grad_checkpoint": True,
        "train": paper_train(25500),
        "reductions": {"training": "100 epochs of WikiText-2 ≈ 25,500 steps of 64 × 128 tokens"},
    },
}


def spearman(x: list[float], y: list[float]) -> float | None:
    """Spearman rank correlation with average ranks for ties; None if either side is constant."""

    def ranks(values):
        t = torch.tensor(values, dtype=torch.float64)
        r = torch.empty_like(t)
        order = t.argsort()
        r[order] = torch.arange(len(values), dtype=torch.float64)
        for value in t.unique():
            tie = t == value
            r[tie] = r[tie].mean()
        return r

    a, b = ranks(x), ranks(y)
    a, b = a - a.mean(), b - b.mean()
    den = (a.norm() * b.norm()).item()
    return None if den == 0 else (a @ b).item() / den


def planned(settings: dict) -> list:
    """(label, GeoConfig) of every trained run (``plan.protocol_plan``)."""
    return [("mgt", model_config(settings, text_shape(settings), "mgt"))]


def beta_run(seed: int, settings: dict, log) -> dict:
    """One seed's run (a job of :func:`run`): MGT trained with β snapshots at the fractions of
    ``snapshot_steps``, then its trained rank profile. {"snapshots", "trained_rank", **numbers}."""
    task = text_task(settings)
    probe = text_probe(task, settings["probe_batch"])
    cfg = model_config(settings, task, "mgt")
    low, high = rule_class(cfg).beta_range(cfg)
    torch.manual_seed(seed)
    model = GeoTransformer(cfg)
    at = snapshot_steps(train_config(settings, seed).steps)
    snaps = {"0%": beta_snapshot(model, probe, low, high)}

    def on_step(rec):
        if rec["step"] in at:
            s = snaps[at[rec["step"]]] = beta_snapshot(model, probe, low, high)
            log(
                f"  seed {seed} step {rec['step']}: loss {rec['loss']:.4g}, "
                f"mean β {sum(s['mean']) / len(s['mean']):.4g}"
            )

    numbers, trained = fit(cfg, task, settings, seed, log, model=model, callback=on_step)
    device = next(trained.parameters()).device
    ranks = rank_evolution.layer_ranks(rank_profile(trained.eval(), probe.to(device)))
    return {"snapshots": snaps, "trained_rank": ranks, **numbers}


def run(settings: dict, seeds: list[int], log) -> v.Outcome:
    jobs = [(s,) for s in seeds]
    runs = parallel_map(beta_run, jobs, settings, log)
    per_seed = {str(s): out for s, out in zip(seeds, runs, strict=True)}
    summary, hyps = conclude(settings, seeds, per_seed)
    return v.Outcome(per_seed, summary, hyps)


def conclude(settings: dict, seeds: list[int], per_seed: dict) -> tuple[dict, list]:
    """(summary, hypotheses) from the trained runs' numbers (each run re-judged: convergence,
    ratio to the best trivial baseline, learned); both claims read every run and stand on at
    least three seeds."""
    found = baseline(text_task(settings), settings, seeds[0])
    judge_runs(per_seed.values(), found, settings["train"]["steps"])
    summary, hyps = judge(per_seed, settings["n_layer"])
    summary["baselines"] = {"rule": baselines.LEARNED_RULE, "tasks": {settings["task"]: found}}
    for h in hyps:
        # A trend of one model, but a seed's draw moves β's layer profile: three seeds, as for
        # rank_evolution's curves and the comparisons.
        v.gate(h, {"mgt": list(per_seed.values())}, seeds=len(seeds))
    if all("trained_rank" in p for p in per_seed.values()):
        hyps.append(h2(per_seed, settings["n_layer"], len(seeds)))
    return summary, hyps


def h2(per_seed: dict, n_layer: int, seeds: int) -> v.Hypothesis:
    """H2 read on these runs' trained final-layer rank (module docstring), a labelled extra."""
    finals = [p["trained_rank"][-1] for p in per_seed.values()]
    verdict, interval = rank_evolution.final_verdict(finals, low=rank_evolution.H2_MIN)
    h = v.Hypothesis(
        id=f"H2 at L={n_layer} on the β runs",
        claim="MGT keeps Rank_eff > 0.5 at 100 layers (judged on the long β runs)",
        measured=f"MGT final-layer rank (trained) at L={n_layer}: "
        + ", ".join(v.fmt(x) for x in finals),
        verdict=verdict,
        rule=f"the 95 % interval of MGT's final-layer rank above {rank_evolution.H2_MIN}",
        interval=interval,
        extra=True,
    )
    return v.gate(h, {"mgt": list(per_seed.values())}, seeds=seeds)


def movement(per_seed: dict) -> dict:
    """How far β left β₀: per layer, the seed-averaged change of mean β from the first snapshot
    to the last ("shift_per_layer"), its largest size ("max_abs_shift"), and the range of β values
    seen at the end ("range_covered": the lowest and highest non-empty histogram bin edges, over
    layers and seeds)."""
    seeds = list(per_seed.values())
    labels = list(seeds[0]["snapshots"])
    first, last = labels[0], labels[-1]
    n_layer = len(seeds[0]["snapshots"][first]["mean"])
    shift = [
        sum(p["snapshots"][last]["mean"][i] - p["snapshots"][first]["mean"][i] for p in seeds)
        / len(seeds)
        for i in range(n_layer)
    ]
    lows, highs = [], []
    for p in seeds:
        end = p["snapshots"][last]
        for counts in end["hist"]:
            filled = [j for j, c in enumerate(counts) if c > 0]
            if filled:
                lows.append(end["edges"][filled[0]])
                highs.append(end["edges"][filled[-1] + 1])
    return {
        "shift_per_layer": shift,
        "max_abs_shift": max(abs(s) for s in shift),
        "range_covered": [min(lows), max(highs)] if lows else None,
    }


def _quarters(values: list[float]) -> tuple[float, float]:
    q = max(1, len(values) // 4)
    return sum(values[:q]) / q, sum(values[-q:]) / q


def judge(per_seed: dict, n_layer: int) -> tuple[dict, list[v.Hypothesis]]:
    """Summary numbers (seed-averaged per snapshot) and the two verdicts."""
    labels = list(next(iter(per_seed.values()))["snapshots"])
    summary = {}
    layers = list(range(n_layer))
    for label in labels:
        snaps = [p["snapshots"][label] for p in per_seed.values()]
        mean = [sum(s["mean"][i] for s in snaps) / len(snaps) for i in range(n_layer)]
        neg = [sum(s["frac_negative"][i] for s in snaps) / len(snaps) for i in range(n_layer)]
        (mean_first, _), (neg_first, neg_last) = _quarters(mean), _quarters(neg)
        summary[label] = {
            "mean_beta_first_quarter": mean_first,
            "frac_negative_first_quarter": neg_first,
            "frac_negative_last_quarter": neg_last,
            "gap": neg_last - neg_first,
            "spearman_layer_frac_negative": spearman(layers, neg),
            "spearman_per_seed": {
                seed: spearman(layers, p["snapshots"][label]["frac_negative"])
                for seed, p in per_seed.items()
            },
            "frac_negative_overall": sum(neg) / n_layer,
        }
    end = summary[labels[-1]]
    rho = end["spearman_layer_frac_negative"]
    rhos = list(end["spearman_per_seed"].values())
    v1 = transition_verdict(end, rhos)
    gaps = [summary[k]["gap"] for k in labels]
    if gaps[-1] < SIZEABLE:
        v2 = v.NOT_REPRODUCED
    elif all(b > a for a, b in zip(gaps, gaps[1:], strict=False)):
        v2 = v.REPRODUCED
    else:
        v2 = v.INCONCLUSIVE
    rho_text = "undefined (constant)" if rho is None else v.fmt(rho)
    seeds_text = ", ".join(
        f"{seed} {'undefined' if r is None else v.fmt(r)}"
        for seed, r in end["spearman_per_seed"].items()
    )
    passing = sum(r is not None and r > CORRELATED for r in rhos)
    move = summary["movement"] = movement(per_seed)
    span = move["range_covered"]
    span_text = "none" if span is None else f"[{v.fmt(span[0])}, {v.fmt(span[1])}]"
    hyps = [
        v.Hypothesis(
            id="β sign transition",
            claim="E[β] > 0 in early layers, a sizeable fraction β < 0 in deep layers",
            measured="end of training: mean β (first quarter) "
            f"{v.fmt(end['mean_beta_first_quarter'])}, fraction β<0 first/last quarter "
            f"{v.fmt(end['frac_negative_first_quarter'])}/"
            f"{v.fmt(end['frac_negative_last_quarter'])}, "
            f"Spearman(layer, fraction β<0) per seed {seeds_text} (above {CORRELATED} in "
            f"{passing} of {len(rhos)}; mean profile's {rho_text}); "
            f"mean β moved at most {v.fmt(move['max_abs_shift'])} from its start in any layer, β "
            f"covered {span_text} at the end",
            verdict=v1,
            rule=f"reproduced: first-quarter mean β > 0, last-quarter fraction β<0 ≥ {SIZEABLE} "
            f"and above the first quarter's (seed-averaged), every seed's Spearman > "
            f"{CORRELATED}; not reproduced: last-quarter fraction < {SIZEABLE}",
            edges=edges(
                [(end["frac_negative_last_quarter"], SIZEABLE, "last-quarter fraction β<0")]
                + [
                    (r, CORRELATED, f"seed {s} Spearman")
                    for s, r in end["spearman_per_seed"].items()
                    if r is not None
                ]
            ),
        ),
        v.Hypothesis(
            id="β transition sharpens",
            claim="the sign change over depth becomes clearer as training proceeds",
            measured="deep − shallow fraction β<0 at "
            + ", ".join(f"{k}: {v.fmt(g)}" for k, g in zip(labels, gaps, strict=False)),
            verdict=v2,
            rule=f"reproduced: the gap grows at every snapshot and ends ≥ {SIZEABLE}; not "
            f"reproduced: it ends < {SIZEABLE}",
            edges=edges([(gaps[-1], SIZEABLE, "final gap")]),
        ),
    ]
    return summary, hyps


def transition_verdict(end: dict, rhos: list) -> str:
    """The transition rule (module docstring) on the end snapshot's seed-averaged numbers ``end``
    and each seed's Spearman correlation ``rhos`` (None for a constant profile)."""
    if end["frac_negative_last_quarter"] < SIZEABLE:
        return v.NOT_REPRODUCED
    every_seed = all(r is not None and r > CORRELATED for r in rhos)
    if end["mean_beta_first_quarter"] > 0 and end["gap"] > 0 and every_seed:
        return v.REPRODUCED
    return v.INCONCLUSIVE


def edges(margins: list[tuple]) -> list[str]:
    """The knife edges (``verdicts.knife_edge``) among (value, line, name) margins."""
    return [e for value, line, name in margins if (e := v.knife_edge(value, line, name))]


def findings(result: dict) -> list[str]:
    """Plain-words findings computed from a result file: how far β moved, the range it covered
    and, when the sign transition does not appear, that as a finding."""
    summary = result["summary"]
    move = summary["movement"]
    labels = [k for k in summary if k not in ("movement", "baselines")]
    end = summary[labels[-1]]
    shift = move["shift_per_layer"]
    span = move["range_covered"]
    out = [
        f"Over {result['config']['train']['steps']} steps the mean β of a layer moved by "
        f"{v.fmt(min(shift))} to {v.fmt(max(shift))} "
        f"(largest size {v.fmt(move['max_abs_shift'])}); "
        + (f"at the end β covered [{v.fmt(span[0])}, {v.fmt(span[1])}]." if span else "")
    ]
    if end["frac_negative_last_quarter"] < SIZEABLE:
        out.append(
            "No sign transition at this scale: in the deepest quarter of layers "
            f"{v.fmt(100 * end['frac_negative_last_quarter'])} % of β are negative."
        )
    return out


def make_figures(settings: dict, per_seed: dict, summary: dict) -> dict:
    from geolab.experiments import figures  # plotly, only where figures are drawn

    first = next(iter(per_seed.values()))["snapshots"]
    layers = list(range(1, settings["n_layer"] + 1))
    final = first[list(first)[-1]]
    return {
        "frac-negative": figures.beta_by_layer(
            layers,
            first,
            "frac_negative",
            "Fraction of β < 0 per layer over training",
            "fraction β < 0",
        ),
        "mean": figures.beta_by_layer(
            layers, first, "mean", "Mean β per layer over training", "E[β]"
        ),
        "heatmap-final": figures.beta_heatmap(
            final["hist"], final["edges"], "β histogram per layer at the end of training"
        ),
        "learning-curves": figures.learning_curves(
            {f"mgt L={settings['n_layer']} seed {s}": p for s, p in per_seed.items()},
            "Validation loss during training",
            group=lambda name: name.split()[0],
        ),
    }
