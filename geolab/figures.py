"""Figure builders: pure functions from numbers to plotly figures.

Shared by the marimo notebooks (``notebooks/``), the Jupyter explorers (``geolab.widgets``) and the
latency benchmark. Every builder takes plain numbers (Python floats, lists, numpy arrays or torch
tensors) and returns a fresh ``plotly.graph_objects.Figure``; nothing here computes operators or
runs models.

Live-update contract (geolab's own): for a given set of *names* (curve names, eigenvalue sets,
rules) a builder always emits the same traces in the same order, so a live view can copy
``new.data[i]`` into ``old.data[i]`` in place. Quantities that grow with depth (200 layers) are one
trace each, never one trace per layer.

Speed: figures are assembled as plain dicts and wrapped without plotly's per-property validation
(``_validate=False``; validation costs ~30–80 ms per figure, the whole live budget of a slider).
The tests re-validate every builder's output with a validating ``go.Figure(fig.to_dict())``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

HEIGHT = 360
PALETTE = qualitative.Plotly
_CIRCLE = np.linspace(0.0, 2.0 * np.pi, 181)
_SYMBOLS = ["circle", "x", "diamond", "square", "triangle-up"]


def as_numpy(x) -> np.ndarray:
    """Plain numbers, lists, numpy arrays or torch tensors (any device, grad or not) -> ndarray."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def _floats(x) -> np.ndarray:
    return as_numpy(x).astype(float).ravel()


def _figure(data: list[dict], layout: dict) -> go.Figure:
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def _layout(title: str, x_title: str = "", y_title: str = "", **extra) -> dict:
    layout = {
        "height": HEIGHT,
        "title": {"text": title, "x": 0.02, "font": {"size": 14}},
        "margin": {"l": 55, "r": 20, "t": 55, "b": 45},
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1},
        "xaxis": {"title": {"text": x_title}},
        "yaxis": {"title": {"text": y_title}},
    }
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(layout.get(key), dict):
            layout[key] = {**layout[key], **value}
        else:
            layout[key] = value
    return layout


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
    with their multiplicity (e.g. the d−1 unit eigenvalues of the Delta operator, spec §2.1).
    """
    data = []
    if unit_circle:
        data.append(
            {
                "type": "scatter",
                "x": np.cos(_CIRCLE),
                "y": np.sin(_CIRCLE),
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
                "textposition": "top right",
                "marker": {"size": 12 - 3 * (i % 2), "symbol": _SYMBOLS[i % len(_SYMBOLS)]},
                "hovertemplate": "%{x:.4f} %{y:+.4f}i<extra>" + name + "</extra>",
            }
        )
    layout = _layout(
        title,
        "Re λ",
        "Im λ",
        xaxis={"zeroline": True},
        yaxis={"zeroline": True, "scaleanchor": "x", "scaleratio": 1},
    )
    return _figure(data, layout)


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
) -> go.Figure:
    """Quantities along a parameter: one line per named curve, then one marker trace at ``current``.

    ``band`` shades an interval of the parameter (e.g. β ∈ [0, 2]); ``marks`` labels special
    parameter values (e.g. identity / projection / reflection). Traces: the curves in mapping
    order, then "current" (only if ``current`` is given) with one point per curve, linearly
    interpolated at ``current``.
    """
    xs = _floats(x)
    data = [
        {"type": "scatter", "x": xs, "y": _floats(v), "mode": "lines", "name": name}
        for name, v in curves.items()
    ]
    if current is not None:
        ys = [float(np.interp(current, xs, _floats(v))) for v in curves.values()]
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
    yaxis = {"type": "log", "exponentformat": "power"} if log_y else {}
    layout = _layout(title, x_title, y_title, yaxis=yaxis, shapes=shapes, annotations=annotations)
    return _figure(data, layout)


def determinant_figure(params, dets, current: float, name: str = "β") -> go.Figure:
    """det A(β) = 1 − β along β, the band [0, 2] shaded and the three modes marked (spec §2.1)."""
    return sweep_figure(
        params,
        {"det": dets},
        current=current,
        band=(0.0, 2.0),
        title=f"Determinant along {name}",
        x_title=name,
        y_title="det",
        marks={"identity": 0.0, "projection": 1.0, "reflection": 2.0},
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
        k = _floats(direction)
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
    circle = np.stack([np.cos(_CIRCLE), np.sin(_CIRCLE)])
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
        data.append(
            {
                "type": "scatter",
                "x": [-k[0], k[0]],
                "y": [-k[1], k[1]],
                "mode": "lines",
                "name": "k",
                "line": {"dash": "dash"},
            }
        )
    layout = _layout(
        title,
        "x₁",
        "x₂",
        xaxis={"range": [-1.6, 1.6]},
        yaxis={"range": [-1.6, 1.6], "scaleanchor": "x", "scaleratio": 1},
    )
    return _figure(data, layout)


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
    layout = _layout(title, scene={"aspectmode": "cube"}, height=HEIGHT + 80)
    return _figure(data, layout)


def vectors_figure(
    vectors: Mapping[str, object], direction=None, title: str = "The update"
) -> go.Figure:
    """2-D arrows from the origin, one trace per named vector, then the direction line if given."""
    data, reach = [], 1.0
    for name, vec in vectors.items():
        p = _floats(vec)
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
        k = _floats(direction)
        k = 1.2 * reach * k / np.linalg.norm(k)
        data.append(
            {
                "type": "scatter",
                "x": [-k[0], k[0]],
                "y": [-k[1], k[1]],
                "mode": "lines",
                "name": "k",
                "line": {"dash": "dash", "color": "gray"},
            }
        )
    lim = 1.3 * reach
    layout = _layout(
        title,
        "x₁",
        "x₂",
        xaxis={"range": [-lim, lim]},
        yaxis={"range": [-lim, lim], "scaleanchor": "x", "scaleratio": 1},
    )
    return _figure(data, layout)


def beta_histogram_figure(
    beta, low: float, high: float, bins: int = 40, title: str = "β over tokens and channels"
) -> go.Figure:
    """Histogram of gate values β with the allowed range (low, high) and 0 as vertical lines.

    Traces: [histogram, range edges (one trace), zero line]; spec §2.6: β ∈ (−λ+ε, λ+ε).
    """
    data = [
        {
            "type": "histogram",
            "x": _floats(beta),
            "nbinsx": bins,
            "name": "β",
            "marker": {"color": "steelblue"},
        },
        {
            "type": "scatter",
            "x": [low, low, None, high, high],
            "y": [0, 1, None, 0, 1],
            "yaxis": "y2",
            "mode": "lines",
            "name": "range (−λ+ε, λ+ε)",
            "line": {"color": "firebrick", "dash": "dash"},
        },
        {
            "type": "scatter",
            "x": [0, 0],
            "y": [0, 1],
            "yaxis": "y2",
            "mode": "lines",
            "name": "0",
            "line": {"color": "black", "width": 1},
        },
    ]
    layout = _layout(
        title,
        "β",
        "count",
        yaxis2={"overlaying": "y", "range": [0, 1], "visible": False},
        bargap=0.02,
    )
    return _figure(data, layout)


def bars_figure(
    series: Mapping[str, object], title: str = "", x_title: str = "", y_title: str = ""
) -> go.Figure:
    """Grouped bars over an index (e.g. the channels of one token), one trace per named series."""
    data = []
    for name, values in series.items():
        y = _floats(values)
        data.append({"type": "bar", "x": np.arange(len(y)), "y": y, "name": name})
    return _figure(data, _layout(title, x_title, y_title, barmode="group", bargap=0.15))


def rank_figure(
    ranks: Mapping[str, object],
    residuals: Mapping[str, object] | None = None,
    title: str = "Effective rank per layer",
) -> go.Figure:
    """Rank-per-layer curves of several rules at once, layer index 1..L on x.

    Traces: one effective-rank line per rule (mapping order); if ``residuals`` is given, a
    second panel below with one Dong et al. residual line per rule, same order and colour.
    """
    data = []
    for i, (name, values) in enumerate(ranks.items()):
        y = _floats(values)
        data.append(
            {
                "type": "scatter",
                "x": np.arange(1, len(y) + 1),
                "y": y,
                "mode": "lines",
                "name": name,
                "legendgroup": name,
                "line": {"color": PALETTE[i % len(PALETTE)]},
            }
        )
    extra: dict = {"yaxis": {"range": [0, 1.02]}}
    if residuals is not None:
        for i, (name, values) in enumerate(residuals.items()):
            y = _floats(values)
            data.append(
                {
                    "type": "scatter",
                    "x": np.arange(1, len(y) + 1),
                    "y": y,
                    "mode": "lines",
                    "name": name,
                    "legendgroup": name,
                    "showlegend": False,
                    "xaxis": "x2",
                    "yaxis": "y2",
                    "line": {"color": PALETTE[i % len(PALETTE)], "dash": "dot"},
                }
            )
        extra = {
            "height": HEIGHT + 200,
            "xaxis": {
                "anchor": "y",
                "matches": "x2",
                "showticklabels": False,
                "title": {"text": ""},
            },
            "yaxis": {"domain": [0.5, 1.0], "range": [0, 1.02]},
            "xaxis2": {"anchor": "y2", "title": {"text": "layer"}},
            "yaxis2": {
                "domain": [0.0, 0.42],
                "type": "log",
                "exponentformat": "power",
                "title": {"text": "Dong residual ‖X − 1x̄ᵀ‖/‖X‖"},
            },
        }
    return _figure(data, _layout(title, "layer", "effective rank", **extra))


def heatmaps_figure(
    matrices: Sequence[object],
    titles: Sequence[str],
    title: str = "Sinkhorn iterations",
    zmax: float | None = None,
) -> go.Figure:
    """A row of annotated heatmaps (e.g. a mixing matrix after 0, 1, …, k Sinkhorn iterations).

    Traces: one heatmap per matrix, left to right, sharing one colour scale from 0 to ``zmax``
    (default: the largest entry of all matrices).
    """
    if len(matrices) != len(titles) or len(matrices) == 0:
        raise ValueError(
            f"titles: got {len(titles)} titles for {len(matrices)} matrices; "
            "need one title per matrix and at least one matrix"
        )
    mats = [as_numpy(m).astype(float) for m in matrices]
    top = zmax if zmax is not None else max(float(m.max()) for m in mats)
    n, gap = len(mats), 0.04
    width = (1.0 - gap * (n - 1)) / n
    data, extra, annotations = [], {}, []
    for j, m in enumerate(mats):
        suffix = "" if j == 0 else str(j + 1)
        data.append(
            {
                "type": "heatmap",
                "z": m,
                "zmin": 0.0,
                "zmax": top,
                "colorscale": "Blues",
                "showscale": j == n - 1,
                "text": np.round(m, 3),
                "texttemplate": "%{text}",
                "hovertemplate": "row %{y}, col %{x}: %{z:.4f}<extra></extra>",
                "xaxis": "x" + suffix,
                "yaxis": "y" + suffix,
            }
        )
        x0 = j * (width + gap)
        extra["xaxis" + suffix] = {"domain": [x0, x0 + width], "anchor": "y" + suffix}
        extra["yaxis" + suffix] = {
            "anchor": "x" + suffix,
            "autorange": "reversed",
            "showticklabels": j == 0,
        }
        annotations.append(
            {
                "text": titles[j],
                "x": x0 + width / 2,
                "y": 1.0,
                "xref": "paper",
                "yref": "paper",
                "xanchor": "center",
                "yanchor": "bottom",
                "showarrow": False,
            }
        )
    return _figure(data, _layout(title, annotations=annotations, **extra))


def composite_gain_figure(depths, gains: Mapping[str, object]) -> go.Figure:
    """Gain of the composite mixing product (mHC's Amax gain) over depth, log y, 1 marked.

    Traces: one line per mixer family, mapping order (e.g. HC, mHC, orthogonal).
    """
    fig = sweep_figure(
        depths,
        gains,
        title="Amax gain of the composite mixing product over depth",
        x_title="depth (mixing matrices multiplied)",
        y_title="Amax gain",
        log_y=True,
    )
    fig.layout.shapes = (
        {
            "type": "line",
            "xref": "paper",
            "x0": 0,
            "x1": 1,
            "y0": 1,
            "y1": 1,
            "line": {"color": "gray", "dash": "dot", "width": 1},
        },
    )
    return fig
