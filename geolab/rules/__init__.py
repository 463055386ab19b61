"""The residual rules (docs/design.md §3): nineteen rules behind one call, ``rule(x, sublayer)``.

``base`` (the ``Rule`` interface) and one module per family, each registering its rules in
``geolab.registry`` (``@register``, ``RESIDUALS``; below ``GeoConfig``, which asks it):
``classic`` (post-LN … no skip), ``delta`` (MGT, DDL and its write-only control),
``expanded`` (DDL's expanded d×4 state), ``streams`` (hyper-connections:
HC, mHC, mHC-lite, JPmHC) and ``geometric`` (E∆: Cayley, Householder, the hybrid);
``reference`` rebuilds the E∆ table's models as the public E∆ code builds them
(``flavor="reference"``). Importing this package registers them.
"""

from geolab.registry import (
    RESIDUALS,
    describe,
    glossary,
    glossary_markdown,
    register,
    rule_class,
    unregister,
)

from geolab.rules.base import Rule  # isort: skip

# The families register in this order, which is the order of RESIDUALS (and of every listing).
from geolab.rules import classic, delta  # noqa: F401, E402  isort: skip
from geolab.rules import expanded  # noqa: F401, E402  isort: skip
from geolab.rules import streams  # noqa: F401, E402  isort: skip
from geolab.rules import geometric  # noqa: F401, E402  isort: skip
from geolab.rules import reference  # noqa: F401, E402  isort: skip

__all__ = [
    "RESIDUALS",
    "Rule",
    "describe",
    "glossary",
    "glossary_markdown",
    "register",
    "rule_class",
    "unregister",
]
