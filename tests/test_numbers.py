"""Issue 52 item 1: no number a view shows contradicts another or the maths.

Each view's slider grid (coarse) is swept for four faults: a count of unit eigenvalues that
contradicts rank(J − I); a positive quantity printed as 0; a float32 subnormal drawn as data;
scientific notation inside LaTeX maths ("4.29e-03" in $…$ reads 4.29·e − 3).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest

from geolab import explore
from geolab.explore.view import power_text, tex_num, tex_sci

REPO = Path(__file__).resolve().parents[1]
ZERO = re.compile(r"(?<![\d.e])[-−]?0(\.0+)?(?![\d.e])")  # a printed 0, 0.0000, −0.000
SCI_IN_MATH = re.compile(r"\$[^$]*\d[eE][+\-−]?\d[^$]*\$")


def math_spans(text: str) -> list[str]:
    """The $…$ and $$…$$ spans of a markdown/LaTeX string."""
    return re.findall(r"\$\$.*?\$\$|\$[^$]*\$", text, flags=re.S)


def assert_no_sci_in_math(view) -> None:
    for label, value in view.readout:
        for span in math_spans(label) + math_spans(value):
            assert not re.search(r"\d[eE][+\-−]?\d", span), (label, span)


def test_tex_forms_never_write_e_notation():
    assert tex_sci(4.29e-3) == r"4.29 \times 10^{-3}"
    assert tex_num(1e-16) == r"1.00 \times 10^{-16}" and tex_num(0.5) == "0.5000"
    assert power_text(0.05, 400) == "≈ 3.9e-521"  # was "0.0000": 0.05**400 underflows
    assert power_text(0.05, 400, tex=True) == r"\approx 3.9 \times 10^{-521}"
    assert power_text(0.95, 24) == f"{0.95**24:.4f}" and power_text(0.0, 3) == "0.0000"
    assert power_text(0.95, 400, tex=True) == r"\approx " + tex_sci(0.95**400)
    assert power_text(0.0, 400, tex=True) == "= 0"


@pytest.mark.parametrize("lam", [0.1, 1.0, 2.0])
@pytest.mark.parametrize("alpha", [0.0, 0.1, 1.0, 2.0])
@pytest.mark.parametrize("w_scale", [0.0, 1.0, 3.0])
def test_02_unit_eigenvalue_count_and_rank_never_contradict(lam, alpha, w_scale):
    """The issue's case (λ = 0.1, α = 0, β₀ = 0.05 read "0 of 16 eigenvalues equal 1,
    rank(J − I) = 15") and a coarse grid of 02's sliders, β₀ at both ends and 0: the count is
    d − rank, the plot's label says the same count, and the "why?" names the write at α = 0."""
    d = explore.MGT_WIDTH
    start, stop, _ = explore.beta0_slider(lam, 0.0, 0.0)
    for beta0 in sorted({start, 0.05 if lam == 0.1 else 0.0, stop}):
        view = explore.mgt_view(lam, 0.0, alpha, beta0, w_scale)
        n = view.numbers
        assert n["unit_eigs_mgt"] + n["rank_mgt"] == d, (beta0, n["rank_mgt"])
        assert n["unit_eigs_delta"] + n["rank_delta"] == d
        dist = np.sort(np.abs(np.asarray(n["eig_mgt"]) - 1))
        # the fixed directions' eigenvalues sit at 1 to float64 rounding, the others do not
        assert np.all(dist[: n["unit_eigs_mgt"]] < 1e-9) and np.all(dist[n["unit_eigs_mgt"] :] > 0)
        labels = [a.text for a in view.figures["jacobian"].layout.annotations]
        if n["unit_eigs_mgt"]:
            assert any(t.startswith(f"MGT Jacobian ∂x'/∂x: {n['unit_eigs_mgt']} ") for t in labels)
        if alpha == 0.0:
            assert n["rank_write"] == n["rank_mgt"]  # J − I at α = 0 is the write's Jacobian
        assert_no_sci_in_math(view)


def test_02_why_names_the_write_not_the_rescaling():
    n = explore.mgt_view(0.1, 0.0, 0.0, 0.05).numbers
    assert (n["unit_eigs_mgt"], n["rank_mgt"], n["rank_write"]) == (0, 16, 16)
    why = explore.jacobian_why(n)
    assert "write's Jacobian has rank 16 of 16" in why and r"1 - \alpha\beta" not in why


@pytest.mark.parametrize("n_layer", [12, 100, 200])
@pytest.mark.parametrize("beta0, alpha0", [(0.5, 0.1), (0.95, 1.0), (0.5, 0.0), (-0.5, 0.5)])
def test_04_no_positive_quantity_printed_as_zero(n_layer, beta0, alpha0):
    """04 printed MGT's (1 − α₀β₀)^{2L} as 0.0000 at α₀β₀ = 0.95, L = 200 (≈ 1e-520); every
    readout value of a positive quantity now has a nonzero digit, and a residual at its float's
    rounding says so instead of being compared across floats."""
    view = explore.rank_view(["mgt", "preln"], n_layer, beta0=beta0, alpha0=alpha0)
    n = view.numbers
    for label, value in view.readout:
        if "not drawn" in label:
            continue
        for part in value.split(" / "):
            assert not ZERO.fullmatch(part.strip()), (label, value)
    assert_no_sci_in_math(view)
    if "mgt_memory_log10" in n and 1 - alpha0 * beta0 != 0:
        expected = 2 * n_layer * np.log10(abs(1 - alpha0 * beta0))
        assert n["mgt_memory_log10"] == pytest.approx(expected)
    floors = {a.text for a in view.figures["rank"].layout.annotations if "rounding" in a.text}
    precisions = set(n["precision"].values())
    assert floors == {f"{p} rounding: below, all tokens equal" for p in precisions}


def test_04_mixed_precisions_each_mark_their_floor():
    """MGT at α₀β₀ = 0.95 runs in float64 (its state leaves float32's range) beside float32 pure
    attention: the residual panel draws both floors, and neither residual reads as a number a
    learner would compare ("MGT collapses more")."""
    view = explore.rank_view(["mgt"], 200, beta0=0.95, alpha0=1.0)
    assert view.numbers["precision"] == {"mgt": "float64", explore.REFERENCE: "float32"}
    shapes = [s.y0 for s in view.figures["rank"].layout.shapes]
    assert sorted(shapes) == sorted(explore.rank.RESIDUAL_FLOOR.values())
    values = dict(view.readout)
    assert values["mgt: rank / residual at layer 200"].endswith("(float64 rounding: tokens equal)")
    assert values[f"{explore.REFERENCE}: rank / residual at layer 200"].endswith(
        "(float32 rounding: tokens equal)"
    )
    assert values[r"MGT: what is left of the input, $(1-\alpha_0\beta_0)^{2L}$"] == "≈ 3.9e-521"


@pytest.mark.parametrize("n_layer", explore.GRADIENT_DEPTHS)
def test_08_no_subnormal_drawn_and_no_zero_printed(n_layer):
    view = explore.gradient_view(["preln", "mgt", "postln"], n_layer)
    for trace in view.figures["jacobian"].data + view.figures["grad"].data:
        y = np.asarray(trace.y, dtype=float)
        y = y[np.isfinite(y)]
        tiny = np.finfo(np.dtype(view.numbers["precision"][trace.name])).tiny
        assert np.all(y >= tiny), (trace.name, y.min(initial=np.inf))
    for label, value in view.readout:
        for part in value.split(" / "):
            assert not ZERO.fullmatch(part.strip()), (label, value)
    assert_no_sci_in_math(view)


@pytest.mark.parametrize("beta", [0.1, 1.0, 100.0, 1e6, 1e12])
def test_03_no_e_notation_inside_maths(beta):
    assert_no_sci_in_math(explore.cayley_limit_view(beta, 1.0))
    assert_no_sci_in_math(explore.cayley_view(min(beta, 4.0), 1.0, 0.5))


def formatted_text(node: ast.JoinedStr) -> str:
    """An f-string's text (adjacent pieces joined, as Python joins them) with each replacement
    field written as ``{SCI}`` when its format spec is scientific (``:.2e``), else ``{X}``."""
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value))
        else:
            spec = ast.unparse(value.format_spec) if value.format_spec else ""
            parts.append("{SCI}" if re.search(r"[eE]'?\)?$", spec.rstrip("\"'")) else "{X}")
    return "".join(parts)


def test_notebooks_never_format_e_notation_inside_maths():
    """A field like ``{x:.2e}`` inside $…$ in a notebook's f-string typesets as 4.29·e − 3
    (03's π − θ did); the notebooks use ``tex_sci``/``power_text(tex=True)`` there."""
    found = 0
    for path in sorted((REPO / "notebooks").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr):
                text = formatted_text(node)
                found += text.count("{SCI}")
                for span in math_spans(text):
                    assert "{SCI}" not in span, f"{path.name}:{node.lineno}: {span}"
    assert found > 0  # the scan sees e-notation fields (outside maths, where they are fine)


def test_09_every_option_can_be_marked_right():
    """Issue 52: "about the same as at init" could never be right (the notebook tested only the
    signs of the moves). ``rank_move`` reaches each of ``RANK_MOVES``, and the committed runs
    read "lower" at every trained depth."""
    same = {"a": (0.50, 0.51), "b": (0.70, 0.69)}
    cases = [{"a": (0.5, 0.6)}, same, {"a": (0.5, 0.3), "b": (0.7, 0.4)}, {"c": (0.5, 0.3), **same}]
    assert [explore.rank_move(final) for final in cases] == list(explore.RANK_MOVES)
    result = json.loads((REPO / "data" / "results" / "rank_evolution-small.json").read_text())
    for depth in explore.trained_depths(result):
        view = explore.rank_bridge_view(result, depth)
        assert view.numbers["move"] == "lower than at init for every rule"
