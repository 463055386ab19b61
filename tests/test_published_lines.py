"""Issue 54: published numbers against the learned line, per-seed β transition, knife edges."""

import math

import pytest

from geolab.experiments import baselines, beta_dynamics, decide, edelta_benchmarks
from geolab.experiments import verdicts as v


def test_near_pi_published_mses_are_k_times_an_independent_closed_form():
    # rotation by π instead of θ = 3.10 in plane (0, 1) of a unit v in R^64: per step the error
    # is 2(1 − cos(π − θ)) (v₀² + v₁²), E(v₀² + v₁²) = 2/64, MSE averaged over the 64 features
    exact = 2 * (1 - math.cos(math.pi - 3.10)) * (2 / 64) / 64
    line = edelta_benchmarks.published_line("near_pi", ("edelta", "preln"))
    assert line["value"] == pytest.approx(exact, rel=0.01)  # 500 trajectories: 2 digits
    assert line["k"]["E∆"] == pytest.approx(1.44e-6 / exact, rel=0.01)
    assert line["k"]["GPT"] == pytest.approx(1.19e-5 / exact, rel=0.01)
    assert not line["learned"]  # 1.7× and 14× the baseline, above the line 0.5
    reason = edelta_benchmarks.published_reason(line)
    assert reason.startswith("the published MSEs are 1.71–14.1× the best trivial predictor (")
    h = v.gate(v.Hypothesis("c", "claim", "m", v.REPRODUCED, "rule", undecidable=reason), {})
    assert h.verdict == f"{v.UNDECIDABLE}: {reason}" and v.kind(h.verdict) == v.UNDECIDABLE
    fix = decide.remedy("edelta_benchmarks", {}, h.__dict__)
    assert fix["what"].startswith("no run at any scale: the published MSEs are 1.71")
    assert "--scale paper" not in fix["what"] and decide.cost_text(fix) == "none"


def test_tiny_shakespeare_learned_line_is_out_of_reach_and_wikitext_gets_a_pilot():
    best = 4.359634381259115  # the committed 5-gram perplexity on 32-character windows
    result = {
        "config": {"task": "shakespeare", "seq_len": 32},
        "summary": {"baselines": {"tasks": {"shakespeare": {"best": "5-gram", "value": best}}}},
    }
    text = decide.out_of_reach(result)
    assert f"is {math.log(baselines.PPL_FRACTION * best):.3f} nats" in text and "1.367" in text
    assert "nanoGPT" in text and "1.4697" in text
    assert decide.out_of_reach({**result, "config": {"task": "shakespeare", "seq_len": 256}}) == ""
    assert decide.out_of_reach({**result, "config": {"task": "wikitext2", "seq_len": 32}}) == ""
    pilot = decide.paper_commands("ablation", "")
    assert pilot.index("--scale paper --seeds 1`") < pilot.index(
        "`geolab reproduce ablation --scale paper`"
    )


def test_paper_scales_drop_out_at_a_tenth():
    from geolab.experiments import get_protocol
    from geolab.experiments.runs import model_config, text_shape

    settings = get_protocol("language_model").SCALES["paper"]
    assert model_config(settings, text_shape(settings), "mgt").dropout == 0.1


def _profile(neg_per_seed: dict, n_layer: int = 8) -> dict:
    snaps = {
        seed: {
            "snapshots": {
                label: {
                    "mean": [0.3] * n_layer,
                    "frac_negative": [f * neg[i] for i in range(n_layer)],
                    "hist": [[1]] * n_layer,
                    "edges": [-1.0, 1.0],
                }
                for label, f in (("0%", 0.0), ("100%", 1.0))
            }
        }
        for seed, neg in neg_per_seed.items()
    }
    return snaps


def test_beta_transition_needs_every_seed_not_the_mean_profile():
    rising = [0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5]
    # two seeds fall over depth apart from a jump in the last layer; their mean with the rising
    # one still rises
    falling = [0.2, 0.19, 0.18, 0.17, 0.16, 0.15, 0.14, 0.9]
    summary, hyps = beta_dynamics.judge(
        {
            "1": {**_profile({"1": rising})["1"]},
            "2": _profile({"2": falling})["2"],
            "3": _profile({"3": falling})["3"],
        },
        8,
    )
    end = summary["100%"]
    assert end["spearman_layer_frac_negative"] > beta_dynamics.CORRELATED  # the mean passes
    per_seed = end["spearman_per_seed"]
    assert per_seed["1"] == pytest.approx(1.0) and per_seed["2"] < 0.5 and per_seed["3"] < 0.5
    assert hyps[0].verdict == v.INCONCLUSIVE and "above 0.5 in 1 of 3" in hyps[0].measured
    assert beta_dynamics.transition_verdict(end, [0.9, 0.8, 0.7]) == v.REPRODUCED


def test_knife_edges_are_named_in_the_verdict_and_kind_strips_them():
    assert v.knife_edge(0.1004, 0.1, "final gap") == "knife edge: final gap 0.1004 vs line 0.1"
    assert v.knife_edge(0.102, 0.1) == "" and v.knife_edge(0.0, 0.0) == ""
    h = v.Hypothesis("c", "claim", "m", v.REPRODUCED, "rule", edges=[v.knife_edge(0.1004, 0.1)])
    v.gate(h, {})
    assert h.verdict == "reproduced — knife edge: 0.1004 vs line 0.1"
    assert v.kind(h.verdict) == v.REPRODUCED
    assert v.kind(v.with_edges(v.NOT_REPRODUCED, ["knife edge: x"])) == v.NOT_REPRODUCED
