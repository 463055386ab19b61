"""Bad input on the command line: one line naming the flag or field, the value and what is
allowed, exit status 2, no traceback, and nothing a user had is lost.

``CASES`` is the table: a command (``{tmp}`` is the test's folder, prepared by its setup), the
fragment its error line must hold. Each runs in-process through ``geolab.cli.main``; torchrun,
which needs processes, has its own test below.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import TINY_TRAIN

from geolab.cli import main
from geolab.config import GeoConfig
from geolab.memory import available_bytes
from geolab.train import load_checkpoint

REPO = Path(__file__).parents[1]
TINY = ["train", *TINY_TRAIN]
SYSFS = Path("/sys/kernel").is_dir()  # a folder even root cannot write in
MEMINFO = available_bytes(torch.device("cpu")) is not None
HUGE = pytest.mark.skipif(not MEMINFO, reason="no free-memory reading on this OS: no check")
NO_SYSFS = pytest.mark.skipif(not SYSFS, reason="needs Linux /sys")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A 3-step run folder with ckpt.pt, made once."""
    out = tmp_path_factory.mktemp("finished") / "run"
    assert main([*TINY, "--out", str(out)]) == 0
    return out


def _run_copy(tmp: Path, finished: Path) -> Path:
    shutil.copytree(finished, tmp / "run")
    return tmp / "run" / "ckpt.pt"


class Pickled:
    """A pickle payload: loading it with weights_only=False would create ``path``."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def damage(kind: str):
    def setup(tmp: Path, finished: Path) -> None:
        ckpt = _run_copy(tmp, finished)
        good = ckpt.read_bytes()
        if kind == "empty":
            ckpt.write_bytes(b"")
        elif kind == "truncated":
            ckpt.write_bytes(good[: len(good) // 2])
        elif kind == "random":
            ckpt.write_bytes(os.urandom(4096))
        elif kind == "key-missing":
            state = load_checkpoint(ckpt)
            del state["model_cfg"]
            torch.save(state, ckpt)
        elif kind == "pickle":
            torch.save({"step": 1, "x": Pickled(tmp / "payload-ran")}, ckpt)

    return setup


def a_file(tmp: Path, finished: Path) -> None:
    (tmp / "file").write_text("not a folder\n")


def a_folder_named_csv(tmp: Path, finished: Path) -> None:
    (tmp / "gb.csv").mkdir()


def a_run(tmp: Path, finished: Path) -> None:
    _run_copy(tmp, finished)


def text_data(corpus: str, content: bytes):
    def setup(tmp: Path, finished: Path) -> None:
        if corpus == "shakespeare":
            (tmp / "data" / "tinyshakespeare").mkdir(parents=True)
            (tmp / "data" / "tinyshakespeare" / "input.txt").write_bytes(content)
            return
        (tmp / "data" / "wikitext-2").mkdir(parents=True)
        for name in ("valid.txt", "test.txt"):
            (tmp / "data" / "wikitext-2" / name).write_text(" a b \n")
        (tmp / "data" / "wikitext-2" / "train.txt").write_bytes(content)

    return setup


def instructor_copy(tmp: Path, finished: Path) -> None:
    (tmp / "src").mkdir()
    shutil.copy(REPO / "assignments" / "instructor" / "A1_delta.py", tmp / "src")


def submissions(tmp: Path, finished: Path) -> None:
    (tmp / "subs").mkdir()
    (tmp / "subs" / "alice.py").write_text("x = 1\n")
    a_file(tmp, finished)


G = ["grade", "{tmp}/subs", "--assignment", "A1", "--sandbox", "none"]
CASES = [
    # rank: sizes and batch checked before anything is allocated
    ("rank-batch-0", ["rank", "--batch", "0"], None, "--batch 0 is not allowed; it must be >= 1"),
    pytest.param(
        "rank-huge-width",
        ["rank", "--d-model", "10000000000"],
        None,
        "a forward pass needs at least",
        marks=HUGE,
    ),
    pytest.param(
        "rank-huge-seq",
        ["rank", "--seq-len", "100000000"],
        None,
        "seq_len=100000000) at batch 1",
        marks=HUGE,
    ),
    (
        "rank-n_head-3",
        ["rank", "--heads", "3"],
        None,
        "--heads 3 is not allowed; must divide d_model=128",
    ),
    # train: sizes, learning rate, the run folder, checked before the model is built
    pytest.param(
        "train-huge-width",
        [*TINY, "--d-model", "4294967296", "--out", "{tmp}/never"],
        None,
        "training needs at least",
        marks=HUGE,
    ),
    (
        "train-lr-1e308",
        [*TINY, "--lr", "1e308", "--out", "{tmp}/never"],
        None,
        "--lr 1e+308 is not allowed; must be a number in (0, 10]",
    ),
    (
        "train-out-is-file",
        [*TINY, "--out", "{tmp}/file"],
        a_file,
        "--out '{tmp}/file' is not allowed: it is a file",
    ),
    (
        "train-out-under-file",
        [*TINY, "--out", "{tmp}/file/run"],
        a_file,
        "it lies under the file '{tmp}/file'",
    ),
    pytest.param(
        "train-out-sysfs",
        [*TINY, "--out", "/sys/geolab-run"],
        None,
        "cannot write in '/sys'",
        marks=NO_SYSFS,
    ),
    (
        "train-fresh-over-a-run",
        [*TINY, "--out", "{tmp}/run"],
        a_run,
        "already holds a run; pass resume=True",
    ),
    # train --resume: a checkpoint that is not geolab's is never loaded, and never unpickled
    (
        "resume-empty-ckpt",
        [*TINY, "--out", "{tmp}/run", "--resume"],
        damage("empty"),
        "is damaged or not a geolab checkpoint (EOFError",
    ),
    (
        "resume-truncated-ckpt",
        [*TINY, "--out", "{tmp}/run", "--resume"],
        damage("truncated"),
        "is damaged or not a geolab checkpoint",
    ),
    (
        "resume-random-ckpt",
        [*TINY, "--out", "{tmp}/run", "--resume"],
        damage("random"),
        "is damaged or not a geolab checkpoint",
    ),
    (
        "resume-key-missing",
        [*TINY, "--out", "{tmp}/run", "--resume"],
        damage("key-missing"),
        "is not a geolab checkpoint (it lacks ['model_cfg'])",
    ),
    (
        "resume-pickle-payload",
        [*TINY, "--out", "{tmp}/run", "--resume"],
        damage("pickle"),
        "is damaged or not a geolab checkpoint (UnpicklingError",
    ),
    (
        "resume-other-lr",
        [*TINY, "--out", "{tmp}/run", "--resume", "--lr", "0.01"],
        a_run,
        "--lr 0.01 differs from the checkpoint's lr=0.001",
    ),
    (
        "resume-fewer-steps",
        [*TINY, "--out", "{tmp}/run", "--resume", "--steps", "2"],
        a_run,
        "--steps 2 is not allowed; the checkpoint is already at step 3",
    ),
    # text data: checked before `datasets` sees it
    (
        "shakespeare-empty",
        ["train", "--task", "shakespeare", "--data-dir", "{tmp}/data", "--out", "{tmp}/never"],
        text_data("shakespeare", b""),
        "input.txt' holds no text",
    ),
    (
        "shakespeare-not-utf8",
        ["train", "--task", "shakespeare", "--data-dir", "{tmp}/data", "--out", "{tmp}/never"],
        text_data("shakespeare", b"to be \xff\xfe"),
        "input.txt' is not UTF-8 text (byte 0xff at offset 6)",
    ),
    (
        "wikitext2-empty-train",
        ["train", "--task", "wikitext2", "--data-dir", "{tmp}/data", "--out", "{tmp}/never"],
        text_data("wikitext2", b"\n\n"),
        "train.txt' holds no text",
    ),
    (
        "wikitext2-not-utf8",
        ["train", "--task", "wikitext2", "--data-dir", "{tmp}/data", "--out", "{tmp}/never"],
        text_data("wikitext2", b"\xc3\x28"),
        "train.txt' is not UTF-8 text",
    ),
    # grade: the gradebook's place is checked before grading
    (
        "grade-out-under-file",
        [*G, "--out", "{tmp}/file/gb.csv"],
        submissions,
        "--out='{tmp}/file/gb.csv' is not allowed: it lies under the file",
    ),
    (
        "grade-out-is-folder",
        [*G, "--out", "{tmp}/gb.csv"],
        lambda t, f: (submissions(t, f), a_folder_named_csv(t, f)),
        "--out='{tmp}/gb.csv' is not allowed: it is a folder",
    ),
    pytest.param(
        "grade-out-sysfs",
        [*G, "--out", "/sys/gb.csv"],
        submissions,
        "cannot write in '/sys'",
        marks=NO_SYSFS,
    ),
    # release, bench, reproduce: --out an existing file, or over the instructor sources
    (
        "release-out-is-file",
        ["release", "--src", "{tmp}/src", "--out", "{tmp}/file"],
        lambda t, f: (instructor_copy(t, f), a_file(t, f)),
        "out='{tmp}/file' is not allowed: it is a file",
    ),
    (
        "release-out-is-src",
        ["release", "--src", "{tmp}/src", "--out", "{tmp}/src"],
        instructor_copy,
        "is the instructor folder",
    ),
    (
        "release-out-inside-src",
        ["release", "--src", "{tmp}/src", "--out", "{tmp}/src/student"],
        instructor_copy,
        "is the instructor folder",
    ),
    (
        "bench-out-is-file",
        ["bench", "--quick", "--only", "rules", "--out", "{tmp}/file"],
        a_file,
        "--out='{tmp}/file' is not allowed: it is a file",
    ),
    (
        "reproduce-out-is-file",
        ["reproduce", "ablation", "--out", "{tmp}/file"],
        a_file,
        "out='{tmp}/file' is not allowed: it is a file",
    ),
    (
        "reproduce-jobs-not-parallel",
        ["reproduce", "rank_evolution", "--jobs", "2", "--out", "{tmp}/out"],
        None,
        "--jobs 2 is not allowed for rank_evolution",
    ),
    pytest.param(
        "reproduce-out-sysfs",
        ["reproduce", "ablation", "--out", "/sys/geolab"],
        None,
        "cannot write in '/sys'",
        marks=NO_SYSFS,
    ),
]


def _case(case):
    return case.values if hasattr(case, "values") else case


@pytest.mark.parametrize("name, argv, setup, fragment", CASES, ids=[_case(c)[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_2(
    name, argv, setup, fragment, tmp_path, finished_run, capsys, monkeypatch
):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("GEOLAB_CACHE", str(tmp_path / "cache"))
    if setup is not None:
        setup(tmp_path, finished_run)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"geolab {argv[0]}: error: ") and err.count("\n") == 1, err
    assert fragment.replace("{tmp}", str(tmp_path)) in err
    assert "Traceback" not in err and "weights_only" not in err
    assert not (tmp_path / "never").exists() and not (tmp_path / "payload-ran").exists()
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize(
    "fields, fragment",
    [
        (dict(vocab_size=True, d_in=None, d_out=None), "GeoConfig.vocab_size=True is not allowed"),
        (dict(residual="layerscale", layerscale_init=float("inf")), "layerscale_init=inf"),
        (dict(residual="layerscale", layerscale_init="1e-4"), "layerscale_init='1e-4'"),
        (dict(mlp="yes"), "GeoConfig.mlp='yes' is not allowed; must be True or False"),
        (dict(mlp=0), "GeoConfig.mlp=0"),
        (dict(grad_checkpoint="no"), "GeoConfig.grad_checkpoint='no'"),
        (dict(residual="preln", beta0=float("nan")), "GeoConfig.beta0=nan"),
        (dict(residual="mgt", beta0=float("nan")), "GeoConfig.beta0=nan"),
        (dict(n_head=3), "GeoConfig.n_head=3 is not allowed; must divide d_model=128"),
        (dict(lam=True), "GeoConfig.lam=True"),
    ],
)
def test_geoconfig_rejects_with_a_value_error(fields, fragment):
    with pytest.raises(ValueError) as err:
        GeoConfig(**{"d_in": 4, "d_out": 4, **fields})
    assert fragment in str(err.value)


def test_a_folder_left_before_the_first_checkpoint_is_rerun(tmp_path, capsys):
    """A crash or divergence before the first checkpoint leaves config.json and metrics.jsonl
    but no ckpt.pt: a rerun starts afresh in it, ``--resume`` restarts it from step 0, both
    saying so; half-written temporary files of dead processes are removed."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "config.json").write_text("{}\n")
    (out / "metrics.jsonl").write_text('{"step": 1}\n')
    (out / ".ckpt.pt.tmp999999999").write_bytes(b"half")  # no such process
    (out / f".ckpt.pt.tmp{os.getppid()}").write_bytes(b"live")  # a live process: kept
    assert main([*TINY, "--out", str(out)]) == 0
    assert (
        "stopped before its first checkpoint (no ckpt.pt): starting afresh"
        in capsys.readouterr().err
    )
    assert load_checkpoint(out / "ckpt.pt")["step"] == 3
    assert not (out / ".ckpt.pt.tmp999999999").exists()
    assert (out / f".ckpt.pt.tmp{os.getppid()}").exists()
    (out / "ckpt.pt").unlink()
    assert main([*TINY, "--out", str(out), "--resume"]) == 0
    assert "restarting from step 0" in capsys.readouterr().err
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").open()]
    assert steps == [1, 2, 3]


def test_resume_with_more_steps_is_applied_and_recorded(tmp_path, finished_run, capsys):
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    assert main([*TINY, "--out", str(out), "--resume", "--steps", "5"]) == 0
    assert "resume: --steps 3 -> 5 from step 3 on" in capsys.readouterr().err
    config = json.loads((out / "config.json").read_text())
    assert config["train"]["steps"] == 5 and config["resumes"] == [{"step": 3, "steps": [3, 5]}]
    assert load_checkpoint(out / "ckpt.pt")["train_cfg"]["steps"] == 5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_torchrun_user_error_prints_once_and_every_rank_exits_2(tmp_path):
    """Every rank validates before joining the process group; only rank 0 prints. (torchrun
    itself still reports the failed ranks with its own ChildFailedError summary.)"""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    launch = ["-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2"]
    port = ["--master_addr", "127.0.0.1", "--master_port", str(_free_port())]
    args = [*TINY[1:], "--steps", "0", "--out", str(tmp_path / "never")]
    cmd = [sys.executable, *launch, *port, "-m", "geolab", "train", *args]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    text = proc.stdout + proc.stderr
    line = "geolab train: error: --steps 0 is not allowed"
    assert text.count(line) == 1, text
    assert text.count("exitcode  : 2") == 2, text  # torchrun's summary: both ranks exited 2
    assert f'File "{REPO / "geolab"}' not in text  # no traceback through geolab
    assert not (tmp_path / "never").exists()
