"""The figures' shared style: height, palette, markers, and the dict-to-figure wrapper."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

HEIGHT = 360
PALETTE = qualitative.Plotly
SYMBOLS = ["circle", "x", "diamond", "square", "triangle-up", "star", "cross", "pentagon"]


def as_numpy(x) -> np.ndarray:
    """Plain numbers, lists, numpy arrays or torch tensors (any device, grad or not) -> ndarray."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def floats(x) -> np.ndarray:
    return as_numpy(x).astype(float).ravel()


def figure(data: list[dict], layout: dict) -> go.Figure:
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def base_layout(title: str, x_title: str = "", y_title: str = "", **extra) -> dict:
    layout = {
        "height": HEIGHT,
        # The title sits at the top of the figure and the legend between it and the plot (plotly
        # grows the top margin to fit a legend that wraps), so the two never overlap.
        "title": {
            "text": title,
            "x": 0.02,
            "y": 1.0,
            "yref": "container",
            "yanchor": "top",
            "pad": {"t": 8},
            "font": {"size": 14},
        },
        "margin": {"l": 55, "r": 20, "t": 60, "b": 45},
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "left", "x": 0},
        "xaxis": {"title": {"text": x_title}},
        "yaxis": {"title": {"text": y_title}},
    }
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(layout.get(key), dict):
            layout[key] = {**layout[key], **value}
        else:
            layout[key] = value
    return layout


def color_of(name: str, i: int, colors=None) -> str:
    """``colors[name]`` when given (a colour that stays with its rule across figures), else the
    palette colour of position ``i``."""
    return colors[name] if colors and name in colors else PALETTE[i % len(PALETTE)]


def line_trace(name: str, x, y, color: str, dash: str = "solid", **extra) -> dict:
    """A line trace of one colour, its legend grouped by ``name``."""
    return {
        "type": "scatter",
        "x": np.asarray(x),
        "y": floats(y),
        "mode": "lines",
        "name": name,
        "legendgroup": name,
        "line": {"color": color, "dash": dash},
        **extra,
    }


def integer_ticks(n: int) -> dict:
    """Axis settings for a whole-number axis of about ``n`` values (layers): ticks on multiples
    of 1, 2, 5, 10, 20, …, about ten of them (plotly's own choice puts ticks at 0.5 steps on a
    short stack)."""
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 200, 500) if s * 10 >= n or s == 500)
    return {"tick0": 0, "dtick": step, "tickformat": "d"}
