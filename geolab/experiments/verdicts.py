"""Verdicts: hypotheses, the outcome of a protocol and the rules that turn numbers into verdicts.

Verdicts are computed from the measured numbers by rules written next to each hypothesis, never
edited by hand: "reproduced", "not reproduced at this scale" or "inconclusive" — and only from
converged runs (``gate``): a hypothesis resting on a run that has not converged
(``geolab.experiments.convergence``) gets "inconclusive: not converged". A fixed-budget comparison
(the E∆ table: every model trained for the same number of steps, as published) is gated on each
run's "learned" flag instead and reads "inconclusive: not learned".
"""

import math
from dataclasses import dataclass

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced at this scale"
INCONCLUSIVE = "inconclusive"
NOT_CONVERGED = "inconclusive: not converged"
NOT_LEARNED = "inconclusive: not learned"
MISSING = {"converged": NOT_CONVERGED, "learned": NOT_LEARNED}  # gate flag -> its verdict


@dataclass
class Hypothesis:
    """One claim next to what geolab measured: ``claim`` (the paper's words or number),
    ``measured`` (ours, as text), ``verdict`` (one of the four above) and ``rule`` (how the
    verdict follows from the numbers). ``gate`` fills ``converged`` ("k/n" trained runs the
    claim rests on that converged, or were learned when ``gated_on`` is "learned") and
    ``rule_verdict`` (what the rule alone says)."""

    id: str
    claim: str
    measured: str
    verdict: str
    rule: str
    converged: str = ""
    rule_verdict: str = ""
    gated_on: str = "converged"


def gate(h: Hypothesis, runs, flag: str = "converged") -> Hypothesis:
    """``h`` with its verdict drawn only from converged runs.

    runs: the trained runs (dicts with a "converged" flag) the claim rests on. If any has not
    converged the verdict becomes NOT_CONVERGED; the rule's own verdict is kept in
    ``rule_verdict``. A claim on no trained run (e.g. a measurement at initialisation) keeps it.
    ``flag="learned"`` gates on the runs' "learned" flag instead (NOT_LEARNED), recorded in
    ``gated_on``.
    """
    flags = [bool(r[flag]) for r in runs]
    h.converged = f"{sum(flags)}/{len(flags)}"
    h.gated_on = flag
    h.rule_verdict = h.verdict
    if not all(flags):
        h.verdict = MISSING[flag]
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


def sign_verdict(stats: dict) -> str:
    """Verdict for a claim "quantity > 0" from its mean ± std over seeds.

    reproduced if mean − std > 0, not reproduced if mean + std < 0, inconclusive otherwise —
    including every single-seed measurement, which has no spread to judge against (geolab's rule).
    """
    if stats["n"] < 2:
        return INCONCLUSIVE
    if stats["mean"] - stats["std"] > 0:
        return REPRODUCED
    if stats["mean"] + stats["std"] < 0:
        return NOT_REPRODUCED
    return INCONCLUSIVE


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
