"""Figures over depth: rank per layer (notebook 04), stream mixers and their gains (notebook 05)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from geolab.figures.operators import sweep_figure
from geolab.figures.style import HEIGHT, PALETTE, as_numpy, base_layout, figure, floats


def _layer_line(name: str, values, i: int, dash: str = "solid", **extra) -> dict:
    """One rule's curve over layers 1..L, coloured by its index ``i`` (legend grouped by name)."""
    y = floats(values)
    return {
        "type": "scatter",
        "x": np.arange(1, len(y) + 1),
        "y": y,
        "mode": "lines",
        "name": name,
        "legendgroup": name,
        "line": {"color": PALETTE[i % len(PALETTE)], "dash": dash},
        **extra,
    }


def rank_figure(
    ranks: Mapping[str, object],
    residuals: Mapping[str, object] | None = None,
    title: str = "Effective rank per layer",
    floor: float | None = None,
) -> go.Figure:
    """Rank-per-layer curves of several rules at once, layer index 1..L on x.

    Traces: one effective-rank line per rule (mapping order); if ``residuals`` is given, a
    second panel below with one Dong et al. residual line per rule, same order and colour.
    ``floor`` draws the smallest possible effective rank (1/min(S, D): one direction left) as a
    labelled dotted line.
    """
    data = [_layer_line(name, values, i) for i, (name, values) in enumerate(ranks.items())]
    extra: dict = {"yaxis": {"range": [0, 1.02]}}
    if residuals is not None:
        data += [
            _layer_line(name, values, i, showlegend=False, xaxis="x2", yaxis="y2", dash="dot")
            for i, (name, values) in enumerate(residuals.items())
        ]
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
    if floor is not None:
        extra["shapes"] = [
            {
                "type": "line",
                "xref": "paper",
                "yref": "y",
                "x0": 0,
                "x1": 1,
                "y0": floor,
                "y1": floor,
                "line": {"color": "black", "dash": "dot", "width": 1},
            }
        ]
        extra["annotations"] = [
            {
                "xref": "paper",
                "yref": "y",
                "x": 1,
                "y": floor,
                "xanchor": "right",
                "yanchor": "bottom",
                "showarrow": False,
                "text": f"floor 1/S = {floor:.3f}: one direction left (collapse)",
            }
        ]
    return figure(data, base_layout(title, "layer", "effective rank", **extra))


def token_cloud_figure(clouds: Mapping[str, object], title: str = "The tokens") -> go.Figure:
    """Small multiples: one panel per name, the tokens as points in 2-D (an (S, 2) array each).

    Traces: one marker trace per panel, mapping order, all panels on the same fixed axes so a
    cloud that shrinks to a point is seen shrinking.
    """
    n, gap = max(len(clouds), 1), 0.03
    width = (1.0 - gap * (n - 1)) / n
    data, extra, annotations = [], {}, []
    reach = max([1.0] + [float(np.abs(floats(c)).max()) for c in clouds.values()])
    for j, (name, points) in enumerate(clouds.items()):
        suffix = "" if j == 0 else str(j + 1)
        p = as_numpy(points).astype(float)
        data.append(
            {
                "type": "scatter",
                "x": p[:, 0],
                "y": p[:, 1],
                "mode": "markers",
                "name": name,
                "marker": {"color": PALETTE[j % len(PALETTE)], "size": 7},
                "xaxis": "x" + suffix,
                "yaxis": "y" + suffix,
                "hovertemplate": "token %{pointNumber}<extra>" + name + "</extra>",
            }
        )
        x0 = j * (width + gap)
        lim = [-1.1 * reach, 1.1 * reach]
        extra["xaxis" + suffix] = {"domain": [x0, x0 + width], "anchor": "y" + suffix, "range": lim}
        extra["yaxis" + suffix] = {
            "anchor": "x" + suffix,
            "range": lim,
            "scaleanchor": "x" + suffix,
            "showticklabels": j == 0,
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
    depths, gains: Mapping[str, object], zoomed: Sequence[str] = (), bound: float | None = None
) -> go.Figure:
    """Gain of the composite mixing product (mHC's Amax gain) over depth, log y, 1 marked.

    Traces: one line per entry of ``gains``, mapping order (e.g. HC, mHC, orthogonal). With
    ``zoomed`` names, a second panel below repeats those lines (same colours, no legend) on a
    linear axis, so gains near 1 are not squashed by one that explodes; ``bound`` draws a dotted
    line there (e.g. √n, the largest Amax gain an orthogonal n×n matrix can have).
    """
    fig = sweep_figure(
        depths,
        gains,
        title="Gain of the composite mixing product over depth",
        x_title="depth (mixing matrices multiplied)",
        y_title="gain (log)",
        log_y=True,
    )
    one = {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1, "y1": 1}
    shapes = [{**one, "line": {"color": "gray", "dash": "dot", "width": 1}}]
    if zoomed:
        names = list(gains)
        for name in zoomed:
            i = names.index(name)
            fig.add_trace(
                {
                    "type": "scatter",
                    "x": floats(depths),
                    "y": floats(gains[name]),
                    "mode": "lines",
                    "name": name,
                    "showlegend": False,
                    "line": {"color": PALETTE[i % len(PALETTE)]},
                    "xaxis": "x2",
                    "yaxis": "y2",
                }
            )
        fig.update_layout(
            height=HEIGHT + 260,
            xaxis={"anchor": "y", "matches": "x2", "showticklabels": False, "title": {"text": ""}},
            yaxis={"domain": [0.52, 1.0]},
            xaxis2={"anchor": "y2", "title": {"text": "depth (mixing matrices multiplied)"}},
            yaxis2={"domain": [0.0, 0.44], "title": {"text": "gain, zoomed (linear)"}},
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
    return fig
