"""The thread policy: one thread unless GEOLAB_THREADS (or a command's --threads, or
TrainConfig.threads) says otherwise, for the views and for training alike; bad values refused,
naming the variable or the flag."""

import pytest
import torch
from conftest import TINY_TRAIN

from geolab import GeoConfig, threads
from geolab.cli import main
from geolab.tasks import get_task
from geolab.train import TrainConfig, train


@pytest.fixture(autouse=True)
def _restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_default_is_one_thread(monkeypatch):
    monkeypatch.delenv(threads.ENV, raising=False)
    torch.set_num_threads(2)
    assert threads.use_threads() is None  # a notebook cell ending with it shows nothing
    assert torch.get_num_threads() == 1


def test_geolab_threads_overrides(monkeypatch):
    monkeypatch.setenv(threads.ENV, "2")
    threads.use_threads()
    assert torch.get_num_threads() == 2
    threads.use_threads(3)  # a command's --threads wins over the variable
    assert torch.get_num_threads() == 3


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5", "²", "٣", "99999999999"])
def test_bad_values_are_refused_by_name(monkeypatch, capsys, value):
    monkeypatch.setenv(threads.ENV, value)
    with pytest.raises(ValueError, match="GEOLAB_THREADS"):
        threads.thread_count()
    assert main(["rank", "--layers", "1", "--d-model", "32", "--seq-len", "4"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("geolab rank: error: GEOLAB_THREADS") and err.count("\n") == 1


def test_train_sets_the_policy_and_its_argument(monkeypatch, tmp_path):
    """train() runs on GEOLAB_THREADS, else one thread, unless TrainConfig.threads says."""
    monkeypatch.delenv(threads.ENV, raising=False)
    task = get_task("copy", m=2, n_train=8, n_val=4)
    cfg = GeoConfig(residual="preln", n_layer=1, d_model=16, n_head=2, **task.model_fields())
    seen = []
    tc = dict(steps=2, batch_size=4, warmup=1, eval_every=0, progress=False, device="cpu")
    torch.set_num_threads(2)
    train(cfg, task, TrainConfig(**tc), callback=lambda _: seen.append(torch.get_num_threads()))
    monkeypatch.setenv(threads.ENV, "2")
    train(cfg, task, TrainConfig(**tc), callback=lambda _: seen.append(torch.get_num_threads()))
    train(cfg, task, TrainConfig(**tc, threads=3))
    assert seen == [1, 1, 2, 2] and torch.get_num_threads() == 3
    with pytest.raises(ValueError, match=r"TrainConfig.threads 0 is not allowed"):
        TrainConfig(threads=0)


def test_geolab_train_threads_flag_and_variable(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv(threads.ENV, raising=False)
    assert main(["train", *TINY_TRAIN, "--out", str(tmp_path / "a")]) == 0
    assert "on cpu with 1 CPU thread ->" in capsys.readouterr().out
    assert main(["train", *TINY_TRAIN, "--threads", "2", "--out", str(tmp_path / "b")]) == 0
    assert "on cpu with 2 CPU threads ->" in capsys.readouterr().out
    assert main(["train", *TINY_TRAIN, "--threads", "0", "--out", str(tmp_path / "c")]) == 2
    assert "geolab train: error: --threads 0 is not allowed" in capsys.readouterr().err
    monkeypatch.setenv(threads.ENV, "²")
    assert main(["train", *TINY_TRAIN, "--out", str(tmp_path / "d")]) == 2
    assert capsys.readouterr().err.startswith("geolab train: error: GEOLAB_THREADS='²'")
    assert not (tmp_path / "c").exists() and not (tmp_path / "d").exists()
