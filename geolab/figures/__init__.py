"""Figure builders: pure functions from numbers to plotly figures, one module per topic.

Shared by the marimo notebooks (``notebooks/``), the Jupyter explorers (``geolab.widgets``) and the
latency benchmark. Every builder takes plain numbers (Python floats, lists, numpy arrays or torch
tensors) and returns a fresh ``plotly.graph_objects.Figure``; nothing here computes operators or
runs models.

Live-update contract (geolab's own): for a given set of *names* (curve names, eigenvalue sets,
rules) a builder always emits the same traces in the same order, so a live view can copy
``new.data[i]`` into ``old.data[i]`` in place. Quantities that grow with depth (200 layers) are one
trace each, never one trace per layer.

Speed: figures are assembled as plain dicts and wrapped without plotly's per-property validation
(``_validate=False``; validation costs ~30–80 ms per figure, the whole live budget of a slider).
The tests re-validate every builder's output with a validating ``go.Figure(fig.to_dict())``.
"""

from geolab.figures.depth import (
    composite_gain_figure,
    heatmaps_figure,
    rank_figure,
    token_cloud_figure,
)
from geolab.figures.gates import beta_histogram_figure, gated_write_figure
from geolab.figures.gradients import grad_norm_figure, jacobian_figure
from geolab.figures.operators import (
    determinant_figure,
    eigen_distance_figure,
    note,
    spectrum_figure,
    sweep_figure,
    unit_image_figure,
    vectors_figure,
)
from geolab.figures.streams import second_eigenvalue_figure, sinkhorn_animation_figure
from geolab.figures.style import (
    DASHES,
    HEIGHT,
    PALETTE,
    RULE_COLORS,
    SYMBOLS,
    as_numpy,
    axis_room,
    end_labels,
    integer_ticks,
    rule_color,
    rule_colors,
    tint,
)
from geolab.figures.trained import rank_bridge_figure

__all__ = [
    "DASHES",
    "HEIGHT",
    "PALETTE",
    "RULE_COLORS",
    "SYMBOLS",
    "as_numpy",
    "beta_histogram_figure",
    "composite_gain_figure",
    "determinant_figure",
    "eigen_distance_figure",
    "axis_room",
    "end_labels",
    "gated_write_figure",
    "grad_norm_figure",
    "jacobian_figure",
    "note",
    "heatmaps_figure",
    "integer_ticks",
    "rank_bridge_figure",
    "rank_figure",
    "rule_color",
    "rule_colors",
    "second_eigenvalue_figure",
    "sinkhorn_animation_figure",
    "spectrum_figure",
    "sweep_figure",
    "tint",
    "token_cloud_figure",
    "unit_image_figure",
    "vectors_figure",
]
