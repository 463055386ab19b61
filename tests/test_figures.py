"""geolab.figures: valid plotly, fixed trace layout, and the plotted numbers are the given ones."""

import math
import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from geolab import figures as F


def validated(fig: go.Figure) -> go.Figure:
    """``fig`` after checking it against plotly's full validation (the builders skip it for
    speed): a misspelt property or a bad value raises here."""
    go.Figure(fig.to_dict())
    return fig


def names(fig: go.Figure) -> list[str]:
    return [trace.name for trace in fig.data]


def test_as_numpy_accepts_tensors_with_grad_and_lists():
    t = torch.ones(3, requires_grad=True) * 2
    assert F.as_numpy(t).tolist() == [2.0, 2.0, 2.0]
    assert F.as_numpy([1, 2]).tolist() == [1, 2]


def test_spectrum_traces_and_multiplicity_labels():
    eig = torch.tensor([1.0, 1.0, 1.0, 0.25])
    fig = validated(F.spectrum_figure({"A": eig, "B": [complex(0, 1), complex(0, -1)]}))
    assert names(fig) == ["unit circle", "A", "B"]
    assert list(fig.data[1].x) == [1.0, 1.0, 1.0, 0.25]
    assert list(fig.data[1].text) == ["×3", "", "", ""]
    assert list(fig.data[2].y) == [1.0, -1.0]
    no_circle = F.spectrum_figure({"A": eig}, unit_circle=False)
    assert names(no_circle) == ["A"]


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.complex_numbers(max_magnitude=1e6, allow_nan=False, allow_infinity=False),
        min_size=1,
        max_size=12,
    )
)
def test_spectrum_plots_exactly_the_eigenvalues(zs):
    fig = F.spectrum_figure({"z": np.array(zs)})
    np.testing.assert_array_equal(fig.data[1].x, np.real(zs))
    np.testing.assert_array_equal(fig.data[1].y, np.imag(zs))
    z = np.array(zs, dtype=complex)
    for i, label in enumerate(fig.data[1].text):
        if label:
            assert int(label[1:]) == int((np.abs(z - z[i]) <= 1e-6).sum())


def test_sweep_current_marker_interpolates_each_curve():
    x = np.linspace(0, 2, 5)
    fig = validated(F.sweep_figure(x, {"a": 2 * x, "b": x**2}, current=1.25, band=(0, 1)))
    assert names(fig) == ["a", "b", "current"]
    assert list(fig.data[2].x) == [1.25, 1.25]
    assert fig.data[2].y[0] == pytest.approx(2.5)
    assert fig.data[2].y[1] == pytest.approx(np.interp(1.25, x, x**2))
    assert fig.layout.shapes[0].x0 == 0 and fig.layout.shapes[0].x1 == 1


def test_determinant_figure_marks_three_modes_and_band():
    betas = np.linspace(-1, 3, 9)
    fig = validated(F.determinant_figure(betas, 1 - betas, 1.0))
    labels = [a.text for a in fig.layout.annotations]
    assert labels == ["identity", "erasure: det 0", "mirror: det −1"]
    assert fig.data[1].y[0] == pytest.approx(0.0)


def test_unit_circle_image_is_matrix_times_circle():
    M = np.array([[0.5, 0.2], [0.0, -1.0]])
    fig = validated(F.unit_image_figure(M, direction=[0, 2]))
    assert names(fig) == ["unit circle", "image", "x → Ax", "k"]
    circle = np.stack([fig.data[0].x, fig.data[0].y])
    np.testing.assert_allclose(np.stack([fig.data[1].x, fig.data[1].y]), M @ circle)
    np.testing.assert_allclose(np.hypot(fig.data[3].x, fig.data[3].y), [1.3, 1.3])
    assert fig.data[3].x[1] == pytest.approx(0.0)


def test_unit_sphere_image_and_bad_shapes():
    M = np.diag([1.0, 1.0, 0.0])
    fig = validated(F.unit_image_figure(M, direction=[0, 0, 1]))
    assert [t.type for t in fig.data] == ["surface", "surface", "scatter3d"]
    assert np.allclose(fig.data[1].z, 0.0)
    with pytest.raises(ValueError, match="matrix"):
        F.unit_image_figure(np.eye(4))
    with pytest.raises(ValueError, match="direction"):
        F.unit_image_figure(np.eye(2), direction=[0, 0])


def test_vectors_and_bars():
    fig = validated(F.vectors_figure({"x": [1, 2], "y": [-3, 0]}, direction=[1, 0]))
    assert names(fig) == ["x", "y", "k"]
    assert list(fig.data[1].x) == [0.0, -3.0]
    write, gate = torch.tensor([1.0, -2.0, 3.0]), torch.tensor([0.5, 0.25, 1.0])
    bars = validated(F.gated_write_figure(write, write * gate, gate))
    assert [t.type for t in bars.data] == ["bar", "bar", "scatter"]
    assert list(bars.data[1].y) == [0.5, -0.5, 3.0]
    assert bars.data[2].yaxis == "y2" and list(bars.layout.yaxis2.range) == [0, 1]


def test_beta_histogram_marks_range_and_zero():
    fig = validated(F.beta_histogram_figure(torch.linspace(-0.5, 0.9, 50), -1.0, 1.0))
    assert [t.type for t in fig.data] == ["histogram", "scatter", "scatter"]
    assert len(fig.data[0].x) == 50
    assert [v for v in fig.data[1].x if v is not None] == [-1.0, -1.0, 1.0, 1.0]


def test_beta_histogram_bins_tile_the_allowed_range():
    # Every β equal (W_β = 0): one narrow bar at 0.9, not plotly's unit-wide bar around it.
    fig = validated(F.beta_histogram_figure(torch.full((64,), 0.9), -1.1, 1.1, bins=40))
    bins = fig.data[0].xbins
    assert (bins.start, bins.end) == (-1.1, 1.1)
    assert bins.size == pytest.approx(2.2 / 40)


def test_sweep_current_marks_only_the_named_curves_and_log_x():
    x = np.array([0.1, 1.0, 10.0])
    fig = validated(
        F.sweep_figure(
            x, {"θ": x, "π": np.full(3, np.pi)}, current=1.0, current_on=("θ",), log_x=True
        )
    )
    assert names(fig) == ["θ", "π", "current"]
    assert list(fig.data[2].y) == [1.0]
    assert fig.layout.xaxis.type == "log"


def test_spectrum_sets_label_on_their_own_side_in_their_colour():
    fig = validated(F.spectrum_figure({"Q": [1, 1, 1j], "H": [1, 1, -1], "G": [1, 1, 0]}))
    sides = [t.textposition for t in fig.data[1:]]
    assert len(set(sides)) == 3
    assert [t.textfont.color for t in fig.data[1:]] == [t.marker.color for t in fig.data[1:]]


def test_rank_figure_one_trace_per_rule_even_at_200_layers():
    ranks = {name: np.linspace(1, 0, 200) for name in ("postln", "mgt", "preln")}
    fig = validated(F.rank_figure(ranks))
    assert names(fig) == ["postln", "mgt", "preln"]
    assert list(fig.data[0].x) == list(range(1, 201))
    both = validated(F.rank_figure(ranks, {k: v / 2 for k, v in ranks.items()}))
    assert len(both.data) == 6
    assert [t.yaxis or "y" for t in both.data] == ["y"] * 3 + ["y2"] * 3
    assert both.data[3].y[0] == pytest.approx(0.5)


def test_rank_figure_colours_by_name_input_layer_and_floor_in_the_legend():
    ranks = {"mgt": np.linspace(1, 0.5, 5), "pure attention": np.linspace(1, 0.1, 5)}
    colors = {"pure attention": "black", "mgt": "#123456"}
    fig = validated(F.rank_figure(ranks, floor=0.1, colors=colors, first_layer=0))
    assert names(fig)[:2] == ["mgt", "pure attention"]
    assert [t.line.color for t in fig.data[:2]] == ["#123456", "black"]
    assert list(fig.data[0].x) == [0, 1, 2, 3, 4]
    floor = fig.data[2]
    assert floor.name.startswith("floor 1/S = 0.100") and list(floor.y) == [0.1, 0.1]
    assert not fig.layout.annotations  # no label on the plot to cover the curves
    assert fig.layout.xaxis.dtick == 1 and fig.layout.xaxis.tickformat == "d"
    assert F.integer_ticks(200)["dtick"] == 20 and F.integer_ticks(24)["dtick"] == 5


def test_token_clouds_are_centred_on_their_mean_at_one_scale():
    collapsed = np.tile([[1.0, 0.0]], (32, 1))
    healthy = np.random.default_rng(0).normal(size=(32, 2))
    fig = validated(F.token_cloud_figure({"a": collapsed, "b": healthy}, colors={"a": "black"}))
    # the mean is subtracted: the collapsed point at (1, 0) is drawn at (0, 0), mid-panel
    assert sum(fig.layout.xaxis.range) / 2 == pytest.approx(0.0)
    assert np.allclose(fig.data[0].x, 0.0) and np.allclose(fig.data[0].y, 0.0)
    assert np.abs([np.mean(fig.data[1].x), np.mean(fig.data[1].y)]).max() < 1e-12
    width_a = fig.layout.xaxis.range[1] - fig.layout.xaxis.range[0]
    width_b = fig.layout.xaxis2.range[1] - fig.layout.xaxis2.range[0]
    assert width_a == pytest.approx(width_b)
    assert fig.data[0].marker.color == "black"


def test_heatmaps_share_a_scale_and_check_titles():
    mats = [np.eye(3), 2 * np.eye(3)]
    fig = validated(F.heatmaps_figure(mats, ["a", "b"]))
    assert [t.zmax for t in fig.data] == [2.0, 2.0]
    assert [t.xaxis or "x" for t in fig.data] == ["x", "x2"]
    with pytest.raises(ValueError, match="titles"):
        F.heatmaps_figure(mats, ["a"])


def test_composite_gain_is_log_scale():
    depths = np.arange(1, 11)
    fig = validated(F.composite_gain_figure(depths, {"HC": 2.0**depths, "mHC": np.ones(10)}))
    assert fig.layout.yaxis.type == "log"
    assert names(fig) == ["HC", "mHC"]
    assert fig.data[0].y[-1] == pytest.approx(math.pow(2, 10))


def test_composite_gain_styles_and_a_zoom_that_stays_zoomed():
    depths = np.arange(1, 11)
    gains = {"HC": 2.0**depths, "JPmHC": 10.0**depths, "mHC": np.ones(10)}
    lines = {"JPmHC": {"color": "purple", "dash": "dot"}}
    fig = validated(
        F.composite_gain_figure(depths, gains, zoomed=["JPmHC", "mHC"], bound=2.0, lines=lines)
    )
    assert fig.data[1].line.color == "purple" and fig.data[3].line.dash == "dot"
    assert list(fig.layout.yaxis2.range) == pytest.approx([0.0, 2.6])


def test_same_names_same_traces_for_live_updates():
    a = F.spectrum_figure({"Q": [1, 1j], "H": [-1, 1]})
    b = F.spectrum_figure({"Q": [0.5, -1j], "H": [1, 1]})
    assert names(a) == names(b)
    assert [t.type for t in a.data] == [t.type for t in b.data]


def test_one_colour_per_rule_in_every_notebook():
    from geolab import explore
    from geolab.experiments import lab
    from geolab.rules import RESIDUALS

    assert set(F.RULE_COLORS) <= set(RESIDUALS) and len(F.RULE_COLORS) == 19  # the built-ins
    assert len(set(F.RULE_COLORS.values())) == len(F.RULE_COLORS)  # all different
    assert F.rule_color("mine", 3) == F.PALETTE[3]  # a rule you registered: by position
    # 04 and 08 (rule_colors), 05 (mixer families), 06 (lab runs) take the same colours
    colors = explore.rule_colors()
    # every built-in rule in its colour (a test in this process may have registered its own)
    assert all(colors[r] == F.RULE_COLORS[r] for r in explore.rank_rules() if r in F.RULE_COLORS)
    assert set(F.RULE_COLORS) - {"noskip"} <= set(explore.rank_rules())
    assert colors[explore.REFERENCE] == F.RULE_COLORS["noskip"]
    families = explore.streams.FAMILY_COLORS
    assert [families[f] for f in ("HC", "mHC", "JPmHC")] == [
        F.RULE_COLORS[r] for r in ("hc", "mhc", "jpmhc")
    ]
    result = {"curves": {"preln": [2.0, 1.0], "mgt": [2.0, 1.5]}, "beta": {}}
    runs = [{"label": f"#{k} copy", "result": result} for k in (1, 2)]  # a rerun: same curves
    curves = lab.lab_figures(runs)["curves"]
    styles = {t.name: (t.line.color, t.line.dash) for t in curves.data}
    assert styles == {
        "#1 preln": (F.RULE_COLORS["preln"], "solid"),
        "#1 mgt": (F.RULE_COLORS["mgt"], "solid"),
        "#2 preln": (F.RULE_COLORS["preln"], "dash"),
        "#2 mgt": (F.RULE_COLORS["mgt"], "dash"),
    }
    # four lines: each named on the plot at its end, in its colour
    labels = {a.text: a.font.color for a in curves.layout.annotations}
    assert labels == {name: color for name, (color, _) in styles.items()}


def test_end_labels_on_log_axes_and_apart_where_curves_meet():
    curves = {"a": [1.0, 100.0], "b": [1.0, 100.0], "c": [1.0, 0.0]}
    labels = F.end_labels(curves, 1, log=True, span=None)
    # c's last value is 0 (a gap on a log axis): labelled at its last drawn point, layer 1
    assert [(lab["text"], lab["x"], lab["y"]) for lab in labels][0] == ("c", 1, 0.0)
    (a, b) = labels[1:]
    assert a["y"] == pytest.approx(2.0) and b["y"] > a["y"]  # log10(100), moved apart
    start = F.end_labels({"a": [10.0, 1.0]}, 0, log=True, start=True)
    assert (start[0]["x"], start[0]["y"]) == (0, pytest.approx(1.0))


def test_gradient_figures_name_more_than_three_lines_on_the_plot():
    norms = {r: np.array([1e-3, 1e-2, 1e-1]) * (i + 1) for i, r in enumerate("abcd")}
    fig = validated(F.grad_norm_figure(norms))
    assert sorted(a.text for a in fig.layout.annotations) == list("abcd")
    assert not F.grad_norm_figure(dict(list(norms.items())[:3])).layout.annotations
    sv = {r: np.ones((4, 2)) * (i + 1) for i, r in enumerate("abcd")}
    jac = validated(F.jacobian_figure(sv))
    assert sorted(a.text for a in jac.layout.annotations) == list("abcd")
    assert {a.x for a in jac.layout.annotations} == {0}  # at l = 0, where they differ


def test_result_figures_take_the_rules_colours():
    from geolab.experiments import figures as EF

    curve = {"val_curve": {"metric": "mse", "steps": [1, 2], "values": [1.0, 0.5]}}
    runs = {f"{r}/L{d}": {**curve, "converged": True} for r in ("mgt", "preln") for d in (4, 8)}
    fig = EF.learning_curves(runs, "t", group=lambda name: name.split("/")[0])
    assert [t.line.color for t in fig.data] == [F.RULE_COLORS[n.split("/")[0]] for n in runs]
    summary = {f"{r}/L{d}": {"init": {"mean": 0.5}} for r in ("ddl", "mhc") for d in (4, 8)}
    ranks = EF.final_rank_vs_depth([4, 8], ["ddl", "mhc"], summary)
    assert [t.line.color for t in ranks.data] == [F.RULE_COLORS["ddl"], F.RULE_COLORS["mhc"]]


def test_many_learning_curves_keep_a_legend_of_rules_and_name_each_run_on_hover():
    from geolab.experiments import figures as EF

    curve = {"val_curve": {"metric": "mse", "steps": [1, 2], "values": [1.0, 0.5]}}
    rules = ("mgt", "preln", "edelta")
    few = {f"{r}/L{d}": {**curve, "converged": True} for r in rules for d in (4, 8)}
    fig = EF.learning_curves(few, "t", group=lambda name: name.split("/")[0])
    assert [t.name for t in fig.data] == list(few)  # few curves: one legend entry per run
    many = {f"{r}/L{d}": {**curve, "converged": d != 8} for r in rules for d in (4, 8, 16, 32, 64)}
    assert len(many) > EF.LEGEND_PER_RUN
    fig = EF.learning_curves(many, "t", group=lambda name: name.split("/")[0])
    keys = [t for t in fig.data if t.showlegend is not False]
    assert [t.name for t in keys] == list(rules) and all(t.line.dash is None for t in keys)
    assert [t.line.color for t in keys] == [F.RULE_COLORS[r] for r in rules]
    assert fig.layout.legend.title.text == "rule (dotted: not converged)"
    for trace, name in zip(fig.data[: len(many)], many, strict=True):
        assert trace.legendgroup == name.split("/")[0] == trace.name
        assert trace.hovertemplate.startswith(name)
        assert ("(not converged)" in trace.hovertemplate) == name.endswith("L8")


# The papers' names for the models in 07's bar charts, and the diagnostic variant, each with the
# residual rule it runs (the E∆ paper's table; docs/design.md §12).
PAPER_NAMES = {
    "GPT": "preln",
    "DDL": "ddl",
    "DDL write-only": "ddl_write",
    "DDL expanded state": "ddl_state",
    "mHC": "mhc",
    "JPmHC": "jpmhc",
    "E∆": "edelta",
    "E∆, λ_reg = 0": "edelta",
    "Householder": "householder",
    "edelta_noreg": "edelta",
}


def rule_in(name: str, default: str | None = None) -> str | None:
    """The residual rule a trace's name speaks of: a rule's own name among its words
    ("mgt L=48", "reference/echo/preln (not converged)"), else a paper's name for it ("GPT")."""
    if name in PAPER_NAMES:
        return PAPER_NAMES[name]
    words = [w for w in re.split(r"[\s/(),=]+", name) if w]
    found = set(words) & set(F.RULE_COLORS)  # a rule's own name speaks first
    found = found or {PAPER_NAMES.get(w, w) for w in words} & set(F.RULE_COLORS)
    assert len(found) <= 1, (name, found)
    return found.pop() if found else default


def is_tint_of(color: str, base: str) -> bool:
    """Whether ``color`` lies between white and ``base``: one weight w in [0, 1] gives each
    channel as w · base + (1 − w) · 255 (to rounding)."""
    c, b = (np.array([int(x[k : k + 2], 16) for k in (1, 3, 5)], float) for x in (color, base))
    w = (255 - c) / np.where(b == 255, np.nan, 255 - b)
    w = w[np.isfinite(w)]
    return len(w) > 0 and 0 <= w.min() and w.max() <= 1 + 1e-9 and np.ptp(w) < 0.02


def test_every_figure_of_07_colours_each_rule_by_the_style_and_names_lines_past_three():
    """Every figure notebook 07 draws from the committed results: each bar, marker and line
    that stands for a rule has ``figures.RULE_COLORS[rule]``; every label written on a plot in a
    rule's name is in that colour; a plot of more than three lines has labels on it. β per
    layer (beta_dynamics) plots snapshots of MGT, the one rule that protocol trains: tints of its
    colour, the last snapshot the colour itself."""
    from geolab.experiments import report

    results = report.load_results(Path(__file__).resolve().parents[1] / "data" / "results")
    assert len(results) >= 7
    checked = 0
    for protocol, result in results.items():
        for key, fig in report.result_figures(result).items():
            default = "mgt" if protocol == "beta_dynamics" else None
            lines = [t for t in fig.data if t.type == "scatter" and "lines" in (t.mode or "")]
            for trace in fig.data:
                if trace.type == "heatmap":
                    continue
                if trace.type == "bar":
                    assert trace.marker.color == F.RULE_COLORS[rule_in(trace.name)], trace.name
                elif trace.mode == "markers":  # one marker per rule, the rules on x
                    assert list(trace.marker.color) == [F.RULE_COLORS[r] for r in trace.x], key
                elif rule_in(trace.name) is None and default:  # a snapshot of the one rule
                    assert is_tint_of(trace.line.color, F.RULE_COLORS[default]), trace.name
                else:
                    rule = rule_in(trace.name)
                    assert trace.line.color == F.RULE_COLORS[rule], (protocol, key, trace.name)
                checked += 1
            snapshots = [t for t in lines if rule_in(t.name) is None and default]
            if snapshots:  # the last moment of training in the rule's own colour
                assert snapshots[-1].line.color == F.RULE_COLORS[default], (protocol, key)
            for label in fig.layout.annotations:
                if (rule := rule_in(label.text)) is not None:
                    assert label.font.color == F.RULE_COLORS[rule], (protocol, key, label.text)
            if len(lines) > 3:
                assert len(fig.layout.annotations) >= 2, (protocol, key)
    assert checked > 100
