"""Training throughput: tokens per second of full optimizer steps, eager and ``torch.compile``.

One step is what ``geolab.train`` does per batch: forward (bf16 autocast on CUDA), the task loss
plus the model's aux loss, backward, gradient clipping at 1.0, AdamW with decoupled weight decay
on matrices (``geolab.train.param_groups``). Models:
* the E∆ protocol's ≈1.79M-parameter configurations (docs/design.md §8) on ``gyroscope``
  (S = 255, d = 16): preln 9 layers, ddl 8, mhc 9, jpmhc 7 (D = 512), edelta 6, D = 128
  otherwise, 4 heads;
* a 12-layer ``mgt`` character language model on tiny-shakespeare (D = 128, S = 128, 4 heads), or
  on copy-task tokens (vocabulary 65, S = 127) when the corpus is not on disk (notes say which).
Batch 64 on a GPU (the protocol's); 8 on a CPU, where tokens/s no longer depends on the batch and
a step of 64 would take tens of seconds. Eager and compiled runs of a model alternate round by
round; their ratio is the median of per-round ratios. A compile that fails becomes a note, not a
crash. ``--quick`` uses tiny models and skips compilation (minutes per model on a CPU). Times use
the suite's clock: on a CPU, process CPU time, so tokens/s are per CPU-second of this process
(with one thread, what an idle machine would show). The script is device-agnostic: on CUDA it
runs in bf16 autocast, times wall-clock with synchronisation, and reports there unchanged.
"""

import math
import statistics
import time
from pathlib import Path

import torch

from bench.timing import bracketed, seconds
from geolab.config import GeoConfig
from geolab.model import GeoTransformer, count_params
from geolab.tasks import get_task
from geolab.train import param_groups

E_DELTA = {"preln": 9, "ddl": 8, "mhc": 9, "jpmhc": 7, "edelta": 6}
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def _device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _lm_task(quick: bool):
    """tiny-shakespeare windows of 128 characters, or copy-task tokens without the corpus."""
    if not quick:
        try:
            return get_task("shakespeare", seq_len=128, data_dir=SHARED_DATA), "tiny-shakespeare"
        except (OSError, ValueError, RuntimeError) as err:
            note = f"copy-task tokens, vocabulary 65 ({type(err).__name__}: no corpus)"
    else:
        note = "copy-task tokens (quick)"
    return get_task("copy", m=64 if not quick else 8, vocab_size=65, n_train=256), note


def _trainer(cfg: GeoConfig, task, batch: int, device: torch.device, compile_: bool):
    """A closure running one optimizer step on a fixed batch, and the model's parameter count."""
    torch.manual_seed(0)
    model = GeoTransformer(cfg).to(device)
    opt = torch.optim.AdamW(param_groups(model, 0.1), lr=1e-3)
    net = torch.compile(model) if compile_ else model
    idx = torch.arange(batch) % task.n_samples("train")
    x, y, mask = (None if t is None else t.to(device) for t in task.batch("train", idx))
    bf16 = device.type == "cuda"

    def step():
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            out = net(x)
        loss = task.loss(out, y, mask) + model.aux_loss().float()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    return step, count_params(model), x.shape[0] * x.shape[1]


def _model_rows(label, cfg, task, batch, device, quick, rounds) -> list[dict]:
    eager, n_params, tokens = _trainer(cfg, task, batch, device, compile_=False)
    eager()
    eager_s = statistics.median(seconds(eager) for _ in range(rounds))
    rows = [
        {
            "group": "train",
            "name": f"{label} eager",
            "value": tokens / eager_s,
            "unit": "tokens/s",
            "target": None,
            "met": None,
            "notes": f"{n_params / 1e6:.2f}M params, batch {batch}×{cfg.seq_len}, "
            f"{device.type}{' bf16' if device.type == 'cuda' else ''}",
        }
    ]
    if quick:
        value, notes = None, "compile skipped in --quick"
    else:
        try:
            compiled, _, _ = _trainer(cfg, task, batch, device, compile_=True)
            start = time.perf_counter()
            compiled()
            first = time.perf_counter() - start
            ratios = bracketed(eager, {"compiled": compiled}, rounds=rounds)["compiled"]
            value = tokens / eager_s / statistics.median(ratios)
            notes = (
                f"compiled/eager step time {statistics.median(ratios):.2f}× "
                f"(median of {rounds}); first call incl. compilation {first:.0f} s wall"
            )
        except Exception as err:  # inductor needs a C++ toolchain; report, don't crash
            value = None
            notes = f"torch.compile failed: {type(err).__name__}: {str(err)[:160]}"
    rows.append(
        {
            "group": "train",
            "name": f"{label} torch.compile",
            "value": value,
            "unit": "tokens/s",
            "target": None,
            "met": None,
            "notes": notes,
        }
    )
    return rows


def run(quick: bool) -> list[dict]:
    device = _device()
    batch = 64 if device.type == "cuda" else (2 if quick else 8)
    rounds = 1 if quick else 3
    steps = 16 if quick else 256
    gyro = get_task("gyroscope", steps=steps, n_train=max(batch, 64), n_val=8)
    rows = []
    for rule, n_layer in E_DELTA.items():
        if quick and rule not in ("preln", "edelta"):
            continue
        d = 512 if rule == "jpmhc" else 128
        cfg = GeoConfig(
            residual=rule,
            n_layer=2 if quick else n_layer,
            d_model=32 if quick else d,
            n_head=4,
            **gyro.model_fields(),
        )
        label = f"gyroscope {rule} {cfg.n_layer}L D={cfg.d_model}"
        rows += _model_rows(label, cfg, gyro, batch, device, quick, rounds)
    lm, source = _lm_task(quick)
    cfg = GeoConfig(
        residual="mgt",
        n_layer=2 if quick else 12,
        d_model=32 if quick else 128,
        n_head=4,
        **lm.model_fields(),
    )
    lm_rows = _model_rows(
        f"LM mgt {cfg.n_layer}L D={cfg.d_model}", cfg, lm, batch, device, quick, rounds
    )
    for row in lm_rows:
        row["notes"] += f"; {source}"
    rows += lm_rows
    for row in rows:
        if row["value"] is not None and not math.isfinite(row["value"]):
            raise ValueError(f"non-finite throughput in {row['name']}")
    return rows
