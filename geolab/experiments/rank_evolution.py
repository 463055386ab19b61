"""MGT protocol 1 — rank evolution (seed 000 §5, experiment 1; docs/design.md §8).

Effective rank per layer (seed 000 Eq. 8, ``geolab.rank_profile``: exp(H(σ̂))/min(S, D), mean over
a fixed batch of validation windows) of post-LN, pre-LN, DeepNorm and the three MGT variants at
depths L, at initialisation and after training. The paper measures trained models (WikiText-2,
50 epochs); its hypotheses:

* H1 — the standard (post-LN) transformer's rank falls monotonically towards 0 as L → 100;
* H2 — MGT keeps Rank_eff > 0.5 at 100 layers.

"Rank at depth L" is the rank of the state after the last layer (before the final norm). Verdict
rules (geolab's, the paper gives no threshold for "→ 0"): H1 is reproduced when the trained
post-LN final-layer rank is non-increasing in L (tolerance 0.02) and below 0.1 at the deepest
stack; H2 when the trained MGT final-layer rank at the deepest stack is above 0.5.
"""

import torch

from geolab.experiments import figures
from geolab.experiments.runs import data_dir, model_config, train_config
from geolab.experiments.snapshots import text_probe
from geolab.experiments.verdicts import (
    NOT_REPRODUCED,
    REPRODUCED,
    Hypothesis,
    Outcome,
    fmt,
    mean_std,
)
from geolab.model import GeoTransformer
from geolab.probe import rank_profile
from geolab.tasks import get_task
from geolab.train import train

NAME = "rank_evolution"
TITLE = "MGT 1: effective rank per layer at initialisation and after training"
RULES = ["postln", "preln", "deepnorm", "mgt_mhc", "mgt_ddl", "mgt"]
H1_MAX, MONOTONE_TOL, H2_MIN = 0.1, 0.02, 0.5

SCALES = {
    "tiny": {
        "task": "shakespeare",
        "seq_len": 16,
        "d_model": 16,
        "n_head": 2,
        "depths": [2, 4],
        "rules": RULES,
        "train_rules": ["postln", "mgt"],
        "probe_batch": 4,
        "seeds": [42],
        "train": {"steps": 3, "batch_size": 4, "warmup": 1, "eval_batches": 1},
        "reductions": {"everything": "a smoke test of the code path, not a measurement"},
    },
    "small": {
        "task": "shakespeare",
        "seq_len": 32,
        "d_model": 32,
        "n_head": 4,
        "depths": [12, 24, 48, 100],
        "rules": RULES,
        "train_rules": ["postln", "preln", "deepnorm", "mgt"],
        "probe_batch": 8,
        "seeds": [42],
        "train": {"steps": 60, "batch_size": 8, "warmup": 10, "eval_batches": 8},
        "reductions": {
            "task": "character-level tiny-shakespeare instead of WikiText-2 (65-token vocabulary)",
            "d_model": "32 instead of 256",
            "seq_len": "32 instead of 128 (so Rank_eff divides by min(S, D) = 32)",
            "depths": "12, 24, 48, 100 (no 200)",
            "training": "60 AdamW steps of batch 8 instead of 50 epochs of batch 64",
            "trained rules": "postln, preln, deepnorm, mgt; mgt_mhc and mgt_ddl at init only",
            "seeds": "one seed (42) instead of three",
        },
    },
    "paper": {
        "task": "wikitext2",
        "seq_len": 128,
        "d_model": 256,
        "n_head": 8,
        "depths": [12, 24, 48, 100, 200],
        "rules": RULES,
        "train_rules": RULES,
        "probe_batch": 16,
        "seeds": [42, 123, 456],
        "grad_checkpoint": True,
        "train": {
            "steps": 12750,
            "batch_size": 64,
            "warmup": 500,
            "eval_batches": 50,
            "device": "auto",
            "bf16": True,
        },
        "reductions": {"training": "50 epochs of WikiText-2 ≈ 12,750 steps of 64 × 128 tokens"},
    },
}


def layer_ranks(profile: torch.Tensor) -> list[float]:
    """Per-step profile (2L+1,) -> [embedding, after layer 1, …, after layer L] (L+1 values)."""
    return profile[0::2].tolist()


def measure(settings: dict, seed: int, task, probe: torch.Tensor, log) -> dict:
    """Rank per layer at init (all rules) and after training (train_rules), for one seed."""
    out = {}
    for depth in settings["depths"]:
        for rule in settings["rules"]:
            cfg = model_config(settings, task, rule, n_layer=depth)
            torch.manual_seed(seed)
            model = GeoTransformer(cfg).eval()
            row = {"init": layer_ranks(rank_profile(model, probe))}
            if rule in settings["train_rules"]:
                res = train(cfg, task, train_config(settings, seed), model=model)
                device = next(res.model.parameters()).device
                row["trained"] = layer_ranks(rank_profile(res.model.eval(), probe.to(device)))
                row["val_loss"] = res.metrics["loss"]
            msg = " ".join(f"{k} {fmt(v[-1])}" for k, v in row.items() if k != "val_loss")
            log(f"  seed {seed} L={depth} {rule}: final-layer rank {msg}")
            out[f"{rule}/L{depth}"] = row
    return out


def run(settings: dict, seeds: list[int], log) -> Outcome:
    task = get_task(settings["task"], seq_len=settings["seq_len"], data_dir=data_dir(settings))
    probe = text_probe(task, settings["probe_batch"])
    per_seed = {str(s): measure(settings, s, task, probe, log) for s in seeds}
    keys = per_seed[str(seeds[0])].keys()
    summary = {}
    for key in keys:
        rows = [per_seed[str(s)][key] for s in seeds]
        summary[key] = {
            phase: mean_std([r[phase][-1] for r in rows])
            for phase in ("init", "trained")
            if phase in rows[0]
        }
    return Outcome(
        per_seed, summary, hypotheses(settings, summary), make_figures(settings, per_seed, summary)
    )


def hypotheses(settings: dict, summary: dict) -> list[Hypothesis]:
    depths = settings["depths"]
    deep = max(d for d in depths if d <= 100) if min(depths) <= 100 else max(depths)
    phase = "trained" if "postln" in settings["train_rules"] else "init"
    post = [summary[f"postln/L{d}"][phase]["mean"] for d in depths if d <= deep]
    monotone = all(b <= a + MONOTONE_TOL for a, b in zip(post, post[1:], strict=False))
    h1_ok = monotone and post[-1] < H1_MAX
    curve = ", ".join(f"L={d}: {fmt(v)}" for d, v in zip(depths, post, strict=False))
    pre = summary.get(f"preln/L{deep}", {}).get(phase)
    extra = f"; pre-LN at L={deep}: {fmt(pre['mean'])}" if pre else ""
    h1 = Hypothesis(
        id="H1",
        claim="standard (post-LN) Rank_eff decreases monotonically towards 0 as L → 100",
        measured=f"post-LN final-layer rank ({phase}) {curve}{extra}",
        verdict=REPRODUCED if h1_ok else NOT_REPRODUCED,
        rule=f"non-increasing in L (tol {MONOTONE_TOL}) and < {H1_MAX} at L={deep}",
    )
    mgt_phase = "trained" if "mgt" in settings["train_rules"] else "init"
    mgt = summary[f"mgt/L{deep}"][mgt_phase]["mean"]
    h2 = Hypothesis(
        id="H2",
        claim="MGT keeps Rank_eff > 0.5 at 100 layers",
        measured=f"MGT final-layer rank ({mgt_phase}) at L={deep}: {fmt(mgt)}",
        verdict=REPRODUCED if mgt > H2_MIN else NOT_REPRODUCED,
        rule=f"MGT final-layer rank > {H2_MIN} at L={deep}",
    )
    return [h1, h2]


def make_figures(settings: dict, per_seed: dict, summary: dict) -> dict:
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
    if settings["train_rules"]:
        out[f"layers-trained-L{deepest}"] = figures.rank_per_layer(
            {r: first[f"{r}/L{deepest}"]["trained"][1:] for r in settings["train_rules"]},
            f"Effective rank per layer after training, L={deepest}",
        )
    return out
