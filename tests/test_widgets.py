"""Jupyter side: the ipywidgets explorers update their FigureWidgets in place, and the notebooks
exported to .ipynb (``marimo export ipynb``) execute under nbclient. No browser needed."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import plotly.graph_objects as go
import pytest
from nbclient import NotebookClient

from geolab import explore, widgets

REPO = Path(__file__).resolve().parents[1]


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
    before = list(e.figures["gate"].data[1].y)
    e.controls["alpha"].value = 1.0
    after = list(e.figures["gate"].data[1].y)
    assert after != before
    e.controls["beta0"].value = 0.9  # still inside (−λ, λ) for λ = 1
    after = list(e.figures["gate"].data[1].y)
    e.controls["lam"].value = 0.5
    assert "Not allowed" in e.readout.value and "beta0" in e.readout.value
    assert list(e.figures["gate"].data[1].y) == after


def test_rank_explorer_depth_and_rules():
    e = widgets.rank_explorer(rules=("preln",))
    assert [len(t.y) for t in e.figures["rank"].data] == [24] * 4
    e.controls["n_layer"].value = 12
    assert [len(t.y) for t in e.figures["rank"].data] == [12] * 4
    e.controls["rules"].value = ("preln", "postln")
    names = [t.name for t in e.figures["rank"].data]
    assert names == ["preln", "postln", explore.REFERENCE] * 2


def test_streams_explorer_depth():
    e = widgets.streams_explorer()
    e.controls["depth"].value = 20
    assert {len(t.y) for t in e.figures["gain"].data[:6]} == {20}
    assert e.view.numbers["final_gain"]["mHC"][0] == pytest.approx(1.0, abs=1e-5)


async def _execute_all(paths: list[Path]) -> dict[str, nbformat.NotebookNode]:
    gate = asyncio.Semaphore(2)

    async def one(path: Path):
        nb = nbformat.read(path, as_version=4)
        async with gate:
            # marimo's mo.stop raises MarimoStopError outside marimo: 04's run-button cell
            # waits for its button that way, so that error (only) is allowed.
            client = NotebookClient(
                nb,
                timeout=600,
                kernel_name="python3",
                allow_error_names=["MarimoStopError"],
                resources={"metadata": {"path": str(REPO)}},
            )
            await client.async_execute()
        return path.stem, nb

    return dict(await asyncio.gather(*(one(p) for p in paths)))


def test_exported_ipynb_notebooks_execute(tmp_path, monkeypatch):
    subprocess.run(
        ["bash", str(REPO / "scripts" / "export_ipynb.sh"), str(tmp_path)],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"},
        timeout=600,
    )
    paths = sorted(tmp_path.glob("*.ipynb"))
    assert [p.stem[:2] for p in paths] == ["00", "01", "02", "03", "04", "05"]
    # The kernels inherit os.environ: give them the repo, and hide pytest's marker, which
    # would make marimo believe it runs under a test instead of in Jupyter.
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    executed = asyncio.run(_execute_all(paths))
    for name, nb in executed.items():
        errors = [
            (cell.source, out.ename)
            for cell in nb.cells
            for out in cell.get("outputs", [])
            if out.output_type == "error"
        ]
        if name == "04_rank_collapse":
            assert len(errors) == 1 and "compare.value" in errors[0][0], errors
        else:
            assert errors == [], (name, errors)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and all(c.get("execution_count") for c in code), name
