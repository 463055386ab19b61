"""Figure builders for the experiment protocols: pure functions from result numbers to plotly.

They take the JSON-ready numbers a protocol writes (so notebook 07 redraws them from the committed
files) and reuse ``geolab.figures`` where a generic builder fits. Every line, bar or marker that
stands for a residual rule takes that rule's colour (``figures.rule_color``, one colour per rule in
every notebook); a plot of more than three lines names its rules on the plot, not only in the
legend.
"""

import numpy as np
import plotly.graph_objects as go

from geolab.figures import (
    DASHES,
    SYMBOLS,
    axis_room,
    end_labels,
    integer_ticks,
    rank_figure,
    rule_color,
    rule_colors,
    sweep_figure,
    tint,
)


def _legend_right(fig: go.Figure) -> go.Figure:
    """Move the legend beside the plot, hanging from its top edge: the result figures carry long
    titles, and a legend anchored by its bottom above the plot squashed a 200-layer plot."""
    fig.update_layout(
        legend={"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top"}
    )
    return fig


def rank_per_layer(ranks: dict, title: str) -> go.Figure:
    """Effective rank after each layer, one line per rule in its colour, named at its end
    (``geolab.figures.rank_figure``)."""
    return _legend_right(rank_figure(ranks, title=title, colors=rule_colors(ranks)))


def final_rank_vs_depth(depths, rules, summary: dict) -> go.Figure:
    """Final-layer effective rank against depth: one colour per rule, solid at init, dashed
    after training; the H2 threshold 0.5 dotted. With more than three lines each rule is named
    at the end of its init line.

    summary: ``{"RULE/LDEPTH": {"init"|"trained": {"mean": …}}}`` as rank_evolution writes it.
    """
    data, ends = [], {}
    for phase, dash in (("init", "solid"), ("trained", "dash")):
        for i, rule in enumerate(rules):
            points = [(d, summary[f"{rule}/L{d}"].get(phase)) for d in depths]
            points = [(d, r) for d, r in points if r is not None]
            if points and phase == "init":
                ends[rule] = points
            if points:
                data.append(
                    go.Scatter(
                        x=[d for d, _ in points],
                        y=[r["mean"] for _, r in points],
                        mode="lines+markers",
                        name=f"{rule} ({phase})",
                        line={"color": rule_color(rule, i), "dash": dash},
                    )
                )
    fig = go.Figure(data)
    fig.add_hline(y=0.5, line_dash="dot", line_color="gray")
    fig.update_layout(
        title="Final-layer effective rank vs depth (H1: post-LN → 0; H2: MGT > 0.5)",
        xaxis={"title": "layers L", "tickvals": list(depths), "tickformat": "d"},
        yaxis={"title": "effective rank", "range": [0, 1.02]},
        legend={"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1},
        height=420,
    )
    if len(data) > 3:
        fig.update_layout(
            annotations=end_labels(
                {rule: [r["mean"] for _, r in pts] for rule, pts in ends.items()},
                0,
                rule_colors(rules),
                xs={rule: [d for d, _ in pts] for rule, pts in ends.items()},
            )
        )
    return fig


def bars_with_errors(
    groups: dict, title: str, y_title: str, log_y: bool = False, rules: dict | None = None
) -> go.Figure:
    """Grouped bars with ±std error bars, each series in its rule's colour.

    groups: ``{series name: {category: {"mean", "std"}}}`` — series = models (rules),
    categories = tasks or flavors; every series lists the same categories in the same order.
    ``rules`` maps a series name to its rule where the name is a label ("GPT" -> "preln").
    """
    data = []
    for i, (name, cats) in enumerate(groups.items()):
        data.append(
            go.Bar(
                x=list(cats),
                y=[c["mean"] for c in cats.values()],
                error_y={"type": "data", "array": [c["std"] for c in cats.values()]},
                name=name,
                marker_color=rule_color((rules or {}).get(name, name), i),
            )
        )
    fig = go.Figure(data)
    fig.update_layout(title=title, yaxis_title=y_title, barmode="group", height=380)
    if log_y:
        fig.update_yaxes(type="log", exponentformat="power")
    return fig


def dots_with_errors(values: dict, title: str, y_title: str) -> go.Figure:
    """One marker per rule with ±std error bars, in the rule's colour: ``{rule: {"mean",
    "std"}}``.

    Markers rather than bars, so the y axis can zoom onto small differences honestly.
    """
    fig = go.Figure(
        go.Scatter(
            x=list(values),
            y=[v["mean"] for v in values.values()],
            error_y={"type": "data", "array": [v["std"] for v in values.values()]},
            mode="markers",
            marker={"size": 12, "color": list(rule_colors(values).values())},
            name=y_title,
        )
    )
    fig.update_layout(title=title, yaxis_title=y_title, height=380, showlegend=False)
    return fig


def loss_curves(
    curves: dict, title: str, y_title: str = "training loss", styles: dict | None = None
) -> go.Figure:
    """Training curves: ``{name: values}``, one value per step from step 1, one line each;
    ``styles`` maps a name to its plotly line (e.g. its rule's colour, its run's dash). More
    than three lines are each named at their end."""
    fig = go.Figure(
        [
            go.Scatter(
                x=list(range(1, len(v) + 1)),
                y=list(v),
                mode="lines",
                name=n,
                line=(styles or {}).get(n),
            )
            for n, v in curves.items()
        ]
    )
    fig.update_layout(title=title, xaxis_title="step", yaxis_title=y_title, height=380)
    if len(curves) > 3:
        colors = {n: style["color"] for n, style in (styles or {}).items() if "color" in style}
        low, high = axis_room(curves)
        margin = {"r": 120, "t": 100, "b": 80}  # plotly's own top and bottom, set: known px
        room = (low, high, 380 - margin["t"] - margin["b"])
        fig.update_layout(
            annotations=end_labels(curves, 1, colors, span=None, room=room),
            margin=margin,
            yaxis_range=[low, high],
        )
    return fig


# Past this many curves a learning-curve legend lists rules, not runs (runs named on hover).
LEGEND_PER_RUN = 12


def learning_curves(runs: dict, title: str, group=None) -> go.Figure:
    """Validation curves: ``{name: run}``, each run with a "val_curve" {"metric", "steps",
    "values"} and a "converged" flag (a dotted line when it did not converge). Runs from result
    files written before curves were recorded are left out (the title says so if none is left).

    ``group(name)`` is the run's rule (default: the name itself; e.g. "mgt" for "mgt L=48"):
    one colour per rule (the rule's own, ``figures.rule_color``, as in every notebook) and one
    marker symbol per run within it, so sixteen curves of four rules at four depths read as
    four colours, not ten palette colours repeating. With more than three curves each rule is
    also named on the plot, once, at the end of its curve that ends lowest. With more than
    ``LEGEND_PER_RUN`` curves the legend holds one solid entry per rule (a click shows or hides
    all its runs) and each run is named on hover, so the legend never scrolls."""
    runs = {name: run for name, run in runs.items() if "val_curve" in run}
    group = group or (lambda name: name)
    groups: dict = {}
    styles = {}
    for name in runs:
        members = groups.setdefault(group(name), [])
        styles[name] = {
            "line": {"color": rule_color(group(name), list(groups).index(group(name)))},
            "marker": {"symbol": SYMBOLS[len(members) % len(SYMBOLS)], "size": 7},
        }
        members.append(name)
    if not runs:
        title += " (this result file recorded no validation curves)"
    metric = next(iter(runs.values()))["val_curve"]["metric"] if runs else "loss"
    by_rule = len(runs) > LEGEND_PER_RUN

    def naming(name: str, run: dict) -> dict:
        label = name if run["converged"] else f"{name} (not converged)"
        if not by_rule:
            return {"name": label}
        return {
            "name": group(name),
            "legendgroup": group(name),
            "showlegend": False,
            "hovertemplate": f"{label}<br>step %{{x}}<br>%{{y}}<extra></extra>",
        }

    # by rule: one solid legend sample per rule, drawn by a trace with no points
    keys = [
        go.Scatter(
            x=[None],
            y=[None],
            mode="lines",
            name=rule,
            legendgroup=rule,
            line={"color": styles[members[0]]["line"]["color"]},
        )
        for rule, members in groups.items()
    ]

    fig = go.Figure(
        [
            go.Scatter(
                x=run["val_curve"]["steps"],
                y=run["val_curve"]["values"],
                mode="lines+markers",
                line={**styles[name]["line"], "dash": "solid" if run["converged"] else "dot"},
                marker=styles[name]["marker"],
                **naming(name, run),
            )
            for name, run in runs.items()
        ]
        + (keys if by_rule else [])
    )
    fig.update_layout(
        title=title, xaxis_title="step", yaxis_title=f"validation {metric}", height=420
    )
    if by_rule:
        fig.update_layout(legend_title_text="rule (dotted: not converged)")
    if metric == "mse":
        fig.update_yaxes(type="log", exponentformat="power")
    if len(runs) > 3:

        def last(name):  # the curve's last drawn value (a diverged run's NaN is not drawn)
            values = np.asarray(runs[name]["val_curve"]["values"], dtype=float)
            shown = values[np.isfinite(values)]
            return shown[-1] if len(shown) else np.inf

        lowest = {rule: min(members, key=last) for rule, members in groups.items()}
        fig.update_layout(
            annotations=end_labels(
                {rule: runs[n]["val_curve"]["values"] for rule, n in lowest.items()},
                0,
                {rule: styles[n]["line"]["color"] for rule, n in lowest.items()},
                log=metric == "mse",
                span=None,
                xs={rule: runs[n]["val_curve"]["steps"] for rule, n in lowest.items()},
            ),
            margin={"r": 40},
        )
    return _legend_right(fig)


def first_seed_curves(per_seed: dict, rules, where: str) -> dict:
    """The first seed's training-loss and validation curves of ``rules``, titled "… {where},
    seed N": the "curves" and "learning-curves" figures of the comparison protocols."""
    seed = next(iter(per_seed))
    first = per_seed[seed]
    return {
        "curves": loss_curves(
            {r: first[r]["curve"] for r in rules},
            f"Training loss {where}, seed {seed}",
            styles={r: {"color": color} for r, color in rule_colors(rules).items()},
        ),
        "learning-curves": learning_curves(
            {r: first[r] for r in rules}, f"Validation loss during training {where}, seed {seed}"
        ),
    }


def beta_by_layer(
    layers, snapshots: dict, key: str, title: str, y_title: str, rule: str = "mgt"
) -> go.Figure:
    """A per-layer β statistic of ``rule`` at several points of training: one line per
    snapshot in the rule's hue, light early to the rule's own colour last (``figures.tint``),
    the last solid and the earlier ones dashed, and with more than three lines each named at its
    end.

    snapshots: ``{label: {key: [value per layer]}}`` (e.g. label "50%", key "frac_negative").
    """
    curves = {label: stats[key] for label, stats in snapshots.items()}
    fig = sweep_figure(layers, curves, title=title, x_title="layer", y_title=y_title)
    n = len(curves)
    colors = {
        label: tint(rule_color(rule), 1 - 0.7 * (n - 1 - i) / max(n - 1, 1))
        for i, label in enumerate(curves)
    }
    for i, (trace, label) in enumerate(zip(fig.data, curves, strict=False)):
        dash = "solid" if i == n - 1 else DASHES[1 + i % (len(DASHES) - 1)]
        trace.line = {"color": colors[label], "dash": dash}
    fig.add_hline(y=0.0, line_color="black", line_width=1)
    fig.update_xaxes(**integer_ticks(len(layers)))
    if n > 3:
        fig.update_layout(annotations=end_labels(curves, layers[0], colors, span=None))
    return _legend_right(fig)


def beta_heatmap(hist: list, edges: list, title: str) -> go.Figure:
    """Depth × β histogram (rows = layers, columns = β bins), counts as colour."""
    centres = [(a + b) / 2 for a, b in zip(edges, edges[1:], strict=False)]
    fig = go.Figure(
        go.Heatmap(
            z=hist,
            x=centres,
            y=list(range(1, len(hist) + 1)),
            colorscale="Viridis",
            colorbar={"title": "count"},
        )
    )
    fig.add_vline(x=0.0, line_color="white", line_dash="dot")
    fig.update_layout(title=title, xaxis_title="β", yaxis_title="layer", height=420)
    return fig


def metric_vs_depth(depths, curves: dict, title: str, y_title: str, log_y=False) -> go.Figure:
    """Mean ± std of a metric against depth, one line per rule in its colour (named at its end
    when there are more than three): ``{rule: [{"mean","std"} per depth]}``."""
    colors = rule_colors(curves)
    fig = go.Figure(
        [
            go.Scatter(
                x=list(depths),
                y=[p["mean"] for p in pts],
                error_y={"type": "data", "array": [p["std"] for p in pts]},
                mode="lines+markers",
                name=name,
                line={"color": colors[name]},
            )
            for name, pts in curves.items()
        ]
    )
    fig.update_layout(
        title=title,
        xaxis={"title": "layers L", "tickvals": list(depths), "tickformat": "d"},
        yaxis_title=y_title,
        height=380,
    )
    if log_y:
        fig.update_yaxes(type="log", exponentformat="power")
    if len(curves) > 3:
        means = {name: [p["mean"] for p in pts] for name, pts in curves.items()}
        fig.update_layout(
            annotations=end_labels(
                means, 0, colors, log=log_y, span=None, xs=dict.fromkeys(curves, list(depths))
            )
        )
    return fig
