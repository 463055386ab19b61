"""The claimed-quantity rule (geolab.experiments.settled) and the reflection claims it judges."""

import copy
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geolab.experiments import reflection, settled
from geolab.experiments import verdicts as v


def series(values, steps=(500, 1000, 2000)):
    return {"steps": list(steps), "values": list(values)}


def test_checkpoints_double_from_the_first_quarter_to_the_last_budget():
    assert settled.checkpoints([2000, 64000]) == [500, 1000, 2000, 4000, 8000, 16000, 32000, 64000]
    assert settled.checkpoints([4]) == [1, 2, 4]
    assert settled.checkpoints([7]) == [1, 2, 3, 4, 7]  # a --steps 7 run reads 1, 3 and 7


def test_each_condition_of_the_rule_by_hand():
    # a cosine at 0.95, 0.97, 0.98 against 0.9: margins 0.05, 0.07, 0.08, no drift toward the line
    ok = settled.settle(series([0.95, 0.97, 0.98]), 2000, 0.9, 1)
    assert ok["settled"] and ok["margins"] == pytest.approx([0.05, 0.07, 0.08])
    # (a): the margin at T/2 is not positive
    a = settled.settle(series([0.95, 0.89, 0.92]), 2000, 0.9, 1)
    assert not a["settled"] and a["failed"][0].startswith("(a)")
    # (b): margin 0.03 at T after a drift of 0.01 toward the line: 0.03 < 4 × 0.01
    b = settled.settle(series([0.95, 0.94, 0.93]), 2000, 0.9, 1)
    assert [f[:3] for f in b["failed"]] == ["(b)"]
    # (c): the drift speeds up (0.002 then 0.006) though the margin is still wide
    c = settled.settle(series([1.0, 0.998, 0.992]), 2000, 0.5, 1)
    assert [f[:3] for f in c["failed"]] == ["(c)"]
    # side −1 reads "q < θ": a cosine at −0.3 settles below 0
    assert settled.settle(series([-0.31, -0.30, -0.30]), 2000, 0.0, -1)["settled"]


def test_a_claim_is_reproduced_not_reproduced_or_names_what_failed():
    seeds = [2001, 2002, 2003]
    above = [series([0.95, 0.96, 0.97 + e]) for e in (0, 0.005, 0.01)]
    assert settled.judge("cos", above, seeds, 2000, 0.9, 1)["verdict"] == v.REPRODUCED
    below = [series([0.5, 0.5, 0.5 - e]) for e in (0, 0.005, 0.01)]
    assert settled.judge("cos", below, seeds, 2000, 0.9, 1)["verdict"] == v.NOT_REPRODUCED
    drifting = [*above[:2], series([0.99, 0.95, 0.91])]
    out = settled.judge("cos", drifting, seeds, 2000, 0.9, 1)
    assert out["verdict"] == v.INCONCLUSIVE and out["reason"].startswith("cos: seed 2003")
    one = settled.judge("cos", above[:1], seeds[:1], 2000, 0.9, 1)
    assert one["verdict"] == v.INCONCLUSIVE and "fewer than 2 seeds" in one["reason"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=3, max_size=3),
    st.floats(-1e3, 1e3, allow_nan=False),
    st.sampled_from([1, -1]),
)
def test_settled_on_one_side_is_never_settled_on_the_other(values, threshold, side):
    s = series(values)
    here, there = (settled.settle(s, 2000, threshold, x)["settled"] for x in (side, -side))
    assert not (here and there)
    out = settled.settle(s, 2000, threshold, side)
    assert all(math.isfinite(x) for x in out["margins"] + out["drifts"])
    assert min(out["drifts"]) >= 0


def _runs(steps=32, budgets=(8, 32)):
    s = copy.deepcopy(reflection.SCALES["tiny"])
    s["train"] = {**s["train"], "steps": steps, "lr": 1e-2}
    s["budgets"] = list(budgets)
    return s, reflection.run(s, [1, 2, 3], lambda m: None)


def test_reflection_records_the_claimed_quantities_and_judges_each_budget():
    s, out = _runs()
    run = out.per_seed["1"]["geolab/ddl"]
    assert run["series"]["steps"] == [2, 4, 8, 16, 32]
    assert set(run["series"]) == {"steps", "mse", "cos", "beta"}
    assert run["series"]["cos"][-1] == pytest.approx(run["val"]["cos"])
    edelta = out.per_seed["1"]["geolab/edelta"]["series"]
    assert "gamma" in edelta and "beta" not in edelta
    counted = [h for h in out.hypotheses if not h.extra]
    extras = [h for h in out.hypotheses if h.extra]
    assert len(counted) == len(extras) == 8  # four claims × two flavors per budget
    assert all(h.id.endswith("at 32 steps") for h in extras)
    assert all(settled.RULE_HASH in h.rule and h.gated_on == ["learned"] for h in out.hypotheses)
    assert out.summary["claimed_quantity_rule"]["hash"] == settled.RULE_HASH
    assert set(out.summary["tables"]) == {"8", "32"}
    # the budget-8 table reads the runs as they stood at step 8
    at8 = [out.per_seed[str(k)]["reference/jpmhc"]["series"]["cos"][2] for k in (1, 2, 3)]
    assert out.summary["tables"]["8"]["reference/jpmhc"]["cos"]["mean"] == pytest.approx(
        sum(at8) / 3
    )


def test_at_budget_cuts_the_curve_and_judges_convergence_there():
    run = {
        "series": {"steps": [2, 4, 8], "mse": [3.0, 2.0, 1.0], "cos": [0.1, 0.2, 0.3]},
        "val_curve": {"metric": "mse", "steps": [1, 2, 4, 6, 8], "values": [4, 3, 2, 1.5, 1]},
        "n_params": 10,
    }
    view = reflection.at_budget(run, 4)
    assert view["val"] == {"mse": 2.0, "cos": 0.2}
    assert view["val_curve"]["steps"] == [1, 2, 4]
    assert view["state"] == "not converged"  # 4 → 2 in its last quarter


def test_what_would_decide_a_claim_the_rule_leaves_open():
    from geolab.experiments import decide

    runs = {"2001": {"a": {"val_curve": {}, "seconds": 3600.0}}}
    result = {"protocol": "reflection", "scale": "small", "seeds": [2001], "per_seed": runs}
    result["config"] = {"train": {"steps": 2000}}
    moving = {"verdict": "inconclusive: cos: seed 2001 not settled: (b) …"}
    moving["reasons"] = [moving["verdict"][len("inconclusive: ") :]]
    later = decide.remedy("reflection", result | {"summary": {"budgets": [2000, 64000]}}, moving)
    assert later["what"].startswith("nothing more at this budget") and "64,000" in later["what"]
    assert decide.cost_text(later) == "none"
    once = decide.remedy("reflection", result | {"summary": {"budgets": [2000]}}, moving)
    assert once["what"].startswith("train twice as many steps") and once["cpu_hours"] == 2.0
    apart = {
        "verdict": "inconclusive",
        "reasons": ["cos: the 95 % interval [0.8, 0.95] covers 0.9"],
    }
    assert decide.remedy("reflection", result | {"summary": {}}, apart)["what"].startswith(
        "three more seeds"
    )
