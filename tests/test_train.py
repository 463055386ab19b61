"""The trainer (docs/design.md §7): learning, exact resume, the NaN guard, checkpoints, CLI and
bad input."""

import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
import torch.nn.functional as F
from conftest import REPO, TINY_TRAIN

from geolab.cli.train import main
from geolab.config import GeoConfig
from geolab.tasks import get_task
from geolab.train import (
    TrainConfig,
    TrainingDiverged,
    evaluate,
    load_checkpoint,
    lr_at,
    param_groups,
    train,
)

QUICK = {"warmup": 2, "eval_every": 0, "ckpt_every": 0, "device": "cpu"}


def tiny(task, rule="preln", **fields):
    base = {"n_layer": 1, "d_model": 16, "n_head": 2}
    return GeoConfig(residual=rule, **{**base, **task.model_fields(), **fields})


@pytest.fixture(scope="module")
def gyro():
    return get_task("gyroscope", seed=0, steps=12, n_train=64, n_val=16)


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("steps", 0, "steps=0"),
        ("steps", -3, "steps=-3"),
        ("batch_size", 0, "batch_size=0"),
        ("lr", -1e-3, "lr=-0.001"),
        ("lr", math.nan, "lr=nan"),
        ("min_lr", 1.0, r"lr=0.001 with TrainConfig.min_lr=1.0 is not allowed; the peak rate"),
        ("min_lr", -1.0, r"min_lr=-1.0 is not allowed; must be a finite number >= 0"),
        ("clip", 0.0, "clip=0.0"),
        ("device", "tpu", "device='tpu' .* auto, cpu, cuda, cuda:N, mps"),
        ("eval_batches", 0, "eval_batches=0"),
        ("betas", (0.9, 1.0), "betas"),
    ],
)
def test_train_config_rejects_bad_values(field, value, match):
    with pytest.raises(ValueError, match=f"TrainConfig.{match}"):
        TrainConfig(**{field: value})


def test_defaults_are_the_edelta_protocol():
    tc = TrainConfig()
    assert (tc.steps, tc.batch_size, tc.lr, tc.min_lr, tc.warmup) == (2000, 64, 1e-3, 1e-4, 100)
    assert (tc.weight_decay, tc.clip) == (0.1, 1.0)


def test_lr_schedule_warmup_then_cosine():
    tc = TrainConfig(steps=110, warmup=10, lr=1e-3, min_lr=1e-4)
    assert lr_at(0, tc) == pytest.approx(1e-4) and lr_at(9, tc) == pytest.approx(1e-3)
    assert lr_at(10, tc) == pytest.approx(1e-3)
    assert lr_at(60, tc) == pytest.approx(0.55e-3)  # cosine midpoint: (lr + min_lr) / 2
    assert lr_at(109, tc) == pytest.approx(1e-4 + 0.45e-3 * (1 + math.cos(math.pi * 0.99)))
    lrs = [lr_at(s, tc) for s in range(10, 110)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:], strict=False))


def test_weight_decay_only_on_matrices(gyro):
    from geolab.model import GeoTransformer

    model = GeoTransformer(tiny(gyro, "mgt"))
    decay, plain = param_groups(model, 0.1)
    assert decay["weight_decay"] == 0.1 and plain["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decay["params"]) and all(p.dim() < 2 for p in plain["params"])
    assert len(decay["params"]) + len(plain["params"]) == len(list(model.parameters()))


def test_loss_falls_on_copy():
    task = get_task("copy", seed=0, m=6, vocab_size=6, n_train=512, n_val=64)
    cfg = tiny(task, n_layer=2, d_model=32)
    result = train(cfg, task, TrainConfig(steps=60, batch_size=32, lr=1e-2, **QUICK))
    first = result.history[0]["loss"]
    assert first == pytest.approx(math.log(6), rel=0.1)  # chance level at init
    assert result.metrics["loss"] < 0.3 * first and result.metrics["acc"] > 0.8


def test_loss_falls_on_gyroscope(gyro):
    result = train(
        tiny(gyro, d_model=32), gyro, TrainConfig(steps=50, batch_size=16, lr=3e-3, **QUICK)
    )
    assert result.metrics["mse"] < 0.4 * result.history[0]["loss"]
    assert set(result.metrics) == {"step", "mse", "norm_dev", "norm_dev_ref"}


def _inversion_run(n_layer: int, steps: int):
    task = get_task("inversion", seed=0, dim=64, seq_len=8, n_train=500, n_val=100)
    cfg = tiny(task, "edelta", n_layer=n_layer, d_model=64)
    tc = TrainConfig(steps=steps, batch_size=32, lr=1e-3, **{**QUICK, "warmup": 5})
    return train(cfg, task, tc)


def test_inversion_with_edelta_leaves_the_midpoint_towards_reflection():
    """E∆ claim (Shahmansoori 2026, experiments): on y = −x the gate γ leaves ½ towards the
    Householder branch.

    A 60-step, one-layer run (E∆ task width 64, protocol lr 1e-3): γ ≈ 0.47, cos ≈ 0.79.
    """
    result = _inversion_run(n_layer=1, steps=60)
    assert result.metrics["gamma"] < 0.5 and result.metrics["cos"] > 0.5
    assert result.history[-1]["aux"] < result.history[0]["aux"]  # regulariser 4γ(1−γ) fell


@pytest.mark.slow
def test_inversion_with_edelta_collapses_the_gate():
    """Two layers, 400 steps: γ ≈ 0.006 and cos ≈ 0.97 (the paper: γ → 0.05, cos 0.96)."""
    result = _inversion_run(n_layer=2, steps=400)
    assert result.metrics["gamma"] < 0.1 and result.metrics["cos"] > 0.9


def test_evaluate_matches_a_direct_computation(gyro):
    from geolab.model import GeoTransformer

    torch.manual_seed(0)
    model = GeoTransformer(tiny(gyro))
    got = evaluate(model, gyro, batch_size=5)
    with torch.no_grad():
        out = model(gyro.x["val"])
    assert got["mse"] == pytest.approx(F.mse_loss(out, gyro.y["val"]).item(), rel=1e-5)
    dev = (out.norm(dim=-1) - gyro.x["val"].norm(dim=-1)).abs() / gyro.x["val"].norm(dim=-1)
    assert got["norm_dev"] == pytest.approx(dev.mean().item(), rel=1e-5)
    assert model.training  # evaluate restores the mode


def test_resume_is_bit_exact(gyro, tmp_path):
    tc = TrainConfig(steps=8, batch_size=8, lr=3e-3, **{**QUICK, "eval_every": 3, "ckpt_every": 4})
    cfg = tiny(gyro, "mgt")
    straight = train(cfg, gyro, TrainConfig(**{**vars(tc), "out_dir": str(tmp_path / "a")}))

    class Interrupt(Exception):
        pass

    def stop_at_4(record):
        if record["step"] == 4:
            raise Interrupt

    split = {**vars(tc), "out_dir": str(tmp_path / "b")}
    with pytest.raises(Interrupt):
        train(cfg, gyro, TrainConfig(**split), callback=stop_at_4)
    assert load_checkpoint(tmp_path / "b" / "ckpt.pt")["step"] == 4
    resumed = train(cfg, gyro, TrainConfig(**{**split, "resume": True}))
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert [h["loss"] for h in straight.history] == [h["loss"] for h in resumed.history]
    assert resumed.metrics == straight.metrics
    lines = (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == list(range(1, 9))
    opt_a = load_checkpoint(tmp_path / "a" / "ckpt.pt")["optimizer"]["state"]
    opt_b = load_checkpoint(tmp_path / "b" / "ckpt.pt")["optimizer"]["state"]
    assert all(torch.equal(opt_a[i]["exp_avg_sq"], opt_b[i]["exp_avg_sq"]) for i in opt_a)


def test_nan_guard_stops_and_keeps_the_last_good_checkpoint(gyro, tmp_path):
    calls = {"n": 0}
    clean = gyro.batch

    def poisoned(split, idx):
        x, y, mask = clean(split, idx)
        if split == "train":
            calls["n"] += 1
            if calls["n"] == 7:
                x = x.clone()
                x[0, 0, 0] = math.nan
        return x, y, mask

    gyro.batch = poisoned
    try:
        tc = TrainConfig(
            steps=20, batch_size=8, out_dir=str(tmp_path), **{**QUICK, "ckpt_every": 5}
        )
        with pytest.raises(TrainingDiverged, match=r"step 7: loss=nan.*ckpt.pt' \(step 5\)"):
            train(tiny(gyro), gyro, tc)
    finally:
        del gyro.batch
    state = load_checkpoint(tmp_path / "ckpt.pt")
    assert state["step"] == 5
    assert all(torch.isfinite(v).all() for v in state["model"].values())
    from geolab.model import GeoTransformer

    GeoTransformer(GeoConfig.from_dict(state["model_cfg"])).load_state_dict(state["model"])
    steps = [json.loads(line)["step"] for line in (tmp_path / "metrics.jsonl").open()]
    assert steps == list(range(1, 7))


def test_files_history_and_callback_agree(gyro, tmp_path):
    seen = []
    tc = TrainConfig(
        steps=4, batch_size=8, out_dir=str(tmp_path / "run"), **{**QUICK, "eval_every": 2}
    )
    result = train(tiny(gyro, "edelta"), gyro, tc, callback=seen.append)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    assert rows == result.history == seen
    assert [("val_mse" in r) for r in rows] == [False, True, False, True]
    assert rows[-1]["val_gamma"] == result.metrics["gamma"] and rows[0]["aux"] > 0
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["model"]["residual"] == "edelta" and config["train"]["steps"] == 4
    assert config["task"]["name"] == "gyroscope" and config["world_size"] == 1


def test_bad_runs_write_nothing(gyro, tmp_path, monkeypatch):
    out = tmp_path / "run"
    ok = {"steps": 2, "batch_size": 8, "out_dir": str(out), **QUICK}
    with pytest.raises(ValueError, match="GeoConfig.d_in/d_out=.*gyroscope"):
        train(GeoConfig(d_in=3, d_out=3, seq_len=16), gyro, TrainConfig(**ok))
    with pytest.raises(ValueError, match="GeoConfig.seq_len=4 is shorter"):
        train(tiny(gyro, seq_len=4), gyro, TrainConfig(**ok))
    with pytest.raises(ValueError, match="resume=True but .*ckpt.pt' does not exist"):
        train(tiny(gyro), gyro, TrainConfig(**ok, resume=True))
    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(ValueError, match="batch_size=8 is not divisible by the 3 ranks"):
        train(tiny(gyro), gyro, TrainConfig(**ok))
    monkeypatch.delenv("WORLD_SIZE")
    assert not out.exists()
    train(tiny(gyro), gyro, TrainConfig(**ok))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(ValueError, match="already holds a run"):
        train(tiny(gyro), gyro, TrainConfig(**ok))
    with pytest.raises(
        ValueError, match=r"GeoConfig.n_layer=2 differs from the checkpoint's n_layer=1"
    ):
        train(tiny(gyro, n_layer=2), gyro, TrainConfig(**{**ok, "resume": True}))
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_cli_trains_and_writes_its_files(tmp_path, capsys):
    out = tmp_path / "cli"
    argv = [*TINY_TRAIN, "--out", str(out)]
    assert main(argv) == 0
    assert {p.name for p in out.iterdir()} == {"config.json", "metrics.jsonl", "ckpt.pt"}
    text = capsys.readouterr().out
    assert "gyroscope with preln" in text and "done: step 3  mse" in text
    assert main([*argv, "--steps", "5", "--resume"]) == 0
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 5


@pytest.mark.parametrize(
    "args, message",
    [
        (["--task", "nope"], "--task 'nope' is not allowed; allowed: copy, echo"),
        (["--task", "echo", "--residual", "bogus"], "--residual 'bogus' is not allowed"),
        (["--task", "echo", "--steps", "0"], "--steps 0 is not allowed"),
        (["--task", "echo", "--layers", "0"], "--layers 0 is not allowed"),
        (["--task", "wikitext2", "--data-dir", "/nonexistent"], "GEOLAB_DATA"),
        (["--task", "wikitext2", "--n-train", "5"], "'wikitext2' has no option(s) n_train=5;"),
    ],
)
def test_cli_bad_input_exits_cleanly(args, message, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "never"
    assert main([*args, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("geolab train: error:") and message in err.replace("\n", " ")
    assert not out.exists()


def test_gradient_checkpointing_changes_memory_not_results(gyro):
    tc = TrainConfig(steps=3, batch_size=8, **QUICK)
    plain = train(tiny(gyro, "mgt", n_layer=2), gyro, tc)
    ckpt = train(tiny(gyro, "mgt", n_layer=2, grad_checkpoint=True), gyro, tc)
    for a, b in zip(plain.history, ckpt.history, strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-6)
        assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=1e-5)


@pytest.mark.slow
def test_compiled_training_follows_eager(gyro):
    """torch.compile (inductor; minutes on a CPU) reaches the eager losses up to fusion rounding."""
    tc = TrainConfig(steps=4, batch_size=8, **QUICK)
    eager = train(tiny(gyro, "edelta"), gyro, tc)
    compiled = train(tiny(gyro, "edelta"), gyro, TrainConfig(**{**vars(tc), "compile": True}))
    for a, b in zip(eager.history, compiled.history, strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-3)
        assert a["aux"] == pytest.approx(b["aux"], rel=1e-3, abs=1e-7)
    assert compiled.metrics["mse"] == pytest.approx(eager.metrics["mse"], rel=1e-3)


def test_device_selection():
    from geolab.device import pick_device

    if torch.cuda.is_available():
        assert pick_device("auto", local_rank=0) == torch.device("cuda", 0)
        assert pick_device("cuda", local_rank=1) == torch.device("cuda", 1)
    else:
        assert pick_device("auto").type in ("mps", "cpu")
        with pytest.raises(ValueError, match="CUDA is not available"):
            pick_device("cuda:0")
    assert pick_device("cpu") == torch.device("cpu")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_saves_a_checkpoint_says_where_and_resume_continues(signum, tmp_path):
    """`geolab train` in a subprocess, stopped by Ctrl-C (SIGINT) or SIGTERM once training runs:
    one line naming ckpt.pt, no traceback, exit 128 + signal; the checkpoint is the state after
    its step (equal to an uninterrupted run stopped there), and --resume continues from it."""
    out = tmp_path / "run"
    flags = [*TINY_TRAIN, "--steps", "100000", "--eval-every", "0", "--ckpt-every", "0"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "geolab", "train", *flags, "--out", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = out / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while not (log.is_file() and log.stat().st_size) and proc.poll() is None:
        assert time.monotonic() < deadline, "training never started"
        time.sleep(0.05)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    state = load_checkpoint(out / "ckpt.pt")
    step = state["step"]
    line = (
        f"geolab train: {signal.Signals(signum).name} at step {step} of 100000: saved "
        f"'{out / 'ckpt.pt'}'; continue with the same command and --resume\n"
    )
    assert stderr == line
    assert [json.loads(r)["step"] for r in log.read_text().splitlines()] == list(range(1, step + 1))
    assert not list(out.glob(".*tmp*"))  # written atomically: no half-written file left

    # the same run in this process, stopped after that step by its callback
    class Stop(Exception):
        pass

    def stop_there(record):
        if record["step"] == step:
            raise Stop

    task = get_task("gyroscope", seed=42, n_train=16, n_val=4)
    cfg = GeoConfig(residual="preln", n_layer=1, d_model=16, n_head=2, **task.model_fields())
    from geolab.model import GeoTransformer

    torch.manual_seed(42)
    model = GeoTransformer(cfg)
    tc = TrainConfig(steps=100000, batch_size=4, device="cpu", eval_every=0, ckpt_every=0)
    with pytest.raises(Stop):
        train(cfg, task, TrainConfig(**{**vars(tc), "progress": False}), stop_there, model)
    ours = model.state_dict()
    assert all(torch.equal(ours[k], v) for k, v in state["model"].items())
    assert main([*flags, "--out", str(out), "--steps", str(step + 2), "--resume"]) == 0
    assert len(log.read_text().splitlines()) == step + 2


def test_resuming_a_finished_run_reports_its_last_evaluation(tmp_path, capsys):
    argv = [*TINY_TRAIN, "--out", str(tmp_path / "run")]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    first = next(line for line in lines if line.startswith("done: "))
    from geolab.terms import TERMS

    assert lines[-1] == (  # the columns in words (issue 53)
        f"columns (validation set): mse = {TERMS['mse']} norm_dev = {TERMS['norm_dev']} "
        f"norm_dev_ref = {TERMS['norm_dev_ref']}"
    )
    assert main([*argv, "--resume"]) == 0
    again = capsys.readouterr().out
    assert "had already finished its 3 steps; nothing to train" in again
    assert "steps/s" not in again
    # the same numbers as the run's own final line, read back from metrics.jsonl
    assert f"last evaluation: {first.split('done: ')[1].split('  (')[0]}" in again


def test_python_api_stops_at_a_step_boundary_on_sigint_and_restores_handlers(gyro, tmp_path):
    """A Ctrl-C after step 3's stop check (here: sent by its callback) is honoured at the end
    of step 4, whose checkpoint is saved before TrainingInterrupted, a KeyboardInterrupt, is
    raised; the process's own SIGINT/SIGTERM handlers are back afterwards."""
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)

    def ctrl_c(record):
        if record["step"] == 3:
            os.kill(os.getpid(), signal.SIGINT)

    tc = TrainConfig(steps=50, batch_size=8, out_dir=str(tmp_path), progress=False, **QUICK)
    with pytest.raises(KeyboardInterrupt) as stop:
        train(tiny(gyro), gyro, tc, callback=ctrl_c)
    assert type(stop.value).__name__ == "TrainingInterrupted"
    assert stop.value.step == load_checkpoint(tmp_path / "ckpt.pt")["step"] == 4
    assert str(tmp_path / "ckpt.pt") in str(stop.value)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    resumed = train(tiny(gyro), gyro, TrainConfig(**{**vars(tc), "resume": True}))
    assert resumed.trained_steps == 50 - stop.value.step
