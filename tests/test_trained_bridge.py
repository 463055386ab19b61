"""The end of notebook 04: rank at init next to rank after training, read from the committed
rank_evolution result and checked against that result's own summary."""

from pathlib import Path

import plotly.graph_objects as go
import pytest

from geolab import explore
from geolab.experiments.runner import load_result

REPO = Path(__file__).resolve().parents[1]
RESULT = load_result(REPO / "data" / "results" / "rank_evolution-small.json")


def test_trained_depths_are_those_with_trained_runs():
    cfg = RESULT["config"]
    assert explore.trained_depths(RESULT) == tuple(
        d for d in cfg["depths"] if d <= cfg["max_trained_depth"]
    )


@pytest.mark.parametrize("depth", explore.trained_depths(RESULT))
def test_bridge_numbers_are_the_committed_runs(depth):
    view = explore.rank_bridge_view(RESULT, depth)
    assert set(view.numbers["final"]) == set(RESULT["config"]["train_rules"])
    for rule, (init, trained) in view.numbers["final"].items():
        summary = RESULT["summary"][f"{rule}/L{depth}"]
        assert init == pytest.approx(summary["init"]["mean"])
        assert trained == pytest.approx(summary["trained"]["mean"])
        assert len(view.numbers["init"][rule]) == len(view.numbers["trained"][rule]) == depth + 1
    assert view.numbers["all_lower"] == all(b < a for a, b in view.numbers["final"].values())
    fig = view.figures["bridge"]
    assert [t.name for t in fig.data][:2] == ["postln (init)", "postln (trained)"]
    assert fig.data[0].x[0] == 0 and len(fig.data[0].x) == depth + 1
    go.Figure(fig.to_dict())  # validates
    assert f"L = {depth}" in fig.layout.title.text


def test_bridge_refuses_an_untrained_depth():
    with pytest.raises(ValueError, match=r"n_layer=200 is not allowed; trained depths: 12, 24"):
        explore.rank_bridge_view(RESULT, 200)


def test_bridge_curves_are_the_mean_over_seeds():
    import copy

    result = copy.deepcopy(RESULT)
    first = next(iter(result["per_seed"].values()))
    other = copy.deepcopy(first)
    for run in other.values():
        for phase in ("init", "trained"):
            if phase in run:
                run[phase] = [r + 0.1 for r in run[phase]]
        if "val_loss" in run:
            run["val_loss"] += 1.0
    result["per_seed"] = {"1": first, "2": other}
    view = explore.rank_bridge_view(result, 12)
    run = first["postln/L12"]
    assert view.numbers["trained"]["postln"] == pytest.approx([r + 0.05 for r in run["trained"]])
    assert view.numbers["init"]["postln"] == pytest.approx([r + 0.05 for r in run["init"]])
    assert view.numbers["val_loss"]["postln"] == pytest.approx(run["val_loss"] + 0.5)
    assert "mean of 2 seeds" in view.figures["bridge"].layout.title.text
