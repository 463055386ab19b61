"""Verdict kinds, margins, the judging record and what decides an undecided claim."""

import json
import math

import pytest
import torch

from geolab.experiments import convergence, decide, get_protocol, judging, report
from geolab.experiments import verdicts as v


def _run(state="converged", learned=True, ratio=0.3, improvement=0.01, n=1000):
    return {
        "state": state,
        "learned": learned,
        "baseline_ratio": ratio,
        "improvement": improvement,
        "n_params": n,
        "val": {"mse": 1.0},
    }


def test_a_run_that_never_moves_did_not_train_and_gates_every_claim():
    still = {"metric": "mse", "steps": [1, 50, 100], "values": [3.96, 3.96, 3.96]}
    assert convergence.judge(still, 100)["state"] == convergence.DID_NOT_TRAIN
    moving = {"metric": "mse", "steps": [1, 50, 100], "values": [3.96, 3.9, 3.9]}
    assert convergence.judge(moving, 100)["state"] == convergence.CONVERGED
    # gated on learning only (a fixed budget), a stationary run still makes it inconclusive
    h = v.Hypothesis("c", "claim", "m", v.REPRODUCED, "rule")
    v.gate(h, {"a": [_run(state=convergence.DID_NOT_TRAIN)] * 3}, ("learned",), seeds=3)
    assert h.verdict == "inconclusive: did not train" and h.rule_verdict == v.REPRODUCED


def test_undecidable_claims_say_why_and_keep_the_rule_verdict():
    h = v.Hypothesis("c", "claim", "m", v.NOT_REPRODUCED, "rule", undecidable="noise floor")
    v.gate(h, {"a": [_run(learned=False)] * 3}, ("learned",), seeds=3)
    assert h.verdict == "undecidable on this task: noise floor"
    assert v.kind(h.verdict) == v.UNDECIDABLE and h.rule_verdict == v.NOT_REPRODUCED
    assert v.kind("inconclusive: not learned") == v.INCONCLUSIVE
    assert v.kind(v.REPRODUCED) == v.REPRODUCED


def test_margins_show_the_gain_and_ratio_against_their_lines():
    runs = [_run(improvement=0.0202, ratio=0.92), _run(improvement=0.0211, ratio=0.95)]
    assert v.margins(runs) == "gain 2.02–2.11% (line 2%); ratio 0.92–0.95 (line 0.5)"
    text = [{**r, "val": {"ppl": 10.0}} for r in runs]
    assert v.margins(text).endswith("ratio 0.92–0.95 (line 0.9)")
    h = v.Hypothesis("c", "claim", "m", v.REPRODUCED, "rule")
    v.gate(h, {"a": runs}, seeds=3)
    assert h.margins == v.margins(runs)


def test_failure_claims_compare_sizes():
    h = v.Hypothesis("fails", "claim", "m", v.REPRODUCED, "rule")
    runs = {"jpmhc": [_run(n=1240)] * 3, "preln": [_run(n=1000)] * 3}
    v.gate(h, runs, ("learned",), 3, ("jpmhc", "preln"), ("preln",))
    assert h.verdict == "inconclusive: sizes differ" and "spread 24.0%" in h.sizes


def test_counts_leave_extras_out():
    hyps = [
        {"id": "a", "verdict": v.REPRODUCED},
        {"id": "b", "verdict": v.REPRODUCED, "extra": True},
        {"id": "c", "verdict": "inconclusive: not learned"},
        {"id": "d", "verdict": "undecidable on this task: x"},
    ]
    counts = report.verdict_counts({"p": {"hypotheses": hyps}})
    assert counts["claims"] == 3 and counts["extras"] == 1
    assert counts[v.REPRODUCED] == 1 and counts[v.INCONCLUSIVE] == 1
    assert counts[v.UNDECIDABLE] == 1 and counts[v.NOT_REPRODUCED] == 0


def test_judging_records_the_rules_and_what_newer_rules_changed(monkeypatch):
    result = {
        "protocol": "reflection",
        "provenance": {"git": {"commit": "0" * 40}},
        "hypotheses": [{"id": "a", "verdict": v.REPRODUCED}, {"id": "b", "verdict": "x"}],
    }
    fresh = judging.record(result)
    assert fresh["rules"] == judging.rules_hash("reflection") and len(fresh["rules"]) == 16
    assert fresh["at_runs"] == {"a": v.REPRODUCED, "b": "x"} and fresh["changed"] == []
    assert fresh["rules_at_runs"] is None and fresh["newer_than_runs"] is None  # unknown commit
    # an older file without a record: the first rejudging compares with what it held
    before = json.loads(json.dumps(result))
    result["hypotheses"][0]["verdict"] = "inconclusive: not converged"
    first = judging.record(result, before)
    assert first["at_runs"] is None and first["compared_with"] == "first_recorded"
    assert first["changed"] == [
        {"id": "a", "before": v.REPRODUCED, "after": "inconclusive: not converged"}
    ]
    # a second rejudging keeps the change on record
    again = judging.record(result, {**json.loads(json.dumps(result)), "judging": first})
    assert again["changed"] == first["changed"]
    assert "changed since the verdicts stored before" in judging.summary_line("reflection", again)
    # the rules of a commit are read from git: HEAD's equal the checkout's unless it is dirty
    head = judging.rules_hash_at("HEAD", "reflection")
    assert head is None or len(head) == 16


def test_the_rules_hash_follows_the_rule_files(tmp_path, monkeypatch):
    for path in judging.rule_files("ablation"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("rules\n")
    monkeypatch.setattr(judging, "ROOT", tmp_path)
    first = judging.rules_hash("ablation")
    (tmp_path / judging.RULE_FILES[1]).write_text("other rules\n")
    assert judging.rules_hash("ablation") != first


def test_what_decides_a_claim_is_priced_from_the_recorded_runs(tmp_path):
    result = {
        "protocol": "beta_dynamics",
        "scale": "small",
        "config": {"train": {"steps": 12000}},
        "seeds": [42],
        "per_seed": {"42": {"val_curve": {}, "seconds": 3600.0, "state": "converged"}},
    }
    few = {"verdict": "inconclusive: fewer than 3 seeds", "reasons": [v.FEW_SEEDS]}
    fix = decide.remedy("beta_dynamics", result, few)
    assert fix["cpu_hours"] == pytest.approx(2.0) and "missing seeds" in fix["what"]
    slow = {"verdict": "inconclusive: not converged", "reasons": [convergence.NOT_CONVERGED]}
    assert decide.remedy("ablation", result, slow)["cpu_hours"] == pytest.approx(2.0)
    # an interval covering the line: three more seeds, one seed's seconds × 3, at its settings
    close = {"verdict": v.INCONCLUSIVE, "reasons": []}
    fix = decide.remedy("beta_dynamics", result, close)
    assert fix["cpu_hours"] == pytest.approx(3.0)
    assert "`geolab reproduce beta_dynamics --scale small --seeds 4 " in fix["what"]
    echo = {"verdict": "undecidable on this task: floor", "reasons": []}
    assert decide.cost_text(decide.remedy("edelta_benchmarks", result, echo)) == "none"
    assert decide.remedy("ablation", result, {"verdict": v.REPRODUCED}) is None
    # the paper scale's GPU-hours are planned once and kept with the settings they came from
    gpu = {"verdict": "inconclusive: not learned", "reasons": [v.NOT_LEARNED]}
    hours = decide.remedy("beta_dynamics", result, gpu, tmp_path)["gpu_hours"]
    kept = json.loads((tmp_path / decide.PAPER_PLAN).read_text())
    assert kept["beta_dynamics"]["gpu_hours"] == hours > 0
    kept["beta_dynamics"]["gpu_hours"] = 7.0
    (tmp_path / decide.PAPER_PLAN).write_text(json.dumps(kept))
    assert decide.remedy("beta_dynamics", result, gpu, tmp_path)["gpu_hours"] == 7.0


@pytest.mark.parametrize("flavor", ["reference", "geolab"])
def test_bare_jpmhc_has_a_gradient_at_init(flavor):
    refl = get_protocol("reflection")
    settings = refl.SCALES["tiny"]
    torch.manual_seed(0)
    op = refl.Operator("jpmhc", flavor, 8, 16, settings)
    x = torch.randn(6, 8)
    torch.nn.functional.mse_loss(op(x), -x).backward()
    moving = op.w[2].weight.grad.abs().max()
    assert moving > 1e-4
    # the start it replaces: with W = 0, Y = I and ∂L/∂Y = 2 x xᵀ is symmetric, so the skew
    # generator W = M − Mᵀ gets no gradient (float32 rounding of the symmetric part aside)
    op.zero_grad()
    with torch.no_grad():
        op.w[2].weight.zero_()
        op.w[2].bias.zero_()
    torch.nn.functional.mse_loss(op(x), -x).backward()
    assert op.w[2].weight.grad.abs().max() < 1e-5 * moving


def test_beta_runs_record_their_trained_rank_and_judge_h2_as_an_extra():
    from geolab.experiments.runner import run_protocol

    result, _ = run_protocol(get_protocol("beta_dynamics"), "tiny", log=lambda m: None, png=False)
    run = next(iter(result["per_seed"].values()))
    assert len(run["trained_rank"]) == result["config"]["n_layer"] + 1
    h2 = [h for h in result["hypotheses"] if h["id"].startswith("H2")]
    assert len(h2) == 1 and h2[0]["extra"] is True
    assert v.FEW_SEEDS in h2[0]["reasons"]  # tiny trains one seed
    assert h2[0]["measured"].endswith(f"{run['trained_rank'][-1]:.4g}")
    # a run recorded before the profile was added carries no H2 row
    module = get_protocol("beta_dynamics")
    old = {k: json.loads(json.dumps(r)) for k, r in result["per_seed"].items()}
    for r in old.values():
        del r["trained_rank"]
    _, hyps = module.conclude(result["config"], result["seeds"], old)
    assert not any(h.id.startswith("H2") for h in hyps)


@pytest.mark.parametrize("scale", ["small", "paper"])
def test_the_matched_size_e_delta_table_compares_counts_within_3_percent(scale):
    from geolab.experiments.plan import n_params

    eb = get_protocol("edelta_benchmarks")
    settings = {**eb.SCALES[scale], "flavors": ["geolab"], "tasks": ["gyroscope"]}
    published = {k: n_params(c) for k, c in eb.planned(settings)}
    matched = {k: n_params(c) for k, c in eb.planned({**settings, "match_sizes": True})}
    assert v.size_spread(published.values()) > 0.03  # the published settings differ
    assert v.size_spread(matched.values()) <= v.SIZE_TOLERANCE
    gpt = "geolab/gyroscope/preln"
    assert matched[gpt] == published[gpt]  # GPT is the target, unchanged
    with pytest.raises(ValueError, match="not allowed for flavor 'reference'"):
        eb.planned({**settings, "flavors": ["reference"], "match_sizes": True})


def test_a_matched_size_run_trains_and_records_its_mlp_width():
    eb = get_protocol("edelta_benchmarks")
    settings = {**eb.SCALES["tiny"], "match_sizes": True}
    out = eb.train_one("geolab", 42, "gyroscope", "ddl", settings, lambda m: None)
    assert out["d_mlp"] >= 1 and out["val"]["mse"] > 0


# --- the CPU rerun plan ----------------------------------------------------------------------


def _planned(seconds: float, steps: int, seeds: list[int]) -> dict:
    run = {"val_curve": {"steps": [steps]}, "seconds": seconds}
    return {
        "config": {"train": {"steps": steps}},
        "seeds": seeds,
        "per_seed": {str(s): {"preln": dict(run), "mgt": dict(run)} for s in seeds},
    }


def test_a_rerun_is_priced_by_steps_and_seeds_and_leaves_the_plan_once_trained():
    plan = {r["protocol"]: r for r in decide.cpu_plan({"ablation": _planned(90.0, 800, [1, 2, 3])})}
    # six runs of 90 s at 800 steps, wanted at 1600 steps: 2 × 540 s
    assert plan["ablation"]["cpu_hours"] == pytest.approx(2 * 540 / 3600)
    assert "--steps 1600" in plan["ablation"]["command"]
    landed = {"ablation": _planned(180.0, 1600, [1, 2, 3])}
    assert decide.cpu_plan(landed) == []
    assert "Every planned CPU rerun has landed" in report.cpu_plan_markdown(landed)
    beta = decide.cpu_plan({"beta_dynamics": _planned(100.0, 12000, [42])})
    # one seed of two runs at 100 s, wanted on three seeds
    assert beta[0]["cpu_hours"] == pytest.approx(3 * 200 / 3600)
    assert "--seeds 3" in beta[0]["command"]
    assert decide.cpu_plan({"beta_dynamics": _planned(100.0, 12000, [42, 123, 456])}) == []


def test_results_from_before_the_fused_maths_are_listed_unless_the_plan_retrains_them():
    _, fused = decide.FUSED_MATHS

    def result(name, finished, seconds=60.0, steps=800, seeds=(42, 123, 456)):
        r = _planned(seconds, steps, list(seeds))
        r |= {"protocol": name, "scale": "small"}
        r["provenance"] = {"git": {"commit": "a" * 40}, "finished_utc": finished}
        return r

    old, new = "2026-12-01T00:00:00Z", fused.replace("18:", "19:")
    assert new > fused > old
    rows = decide.before_fused(
        {
            "ablation": result("ablation", old, steps=1600),  # trained past the plan's steps
            "depth_scaling": result("depth_scaling", new),
            "beta_dynamics": result("beta_dynamics", old, steps=12000, seeds=[42]),
            "reflection": result("reflection", old, steps=64000),
        }
    )
    # beta is retrained by the CPU plan (two seeds missing); depth_scaling finished after
    assert [r["protocol"] for r in rows] == ["ablation", "reflection"]
    ablation, reflection = rows
    assert ablation["cpu_hours"] == pytest.approx(6 * 60 / 3600)
    assert ablation["command"] == (
        "geolab reproduce ablation --scale small --steps 1600 --jobs 2 --threads 1 "
        "--out data/results-rerun"
    )
    # reflection's small scale trains 64,000 steps itself: no --steps beside it
    assert "--jobs 2" in reflection["command"] and "--steps" not in reflection["command"]
    assert ablation["finished"] == old and ablation["commit"] == "a" * 40
    table = report.before_fused_markdown({"depth_scaling": result("depth_scaling", new)})
    assert table.startswith("Every result finished after the fused rule maths")


def test_the_remedy_for_unconverged_runs_shows_whether_their_gain_shrinks():
    # MSE ∝ s^−a: in log-MSE the last quarter gains a·ln(4/3) at any length T (its best before
    # ¾T is at ¾T, its best after at T), so stopping halfway gains the same: doubling the steps
    # cannot converge it
    a, total = 0.5, 4000
    steps = list(range(50, total + 1, 50))
    power = {"metric": "mse", "steps": steps, "values": [s**-a for s in steps]}
    gain = a * math.log(4 / 3)
    assert convergence.judge(power, total)["improvement"] == pytest.approx(gain)
    assert decide.halfway(power, total)["improvement"] == pytest.approx(gain)
    # an MSE settling on a floor gains less in its last quarter the longer it runs
    settling = {"metric": "mse", "steps": steps, "values": [1 + math.exp(-s / 800) for s in steps]}
    end, half = convergence.judge(settling, total), decide.halfway(settling, total)
    assert 0 < end["improvement"] < half["improvement"]
    run = {"val_curve": power, "seconds": 3600.0, **convergence.judge(power, total)}
    result = {
        "protocol": "reflection",
        "scale": "small",
        "config": {"train": {"steps": total}},
        "seeds": [42, 123, 456],
        "per_seed": {"42": {"ddl": run, "jpmhc": {"val_curve": settling, **end}}},
    }
    slow = {"verdict": "inconclusive: not converged", "reasons": [convergence.NOT_CONVERGED]}
    what = decide.remedy("reflection", result, slow)["what"]
    pct = f"{100 * gain:.3g} %"
    assert what == (
        f"train twice as many steps (its unconverged run's last quarter gained {pct} at "
        f"4,000 steps and {pct} at 2,000 on the same curves)"
    )
