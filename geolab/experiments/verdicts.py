"""Verdicts: hypotheses, the outcome of a protocol and the rules that turn numbers into verdicts.

Verdicts are computed from the measured numbers by rules written next to each hypothesis, never
edited by hand: "reproduced", "not reproduced at this scale", "inconclusive: REASONS" or
"undecidable on this task: REASON" (no run at any size can pass the claim's gate on this task,
e.g. echo's noise floor above half its best trivial baseline: the claim needs another task
setting, not more compute). A rule's verdict stands only when the claim's evidence is sound
(``gate``); otherwise the verdict reads "inconclusive: REASONS", every reason that applies:

* "fewer than 3 seeds" — a claim read over seeds (a comparison, or a trained model's trend)
  needs the papers' three (``stats.MIN_SEEDS``);
* "sizes differ" — the compared models' parameter counts differ by more than ``SIZE_TOLERANCE``;
* "collapsed", "not converged" — a run the claim reads is in that state
  (``geolab.experiments.convergence.judge``);
* "did not train" — a run the claim reads never moved from its start (checked for every claim:
  a success or a failure must come from training, not from a stationary start);
* "not learned" — a run the claim needs did not beat its task's best trivial baseline by the
  stated margin (``geolab.experiments.baselines``).

A margin within ``KNIFE_EDGE`` (1 %) of its line is a *knife edge*: the verdict stands, but its
text says so ("reproduced — knife edge: 0.1004 vs line 0.1", ``knife_edge``), since a hair's
difference in the measurement would flip it.

A fixed-budget comparison (the E∆ table: every model trained for the same number of steps, as
published) is gated on learning, not on convergence; its runs' convergence states are still shown.

Every gated claim shows its margins (``margins``): the last-quarter gain of its runs against the
2 % convergence line and their ratio to the best trivial baseline against the learned line, so
a gate decided by a hair is visible. A hypothesis marked ``extra`` is a labelled extra outside
the claim count (e.g. the E∆ table's inversion rows, a transformer where the published claims on
bare operators cannot be tested).
"""

import math
from dataclasses import dataclass, field

from geolab.experiments import baselines, convergence
from geolab.experiments.stats import MIN_SEEDS, sign_of

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced at this scale"
INCONCLUSIVE = "inconclusive"
UNDECIDABLE = "undecidable on this task"
SIZE_TOLERANCE = 0.03
KNIFE_EDGE = 0.01  # a value within 1 % of its (nonzero) line decides its rule by a hair
FEW_SEEDS = f"fewer than {MIN_SEEDS} seeds"
SIZES_DIFFER = "sizes differ"
NOT_LEARNED = "not learned"
REASONS = (
    FEW_SEEDS,
    SIZES_DIFFER,
    convergence.COLLAPSED,
    convergence.NOT_CONVERGED,
    convergence.DID_NOT_TRAIN,
    NOT_LEARNED,
)


@dataclass
class Hypothesis:
    """One claim next to what geolab measured: ``claim`` (the paper's words or number),
    ``measured`` (ours, as text), ``verdict`` and ``rule`` (how the verdict follows from the
    numbers), ``interval`` (the 95 % interval the rule reads, as text). ``gate`` fills the rest:
    ``reasons`` (why the rule's verdict does not stand), ``rule_verdict`` (what the rule alone
    says), ``convergence`` and ``learned`` (the states of the runs read), ``baseline`` (each
    model's ratio to its task's best trivial baseline), ``sizes`` (parameter counts compared),
    ``margins`` (the runs' gains and ratios against the gates' lines) and ``gated_on``. Set by
    the protocol: ``undecidable`` (why no run can decide the claim on this task; it then reads
    "undecidable on this task: …"), ``extra`` (a labelled extra, outside the claim count) and
    ``edges`` (the rule's knife-edge margins, ``knife_edge``, added to the verdict's text)."""

    id: str
    claim: str
    measured: str
    verdict: str
    rule: str
    interval: str = ""
    reasons: list = field(default_factory=list)
    rule_verdict: str = ""
    convergence: str = ""
    learned: str = ""
    baseline: str = ""
    sizes: str = ""
    margins: str = ""
    undecidable: str = ""
    extra: bool = False
    gated_on: list = field(default_factory=list)
    edges: list = field(default_factory=list)


def inconclusive(reasons: list[str]) -> str:
    """ "inconclusive: r1; r2" — the verdict of a claim whose evidence fails ``reasons``."""
    return f"{INCONCLUSIVE}: " + "; ".join(reasons)


def undecided(reason: str) -> str:
    """ "undecidable on this task: REASON"."""
    return f"{UNDECIDABLE}: {reason}"


def knife_edge(value: float, line: float, name: str = "") -> str:
    """ "knife edge: NAME 0.1004 vs line 0.1" when ``value`` lies within ``KNIFE_EDGE`` × |line|
    of a nonzero ``line`` (|value − line| ≤ 0.01 |line|); "" otherwise (a line at 0 has no
    relative margin)."""
    if line == 0 or abs(value - line) > KNIFE_EDGE * abs(line):
        return ""
    what = f"{name} " if name else ""
    return f"knife edge: {what}{value:.4g} vs line {line:g}"


def with_edges(verdict: str, edges: list[str]) -> str:
    """ "VERDICT — EDGE; EDGE": the verdict with its knife-edge margins; unchanged without."""
    return f"{verdict} — " + "; ".join(edges) if edges else verdict


def counted(hypotheses: list[dict]) -> list[dict]:
    """The hypotheses that count as claims (labelled extras left out)."""
    return [h for h in hypotheses if not h.get("extra")]


def kind(verdict: str) -> str:
    """The verdict's kind: reproduced, not reproduced at this scale, inconclusive or
    undecidable on this task (the reasons and knife edges stripped)."""
    for k in (UNDECIDABLE, INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED):
        if verdict.startswith(k):
            return k
    return verdict


def margins(runs: list[dict]) -> str:
    """The runs' last-quarter gains against the convergence line and their ratios to the best
    trivial baseline against the learned line, e.g. "gain 2.02–2.11 % (line 2 %); ratio
    0.92–0.95 (line 0.9)"; "" without trained runs."""
    parts = []
    gains = [r["improvement"] for r in runs if r.get("improvement") is not None]
    if gains:
        line = f"{convergence.TOLERANCE:.0%}"
        parts.append(f"gain {_span([100 * g for g in gains], '%')} (line {line})")
    ratios = [r for r in runs if "baseline_ratio" in r]
    if ratios:
        mse = [r["baseline_ratio"] for r in ratios if "mse" in r.get("val", {})]
        ppl = [r["baseline_ratio"] for r in ratios if "mse" not in r.get("val", {})]
        for vals, line in ((mse, baselines.MSE_FRACTION), (ppl, baselines.PPL_FRACTION)):
            if vals:
                parts.append(f"ratio {_span(vals)} (line {line:g})")
    return "; ".join(parts)


def _span(values: list[float], unit: str = "") -> str:
    lo, hi = min(values), max(values)
    same = f"{lo:.3g}" == f"{hi:.3g}"
    return f"{lo:.3g}{unit}" if same else f"{lo:.3g}–{hi:.3g}{unit}"


def size_spread(counts) -> float:
    """max/min − 1 of parameter counts: how far apart the compared models' sizes are."""
    counts = list(counts)
    return max(counts) / min(counts) - 1


def gate(
    h: Hypothesis,
    runs: dict,
    on: tuple = ("converged", "learned"),
    seeds: int | None = None,
    compared=None,
    must_learn=None,
) -> Hypothesis:
    """``h`` with its verdict standing only on sound evidence (module docstring).

    runs: label -> the trained runs (dicts with "state", and "learned", "baseline_ratio",
    "n_params" where known) the claim reads, one per seed. ``on`` names the run checks that gate
    ("converged": no collapsed or unconverged run; "learned": every run of ``must_learn``, default
    every label, learned). ``seeds``: the seed count of a claim read over seeds (None: the claim
    does not rest on seeds, e.g. an init-only measurement). ``compared``: the labels whose sizes
    must agree within ``SIZE_TOLERANCE`` (None: no size check). Reasons the rule put in
    ``h.reasons`` are kept first. The rule's verdict is kept in ``rule_verdict``.
    """
    every = [r for group in runs.values() for r in group]
    reasons = list(h.reasons)  # a rule may name its own (e.g. a width the claim needs)
    if seeds is not None and seeds < MIN_SEEDS:
        reasons.append(FEW_SEEDS)
    if compared:
        counts = {k: runs[k][0]["n_params"] for k in compared}
        spread = size_spread(counts.values())
        h.sizes = ", ".join(f"{k} {n:,}" for k, n in counts.items()) + f" (spread {spread:.1%})"
        if spread > SIZE_TOLERANCE:
            reasons.append(SIZES_DIFFER)
    if every:
        h.convergence = convergence.states_text(every)
    states = {r["state"] for r in every}
    if "converged" in on:
        reasons += [s for s in (convergence.COLLAPSED, convergence.NOT_CONVERGED) if s in states]
    if convergence.DID_NOT_TRAIN in states:  # neither a success nor a failure: no training
        reasons.append(convergence.DID_NOT_TRAIN)
    learners = [r for k in (must_learn or runs) for r in runs[k]]
    if learners and all("learned" in r for r in learners):
        h.learned = f"{sum(r['learned'] for r in learners)}/{len(learners)}"
        named = any("learned" in r for r in reasons)  # the rule already says who did not learn
        if "learned" in on and not all(r["learned"] for r in learners) and not named:
            reasons.append(NOT_LEARNED)
    ratios = {k: [r["baseline_ratio"] for r in g if "baseline_ratio" in r] for k, g in runs.items()}
    h.baseline = ", ".join(f"{k} {fmt(sum(v) / len(v))}" for k, v in ratios.items() if v)
    h.margins = margins(every)
    h.gated_on = list(on)
    h.rule_verdict = with_edges(h.verdict, h.edges)
    h.reasons = reasons
    if h.undecidable:
        h.verdict = undecided(h.undecidable)
    elif reasons:
        h.verdict = with_edges(inconclusive(reasons), h.edges)
    else:
        h.verdict = h.rule_verdict
    return h


@dataclass
class Outcome:
    """What a protocol's ``run`` returns: JSON-ready numbers and the hypotheses (its figures are
    drawn from the numbers by ``make_figures``, in the runner)."""

    per_seed: dict
    summary: dict
    hypotheses: list[Hypothesis]


def mean_std(values) -> dict:
    """{"mean", "std", "n"} of a list of numbers; std is the sample std (0 for one value)."""
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("mean_std: values is empty; pass at least one number")
    n = len(vals)
    mean = sum(vals) / n
    var = sum((v - mean) ** 2 for v in vals) / (n - 1) if n > 1 else 0.0
    return {"mean": mean, "std": math.sqrt(var), "n": n}


def interval_verdict(interval: dict | None) -> str:
    """Verdict for a claim "quantity > 0" from its 95 % interval (``stats``): reproduced if the
    interval lies above 0, not reproduced if below, inconclusive if it covers 0 or is None."""
    return {1: REPRODUCED, -1: NOT_REPRODUCED, 0: INCONCLUSIVE}[sign_of(interval)]


def threshold_verdict(interval: dict | None, low=None, high=None) -> str:
    """Verdict for "mean ≥ low" (or "mean ≤ high") from its 95 % interval: reproduced when the
    whole interval meets it, not reproduced when the whole interval misses it, inconclusive
    otherwise or for None."""
    if interval is None:
        return INCONCLUSIVE
    if low is not None:
        ok, bad = interval["low"] >= low, interval["high"] < low
    else:
        ok, bad = interval["high"] <= high, interval["low"] > high
    return REPRODUCED if ok else NOT_REPRODUCED if bad else INCONCLUSIVE


def worst(verdicts: list[str]) -> str:
    """The weakest of rule verdicts: not reproduced, else inconclusive, else reproduced."""
    for verdict in (NOT_REPRODUCED, INCONCLUSIVE):
        if verdict in verdicts:
            return verdict
    return REPRODUCED


def fmt(x: float) -> str:
    """A number in 4 significant digits, for the measured-value text."""
    return f"{x:.4g}"


def fmt_ms(stats: dict) -> str:
    return f"{fmt(stats['mean'])} ± {fmt(stats['std'])}" if stats["n"] > 1 else fmt(stats["mean"])


def lowest(stats: dict, what: str) -> str:
    """ "lowest WHAT: rule (mean), highest: rule (mean)" of ``{rule: {"mean", …}}``."""
    order = sorted(stats, key=lambda k: stats[k]["mean"])
    lo, hi = order[0], order[-1]
    return (
        f"Lowest mean {what}: {lo} ({fmt(stats[lo]['mean'])}); highest: {hi} "
        f"({fmt(stats[hi]['mean'])})."
    )
