"""What every explorer returns: a ``View`` of numbers, a readout and figures; shared helpers.

Each notebook's view function is pure in its slider values (seeded) and returns a ``View``: raw
``numbers`` (what tests check), a ``readout`` of (LaTeX label, formatted value) rows (what the
learner reads) and plotly ``figures``. ``notebook_cache`` memoises a view for a notebook.
"""

from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass, field

import plotly.graph_objects as go
import torch

F64 = torch.float64


def notebook_cache(fn, maxsize: int = 32):
    """Memoise a view function for a notebook: ``mo.cache`` (keyed on the slider values) inside
    marimo's runtime, ``functools.lru_cache`` elsewhere — ``mo.cache`` fails inside a Jupyter
    kernel running an exported notebook, where ``mo.app_meta().mode`` is None."""
    import marimo as mo

    return mo.cache(fn) if mo.app_meta().mode else functools.lru_cache(maxsize=maxsize)(fn)


@dataclass
class View:
    """What one explorer shows for one set of slider values."""

    numbers: dict[str, object]
    readout: list[tuple[str, str]]
    figures: dict[str, go.Figure] = field(default_factory=dict)

    def markdown(self, rows: slice = slice(None)) -> str:
        """The readout (its ``rows``, all by default: a lesson shows only its own idea's rows)
        as a two-column markdown table (LaTeX labels render in marimo)."""
        rows = "\n".join(f"| {label} | {value} |" for label, value in self.readout[rows])
        return "| quantity | value |\n|:--|--:|\n" + rows

    def html(self) -> str:
        """The readout as an HTML table (for ipywidgets.HTMLMath, which renders the LaTeX)."""
        rows = "".join(
            f"<tr><td>{label}</td><td style='text-align:right'><code>{value}</code></td></tr>"
            for label, value in self.readout
        )
        return f"<table>{rows}</table>"


def num(x: float) -> str:
    """Fixed notation for ordinary sizes, scientific for tiny or huge ones (1e-16 stays visible)."""
    x = float(x)
    if x == 0 or 1e-3 <= abs(x) < 1e4:
        return f"{x:.4f}"
    return f"{x:.2e}"


def tex_num(x: float) -> str:
    """``num(x)`` for use inside LaTeX maths: scientific notation as ``4.29 \\times 10^{-3}``.

    Inside ``$…$`` the plain "4.29e-03" reads as 4.29·e − 3 (e, minus, three)."""
    text = num(x)
    return text if "e" not in text else tex_sci(x)


def tex_sci(x: float, digits: int = 2) -> str:
    """``x`` in scientific notation for LaTeX maths, ``digits`` decimals: ``4.29 \\times
    10^{-3}`` (never "4.29e-03", which maths typesets as 4.29·e − 3)."""
    mantissa, exponent = f"{float(x):.{digits}e}".split("e")
    return mantissa if int(exponent) == 0 else rf"{mantissa} \times 10^{{{int(exponent)}}}"


def power_text(base: float, exponent: int, tex: bool = False) -> str:
    """|base|^exponent (``exponent`` ≥ 0) without ever printing a positive number as 0:
    computed in log space, ``"≈ 1.0e-520"`` where the float would underflow to 0 (or overflow),
    ``num()`` of the float otherwise; ``tex``: the LaTeX relation and value (``\\approx 1.0
    \\times 10^{-520}``, ``= 0``). Exactly 0 only when ``base`` is 0 and ``exponent`` > 0."""
    base = abs(float(base))
    if base == 0 or exponent == 0:
        value = float(base**exponent)
        return f"= {value:g}" if tex else num(value)
    log10 = exponent * math.log10(base)
    if -300 < log10 < 300:  # a normal float64, printed as it is
        value = 10.0**log10
        return rf"\approx {tex_num(value)}" if tex else num(value)
    power = math.floor(log10)
    mantissa = 10.0 ** (log10 - power)
    if tex:
        return rf"\approx {mantissa:.1f} \times 10^{{{power}}}"
    return f"≈ {mantissa:.1f}e{power}"


def fixed(x: float) -> str:
    """Four decimals with −0 shown as 0: for quantities whose exact value is the point (det)."""
    return f"{float(x) + 0.0:.4f}".replace("-0.0000", "0.0000")


def check_range(name: str, value: float, low: float, high: float) -> float:
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not (real and low <= value <= high and math.isfinite(float(value))):
        raise ValueError(f"{name}={value!r} is not allowed; expected a number in [{low}, {high}]")
    return float(value)


def check_int(name: str, value, low: int, high: int) -> int:
    """``value`` as an int in [low, high]: an int, or a float with an integer value (a slider's
    12.0); NaN, ±Inf, bools and anything else are refused before ``int()`` can overflow."""
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not (real and low <= value <= high and float(value).is_integer()):
        raise ValueError(f"{name}={value!r} is not allowed; expected an integer in [{low}, {high}]")
    return int(value)


def check_names(what: str, names, allowed) -> list:
    """``names`` (a list or tuple of names, each one of ``allowed``) as a list; a single string
    is refused whole, not read letter by letter as a list of one-letter names."""
    if isinstance(names, str) or not isinstance(names, list | tuple):
        example = [names] if isinstance(names, str) else ["preln"]
        raise ValueError(
            f"{what}={names!r} is not allowed; pass a list or tuple of names, e.g. {example!r}"
        )
    unknown = [r for r in names if r not in allowed]
    if unknown:
        raise ValueError(f"{what}: {unknown} not allowed; choose from {', '.join(allowed)}")
    return list(names)
