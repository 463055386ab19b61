"""The claimed-quantity rule: is a run's claimed quantity settled on one side of its threshold?

A claim such as "bare DDL learns y = −x with β → 2" is about a quantity (the validation cosine to
the true map, DDL's mean β, E∆'s mean γ), not about the MSE. Without a learning-rate schedule the
MSE of an exact reflection keeps falling like a power of the steps (MSE ≈ 2(1 − cos)), so the
MSE convergence gate ("the last quarter gains < 2 %") fails at every budget while the claimed
quantities have long stopped moving; and it can pass a run whose claimed quantity still drifts.
This rule (fixed in issue 54 before any run it judges; docs/design.md §8) reads the quantity.

For a claim "q ≥ θ" (side σ = +1) or "q < θ" (σ = −1) at budget T, with q recorded at T/4, T/2
and T (every doubling of the first budget's T/4 up to the last budget is recorded):

    m(s) = σ · (q(s) − θ)                        the margin on the claim's side
    d₁ = max(0, m(T/4) − m(T/2)),  d₂ = max(0, m(T/2) − m(T))   drifts toward the threshold

A run is **settled** at T when (a) m(T/2) > 0 and m(T) > 0, (b) m(T) ≥ 4·d₂ (the last drift,
repeated four times, would not cross the line) and (c) d₂ ≤ max(0.005, d₁) (the drift is not
speeding up). A claim is *reproduced* when every seed's run is settled on the claim's side and
the Student 95 % interval of q(T) across seeds lies on that side; *not reproduced* when both hold
on the other side (σ → −σ); otherwise *inconclusive*, naming the condition that failed.
"""

import hashlib

from geolab.experiments import verdicts as v
from geolab.experiments.stats import fmt_interval, t_interval

DRIFT_FLOOR = 0.005
DRIFT_TIMES = 4
RULE = (
    "claimed-quantity rule (issue 54): margin m(s) = σ·(q(s) − θ); d₁ = max(0, m(T/4) − m(T/2)), "
    "d₂ = max(0, m(T/2) − m(T)); a run is settled at T when (a) m(T/2) > 0 and m(T) > 0, (b) "
    f"m(T) ≥ {DRIFT_TIMES}·d₂, (c) d₂ ≤ max({DRIFT_FLOOR}, d₁); reproduced when every seed is "
    "settled on the claim's side and the Student 95 % interval of q(T) across seeds lies on that "
    "side; not reproduced when both hold on the other side; else inconclusive"
)
RULE_HASH = hashlib.sha256(RULE.encode()).hexdigest()[:16]
UNSETTLED = " not settled: "  # in the reason of a claim a seed's run does not settle
NOT_APART = (" covers ", "no interval from")  # in the reason of an interval on the line


def is_rule_reason(reason: str) -> bool:
    """Whether a verdict's reason is this rule's (``judge``), not a gate's."""
    return any(mark in reason for mark in (UNSETTLED, *NOT_APART))


def reads(budget: int) -> tuple[int, int, int]:
    """The steps the rule reads at ``budget`` T: T/4, T/2 and T (integer steps, at least 1)."""
    return max(1, budget // 4), max(1, budget // 2), budget


def checkpoints(budgets: list[int]) -> list[int]:
    """The steps at which the claimed quantities are recorded: T/4 of the first budget doubled
    up to the last budget (``[2000, 64000]`` → 500, 1000, …, 64000), plus every step a budget's
    rule reads (``reads``)."""
    steps = {max(1, budgets[0] // 4)}
    while max(steps) * 2 <= budgets[-1]:
        steps.add(max(steps) * 2)
    return sorted(steps.union(*(reads(b) for b in budgets)))


def settle(series: dict, budget: int, threshold: float, side: int) -> dict:
    """{"settled", "failed", "margins", "drifts"} of one run's quantity at ``budget``.

    series: {"steps": [...], "values": [...]} (the recorded checkpoints); side: +1 for a claim
    "q ≥ threshold", −1 for "q < threshold". ``failed`` names the conditions (a)–(c) that fail.
    """
    at = dict(zip(series["steps"], series["values"], strict=True))
    m4, m2, m1 = (side * (at[s] - threshold) for s in reads(budget))
    d1, d2 = max(0.0, m4 - m2), max(0.0, m2 - m1)
    failed = []
    if not (m2 > 0 and m1 > 0):
        failed.append(f"(a) margin at T/2, T {m2:.3g}, {m1:.3g} not both > 0")
    elif m1 < DRIFT_TIMES * d2:  # (b) only means something on the right side of the line
        failed.append(f"(b) margin {m1:.3g} < {DRIFT_TIMES} × last drift {d2:.3g}")
    if d2 > max(DRIFT_FLOOR, d1):
        failed.append(f"(c) drift speeds up: {d2:.3g} > max({DRIFT_FLOOR}, {d1:.3g})")
    return {"settled": not failed, "failed": failed, "margins": [m4, m2, m1], "drifts": [d1, d2]}


def judge(
    name: str,
    series: list[dict],
    seeds: list,
    budget: int,
    threshold: float,
    side: int,
    interval: dict | None = None,
) -> dict:
    """{"verdict", "interval", "reason", "text"}: the claim "``name`` ≥ threshold" (side +1) or
    "< threshold" (side −1) over the seeds' series (one per seed, in ``seeds``' order), at
    ``budget``, under ``RULE``. ``interval``: the interval the claim reads (default: Student's
    of the seeds' values at ``budget``; a comparison passes Welch's). ``reason`` names the failed
    condition of an inconclusive claim ("β: seed 2002 not settled: (b) …")."""
    if interval is None:
        interval = t_interval(
            [dict(zip(s["steps"], s["values"], strict=True))[budget] for s in series]
        )
    out = {"interval": interval, "reason": ""}
    word = "≥" if side > 0 else "<"
    out["text"] = f"{name} {fmt_interval(interval)} (line {word} {threshold:g})"
    for verdict, s in ((v.REPRODUCED, side), (v.NOT_REPRODUCED, -side)):
        runs = [settle(x, budget, threshold, s) for x in series]
        lies = interval is not None and all(
            s * (bound - threshold) > 0 for bound in (interval["low"], interval["high"])
        )
        if all(r["settled"] for r in runs) and lies:
            out["verdict"] = verdict
            return out
    claim_side = [settle(x, budget, threshold, side) for x in series]
    unsettled = [
        f"seed {seed}{UNSETTLED}{'; '.join(r['failed'])}"
        for seed, r in zip(seeds, claim_side, strict=True)
        if not r["settled"]
    ]
    if unsettled:
        out["reason"] = f"{name}: " + ", ".join(unsettled)
    elif interval is None:
        out["reason"] = f"{name}: no interval from fewer than 2 seeds"
    else:
        out["reason"] = f"{name}: the 95 % interval {fmt_interval(interval)} covers {threshold:g}"
    out["verdict"] = v.INCONCLUSIVE
    return out
