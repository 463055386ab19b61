"""Run directories: config.json, metrics.jsonl and ckpt.pt, written atomically (docs/design.md §7).

A checkpoint holds the model, the optimizer, the step, the data generator and every rank's RNG
states, so a resumed run continues exactly. Every ``torch.load`` here uses ``weights_only=True``.
"""

import json
import os
from dataclasses import asdict
from pathlib import Path

import torch
import torch.distributed as dist

CKPT = "ckpt.pt"
METRICS = "metrics.jsonl"
CONFIG = "config.json"


def check_out_dir(out: Path | None, resume: bool) -> None:
    """Refuse to mix runs: a fresh run needs an empty or new directory, a resume needs ckpt.pt."""
    if out is None:
        if resume:
            raise ValueError("TrainConfig.resume=True needs out_dir (where ckpt.pt lives)")
        return
    if out.exists() and not out.is_dir():
        raise ValueError(f"TrainConfig.out_dir={str(out)!r} exists and is not a directory")
    if resume and not (out / CKPT).is_file():
        raise ValueError(f"TrainConfig.resume=True but {str(out / CKPT)!r} does not exist")
    if not resume and any((out / name).exists() for name in (CKPT, METRICS, CONFIG)):
        raise ValueError(
            f"TrainConfig.out_dir={str(out)!r} already holds a run; pass "
            "resume=True (--resume) to continue it or choose another directory"
        )


def atomic_write(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    write(tmp)
    os.replace(tmp, path)


def rng_state(device: torch.device) -> dict:
    state = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: dict, device: torch.device) -> None:
    torch.set_rng_state(state["cpu"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def load_checkpoint(path, map_location="cpu") -> dict:
    """A geolab checkpoint as a dict (step, model, optimizer, data_rng, rng, model_cfg, ...)."""
    return torch.load(path, map_location=map_location, weights_only=True)


def read_history(path: Path, upto: int) -> list[dict]:
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [row for row in rows if row["step"] <= upto]


def save_checkpoint(path, raw, opt, data_gen, step, model_cfg, tc, device, world, lead) -> None:
    rng = [rng_state(device)]
    if world > 1:
        rng = [None] * world
        dist.all_gather_object(rng, {k: v.cpu() for k, v in rng_state(device).items()})
    if not lead:
        return
    state = {
        "step": step,
        "model": raw.state_dict(),
        "optimizer": opt.state_dict(),
        "data_rng": data_gen.get_state(),
        "rng": rng,
        "model_cfg": model_cfg.to_dict(),
        "train_cfg": asdict(tc),
        "world_size": world,
    }
    atomic_write(path, lambda p: torch.save(state, p))
