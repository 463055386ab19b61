"""The CPU thread count of everything geolab runs: the notebooks, the Jupyter widgets,
``geolab rank``, training (``geolab train``, ``geolab.train.train``) and ``geolab reproduce``.

One place sets it: ``use_threads(n)``. ``n`` is a command's ``--threads`` (or
``TrainConfig.threads``); without one, ``GEOLAB_THREADS=N`` from the environment; without that,
``DEFAULT`` = 1. Each notebook's first cell, every widget explorer, ``geolab rank``, every
training run and every protocol run call it, so in a marimo server every page load (a kernel
of its own) applies the same count.

Why one thread by default: the views and the README's CPU training sizes run small matrices
(D ≤ 256, S ≤ 64: tens of microseconds per operator), so a second thread splits work that takes
less time than waking it; and on a machine whose cores are busy with other work, every operator
waits for the slowest of its threads to get a core. Measured on the 2-core development VM under
load ≈ 10 (bench/README.md, "Threads"): a 200-layer MGT forward of notebook 04 took 0.66 s of
wall time with one thread and 9.0 s with two; 20 training steps of notebook 06's pre-LN model
2.1 s and 36 s; the README's first ``geolab train`` example at 30 steps 84 s (9.4 s of CPU) and
570 s (93 s of CPU), the same numbers. On an idle many-core machine with larger models set
``GEOLAB_THREADS`` (or ``--threads``) higher.
"""

import os
import re

ENV = "GEOLAB_THREADS"
DEFAULT = 1
# torch takes a thread count as a C int (99999999999 overflows it); far more threads than cores
# only thrash.
MAX_THREADS = 1024


def check_threads(value, flag: str) -> int:
    """``value`` as a torch thread count: ValueError naming ``flag`` unless 1..MAX_THREADS."""
    return _check_count(value, flag, "")


def check_jobs(value, flag: str) -> int:
    """``value`` as a count of worker processes (``--jobs``): ValueError naming ``flag`` unless
    1..MAX_THREADS. Each worker holds its own torch and model, so far more than cores only
    thrash; 10**30 is a typo, not a plan."""
    return _check_count(value, flag, "worker processes; ")


def _check_count(value, flag: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_THREADS:
        raise ValueError(
            f"{flag} {value} is not allowed; it must be an integer in [1, {MAX_THREADS}] "
            f"({what}this machine has {os.cpu_count()} CPUs)"
        )
    return value


def thread_count() -> int:
    """``GEOLAB_THREADS`` if set (a whole number in 1..MAX_THREADS), else ``DEFAULT``."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return DEFAULT
    # ASCII digits only: str.isdigit accepts "²", which int() then rejects
    if not re.fullmatch(r"[0-9]+", value) or int(value) < 1:
        raise ValueError(f"{ENV}={value!r} is not allowed; expected a positive integer of threads")
    return check_threads(int(value), ENV)


def use_threads(n: int | None = None, flag: str = "--threads") -> None:
    """Set torch's intra-op thread count to ``n`` (checked; an error names it ``flag``), or to
    ``thread_count()`` when ``n`` is None.

    Returns nothing, so that a notebook cell ending with this call displays nothing.
    """
    import torch  # here: the thread settings are read by commands that never load torch

    count = thread_count() if n is None else check_threads(n, flag)
    if torch.get_num_threads() != count:
        torch.set_num_threads(count)
