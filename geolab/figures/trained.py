"""Rank per layer before and after training, same rule same colour (the end of notebook 04)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from geolab.figures.style import base_layout, color_of, figure, floats, line_trace


def rank_bridge_figure(
    init: Mapping[str, object],
    trained: Mapping[str, object],
    title: str = "Effective rank per layer, at init and after training",
    floor: float | None = None,
    colors=None,
) -> go.Figure:
    """Per rule of ``init`` (mapping order) its rank over layers 0..L at init (dotted) and after
    training (solid, from ``trained``), same colour; x = 0 is the embedding output.
    ``floor``: the rank's lower bound 1/min(S, D), a dotted black line. ``colors``: {rule:
    colour} to keep a rule's colour across figures (else palette order)."""
    data = []
    for i, (name, values) in enumerate(init.items()):
        y = floats(values)
        c, t = color_of(name, i, colors), floats(trained[name])
        data.append(line_trace(f"{name} (init)", np.arange(len(y)), y, c, "dot", legendgroup=name))
        data.append(line_trace(f"{name} (trained)", np.arange(len(t)), t, c, legendgroup=name))
    extra: dict = {"yaxis": {"range": [0, 1.02]}}
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
    layout = base_layout(title, "layer (0 = embedding)", "effective rank", **extra)
    return figure(data, layout)
