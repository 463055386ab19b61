"""The notebook explorers for Jupyter: ipywidgets sliders driving plotly FigureWidgets.

Each ``*_explorer()`` returns an ``Explorer`` (an ``ipywidgets.VBox``) with the same sliders,
readout and figures as the marimo notebook of the same number; the numbers and figures come from
the same ``geolab.explore`` view functions. On a slider change the readout is rewritten and every
FigureWidget is updated in place, trace by trace (the figure builders keep a fixed trace order),
so the plots do not flicker; the widget's saved state follows, so a reloaded page shows the
current figures. Display one with ``display(delta_explorer())`` or as the last expression of a
cell. Needs ``anywidget`` (plotly's FigureWidget backend).

Static fallback (geolab's choice): displaying an explorer also writes a snapshot of its readout
and figures as ordinary outputs (markdown, and plotly's own JSON mime type, which JupyterLab's
bundled plotly renderer draws offline without a kernel), refreshed at every slider change. While
the widget is live a style rule inside it hides that snapshot; in a saved notebook opened without
a kernel the widget cannot render and the snapshot shows.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable

import ipywidgets as W
import plotly.graph_objects as go
import plotly.io as pio

from geolab import explore
from geolab.threads import use_threads

STATIC_NOTE = (
    "Static snapshot of the explorer at its last slider values (shown when the live widget "
    "cannot be drawn, e.g. a saved notebook without a kernel; run the cell for live sliders)."
)


class FigureWidget(go.FigureWidget):
    """A plotly FigureWidget whose widget opens with its figure already in its state.

    plotly's FigureWidget opens its comm (ipywidgets) before it has stored any trace: the
    front end first gets an empty figure, then the traces in a second message. Its view draws
    whatever the model holds when the view is made, and never redraws on that second message.
    The front end makes views while models still load (the widget's 5 MB script is fetched for
    each), so a view could be made between the two messages and stay empty: on a first display
    ``delta_explorer`` drew 2 of its 4 figures and ``rank_explorer`` 1 of 2 (a page reload, with
    the models loaded, drew all). Here the comm opens once the figure is complete, so the first
    message holds it and every view draws it."""

    def __init__(self, figure: go.Figure):
        self._complete = False
        super().__init__(figure)
        self._complete = True
        self.open()

    def open(self) -> None:
        if self._complete:  # ipywidgets opens the comm in __init__: wait for the traces
            super().open()


class Explorer(W.VBox):
    """Sliders (``controls``), a readout (``readout``) and one FigureWidget per figure key
    (``figures``), wired to a view function; ``view`` is the latest ``explore.View``."""

    def __init__(self, view_fn: Callable[..., explore.View], controls: dict[str, W.Widget]):
        use_threads()  # one thread unless GEOLAB_THREADS says otherwise (geolab.threads)
        self.view_fn = view_fn
        self.controls = controls
        self.readout = W.HTMLMath()
        self.view = view_fn(**self._values())
        self.figures = {key: FigureWidget(fig) for key, fig in self.view.figures.items()}
        self.readout.value = self.view.html()
        self._static = []  # display handles of the static fallback, once displayed
        for control in controls.values():
            control.observe(self._refresh, names="value")
        super().__init__([W.VBox(list(controls.values())), self.readout, *self.figures.values()])
        self.tag = f"geolab-static-{self.model_id}"
        # While this widget is drawn, hide its static fallback (the outputs after it in its cell).
        hide = (
            f".jp-OutputArea-child:has(.{self.tag}), "
            f".jp-OutputArea-child:has(.{self.tag}) ~ .jp-OutputArea-child {{display: none}}"
        )
        self.children = (W.HTML(f"<style>{hide}</style>"), *self.children)

    def _values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def _refresh(self, _change=None) -> None:
        try:
            self.view = self.view_fn(**self._values())
        except ValueError as err:
            self.readout.value = f"<b>Not allowed:</b> {err}"
            return
        self.readout.value = self.view.html()
        for key, new in self.view.figures.items():
            update_figure(self.figures[key], new)
        if self._static:
            for handle, bundle in zip(self._static, self.static_outputs(), strict=True):
                handle.update(bundle, raw=True)

    def static_outputs(self) -> list[dict]:
        """The fallback as raw mime bundles: a marked note with the readout, then each figure."""
        head = {
            "text/html": f"<div class='{self.tag}'><p><i>{STATIC_NOTE}</i></p>"
            f"{self.view.html()}</div>",
            "text/plain": "geolab explorer (static snapshot)",
        }
        return [head] + [static_figure(fig) for fig in self.view.figures.values()]

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)
        self._static = [display(b, raw=True, display_id=True) for b in self.static_outputs()]


def static_figure(fig: go.Figure) -> dict:
    """A figure as plotly's JSON mime bundle (drawn offline by JupyterLab's plotly renderer)."""
    spec = json.loads(pio.to_json(fig, validate=False))
    return {
        "application/vnd.plotly.v1+json": {**spec, "config": {"responsive": True}},
        "text/plain": f"<plotly figure: {fig.layout.title.text or ''}>",
    }


def update_figure(widget: go.FigureWidget, new: go.Figure) -> None:
    """Copy ``new`` into ``widget``: trace data in place when the trace count is unchanged
    (the figure builders' contract), all traces replaced otherwise; layout replaced. The
    widget's synced state is then set to the new figure, so a view created later (a page
    reload) draws what the sliders say, not the figure first displayed."""
    with widget.batch_update():
        if len(widget.data) == len(new.data):
            for old, trace in zip(widget.data, new.data, strict=True):
                old.update(trace.to_plotly_json())
        else:
            widget.data = []
            widget.add_traces(list(new.data))
        widget.layout = new.layout
    widget._widget_layout = copy.deepcopy(widget._layout_obj._props)
    widget._widget_data = copy.deepcopy(widget._data)


def _slider(lo, hi, step, value, label, integer=False, live=True) -> W.Widget:
    """A labelled slider; ``live=False`` updates only on release (the debounce of the marimo
    notebook's slow sliders: rebuilding a 200-layer model per intermediate value would lag)."""
    cls = W.IntSlider if integer else W.FloatSlider
    return cls(
        min=lo,
        max=hi,
        step=step,
        value=value,
        description=label,
        continuous_update=live,
        style={"description_width": "12em"},
        layout=W.Layout(width="32em"),
    )


def delta_explorer() -> Explorer:
    """Notebook 01: β, the direction angle φ of k, and the written value v."""
    return Explorer(
        explore.delta_view,
        {
            "beta": _slider(-1.0, 3.0, 0.05, 0.5, r"gate \(\beta\)"),
            "phi": _slider(-3.14, 3.14, 0.02, 0.5, r"angle \(\varphi\) of \(k\)"),
            "v": _slider(-2.0, 2.0, 0.05, 1.0, r"written value \(v\)"),
        },
    )


def mgt_explorer() -> Explorer:
    """Notebook 02: λ, ε, α, β₀ and the scale of W_β."""
    return Explorer(
        explore.mgt_view,
        {
            "lam": _slider(0.1, 2.0, 0.05, 1.0, r"range \(\lambda\)"),
            "eps": _slider(-0.5, 0.5, 0.05, 0.0, r"offset \(\epsilon\)"),
            "alpha": _slider(0.0, 2.0, 0.05, 0.1, r"decay \(\alpha\)"),
            "beta0": _slider(-0.95, 0.95, 0.05, 0.5, r"initial gate \(\beta_0\)"),
            "w_scale": _slider(0.0, 3.0, 0.1, 1.0, r"scale of \(W_\beta\)"),
        },
    )


def cayley_explorer() -> Explorer:
    """Notebook 03: the Cayley scale β, the angle between u and v, and the hybrid gate γ."""
    return Explorer(
        explore.cayley_view,
        {
            "beta": _slider(0.0, 20.0, 0.1, 2.0, r"Cayley scale \(\beta\)"),
            "angle": _slider(0.0, 3.14, 0.02, 1.2, r"angle between \(u, v\)"),
            "gamma": _slider(0.0, 1.0, 0.01, 0.5, r"hybrid gate \(\gamma\)"),
        },
    )


def rank_explorer(rules: tuple[str, ...] = ("postln", "preln", "mgt")) -> Explorer:
    """Notebook 04: depth, rules, and the MGT / E∆ init sliders (width 128, 32 tokens)."""
    return Explorer(
        explore.rank_view,
        {
            "rules": W.SelectMultiple(
                options=explore.rank_rules(), value=rules, description="rules", rows=6
            ),
            "n_layer": W.SelectionSlider(
                options=explore.RANK_DEPTHS,
                value=24,
                description="depth L",
                continuous_update=False,
            ),
            "beta0": _slider(-0.95, 0.95, 0.05, 0.5, r"MGT \(\beta_0\)", live=False),
            "lam": _slider(0.1, 2.0, 0.05, 1.0, r"MGT \(\lambda\)", live=False),
            "alpha0": _slider(0.0, 1.0, 0.05, 0.1, r"MGT \(\alpha_0\)", live=False),
            "gamma0": _slider(0.05, 0.95, 0.05, 0.5, r"E∆ \(\gamma_0\) (edelta only)", live=False),
            "reference": W.Checkbox(value=True, description="pure attention reference"),
        },
    )


def spectrum_explorer() -> Explorer:
    """Notebook 05: the preset of every layer's logits, the depth L, and one mixer repeated
    or a fresh one per layer; |λ₂| of the product for HC, mHC, mHC-lite and JPmHC."""
    return Explorer(
        explore.spectrum_view,
        {
            "preset": W.Dropdown(
                options=list(explore.PRESETS), value="random", description="preset"
            ),
            "depth": _slider(1, 200, 1, 100, "depth L", integer=True),
            "same": W.Checkbox(value=False, description="the same mixer at every layer"),
        },
    )


def streams_explorer() -> Explorer:
    """Sinkhorn iterations, logit spread σ and the depth of the mixer product (notebook 05
    before it split in two: the Sinkhorn residual and the Amax gains of the families)."""
    return Explorer(
        explore.streams_view,
        {
            "iters": _slider(1, 50, 1, 20, "Sinkhorn iterations", integer=True),
            "spread": _slider(0.1, 4.0, 0.1, 2.0, r"logit spread \(\sigma\)"),
            "depth": _slider(1, 200, 1, 100, "depth L", integer=True),
        },
    )


def gradient_explorer(rules: tuple[str, ...] = ("postln", "preln", "mgt")) -> Explorer:
    """Notebook 08: depth and rules (width 32, 16 tokens); every J_l from one backward pass."""
    return Explorer(
        explore.gradient_view,
        {
            "rules": W.SelectMultiple(
                options=explore.rank_rules(), value=rules, description="rules", rows=6
            ),
            "n_layer": W.SelectionSlider(
                options=explore.GRADIENT_DEPTHS,
                value=24,
                description="depth L",
                continuous_update=False,
            ),
            "reference": W.Checkbox(value=True, description="pure attention reference"),
        },
    )
