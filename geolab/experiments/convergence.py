"""Has a training run converged? geolab's rule, applied to its validation curve.

A trained run records its validation metric every ``eval_every`` steps (the task's loss: "loss"
in nats for text, "mse" for regression). With T the number of training steps,

    ref  = min { v(s) : s ≤ ¾ T }          the best value before the last quarter
    last = min { v(s) : s > ¾ T }          the best value in the last quarter
    improvement = (ref − last) / |ref|     relative gain of the last quarter of training

and the run has converged when ``improvement < TOLERANCE`` (2 %): the last quarter of training
no longer improves the validation loss by more than 2 %, relative. Taking minima makes a noisy
but flat curve converge and a curve that is still falling not; a curve that rises in the last
quarter (over-fitting) has converged (improvement ≤ 0). The rule needs evaluations on both sides
of ¾ T; a run evaluated only at its end cannot be judged and counts as not converged.

A protocol whose losses fall geometrically towards zero (the E∆ table's regressions: echo MSE
goes 1e-3 → 1e-4 → 1e-5 long after the model has learned the task) measures the gain in the
task's own unit instead: ``improvement = (ref − last) / scale`` with ``scale`` the predict-zero
loss, mean(y²) (``SCALED_RULE``), and states that rule in its result file.
"""

TOLERANCE = 0.02
QUARTER = 0.75
RULE = (
    "converged when the last quarter of training improves the validation loss by less than "
    f"{TOLERANCE:.0%}, relative: (min of v(s) for s ≤ ¾T − min of v(s) for s > ¾T) / |min of v(s) "
    "for s ≤ ¾T| < 0.02, with v the validation loss (mse for regression) evaluated every "
    "eval_every steps and T the training steps"
)
SCALED_RULE = (
    "converged when the last quarter of training improves the validation MSE by less than "
    f"{TOLERANCE:.0%} of the task's predict-zero MSE: (min of v(s) for s ≤ ¾T − min of v(s) for "
    "s > ¾T) / mean(y²) < 0.02, with v evaluated every eval_every steps, T the training steps and "
    "y the validation targets (a loss that keeps halving near zero has stopped improving in the "
    "task's unit)"
)


def val_curve(history: list[dict], metric: str) -> dict:
    """{"metric", "steps", "values"}: the validation points in a trainer's history."""
    key = f"val_{metric}"
    rows = [row for row in history if key in row]
    return {"metric": metric, "steps": [r["step"] for r in rows], "values": [r[key] for r in rows]}


def judge(curve: dict, total_steps: int, scale: float | None = None) -> dict:
    """{"converged", "improvement"} of a validation curve (see the module docstring).

    The gain of the last quarter is divided by ``scale`` when given (``SCALED_RULE``), else by
    the best value before it (``RULE``). ``improvement`` is None (and ``converged`` False) when
    there is no evaluation before or after ¾ of ``total_steps``.
    """
    cut = QUARTER * total_steps
    points = list(zip(curve["steps"], curve["values"], strict=True))
    before = [v for s, v in points if s <= cut]
    after = [v for s, v in points if s > cut]
    if not before or not after:
        return {"converged": False, "improvement": None}
    ref, last = min(before), min(after)
    unit = abs(ref) if scale is None else scale
    improvement = (ref - last) / unit if unit else 0.0
    return {"converged": improvement < TOLERANCE, "improvement": improvement}


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


def record(per_seed: dict, rule: str = RULE) -> dict:
    """The result file's convergence entry: the rule, how many trained runs converged, and the
    paths of those that did not."""
    runs = trained_runs(per_seed)
    return {
        "rule": rule,
        "tolerance": TOLERANCE,
        "runs": len(runs),
        "converged": sum(bool(r["converged"]) for r in runs.values()),
        "not_converged": [k for k, r in runs.items() if not r["converged"]],
    }
