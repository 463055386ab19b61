"""torchrun data parallelism on CPU (gloo): two ranks follow the single-process run."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import torch

from geolab.cli.train import main
from geolab.train import load_checkpoint

REPO = Path(__file__).parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_gloo_ranks_match_one_process_with_the_same_global_batch(tmp_path):
    args = [
        "--task",
        "gyroscope",
        "--residual",
        "mgt",
        "--layers",
        "1",
        "--d-model",
        "16",
        "--heads",
        "2",
        "--steps",
        "6",
        "--batch-size",
        "8",
        "--n-train",
        "32",
        "--n-val",
        "8",
        "--warmup",
        "2",
        "--eval-every",
        "3",
        "--ckpt-every",
        "0",
        "--seed",
        "0",
        "--device",
        "cpu",
        "--no-progress",
    ]
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nnodes",
        "1",
        "--nproc_per_node",
        "2",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(free_port()),
        "-m",
        "geolab",
        "train",
        *args,
        "--out",
        str(tmp_path / "ddp"),
    ]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("done: step 6") == 1  # rank 0 alone reports
    assert main([*args, "--out", str(tmp_path / "one")]) == 0

    def rows(name):
        return [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").open()]

    ddp, one = rows("ddp"), rows("one")
    assert [r["step"] for r in ddp] == [r["step"] for r in one] == list(range(1, 7))
    for a, b in zip(ddp, one, strict=True):
        for key in ("loss", "grad_norm", "lr"):
            assert abs(a[key] - b[key]) <= 1e-5 * abs(b[key]) + 1e-7, (key, a, b)
    assert abs(ddp[-1]["val_mse"] - one[-1]["val_mse"]) <= 1e-5 * one[-1]["val_mse"]
    assert json.loads((tmp_path / "ddp" / "config.json").read_text())["world_size"] == 2
    state_ddp = load_checkpoint(tmp_path / "ddp" / "ckpt.pt")
    state_one = load_checkpoint(tmp_path / "one" / "ckpt.pt")
    assert len(state_ddp["rng"]) == 2 and state_ddp["world_size"] == 2
    for key, value in state_one["model"].items():
        assert torch.allclose(state_ddp["model"][key], value, rtol=1e-4, atol=1e-6), key
