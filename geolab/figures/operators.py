"""Figures of one operator: spectra, determinants, the image of the unit circle, vectors, sweeps
(notebooks 01 and 03)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from geolab.figures.style import HEIGHT, PALETTE, SYMBOLS, as_numpy, base_layout, figure, floats

CIRCLE = np.linspace(0.0, 2.0 * np.pi, 181)
# Where each set's multiplicity labels sit, so sets sharing an eigenvalue (Q, H and G all have
# eigenvalues at 1) do not print their "×m" over each other.
LABEL_SIDES = ("top right", "bottom right", "top left", "bottom left")


def _multiplicity_labels(z: np.ndarray, tol: float = 1e-6) -> list[str]:
    """'×m' beside the first of m (numerically) equal eigenvalues, so stacked points show."""
    labels = [""] * len(z)
    seen = np.zeros(len(z), dtype=bool)
    for i in range(len(z)):
        if seen[i]:
            continue
        same = np.abs(z - z[i]) <= tol
        seen |= same
        if same.sum() > 1:
            labels[i] = f"×{int(same.sum())}"
    return labels


def spectrum_figure(
    eigenvalues: Mapping[str, object], title: str = "Eigenvalues", unit_circle: bool = True
) -> go.Figure:
    """Eigenvalues in the complex plane, one marker trace per named set (in mapping order).

    Traces: [unit circle (if ``unit_circle``)] + one per set. Repeated eigenvalues are labelled
    with their multiplicity (e.g. the d−1 unit eigenvalues of the Delta operator,
    docs/design.md §2.1), in the set's colour and on its own side of the point
    (``LABEL_SIDES``), so two sets stacked on one eigenvalue stay readable.
    """
    data = []
    if unit_circle:
        data.append(
            {
                "type": "scatter",
                "x": np.cos(CIRCLE),
                "y": np.sin(CIRCLE),
                "mode": "lines",
                "name": "unit circle",
                "line": {"color": "lightgray", "width": 1},
                "hoverinfo": "skip",
            }
        )
    for i, (name, values) in enumerate(eigenvalues.items()):
        z = as_numpy(values).astype(complex).ravel()
        data.append(
            {
                "type": "scatter",
                "x": z.real,
                "y": z.imag,
                "mode": "markers+text",
                "name": name,
                "text": _multiplicity_labels(z),
                "textposition": LABEL_SIDES[i % len(LABEL_SIDES)],
                "textfont": {"color": PALETTE[i % len(PALETTE)]},
                "marker": {
                    "size": 12 - 3 * (i % 2),
                    "symbol": SYMBOLS[i % len(SYMBOLS)],
                    "color": PALETTE[i % len(PALETTE)],
                },
                "hovertemplate": "%{x:.4f} %{y:+.4f}i<extra>" + name + "</extra>",
            }
        )
    layout = base_layout(
        title,
        "Re λ",
        "Im λ",
        xaxis={"zeroline": True},
        yaxis={"zeroline": True, "scaleanchor": "x", "scaleratio": 1},
    )
    return figure(data, layout)


def sweep_figure(
    x,
    curves: Mapping[str, object],
    current: float | None = None,
    band: tuple[float, float] | None = None,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    log_y: bool = False,
    marks: Mapping[str, float] | None = None,
    notes: Mapping[str, tuple[float, float]] | None = None,
    current_on: tuple[str, ...] | None = None,
    log_x: bool = False,
) -> go.Figure:
    """Quantities along a parameter: one line per named curve, then one marker trace at ``current``.

    ``band`` shades an interval of the parameter (e.g. β ∈ [0, 2]); ``marks`` labels special
    parameter values (e.g. identity / projection / reflection); ``notes`` puts a label with an
    arrow at a point (x, y) of the plot ("θ → π but never π"). Traces: the curves in mapping
    order, then "current" (only if ``current`` is given) with one point per curve named in
    ``current_on`` (default: every curve), linearly interpolated at ``current`` — a reference
    line such as θ = π gets no marker, which would read as "the curve is there".
    """
    xs = floats(x)
    data = [
        {"type": "scatter", "x": xs, "y": floats(v), "mode": "lines", "name": name}
        for name, v in curves.items()
    ]
    if current is not None:
        marked = curves if current_on is None else {n: curves[n] for n in current_on}
        ys = [float(np.interp(current, xs, floats(v))) for v in marked.values()]
        data.append(
            {
                "type": "scatter",
                "x": [float(current)] * len(ys),
                "y": ys,
                "mode": "markers",
                "name": "current",
                "marker": {
                    "size": 11,
                    "color": "black",
                    "symbol": "circle-open",
                    "line": {"width": 2},
                },
            }
        )
    shapes, annotations = [], []
    if band is not None:
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": band[0],
                "x1": band[1],
                "y0": 0,
                "y1": 1,
                "fillcolor": "steelblue",
                "opacity": 0.1,
                "line": {"width": 0},
                "layer": "below",
            }
        )
    for label, at in (marks or {}).items():
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": at,
                "x1": at,
                "y0": 0,
                "y1": 1,
                "line": {"color": "gray", "dash": "dot", "width": 1},
            }
        )
        annotations.append(
            {"x": at, "y": 1, "xref": "x", "yref": "paper", "text": label, "showarrow": False}
        )
    annotations += [note(label, x, y) for label, (x, y) in (notes or {}).items()]
    yaxis = {"type": "log", "exponentformat": "power"} if log_y else {}
    xaxis = {"type": "log", "exponentformat": "power"} if log_x else {}
    layout = base_layout(
        title, x_title, y_title, xaxis=xaxis, yaxis=yaxis, shapes=shapes, annotations=annotations
    )
    return figure(data, layout)


def note(text: str, x: float, y: float, ax: int = -40, ay: int = 40, **ref) -> dict:
    """An on-plot label with an arrow pointing at data point (x, y) (``ref``: xref/yref)."""
    return {
        "x": x,
        "y": y,
        "text": text,
        "showarrow": True,
        "arrowhead": 2,
        "ax": ax,
        "ay": ay,
        "bgcolor": "rgba(255,255,255,0.85)",
        "font": {"size": 12},
        **ref,
    }


def eigen_distance_figure(
    eigenvalues: Mapping[str, object],
    title: str = "Distance of each eigenvalue from 1",
    fixed: Mapping[str, int] | None = None,
) -> go.Figure:
    """|λᵢ − 1| for every eigenvalue, sorted, on a log axis: one marker trace per named set.

    A rank-1 update of the identity (the Delta operator, docs/design.md §2.1) shows d−1 points at
    0 (drawn at the 1e-16 floor, labelled "= 1 exactly") and one at |β|; an update that rescales
    every direction shows d points well above the floor. Plotted on a complex plane the same
    eigenvalues all bunch at 1, which hides exactly this difference. ``fixed`` maps a name to
    its count of eigenvalues equal to 1 as the caller decided it (02: the nullity of J − I),
    so the label and the caller's readout give one number; without it, |λ − 1| ≤ 1e-12.
    """
    floor = 1e-16
    data, annotations = [], []
    for i, (name, values) in enumerate(eigenvalues.items()):
        z = as_numpy(values).astype(complex).ravel()
        dist = np.sort(np.abs(z - 1.0))
        data.append(
            {
                "type": "scatter",
                "x": np.arange(1, len(dist) + 1),
                "y": np.maximum(dist, floor),
                "mode": "markers",
                "name": name,
                "marker": {"size": 11 - 3 * (i % 2), "symbol": SYMBOLS[i % len(SYMBOLS)]},
                "hovertemplate": "|λ − 1| = %{y:.3e}<extra>" + name + "</extra>",
            }
        )
        exact = int((dist <= 1e-12).sum()) if fixed is None else int(fixed[name])
        if exact:
            text = f"{name}: {exact} eigenvalues = 1 exactly"
            annotations.append(note(text, (exact + 1) / 2, np.log10(floor), ax=30, ay=-50))
    layout = base_layout(
        title,
        "eigenvalue (sorted)",
        "|λ − 1|",
        yaxis={"type": "log", "exponentformat": "power"},
        annotations=annotations,
    )
    return figure(data, layout)


def determinant_figure(params, dets, current: float, name: str = "β") -> go.Figure:
    """det A(β) = 1 − β along β, the band [0, 2] shaded and the three modes marked.

    docs/design.md §2.1.
    """
    return sweep_figure(
        params,
        {"det": dets},
        current=current,
        band=(0.0, 2.0),
        title=f"Determinant along {name}",
        x_title=name,
        y_title="det",
        marks={"identity": 0.0, "erasure: det 0": 1.0, "mirror: det −1": 2.0},
    )


def unit_image_figure(matrix, direction=None, title: str = "Image of the unit circle") -> go.Figure:
    """Image of the unit circle (2×2 matrix) or unit sphere (3×3) under ``matrix``.

    2-D traces: [unit circle, image, point → image segments (16 points, one trace), direction].
    3-D traces: [unit sphere (translucent), image surface, direction].
    The direction line (e.g. the key k of a Delta operator) is drawn only if ``direction`` is given.
    """
    m = as_numpy(matrix).astype(float)
    if m.shape not in ((2, 2), (3, 3)):
        raise ValueError(f"matrix: shape {m.shape} is not allowed; expected (2, 2) or (3, 3)")
    if direction is not None:
        k = floats(direction)
        norm = np.linalg.norm(k)
        if k.shape != (m.shape[0],) or norm == 0:
            raise ValueError(
                f"direction: {k.tolist()} is not allowed; expected a nonzero vector of length "
                f"{m.shape[0]}"
            )
        direction = 1.3 * k / norm
    if m.shape == (2, 2):
        return _circle_image(m, direction, title)
    return _sphere_image(m, direction, title)


def _circle_image(m: np.ndarray, k, title: str) -> go.Figure:
    circle = np.stack([np.cos(CIRCLE), np.sin(CIRCLE)])
    image = m @ circle
    marked = circle[:, :-1:12]
    moved = m @ marked
    gap = np.full(marked.shape[1], np.nan)
    data = [
        {
            "type": "scatter",
            "x": circle[0],
            "y": circle[1],
            "mode": "lines",
            "name": "unit circle",
            "line": {"color": "lightgray"},
        },
        {
            "type": "scatter",
            "x": image[0],
            "y": image[1],
            "mode": "lines",
            "name": "image",
            "line": {"width": 3},
        },
        {
            "type": "scatter",
            "x": np.stack([marked[0], moved[0], gap], 1).ravel(),
            "y": np.stack([marked[1], moved[1], gap], 1).ravel(),
            "mode": "lines+markers",
            "name": "x → Ax",
            "line": {"color": "gray", "width": 1},
            "marker": {"size": 4},
        },
    ]
    if k is not None:
        data.append(_direction_line(k, {"dash": "dash"}))
    layout = base_layout(
        title,
        "x₁",
        "x₂",
        xaxis={"range": [-1.6, 1.6]},
        yaxis={"range": [-1.6, 1.6], "scaleanchor": "x", "scaleratio": 1},
    )
    return figure(data, layout)


def _direction_line(k, line: dict) -> dict:
    """The direction k drawn as a 2-D segment from −k to k through the origin, named "k"."""
    return {
        "type": "scatter",
        "x": [-k[0], k[0]],
        "y": [-k[1], k[1]],
        "mode": "lines",
        "name": "k",
        "line": line,
    }


def _sphere_image(m: np.ndarray, k, title: str) -> go.Figure:
    u, w = np.meshgrid(np.linspace(0, 2 * np.pi, 41), np.linspace(0, np.pi, 21))
    sphere = np.stack([np.cos(u) * np.sin(w), np.sin(u) * np.sin(w), np.cos(w)])
    image = np.einsum("ij,jab->iab", m, sphere)
    data = [
        {
            "type": "surface",
            "x": s[0],
            "y": s[1],
            "z": s[2],
            "opacity": op,
            "showscale": False,
            "name": name,
        }
        for s, op, name in ((sphere, 0.15, "unit sphere"), (image, 0.8, "image"))
    ]
    if k is not None:
        data.append(
            {
                "type": "scatter3d",
                "x": [-k[0], k[0]],
                "y": [-k[1], k[1]],
                "z": [-k[2], k[2]],
                "mode": "lines",
                "name": "k",
            }
        )
    layout = base_layout(title, scene={"aspectmode": "cube"}, height=HEIGHT + 80)
    return figure(data, layout)


def vectors_figure(
    vectors: Mapping[str, object], direction=None, title: str = "The update"
) -> go.Figure:
    """2-D arrows from the origin, one trace per named vector, then the direction line if given."""
    data, reach = [], 1.0
    for name, vec in vectors.items():
        p = floats(vec)
        reach = max(reach, float(np.abs(p).max()))
        data.append(
            {
                "type": "scatter",
                "x": [0.0, p[0]],
                "y": [0.0, p[1]],
                "mode": "lines+markers",
                "name": name,
                "line": {"width": 3},
                "marker": {"size": [0, 12], "symbol": "arrow", "angleref": "previous"},
            }
        )
    if direction is not None:
        k = floats(direction)
        k = 1.2 * reach * k / np.linalg.norm(k)
        data.append(_direction_line(k, {"dash": "dash", "color": "gray"}))
    lim = 1.3 * reach
    layout = base_layout(
        title,
        "x₁",
        "x₂",
        xaxis={"range": [-lim, lim]},
        yaxis={"range": [-lim, lim], "scaleanchor": "x", "scaleratio": 1},
    )
    return figure(data, layout)
