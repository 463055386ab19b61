"""geolab: geometric residual connections in very deep transformers.

The public API (docs/design.md §10): operators, metrics, the residual rules and their registry
(``Rule``, ``register``, ``RESIDUALS``), the model and the probes, all importable from ``geolab``.
"""

import importlib

__version__ = "0.1.0"

# name -> the module that defines it. Loaded on first use (PEP 562), not by ``import geolab``:
# they import torch (about 3 s of CPU), which ``geolab --help``, ``geolab tasks`` and
# ``geolab reproduce --list`` do not need. ``from geolab import GeoConfig`` works as before.
_HOMES = {
    "GeoConfig": "geolab.config",
    "amax_gain": "geolab.metrics",
    "beta_stats": "geolab.metrics",
    "cosine_alignment": "geolab.metrics",
    "effective_rank": "geolab.metrics",
    "norm_deviation": "geolab.metrics",
    "rank_collapse_residual": "geolab.metrics",
    "synergy": "geolab.metrics",
    "sinkhorn": "geolab.mixing",
    "GeoTransformer": "geolab.model",
    "count_params": "geolab.model",
    "match_params": "geolab.model",
    "cayley": "geolab.operators",
    "cayley_angle": "geolab.operators",
    "cayley_apply": "geolab.operators",
    "delta_operator": "geolab.operators",
    "delta_update": "geolab.operators",
    "gate_regularizer": "geolab.operators",
    "householder": "geolab.operators",
    "hybrid_operator": "geolab.operators",
    "skew": "geolab.operators",
    "rank_profile": "geolab.probe",
    "record": "geolab.probe",
    "RESIDUALS": "geolab.rules",
    "Rule": "geolab.rules",
    "glossary": "geolab.rules",
    "glossary_markdown": "geolab.rules",
    "register": "geolab.rules",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    """``geolab.NAME`` of the public API, imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'geolab' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
