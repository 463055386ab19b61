"""Experiment protocols (docs/design.md §8): the MGT protocol 1–5, the E∆ benchmark table,
the E∆ reflection experiment and DDL's controls (erase or write only, expanded state or not).

``PROTOCOLS`` maps a name to its module; each runs at scale "tiny" (seconds, CI), "small" (the
committed CPU results under data/results/) or "paper" (the papers' sizes, for a GPU) through
:func:`geolab.experiments.runner.run_protocol` or ``geolab reproduce NAME --scale S``.
"""

import importlib

NAMES = (
    "rank_evolution",
    "ablation",
    "beta_dynamics",
    "depth_scaling",
    "language_model",
    "edelta_benchmarks",
    "reflection",
    "ddl_controls",
)


def get_protocol(name: str):
    """The protocol module called ``name`` (imported on demand: each pulls in the trainer)."""
    if name not in NAMES:
        raise ValueError(f"unknown protocol {name!r}; allowed: {', '.join(NAMES)}")
    return importlib.import_module(f"geolab.experiments.{name}")
