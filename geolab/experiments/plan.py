"""Planning a protocol before running it: its training runs, their sizes and the GPU-hours.

Each protocol lists the models it trains (``module.planned(settings)`` -> [(label, GeoConfig)]).
The compute of one run is estimated as (Kaplan et al. 2020, "Scaling laws for neural language
models", §2.1, Table 1: forward 2N + 2·L·S·D per token, backward twice the forward)

    FLOPs ≈ 6 · (N + L·S·D) · tokens,      tokens = steps × batch_size × S,

with N the parameter count (embeddings included, counted exactly on the meta device), L the
layers, S the sequence length and D the width; validation passes (≈ 20 over training, a few
batches each) and the rank/β probes are left out. GPU-hours = FLOPs / (FLOP/s) / 3600 per seed,
summed over seeds.

The FLOP/s is measured when it can be: every sweep of the packed runner records, per device,
the runs per minute and the sustained FLOP/s it reached (all its workers together, per GPU) in
``OUT/throughput.json`` (:func:`record_throughput`), and a plan reads it back
(:func:`measured`): the record of this machine's GPU, else the latest GPU record. Without one,
``SUSTAINED_FLOPS`` = 1e14 FLOP/s is an assumption, not a measurement: one H100/H200-class GPU
sustaining ≈ 10 % of its ≈ 990 TFLOP/s dense bf16 peak, because models of width 128–512 run
kernels too small to fill it (launch- and memory-bound). Divide by the GPU count for the wall
time over several GPUs. A plan needs only sizes: the text corpora's vocabulary sizes are stated
(``runs.VOCAB_SIZES``), so it runs offline without the data.
"""

import json
from pathlib import Path

from geolab.model import param_count
from geolab.outputs import replace_atomically

THROUGHPUT = "throughput.json"

SUSTAINED_FLOPS = 1e14
ASSUMPTION = (
    "GPU-hours = 6·(N + L·S·D)·tokens / (1e14 FLOP/s) / 3600 per seed: N parameters, "
    "tokens = steps × batch × S (Kaplan et al. 2020, §2.1; validation and probes left out), "
    "1e14 FLOP/s = an assumed sustained bf16 throughput of one H100/H200-class GPU on these "
    "narrow models (≈ 10 % of its dense peak), not a measurement"
)


def n_params(cfg) -> int:
    """Exact trainable parameter count of ``GeoTransformer(cfg)`` (``model.param_count``)."""
    return param_count(cfg)


def train_flops(n: int, cfg, steps: int, batch_size: int) -> int:
    """6·(N + L·S·D)·tokens of training ``n`` parameters of ``cfg`` for ``steps`` steps."""
    return 6 * (n + cfg.n_layer * cfg.seq_len * cfg.d_model) * steps * batch_size * cfg.seq_len


def run_plan(label: str, cfg, train: dict, seeds: int, flops_per_s: float = SUSTAINED_FLOPS):
    """One planned run: its sizes, training tokens, FLOPs and GPU-hours over ``seeds`` seeds at
    ``flops_per_s``."""
    n = n_params(cfg)
    flops = train_flops(n, cfg, train["steps"], train["batch_size"])
    return {
        "run": label,
        "n_layer": cfg.n_layer,
        "d_model": cfg.d_model,
        "seq_len": cfg.seq_len,
        "n_params": n,
        "steps": train["steps"],
        "batch_size": train["batch_size"],
        "seeds": seeds,
        "flops": flops * seeds,
        "gpu_hours": flops * seeds / flops_per_s / 3600,
    }


def protocol_plan(module, settings: dict, seeds: int, flops_per_s: float = SUSTAINED_FLOPS):
    """:func:`run_plan` of every run the protocol trains at ``settings``."""
    if hasattr(module, "plan_rows"):  # runs that are no GeoTransformer give their own rows
        return module.plan_rows(settings, seeds, flops_per_s)
    return [
        run_plan(label, cfg, settings["train"], seeds, flops_per_s)
        for label, cfg in module.planned(settings)
    ]


def record_throughput(folder, throughput: dict, about: dict, note=print) -> Path | None:
    """Merge ``throughput`` (device -> {"runs_per_min", "flops_per_s", ...}, as
    ``pack.Sweep.throughput`` gives it) with ``about`` (protocol, scale, git, time) into
    ``folder/throughput.json``: one record per device, the newest kept. A damaged file is
    replaced, and a file that cannot be written is skipped, each with ``note(text)``: the
    throughput is a by-product and never costs the sweep its result. Returns the path (None
    when it was not written)."""
    path = Path(folder) / THROUGHPUT
    records, damaged = read_throughput(folder)
    if damaged:
        note(f"{damaged} and replaced")
    records.update({device: {**row, **about} for device, row in throughput.items()})
    records = {k: r for k, r in records.items() if _whole(r)}  # a sweep of no time says nothing
    text = json.dumps(records, indent=1, allow_nan=False) + "\n"
    try:
        replace_atomically(path, lambda tmp: tmp.write_text(text))
    except OSError as err:
        note(f"{path} was not written ({err.strerror}); the result does not need it")
        return None
    return path


def read_throughput(folder) -> tuple[dict, str | None]:
    """(device -> record, note) of ``folder/throughput.json``: the records that are whole (a
    finite, positive FLOP/s and runs per minute), and a note naming what was damaged and left
    out (None when nothing was). A missing file is no records and no note."""
    path = Path(folder) / THROUGHPUT
    if not path.is_file():
        return {}, None
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        why = err.strerror if isinstance(err, OSError) else type(err).__name__
        return {}, f"{path} is damaged ({why}); it is ignored"
    if not isinstance(records, dict):
        return {}, f"{path} is damaged (not a JSON object); it is ignored"
    whole = {k: r for k, r in records.items() if _whole(r)}
    bad = sorted(set(records) - set(whole))
    note = f"{path}: the damaged record(s) {', '.join(bad)} are ignored" if bad else None
    return whole, note


def _whole(record) -> bool:
    def rate(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < float("inf")

    return isinstance(record, dict) and all(
        rate(record.get(k)) for k in ("flops_per_s", "runs_per_min")
    )


def measured(folder, device: str, note=None) -> tuple[float, str] | None:
    """(FLOP/s, where it comes from) of ``folder/throughput.json``: ``device``'s record when it
    is a GPU, else the latest GPU record; None without one. A damaged file or record is left
    out, and ``note(text)`` says so."""
    records, damaged = read_throughput(folder)
    if damaged and note is not None:
        note(damaged)
    path = Path(folder) / THROUGHPUT
    gpus = {k: r for k, r in records.items() if k.startswith("cuda")}
    if device in gpus:
        name = device
    elif gpus:
        name = max(gpus, key=lambda k: str(gpus[k].get("finished_utc", "")))
    else:
        return None
    r = gpus[name]
    return r["flops_per_s"], (
        f"GPU-hours = 6·(N + L·S·D)·tokens / ({r['flops_per_s']:.3g} FLOP/s) / 3600 per seed "
        f"(Kaplan et al. 2020, §2.1), the FLOP/s measured on {name} per {path} "
        f"({r.get('protocol', '?')} at scale {r.get('scale', '?')!r}, {r.get('jobs', '?')} "
        f"worker(s), {r['runs_per_min']:.3g} runs/min, {r.get('finished_utc', '?')})"
    )


def plan_text(name: str, scale: str, rows: list[dict], source: str = ASSUMPTION) -> str:
    """The dry-run printout: one line per run, the total and where its FLOP/s comes from."""
    lines = [
        f"{name} at scale {scale!r}: {len(rows)} trained runs",
        f"{'run':<28} {'L':>4} {'D':>5} {'S':>5} {'params':>12} {'steps':>7} {'batch':>6} "
        f"{'seeds':>5} {'GPU-h':>8}",
    ]
    for r in rows:
        lines.append(
            f"{r['run']:<28} {r['n_layer']:>4} {r['d_model']:>5} {r['seq_len']:>5} "
            f"{r['n_params']:>12,} {r['steps']:>7} {r['batch_size']:>6} {r['seeds']:>5} "
            f"{r['gpu_hours']:>8.2f}"
        )
    total = sum(r["gpu_hours"] for r in rows)
    lines += [f"total ≈ {total:.1f} GPU-hours ({total / 8:.1f} h wall on 8 GPUs)", source]
    return "\n".join(lines)
