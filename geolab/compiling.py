"""Per-layer compilation: one layer's step compiled once and reused by every layer.

Training (``TrainConfig.compile``, ``geolab train --compile``) and the views' stacked model
(``GEOLAB_COMPILE=1``) compile the function that runs one layer — its rule modules and
sublayers, with the weights as inputs — instead of the whole model: with ``dynamic=False`` the
graph depends only on the rule class, the shapes and the grad mode, so the first layer compiles
it and every other layer, and every later call, reuses it (bench/README.md, "Seventh pass").
What dynamo would otherwise break or specialise on is kept out of the graph: the operators'
host reads (E∆'s and Cayley's polynomial regime, Sinkhorn's linear spread) become bool tensors
the graph defers (``operators.defer``), which ``checked`` reads once after the step — rerunning
the step eagerly, with the guarded forms, when one is False; and slider and depth constants enter
as tensors (the projections' 1/√steps in ``stack``, MGT's λ, ε), so a slider move reuses the
graph. A host read inside the rule would split each layer into two dozen compiled frames: E∆'s
compiled rank profile then ran at 5.36× its floor (eager 4.64×); with the reads deferred, 2.12×
(eager 3.68×; bench/README.md, "Seventh pass").

Training's ``compile_mode="reduce-overhead"`` (``--compile-mode reduce-overhead``) compiles the
same per-layer step with CUDA graphs on top (torch's cudagraph trees): each layer's kernels
replayed as one graph launch, for small models whose steps are launch-bound on a GPU. On a CPU
torch skips the graphs (it logs why) and the step is the default one. scripts/gpu_check.sh times
both against eager on the GPU (its step 4).

inductor keeps its compiled kernels and graphs on disk in geolab's cache folder
(``$GEOLAB_CACHE``, else ``~/.cache/geolab``, under ``inductor/``) unless
``TORCHINDUCTOR_CACHE_DIR`` is set: E∆'s views step took 17.7 s of CPU to compile with an empty
folder and 2.8 s in a later process that found it there. That is why compilation is off by
default: it pays for long training runs and for a views session that moves sliders many times,
not for one call.
"""

from __future__ import annotations

import functools
import os

import torch

from geolab.choices import MODE_NAMES, MODES
from geolab.data import cache_root
from geolab.operators import deferring, take_deferred

ENV = "GEOLAB_COMPILE"
# Graphs dynamo keeps per compiled function before it stops compiling new cases (its default:
# 8). The views' one step gets a graph per rule class, shape, grad mode and mid-step flag: 04's
# four curves and the profiles of preln, mgt, edelta and ddl are nine, and past the default each
# new rule ran eagerly behind the guards of the eight kept graphs — the compiled rank profiles
# of ddl, mhc and mhc_lite then ran at 3.8, 5.8 and 4.8× their floors, with the limit raised at
# 2.6, 3.6 and 2.9× (bench/README.md, "Ninth pass"); "compare all" traces 16 rules.
GRAPHS_PER_FUNCTION = 128


def compile_mode(value: str, flag: str = "--compile-mode") -> str | None:
    """The mode ``--compile-mode VALUE`` names (``MODE_NAMES``): ``default``, inductor's (None),
    or ``reduce-overhead``, CUDA graphs on top; a one-line ValueError naming ``flag`` otherwise."""
    if value not in MODE_NAMES:
        raise ValueError(f"{flag} {value!r} is not allowed; allowed: {', '.join(MODE_NAMES)}")
    return MODE_NAMES[value]


def views_compile() -> bool:
    """Whether ``GEOLAB_COMPILE`` asks the views to compile their layer step: ``1`` yes, unset,
    empty or ``0`` no; anything else is a ValueError naming the variable."""
    value = os.environ.get(ENV, "").strip()
    if value not in ("", "0", "1"):
        raise ValueError(f"{ENV}={value!r} is not allowed; expected 0 or 1")
    return value == "1"


def use_cache_folder() -> str:
    """Point inductor's on-disk caches at geolab's cache folder, unless the user chose one
    (``TORCHINDUCTOR_CACHE_DIR``); returns the folder."""
    return os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache_root() / "inductor"))


@functools.cache
def compiled(fn, mode: str | None = None, backend: str = "inductor"):
    """``torch.compile(fn, dynamic=False)`` once per (fn, mode, backend), shared by every caller:
    every layer of every model calls the same compiled function, so dynamo's cache of graphs
    (one per rule class, shape and grad mode) is shared too, up to ``GRAPHS_PER_FUNCTION``
    graphs. ``mode="reduce-overhead"`` adds CUDA graphs on a GPU; ``backend="eager"`` traces
    without generating code (tests)."""
    if mode not in MODES:
        raise ValueError(f"compile mode {mode!r} is not allowed; allowed: {MODES}")
    if backend == "inductor":
        use_cache_folder()
    limit = torch._dynamo.config.recompile_limit  # raised only: a user's larger one stays
    torch._dynamo.config.recompile_limit = max(limit, GRAPHS_PER_FUNCTION)
    return torch.compile(fn, dynamic=False, mode=mode, backend=backend)


def checked(step, *args, mode: str | None = None, backend: str = "inductor"):
    """``step(*args)`` through its compiled form, then the conditions the graph deferred
    instead of reading them on the host (the operators' polynomial regime, Sinkhorn's linear
    spread; ``operators.defer``): one host read of all of them, and when one is False the
    step again, eagerly, where the guarded forms run. With none deferred, no read."""
    with deferring():
        out = compiled(step, mode, backend)(*args)
        flags = take_deferred()
    if flags and not bool(torch.stack(flags).all()):
        out = step(*args)
    return out
