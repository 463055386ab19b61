"""Figures of notebooks 05 and 05b: the second eigenvalue of stream-mixer products over depth,
and Sinkhorn–Knopp's iterations as a plotly animation.

Pure builders: they take numbers (log₁₀ curves, iterates, errors) and return plotly figures;
the numbers come from ``geolab.explore.streams`` (docs/design.md §2.5, §3.3).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from geolab.figures.depth import panel_title
from geolab.figures.style import HEIGHT, base_layout, figure, floats

OVERLAY_DASH = "dot"
# Where a logarithmic error axis draws an exact 0: below every float64 rounding error.
ZERO_FLOOR = 1e-17


def _legend_sample(name: str, dash: str) -> dict:
    """A grey legend-only line: says what a dash means in every panel."""
    return {
        "type": "scatter",
        "x": [None],
        "y": [None],
        "mode": "lines",
        "name": name,
        "line": {"color": "gray", "dash": dash, "width": 2},
        "hoverinfo": "skip",
    }


def _grid(count: int) -> tuple[int, int]:
    """(rows, columns) of the panels: one row up to two panels, then two columns."""
    return (1, count) if count <= 2 else ((count + 1) // 2, 2)


def second_eigenvalue_figure(
    depths,
    panels: Mapping[str, tuple[object, object, str]],
    title: str = "|λ₂| of the product of L mixers",
) -> go.Figure:
    """One panel per mixer family: log₁₀|λ₂(H_L ⋯ H_1)| over the depth L, and the prediction
    Σ_l log₁₀|λ₂(H_l)| (= L·log₁₀|λ₂(H)| for one mixer repeated, i.e. |λ₂|^L) dotted.

    ``panels`` maps a family to (exact curve, overlay curve, colour), each curve log₁₀ values
    over ``depths`` (log₁₀ rather than values: a doubly stochastic product's |λ₂| passes
    1e−308 within a few hundred layers and HC's passes 1e308, which no float holds). The y
    axis is the exponent: −20 is |λ₂| = 10⁻²⁰. A grey line marks |λ₂| = 1 (log₁₀ = 0), where
    the streams neither merge nor drift apart.

    Traces: per panel in mapping order, the exact curve (named by the family) then the overlay;
    then two legend-only grey samples, solid and dotted. Panels: one row up to two families,
    else two columns; each panel has its own y axis (the families' scales differ by hundreds
    of decades) and its title above it, so no line carries an end label.
    """
    if not panels:
        raise ValueError("panels: got none; pass at least one family")
    x = floats(depths)
    rows, cols = _grid(len(panels))
    gap_x, gap_y = 0.1, 0.16
    width = (1.0 - gap_x * (cols - 1)) / cols
    height = (1.0 - gap_y * (rows - 1)) / rows
    data, axes, annotations, shapes = [], {}, [], []
    for k, (family, (exact, overlay, color)) in enumerate(panels.items()):
        suffix = "" if k == 0 else str(k + 1)
        row, col = divmod(k, cols)
        x0 = col * (width + gap_x)
        y1 = 1.0 - row * (height + gap_y)
        on = {"xaxis": "x" + suffix, "yaxis": "y" + suffix, "showlegend": False}
        hover = family + ", L = %{x}: |λ₂| = 10^%{y:.3f}<extra>%{meta}</extra>"
        for curve, dash, meta in (
            (exact, "solid", "product"),
            (overlay, OVERLAY_DASH, "|λ₂|^L"),
        ):
            data.append(
                {
                    "type": "scatter",
                    "x": x,
                    "y": floats(curve),
                    "mode": "lines",
                    "name": family if dash == "solid" else f"{family} |λ₂|^L",
                    "line": {"color": color, "dash": dash, "width": 2},
                    "meta": meta,
                    "hovertemplate": hover,
                    **on,
                }
            )
        axes["xaxis" + suffix] = {
            "domain": [x0, x0 + width],
            "anchor": "y" + suffix,
            "title": {"text": "depth L" if row == rows - 1 else ""},
        }
        axes["yaxis" + suffix] = {
            "domain": [y1 - height, y1],
            "anchor": "x" + suffix,
            "title": {"text": "log₁₀ |λ₂|" if col == 0 else ""},
            "zeroline": False,
        }
        annotations.append({**panel_title(family, x0 + width / 2), "y": y1, "yref": "paper"})
        shapes.append(
            {
                "type": "line",
                "xref": f"x{suffix} domain",
                "yref": "y" + suffix,
                "x0": 0,
                "x1": 1,
                "y0": 0,
                "y1": 0,
                "line": {"color": "gray", "width": 1},
            }
        )
    data += [_legend_sample("|λ₂| of the product", "solid"), _legend_sample("|λ₂|^L", OVERLAY_DASH)]
    layout = base_layout(
        title,
        height=HEIGHT if rows == 1 else HEIGHT + 200,
        margin={"t": 80},  # the legend row, then each top panel's title, apart
        annotations=annotations,
        shapes=shapes,
        **axes,
    )
    return figure(data, layout)


def _errors_for_log(errors) -> np.ndarray:
    """Errors with exact zeros raised to ``ZERO_FLOOR`` (a log axis cannot draw 0)."""
    return np.maximum(floats(errors), ZERO_FLOOR)


def sinkhorn_animation_figure(
    iterates,
    row_errors,
    col_errors,
    floors: Mapping[str, float] | None = None,
    title: str = "Sinkhorn–Knopp, one round per frame",
    frame_ms: int = 400,
) -> go.Figure:
    """Sinkhorn–Knopp's iterates M⁽⁰⁾ … M⁽ᴷ⁾ as an animation: the matrix on the left, the
    row and column errors max_i |Σ_j M_ij − 1| and max_j |Σ_i M_ij − 1| per round on the right.

    Source: Sinkhorn & Knopp 1967 (alternating row and column normalisation of a positive matrix
    converges to a doubly stochastic one); docs/design.md §2.5. ``iterates``: (K + 1, n, n),
    round k at index k (M⁽⁰⁾ = exp(logits − max)); ``row_errors``, ``col_errors``: (K + 1,).
    ``floors`` maps a label to a rounding level drawn as a dotted line (e.g. float32's, where
    mHC computes); an exact zero is drawn at ``ZERO_FLOOR``.

    Traces: 0 heatmap of the shown round (annotated), 1 row error, 2 column error, 3 the shown
    round's two errors as markers. Frames: one per round, named "0" … "K", each replacing
    traces 0 and 3 and the title. Controls (plotly's own, no server, so they work offline and
    in a static export): a Play/Pause menu and a slider over the rounds.
    """
    mats = np.asarray([floats(m).reshape(np.shape(m)) for m in iterates], dtype=float)
    rows, cols = _errors_for_log(row_errors), _errors_for_log(col_errors)
    if not (len(mats) == len(rows) == len(cols)) or len(mats) == 0:
        raise ValueError(
            f"iterates: got {len(mats)} iterates, {len(rows)} row errors and {len(cols)} column "
            "errors; need one of each per round and at least one round"
        )
    rounds = np.arange(len(mats))
    top = float(mats.max())

    def heatmap(k: int) -> dict:
        return {
            "type": "heatmap",
            "z": mats[k],
            "zmin": 0.0,
            "zmax": top,
            "colorscale": "Blues",
            "reversescale": True,  # plotly's Blues runs dark to light: larger entries darker
            "showscale": False,
            "text": np.round(mats[k], 3),
            "texttemplate": "%{text}",
            "hovertemplate": "row %{y}, col %{x}: %{z:.6f}<extra></extra>",
            "xaxis": "x",
            "yaxis": "y",
        }

    def markers(k: int) -> dict:
        return {
            "type": "scatter",
            "x": [k, k],
            "y": [rows[k], cols[k]],
            "mode": "markers",
            "name": "this round",
            "marker": {"color": ["#1f77b4", "#d62728"], "size": 10},
            "xaxis": "x2",
            "yaxis": "y2",
            "showlegend": False,
            "hovertemplate": "round %{x}: %{y:.2e}<extra></extra>",
        }

    def heading(k: int) -> str:
        return (
            f"{title}: round {k}, max |row sum − 1| = {floats(row_errors)[k]:.1e}, "
            f"max |column sum − 1| = {floats(col_errors)[k]:.1e}"
        )

    def errors(name: str, values, color: str) -> dict:
        return {
            "type": "scatter",
            "x": rounds,
            "y": values,
            "mode": "lines+markers",
            "name": name,
            "line": {"color": color},
            "marker": {"size": 4},
            "xaxis": "x2",
            "yaxis": "y2",
            "hovertemplate": "round %{x}: %{y:.2e}<extra>" + name + "</extra>",
        }

    data = [
        heatmap(0),
        errors("max |row sum − 1|", rows, "#1f77b4"),
        errors("max |column sum − 1|", cols, "#d62728"),
        markers(0),
    ]
    shapes, annotations = [], []
    for label, level in (floors or {}).items():
        shapes.append(
            {
                "type": "line",
                "xref": "x2 domain",
                "yref": "y2",
                "x0": 0,
                "x1": 1,
                "y0": level,
                "y1": level,
                "line": {"color": "gray", "dash": "dot", "width": 1},
            }
        )
        annotations.append(
            {
                "xref": "x2 domain",
                "yref": "y2",
                "x": 1,
                "y": float(np.log10(level)),
                "xanchor": "right",
                "yanchor": "bottom",
                "showarrow": False,
                "text": label,
                "font": {"size": 10, "color": "gray"},
            }
        )
    frames = [
        {
            "name": str(k),
            "data": [heatmap(k), markers(k)],
            "traces": [0, 3],
            "layout": {"title": {"text": heading(k)}},
        }
        for k in rounds
    ]
    animate = {"frame": {"duration": frame_ms, "redraw": True}, "transition": {"duration": 0}}
    layout = base_layout(
        heading(0),
        height=HEIGHT + 120,
        margin={"l": 55, "r": 20, "t": 90, "b": 110},
        xaxis={"domain": [0.0, 0.4], "anchor": "y", "title": {"text": "column"}},
        yaxis={"anchor": "x", "autorange": "reversed", "title": {"text": "row"}},
        xaxis2={"domain": [0.52, 1.0], "anchor": "y2", "title": {"text": "round k"}},
        yaxis2={
            "anchor": "x2",
            "type": "log",
            "exponentformat": "power",  # 10⁻⁶, not plotly's SI "1µ"
            "title": {"text": "error (log)"},
        },
        shapes=shapes,
        annotations=annotations,
        updatemenus=[
            {
                "type": "buttons",
                "direction": "left",
                "x": 0.0,
                "y": -0.32,
                "xanchor": "left",
                "yanchor": "top",
                "showactive": False,
                "buttons": [
                    {
                        "label": "▶ Play",
                        "method": "animate",
                        # None: every frame in order, from the one shown
                        "args": [None, {**animate, "fromcurrent": True, "mode": "immediate"}],
                    },
                    {
                        "label": "❚❚ Pause",
                        "method": "animate",
                        "args": [[None], {**animate, "mode": "immediate"}],
                    },
                ],
            }
        ],
        sliders=[
            {
                "active": 0,
                "x": 0.2,
                "len": 0.8,
                "y": -0.22,
                "yanchor": "top",
                "currentvalue": {"prefix": "round k = "},
                "steps": [
                    {
                        "label": str(k),
                        "method": "animate",
                        "args": [[str(k)], {**animate, "mode": "immediate"}],
                    }
                    for k in rounds
                ],
            }
        ],
    )
    return go.Figure({"data": data, "layout": layout, "frames": frames}, _validate=False)
