"""Resume across change (issue 55 item 12): a run records its data's fingerprint and the code
that trained it; ``--resume`` refuses changed data, says when the code changed, takes the
defaults of config fields added since, and refuses a checkpoint whose optimizer settings are
NaN or ±Inf. Each case is one line on stderr; a refusal exits 2 and trains nothing."""

import json
import math
import shutil
from pathlib import Path

import pytest
import torch
from conftest import TINY_TRAIN

from geolab.cli import main
from geolab.revision import code_record
from geolab.tasks import get_task
from geolab.train import load_checkpoint

TINY = ["train", *TINY_TRAIN]
TEXT = "First Citizen:\nBefore we proceed any further, hear me speak.\n" * 8


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A 3-step gyroscope run folder with ckpt.pt, made once."""
    out = tmp_path_factory.mktemp("finished") / "run"
    assert main([*TINY, "--out", str(out)]) == 0
    return out


def _copy(tmp: Path, finished: Path) -> Path:
    shutil.copytree(finished, tmp / "run")
    return tmp / "run"


def _edit(out: Path, change) -> None:
    """Apply ``change`` to the run record in both the checkpoint and config.json."""
    state = load_checkpoint(out / "ckpt.pt")
    change(state)
    torch.save(state, out / "ckpt.pt")
    config = json.loads((out / "config.json").read_text())
    change({"task": config["task"], "code": config.get("code"), "train_cfg": config["train"],
            "model_cfg": config["model"], "optimizer": {}})  # fmt: skip
    (out / "config.json").write_text(json.dumps(config))


def _resume(out: Path, *flags: str) -> int:
    return main([*TINY, "--out", str(out), "--resume", "--steps", "4", *flags])


def test_a_run_records_its_data_and_code(finished_run):
    config = json.loads((finished_run / "config.json").read_text())
    task = get_task("gyroscope", seed=42, n_train=16, n_val=4)  # TINY_TRAIN's, seed 42
    assert config["task"]["data"] == task.fingerprint()
    assert config["code"] == code_record() == load_checkpoint(finished_run / "ckpt.pt")["code"]
    assert set(code_record()) == {"geolab", "commit", "dirty"}


def test_the_fingerprint_follows_the_data_not_the_object():
    a, b = get_task("gyroscope", n_train=16, n_val=4), get_task("gyroscope", n_train=16, n_val=4)
    assert a.fingerprint() == b.fingerprint()
    b.x["train"][0, 0, 0] += 1e-6
    assert a.fingerprint() != b.fingerprint()
    assert a.fingerprint() != get_task("gyroscope", seed=1, n_train=16, n_val=4).fingerprint()


def test_an_edited_data_file_is_refused_and_nothing_trained(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GEOLAB_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "data"
    data.mkdir()
    (data / "input.txt").write_text(TEXT)
    out = tmp_path / "run"
    text = ["--task", "shakespeare", "--data-dir", str(data), "--seq-len", "8"]
    tiny = [*text, "--layers", "1", "--d-model", "16", "--heads", "2", "--batch-size", "2"]
    common = ["train", *tiny, "--device", "cpu", "--no-progress", "--out", str(out)]
    assert main([*common, "--steps", "2"]) == 0
    before = (out / "ckpt.pt").read_bytes()
    (data / "input.txt").write_text(TEXT.replace("speak", "spoke"))  # the same size
    capsys.readouterr()
    assert main([*common, "--steps", "4", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "resume: the data of task 'shakespeare' changed since the checkpoint" in err
    assert "nothing was trained" in err.splitlines()[-1] and "Traceback" not in err
    assert (out / "ckpt.pt").read_bytes() == before


def test_data_a_code_update_draws_otherwise_is_refused(tmp_path, finished_run, capsys):
    out = _copy(tmp_path, finished_run)
    _edit(out, lambda s: s["task"].update(data="0" * 64))
    assert _resume(out) == 2
    err = capsys.readouterr().err
    assert "the data of task 'gyroscope' changed since the checkpoint (sha256 000000000000…" in err
    assert "start a new run in another --out" in err


def test_another_n_train_still_names_the_flag(tmp_path, finished_run, capsys):
    out = _copy(tmp_path, finished_run)
    assert _resume(out, "--n-train", "32") == 2
    assert "resume: n_train=32 differs from the run's n_train=16" in capsys.readouterr().err


def test_changed_code_is_said_recorded_and_the_run_continues(tmp_path, finished_run, capsys):
    out = _copy(tmp_path, finished_run)
    _edit(out, lambda s: s["code"].update(commit="f" * 40, dirty=False))
    assert _resume(out) == 0
    err = capsys.readouterr().err
    assert "resume: the code changed since the checkpoint (geolab 0.1.0 at commit ffffffffff" in err
    assert "continuing from step 3" in err and "another --out" in err
    config = json.loads((out / "config.json").read_text())
    assert config["resumes"] == [{"step": 3, "steps": [3, 4], "code": code_record()}]
    assert config["code"]["commit"] == "f" * 40  # the run's first code stays recorded


def test_a_checkpoint_without_a_code_record_says_so(tmp_path, finished_run, capsys):
    out = _copy(tmp_path, finished_run)
    state = load_checkpoint(out / "ckpt.pt")
    del state["code"]
    torch.save(state, out / "ckpt.pt")
    config = json.loads((out / "config.json").read_text())
    del config["code"]
    (out / "config.json").write_text(json.dumps(config))
    assert _resume(out) == 0
    assert "records no geolab version or commit" in capsys.readouterr().err


def test_the_same_code_resumes_without_a_code_note(tmp_path, finished_run, capsys):
    out = _copy(tmp_path, finished_run)
    assert _resume(out) == 0
    assert "code changed" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "record, field, default",
    [("train_cfg", "flavor", "'geolab'"), ("model_cfg", "pool", "'token'")],
)
def test_a_field_added_since_takes_its_default(
    tmp_path, finished_run, capsys, record, field, default
):
    """A checkpoint written before geolab had ``field`` resumes with its default, and the note
    names the field; the user's settings are not blamed."""
    out = _copy(tmp_path, finished_run)
    _edit(out, lambda s: s[record].pop(field))
    assert _resume(out) == 0
    err = capsys.readouterr().err
    assert (
        f"predates {'TrainConfig' if record == 'train_cfg' else 'GeoConfig'} field(s) {field}"
        in err
    )
    assert f"{field}={default}" in err and "differs" not in err


@pytest.mark.parametrize(
    "name, value, allowed",
    [
        ("lr", math.nan, "a finite number >= 0"),
        ("eps", math.inf, "a finite number > 0"),
        ("weight_decay", -math.inf, "a finite number >= 0"),
        ("betas", (0.9, math.nan), "two numbers in [0, 1)"),
    ],
)
def test_optimizer_settings_that_are_not_finite_are_refused(
    tmp_path, finished_run, capsys, name, value, allowed
):
    out = _copy(tmp_path, finished_run)
    state = load_checkpoint(out / "ckpt.pt")
    state["optimizer"]["param_groups"][0][name] = value
    torch.save(state, out / "ckpt.pt")
    assert _resume(out) == 2
    err = capsys.readouterr().err
    assert f"its optimizer {name}={value!r} (parameter group 0) must be {allowed}" in err
    assert "learning rate" not in err and len(err.splitlines()) == 1
