"""The memory a model would need, checked before it is allocated (docs/design.md §7).

A too-large ``d_model`` or ``seq_len`` otherwise fails minutes later with an allocator traceback,
or not at all until the machine swaps. ``check_fits`` refuses it up front, with the estimate.

The estimate is a lower bound, so nothing that fits is refused; it counts, in float32,

    weights     L·(4W² + 4W) attention + L·(8W² + 5W) MLP + the embedding, head and positions
    training    ×4 of the weights: the weights, their gradients and AdamW's two moments
    activations (n_steps + 1)·B·S·D residual states (kept for the backward, or by the rank
                probe) + B·S·d_out outputs

with W the sublayers' width (the rule's ``sublayer_width``), and leaves out what depends on the
rule (gates, streams), the norms and the attention's internals. Available memory: free device
memory on CUDA, ``MemAvailable`` of /proc/meminfo on a Linux CPU, lowered to what the process's
address-space limit (RLIMIT_AS) leaves it; elsewhere nothing is checked.
"""

from pathlib import Path

import torch

from geolab.config import GeoConfig
from geolab.rules import rule_class

FLOAT_BYTES = 4
ADAMW_COPIES = 4  # weights, gradients, exp_avg, exp_avg_sq


def weight_count(cfg: GeoConfig) -> int:
    """A lower bound on the parameter count of ``GeoTransformer(cfg)`` (see the module doc)."""
    d, w = cfg.d_model, rule_class(cfg).sublayer_width(cfg)
    h = cfg.mlp_hidden(w)
    per_layer = 4 * w * w + 4 * w + (2 * w * h + h + w if cfg.mlp else 0)
    if cfg.vocab_size is not None:
        io = 2 * cfg.vocab_size * d
    else:
        io = (cfg.d_in + 1) * d + (d + 1) * cfg.d_out
    pos = cfg.seq_len * d if cfg.pos == "learned" else 0
    return cfg.n_layer * per_layer + io + pos


def estimate_bytes(cfg: GeoConfig, batch: int, seq_len: int, training: bool) -> int:
    """A lower bound on the bytes a forward (with ``training``: and backward and AdamW step) of a
    (batch, seq_len) input allocates (see the module docstring)."""
    d_out = cfg.vocab_size if cfg.vocab_size is not None else cfg.d_out
    states = (cfg.n_steps + 1) * batch * seq_len * cfg.d_model + batch * seq_len * d_out
    copies = ADAMW_COPIES if training else 1
    return FLOAT_BYTES * (copies * weight_count(cfg) + states)


def available_bytes(device: torch.device) -> int | None:
    """Free memory for tensors on ``device``, or None where it cannot be read: on a CPU the
    smaller of the machine's available memory and what this process's address-space limit
    (``ulimit -v``, RLIMIT_AS) leaves it."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    if device.type != "cpu":
        return None
    readings = (_meminfo("/proc/meminfo", "MemAvailable:"), _address_space_left())
    free = [n for n in readings if n is not None]
    return min(free) if free else None


def _meminfo(path: str, key: str) -> int | None:
    """The ``key`` line of a /proc file in bytes (the kernel reports kB), or None."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith(key):
            return int(line.split()[1]) * 1024
    return None


def _address_space_left() -> int | None:
    """RLIMIT_AS minus the address space this process already maps (VmSize), or None without
    a limit (or where neither can be read)."""
    try:
        import resource
    except ImportError:  # not POSIX
        return None
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    used = _meminfo("/proc/self/status", "VmSize:")
    if limit == resource.RLIM_INFINITY or used is None:
        return None
    return max(limit - used, 0)


def check_fits(
    cfg: GeoConfig,
    batch: int,
    seq_len: int,
    device: torch.device,
    training: bool,
    batch_shown: str | None = None,
) -> None:
    """ValueError, with the estimate, when the model and a (batch, seq_len) input need more
    memory than ``device`` has free. ``batch_shown`` is how the message names the batch when it
    is a setting of the user's (``TrainConfig.batch_size=64 (16 per process)``); else
    ``batch B``."""
    need, free = estimate_bytes(cfg, batch, seq_len, training), available_bytes(device)
    if free is None or need <= free:
        return
    what = "training" if training else "a forward pass"
    batch_shown = batch_shown or f"batch {batch}"
    raise ValueError(
        f"GeoConfig(n_layer={cfg.n_layer}, d_model={cfg.d_model}, seq_len={cfg.seq_len}) at "
        f"{batch_shown} x {seq_len} positions is not allowed here: {what} needs at least "
        f"{gib(need)} ({weight_count(cfg):,} weights and more), but {device} has {gib(free)} "
        "free; lower d_model, n_layer, seq_len or the batch"
    )


def check_allocation(need: int, what: str, hint: str, device: str = "cpu") -> None:
    """ValueError when ``what`` needs more than the ``need`` bytes ``device`` has free (tensors
    built outside a model: a task's samples); ``hint`` says what to lower."""
    free = available_bytes(torch.device(device))
    if free is not None and need > free:
        raise ValueError(
            f"{what} is not allowed here: it needs at least {gib(need)}, but {device} has "
            f"{gib(free)} free; {hint}"
        )


def gib(n: int) -> str:
    return f"{n / 2**30:.3g} GiB"
