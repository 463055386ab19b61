"""Experiment protocols: every protocol runs at tiny scale through `geolab reproduce` and writes a
valid result; verdict rules, the statistics, the convergence rule, the trivial baselines and the
gate, the offline HTML and the paper dry run against hand-computed cases; the committed small
results are complete, judged by the current rules (rejudging them changes nothing), consistent
with the README table, and regenerate bit for bit on a CPU.
"""

import json
import math
from pathlib import Path

import pytest
import torch

from geolab.cli import main
from geolab.experiments import (
    NAMES,
    baselines,
    convergence,
    export,
    get_protocol,
    plan,
    report,
    runner,
    runs,
    stats,
    verdicts,
)
from geolab.experiments.beta_dynamics import spearman
from geolab.experiments.depth_scaling import smoothed
from geolab.experiments.edelta_benchmarks import _order
from geolab.experiments.snapshots import snapshot_steps

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "data" / "results"
VERDICTS = {verdicts.REPRODUCED, verdicts.NOT_REPRODUCED, verdicts.INCONCLUSIVE}


@pytest.fixture
def data_env(text_data, monkeypatch):
    monkeypatch.setenv("GEOLAB_DATA", str(text_data))
    return text_data


def check_result(result: dict, name: str, scale: str) -> None:
    module = get_protocol(name)
    settings = module.SCALES[scale]
    assert result["protocol"] == name and result["scale"] == scale
    # a result trained with `--seeds N` holds the first N of the scale's seeds (runner.pick_seeds);
    # everything but the seeds (and the note on them) is the scale's own setting
    seeds = result["seeds"]
    assert seeds and seeds == settings["seeds"][: len(seeds)]
    subset = len(seeds) < len(settings["seeds"])
    skip = {"jobs"} | ({"seeds"} if subset else set())
    # --jobs (worker processes) is how a run was executed, not what it computed; --steps trains
    # every run longer than the scale (its step count only, said in the README's reductions)
    skip.add("train")
    config = {k: v for k, v in result["config"].items() if k not in skip}
    assert config == json.loads(
        json.dumps({k: v for k, v in settings.items() if k not in skip | {"reductions"}})
    )
    train, want = result["config"]["train"], json.loads(json.dumps(settings["train"]))
    assert {**train, "steps": want["steps"]} == want
    assert train["steps"] >= want["steps"]
    assert (train["steps"] > want["steps"]) == bool(report.budget_note(result))
    notes = skip - {"jobs", "train"}
    assert {k: v for k, v in result["reductions"].items() if k not in notes} == {
        k: v for k, v in settings["reductions"].items() if k not in notes
    }
    assert set(result["per_seed"]) == {str(s) for s in seeds}
    assert result["hypotheses"], "every protocol states at least one claim"
    trained = convergence.trained_runs(result["per_seed"])
    assert trained, "every protocol trains"
    for h in result["hypotheses"]:
        assert h["claim"] and h["measured"] and h["rule"]
        assert verdicts.kind(h["rule_verdict"]) in VERDICTS
        # the verdict is the rule's unless a reason says why the evidence does not carry it, or
        # the task cannot decide the claim at all
        if h.get("undecidable"):
            assert h["verdict"] == verdicts.undecided(h["undecidable"])
        elif h["reasons"]:  # with its knife edges, if any
            edges = h.get("edges") or []
            assert h["verdict"] == verdicts.with_edges(verdicts.inconclusive(h["reasons"]), edges)
        else:
            assert h["verdict"] == h["rule_verdict"]
        states = h["convergence"]
        if "converged" in h["gated_on"] and states:
            k, n = map(int, states.split(" converged")[0].split("/"))
            assert (k < n) == any(
                r in h["reasons"] for r in (convergence.COLLAPSED, convergence.NOT_CONVERGED)
            )
        if "learned" in h["gated_on"] and h["learned"]:
            k, n = map(int, h["learned"].split("/"))
            assert (k < n) == any("learned" in r for r in h["reasons"])
    for path, run in trained.items():
        curve = run["val_curve"]
        assert len(curve["steps"]) == len(curve["values"]) >= 2, path
        judged = convergence.judge(curve, train["steps"])
        assert {k: run[k] for k in judged} == judged, path
        fraction = baselines.MSE_FRACTION if curve["metric"] == "mse" else baselines.PPL_FRACTION
        assert run["learned"] == (run["baseline_ratio"] <= fraction), path
    conv = result["convergence"]
    assert conv["rule"] == convergence.RULE and conv["function"] == convergence.FUNCTION
    assert conv["runs"] == len(trained)
    assert conv["converged"] == sum(r["state"] == convergence.CONVERGED for r in trained.values())
    assert result["summary"]["baselines"]["rule"] == baselines.LEARNED_RULE
    prov = result["provenance"]
    assert prov["versions"]["torch"] == torch.__version__
    assert {"commit", "dirty"} <= set(prov["git"])
    assert prov["wall_time_s"] > 0 and prov["torch_threads"] >= 1
    assert prov["device"].startswith("cpu")


@pytest.mark.parametrize("name", NAMES)
def test_reproduce_tiny_writes_a_valid_result_and_figures(name, data_env, tmp_path, capsys):
    code = main(["reproduce", name, "--scale", "tiny", "--out", str(tmp_path), "--no-png"])
    assert code == 0
    path = tmp_path / f"{name}-tiny.json"
    # strict JSON: NaN or Infinity would fail json.loads with this hook
    text = path.read_text()
    result = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-finite {c} in {path}"))
    check_result(result, name, "tiny")
    assert result["figures"], "figures written"
    for fig in result["figures"]:
        assert fig.endswith(".html") and (tmp_path / fig).stat().st_size > 1000
    assert set(result["figures"]) == {
        f"{name}-tiny-{n}.html" for n in report.result_figures(result)
    }
    assert f"{name}-tiny-learning-curves.html" in result["figures"]
    out = capsys.readouterr().out
    assert all(h["id"] in out for h in result["hypotheses"])
    if name == "language_model":  # the tiny scale reads tiny-shakespeare, and says so
        assert all(h["id"].endswith("(tiny-shakespeare ppl)") for h in result["hypotheses"])


def test_seeds_in_worker_processes_give_the_numbers_of_one_process(data_env):
    settings = {**get_protocol("language_model").SCALES["tiny"], "rules": ["preln", "mgt"]}
    with runner.deterministic():
        alone = runs.train_seeds(settings, [42, 123], lambda m: None)
        spread = runs.train_seeds({**settings, "jobs": 2}, [42, 123], lambda m: None)
    for seed in ("42", "123"):
        for rule in settings["rules"]:
            drop = {"seconds"}  # wall time, the one field that may differ
            ours = {k: v for k, v in spread[seed][rule].items() if k not in drop}
            assert ours == {k: v for k, v in alone[seed][rule].items() if k not in drop}


def test_reproduce_list_names_every_protocol(capsys):
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.strip().splitlines()] == list(NAMES)


def test_reproduce_rejects_bad_seeds_and_missing_name(capsys, tmp_path):
    # its own --out: the default ./results may hold a user's earlier run (issue 53)
    out = str(tmp_path / "out")
    assert main(["reproduce", "ablation", "--scale", "tiny", "--seeds", "13", "--out", out]) == 2
    err = capsys.readouterr().err
    assert "seeds=13" in err and "1..12" in err and err.count("\n") == 1
    assert main(["reproduce"]) == 2


def test_bad_names_and_scales_raise_value_error():
    with pytest.raises(ValueError, match="unknown protocol 'nope'"):
        get_protocol("nope")
    with pytest.raises(ValueError, match="scale='huge'"):
        runner.scale_settings(get_protocol("ablation"), "huge")
    with pytest.raises(ValueError, match="seeds=0"):
        runner.pick_seeds({"seeds": [42, 123]}, 0)
    assert runner.pick_seeds({"seeds": [42, 123]}, 1) == [42]
    # past the scale's seeds, fixed extra ones: a wider rerun keeps the seeds it had
    assert runner.pick_seeds({"seeds": [42, 123]}, 5) == [42, 123, 1001, 1002, 1003]
    assert runner.pick_seeds({"seeds": [42]}, 12)[-1] == 1011
    for bad in (13, True, 2.0):
        with pytest.raises(ValueError, match=f"seeds={bad!r} is not allowed; choose 1..12"):
            runner.pick_seeds({"seeds": [42, 123]}, bad)


def test_mean_std_and_interval_verdict():
    s = verdicts.mean_std([1.0, 2.0, 4.0])
    assert s["mean"] == pytest.approx(7 / 3)
    assert s["std"] == pytest.approx(
        math.sqrt(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) / 2)
    )
    assert verdicts.mean_std([5.0]) == {"mean": 5.0, "std": 0.0, "n": 1}
    with pytest.raises(ValueError, match="empty"):
        verdicts.mean_std([])
    above, below = {"low": 0.1, "high": 2.0}, {"low": -2.0, "high": -0.1}
    assert verdicts.interval_verdict(above) == verdicts.REPRODUCED
    assert verdicts.interval_verdict(below) == verdicts.NOT_REPRODUCED
    assert verdicts.interval_verdict({"low": -1.0, "high": 1.0}) == verdicts.INCONCLUSIVE
    assert verdicts.interval_verdict(None) == verdicts.INCONCLUSIVE
    high = {"low": 0.92, "high": 0.99}
    assert verdicts.threshold_verdict(high, low=0.9) == verdicts.REPRODUCED
    low = {"low": 0.5, "high": 0.8}
    assert verdicts.threshold_verdict(low, low=0.9) == verdicts.NOT_REPRODUCED
    covering = {"low": 0.1, "high": 0.3}
    assert verdicts.threshold_verdict(covering, high=0.2) == verdicts.INCONCLUSIVE
    assert verdicts.worst([verdicts.REPRODUCED, verdicts.INCONCLUSIVE]) == verdicts.INCONCLUSIVE


def test_t_quantiles_match_the_tables():
    # two-sided 95 % critical values of Student's t (any statistics table)
    table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 10: 2.228, 30: 2.042}
    for df, value in table.items():
        assert stats.t_quantile(0.975, df) == pytest.approx(value, abs=1e-3)
    assert stats.t_quantile(0.975, 1e7) == pytest.approx(1.95996, abs=1e-4)
    assert stats.t_quantile(0.025, 4) == pytest.approx(-2.776, abs=1e-3)
    # I_x(2, 3) = 6x² − 8x³ + 3x⁴ (the beta polynomial) at x = 0.4
    assert stats.betainc(2, 3, 0.4) == pytest.approx(6 * 0.16 - 8 * 0.064 + 3 * 0.0256)
    with pytest.raises(ValueError, match="0 < p < 1"):
        stats.t_quantile(1.0, 3)


def test_intervals_by_hand():
    # one sample 1, 2, 3: mean 2, s = 1, half-width t(0.975; 2)/√3
    iv = stats.t_interval([1.0, 2.0, 3.0])
    half = 4.302652729749525 / math.sqrt(3)
    assert iv["low"] == pytest.approx(2 - half) and iv["high"] == pytest.approx(2 + half)
    assert iv["df"] == 2 and stats.t_interval([5.0]) is None
    # Welch: a = 1, 2, 3 (s² 1), b = 0, 0.5, 1 (s² 0.25); q = 1/3, 1/12;
    # ν = (5/12)² / ((1/3)²/2 + (1/12)²/2) = 2.941…
    w = stats.welch([1.0, 2.0, 3.0], [0.0, 0.5, 1.0])
    nu = (5 / 12) ** 2 / ((1 / 3) ** 2 / 2 + (1 / 12) ** 2 / 2)
    assert w["df"] == pytest.approx(nu)
    half = stats.t_quantile(0.975, nu) * math.sqrt(5 / 12)
    assert w["low"] == pytest.approx(1.5 - half) and w["high"] == pytest.approx(1.5 + half)
    same = stats.welch([1.0, 1.0], [0.0, 0.0])
    assert (same["low"], same["high"]) == (1.0, 1.0)
    assert stats.welch([1.0], [0.0, 1.0]) is None
    assert stats.sign_of(w) == 0 and stats.sign_of({"low": 0.1, "high": 1}) == 1


def test_spearman_matches_hand_computed_values():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ties get average ranks: y ranks (1.5, 1.5, 3, 4) -> Pearson of ranks
    x, y = torch.tensor([1.0, 2, 3, 4]), torch.tensor([1.5, 1.5, 3, 4])
    x, y = x - x.mean(), y - y.mean()
    assert spearman([0, 1, 2, 3], [0, 0, 5, 9]) == pytest.approx(
        (x @ y / (x.norm() * y.norm())).item()
    )
    assert spearman([0, 1, 2], [0.0, 0.0, 0.0]) is None


def test_snapshot_steps_and_smoothing():
    assert snapshot_steps(160) == {40: "25%", 80: "50%", 160: "100%"}
    assert snapshot_steps(2) == {1: "50%", 2: "100%"}
    assert smoothed([4.0, 2.0, 0.0, 2.0], window=2) == [4.0, 3.0, 1.0, 1.0]


def test_ordering_verdict_needs_the_margin_and_the_interval():
    ours, theirs = [1.0, 1.02, 0.98], [1.3, 1.32, 1.28]
    assert _order(ours, theirs)[0] == verdicts.REPRODUCED
    assert _order(theirs, ours)[0] == verdicts.NOT_REPRODUCED
    assert _order(ours, [1.1, 1.12, 1.08])[0] == verdicts.INCONCLUSIVE  # within the margin
    noisy = [0.5, 2.0, 1.0]  # ×1.3 apart on average, but the interval covers 0
    assert _order(noisy, [1.3 * x for x in (2.0, 0.5, 1.0)])[0] == verdicts.INCONCLUSIVE
    assert _order([1.0], [2.0]) == (verdicts.INCONCLUSIVE, None)  # one seed: no interval


def test_convergence_states_by_hand():
    steps = list(range(10, 101, 10))  # T = 100: the last quarter is s > 75
    falling = {"metric": "loss", "steps": steps, "values": [3.0 - 0.1 * i for i in range(10)]}
    # best before 75: 2.4 (s=70); best after: 2.1 (s=100): (2.4 - 2.1) / 2.4 = 12.5 %
    judged = convergence.judge(falling, 100)
    assert judged["state"] == "not converged" and judged["converged"] is False
    assert judged["improvement"] == pytest.approx(0.125)
    flat = {"metric": "loss", "steps": steps, "values": [2.0, 1.5] + [1.2, 1.21] * 4}
    assert convergence.judge(flat, 100)["state"] == "converged"
    # 1 % better in the last quarter is within the 2 % tolerance, 3 % is not
    for gain, state in ((0.01, "converged"), (0.03, "not converged")):
        curve = {"metric": "loss", "steps": [50, 100], "values": [1.0, 1.0 - gain]}
        assert convergence.judge(curve, 100)["state"] == state
    # worse in the last quarter: within 5 % of the loss it is converged, beyond it collapsed
    for rise, state in ((0.04, "converged"), (0.06, "collapsed")):
        curve = {"metric": "loss", "steps": [50, 100], "values": [1.0, 1.0 + rise]}
        assert convergence.judge(curve, 100)["state"] == state
    # evaluated only at the end: cannot be judged
    assert convergence.judge({"metric": "loss", "steps": [100], "values": [1.0]}, 100) == {
        "state": "not converged",
        "converged": False,
        "improvement": None,
    }
    assert convergence.eval_every(800) == 40 and convergence.eval_every(3) == 1


def test_a_regression_curve_is_judged_in_log_mse():
    # an MSE still halving near zero is still learning: ln(1e-5 / 6e-6) = 0.51 ≥ 0.02
    curve = {"metric": "mse", "steps": [50, 100], "values": [1e-5, 6e-6]}
    judged = convergence.judge(curve, 100)
    assert judged["state"] == "not converged"
    assert judged["improvement"] == pytest.approx(math.log(1e-5 / 6e-6))
    # 1 % lower is converged; a last quarter whose best is over twice the best before collapsed
    assert convergence.judge({**curve, "values": [1e-5, 0.99e-5]}, 100)["state"] == "converged"
    lost = {"metric": "mse", "steps": [25, 50, 75, 100], "values": [0.06, 1e-4, 0.05, 0.06]}
    assert convergence.judge(lost, 100)["state"] == "collapsed"
    doubled = {"metric": "mse", "steps": [50, 100], "values": [1e-4, 1.9e-4]}
    assert convergence.judge(doubled, 100)["state"] == "converged"
    runs = [{"state": "converged"}, {"state": "collapsed"}, {"state": "converged"}]
    assert convergence.states_text(runs) == "2/3 converged, 1 collapsed"
    # a plateau at chance (no better than a trivial baseline) is not shown as plain "converged"
    runs[0]["learned"], runs[2]["learned"] = False, True
    assert convergence.states_text(runs) == (
        "2/3 converged (1 stalled at a trivial baseline: not learned), 1 collapsed"
    )


def test_regression_baselines_by_hand():
    from geolab.tasks import get_task

    # gyroscope: the plane of each trajectory known, E[R(θ)] over the training θ applied
    task = get_task("gyroscope", steps=6, n_train=40, n_val=5, seed=3)
    idx = torch.arange(5)
    x, y, _ = task.batch("val", idx)
    x, y = x.double(), y.double()
    theta = task.info["train"]["theta"].double()
    c, s = theta.cos().mean(), theta.sin().mean()
    pred = x.clone()
    for n in range(5):
        i, j = task.info["val"]["plane"][n].tolist()
        pred[n, :, i] = c * x[n, :, i] - s * x[n, :, j]
        pred[n, :, j] = s * x[n, :, i] + c * x[n, :, j]
    found = baselines.regression(task, [idx[:3], idx[3:]])
    assert found["plane known, mean rotation"] == pytest.approx(((pred - y) ** 2).mean().item())
    assert found["predict-zero"] == pytest.approx((y**2).mean().item())
    assert found["copy-the-input"] == pytest.approx(((x - y) ** 2).mean().item())
    # echo: the running mean of the inputs; near-π: x ↦ −x in the plane (0, 1)
    echo = get_task("echo", dim=4, steps=5, n_train=2, n_val=3, seed=1)
    ex, ey, _ = echo.batch("val", torch.arange(3))
    mean = torch.stack([ex[:, : t + 1].double().mean(1) for t in range(4)], 1)
    got = baselines.regression(echo, [torch.arange(3)])["running mean of the inputs"]
    assert got == pytest.approx(((mean - ey.double()) ** 2).mean().item())
    near = get_task("near_pi", dim=4, steps=5, n_train=2, n_val=3, seed=1)
    nx, ny, _ = near.batch("val", torch.arange(3))
    flipped = nx.double().clone()
    flipped[..., :2] *= -1
    got = baselines.regression(near, [torch.arange(3)])["rotation by π in the plane"]
    assert got == pytest.approx(((flipped - ny.double()) ** 2).mean().item())
    inv = get_task("inversion", dim=4, seq_len=2, n_train=2, n_val=3, seed=1)
    assert set(baselines.regression(inv, [torch.arange(3)])) == {"predict-zero", "copy-the-input"}


def test_text_baselines_by_hand():
    from geolab.tasks import Task

    # train "a b a b a c" (ids a=0, b=1, c=2), one val window "a b c" scored on b | a, c | b
    train = torch.tensor([0, 1, 0, 1, 0, 2])
    val = torch.tensor([0, 1, 2])
    task = Task("t", "tokens", "", 2, {"train": train, "val": val}, vocab_size=3, stream=True)
    found = baselines.text(task, [torch.tensor([0])])
    p = {0: 4 / 9, 1: 3 / 9, 2: 2 / 9}  # add-one unigram: (c + 1) / (6 + 3)
    assert found["unigram"] == pytest.approx(math.exp(-(math.log(p[1]) + math.log(p[2])) / 2))
    # position 0, b after a (its input, inside the window): c(a) = 3, T(a) = 2 (b and c follow
    # a), c(a, b) = 2 -> (2 + 2·p(b)) / (3 + 2); position 1, c after b: c(b) = 2, T(b) = 1 (only
    # a follows b), c(b, c) = 0 -> (0 + 1·p(c)) / (2 + 1)
    bigram = [(2 + 2 * p[1]) / (3 + 2), (0 + 1 * p[2]) / (2 + 1)]
    assert found["bigram"] == pytest.approx(math.exp(-sum(map(math.log, bigram)) / 2))
    best = baselines.of_task(task, {"batch_size": 1})
    assert best["best"] == min(found, key=found.get) and best["metric"] == "ppl"
    run = {"val": {"ppl": 0.8 * best["value"]}}
    baselines.judge_run(run, best)
    assert run["baseline_ratio"] == pytest.approx(0.8) and run["learned"] is True
    run = {"val": {"ppl": 0.95 * best["value"]}}
    baselines.judge_run(run, best)
    assert run["learned"] is False


def test_a_training_run_records_its_validation_curve(tmp_path):
    from geolab.tasks import get_task

    task = get_task("gyroscope", steps=8, n_train=16, n_val=4, seed=0)
    settings = {"n_head": 2, "train": {"steps": 8, "batch_size": 4, "warmup": 1}}
    cfg = runs.model_config(settings, task, "preln", n_layer=1, d_model=8)
    numbers = runs.train_run(cfg, task, settings, seed=0)
    curve = numbers["val_curve"]
    assert curve["metric"] == "mse" and curve["steps"] == list(range(1, 9))
    assert curve["values"][-1] == pytest.approx(numbers["val"]["mse"])
    judged = convergence.judge(curve, 8)
    assert {k: numbers[k] for k in judged} == judged


def test_a_verdict_stands_only_on_sound_evidence():
    def claim():
        return verdicts.Hypothesis("h", "c", "m", verdicts.REPRODUCED, "r")

    def run(state="converged", learned=True, n=100, ratio=0.2):
        return {"state": state, "learned": learned, "n_params": n, "baseline_ratio": ratio}

    good = {"a": [run(), run(), run()], "b": [run(), run(), run()]}
    h = verdicts.gate(claim(), good, seeds=3, compared=("a", "b"))
    assert (h.verdict, h.reasons, h.rule_verdict) == (verdicts.REPRODUCED, [], "reproduced")
    assert (h.convergence, h.learned, h.baseline) == ("6/6 converged", "6/6", "a 0.2, b 0.2")
    assert h.sizes == "a 100, b 100 (spread 0.0%)"
    # every failing check is named, in order; the rule's own verdict is kept
    bad = {"a": [run(), run(state="collapsed")], "b": [run(n=104, learned=False), run()]}
    h = verdicts.gate(claim(), bad, seeds=2, compared=("a", "b"))
    assert h.reasons == ["fewer than 3 seeds", "sizes differ", "collapsed", "not learned"]
    assert h.verdict == "inconclusive: fewer than 3 seeds; sizes differ; collapsed; not learned"
    assert h.rule_verdict == verdicts.REPRODUCED and h.sizes.endswith("(spread 4.0%)")
    # within 3 % is the same size; a claim that is no comparison needs no seeds or sizes
    close = {"a": [run()] * 3, "b": [run(n=102)] * 3}
    assert verdicts.gate(claim(), close, seeds=3, compared=("a", "b")).reasons == []
    assert verdicts.gate(claim(), {"a": [run(state="not converged")]}).reasons == ["not converged"]
    # a fixed-budget claim is gated on learning only; a failure claim on the model it needs
    fixed = verdicts.gate(claim(), {"a": [run(state="collapsed")]}, on=("learned",))
    assert (
        fixed.verdict == verdicts.REPRODUCED and fixed.convergence == "0/1 converged, 1 collapsed"
    )
    fails = {"a": [run(learned=False)], "gpt": [run()]}
    assert verdicts.gate(claim(), fails, must_learn=("gpt",)).reasons == []
    # reasons the rule itself names come first
    own = claim()
    own.reasons = ["mHC at D = 32"]
    assert verdicts.gate(own, good).verdict == "inconclusive: mHC at D = 32"
    untrained = verdicts.gate(claim(), {})
    assert (untrained.verdict, untrained.convergence) == (verdicts.REPRODUCED, "")
    rows = {"p": {"protocol": "p", "config": {}, "hypotheses": [h.__dict__, untrained.__dict__]}}
    table = report.verdict_markdown(rows)
    stalled = "(1 stalled at a trivial baseline: not learned)"
    assert f"| 3/4 converged {stalled}, 1 collapsed; 3/4 learned |" in table
    assert "| untrained | — | **reproduced** |" in table
    overruled = "**inconclusive: fewer than 3 seeds; sizes differ; collapsed; not learned**"
    assert f"| {overruled} (the rule alone: reproduced) |" in table


def test_edelta_findings_name_collapsed_runs_and_learned_counts():
    eb = get_protocol("edelta_benchmarks")
    curve = {"metric": "mse", "steps": [100, 200, 300, 400], "values": [0.03, 1e-4, 0.05, 0.06]}
    lost = {
        "val": {"mse": 0.06},
        "val_curve": curve,
        "state": "collapsed",
        "learned": False,
        "baseline_ratio": 30.0,
    }
    fine = {
        "val": {"mse": 1e-4},
        "val_curve": {**curve, "values": [0.01, 1e-3, 2e-4, 1e-4]},
        "state": "not converged",
        "learned": True,
        "baseline_ratio": 0.05,
    }
    base = {
        "metric": "mse",
        "values": {"copy-the-input": 0.002},
        "best": "copy-the-input",
        "value": 0.002,
    }
    result = {
        "seeds": [42],
        "per_seed": {"42": {"reference/echo/edelta": lost, "reference/echo/preln": fine}},
        "summary": {
            "table": {"reference/echo/edelta": {}, "reference/echo/preln": {}},
            "baselines": {"tasks": {"42/reference/echo": base}},
        },
    }
    text = " ".join(eb.findings(result))
    assert "Learned, reference flavor: echo 1/2 (best baseline: copy-the-input 0.002; ratios " in (
        text
    )
    assert "42/reference/echo/edelta (best 0.0001 at step 200, final 0.06)" in text


def test_edelta_reference_flavor_draws_its_data_with_the_public_seed():
    from geolab.tasks import get_task

    eb = get_protocol("edelta_benchmarks")
    settings = eb.SCALES["tiny"]
    for name in ("echo", "gyroscope"):
        ref = [eb.task_of(name, s, "reference", settings) for s in (42, 123)]
        own = [eb.task_of(name, s, "geolab", settings) for s in (42, 123)]
        # the public code: one data set per task (seed 42) whatever the training seed
        for split in ("train", "val"):
            assert torch.equal(ref[0].x[split], ref[1].x[split]), (name, split)
            assert torch.equal(ref[0].y[split], ref[1].y[split]), (name, split)
        public = get_task(name, seed=42, flavor="reference", **settings["task_sizes"][name])
        assert torch.equal(ref[1].x["train"], public.x["train"]), name
        # geolab: the data drawn from the training seed
        assert not torch.equal(own[0].x["train"], own[1].x["train"]), name


def test_committed_learned_flags_are_ratios_to_the_best_trivial_baseline():
    result = committed("edelta_benchmarks")
    found = result["summary"]["baselines"]["tasks"]
    for seed, row in result["per_seed"].items():
        for key, run in row.items():
            flavor, task, _ = key.split("/")
            best = found[f"{seed}/{flavor}/{task}"]
            assert best["value"] == min(best["values"].values()) > 0, key
            assert run["baseline_ratio"] == pytest.approx(run["val"]["mse"] / best["value"])
    # gyroscope: the mean rotation in the known plane beats copying the input
    gyro = found["42/geolab/gyroscope"]["values"]
    assert gyro["plane known, mean rotation"] < gyro["copy-the-input"] < gyro["predict-zero"]


def test_html_figures_open_offline(tmp_path):
    import plotly.graph_objects as go

    figs = {"a": go.Figure(go.Scatter(y=[1, 2])), "b": go.Figure()}
    saved = export.save_figures(figs, tmp_path, "x", png=False, log=lambda m: None)
    assert saved["files"] == ["x-a.html", "x-b.html"]
    bundle = tmp_path / "plotly.min.js"
    assert bundle.is_file() and bundle.stat().st_size > 1_000_000
    for name in saved["files"]:
        html = (tmp_path / name).read_text()
        assert '<script charset="utf-8" src="plotly.min.js"></script>' in html
        assert "cdn.plot.ly" not in html and "https://" not in html.split("<body>")[0]
        assert 'src="http' not in html


def test_paper_dry_run_prints_runs_sizes_and_gpu_hours(data_env, capsys):
    code = main(["reproduce", "ablation", "--scale", "paper", "--dry-run", "--out", "/nonexistent"])
    assert code == 0
    out = capsys.readouterr().out
    module = get_protocol("ablation")
    settings = module.SCALES["paper"]
    rows = plan.protocol_plan(module, settings, len(settings["seeds"]))
    assert [r["run"] for r in rows] == settings["rules"]
    for r in rows:
        # Kaplan et al.: 6·(N + L·S·D) FLOPs per token, tokens = steps × batch × S, 3 seeds
        tokens = 12750 * 64 * 128
        flops = 6 * (r["n_params"] + 48 * 128 * 256) * tokens * 3
        assert r["flops"] == flops
        assert r["gpu_hours"] == pytest.approx(flops / plan.SUSTAINED_FLOPS / 3600)
        assert f"{r['n_params']:,}" in out and r["run"] in out
    total = sum(r["gpu_hours"] for r in rows)
    assert f"total ≈ {total:.1f} GPU-hours" in out and "1e14 FLOP/s" in out
    assert not Path("/nonexistent").exists()


def test_planned_runs_match_what_the_tiny_scale_trains(data_env):
    for name in NAMES:
        module = get_protocol(name)
        settings = module.SCALES["tiny"]
        rows = plan.protocol_plan(module, settings, 1)
        assert rows and all(r["n_params"] > 0 and r["gpu_hours"] > 0 for r in rows), name
    rank = plan.protocol_plan(
        get_protocol("rank_evolution"), get_protocol("rank_evolution").SCALES["small"], 1
    )
    assert max(r["n_layer"] for r in rank) == 100  # 200 layers at initialisation only


def test_torchrun_two_gloo_ranks_match_one_process(data_env, tmp_path):
    """`torchrun -m geolab reproduce` (the paper-scale launch, here on CPU with gloo): one process
    group for the protocol, rank 0 writes, the numbers match a single process."""
    import os
    import subprocess
    import sys

    args = ["reproduce", "ablation", "--scale", "tiny", "--seeds", "1", "--no-png", "--out"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node"]
    done = subprocess.run(
        [*launch, "2", "-m", "geolab", *args, str(tmp_path / "ddp")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("𝒮 > 0 (post-LN base)") == 1  # only rank 0 prints
    assert main([*args, str(tmp_path / "one")]) == 0
    ddp = json.loads((tmp_path / "ddp" / "ablation-tiny.json").read_text())
    one = json.loads((tmp_path / "one" / "ablation-tiny.json").read_text())
    assert ddp["provenance"]["world_size"] == 2 and one["provenance"]["world_size"] == 1
    for rule in one["per_seed"]["42"]:
        if isinstance(one["per_seed"]["42"][rule], dict):
            a, b = ddp["per_seed"]["42"][rule], one["per_seed"]["42"][rule]
            assert a["val"]["loss"] == pytest.approx(b["val"]["loss"], abs=1e-4)
            assert a["val_curve"]["steps"] == b["val_curve"]["steps"]


def test_png_notice_without_a_browser(monkeypatch, tmp_path):
    import plotly.graph_objects as go

    monkeypatch.setattr(export, "chrome_path", lambda: None)
    notes = []
    saved = export.save_figures({"f": go.Figure()}, tmp_path, "x", png=True, log=notes.append)
    assert saved["files"] == ["x-f.html"] and (tmp_path / "x-f.html").is_file()
    assert len(notes) == 1 and "PNG skipped" in notes[0] and "\n" not in notes[0]


def test_a_png_that_fails_once_is_written_on_the_next_try(monkeypatch, tmp_path):
    import plotly.graph_objects as go

    monkeypatch.setattr(export, "chrome_path", lambda: "/usr/bin/chromium")
    calls = []

    def flaky(self, path, **kw):
        calls.append(path)
        if len(calls) == 1:
            raise RuntimeError("ReferenceError: kaleido_scopes is not defined")
        Path(path).write_bytes(b"png")

    monkeypatch.setattr(go.Figure, "write_image", flaky)
    notes = []
    saved = export.save_figures({"f": go.Figure()}, tmp_path, "x", png=True, log=notes.append)
    assert saved["files"] == ["x-f.html", "x-f.png"] and len(calls) == 2 and not notes


def test_a_png_that_always_fails_leaves_one_note_and_the_html(monkeypatch, tmp_path):
    import plotly.graph_objects as go

    monkeypatch.setattr(export, "chrome_path", lambda: "/usr/bin/chromium")

    def broken(self, path, **kw):
        raise RuntimeError("no page")

    monkeypatch.setattr(go.Figure, "write_image", broken)
    notes = []
    figs = {"f": go.Figure(), "g": go.Figure()}
    saved = export.save_figures(figs, tmp_path, "x", png=True, log=notes.append)
    assert saved["files"] == ["x-f.html", "x-g.html"]
    assert len(notes) == 1 and "kaleido failed (RuntimeError: no page)" in notes[0]


# --- the committed small-scale results -------------------------------------------------------


def committed(name: str) -> dict:
    path = RESULTS / f"{name}-small.json"
    assert path.is_file(), f"{path} is missing: run `geolab reproduce {name} --scale small`"
    result = json.loads(path.read_text())
    assert "convergence" in result, (
        f"{path.name} predates the convergence record: rerun scripts/reproduce_small.sh"
    )
    return result


@pytest.mark.parametrize("name", NAMES)
def test_committed_small_result_is_complete(name):
    result = committed(name)
    check_result(result, name, "small")
    assert result["reductions"], "small scale says how it departs from the paper"
    assert result["provenance"]["torch_threads"] == 1
    assert result["provenance"]["git"]["dirty"] is False
    for fig in result["figures"]:
        assert (RESULTS / fig).is_file()
    assert (RESULTS / "plotly.min.js").is_file()


def test_readme_table_matches_the_committed_results():
    readme = (RESULTS / "README.md").read_text()
    results = report.load_results(RESULTS)
    assert list(report.published(results)) == list(NAMES)  # and a matched-size variant, if any
    assert report.verdict_markdown(results) in readme
    assert report.edelta_markdown(results["edelta_benchmarks"]) in readme
    # it opens with what the lab established, what is open and why, then the counts and what
    # would decide each undecided claim
    assert report.established_markdown(results) in readme
    assert report.open_markdown(results) in readme
    heads = ["## What the lab established", "## What is open, and why", "## Counts", "## Verdicts"]
    assert [readme.index(h) for h in heads] == sorted(readme.index(h) for h in heads)
    assert readme.index(report.counts_markdown(results)) < readme.index("## Verdicts")
    assert report.undecided_markdown(results, RESULTS) in readme
    assert report.echo_markdown(results["edelta_benchmarks"]) in readme


def test_a_committed_matched_result_passes_the_size_check_and_its_rules(data_env):
    """data/results/edelta_benchmarks-small-matched.json, once committed: the geolab flavor at
    matched sizes, every compared pair within 3 %, its figures under its own stem, and judged
    again from its numbers it is unchanged."""
    path = RESULTS / "edelta_benchmarks-small-matched.json"
    if not path.is_file():
        pytest.skip("no matched-size result committed yet (the results README's CPU plan)")
    result = json.loads(path.read_text())
    assert result["config"]["match_sizes"] is True and result["config"]["flavors"] == ["geolab"]
    assert result["provenance"]["git"]["dirty"] is False
    for h in result["hypotheses"]:
        assert verdicts.SIZES_DIFFER not in (h.get("reasons") or []), h["id"]
    for fig in result["figures"]:
        assert fig.startswith("edelta_benchmarks-small-matched-") and (RESULTS / fig).is_file()
    fresh = runner.rejudge(json.loads(json.dumps(result)))
    assert fresh["hypotheses"] == result["hypotheses"]


def test_rerun_reproduces_committed_numbers(data_env):
    """Rank evolution at L=12 for post-LN and MGT, with the committed seed and settings: init and
    trained rank profiles and the validation loss must equal the committed numbers."""
    result = committed("rank_evolution")
    module = get_protocol("rank_evolution")
    settings = {**result["config"], "depths": [12], "rules": ["postln", "mgt"]}
    settings["train_rules"] = ["postln", "mgt"]
    seed = result["seeds"][0]
    with runner.deterministic():
        fresh = {
            f"{rule}/L12": module.measure(seed, 12, rule, settings, log=lambda m: None)
            for rule in settings["rules"]
        }
    for key in ("postln/L12", "mgt/L12"):
        old = result["per_seed"][str(seed)][key]
        # bit-identical on the host that wrote them; another host's SIMD moves them ≈ 1e-6
        for phase in ("init", "trained"):
            assert fresh[key][phase] == pytest.approx(old[phase], rel=runner.RERUN_RTOL, abs=1e-6)
        assert fresh[key]["val_loss"] == pytest.approx(old["val_loss"], rel=runner.RERUN_RTOL)


def test_committed_synergy_is_eq9_of_the_committed_losses():
    result = committed("ablation")
    for row in result["per_seed"].values():
        loss = {r: row[r]["val"]["loss"] for r in ("postln", "preln", "mgt_mhc", "mgt_ddl", "mgt")}
        # Eq. 9 rearranged: 𝒮 = L_mHC + L_DDL − L_MGT − L_base
        expected = loss["mgt_mhc"] + loss["mgt_ddl"] - loss["mgt"] - loss["postln"]
        assert row["synergy_postln"] == pytest.approx(expected, abs=1e-12)
        expected = loss["mgt_mhc"] + loss["mgt_ddl"] - loss["mgt"] - loss["preln"]
        assert row["synergy_preln"] == pytest.approx(expected, abs=1e-12)
    values = [row["synergy_postln"] for row in result["per_seed"].values()]
    assert result["summary"]["synergy_postln"] == pytest.approx(verdicts.mean_std(values))


def test_committed_beta_starts_at_beta0_in_every_layer():
    result = committed("beta_dynamics")
    n_layer = result["config"]["n_layer"]
    for row in result["per_seed"].values():
        start = row["snapshots"]["0%"]
        # W_β = 0 and b_β = atanh(β₀) at init (docs/design.md §3.1): every β is exactly β₀ = 0.5
        assert start["mean"] == pytest.approx([0.5] * n_layer, abs=1e-6)
        assert start["std"] == pytest.approx([0.0] * n_layer, abs=1e-6)
        assert list(row["snapshots"]) == ["0%", "25%", "50%", "100%"]


def test_beta_claims_stand_on_three_seeds():
    # The committed run's numbers as one seed and as three identical seeds: the rules read the
    # same seed-averaged profile, only the seed gate differs.
    result = committed("beta_dynamics")
    module = get_protocol("beta_dynamics")
    run = next(iter(result["per_seed"].values()))
    one = module.conclude(result["config"], [42], {"42": json.loads(json.dumps(run))})[1]
    three = module.conclude(
        result["config"], [42, 123, 456], {s: json.loads(json.dumps(run)) for s in "abc"}
    )[1]
    for h1, h3 in zip(one, three, strict=True):
        assert h1.rule_verdict == h3.rule_verdict
        assert verdicts.FEW_SEEDS in h1.reasons and verdicts.FEW_SEEDS not in h3.reasons
        assert [r for r in h1.reasons if r != verdicts.FEW_SEEDS] == h3.reasons
        assert h1.verdict.startswith(verdicts.INCONCLUSIVE + ": " + verdicts.FEW_SEEDS)


def test_committed_depth_scaling_matches_the_budget():
    result = committed("depth_scaling")
    budget = result["config"]["budget"]
    for key, run in result["summary"]["runs"].items():
        assert abs(run["n_params"] - budget) / budget < 0.25, key


def test_edelta_claims_name_the_models_that_must_have_learned():
    eb = get_protocol("edelta_benchmarks")
    cell = {"mse": {"mean": 1e-3}, "norm_dev": {"mean": 0.01}, "cos": {"mean": 0.9}}
    table = {f"reference/{t}/{m}": dict(cell) for t in eb.TASKS for m in eb.MODELS}
    table["reference/inversion/edelta"]["gamma"] = {"mean": 0.5}
    val = {"mse": 1e-3, "norm_dev": 0.01, "cos": 0.9}
    rows = [{key: {"val": val, "learned": True} for key in table}] * 3
    claims = eb.judge(eb.SCALES["small"], table, "reference", rows)
    needs = {h.id: (task, models) for task, (models, _), h in claims}
    compared = {h.id: sizes for _, (_, sizes), h in claims}
    # a failure claim rests on GPT having learned the task, never on the failing model
    assert needs["reference: mHC echo unstable"] == ("echo", ("preln",))
    assert compared["reference: mHC echo unstable"] == ("mhc", "preln")
    assert needs["reference: JPmHC inversion, transformer"] == ("inversion", ("preln",))
    # a claim that one model succeeds rests on that model too
    assert needs["reference: E∆ echo norm deviation"] == ("echo", ("preln", "edelta"))
    assert needs["reference: E∆ inversion, transformer"] == ("inversion", ("preln", "edelta"))
    assert needs["reference: DDL inversion, transformer"] == ("inversion", ("preln", "ddl"))
    # an ordering rests on every model it compares, and compares their sizes
    assert set(needs["reference: E∆ echo best"][1]) == set(eb.MODELS)
    assert needs["reference: E∆ gyroscope beats GPT/DDL/mHC"] == (
        "gyroscope",
        ("edelta", "preln", "ddl", "mhc"),
    )
    assert compared["reference: E∆ gyroscope beats GPT/DDL/mHC"] == (
        "edelta",
        "preln",
        "ddl",
        "mhc",
    )
    # gyroscope claims name it when no model learned the rotation
    unlearned = [{k: {**r, "learned": "/gyroscope/" not in k} for k, r in rows[0].items()}] * 3
    claims_ = eb.judge(eb.SCALES["small"], table, "reference", unlearned)
    gyro = [h for task, _, h in claims_ if task == "gyroscope"]
    assert gyro and all(h.reasons == ["no model learned the rotation"] for h in gyro)
    # the reference mHC is judged only at the width where the public code's mHC learns
    mhc = next(h for _, _, h in claims if h.id == "reference: mHC echo unstable")
    assert mhc.reasons and "D = 32" in mhc.reasons[0] and "D = 128" in mhc.reasons[0]


@pytest.mark.parametrize("name", NAMES)
def test_committed_result_is_judged_by_the_current_rules(name, data_env, request, monkeypatch):
    """Judging a committed result again from its stored numbers (no training) changes nothing:
    the committed verdicts, baselines and convergence states are the current code's."""
    if name == "language_model":  # its bigram baseline needs the real WikiText-2
        monkeypatch.setenv("GEOLAB_DATA", str(request.getfixturevalue("shared_data")))
    result = committed(name)
    fresh = runner.rejudge(json.loads(json.dumps(result)))
    assert fresh["hypotheses"] == result["hypotheses"]
    assert fresh["convergence"] == result["convergence"]
    # baselines are recomputed here: a float64 least squares may differ in its last bits on
    # another host's BLAS (RERUN_RTOL, the cross-host tolerance); everything else is exact
    assert_same(json.loads(json.dumps(fresh["summary"])), result["summary"], runner.RERUN_RTOL)
    assert_same(json.loads(json.dumps(fresh["per_seed"])), result["per_seed"], runner.RERUN_RTOL)
    assert fresh["reductions"] == result["reductions"]


def assert_same(new, old, rel: float, where: str = "") -> None:
    """``new`` equals ``old`` key for key and item for item, floats within ``rel``."""
    if isinstance(old, dict):
        assert isinstance(new, dict) and new.keys() == old.keys(), where
        for k in old:
            assert_same(new[k], old[k], rel, f"{where}/{k}")
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old), where
        for i, (a, b) in enumerate(zip(new, old, strict=True)):
            assert_same(a, b, rel, f"{where}[{i}]")
    elif isinstance(old, float):
        assert new == pytest.approx(old, rel=rel), where
    else:
        assert new == old, where


def test_assert_same_holds_floats_to_the_tolerance_and_the_rest_exactly():
    assert_same({"a": [1.0, "x"]}, {"a": [1.0 + 1e-9, "x"]}, 1e-6)
    for new in ({"a": [1.1, "x"]}, {"a": [1.0, "y"]}, {"a": [1.0]}, {"b": [1.0, "x"]}):
        with pytest.raises(AssertionError):
            assert_same(new, {"a": [1.0, "x"]}, 1e-6)


@torch.no_grad()
def test_reflection_operators_are_the_published_maps():
    refl = get_protocol("reflection")
    settings = refl.SCALES["tiny"]
    torch.manual_seed(0)
    x = torch.randn(5, 8)
    for flavor in refl.FLAVORS:
        ops = {m: refl.Operator(m, flavor, 8, 16, settings) for m in refl.MODELS}
        # the E∆ gate starts at σ(−1.5) ≈ 0.18 for every input (w = 0)
        ops["edelta"](x)
        gamma = ops["edelta"].gates["gamma"]
        assert gamma == pytest.approx(torch.full((5,), 1 / (1 + math.exp(1.5))))
        assert ops["edelta"].reg.item() == pytest.approx(0.5 * 4 * gamma[0] * (1 - gamma[0]))
        # Householder: x − 2 (k̂·x) k̂ keeps the norm and negates along k̂
        y = ops["householder"](x)
        assert y.norm(dim=-1) == pytest.approx(x.norm(dim=-1), rel=1e-5)
        kh = torch.nn.functional.normalize(ops["householder"].k(x), dim=-1)
        assert (y * kh).sum(-1) == pytest.approx(-(x * kh).sum(-1), abs=1e-5)
        # the finite Cayley map stays (almost) orthogonal
        assert ops["jpmhc"](x).norm(dim=-1) == pytest.approx(x.norm(dim=-1), rel=0.05)
    # the reference DDL with β = 2 is the Householder reflection along k̂
    ddl = refl.Operator("ddl", "reference", 8, 16, settings)
    with torch.no_grad():
        ddl.beta[2].bias.fill_(30.0)  # σ → 1, β → 2
    k = torch.nn.functional.normalize(ddl.k(x), dim=-1)
    assert ddl(x) == pytest.approx(x - 2 * (k * x).sum(-1, keepdim=True) * k, abs=1e-5)
    # reference seeding: the public script's validation draw after manual_seed(999)
    torch.manual_seed(999)
    val = torch.randn(8, 8)
    assert torch.equal(refl.data(settings, 42, "reference").x["val"][:, 0], val)


def test_reflection_keeps_the_training_loss_as_window_means():
    # the same geolab-flavor runs (own batch generator, so the validation cadence leaves the
    # training alone) with a loss kept per step and per 3-step window: each window's value is
    # the mean of its steps, the last window shorter
    refl = get_protocol("reflection")
    tiny = refl.SCALES["tiny"]
    per_step, windows = (
        refl.flavor_run(
            42, "geolab", tiny | {"train": tiny["train"] | {"steps": 7, "eval_every": every}}, print
        )
        for every in (1, 3)
    )
    for m in refl.MODELS:
        losses = per_step[m]["curve"]
        assert len(losses) == 7 and per_step[m]["curve_every"] == 1
        means = [sum(losses[i : i + 3]) / len(losses[i : i + 3]) for i in (0, 3, 6)]
        assert windows[m]["curve"] == pytest.approx(means, rel=1e-6)
        assert windows[m]["curve_every"] == 3


def _rank_runs(post_finals: dict, mgt_finals: list) -> tuple:
    """module, settings, summary and per_seed of a rank_evolution with the given final ranks
    (trained, per depth per seed for post-LN; at L = 100 per seed for MGT)."""
    module = get_protocol("rank_evolution")
    depths = sorted(post_finals)
    settings = {"depths": depths, "train_rules": ["postln", "mgt"], "max_trained_depth": 100}
    run = {"state": convergence.CONVERGED, "learned": True, "baseline_ratio": 0.8}
    per_seed = {}
    for i, mgt in enumerate(mgt_finals):
        rows = {f"postln/L{d}": {**run, "trained": [1.0, post_finals[d][i]]} for d in depths}
        rows["mgt/L100"] = {**run, "trained": [1.0, mgt]}
        per_seed[str(i)] = rows
    summary = {
        key: {"trained": verdicts.mean_std([r[key]["trained"][-1] for r in per_seed.values()])}
        for key in per_seed["0"]
    }
    return module, settings, summary, per_seed


def test_rank_claims_read_the_interval_over_seeds():
    # MGT at L=100: 0.6, 0.7, 0.8 -> mean 0.7, s = 0.1, t(0.975; 2) = 4.3027 -> [0.4516, 0.9484]
    module, settings, summary, per_seed = _rank_runs(
        {12: [0.5, 0.5, 0.5], 100: [0.04, 0.05, 0.06]}, [0.6, 0.7, 0.8]
    )
    h1, h2 = module.hypotheses(settings, summary, per_seed)
    assert h1.verdict == verdicts.REPRODUCED  # monotone; [0.0252, 0.0748] below 0.1
    assert h1.interval == "post-LN L=100: [0.02516, 0.07484]"
    assert h2.verdict == verdicts.INCONCLUSIVE  # straddles 0.5
    assert h2.interval == "MGT L=100: [0.4516, 0.9484]"
    # tighter MGT spread: the whole interval above 0.5; a rising post-LN curve is not reproduced
    module, settings, summary, per_seed = _rank_runs(
        {12: [0.3, 0.3, 0.3], 100: [0.04, 0.05, 0.06]}, [0.69, 0.7, 0.71]
    )
    h1, h2 = module.hypotheses(settings, summary, per_seed)
    assert h1.verdict == verdicts.REPRODUCED and h2.verdict == verdicts.REPRODUCED
    module, settings, summary, per_seed = _rank_runs(
        {12: [0.04, 0.05, 0.06], 100: [0.3, 0.3, 0.3]}, [0.69, 0.7, 0.71]
    )
    assert module.hypotheses(settings, summary, per_seed)[0].verdict == verdicts.NOT_REPRODUCED
    # one seed: the value decides the rule, the claim reads "fewer than 3 seeds"
    module, settings, summary, per_seed = _rank_runs({12: [0.5], 100: [0.05]}, [0.7])
    h1, h2 = module.hypotheses(settings, summary, per_seed)
    assert h1.rule_verdict == h2.rule_verdict == verdicts.REPRODUCED
    assert h1.verdict == h2.verdict == verdicts.inconclusive([verdicts.FEW_SEEDS])
    assert h1.interval == h2.interval == ""


def test_a_longer_budget_is_said_in_the_reductions_and_a_shorter_one_fails_the_checks():
    result = committed("ablation")
    want = get_protocol("ablation").SCALES["small"]["train"]["steps"]
    assert (report.budget_note(result) is None) == (result["config"]["train"]["steps"] == want)

    def trained_for(steps):
        copy = json.loads(json.dumps(result))
        copy["config"]["train"]["steps"] = steps
        return copy

    assert report.budget_note(trained_for(want)) is None
    text = report.reductions_markdown({"ablation": trained_for(2 * want)})
    assert (
        f"  - budget: every run trained {2 * want} steps (`--steps {2 * want}`), not the {want}"
        in text
    )
    with pytest.raises(AssertionError):
        check_result(trained_for(want // 2), "ablation", "small")
