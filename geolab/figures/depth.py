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
) -> go.Figure:
    """Rank-per-layer curves of several rules at once, layer index 1..L on x.

    Traces: one effective-rank line per rule (mapping order); if ``residuals`` is given, a
    second panel below with one Dong et al. residual line per rule, same order and colour.
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
    return figure(data, base_layout(title, "layer", "effective rank", **extra))


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
    return figure(data, base_layout(title, annotations=annotations, **extra))


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
