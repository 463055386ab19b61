"""The trainer's CUDA path against its CPU numbers: float32, bf16 autocast, torch.compile,
gradient checkpointing, DDP of one process, resume, and the packed runner's workers on a GPU.

Run with ``pytest -m gpu`` (``scripts/gpu_check.sh`` does); skipped without CUDA. Tolerances:
float32 on CUDA follows the CPU to float rounding (TF32 off, the default for matmuls), so loss
curves agree to 1e-3 relative over 20 steps; bf16 autocast rounds every product to 8 bits of
mantissa, so its curve agrees with float32 to 10 %.
"""

import json

import pytest
import torch
import torch.distributed as dist

from geolab.config import GeoConfig
from geolab.experiments import get_protocol, pack, runs
from geolab.experiments.runner import deterministic
from geolab.tasks import get_task
from geolab.train import TrainConfig, train
from geolab.train.evaluate import autocast

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]
STEPS = 20
RULES = ["preln", "ddl", "mhc", "jpmhc", "edelta", "mgt"]


def gyroscope():
    return get_task("gyroscope", seed=0, steps=16, n_train=256, n_val=64)


def fit(device: str, rule: str = "preln", tmp=None, callback=None, **changes):
    """(training losses, final validation metrics) of a small gyroscope run on ``device``."""
    task = gyroscope()
    ckpt = changes.pop("grad_checkpoint", False)
    cfg = GeoConfig(
        residual=rule, n_layer=2, d_model=32, n_head=4, grad_checkpoint=ckpt, **task.model_fields()
    )
    base = {"steps": STEPS, "batch_size": 16, "warmup": 2, "eval_every": 0, "ckpt_every": 0}
    base |= {"device": device, "bf16": False, "seed": 3, "out_dir": tmp and str(tmp)}
    base["progress"] = False
    tc = TrainConfig(**{**base, **changes})
    with deterministic():
        res = train(cfg, task, tc, callback=callback)
    return [row["loss"] for row in res.history], res.metrics


class Interrupt(Exception):
    pass


def stop_halfway(record):
    if record["step"] == STEPS // 2:
        raise Interrupt


def close(a: list[float], b: list[float], rel: float) -> bool:
    pairs = zip(a, b, strict=True)
    return len(a) == len(b) and all(abs(x - y) <= rel * abs(y) + 1e-7 for x, y in pairs)


@pytest.mark.parametrize("rule", RULES)
def test_float32_on_cuda_follows_the_cpu(rule):
    gpu, gpu_val = fit("cuda", rule)
    cpu, cpu_val = fit("cpu", rule)
    assert close(gpu, cpu, 1e-3), (rule, gpu, cpu)
    assert gpu_val["mse"] == pytest.approx(cpu_val["mse"], rel=1e-3)


def test_bf16_autocast_runs_in_bf16_and_follows_float32():
    x = torch.randn(4, 8, 16, device="cuda")
    with autocast(torch.device("cuda"), True):
        assert torch.nn.Linear(16, 16).cuda()(x).dtype == torch.bfloat16
    bf16, bf16_val = fit("cuda", bf16=True)
    fp32, fp32_val = fit("cuda")
    assert bf16 != fp32  # the rounding is there
    assert close(bf16, fp32, 0.1)
    assert bf16_val["mse"] == pytest.approx(fp32_val["mse"], rel=0.1)


def test_compile_on_cuda_follows_eager():
    compiled, compiled_val = fit("cuda", compile=True)
    eager, eager_val = fit("cuda")
    assert close(compiled, eager, 1e-3)
    assert compiled_val["mse"] == pytest.approx(eager_val["mse"], rel=1e-3)


@pytest.mark.parametrize("rule", ["preln", "mgt"])
def test_gradient_checkpointing_on_cuda_changes_nothing(rule):
    ckpt, ckpt_val = fit("cuda", rule, grad_checkpoint=True)
    plain, plain_val = fit("cuda", rule)
    assert close(ckpt, plain, 1e-5)
    assert ckpt_val["mse"] == pytest.approx(plain_val["mse"], rel=1e-5)


def test_ddp_of_one_nccl_process_follows_the_plain_run(tmp_path):
    plain, plain_val = fit("cuda")
    store = f"file://{tmp_path / 'store'}"
    dist.init_process_group("nccl", init_method=store, rank=0, world_size=1)
    try:
        ddp, ddp_val = fit("cuda")  # a process group is up: the trainer wraps the model in DDP
    finally:
        dist.destroy_process_group()
    assert close(ddp, plain, 1e-5)
    assert ddp_val["mse"] == pytest.approx(plain_val["mse"], rel=1e-5)


def test_resume_on_cuda_continues_the_uninterrupted_run(tmp_path):
    whole, whole_val = fit("cuda", tmp=tmp_path / "whole", ckpt_every=STEPS // 2)
    with pytest.raises(Interrupt):  # stopped after the checkpoint of step 10
        fit("cuda", tmp=tmp_path / "cut", ckpt_every=STEPS // 2, callback=stop_halfway)
    resumed, resumed_val = fit("cuda", tmp=tmp_path / "cut", ckpt_every=STEPS // 2, resume=True)
    lines = (tmp_path / "cut" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == list(range(1, STEPS + 1))
    assert close([json.loads(line)["loss"] for line in lines], whole, 1e-6)
    assert resumed_val["mse"] == pytest.approx(whole_val["mse"], rel=1e-6)


def test_packed_workers_on_the_gpu_give_the_numbers_of_one_process():
    settings = dict(get_protocol("language_model").SCALES["tiny"])
    settings["train"] = {**settings["train"], "device": "cuda"}
    settings["rules"] = ["preln", "mgt"]
    with pack.sweep() as alone, deterministic():
        one = runs.train_seeds(settings, [42, 123], lambda m: None)
    with pack.sweep() as packed, deterministic():
        two = runs.train_seeds({**settings, "jobs": 2}, [42, 123], lambda m: None)
    for seed in ("42", "123"):
        for rule in settings["rules"]:
            a, b = one[seed][rule], two[seed][rule]
            assert a["val"]["loss"] == pytest.approx(b["val"]["loss"], rel=1e-5)
            assert close(a["curve"], b["curve"], 1e-5)
    devices = {r["device"] for r in alone.trained + packed.trained}
    assert len(devices) == 1 and devices.pop().startswith("cuda")
    assert {r["gpu"] for r in packed.trained} <= set(pack.visible_gpus(settings))
