"""Figures of gates: the distribution of β on its allowed range, and channel bars (notebook 02)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from geolab.figures.style import base_layout, figure, floats


def beta_histogram_figure(
    beta, low: float, high: float, bins: int = 40, title: str = "β over tokens and channels"
) -> go.Figure:
    """Histogram of gate values β with the allowed range (low, high) and 0 as vertical lines.

    Traces: [histogram, range edges (one trace), zero line]; docs/design.md §2.6: β ∈ (−λ+ε, λ+ε).
    """
    data = [
        {
            "type": "histogram",
            "x": floats(beta),
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
    layout = base_layout(
        title,
        "β",
        "count",
        yaxis2={"overlaying": "y", "range": [0, 1], "visible": False},
        bargap=0.02,
    )
    return figure(data, layout)


def bars_figure(
    series: Mapping[str, object], title: str = "", x_title: str = "", y_title: str = ""
) -> go.Figure:
    """Grouped bars over an index (e.g. the channels of one token), one trace per named series."""
    data = []
    for name, values in series.items():
        y = floats(values)
        data.append({"type": "bar", "x": np.arange(len(y)), "y": y, "name": name})
    return figure(data, base_layout(title, x_title, y_title, barmode="group", bargap=0.15))
