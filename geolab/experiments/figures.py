"""Figure builders for the experiment protocols: pure functions from result numbers to plotly.

They take the JSON-ready numbers a protocol writes (so notebook 07 redraws them from the committed
files) and reuse ``geolab.figures`` where a generic builder fits.
"""

import plotly.graph_objects as go

from geolab.figures import (
    PALETTE,
    SYMBOLS,
    end_labels,
    integer_ticks,
    rank_figure,
    rule_color,
    sweep_figure,
)


def _legend_right(fig: go.Figure) -> go.Figure:
    """Move the legend beside the plot, hanging from its top edge: the result figures carry long
    titles, and a legend anchored by its bottom above the plot squashed a 200-layer plot."""
    fig.update_layout(
        legend={"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top"}
    )
    return fig


def rank_per_layer(ranks: dict, title: str) -> go.Figure:
    """Effective rank after each layer, one line per rule (``geolab.figures.rank_figure``)."""
    return _legend_right(rank_figure(ranks, title=title))


def final_rank_vs_depth(depths, rules, summary: dict) -> go.Figure:
    """Final-layer effective rank against depth: one colour per rule, solid at init, dashed
    after training; the H2 threshold 0.5 dotted.

    summary: ``{"RULE/LDEPTH": {"init"|"trained": {"mean": …}}}`` as rank_evolution writes it.
    """
    data = []
    for phase, dash in (("init", "solid"), ("trained", "dash")):
        for i, rule in enumerate(rules):
            points = [(d, summary[f"{rule}/L{d}"].get(phase)) for d in depths]
            points = [(d, r) for d, r in points if r is not None]
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
    return fig


def bars_with_errors(groups: dict, title: str, y_title: str, log_y: bool = False) -> go.Figure:
    """Grouped bars with ±std error bars.

    groups: ``{series name: {category: {"mean", "std"}}}`` — e.g. series = models, categories =
    tasks; every series lists the same categories in the same order.
    """
    data = []
    for i, (name, cats) in enumerate(groups.items()):
        data.append(
            go.Bar(
                x=list(cats),
                y=[c["mean"] for c in cats.values()],
                error_y={"type": "data", "array": [c["std"] for c in cats.values()]},
                name=name,
                marker_color=PALETTE[i % len(PALETTE)],
            )
        )
    fig = go.Figure(data)
    fig.update_layout(title=title, yaxis_title=y_title, barmode="group", height=380)
    if log_y:
        fig.update_yaxes(type="log", exponentformat="power")
    return fig


def dots_with_errors(values: dict, title: str, y_title: str) -> go.Figure:
    """One marker per category with ±std error bars: ``{category: {"mean", "std"}}``.

    Markers rather than bars, so the y axis can zoom onto small differences honestly.
    """
    fig = go.Figure(
        go.Scatter(
            x=list(values),
            y=[v["mean"] for v in values.values()],
            error_y={"type": "data", "array": [v["std"] for v in values.values()]},
            mode="markers",
            marker={"size": 12, "color": [PALETTE[i % len(PALETTE)] for i in range(len(values))]},
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
        fig.update_layout(annotations=end_labels(curves, 1, colors, span=None), margin={"r": 120})
    return fig


def learning_curves(runs: dict, title: str, group=None) -> go.Figure:
    """Validation curves: ``{name: run}``, each run with a "val_curve" {"metric", "steps",
    "values"} and a "converged" flag (a dotted line when it did not converge). Runs from result
    files written before curves were recorded are left out (the title says so if none is left).

    ``group(name)`` (e.g. the rule of "mgt L=48") gives one colour per group (the rule's own,
    ``figures.rule_color``, as in every notebook) and one marker symbol per member within it, so
    sixteen curves of four rules at four depths read as four colours, not ten palette colours
    repeating."""
    runs = {name: run for name, run in runs.items() if "val_curve" in run}
    styles = {}
    if group is not None:
        groups: dict = {}
        for name in runs:
            members = groups.setdefault(group(name), [])
            colour = list(groups).index(group(name))
            styles[name] = {
                "line": {"color": rule_color(group(name), colour)},
                "marker": {"symbol": SYMBOLS[len(members) % len(SYMBOLS)], "size": 7},
            }
            members.append(name)
    if not runs:
        title += " (this result file recorded no validation curves)"
    metric = next(iter(runs.values()))["val_curve"]["metric"] if runs else "loss"
    fig = go.Figure(
        [
            go.Scatter(
                x=run["val_curve"]["steps"],
                y=run["val_curve"]["values"],
                mode="lines+markers",
                name=name if run["converged"] else f"{name} (not converged)",
                line={
                    **styles.get(name, {}).get("line", {}),
                    "dash": "solid" if run["converged"] else "dot",
                },
                marker=styles.get(name, {}).get("marker"),
            )
            for name, run in runs.items()
        ]
    )
    fig.update_layout(
        title=title, xaxis_title="step", yaxis_title=f"validation {metric}", height=420
    )
    if metric == "mse":
        fig.update_yaxes(type="log", exponentformat="power")
    return _legend_right(fig)


def first_seed_curves(per_seed: dict, rules, where: str) -> dict:
    """The first seed's training-loss and validation curves of ``rules``, titled "… {where},
    seed N": the "curves" and "learning-curves" figures of the comparison protocols."""
    seed = next(iter(per_seed))
    first = per_seed[seed]
    return {
        "curves": loss_curves(
            {r: first[r]["curve"] for r in rules}, f"Training loss {where}, seed {seed}"
        ),
        "learning-curves": learning_curves(
            {r: first[r] for r in rules}, f"Validation loss during training {where}, seed {seed}"
        ),
    }


def beta_by_layer(layers, snapshots: dict, key: str, title: str, y_title: str) -> go.Figure:
    """A per-layer β statistic at several points of training: one line per snapshot.

    snapshots: ``{label: {key: [value per layer]}}`` (e.g. label "50%", key "frac_negative").
    """
    fig = sweep_figure(
        layers,
        {label: stats[key] for label, stats in snapshots.items()},
        title=title,
        x_title="layer",
        y_title=y_title,
    )
    fig.add_hline(y=0.0, line_color="black", line_width=1)
    fig.update_xaxes(**integer_ticks(len(layers)))
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
    """Mean ± std of a metric against depth: ``{name: [{"mean","std"} per depth]}``."""
    fig = go.Figure(
        [
            go.Scatter(
                x=list(depths),
                y=[p["mean"] for p in pts],
                error_y={"type": "data", "array": [p["std"] for p in pts]},
                mode="lines+markers",
                name=name,
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
    return fig
