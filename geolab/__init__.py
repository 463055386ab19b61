"""geolab: geometric residual connections in very deep transformers.

The public API (docs/design.md §10): operators, metrics, the residual rules and their registry
(``Rule``, ``register``, ``RESIDUALS``), the model and the probes, all importable from ``geolab``.
"""

from geolab.config import GeoConfig
from geolab.metrics import (
    amax_gain,
    beta_stats,
    cosine_alignment,
    effective_rank,
    norm_deviation,
    rank_collapse_residual,
    synergy,
)
from geolab.mixing import sinkhorn
from geolab.model import GeoTransformer, count_params, match_params
from geolab.operators import (
    cayley,
    cayley_angle,
    cayley_apply,
    delta_operator,
    delta_update,
    gate_regularizer,
    householder,
    hybrid_operator,
    skew,
)
from geolab.probe import rank_profile, record
from geolab.rules import RESIDUALS, Rule, glossary, glossary_markdown, register

__version__ = "0.1.0"

__all__ = [
    "GeoConfig",
    "GeoTransformer",
    "RESIDUALS",
    "Rule",
    "amax_gain",
    "beta_stats",
    "cayley",
    "cayley_angle",
    "cayley_apply",
    "count_params",
    "cosine_alignment",
    "delta_operator",
    "delta_update",
    "effective_rank",
    "gate_regularizer",
    "glossary",
    "glossary_markdown",
    "householder",
    "hybrid_operator",
    "match_params",
    "norm_deviation",
    "rank_collapse_residual",
    "rank_profile",
    "record",
    "register",
    "sinkhorn",
    "skew",
    "synergy",
]
