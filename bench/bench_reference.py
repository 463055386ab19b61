"""geolab vs the public E∆ code on its own gyroscope setup (optional; needs a local checkout).

    python -m bench.bench_reference --reference PATH [--rounds 7] [--out DIR]

PATH is a local checkout of github arash-shahmansoori/edelta (its ``src/`` package is imported
from there; nothing of it is copied into geolab, and no test needs it). One training step is the
same for every model: forward on a fixed gyroscope batch of 16 × 255 (d = 16), MSE plus the
model's gate regulariser, backward, gradient clipping at 1.0, AdamW (lr 1e-3, decay 0.1 on
matrices). Models, all D = 128, 4 heads, as the reference's ``--match_proposed_params`` table:
the reference's E∆-MHC-Geo (6 layers) and GPT (9 layers); geolab's ``edelta`` in
``flavor="reference"`` and in its own causal full-width flavor (6 layers), and geolab's ``preln``
(9 layers). All run interleaved in one process on one torch thread, the order rotated each round;
each ratio is the median over rounds of geolab's time / the reference model's time in that round.
Targets (issue 12): reference flavor ≤ 1.0×, geolab flavor ≤ 1.25× (both vs the reference E∆),
preln ≤ 1.0× (vs the reference GPT). With ``--out DIR`` (e.g. ``bench``) the rows join the suite's
``results.json`` and ``RESULTS.md`` there as the "reference" group; ``python -m bench --only …``
keeps them, a full ``python -m bench`` run starts the files afresh.
"""

import argparse
import contextlib
import datetime
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from bench.__main__ import machine_info, markdown
from bench.bench_train import _trainer
from bench.timing import interleaved, median_ratio, set_clock, spread
from geolab.config import GeoConfig
from geolab.tasks import get_task

BATCH, SEQ, DIM, D, HEADS = 16, 255, 16, 128, 4
# (name, geolab model fields, reference model it is compared with, target)
GEOLAB = (
    (
        "edelta reference flavor",
        dict(residual="edelta", flavor="reference", n_layer=6),
        "edelta",
        1.0,
    ),
    ("edelta geolab flavor", dict(residual="edelta", n_layer=6), "edelta", 1.25),
    ("preln", dict(residual="preln", n_layer=9), "gpt2", 1.0),
)
REFERENCE_LAYERS = {"edelta": 6, "gpt2": 9}


def _reference_step(path: Path, model_type: str, x: torch.Tensor, y: torch.Tensor):
    """A step closure for the reference's ``create_model`` (its argparse fields as in its CLI)."""
    sys.path.insert(0, str(path))
    from src.training.train_continuous import create_model

    args = argparse.Namespace(
        model_type=model_type,
        n_layer=REFERENCE_LAYERS[model_type],
        n_embd=D,
        n_head=HEADS,
        n_streams=4,
        dropout=0.0,
        geo_hidden_ratio=4,
        gate_reg_weight=0.1,
        init_gate_bias=0.0,
        match_proposed_params=True,
        geo_hidden_dim=48,
    )
    torch.manual_seed(0)
    with contextlib.redirect_stdout(io.StringIO()):  # it prints its configuration
        model = create_model(args, DIM, SEQ + 1)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest}], lr=1e-3)
    regularised = hasattr(model.core, "get_gate_regularization_loss")

    def step():
        _, loss = model(x, y)
        if regularised:
            loss = loss + model.core.get_gate_regularization_loss()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    return step, sum(p.numel() for p in model.parameters())


def measure(path: Path, rounds: int) -> list[dict]:
    task = get_task("gyroscope", flavor="reference", n_train=BATCH, n_val=BATCH)
    x, y, _ = task.batch("train", torch.arange(BATCH))
    fns, params = {}, {}
    for model_type in REFERENCE_LAYERS:
        fns[f"reference {model_type}"], params[f"reference {model_type}"] = _reference_step(
            path, model_type, x, y
        )
    for name, fields, _, _ in GEOLAB:
        cfg = GeoConfig(d_model=D, n_head=HEADS, **task.model_fields(), **fields)
        fns[name], params[name], _ = _trainer(cfg, task, BATCH, torch.device("cpu"), False)
    times = interleaved(fns, rounds=rounds)
    rows = []
    for name, fields, ref, target in GEOLAB:
        ratios = [a / b for a, b in zip(times[name], times[f"reference {ref}"], strict=True)]
        value = median_ratio(times[name], times[f"reference {ref}"])
        rows.append(
            {
                "group": "reference",
                "name": f"geolab {name} {fields['n_layer']}L / reference {ref} "
                f"{REFERENCE_LAYERS[ref]}L step (D={D}, batch {BATCH}×{SEQ})",
                "value": value,
                "unit": "× time",
                "target": f"≤ {target}×",
                "met": value <= target,
                "notes": f"{spread(ratios)}; geolab {statistics.median(times[name]) * 1e3:.0f} ms, "
                f"reference {statistics.median(times[f'reference {ref}']) * 1e3:.0f} ms; "
                f"params {params[name] / 1e6:.3f}M vs {params[f'reference {ref}'] / 1e6:.3f}M",
            }
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_reference", description=__doc__)
    parser.add_argument("--reference", type=Path, required=True, help="checkout of the E∆ code")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path, help="merge the rows into DIR/results.json, RESULTS.md")
    args = parser.parse_args(argv)
    if not (args.reference / "src" / "training" / "train_continuous.py").is_file():
        parser.error(f"--reference {args.reference}: no src/training/train_continuous.py there")
    torch.set_num_threads(1)
    set_clock("cpu")
    start = time.perf_counter()
    rows = measure(args.reference.resolve(), args.rounds)
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    for row in rows:
        row["notes"] += f"; load average {load}"
        print(f"{row['name']}: {row['value']:.3f}× (target {row['target']}); {row['notes']}")
    if args.out:
        _merge(args.out, rows, time.perf_counter() - start)


def _merge(out: Path, rows: list[dict], seconds: float) -> None:
    """Replace the "reference" rows of ``out/results.json`` and rewrite ``out/RESULTS.md``."""
    path = out / "results.json"
    results = json.loads(path.read_text()) if path.exists() else {"modules": {}, "rows": []}
    results["rows"] = [r for r in results["rows"] if r["group"] != "reference"] + rows
    results["modules"]["reference"] = {
        "quick": False,
        "seconds": round(seconds, 1),
        "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "error": None,
    }
    results.setdefault("quick", False)
    results.setdefault("generated", results["modules"]["reference"]["finished"])
    results.setdefault("machine", machine_info())
    path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    (out / "RESULTS.md").write_text(markdown(results))
    print(f"[bench] reference rows written to {path} and {out / 'RESULTS.md'}")


if __name__ == "__main__":
    main()
