"""Jupyter side: the ipywidgets explorers update their FigureWidgets in place, and the notebooks
exported to .ipynb (``marimo export ipynb``) execute under nbclient. No browser needed."""

import base64
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import plotly.graph_objects as go
import pytest

from geolab import explore, widgets
from geolab.terms import term

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import make_ipynb  # noqa: E402


def test_delta_explorer_moves_the_numbers_and_the_plots():
    e = widgets.delta_explorer()
    assert all(isinstance(f, go.FigureWidget) for f in e.figures.values())
    det_marker = e.figures["det"].data[1]
    assert det_marker.y[0] == pytest.approx(0.5)
    e.controls["beta"].value = 1.0
    assert e.figures["det"].data[1] is det_marker  # updated in place, not replaced
    assert det_marker.y[0] == pytest.approx(0.0, abs=1e-12)
    assert min(abs(x) for x in e.figures["spectrum"].data[1].x) < 1e-12
    assert "projection" in e.readout.value
    assert e.view.numbers["det"] == pytest.approx(0.0, abs=1e-12)


def test_cayley_explorer_gamma_slider():
    e = widgets.cayley_explorer()
    e.controls["gamma"].value = 0.0
    reg, grad = e.figures["regularizer"].data[2].y
    assert reg == pytest.approx(0.0) and grad == pytest.approx(4.0)
    assert e.view.numbers["det_g"] == pytest.approx(-1.0)


def test_mgt_explorer_rejects_beta0_outside_the_range_without_touching_the_plots():
    e = widgets.mgt_explorer()
    before = list(e.figures["jacobian"].data[0].y)
    e.controls["alpha"].value = 1.0
    after = list(e.figures["jacobian"].data[0].y)
    assert after != before
    e.controls["beta0"].value = 0.9  # still inside (−λ, λ) for λ = 1
    after = list(e.figures["jacobian"].data[0].y)
    e.controls["lam"].value = 0.5
    assert "Not allowed" in e.readout.value and "beta0" in e.readout.value
    assert list(e.figures["jacobian"].data[0].y) == after


def test_rank_explorer_depth_and_rules():
    e = widgets.rank_explorer(rules=("preln",))
    # the input (layer 0), then each layer; the floor's dotted line last
    assert [len(t.y) for t in e.figures["rank"].data[:4]] == [25] * 4
    e.controls["n_layer"].value = 12
    assert [len(t.y) for t in e.figures["rank"].data[:4]] == [13] * 4
    e.controls["rules"].value = ("preln", "postln")
    names = [t.name for t in e.figures["rank"].data]
    assert names[:6] == ["preln", "postln", explore.REFERENCE] * 2
    assert names[6].startswith("floor 1/S")


def test_gradient_explorer_depth_and_rules():
    e = widgets.gradient_explorer(rules=("rezero",))

    def curves(depth):  # σ_max and σ_min per rule; ▽ markers where σ_min is below resolution
        data = e.figures["jacobian"].data
        lines = [len(t.y) for t in data if t.mode == "lines"]
        marks = [t for t in data if t.mode == "markers"]
        assert all(0 < len(t.x) <= depth + 1 and max(t.x) <= depth for t in marks)
        return lines

    assert curves(24) == [25] * 4
    e.controls["n_layer"].value = 12
    assert curves(12) == [13] * 4
    assert max(abs(v - 1) for v in e.figures["jacobian"].data[0].y) < 1e-6  # ReZero: identity
    e.controls["rules"].value = ("rezero", "preln")
    assert [t.name for t in e.figures["grad"].data] == ["rezero", "preln", explore.REFERENCE]


def test_spectrum_explorer_preset_and_depth():
    e = widgets.spectrum_explorer()
    e.controls["depth"].value = 20
    assert {len(t.y) for t in e.figures["spectrum"].data[:8]} == {20}
    e.controls["same"].value = True  # one mixer repeated: the product's |λ₂| is |λ₂|^L
    exact, overlay = e.figures["spectrum"].data[2:4]  # mHC's panel
    assert list(exact.y) == pytest.approx(list(overlay.y), abs=1e-9)
    e.controls["preset"].value = "identity-ish"
    assert "identity-ish" in e.figures["spectrum"].layout.title.text


def test_streams_explorer_depth():
    e = widgets.streams_explorer()
    e.controls["depth"].value = 20
    assert {len(t.y) for t in e.figures["gain"].data[:6]} == {20}
    assert e.view.numbers["final_gain"]["mHC"][0] == pytest.approx(1.0, abs=1e-5)


def n_points(values) -> int:
    """Length of a plotly JSON array, plain or typed ({dtype, bdata})."""
    if isinstance(values, dict):
        return len(np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"]))
    return len(values)


def test_explorer_static_fallback_follows_the_sliders():
    e = widgets.rank_explorer(rules=("preln",))
    static = e.static_outputs()
    assert e.tag in static[0]["text/html"] and "layer 24" in static[0]["text/html"]
    assert "`" not in static[0]["text/html"]  # no raw markdown backticks in the readout
    figs = [b["application/vnd.plotly.v1+json"] for b in static[1:]]
    # the input (layer 0), then 24 layers
    assert len(figs) == len(e.figures) and n_points(figs[0]["data"][0]["y"]) == 25
    e.controls["n_layer"].value = 12
    moved = e.static_outputs()[1]["application/vnd.plotly.v1+json"]
    assert n_points(moved["data"][0]["y"]) == 13
    # the synced widget state follows too, so a reloaded page draws 12 layers, not 24
    assert len(e.figures["rank"]._widget_data[0]["y"]) == 13
    # the rank sliders update on release, as the marimo notebook's are debounced
    assert not e.controls["beta0"].continuous_update and not e.controls["n_layer"].continuous_update


def test_tutorials_are_jupyter_native_and_show_figures_without_a_kernel(tmp_path):
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "make_ipynb.py"), str(tmp_path)],
        check=True,
        capture_output=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=900,
    )
    paths = sorted(tmp_path.glob("*.ipynb"))
    assert [p.stem for p in paths] == sorted(make_ipynb.EXPLORERS)
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        text = path.read_text()
        assert "cdn.plot.ly" not in text and "MarimoStopError" not in text, path.name
        assert "mo.ui" not in text and "||(" not in text, path.name
        markdown = [c for c in nb.cells if c.cell_type == "markdown"]
        assert len(markdown) >= 2 and markdown[1].source.startswith("#"), path.name
        if path.stem == "04_rank_collapse":  # its intro's hovers, geolab.terms' definitions
            assert any(term("singular values") in m.source for m in markdown)
        (code,) = [c for c in nb.cells if c.cell_type == "code"]
        assert "geolab.widgets" in code.source
        kinds = [set(o.get("data", {})) for o in code.outputs]
        assert all(o.output_type == "display_data" for o in code.outputs), path.name
        assert "application/vnd.jupyter.widget-view+json" in kinds[0]
        assert "text/html" in kinds[1]
        plots = [o for o in code.outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
        assert plots and all(o.data["application/vnd.plotly.v1+json"]["data"] for o in plots)
