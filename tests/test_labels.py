"""Issue 52 item 5: no two line-end labels of a shipped figure overlap at its default size.

A label's box is computed from its annotation: its centre from the axis range (set explicitly
by the figures that name their lines, so pixels are known without a browser), its height one
line of its font, its width ≈ 0.6 × font size per character from its x (``xanchor="left"``).
Two boxes in the same panel must not intersect. 04, 06 and 08's figures are checked at their
defaults (the notebooks' rules, every depth their sliders offer)."""

from __future__ import annotations

import numpy as np
import pytest

from geolab import explore
from geolab.experiments import lab
from geolab.figures.style import LABEL_LINE, end_labels, spread

PLOT_WIDTH = 700  # px: a notebook column; the figures' width follows the page


def panel(layout, axis: str) -> tuple[float, float, float]:
    """(low, high, height px) of a y axis ("y", "y2") whose range the figure sets."""
    ax = layout["yaxis" + axis[1:]]
    assert ax.range is not None, f"{axis}: labels need an explicit range to sit in px"
    low, high = ax.range
    domain = ax.domain or (0, 1)
    margin = layout.margin
    return low, high, (layout.height - margin.t - margin.b) * (domain[1] - domain[0])


def boxes(fig) -> list[tuple[str, str, float, float, float, float]]:
    """(label, y axis, left, right, bottom, top) in px of every line-end label."""
    layout = fig.layout
    xs = np.concatenate([np.asarray(t.x, dtype=float) for t in fig.data if t.x is not None])
    x_low, x_high = np.nanmin(xs), np.nanmax(xs)
    margin = layout.margin
    width = PLOT_WIDTH - (margin.l or 80) - (margin.r or 80)
    out = []
    for a in layout.annotations:
        if a.xref != "x" or a.showarrow or a.xanchor != "left":  # not a line-end label
            continue
        low, high, height = panel(layout, a.yref)
        y = (a.y - low) / (high - low) * height
        x = (a.x - x_low) / ((x_high - x_low) or 1) * width + (a.xshift or 0)
        line = 1.2 * a.font.size
        out.append(
            (a.text, a.yref, x, x + 0.6 * a.font.size * len(a.text), y - line / 2, y + line / 2)
        )
    return out


def overlaps(fig) -> list[tuple[str, str]]:
    found = boxes(fig)
    return [
        (a[0], b[0])
        for i, a in enumerate(found)
        for b in found[i + 1 :]
        if a[1] == b[1] and a[2] < b[3] and b[2] < a[3] and a[4] < b[5] and b[4] < a[5]
    ]


def test_spread_keeps_labels_apart_and_inside_the_top():
    assert list(spread([0.0, 0.0, 0.0], 1.0)) == [0.0, 1.0, 2.0]
    assert list(spread([5.0, 5.0], 1.0, high=5.0)) == [4.0, 5.0]  # pushed down from the top
    assert list(spread([0.0, 3.0], 1.0)) == [0.0, 3.0]  # apart already: unmoved
    labels = end_labels({"a": [0.5], "b": [0.5], "c": [0.51]}, 0, room=(0.0, 1.0, 200.0))
    ys = sorted(lab_["y"] for lab_ in labels)
    assert np.diff(ys).min() >= LABEL_LINE / 200 - 1e-12


@pytest.mark.parametrize("n_layer", [12, 24, 48, 100, 200])
def test_04_rank_labels_never_overlap(n_layer):
    view = explore.rank_view(["postln", "preln", "mgt"], n_layer)
    fig = view.figures["rank"]
    assert len(boxes(fig)) == 4 and overlaps(fig) == []


@pytest.mark.parametrize("n_layer", explore.GRADIENT_DEPTHS)
def test_08_gradient_labels_never_overlap(n_layer):
    view = explore.gradient_view(["postln", "preln", "mgt"], n_layer)
    for name in ("grad", "jacobian"):
        fig = view.figures[name]
        assert len(boxes(fig)) == 4 and overlaps(fig) == [], name


def fake_runs(n_runs: int = 2) -> list[dict]:
    """Finished 06 runs whose loss curves end close together (the collision case)."""
    steps = np.arange(1, 41)
    runs = []
    for k in range(n_runs):
        curves = {
            rule: list(2.0 * np.exp(-steps / 20) + 0.50 + 0.001 * (i + k))
            for i, rule in enumerate(("preln", "mgt", "ddl"))
        }
        beta = {
            "mgt": {
                label: {"mean": [0.5 + shift * layer for layer in range(4)]}
                for label, shift in (("0%", 0.0), ("25%", 1e-4), ("50%", 2e-4), ("100%", 4e-4))
            }
        }
        runs.append({"label": f"#{k + 1} copy L=4", "result": {"curves": curves, "beta": beta}})
    return runs


def test_06_loss_labels_never_overlap():
    fig = lab.lab_figures(fake_runs())["curves"]
    assert len(boxes(fig)) == 6 and overlaps(fig) == []


def test_06_beta_plot_shows_the_change_since_init():
    """β moves by 1e-4 in a short run: drawn as β, every snapshot lay on the init line."""
    fig = lab.lab_figures(fake_runs(1))["beta #1 copy L=4 mgt"]
    assert [t.name for t in fig.data] == ["25% − init", "50% − init", "100% − init"]
    assert list(fig.data[-1].y) == pytest.approx([0.0, 4e-4, 8e-4, 1.2e-3])
    assert "at init β₀ = 0.5 in every layer" in fig.layout.title.text


def test_no_control_carries_raw_html_as_its_accessible_name():
    """marimo 0.25 copies a control's label, rendered to HTML, into the ``aria-label`` of a
    slider's typing box (``include_input``) and of ``mo.ui.number``: a screen reader read
    04's depth box as markup. Sliders, dropdowns and checkboxes point at their label element
    instead (``aria-labelledby``), whose text is plain. So no notebook uses those two."""
    import ast
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    offenders = []
    for path in sorted((repo / "notebooks").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            words = {k.arg: k.value for k in node.keywords}
            boxed = (
                isinstance(words.get("include_input"), ast.Constant)
                and words["include_input"].value
            )
            labelled_number = node.func.attr == "number" and "label" in words
            if boxed or labelled_number:
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []
