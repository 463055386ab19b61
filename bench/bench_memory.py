"""Memory: peak memory of one training step of a 200-layer, D = 256 stack, with and without
gradient checkpointing (``GeoConfig.grad_checkpoint``, which checkpoints the sublayers).

Each variant runs in a fresh Python process, so no allocator cache or earlier peak leaks between
them. On a CPU the child resets the kernel's peak-RSS counter after building the model and the
batch (``/proc/self/clear_refs``, Linux ≥ 4.0), runs one forward+backward step and reads the peak
back (``VmHWM``); the step's peak is that minus the resident set before the step. That is the
honest number for a CPU: what the operating system had to provide. Without that interface it
falls back to ``ru_maxrss``, which only sees growth above the setup peak. On CUDA the child uses
``torch.cuda.max_memory_allocated`` around the step instead. Shape: preln, 200 layers, D = 256,
4 heads, S = 64, batch 4, vector input and output of width D.
"""

import json
import re
import resource
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def _status_mb(field: str) -> float:
    status = Path("/proc/self/status").read_text()
    return int(re.search(rf"{field}:\s+(\d+) kB", status).group(1)) / 1024


def _reset_peak() -> tuple[float, str]:
    """Resident MiB now, after resetting the peak counter; the method used to read the peak."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return _status_mb("VmRSS"), "VmHWM"
    except (OSError, AttributeError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "ru_maxrss"


def _peak_mb(how: str) -> float:
    if how == "VmHWM":
        return _status_mb("VmHWM")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def child(spec: dict) -> dict:
    """One step of the model in ``spec``, in a fresh process (``python -m bench.bench_memory``)."""
    from geolab.config import GeoConfig
    from geolab.model import GeoTransformer, count_params

    torch.set_num_threads(spec["threads"])
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    d, seq = spec["d_model"], spec["seq_len"]
    cfg = GeoConfig(
        residual=spec["residual"],
        n_layer=spec["n_layer"],
        d_model=d,
        n_head=4,
        seq_len=seq,
        d_in=d,
        d_out=d,
        grad_checkpoint=spec["grad_checkpoint"],
    )
    for n_layer in (1, cfg.n_layer):  # a 1-layer warm-up loads lazy code paths outside the peak
        torch.manual_seed(0)
        model = GeoTransformer(cfg.replace(n_layer=n_layer)).to(device)
        x = torch.randn(spec["batch"], seq, d, device=device)
        if n_layer < cfg.n_layer:
            model(x).square().mean().backward()
            del model, x
    before, how = _reset_peak()
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    out = model(x)
    (out.square().mean() + model.aux_loss()).backward()
    result = {"params": count_params(model), "rss_setup_mb": before, "rss_peak_mb": _peak_mb(how)}
    if device.type == "cuda":
        torch.cuda.synchronize()
        result["step_mb"] = (torch.cuda.max_memory_allocated() - base) / 2**20
        result["how"] = "torch.cuda.max_memory_allocated"
    else:
        result["step_mb"] = result["rss_peak_mb"] - before
        result["how"] = f"peak RSS ({how})"
    return result


def _measure(spec: dict) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.bench_memory", json.dumps(spec)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if proc.returncode:
        raise RuntimeError(f"memory child failed: {proc.stderr.strip()[-400:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(quick: bool) -> list[dict]:
    shape = dict(residual="preln", n_layer=200, d_model=256, seq_len=64, batch=4)
    if quick:
        shape.update(n_layer=4, d_model=32, seq_len=16, batch=2)
    shape["threads"] = torch.get_num_threads()
    plain = _measure({**shape, "grad_checkpoint": False})
    ckpt = _measure({**shape, "grad_checkpoint": True})
    label = (
        f"{shape['residual']} {shape['n_layer']}L D={shape['d_model']} S={shape['seq_len']} "
        f"B={shape['batch']}"
    )
    grads = plain["params"] * 4 / 2**20  # float32 gradients, one per parameter
    rows = []
    for name, r in (("without", plain), ("with", ckpt)):
        rows.append(
            {
                "group": "memory",
                "name": f"step peak, {label}, {name} checkpointing",
                "value": r["step_mb"],
                "unit": "MiB",
                "target": None,
                "met": None,
                "notes": f"{r['how']}; {r['params'] / 1e6:.1f}M params; process peak "
                f"{r['rss_peak_mb']:.0f} MiB, {r['rss_setup_mb']:.0f} MiB before the step",
            }
        )
    rows.append(
        {
            "group": "memory",
            "name": f"checkpointed / plain step peak, {label}",
            "value": ckpt["step_mb"] / plain["step_mb"] if plain["step_mb"] > 0 else None,
            "unit": "×",
            "target": None,
            "met": None,
            "notes": f"both include the {grads:.0f} MiB of parameter gradients; without them "
            f"(activations and temporaries) {plain['step_mb'] - grads:.0f} → "
            f"{ckpt['step_mb'] - grads:.0f} MiB",
        }
    )
    return rows


if __name__ == "__main__":
    print(json.dumps(child(json.loads(sys.argv[1]))))
