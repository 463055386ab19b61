"""Timing helpers for the benchmarks: interleaved runs and medians of ratios.

The machine the benchmarks run on is shared and noisy, so no absolute time is trusted on its own.
Every comparison runs its contenders interleaved in one process, round after round, with the order
rotated each round; each contender's time in a round is divided by the baseline's time measured
right next to it, and the reported number is the median of those per-round ratios. A slow spell
caused by a neighbour then inflates numerator and denominator alike. The clock is process CPU time
or wall time (``set_clock``; the runner picks CPU time on CPU-only machines).
"""

import gc
import statistics
import time
from collections.abc import Callable

import torch

CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
_clock = {"name": "wall"}


def set_clock(name: str) -> None:
    """Time with process CPU time ("cpu") or wall-clock time ("wall").

    On a shared CPU, wall time mostly measures the neighbours: with one torch thread, process CPU
    time is the time the work itself took on this CPU. GPU work is asynchronous, so CUDA runs
    use wall time (with a synchronize around each interval).
    """
    if name not in CLOCKS:
        raise ValueError(f"clock={name!r} is not allowed; allowed: {', '.join(CLOCKS)}")
    _clock["name"] = name


def clock_name() -> str:
    return _clock["name"]


def sync() -> None:
    """Wait for queued GPU work so a wall-clock interval covers it (no-op on CPU)."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def seconds(fn: Callable[[], object], reps: int = 1) -> float:
    """Seconds per call of ``fn`` on the chosen clock, averaged over ``reps`` back-to-back calls."""
    now = CLOCKS[_clock["name"]]
    sync()
    start = now()
    for _ in range(reps):
        fn()
    sync()
    return (now() - start) / reps


def calibrate(fn: Callable[[], object], min_time: float) -> int:
    """How many back-to-back calls of ``fn`` take at least ``min_time`` seconds (≥ 1).

    Sub-millisecond operators are timed in blocks of this many calls, so timer resolution and
    Python overhead of the timing loop do not dominate.
    """
    fn()
    one = max(seconds(fn), 1e-7)
    return max(1, int(min_time / one + 0.999))


def interleaved(
    fns: dict[str, Callable[[], object]],
    rounds: int,
    warmup: int = 1,
    min_time: float = 0.0,
) -> dict[str, list[float]]:
    """Seconds per call for each contender, one sample per round, order rotated every round.

    With ``min_time`` > 0, each sample is a block of back-to-back calls lasting about that long
    (see ``calibrate``). Returns name -> list of ``rounds`` samples.
    """
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    reps = {name: calibrate(fn, min_time) if min_time else 1 for name, fn in fns.items()}
    names = list(fns)
    times = {name: [] for name in names}
    for r in range(rounds):
        gc.collect()
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(seconds(fns[name], reps[name]))
    return times


def bracketed(
    baseline: Callable[[], object],
    others: dict[str, Callable[[], object]],
    rounds: int,
    warmup: int = 1,
) -> dict[str, list[float]]:
    """Per-round ratios time(other) / time(baseline) with the baseline run between every pair.

    One round runs ``B o₁ B o₂ B … o_k B`` (others in an order rotated every round) and divides
    each oᵢ by the mean of the two baseline runs around it, so drift in the machine's speed
    during a round cancels. Returns name -> list of ``rounds`` ratios.
    """
    for _ in range(warmup):
        baseline()
        for fn in others.values():
            fn()
    names = list(others)
    ratios = {name: [] for name in names}
    for r in range(rounds):
        gc.collect()
        shift = r % len(names)
        before = seconds(baseline)
        for name in names[shift:] + names[:shift]:
            t = seconds(others[name])
            after = seconds(baseline)
            ratios[name].append(t / (0.5 * (before + after)))
            before = after
    return ratios


def median_ratio(num: list[float], den: list[float]) -> float:
    """Median over rounds of num[i] / den[i]: the paired ratio, robust to slow rounds."""
    if len(num) != len(den) or not num:
        raise ValueError(f"need equally many samples, got {len(num)} and {len(den)}")
    return statistics.median(a / b for a, b in zip(num, den, strict=True))


def spread(values: list[float]) -> str:
    """'min–max over n' of a list of ratios or times, for the notes column."""
    return f"{min(values):.3g}–{max(values):.3g} over {len(values)} rounds"
