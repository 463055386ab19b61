"""Figures of gates: the distribution of β on its allowed range, and one token's gated write
(notebook 02)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from geolab.figures.style import base_layout, figure, floats


def beta_histogram_figure(
    beta, low: float, high: float, bins: int = 40, title: str = "β over tokens and channels"
) -> go.Figure:
    """Histogram of gate values β with the allowed range (low, high) and 0 as vertical lines.

    Traces: [histogram, range edges (one trace), zero line]; docs/design.md §2.6: β ∈ (−λ+ε, λ+ε).
    The ``bins`` bins tile the allowed range, so a β that is the same for every token (W_β = 0)
    is one narrow bar at its value, not a bar plotly widens to a unit interval around it.
    """
    size = (high - low) / bins
    data = [
        {
            "type": "histogram",
            "x": floats(beta),
            "xbins": {"start": low, "end": high, "size": size},
            "autobinx": False,
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


def gated_write_figure(write, gated, gate, title: str = "") -> go.Figure:
    """One token's write before and after the tangent gate, channel by channel, and the gate.

    Traces: [bars ``write``, bars ``gated`` (= write ⊙ gate), gate values as markers on a right
    axis from 0 to 1]. The write is drawn alone, without the decay term −αx: at init the decay is
    a thousand times larger than attention's write and would hide what the gate does.
    """
    g = floats(gate)
    channels = np.arange(len(g))
    data = [
        {"type": "bar", "x": channels, "y": floats(write), "name": "β⊙V: write, no gate"},
        {"type": "bar", "x": channels, "y": floats(gated), "name": "β⊙(V⊙g): gated write"},
        {
            "type": "scatter",
            "x": channels,
            "y": g,
            "yaxis": "y2",
            "mode": "markers",
            "name": "gate g (right axis)",
            "marker": {"color": "black", "symbol": "diamond", "size": 8},
        },
    ]
    layout = base_layout(
        title,
        "channel",
        "write",
        barmode="group",
        bargap=0.15,
        yaxis2={
            "overlaying": "y",
            "side": "right",
            "range": [0, 1],
            "title": {"text": "gate g"},
            "showgrid": False,
        },
        margin={"l": 55, "r": 55, "t": 60, "b": 45},
    )
    return figure(data, layout)
