"""The CPU thread count of geolab's interactive work: notebooks, Jupyter widgets, ``geolab rank``.

One place sets it: ``use_threads()``, called by each notebook's first cell, by every widget
explorer and by ``geolab rank``; ``GEOLAB_THREADS=N`` overrides it for all of them.

Why one thread by default: the views and the training lab run small matrices (D ≤ 256, S ≤ 64:
tens of microseconds per operator), so a second thread splits work that takes less time than
waking it; and on a machine whose cores are busy with other work, every operator waits for the
slowest of its threads to get a core. Measured on the 2-core development VM under load ≈ 10
(bench/README.md, "Threads"): a 200-layer MGT forward of notebook 04 took 0.66 s of wall time
with one thread and 9.0 s with two; 20 training steps of notebook 06's pre-LN model 2.1 s and
36 s. On an idle many-core machine with larger models set ``GEOLAB_THREADS`` higher. Training
and ``geolab reproduce`` keep their own setting (``--threads``, torch's default otherwise).
"""

import os

import torch

ENV = "GEOLAB_THREADS"
DEFAULT = 1
# torch takes a thread count as a C int (99999999999 overflows it); far more threads than cores
# only thrash.
MAX_THREADS = 1024


def check_threads(value, flag: str) -> int:
    """``value`` as a torch thread count: ValueError naming ``flag`` unless 1..MAX_THREADS."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_THREADS:
        raise ValueError(
            f"{flag} {value} is not allowed; it must be an integer in [1, {MAX_THREADS}] "
            f"(this machine has {os.cpu_count()} CPUs)"
        )
    return value


def thread_count() -> int:
    """``GEOLAB_THREADS`` if set (a positive integer), else ``DEFAULT``."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return DEFAULT
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{ENV}={value!r} is not allowed; expected a positive integer of threads")
    return check_threads(int(value), ENV)


def use_threads() -> int:
    """Set torch's intra-op thread count to ``thread_count()``; returns it."""
    n = thread_count()
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n
