"""Figures of gradients over depth (notebook 08): per-layer gradient norms, Jacobian spectra."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from geolab.figures.style import (
    as_numpy,
    axis_room,
    base_layout,
    color_of,
    end_labels,
    figure,
    floats,
    line_trace,
)


def _panel_px(layout: dict) -> float:
    """The plot area's height in px: the figure's less its top and bottom margins."""
    return layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]


def _log_axis(title: str) -> dict:
    return {"type": "log", "exponentformat": "power", "title": {"text": title}}


def grad_norm_figure(
    norms: Mapping[str, object], title: str = "Gradient norm per layer", colors=None
) -> go.Figure:
    """One line per rule (mapping order): ``‖∂ℒ/∂θ_l‖`` over layers 1..L, log y. A norm of 0
    (nothing reaches the layer) is not drawn (log axis) but stays in the data as a gap.
    ``colors``: {rule: colour} to keep a rule's colour across figures (else palette order)."""
    data = []
    for i, (name, values) in enumerate(norms.items()):
        y = floats(values)
        color = color_of(name, i, colors)
        data.append(line_trace(name, np.arange(1, len(y) + 1), np.where(y > 0, y, np.nan), color))
    layout = base_layout(title, "layer l", "‖∂ℒ/∂θ_l‖", yaxis=_log_axis("‖∂ℒ/∂θ_l‖"))
    if len(norms) > 3:  # more than three lines: each named at its end
        low, high = layout["yaxis"]["range"] = axis_room(norms, log=True)
        room = (low, high, _panel_px(layout))
        layout["annotations"] = end_labels(norms, 1, colors, log=True, span=None, room=room)
        layout["margin"] = {**layout["margin"], "r": 110}
    return figure(data, layout)


def jacobian_figure(
    singular_values: Mapping[str, object],
    title: str = "Singular values of ∂y/∂X_l",
    colors=None,
    resolution: Mapping[str, object] | None = None,
) -> go.Figure:
    """Per rule (mapping order) two lines over l = 0..L, same colour: the largest singular value
    of J_l (solid) and the smallest (dotted), from an (L + 1, D) array sorted descending; a grey
    line at σ = 1 (isometry: the gradient keeps its size). Log y; zeros are gaps. ``colors`` as
    in ``grad_norm_figure``. ``resolution`` maps a rule to the smallest σ its SVD resolves per
    layer ((L + 1,), ``explore.gradients.resolution``): a σ_min below it is rounding, not
    drawn on the dotted line but as a hollow triangle ▽ at the resolution ("below this")."""
    data = []
    for i, (name, sv) in enumerate(singular_values.items()):
        s = as_numpy(sv).astype(float)
        layers = np.arange(s.shape[0])
        floor = floats((resolution or {}).get(name, np.zeros(len(layers))))
        for col, dash, label in ((0, "solid", "σ_max"), (-1, "dot", "σ_min")):
            y = s[:, col]
            if col == -1 and (y <= floor).any():
                data.append(_unresolved(name, layers, y, floor, color_of(name, i, colors)))
                y = np.where(y > floor, y, np.nan)
            data.append(
                line_trace(
                    name,
                    layers,
                    np.where(y > 0, y, np.nan),
                    color_of(name, i, colors),
                    dash,
                    showlegend=col == 0,
                    hovertemplate=f"{name} {label} at layer %{{x}}: %{{y:.3g}}<extra></extra>",
                )
            )
    layout = base_layout(
        title,
        "layer l (0 = embedding; solid σ_max, dotted σ_min)",
        "singular value",
        yaxis=_log_axis("singular value of ∂y/∂X_l"),
        shapes=[
            {
                "type": "line",
                "xref": "paper",
                "yref": "y",
                "x0": 0,
                "x1": 1,
                "y0": 1,
                "y1": 1,
                "line": {"color": "grey", "dash": "dash", "width": 1},
            }
        ],
    )
    if len(singular_values) > 3:  # named on σ_max at l = 0: at l = L every σ is 1 or √n
        tops = {name: as_numpy(sv).astype(float)[:, 0] for name, sv in singular_values.items()}
        drawn = {i: t["y"] for i, t in enumerate(data)} | {"σ = 1": [1.0]}
        low, high = layout["yaxis"]["range"] = axis_room(drawn, log=True)
        room = (low, high, _panel_px(layout))
        layout["annotations"] = end_labels(
            tops, 0, colors, log=True, start=True, span=None, room=room
        )
    return figure(data, layout)


def _unresolved(name: str, layers, sigma_min, floor, color: str) -> dict:
    """Hollow down-triangles at the SVD's resolution where σ_min falls below it."""
    below = sigma_min <= floor
    return {
        "type": "scatter",
        "x": layers[below],
        "y": floor[below],
        "mode": "markers",
        "name": name,
        "legendgroup": name,
        "showlegend": False,
        "marker": {"symbol": "triangle-down-open", "color": color, "size": 7},
        "hovertemplate": f"{name} σ_min at layer %{{x}}: below %{{y:.2g}}, the SVD's"
        " rounding<extra></extra>",
    }
