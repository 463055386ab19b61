"""Figures over depth: rank per layer (notebook 04), stream mixers and their gains (notebook 05)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from geolab.figures.operators import sweep_figure
from geolab.figures.style import (
    HEIGHT,
    PALETTE,
    as_numpy,
    base_layout,
    color_of,
    end_labels,
    figure,
    floats,
    integer_ticks,
)


def _layer_line(name: str, values, color: str, first: int, dash: str = "solid", **extra) -> dict:
    """One rule's curve over layers first..first+len−1 (legend grouped by name)."""
    y = floats(values)
    return {
        "type": "scatter",
        "x": np.arange(first, first + len(y)),
        "y": y,
        "mode": "lines",
        "name": name,
        "legendgroup": name,
        "line": {"color": color, "dash": dash},
        **extra,
    }


def rank_figure(
    ranks: Mapping[str, object],
    residuals: Mapping[str, object] | None = None,
    title: str = "Effective rank per layer",
    floor: float | None = None,
    colors: Mapping[str, str] | None = None,
    first_layer: int = 1,
    breaks: Mapping[str, tuple[int, str]] | None = None,
    residual_floors: Mapping[str, float] | None = None,
) -> go.Figure:
    """Rank-per-layer curves of several rules at once, layer index on x.

    Traces: one effective-rank line per rule (mapping order); if ``residuals`` is given, a
    second panel below with one Dong et al. residual line per rule, same order and colour;
    then, if ``floor`` is given, the smallest possible effective rank (1/min(S, D): one direction
    left) as a dotted line named in the legend (a label on the plot covered the curves that end
    on it). ``colors`` maps a name to its colour (default: palette by position); the curves
    start at layer ``first_layer`` (0 when the first value is the input, before any layer).
    ``breaks`` maps a name to (the layer where its curve stops, why): the rank panel labels the
    curve's last point with the reason, so a curve that ends early is not read as one that
    reached the floor. ``residual_floors`` maps a float's name to the residual of tokens equal
    up to its rounding (04: float32 for most curves, float64 for one recomputed there): each is
    a grey dotted line on the residual panel, named at its right end, so two curves below their
    own floors are read as "both zero to precision", not one collapsing more.
    """
    data = [
        _layer_line(name, values, color_of(name, i, colors), first_layer)
        for i, (name, values) in enumerate(ranks.items())
    ]
    extra: dict = {"yaxis": {"range": [0, 1.02]}}
    n = max((len(floats(v)) for v in ranks.values()), default=1)
    xaxis = integer_ticks(n)
    if residuals is not None:
        data += [
            _layer_line(
                name,
                values,
                color_of(name, i, colors),
                first_layer,
                showlegend=False,
                xaxis="x2",
                yaxis="y2",
                dash="dot",
            )
            for i, (name, values) in enumerate(residuals.items())
        ]
        extra = {
            "height": HEIGHT + 200,
            "xaxis": {
                **xaxis,
                "anchor": "y",
                "matches": "x2",
                "showticklabels": False,
                "title": {"text": ""},
            },
            "yaxis": {"domain": [0.5, 1.0], "range": [0, 1.02]},
            "xaxis2": {**xaxis, "anchor": "y2", "title": {"text": "layer"}},
            "yaxis2": {
                "domain": [0.0, 0.42],
                "type": "log",
                "exponentformat": "power",
                "title": {"text": "Dong residual ‖X − 1x̄ᵀ‖/‖X‖"},
            },
        }
    else:
        extra["xaxis"] = xaxis
    if floor is not None:
        data.append(
            {
                "type": "scatter",
                "x": [first_layer, first_layer + n - 1],
                "y": [floor, floor],
                "mode": "lines",
                "name": f"floor 1/S = {floor:.3f}: one direction left",
                "line": {"color": "black", "dash": "dot", "width": 1},
                "hoverinfo": "skip",
            }
        )
    annotations = []
    if residuals is not None:
        shapes, floor_labels = _precision_floors(residual_floors or {})
        extra["shapes"] = shapes
        annotations += floor_labels
    for name, (layer, why) in (breaks or {}).items():
        y = floats(ranks[name])
        last = layer - first_layer - 1  # the last value before the break
        annotations.append(
            {
                "x": layer - 1,
                "y": float(y[last]) if last >= 0 else 0.0,
                "xref": "x",
                "yref": "y",
                "text": f"{name}: {why}",
                "showarrow": True,
                "arrowhead": 2,
                "ax": -40,
                "ay": -30,
                "xanchor": "right",
                "font": {"color": color_of(name, list(ranks).index(name), colors)},
            }
        )
    if len(ranks) > 3:  # more than three lines: each named at its end, not only in the legend
        top, bottom = 60, 45  # base_layout's margins
        panel = (extra.get("height", HEIGHT) - top - bottom) * (0.5 if residuals is not None else 1)
        annotations += end_labels(
            {n: v for n, v in ranks.items() if n not in (breaks or {})},
            first_layer,
            colors,
            room=(0.0, 1.02, panel),
        )
        extra["margin"] = {"r": 110}
    if annotations:
        extra["annotations"] = annotations
    return figure(data, base_layout(title, "layer", "effective rank", **extra))


def _precision_floors(floors: Mapping[str, float]) -> tuple[list[dict], list[dict]]:
    """Grey dotted lines across the residual panel (axes x2/y2), one per float, and their
    names at the panel's right edge: ``rank_figure``'s ``residual_floors``."""
    shapes, labels = [], []
    for precision, y in floors.items():
        shapes.append(
            {
                "type": "line",
                "xref": "x2 domain",
                "yref": "y2",
                "x0": 0,
                "x1": 1,
                "y0": y,
                "y1": y,
                "line": {"color": "grey", "dash": "dot", "width": 1},
            }
        )
        labels.append(
            {
                "x": 1,
                "y": float(np.log10(y)),
                "xref": "x2 domain",
                "yref": "y2",
                "xanchor": "right",
                "yanchor": "bottom",
                "showarrow": False,
                "text": f"{precision} rounding: below, all tokens equal",
                "font": {"color": "grey", "size": 10},
            }
        )
    return shapes, labels


def token_cloud_figure(
    clouds: Mapping[str, object],
    title: str = "The tokens",
    colors: Mapping[str, str] | None = None,
) -> go.Figure:
    """Small multiples: one panel per name, the tokens as points in 2-D (an (S, 2) array each).

    Traces: one marker trace per panel, mapping order. Every panel has the same scale, so a
    cloud that shrinks to a point is seen shrinking, and each draws its points minus its own
    cloud's mean, so the mean sits at (0, 0) and a collapsed cloud is one point at (0, 0) in the
    middle of its panel, not a dot on the edge (``token_plane``'s coordinates put that point at
    (1, 0): the figure, not the data, subtracts the mean, as the axis titles say).
    ``colors`` maps a name to its colour (default: palette by position).
    """
    n, gap = max(len(clouds), 1), 0.03
    width = (1.0 - gap * (n - 1)) / n
    data, extra, annotations = [], {}, []
    points = {name: as_numpy(c).astype(float).reshape(-1, 2) for name, c in clouds.items()}
    centres = {name: p.mean(axis=0) if len(p) else np.zeros(2) for name, p in points.items()}
    spread = [np.abs(p - centres[name]).max() for name, p in points.items() if len(p)]
    half = 1.15 * max([1.0] + spread)
    for j, (name, p) in enumerate(points.items()):
        suffix = "" if j == 0 else str(j + 1)
        data.append(
            {
                "type": "scatter",
                "x": p[:, 0] - centres[name][0],
                "y": p[:, 1] - centres[name][1],
                "mode": "markers",
                "name": name,
                "marker": {"color": color_of(name, j, colors), "size": 7},
                "xaxis": "x" + suffix,
                "yaxis": "y" + suffix,
                "hovertemplate": "token %{pointNumber}<extra>" + name + "</extra>",
            }
        )
        x0 = j * (width + gap)
        extra["xaxis" + suffix] = {
            "domain": [x0, x0 + width],
            "anchor": "y" + suffix,
            "range": [-half, half],
            "title": {"text": "direction 1 − mean"},
        }
        extra["yaxis" + suffix] = {
            "anchor": "x" + suffix,
            "range": [-half, half],
            "scaleanchor": "x" + suffix,
            "title": {"text": "direction 2 − mean" if j == 0 else ""},
        }
        annotations.append(panel_title(name, x0 + width / 2))
    layout = base_layout(title, annotations=annotations, showlegend=False, **extra)
    return figure(data, layout)


def panel_title(text: str, x: float) -> dict:
    """A title centred above one panel of a row of panels, at paper position x."""
    return {
        "text": text,
        "x": x,
        "y": 1.0,
        "xref": "paper",
        "yref": "paper",
        "xanchor": "center",
        "yanchor": "bottom",
        "showarrow": False,
    }


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
        annotations.append(panel_title(titles[j], x0 + width / 2))
    return figure(data, base_layout(title, annotations=annotations, **extra))


def composite_gain_figure(
    depths,
    gains: Mapping[str, object],
    zoomed: Sequence[str] = (),
    bound: float | None = None,
    lines: Mapping[str, dict] | None = None,
    title: str = "Gain of the composite mixing product over depth",
    named: Mapping[str, tuple[object, str]] | None = None,
    dash_key: Mapping[str, str] | None = None,
) -> go.Figure:
    """Gain of the composite mixing product (mHC's Amax gain) over depth, log y, 1 marked.

    Traces: one line per entry of ``gains``, mapping order (e.g. HC, mHC, orthogonal); ``lines``
    maps a name to its plotly line style (e.g. one colour per mixer family, one dash per kind of
    gain; default: palette by position). With ``zoomed`` names, a second panel below repeats
    those lines (same styles, no legend) on a linear axis, so gains near 1 are not squashed by
    one that explodes; ``bound`` draws a dotted line there (e.g. √n, the largest Amax gain an
    orthogonal n×n matrix can have) and fixes the zoom to [0, 1.3·bound] whatever the lines do:
    a line that grows past it leaves the zoom instead of un-zooming it. ``named`` maps a label
    to (a curve, its colour): each is written on the log panel at the curve's end (e.g. one
    label per mixer family when nine lines share the plot). ``dash_key`` maps a kind of line to
    its dash (e.g. "Amax backward (cols)": "dash"): the legend then holds one grey sample line
    per kind, appended after the curves as legend-only traces (legendgroup "line styles"), and
    the curves, named on the plot by ``named``, leave the legend to it.
    """
    style = {
        name: (lines or {}).get(name, {"color": PALETTE[i % len(PALETTE)]})
        for i, name in enumerate(gains)
    }
    fig = sweep_figure(
        depths,
        gains,
        title=title,
        x_title="depth (mixing matrices multiplied)",
        y_title="gain (log)",
        log_y=True,
    )
    for trace, name in zip(fig.data, gains, strict=True):
        trace.line = style[name]
    one = {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1, "y1": 1}
    shapes = [{**one, "line": {"color": "gray", "dash": "dot", "width": 1}}]
    if zoomed:
        for name in zoomed:
            fig.add_trace(
                {
                    "type": "scatter",
                    "x": floats(depths),
                    "y": floats(gains[name]),
                    "mode": "lines",
                    "name": name,
                    "showlegend": False,
                    "line": style[name],
                    "xaxis": "x2",
                    "yaxis": "y2",
                }
            )
        zoom = {"domain": [0.0, 0.44], "title": {"text": "gain, zoomed (linear)"}}
        if bound is not None:
            zoom["range"] = [0.0, 1.3 * bound]
        fig.update_layout(
            height=HEIGHT + 260,
            xaxis={"anchor": "y", "matches": "x2", "showticklabels": False, "title": {"text": ""}},
            yaxis={"domain": [0.52, 1.0]},
            xaxis2={"anchor": "y2", "title": {"text": "depth (mixing matrices multiplied)"}},
            yaxis2=zoom,
        )
        if bound is not None:
            shapes.append(
                {
                    **one,
                    "xref": "x2 domain",
                    "yref": "y2",
                    "y0": bound,
                    "y1": bound,
                    "line": {"color": "black", "dash": "dot", "width": 1},
                }
            )
            fig.add_annotation(
                xref="x2 domain",
                yref="y2",
                x=1,
                y=bound,
                xanchor="right",
                yanchor="bottom",
                showarrow=False,
                text=f"√n = {bound:.2f}: the largest Amax gain of an orthogonal matrix",
            )
    fig.layout.shapes = tuple(shapes)
    if dash_key:
        for trace in fig.data:
            trace.showlegend = False
        for kind, dash in dash_key.items():
            fig.add_trace(
                {
                    "type": "scatter",
                    "x": [None],
                    "y": [None],
                    "mode": "lines",
                    "name": kind,
                    "legendgroup": "line styles",
                    "line": {"color": "gray", "dash": dash, "width": 2},
                    "hoverinfo": "skip",
                }
            )
        fig.update_layout(legend={"title": {"text": "line style:"}})
    if named:
        ends = end_labels(
            {label: curve for label, (curve, _) in named.items()},
            int(floats(depths)[0]),
            {label: color for label, (_, color) in named.items()},
            log=True,
            span=None,
        )
        for label in ends:
            fig.add_annotation(label)
        fig.update_layout(margin={"r": 90})
    return fig
