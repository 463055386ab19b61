"""The figures' shared style: height, palette, markers, one colour per residual rule, line-end
labels, and the dict-to-figure wrapper."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

HEIGHT = 360
PALETTE = qualitative.Plotly
SYMBOLS = ["circle", "x", "diamond", "square", "triangle-up", "star", "cross", "pentagon"]
DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]

# One colour per residual rule in every notebook (04's ranks, 05's mixer families, 06's runs,
# 07's results, 08's gradients), chosen so the rules plotted together by default differ at a
# glance (postln/preln/mgt; preln/mgt/ddl; hc/mhc/cayley/jpmhc) and an ablation or variant
# shares its family's hue (the mgt reds, the ddl greens, mhc's purples, the E∆ blues). Pure
# attention, the reference, is black.
RULE_COLORS = {
    "postln": "#1f77b4",  # blue
    "preln": "#ff7f0e",  # orange
    "rezero": "#8c564b",  # brown
    "layerscale": "#bcbd22",  # olive
    "deepnorm": "#17becf",  # cyan
    "noskip": "#000000",  # black: pure attention
    "mgt": "#d62728",  # red
    "mgt_mhc": "#ff9896",  # light red
    "mgt_ddl": "#8b0000",  # dark red
    "ddl": "#2ca02c",  # green
    "ddl_write": "#98df8a",  # light green: ddl without its erase term
    "ddl_state": "#005a1e",  # dark green: ddl with its expanded d×4 state
    "hc": "#7f7f7f",  # grey
    "mhc": "#9467bd",  # purple
    "mhc_lite": "#c5b0d5",  # light purple: mhc's family
    "jpmhc": "#e6ab02",  # gold
    "cayley": "#393b79",  # navy
    "householder": "#6baed6",  # light blue
    "edelta": "#e377c2",  # pink
}


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


def rule_color(rule: str, i: int = 0) -> str:
    """``RULE_COLORS[rule]``; a rule you registered yourself gets the palette colour of its
    position ``i``."""
    return RULE_COLORS.get(rule, PALETTE[i % len(PALETTE)])


def rule_colors(rules) -> dict[str, str]:
    """``{rule: rule_color(rule, i)}`` for ``rules`` in order: the colours of a figure's rules."""
    return {rule: rule_color(rule, i) for i, rule in enumerate(rules)}


def tint(color: str, weight: float) -> str:
    """``color`` ("#rrggbb") mixed with white: ``weight`` of the colour, 1 − ``weight`` white
    (1: the colour itself), per channel, rounded. Several moments of one rule (β at 0 %, 25 %,
    …, 100 % of training) keep the rule's hue and read light to full."""
    rgb = [int(color[k : k + 2], 16) for k in (1, 3, 5)]
    return "#" + "".join(f"{round(weight * c + (1 - weight) * 255):02x}" for c in rgb)


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


LABEL_FONT = 11  # px: the size of every line-end label
LABEL_LINE = 1.4 * LABEL_FONT  # px: the height a label takes on screen, with a little air


def spread(ys, gap: float, high: float = np.inf) -> np.ndarray:
    """Label heights (ascending) moved apart, each at least ``gap`` above the one below and as
    near its own height as that allows: up from the bottom, then, where the top one passed
    ``high`` (the axis's top), down from the top. Deterministic: the same heights give the same
    result. Labels that do not fit between the axis's ends keep apart below its bottom."""
    y = np.array(ys, dtype=float)
    for i in range(1, len(y)):
        y[i] = max(y[i], y[i - 1] + gap)
    if len(y) and y[-1] > high:
        y[-1] = high
        for i in range(len(y) - 2, -1, -1):
            y[i] = min(y[i], y[i + 1] - gap)
    return y


def axis_room(curves: Mapping[object, object], log: bool = False, pad: float = 0.06) -> list:
    """An explicit y range [low, high] (log10 units on a log axis) holding every finite
    (positive, on a log axis) value of ``curves`` with ``pad`` of the span on each side: set on
    the axis, it fixes where ``end_labels`` sit in pixels (plotly's autorange is computed in
    the browser)."""
    values = [floats(v) for v in curves.values()]
    if log:
        values = [np.log10(v[v > 0]) for v in values]
    finite = np.concatenate([v[np.isfinite(v)] for v in values] + [np.zeros(0)])
    if not len(finite):
        return [0.0, 1.0]
    low, high = float(finite.min()), float(finite.max())
    margin = pad * ((high - low) or 1.0)
    return [low - margin, high + margin]


def end_labels(
    curves: Mapping[str, object],
    first: int,
    colors=None,
    gap: float = 0.045,
    log: bool = False,
    start: bool = False,
    span: float | None = 1.0,
    xs: Mapping[str, object] | None = None,
    room: tuple[float, float, float] | None = None,
) -> list[dict]:
    """One annotation per curve: its name just right of its last point (of its first with
    ``start``, where curves that meet at the end still differ), in its colour, moved apart
    vertically (at least ``gap`` × ``span`` in y, bottom up; ``span=None``: the curves' own
    span) where curves end close together, e.g. several rules on one floor. Curves start at
    x = ``first``; ``log``: the y axis is logarithmic (plotly places annotations there in log10
    units; zeros are left out). ``xs`` maps a name to its curve's x values where they are not
    ``first``, ``first`` + 1, … (training steps, a few depths).
    For plots with more than three lines: the name sits on the line, not only in the legend.
    ``room`` = (axis low, axis high, the panel's height in px), the axis range set explicitly:
    labels are then moved apart by one label's height on screen (``LABEL_LINE``), kept inside
    the range (``spread``), so they never overlap at the figure's own size."""
    values = [floats(v) for v in curves.values()]
    if log:
        values = [np.log10(np.where(v > 0, v, np.nan)) for v in values]
    finite = np.concatenate([v[np.isfinite(v)] for v in values] + [np.zeros(1)])
    if span is None:
        span = float(finite.max() - finite.min()) or 1.0
    ends = []
    for i, (name, v) in enumerate(zip(curves, values, strict=True)):
        shown = np.flatnonzero(np.isfinite(v))
        if len(shown):  # a curve with nothing drawn gets no label
            at = shown[0] if start else shown[-1]
            ends.append((float(v[at]), name, i, int(at)))
    ends.sort()
    if room is None:
        heights = spread([e[0] for e in ends], gap * span)
    else:
        low, high, px = room
        # the label's centre at most half a label below the top: it stays inside the panel
        gap_y = LABEL_LINE / px * (high - low)
        heights = spread([e[0] for e in ends], gap_y, high - gap_y / 2)
    labels = []
    for y_label, (_, name, i, at) in zip(heights, ends, strict=True):
        labels.append(
            {
                "x": float(floats(xs[name])[at]) if xs is not None else first + at,
                "y": float(y_label),
                "xref": "x",
                "yref": "y",
                "text": name,
                "showarrow": False,
                "xanchor": "left",
                "xshift": 4,
                "font": {"color": color_of(name, i, colors), "size": LABEL_FONT},
            }
        )
    return labels
