"""Verdicts: hypotheses, the outcome of a protocol and the rules that turn numbers into verdicts.

Verdicts are computed from the measured numbers by rules written next to each hypothesis, never
edited by hand: "reproduced", "not reproduced at this scale" or "inconclusive".
"""

import math
from dataclasses import dataclass, field

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced at this scale"
INCONCLUSIVE = "inconclusive"


@dataclass
class Hypothesis:
    """One claim next to what geolab measured: ``claim`` (the paper's words or number),
    ``measured`` (ours, as text), ``verdict`` (one of the three above) and ``rule`` (how the
    verdict follows from the numbers)."""

    id: str
    claim: str
    measured: str
    verdict: str
    rule: str


@dataclass
class Outcome:
    """What a protocol's ``run`` returns: JSON-ready numbers and plotly figures by name."""

    per_seed: dict
    summary: dict
    hypotheses: list[Hypothesis]
    figures: dict = field(default_factory=dict)


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
