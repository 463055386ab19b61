"""geolab: geometric residual connections in very deep transformers.

The public API (docs/design.md §10): operators, metrics, the residual rules and their registry
(``Rule``, ``register``, ``RESIDUALS``), the model and the probes, all importable from ``geolab``.
"""

import importlib

from geolab import registry

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


def _load_rules() -> None:
    """Import geolab's own rules, which register themselves in ``geolab.registry``.

    The registry runs this before each lookup (``GeoConfig``'s check, ``rule_class``). This
    package sits above both, so the registry never imports the rules, and ``import
    geolab.config`` still loads no torch until a config is built."""
    import geolab.rules  # noqa: F401


registry.set_builtin_loader(_load_rules)


def __getattr__(name: str):
    """``geolab.NAME`` of the public API, imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'geolab' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
