"""The thread policy: one thread unless GEOLAB_THREADS says otherwise, bad values refused."""

import pytest
import torch

from geolab import threads
from geolab.cli import main


@pytest.fixture(autouse=True)
def _restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_default_is_one_thread(monkeypatch):
    monkeypatch.delenv(threads.ENV, raising=False)
    assert threads.use_threads() == 1 == torch.get_num_threads()


def test_geolab_threads_overrides(monkeypatch):
    monkeypatch.setenv(threads.ENV, "2")
    assert threads.use_threads() == 2 == torch.get_num_threads()


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_bad_values_are_refused_by_name(monkeypatch, capsys, value):
    monkeypatch.setenv(threads.ENV, value)
    with pytest.raises(ValueError, match=f"GEOLAB_THREADS='{value}' is not allowed"):
        threads.thread_count()
    assert main(["rank", "--layers", "1", "--d-model", "32", "--seq-len", "4"]) == 2
    assert "GEOLAB_THREADS" in capsys.readouterr().err
