"""Confidence intervals over seeds: Student's t for one sample and Welch's t for two.

A claim over seeds is judged on a 95 % interval (docs/design.md §8), never on mean ± std:

    one sample x₁…xₙ:        x̄ ± t(0.975; n − 1) · s/√n
    two samples a, b (Welch): (ā − b̄) ± t(0.975; ν) · √(q_a + q_b),  q = s²/n,
                              ν = (q_a + q_b)² / (q_a²/(n_a − 1) + q_b²/(n_b − 1))

(Welch 1947, Biometrika 34; s² the sample variances). The t quantile is the inverse of Student's
CDF F(t; ν) = 1 − ½ I_{ν/(ν+t²)}(ν/2, ½), with I the regularised incomplete beta function,
evaluated by its continued fraction (Press et al., Numerical Recipes §6.4) and inverted by
bisection, so no SciPy is needed.
"""

import math

LEVEL = 0.95
MIN_SEEDS = 3  # the papers' seed count; fewer reads "inconclusive: fewer than 3 seeds"


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300

    def clamp(v: float) -> float:
        return v if abs(v) > tiny else tiny

    c, d = 1.0, 1.0 / clamp(1.0 - (a + b) * x / (a + 1.0))
    h = d
    for m in range(1, 300):
        even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        for num in (even, odd):
            d = 1.0 / clamp(1.0 + num * d)
            c = clamp(1.0 + num / c)
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b), 0 ≤ x ≤ 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Student's t CDF with ``df`` (> 0, not necessarily whole) degrees of freedom."""
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t value with t_cdf(t, df) = p, 0 < p < 1 (bisection to 1e-12)."""
    if not 0.0 < p < 1.0 or not df > 0:
        raise ValueError(f"t_quantile: need 0 < p < 1 and df > 0, got p={p}, df={df}")
    lo, hi = -1.0, 1.0
    while t_cdf(lo, df) > p:
        lo *= 2.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    while hi - lo > 1e-12 * max(1.0, abs(hi)):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return 0.5 * (lo + hi)


def _moments(values) -> tuple[int, float, float]:
    vals = [float(v) for v in values]
    n = len(vals)
    mean = sum(vals) / n
    var = sum((v - mean) ** 2 for v in vals) / (n - 1) if n > 1 else 0.0
    return n, mean, var


def t_interval(values, level: float = LEVEL) -> dict | None:
    """{"estimate", "low", "high", "df", "n"}: the ``level`` interval of the mean of ``values``;
    None for fewer than 2 values (no spread to judge against)."""
    n, mean, var = _moments(values)
    if n < 2:
        return None
    half = t_quantile(0.5 + level / 2, n - 1) * math.sqrt(var / n)
    return {"estimate": mean, "low": mean - half, "high": mean + half, "df": n - 1, "n": n}


def welch(a, b, level: float = LEVEL) -> dict | None:
    """{"estimate", "low", "high", "df", "n"}: Welch's ``level`` interval of mean(a) − mean(b)
    (module docstring); None when either side has fewer than 2 values. Two spreads of zero give
    the zero-width interval at the difference."""
    (na, ma, va), (nb, mb, vb) = _moments(a), _moments(b)
    if na < 2 or nb < 2:
        return None
    sa, sb = va / na, vb / nb
    diff = ma - mb
    if sa + sb == 0:
        return {"estimate": diff, "low": diff, "high": diff, "df": na + nb - 2, "n": min(na, nb)}
    df = (sa + sb) ** 2 / (sa**2 / (na - 1) + sb**2 / (nb - 1))
    half = t_quantile(0.5 + level / 2, df) * math.sqrt(sa + sb)
    return {"estimate": diff, "low": diff - half, "high": diff + half, "df": df, "n": min(na, nb)}


def sign_of(interval: dict | None) -> int:
    """+1 when the interval lies above 0, −1 below it, 0 when it covers 0 or is None."""
    if interval is None:
        return 0
    if interval["low"] > 0:
        return 1
    if interval["high"] < 0:
        return -1
    return 0


def fmt_interval(interval: dict | None, digits: int = 4) -> str:
    """ "[low, high]" in ``digits`` significant digits; "n/a (one seed)" for None."""
    if interval is None:
        return "n/a (< 2 seeds)"
    return f"[{interval['low']:.{digits}g}, {interval['high']:.{digits}g}]"
