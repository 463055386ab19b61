"""Rank per layer before and after training, same rule same colour (the end of notebook 04)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from geolab.figures.depth import panel_title
from geolab.figures.style import base_layout, color_of, figure, floats, line_trace


def rank_bridge_figure(
    init: Mapping[str, object],
    trained: Mapping[str, object],
    title: str = "Effective rank per layer, at init and after training",
    floor: float | None = None,
    colors=None,
) -> go.Figure:
    """Small multiples, one panel per rule of ``init`` (mapping order, left to right, one
    shared y axis): its rank over layers 0..L at init (dotted) and after training (solid, from
    ``trained``), in the rule's colour, each line labelled at its end ("init", "trained") and
    the panel titled with the rule, so no legend is needed and no two rules' lines overlap;
    x = 0 is the embedding output. Traces: per rule, init then trained.
    ``floor``: the rank's lower bound 1/min(S, D), a dotted black line in every panel, labelled
    in the first. ``colors``: {rule: colour} to keep a rule's colour across figures (else
    palette order)."""
    n, gap = max(len(init), 1), 0.04
    width = (1.0 - gap * (n - 1)) / n
    data, extra, annotations, shapes = [], {}, [], []
    for i, (name, values) in enumerate(init.items()):
        suffix = "" if i == 0 else str(i + 1)
        axes = {"xaxis": "x" + suffix, "yaxis": "y" + suffix, "showlegend": False}
        y, t = floats(values), floats(trained[name])
        c = color_of(name, i, colors)
        data.append(line_trace(f"{name} (init)", np.arange(len(y)), y, c, "dot", **axes))
        data.append(line_trace(f"{name} (trained)", np.arange(len(t)), t, c, **axes))
        x0 = i * (width + gap)
        extra["xaxis" + suffix] = {
            "domain": [x0, x0 + width],
            "anchor": "y" + suffix,
            "title": {"text": "layer" if i else "layer (0 = embedding)"},
        }
        extra["yaxis" + suffix] = {
            "anchor": "x" + suffix,
            "range": [0, 1.08],
            "showticklabels": i == 0,
            **({"title": {"text": "effective rank"}} if i == 0 else {"matches": "y"}),
        }
        annotations.append(panel_title(name, x0 + width / 2))
        for label, curve in (("init", y), ("trained", t)):
            annotations.append(
                {
                    "x": len(curve) - 1,
                    "y": float(curve[-1]),
                    "xref": "x" + suffix,
                    "yref": "y" + suffix,
                    "text": label,
                    "showarrow": False,
                    "xanchor": "right",
                    "yanchor": "bottom" if label == "init" else "top",
                    "font": {"color": c, "size": 11},
                }
            )
        if floor is not None:
            shapes.append(
                {
                    "type": "line",
                    "xref": f"x{suffix} domain",
                    "yref": "y" + suffix,
                    "x0": 0,
                    "x1": 1,
                    "y0": floor,
                    "y1": floor,
                    "line": {"color": "black", "dash": "dot", "width": 1},
                }
            )
    if floor is not None:
        annotations.append(
            {
                "x": 0,
                "y": floor,
                "xref": "x domain",
                "yref": "y",
                "text": f"floor 1/S = {floor:.3f}",
                "showarrow": False,
                "xanchor": "left",
                "yanchor": "bottom",
                "font": {"size": 10},
            }
        )
    layout = base_layout(title, annotations=annotations, shapes=shapes, **extra)
    return figure(data, layout)
