"""The residual-rule registry: ``RESIDUALS`` maps a name to its rule class (docs/design.md §3).

``@register("name")`` on a ``geolab.rules.Rule`` subclass adds it — geolab's nineteen rules, a
notebook's, a student's or your own file's alike — and from then on ``GeoConfig(residual="name")``,
``GeoTransformer``, the trainer, the probes and notebook 04's selector all use it. ``rule_class``
is the one place a config is turned into its rule class.

Flavors: ``RESIDUALS`` holds geolab's own rules (``GeoConfig.flavor="geolab"``, the default);
``REFERENCE`` holds the E∆ table's models rebuilt as the public E∆ code builds them
(``flavor="reference"``, ``@register("edelta", flavor="reference")``; docs/design.md §12).

This module imports neither torch nor anything of geolab, and sits below both ``GeoConfig`` and
the rules: ``GeoConfig`` asks it (to validate ``residual`` and let the rule check the fields it
reads) and the rules (``geolab.rules``, which read configs) fill it. It never imports the rules
(they import it): the package, above them, hands it the loader of geolab's own rules
(``set_builtin_loader``), which ``rule_class`` runs before each lookup. So ``import geolab`` and
``import geolab.config`` load no torch, and the command line starts without it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch loads with the rules; the registry's names must not need it
    from torch import nn

FLAVORS = ("geolab", "reference")
RESIDUALS: dict[str, type[nn.Module]] = {}
REFERENCE: dict[str, type[nn.Module]] = {}

# What GeoConfig, GeoTransformer and match_params call on a rule class (geolab.rules.base.Rule).
RULE_API = (
    "forward",
    "check",
    "sublayer_width",
    "d_model_step",
    "beta_range",
    "expand",
    "merge",
    "init_sublayers",
    "reset_init",
)


def config_error(field: str, value, allowed: str) -> ValueError:
    """The one-line error of a bad GeoConfig field: the field, the value and what is allowed."""
    return ValueError(f"GeoConfig.{field}={value!r} is not allowed; {allowed}")


def register(name: str, flavor: str = "geolab"):
    """Class decorator: ``@register("my_rule")`` makes ``GeoConfig(residual="my_rule")`` build it.

    ``flavor="reference"`` files the class as the reference build of ``name`` instead, which
    ``GeoConfig(residual=name, flavor="reference")`` builds.

    A name is taken once. A class of the same qualified name outside geolab (a re-run notebook
    cell, a reloaded module, the same notebook loaded again) may take it again and replaces the
    old definition; geolab's own rules are never replaced.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"rule name {name!r} is not allowed; use a Python identifier")
    if flavor not in FLAVORS:
        raise ValueError(f"flavor {flavor!r} is not allowed; allowed: {', '.join(FLAVORS)}")
    table = RESIDUALS if flavor == "geolab" else REFERENCE

    def add(cls):
        from torch import nn

        api_ok = isinstance(cls, type) and issubclass(cls, nn.Module)
        if not api_ok or not all(hasattr(cls, attr) for attr in RULE_API):
            raise ValueError(f"rule class {cls!r} is not allowed; subclass geolab.rules.Rule")
        old = table.get(name)
        builtin = old is not None and old.__module__.startswith("geolab.rules.")
        if old is not None and old is not cls and (builtin or old.__qualname__ != cls.__qualname__):
            where = f"{old.__module__}.{old.__qualname__}"
            raise ValueError(f"rule name {name!r} is not allowed; it is taken by {where}")
        table[name] = cls
        return cls

    return add


def unregister(name: str) -> None:
    """Remove rule ``name`` (a temporary registration, e.g. the A4 grader's)."""
    if name not in RESIDUALS:
        raise ValueError(f"rule name {name!r} is not registered")
    del RESIDUALS[name]


# The loader of geolab's own rules: one, set by the package (geolab/__init__.py) on import,
# before anything can look a rule up.
_BUILTIN_LOADER: list[Callable[[], object]] = []


def set_builtin_loader(load: Callable[[], object]) -> None:
    """Have ``rule_class`` call ``load()`` before each lookup, so geolab's own rules are in the
    tables. geolab/__init__.py passes the import of ``geolab.rules`` (the rules register
    themselves on import; a repeated import is one dictionary lookup)."""
    _BUILTIN_LOADER[:] = [load]


def rule_class(cfg) -> type[nn.Module]:
    """The rule class ``cfg.residual`` names, in ``cfg.flavor``'s table (geolab's own rules
    registered first, by the loader the package set)."""
    for load in _BUILTIN_LOADER:
        load()
    if cfg.flavor not in FLAVORS:
        raise config_error("flavor", cfg.flavor, f"allowed: {', '.join(FLAVORS)}")
    table = RESIDUALS if cfg.flavor == "geolab" else REFERENCE
    cls = table.get(cfg.residual)
    if cls is None:
        names = ", ".join(table)
        if cfg.flavor == "reference":
            raise config_error(
                "residual", cfg.residual, f"flavor='reference' rebuilds only: {names}"
            )
        raise config_error("residual", cfg.residual, f"allowed: {names}")
    return cls


def _summary(cls) -> str:
    """The first paragraph of a class's docstring on one line ("" without a docstring)."""
    doc = (cls.__doc__ or "").strip()
    return " ".join(doc.split("\n\n", 1)[0].split()) if doc else ""


def describe(name: str) -> str:
    """The first paragraph of a rule's docstring on one line (its update and its paper), for
    ``geolab info``."""
    return _summary(RESIDUALS[name]) or name


def glossary(names=None) -> list[tuple[str, str, str]]:
    """(rule, update, paper) for each registered rule (default: all, in registration order).

    Read from the rules' own docstrings, whose first paragraph is "update — paper" (geolab's
    rules all follow it; tests/test_rules.py checks each cites an arXiv paper), so the glossary
    cannot drift from the code. A rule without the " — " gets "" as its paper.
    """
    if isinstance(names, str):  # not a list of one-letter names
        raise ValueError(
            f"names={names!r} is not allowed; pass a list of rule names, e.g. {[names]!r}"
        )
    rows = []
    for name in RESIDUALS if names is None else names:
        if name not in RESIDUALS:
            raise ValueError(
                f"rule name {name!r} is not registered; allowed: {', '.join(RESIDUALS)}"
            )
        update, _, paper = _summary(RESIDUALS[name]).rpartition(" — ")
        rows.append((name, update or paper, paper.rstrip(".") if update else ""))
    return rows


# A paper cite that ends in one of its equations or algorithms and the section holding it:
# "arXiv:2601.01014, Eq. 6–7, §3".
EQUATION_CITE = re.compile(r"arXiv:(\d{4}\.\d{4,5}), ((?:Eq\.|Algorithm) [^,]+, §(\d+))$")


def _linked(paper: str) -> str:
    """A paper cell whose equation cite links that section of the paper's arXiv HTML page,
    unversioned: the MGT paper's sections are read off a review of it, not off a version of the
    paper (tests/test_citations.py lists them with their evidence)."""
    return EQUATION_CITE.sub(r"[arXiv:\1, \2](https://arxiv.org/html/\1#S\3)", paper)


def glossary_markdown(names=None) -> str:
    """``glossary(names)`` as a markdown table (README, notebooks 00 and 04)."""
    lines = ["| rule | update | paper |", "|:--|:--|:--|"]
    for name, update, paper in glossary(names):
        cells = (f"`{name}`", update.replace("|", "\\|"), _linked(paper).replace("|", "\\|"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
