"""View models of the explorers: slider values -> the numbers and figures a notebook shows.

One module and one function per notebook: ``delta.delta_view`` (01), ``mgt.mgt_view`` (02),
``cayley.cayley_view`` (03), ``rank.rank_view`` (04), ``streams.spectrum_view`` (05; its
``streams_view`` drives the Jupyter explorer), ``sinkhorn.sinkhorn_view`` (05b),
``gradients.gradient_view`` (08); ``view`` holds the ``View`` they return, ``predict`` the
notebooks' predict-first questions (answer locked, everything that answers it hidden until
then), ``lesson`` the guided path (order, what each lesson teaches, its transfer question).
Each view function is pure in its arguments (seeded, no global state except a small cache
of drawn weights, ``geolab.stack``, and of built models) and returns a ``View``: raw
``numbers`` (what tests check), a ``readout`` of (LaTeX label, formatted value) rows (what the
learner reads) and plotly ``figures`` from ``geolab.figures``. The marimo notebooks, the
Jupyter widgets (``geolab.widgets``), the tests and the latency benchmark all call these same
functions, so a test that injects slider values exercises exactly the code path a learner's
slider does.

Operator algebra (01, 03) runs in float64 so the printed invariants (‖QᵀQ − I‖, det) show the
maths, not float32 rounding; 05 multiplies its mixers in float64 (mHC's Sinkhorn itself runs in
float32, as mHC runs it) and 05b runs Sinkhorn in float64, marking float32's rounding floor. The
model-based views (02, 04, 08) run in float32, as the
rules do, except 02's Jacobian (float64: ``mgt.token_jacobian``), a 04 curve whose state decays
out of float32's range (``rank.rule_profile``) and an 08 rule whose Jacobians or gradients do
(``gradients.rule_gradients``), each recomputed in float64 with the same weights.
"""

from geolab.explore.cayley import cayley_limit_view, cayley_view
from geolab.explore.delta import delta_mode, delta_view
from geolab.explore.dial import DirectionDial
from geolab.explore.gradients import (
    GRADIENT_DEPTHS,
    gradient_view,
    layer_grad_norms,
    output_jacobians,
)
from geolab.explore.lesson import (
    LESSONS,
    lesson,
    next_markdown,
    opening,
    path_markdown,
    transfer_question,
    transfer_shown,
)
from geolab.explore.mgt import (
    BETA0_NOTE,
    MGT_WIDTH,
    beta0_control,
    beta0_shown,
    beta0_slider,
    jacobian_why,
    mgt_sliders,
    mgt_view,
)
from geolab.explore.predict import WAITING, answer_state, asked, question
from geolab.explore.rank import (
    RANK_DEPTHS,
    REFERENCE,
    compare_rows,
    layer_profile,
    layer_states,
    rank_config,
    rank_rules,
    rank_tokens,
    rank_view,
    rule_colors,
    rule_fields,
    rule_profile,
    token_plane,
)
from geolab.explore.sinkhorn import SINKHORN_PRESETS, sinkhorn_view
from geolab.explore.streams import (
    FAMILIES,
    PRESETS,
    SPECTRUM_FAMILIES,
    mixers,
    sinkhorn_errors,
    spectral_gain_curve,
    spectrum_view,
    streams_view,
)
from geolab.explore.trained import RANK_MOVES, rank_bridge_view, rank_move, trained_depths
from geolab.explore.view import View, notebook_cache, power_text, tex_sci

__all__ = [
    "DirectionDial",
    "MGT_WIDTH",
    "RANK_DEPTHS",
    "RANK_MOVES",
    "FAMILIES",
    "PRESETS",
    "SINKHORN_PRESETS",
    "SPECTRUM_FAMILIES",
    "LESSONS",
    "GRADIENT_DEPTHS",
    "REFERENCE",
    "View",
    "beta0_slider",
    "WAITING",
    "answer_state",
    "asked",
    "cayley_limit_view",
    "cayley_view",
    "compare_rows",
    "delta_mode",
    "delta_view",
    "gradient_view",
    "jacobian_why",
    "layer_grad_norms",
    "layer_profile",
    "layer_states",
    "lesson",
    "mgt_view",
    "mgt_sliders",
    "beta0_control",
    "beta0_shown",
    "BETA0_NOTE",
    "mixers",
    "next_markdown",
    "notebook_cache",
    "opening",
    "output_jacobians",
    "path_markdown",
    "power_text",
    "question",
    "rank_bridge_view",
    "rank_config",
    "rank_move",
    "rank_rules",
    "rank_tokens",
    "rank_view",
    "rule_colors",
    "rule_fields",
    "rule_profile",
    "sinkhorn_errors",
    "sinkhorn_view",
    "spectral_gain_curve",
    "spectrum_view",
    "streams_view",
    "tex_sci",
    "token_plane",
    "trained_depths",
    "transfer_question",
    "transfer_shown",
]
