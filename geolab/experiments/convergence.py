"""Has a training run converged, is it still improving, or did it collapse? One rule, ``judge``.

A trained run records its validation metric every ``eval_every`` steps (the task's loss: "loss"
in nats for text, "mse" for regression). With T the number of training steps, u(s) the curve in
the unit the rule reads — the loss itself for text, log v(s) for a regression's MSE (an MSE that
keeps halving near zero is still learning, however small it is) —

    ref  = min { u(s) : s ≤ ¾ T }          the best value before the last quarter
    last = min { u(s) : s > ¾ T }          the best value in the last quarter

the run is

* **collapsed** when the last quarter is worse than its best before by more than a margin:
  last − ref > ln 2 for a regression (its best MSE of the last quarter is over twice the best
  before), (last − ref) / |ref| > 5 % for text;
* **not converged** when the last quarter still improves: (ref − last) / |ref| ≥ 2 % for text,
  ref − last ≥ 0.02 in log-MSE for a regression (a 2 % relative gain);
* **converged** otherwise;

and, before all of these, **did not train** when no validation value differs from the first by
more than ``STILL`` (relative): a run that never moves (e.g. a start where every gradient is
exactly zero) has neither learned nor failed, whatever its numbers say.

Taking minima makes a noisy but flat curve converge and a curve still falling not. The rule needs
evaluations on both sides of ¾ T; a run evaluated only at its end cannot be judged and counts as
not converged. ``RULE`` states this in every result file (``record``), with the function's name.
"""

import math

TOLERANCE = 0.02
QUARTER = 0.75
COLLAPSE_LOG_MSE = math.log(2.0)
COLLAPSE_LOSS = 0.05
STILL = 1e-6  # relative: float32 rounding of an unchanged model's validation value is ~1e-7
CONVERGED, NOT_CONVERGED, COLLAPSED = "converged", "not converged", "collapsed"
DID_NOT_TRAIN = "did not train"
STATES = (CONVERGED, NOT_CONVERGED, COLLAPSED, DID_NOT_TRAIN)
FUNCTION = "geolab.experiments.convergence.judge"
RULE = (
    f"{FUNCTION}: with ref / last the best validation value at s ≤ ¾T / s > ¾T (T the training "
    "steps, v evaluated every eval_every steps), read as log v for a regression's MSE and as v "
    "for a text loss: collapsed when last is worse than ref by more than ln 2 (MSE more than "
    f"doubled) or {COLLAPSE_LOSS:.0%} (text loss); not converged when the last quarter still "
    f"gains ≥ {TOLERANCE:.0%} (ref − last ≥ 0.02 in log-MSE, (ref − last)/|ref| ≥ 0.02 in "
    f"loss); converged otherwise; did not train when no value differs from the first by more "
    f"than {STILL:g} relative"
)


def val_curve(history: list[dict], metric: str) -> dict:
    """{"metric", "steps", "values"}: the validation points in a trainer's history."""
    key = f"val_{metric}"
    rows = [row for row in history if key in row]
    return {"metric": metric, "steps": [r["step"] for r in rows], "values": [r[key] for r in rows]}


def judge(curve: dict, total_steps: int) -> dict:
    """{"state", "converged", "improvement"} of a validation curve (the module docstring).

    ``improvement`` is the last quarter's gain in the rule's unit (ref − last in log-MSE for
    "mse", (ref − last)/|ref| otherwise; negative when it got worse); ``converged`` is
    ``state == "converged"``. Without an evaluation before or after ¾ of ``total_steps`` the
    state is "not converged" and ``improvement`` None.
    """
    cut = QUARTER * total_steps
    log = curve["metric"] == "mse"
    points = list(zip(curve["steps"], curve["values"], strict=True))
    before = [v for s, v in points if s <= cut]
    after = [v for s, v in points if s > cut]
    if not before or not after:
        return {"state": NOT_CONVERGED, "converged": False, "improvement": None}
    first = points[0][1]
    if all(abs(v - first) <= STILL * abs(first) for _, v in points):
        return {"state": DID_NOT_TRAIN, "converged": False, "improvement": 0.0}
    ref, last = min(before), min(after)
    if log:
        floor = 1e-30  # an exact zero MSE stays finite in log space
        improvement = math.log(max(ref, floor)) - math.log(max(last, floor))
        collapsed = -improvement > COLLAPSE_LOG_MSE
    else:
        improvement = (ref - last) / abs(ref) if ref else 0.0
        collapsed = -improvement > COLLAPSE_LOSS
    state = COLLAPSED if collapsed else NOT_CONVERGED if improvement >= TOLERANCE else CONVERGED
    return {"state": state, "converged": state == CONVERGED, "improvement": improvement}


def eval_every(total_steps: int, points: int = 20) -> int:
    """The evaluation interval giving ≈ ``points`` validation points over training (at least 1)."""
    return max(1, total_steps // points)


def trained_runs(numbers, path: str = "") -> dict:
    """Every trained run (a dict with a "val_curve") in a protocol's per-seed numbers, by its
    path there ("42/postln/L12": seed, then keys)."""
    if not isinstance(numbers, dict):
        return {}
    if "val_curve" in numbers:
        return {path: numbers}
    out = {}
    for key, value in numbers.items():
        out.update(trained_runs(value, f"{path}/{key}" if path else str(key)))
    return out


def rejudge(per_seed: dict, total_steps: int) -> None:
    """Set every trained run's "state", "converged" and "improvement" from its stored curve."""
    for run in trained_runs(per_seed).values():
        run.update(judge(run["val_curve"], total_steps))


def record(per_seed: dict) -> dict:
    """The result file's convergence entry: the rule (naming ``judge``), how many trained runs
    are in each state, and the paths of those that have not converged."""
    runs = trained_runs(per_seed)
    return {
        "function": FUNCTION,
        "rule": RULE,
        "tolerance": TOLERANCE,
        "runs": len(runs),
        "converged": sum(r["state"] == CONVERGED for r in runs.values()),
        "collapsed": [k for k, r in runs.items() if r["state"] == COLLAPSED],
        "not_converged": [k for k, r in runs.items() if r["state"] != CONVERGED],
    }


def states_text(runs) -> str:
    """ "k/n converged" plus the count of each other state, e.g. "2/4 converged, 1 collapsed".

    A converged run that did not beat its task's trivial baseline (``"learned"`` False, set by
    ``geolab.experiments.baselines.judge_run``) only plateaued where a trivial predictor is,
    e.g. at chance perplexity: the count says so, "3/3 converged (3 stalled at a trivial
    baseline: not learned)", so "converged" never reads as "learned"."""
    runs = list(runs)
    counts = {s: sum(r["state"] == s for r in runs) for s in STATES}
    stalled = sum(r["state"] == CONVERGED and r.get("learned") is False for r in runs)
    text = f"{counts[CONVERGED]}/{len(runs)} converged"
    if stalled:
        text += f" ({stalled} stalled at a trivial baseline: not learned)"
    others = (NOT_CONVERGED, COLLAPSED, DID_NOT_TRAIN)
    return text + "".join(f", {counts[s]} {s}" for s in others if counts[s])
