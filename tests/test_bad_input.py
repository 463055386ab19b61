"""Bad input on the command line: one line naming the flag or field, the value and what is
allowed, exit status 2, no traceback, and nothing a user had is lost.

``CASES`` is the table: a command (``{tmp}`` is the test's folder, prepared by its setup), the
fragment its error line must hold. Each runs in-process through ``geolab.cli.main``; torchrun,
which needs processes, has its own test below.
"""

import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import TINY_TRAIN

from geolab.cli import main
from geolab.config import GeoConfig
from geolab.memory import available_bytes
from geolab.train import load_checkpoint

REPO = Path(__file__).parents[1]
TINY = ["train", *TINY_TRAIN]
TINY_TEXT = ["train", "--task", "shakespeare", *TINY[3:15], *TINY[19:]]  # no sample counts
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


def damage_state(kind: str):
    """A run whose checkpoint loads but does not fit: weights of other shapes, RNG states cut."""

    def setup(tmp: Path, finished: Path) -> None:
        ckpt = _run_copy(tmp, finished)
        state = load_checkpoint(ckpt)
        if kind == "shapes":
            state["model"]["head.weight"] = torch.zeros(3, 5)
        elif kind == "rng":
            state["rng"][0]["cpu"] = state["rng"][0]["cpu"][:100]
        elif kind == "data-rng":
            state["data_rng"] = torch.zeros(7, dtype=torch.uint8)
        torch.save(state, ckpt)

    return setup


def users_folder(tmp: Path, finished: Path) -> None:
    (tmp / "mine").mkdir()
    (tmp / "mine" / "config.json").write_text('{"my": "settings"}\n')


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


def two_ids(tmp: Path, finished: Path) -> None:
    submissions(tmp, finished)
    (tmp / "subs" / "Alice.PY").write_text("x = 2\n")


def hand_csv(text: str):
    def setup(tmp: Path, finished: Path) -> None:
        submissions(tmp, finished)
        (tmp / "hand.csv").write_text(text)

    return setup


def earlier_gradebook(tmp: Path, finished: Path) -> None:
    submissions(tmp, finished)
    (tmp / "gb.csv").write_text("submission,total\nbob.py,3\n")
    (tmp / "gb_feedback").mkdir()
    (tmp / "gb_feedback" / "bob.md").write_text("# bob.py\n")


def a_folder(name: str):
    def setup(tmp: Path, finished: Path) -> None:
        submissions(tmp, finished)
        (tmp / name).mkdir()

    return setup


def bad_second_source(tmp: Path, finished: Path) -> None:
    instructor_copy(tmp, finished)
    (tmp / "src" / "B_broken.py").write_text("### BEGIN SOLUTION\nx = 1\n")


def result_file(name: str, result: dict):
    def setup(tmp: Path, finished: Path) -> None:
        (tmp / "res").mkdir()
        (tmp / "res" / name).write_text(json.dumps(result))

    return setup


G = ["grade", "{tmp}/subs", "--assignment", "A1", "--sandbox", "none"]
LAUNCH = ["reproduce", "language_model", "--out", "{tmp}/res", "--launcher"]
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
        "train-task-empty",
        [TINY[0], "--task", "", *TINY[3:], "--out", "{tmp}/never"],
        None,
        "--task '' is not allowed; allowed: copy, echo, gyroscope",
    ),
    (
        "train-data-dir-name-too-long",
        [*TINY_TEXT, "--data-dir", "{tmp}/" + "x" * 300, "--out", "{tmp}/never"],
        None,
        "--data-dir='{tmp}/xxx",  # the name's length, before the data is looked for
    ),
    (
        "grade-assignment-unknown",
        [*G[:3], "A9", "--out", "{tmp}/gb.csv"],  # auto sandbox: its limits line comes later
        submissions,
        "--assignment 'A9' is not allowed; allowed: A1, A2, A3, A4",
    ),
    (
        "grade-hidden-name-too-long",
        [*G, "--out", "{tmp}/gb.csv", "--hidden", "{tmp}/" + "x" * 300],
        submissions,
        "--hidden='{tmp}/xxx",
    ),
    (
        "grade-hidden-a-file",
        [*G[:4], "--out", "{tmp}/gb.csv", "--hidden", "{tmp}/file"],  # auto sandbox: root too
        submissions,
        "--hidden '{tmp}/file' is not allowed: it is not a folder",
    ),
    (
        "train-steps-huge",  # would train until killed
        [*TINY, "--steps", str(10**30), "--out", "{tmp}/never"],
        None,
        f"--steps {10**30} is not allowed; must be an integer >= 1 and <= 1,000,000,000",
    ),
    (
        "reproduce-steps-huge",
        ["reproduce", "ablation", "--dry-run", "--steps", str(10**30), "--out", "{tmp}/never"],
        None,
        f"--steps {10**30} is not allowed; it must be >= 1 and <= 1,000,000,000",
    ),
    pytest.param(
        "train-batch-size-huge",
        [*TINY, "--batch-size", str(10**30), "--out", "{tmp}/never"],
        None,
        f"seq_len=255) at --batch-size {10**30} x 255 positions is not allowed here: training",
        marks=HUGE,
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
    (
        "train-out-holds-users-config",
        [*TINY, "--out", "{tmp}/mine"],
        users_folder,
        "its config.json is not a geolab run's and a run would overwrite it",
    ),
    (
        "train-out-empty",
        [*TINY, "--out", ""],
        None,
        "--out '' is not allowed: it names no file or folder",
    ),
    (
        "train-warmup-longer-than-steps",
        [*TINY, "--warmup", "5", "--out", "{tmp}/never"],
        None,
        "--warmup 5 is not allowed; it must be <= --steps 3",
    ),
    pytest.param(
        "train-n-train-huge",
        [*TINY, "--n-train", "10000000000", "--out", "{tmp}/never"],
        None,
        "task 'gyroscope' with n_train=10000000000, n_val=4 samples of 256 × 16 values",
        marks=HUGE,
    ),
    pytest.param(
        "train-inversion-huge-seq",
        [*TINY[:2], "inversion", *TINY[3:], "--seq-len", "100000000", "--out", "{tmp}/never"],
        None,
        "samples of 100000000 × 64 values is not allowed here: it needs at least",
        marks=HUGE,
    ),
    (
        "resume-other-n-train",
        [*TINY, "--out", "{tmp}/run", "--resume", "--n-train", "32"],
        a_run,
        "resume: n_train=32 differs from the run's n_train=16",
    ),
    (
        "resume-other-shapes",
        [*TINY, "--out", "{tmp}/run", "--resume"],
        damage_state("shapes"),
        "does not fit this run (its model weights differ in names or shapes: ",
    ),
    (
        "resume-rng-state-cut",
        [*TINY, "--out", "{tmp}/run", "--resume"],
        damage_state("rng"),
        "does not fit this run (its RNG state is damaged",
    ),
    (
        "resume-data-rng-state-damaged",
        [*TINY, "--out", "{tmp}/run", "--resume"],
        damage_state("data-rng"),
        "does not fit this run (its data generator state is damaged",
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
    (
        "shakespeare-nul-byte",
        ["train", "--task", "shakespeare", "--data-dir", "{tmp}/data", "--out", "{tmp}/never"],
        text_data("shakespeare", b"to be\x00 or not to be, that is the question\n" * 20),
        "input.txt' holds a NUL byte (offset 5)",
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
    (
        "grade-timeout-inf",
        [*G, "--timeout", "inf", "--out", "{tmp}/gb.csv"],
        submissions,
        "--timeout inf is not allowed; it must be a finite number in (0, 1e+06]",
    ),
    (
        "grade-task-timeout-nan",
        [*G, "--task-timeout", "nan", "--out", "{tmp}/gb.csv"],
        submissions,
        "--task-timeout nan is not allowed",
    ),
    (
        "grade-memory-gb-inf",
        [*G, "--memory-gb", "inf", "--out", "{tmp}/gb.csv"],
        submissions,
        "--memory-gb inf is not allowed; it must be a finite number in (0, 1e+06]",
    ),
    (
        "grade-out-txt",
        [*G, "--out", "{tmp}/grades.txt"],
        submissions,
        "--out='{tmp}/grades.txt' is not allowed: the gradebook is a CSV file; name it "
        "'{tmp}/grades.csv'",
    ),
    (
        "grade-out-existing-folder",
        [*G, "--out", "{tmp}/results"],
        a_folder("results"),
        "--out='{tmp}/results' is not allowed: it is a folder; name the gradebook CSV, e.g. "
        "'{tmp}/results/gradebook.csv'",
    ),
    (
        "grade-over-earlier-gradebook",
        [*G, "--out", "{tmp}/gb.csv"],
        earlier_gradebook,
        "--out='{tmp}/gb.csv' already holds a gradebook (gb.csv, gb_feedback); pass --force",
    ),
    (
        "grade-two-submissions-one-id",
        [*G, "--out", "{tmp}/gb.csv"],
        two_ids,
        "(names equal up to case or Unicode normalisation): 'Alice.PY' and 'alice.py'",
    ),
    (
        "grade-hand-graded-twice",
        [*G, "--out", "{tmp}/gb.csv", "--hand-graded", "{tmp}/hand.csv"],
        hand_csv("student,points,max\nalice,2,5\nbob,1,5\nalice,4,5\n"),
        "--hand-graded {tmp}/hand.csv:4: student 'alice' is graded twice (first on line 2)",
    ),
    (
        "grade-hand-graded-inf",
        [*G, "--out", "{tmp}/gb.csv", "--hand-graded", "{tmp}/hand.csv"],
        hand_csv("student,points,max\nalice,inf,inf\n"),
        "hand.csv:2: points=inf, max=inf: both must be finite, max > 0",
    ),
    (
        "grade-out-empty",
        [*G, "--out", ""],
        submissions,
        "--out '' is not allowed: it names no file or folder",
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
        "release-src-missing",
        ["release", "--src", "{tmp}/nowhere", "--out", "{tmp}/never"],
        None,
        "--src '{tmp}/nowhere' is not allowed: it is missing; it must be the folder of the",
    ),
    (
        "release-src-name-too-long",
        ["release", "--src", "{tmp}/" + "x" * 300, "--out", "{tmp}/never"],
        None,
        "'... is 300 bytes long; this file system allows at most",
    ),
    (
        "release-bad-source-writes-nothing",
        ["release", "--src", "{tmp}/src", "--out", "{tmp}/release"],
        bad_second_source,
        "B_broken.py:1: ### BEGIN SOLUTION is never closed",
    ),
    (
        "bench-threads-huge",
        ["bench", "--quick", "--only", "rules", "--threads", "99999999999", "--out", "{tmp}/b"],
        None,
        "--threads 99999999999 is not allowed; it must be an integer in [1, 1024]",
    ),
    (
        "bench-only-unknown",
        ["bench", "--quick", "--only", "abc", "--out", "{tmp}/b"],
        None,
        "--only 'abc' is not allowed: no such benchmark; available: operators, rules",
    ),
    (
        "reproduce-readme-without-results",
        ["reproduce", "--readme", "--out", "{tmp}/res"],
        lambda t, f: (t / "res").mkdir(),
        "--readme is not allowed with --out '{tmp}/res': it holds no NAME-small.json results",
    ),
    (
        "reproduce-jobs-huge",  # was quietly capped at the number of runs
        ["reproduce", "ablation", "--jobs", str(10**30), "--out", "{tmp}/never"],
        None,
        f"--jobs {10**30} is not allowed; it must be an integer in [1, 1024] (worker processes",
    ),
    (
        "grade-jobs-huge",
        [*G, "--jobs", str(10**30), "--out", "{tmp}/gb.csv"],
        submissions,
        f"--jobs {10**30} is not allowed; it must be an integer in [1, 1024]",
    ),
    (
        "reproduce-threads-huge",
        ["reproduce", "ablation", "--threads", "99999999999", "--out", "{tmp}/never"],
        None,
        "--threads 99999999999 is not allowed",
    ),
    (
        "reproduce-over-an-earlier-result",
        ["reproduce", "ablation", "--out", "{tmp}/res"],
        result_file("ablation-tiny.json", {"protocol": "ablation"}),
        "--out '{tmp}/res' already holds ablation-tiny.json, an earlier ablation result at "
        "scale tiny; pass --force",
    ),
    (
        "reproduce-readme-result-without-config",
        ["reproduce", "--readme", "--out", "{tmp}/res"],
        result_file("ablation-small.json", {"protocol": "ablation", "summary": {}}),
        "ablation-small.json' is not a result of ablation written by `geolab reproduce` (it lacks "
        "['config', 'per_seed', 'hypotheses'])",
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
        "reproduce-steps-zero",
        ["reproduce", "ablation", "--steps", "0", "--dry-run", "--out", "{tmp}/out"],
        None,
        "--steps 0 is not allowed; it must be >= 1",
    ),
    (
        "reproduce-tasks-unknown",
        ["reproduce", "edelta_benchmarks", "--tasks", "nearpi", "--dry-run", "--out", "{tmp}/o"],
        None,
        "--tasks nearpi is not allowed; choose from echo, gyroscope, inversion, near_pi",
    ),
    (
        "reproduce-match-sizes-reference",
        ["reproduce", "edelta_benchmarks", "--match-sizes", "--dry-run", "--out", "{tmp}/o"],
        None,
        "--match-sizes is not allowed with --flavor both: the reference builds keep the public",
    ),
    (
        "reproduce-match-sizes-other-protocol",
        ["reproduce", "ablation", "--match-sizes", "--dry-run", "--out", "{tmp}/o"],
        None,
        "--match-sizes is not allowed for ablation: only edelta_benchmarks has a matched-size",
    ),
    (
        "reproduce-tasks-one-task-protocol",
        ["reproduce", "ablation", "--tasks", "echo", "--dry-run", "--out", "{tmp}/out"],
        None,
        "--tasks is not allowed for ablation: it trains on one task",
    ),
    pytest.param(
        "reproduce-out-sysfs",
        ["reproduce", "ablation", "--out", "/sys/geolab"],
        None,
        "cannot write in '/sys'",
        marks=NO_SYSFS,
    ),
    pytest.param(
        "launcher-slurm-without-slurm",
        [*LAUNCH, "slurm", "--partition", "gpu"],
        None,
        "--launcher slurm is not allowed here: SLURM's sbatch is not on PATH",
        marks=pytest.mark.skipif(shutil.which("sbatch") is not None, reason="SLURM is here"),
    ),
    ("partition-empty", [*LAUNCH, "slurm", "--partition", ""], None, "--partition '' is not"),
    ("partition-blank", [*LAUNCH, "slurm", "--partition", " "], None, "--partition ' ' is not"),
    (
        "time-limit-inf",
        [*LAUNCH, "local", "--time-limit", "inf"],
        None,
        "--time-limit inf is not allowed; it must be a number of minutes in (0, 1e+06]",
    ),
    ("grade-seed-2^70", [*G, "--seed", str(2**70)], submissions, f"--seed {2**70} is not allowed"),
    ("train-seed-2^64", [*TINY, "--seed", str(2**64)], None, f"--seed {2**64} is not allowed"),
    ("train-seed-2^63", [*TINY, "--seed", str(2**63)], None, "a seed is an integer in [0, "),
    ("rank-seed-2^63", ["rank", "--seed", str(2**63)], None, f"--seed {2**63} is not allowed"),
    (
        "rank-million-layers",
        ["rank", "--layers", "1000000", "--d-model", "8", "--heads", "2"],
        None,
        "--layers 1000000 is not allowed for rank; at most 10000",
    ),
    ("time-limit-nan", [*LAUNCH[:-1], "--time-limit", "nan"], None, "--time-limit nan is not"),
    ("time-limit-huge", [*LAUNCH[:-1], "--time-limit", "1e300"], None, "--time-limit 1e+300 is"),
]


def _case(case):
    return case.values if hasattr(case, "values") else case


@pytest.mark.parametrize("name, argv, setup, fragment", CASES, ids=[_case(c)[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_2(
    name, argv, setup, fragment, tmp_path, finished_run, capsys, monkeypatch
):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("GEOLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # what an empty path would quietly write to is watched too
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
    (out / "config.json").write_text('{"task": {}, "model": {}, "train": {}}\n')
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
    (out / "metrics.jsonl").write_text('{"step": 1}\n')  # crashed again before a checkpoint
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


# --- the Python API: non-finite or huge numbers, NaN from degenerate input, lost data -----------


@pytest.mark.parametrize(
    "view, kwargs, fragment",
    [
        ("rank_view", dict(rules=("preln",), n_layer=float("inf")), "n_layer=inf is not allowed"),
        ("rank_view", dict(rules=("preln",), n_layer=float("nan")), "n_layer=nan is not allowed"),
        ("rank_view", dict(rules=("preln",), n_layer=10**400), "is not allowed; expected an int"),
        ("delta_view", dict(beta=0.5, phi=0.1, v=0.2, d=float("inf")), "d=inf is not allowed"),
        ("delta_view", dict(beta=float("inf"), phi=0.1, v=0.2), "beta=inf is not allowed"),
        ("streams_view", dict(iters=float("inf"), spread=1.0, depth=4), "iters=inf is not"),
        ("streams_view", dict(iters=5, spread=1.0, depth=True), "depth=True is not allowed"),
        ("cayley_view", dict(beta=10**400, angle=1.0, gamma=0.5), "is not allowed; expected a"),
    ],
)
def test_a_view_refuses_a_non_finite_or_huge_slider_value(view, kwargs, fragment):
    from geolab import explore

    with pytest.raises(ValueError, match=".*") as err:
        getattr(explore, view)(**kwargs)
    assert fragment in str(err.value)


def test_a_view_takes_integral_floats_and_numpy_ints():
    import numpy as np

    from geolab.explore.view import check_int

    assert check_int("n", 12.0, 1, 400) == 12 and check_int("n", np.int64(24), 1, 400) == 24


@pytest.mark.parametrize(
    "name, options, fragment",
    [
        ("echo", dict(noise=1e300), "noise=1e+300 is not allowed; the noisy states overflow"),
        ("echo", dict(noise=float("inf")), "noise=inf must be a finite number"),
        ("near_pi", dict(theta=float("nan")), "theta=nan must be a finite number"),
        ("near_pi", dict(theta=float("inf")), "theta=inf must be a finite number"),
        ("near_pi_multi", dict(theta=float("-inf")), "theta=-inf must be a finite number"),
        ("gyroscope", dict(theta_max=float("inf")), "theta_max=inf must be a finite number"),
        ("gyroscope", dict(theta_min=float("nan")), "theta_min=nan must be a finite number"),
        pytest.param(
            "inversion", dict(seq_len=10**8), "it needs at least", marks=HUGE, id="inversion-seq"
        ),
        pytest.param("copy", dict(n_train=10**12), "it needs at least", marks=HUGE, id="copy-n"),
    ],
)
def test_a_task_refuses_what_would_be_nan_or_not_fit(name, options, fragment):
    from geolab.tasks import get_task

    small = {"n_train": 4, "n_val": 2, **options}
    with pytest.raises(ValueError) as err:
        get_task(name, **small)
    assert fragment in str(err.value)


@pytest.mark.parametrize(
    "tokens, fragment",
    [
        (torch.tensor([[1.0, 2.0]]), "tokens of dtype torch.float32 are not allowed"),
        (torch.tensor([[1, 8]]), "token ids in [1, 8] are not allowed; they must lie in [0, 8)"),
        (torch.tensor([[-1, 3]]), "token ids in [-1, 3] are not allowed"),
    ],
)
def test_a_token_model_refuses_float_or_out_of_range_ids(tokens, fragment):
    from geolab.model import GeoTransformer

    model = GeoTransformer(GeoConfig(vocab_size=8, n_layer=1, d_model=16, n_head=2, seq_len=4))
    with pytest.raises(ValueError) as err:
        model(tokens)
    assert fragment in str(err.value)
    assert model(torch.tensor([[0, 7]])).isfinite().all()  # the edges of the range are fine


def _with_rows_at_zero(logits: torch.Tensor) -> torch.Tensor:
    """The logits with every all −∞ row (then column) set to 0: what sinkhorn must equal."""
    out = logits.clone()
    for m in out.view(-1, *out.shape[-2:]):
        m[torch.isneginf(m).all(1)] = 0.0
        m[:, torch.isneginf(m).all(0)] = 0.0
    return out


@pytest.mark.parametrize("where", ["row", "column", "matrix", "row-and-column"])
def test_sinkhorn_of_a_row_of_minus_inf_is_finite(where):
    from geolab.mixing import sinkhorn

    torch.manual_seed(0)
    logits = torch.randn(3, 4, 4, dtype=torch.float64)
    inf = float("-inf")
    if where in ("row", "row-and-column"):
        logits[1, 2, :] = inf
    if where in ("column", "row-and-column"):
        logits[2, :, 0] = inf
        logits[2, 3, 1] = inf  # a lone −∞ next to finite logits: weight 0 there
    if where == "matrix":
        logits[0] = inf
    logits.requires_grad_(True)
    M = sinkhorn(logits, iters=30)
    assert M.isfinite().all()
    assert torch.allclose(M.sum(-1), torch.ones(3, 4, dtype=torch.float64))
    assert torch.allclose(M, sinkhorn(_with_rows_at_zero(logits.detach()), iters=30), atol=1e-12)
    M.sum().backward()
    assert logits.grad.isfinite().all()


def test_sinkhorn_of_finite_logits_is_unchanged_by_the_minus_inf_guard(monkeypatch):
    from geolab import mixing
    from geolab.mixing import _sinkhorn_log, sinkhorn

    torch.manual_seed(1)
    small, wide = torch.randn(5, 4, 4), 40 * torch.randn(5, 4, 4)
    stack = lambda x: x.reshape(-1, 4, 4).permute(1, 2, 0).contiguous()  # noqa: E731
    unstack = lambda M: M.permute(2, 0, 1).reshape(5, 4, 4)  # noqa: E731
    for logits in (small, wide):
        assert torch.equal(sinkhorn(logits, 20), unstack(_sinkhorn_log(stack(logits), 20)))
    # Where the −∞ check is not read (an accelerator, a graph) the guard always runs: the same bits.
    eager = [sinkhorn(logits, 20) for logits in (small, wide)]
    monkeypatch.setattr(mixing, "_may_be_dead", lambda stacked: True)
    for logits, want in zip((small, wide), eager, strict=True):
        assert torch.equal(sinkhorn(logits, 20), want)


def _exact_stats(values: list[float]) -> tuple[float, float]:
    """Mean and population std by exact rational arithmetic (no overflow), an independent
    computation of beta_stats' two numbers."""
    from fractions import Fraction

    exact = [Fraction(v) for v in values]
    mean = sum(exact) / len(exact)
    var = sum((v - mean) ** 2 for v in exact) / len(exact)
    top = max(abs(v) for v in exact)
    return float(mean), float(top) * math.sqrt(float(var / top**2))


@pytest.mark.parametrize(
    "values",
    [[1e308, -1e308, 1e308], [1e308] * 3, [-1.7e308, 1.7e308, 0.0, 3.0], [1e200, -2e200]],
)
def test_beta_stats_of_huge_betas_is_finite_and_exact(values):
    from geolab.metrics import beta_stats

    stats = beta_stats(torch.tensor(values, dtype=torch.float64), bins=8)
    mean, std = _exact_stats(values)
    assert stats["mean"] == pytest.approx(mean, rel=1e-12, abs=1e-300)
    assert stats["std"] == pytest.approx(std, rel=1e-12, abs=1e-300)
    assert all(math.isfinite(e) for e in stats["edges"]) and sum(stats["hist"]) == len(values)
    assert stats["edges"][0] <= min(values) and stats["edges"][-1] >= max(values)


def test_beta_stats_of_ordinary_betas_is_the_plain_computation():
    from geolab.metrics import beta_stats

    b = torch.randn(1000, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    stats = beta_stats(b, bins=10)
    hist, edges = torch.histogram(b, bins=10, range=(b.min().item(), b.max().item()))
    assert stats["mean"] == b.mean().item() and stats["std"] == b.std(correction=0).item()
    assert stats["edges"] == edges.tolist() and stats["hist"] == hist.long().tolist()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_effective_rank_of_a_subnormal_state(dtype):
    """A state that decayed through hundreds of attention-only layers is subnormal: 1/max|x|
    overflows, and eigh failed on the inf·0 it made. Its rank is that of the same matrix at a
    normal scale (an exact power of two apart), 1/S for identical rows."""
    from geolab.metrics import effective_rank

    tiny = torch.finfo(dtype).tiny  # the smallest normal number: below it, subnormal
    rows = torch.randn(1, 64, dtype=dtype).expand(16, 64) * tiny / 8
    noise = torch.randn(16, 64, dtype=dtype, generator=torch.Generator().manual_seed(0))
    for X in (rows, noise * tiny / 16):
        assert torch.equal(X * 2.0**60 / 2.0**60, X)  # exactly representable when lifted
        got = effective_rank(X)
        assert got.isfinite() and got == pytest.approx(effective_rank(X * 2.0**60).item(), 1e-5)
    assert effective_rank(rows).item() == pytest.approx(1 / 16, rel=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_effective_rank_of_a_batch_is_each_matrix_alone(dtype):
    """Whether a batch needs the subnormal lift is decided once for the batch (the lift is
    skipped when no matrix needs it): each matrix's rank is the same bits as when it is ranked
    alone, in a batch of normal, subnormal, zero, NaN and −inf matrices."""
    from geolab.metrics import effective_rank

    gen = torch.Generator().manual_seed(4)
    normal = torch.randn(5, 9, 13, dtype=dtype, generator=gen)
    batch = normal.clone()
    batch[1] *= torch.finfo(dtype).tiny / 16
    batch[2] = 0.0
    batch[3, 0, 0] = math.nan
    batch[4, 1, 2] = -math.inf
    got = effective_rank(batch)
    for i in range(5):
        assert torch.equal(got[i].nan_to_num(-1.0), effective_rank(batch[i]).nan_to_num(-1.0))
    assert torch.equal(got[0], effective_rank(normal[0]))
    assert got[1].isfinite() and got[2] == 0 and got[3].isnan() and got[4].isnan()


def test_rank_of_400_attention_only_layers_is_the_floor(capsys):
    """`rank --residual noskip --no-mlp` deep enough to decay the state below float32's normal
    range: every rank finite, the last at the floor 1/S (within 5 %: a subnormal keeps only a
    few bits, so the collapsed rows differ by their rounding)."""
    argv = ["rank", "--residual", "noskip", "--no-mlp", "--layers", "400", "--batch", "1"]
    assert main([*argv, "--json"]) == 0
    ranks = [row["effective_rank"] for row in json.loads(capsys.readouterr().out)["profile"]]
    assert all(math.isfinite(r) for r in ranks) and ranks[-1] == pytest.approx(1 / 32, rel=0.05)


def test_mgt_refuses_an_init_that_overflows_and_04_draws_no_nan():
    """β₀ < 0 makes MGT's stream grow by |1 − α₀β₀| per step at init: 04 drew 40 of 100 ranks
    NaN at β₀ = −0.5, α₀ = 1. Such configs are refused with the reason, 04 names them, and every
    curve it does draw at the sliders' reachable extremes is finite."""
    from geolab import explore
    from geolab.rules.delta import MAX_INIT_GROWTH

    with pytest.raises(ValueError) as err:
        GeoConfig(residual="mgt", vocab_size=8, n_layer=50, beta0=-0.5, alpha0=1.0)
    assert "grows by |1 − α₀β₀|^steps = 1.5^100 = 1e18 at init and overflows float32" in str(
        err.value
    )
    view = explore.rank_view(("mgt", "mgt_ddl"), 100, beta0=-0.5, alpha0=1.0, reference=False)
    assert set(view.numbers["rejected"]) == {"mgt", "mgt_ddl"}
    assert any("not drawn" in label for label, _ in view.readout)
    # the sliders' extremes: β₀ = ±0.95 and the most negative β₀ allowed, α₀ = 1, both depths
    for depth, beta0 in ((12, -0.95), (200, -0.05), (200, 0.95)):
        assert (1 + 0.05) ** 400 <= MAX_INIT_GROWTH  # -0.05 is allowed at 200 layers
        view = explore.rank_view(("mgt", "mgt_ddl", "edelta"), depth, beta0=beta0, alpha0=1.0)
        assert not view.numbers["rejected"], view.numbers["rejected"]
        for curves in (view.numbers["ranks"], view.numbers["residuals"], view.numbers["clouds"]):
            assert all(np.isfinite(c).all() for c in curves.values())


def test_an_empty_out_dir_is_refused_by_the_python_api():
    from geolab.train import TrainConfig

    with pytest.raises(ValueError, match="TrainConfig.out_dir='' is not allowed; name a folder"):
        TrainConfig(out_dir="")


def test_resume_on_another_task_of_the_same_shape_is_refused(tmp_path):
    """echo and near_pi feed the same model (64-dim vectors, 7 steps): only config.json's task
    record tells them apart."""
    from geolab.tasks import get_task
    from geolab.train import TrainConfig, train

    echo = get_task("echo", steps=8, n_train=8, n_val=2)
    near = get_task("near_pi", steps=8, n_train=8, n_val=2)
    cfg = GeoConfig(n_layer=1, d_model=16, n_head=2, **echo.model_fields())
    tc = dict(steps=2, batch_size=2, warmup=1, device="cpu", out_dir=str(tmp_path / "run"))
    train(cfg, echo, TrainConfig(**tc))
    with pytest.raises(ValueError) as err:
        train(cfg, near, TrainConfig(**tc, resume=True))
    assert "resume: task='near_pi' differs from the run's task='echo'" in str(err.value)


def test_resume_after_config_json_was_deleted_writes_it_anew(tmp_path, finished_run, capsys):
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    (out / "config.json").unlink()
    assert main([*TINY, "--out", str(out), "--resume", "--steps", "4"]) == 0
    assert "config.json' is missing or damaged: it is written anew" in capsys.readouterr().err
    config = json.loads((out / "config.json").read_text())
    data = config["task"].pop("data")  # the sha256 of the task's tensors
    assert config["task"] == {"name": "gyroscope", "seq_len": 255, "n_train": 16, "n_val": 4}
    assert len(data) == 64 and config["code"]["geolab"]
    assert config["train"]["steps"] == 4 and config["resumes"] == [{"step": 3, "steps": [3, 4]}]


def test_the_default_warmup_longer_than_steps_is_said(tmp_path, capsys):
    assert main([*TINY, "--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    assert (
        "note: --warmup 100 is longer than --steps 3: the learning rate rises only to 3e-05, "
        "not --lr 0.001" in err
    )


def _rows(*names):
    check = {"name": "c", "passed": True, "points": 1.0, "message": "ok"}
    return [
        {"submission": n, "status": "ok", "score": 1.0, "max_score": 1.0, "seconds": 0.1,
         "seed": 1, "error": "", "checks": [check]}
        for n in names
    ]  # fmt: skip


def test_a_gradebook_is_replaced_only_with_force_and_without_stale_feedback(tmp_path):
    from geolab.assignments.gradebook import check_gradebook, write_gradebook

    out = tmp_path / "gb.csv"
    check_gradebook(out)  # nothing there yet
    write_gradebook(_rows("alice.py", "bob.py"), out)
    with pytest.raises(ValueError, match="already holds a gradebook"):
        check_gradebook(out)
    check_gradebook(out, force=True)
    _, notes = write_gradebook(_rows("alice.py"), out)
    assert sorted(p.name for p in (tmp_path / "gb_feedback").iterdir()) == ["alice.md"]
    assert notes == [
        "removed 1 feedback file(s) of an earlier gradebook for students not in this run: bob.md"
    ]
    with pytest.raises(ValueError, match=r"normalisation\): 'alice.py' and 'Alice.PY'; rename"):
        write_gradebook(_rows("alice.py", "Alice.PY"), out)


def test_a_broken_hidden_checks_file_is_one_line(tmp_path):
    from geolab.assignments.catalog import hidden_tasks

    (tmp_path / "A1.py").write_text("TASKS = {\n    'x': (\n")
    with pytest.raises(ValueError) as err:
        hidden_tasks(tmp_path, "A1")
    assert f"hidden checks {str(tmp_path / 'A1.py')!r} cannot be loaded (SyntaxError line" in str(
        err.value
    )


def test_text_data_that_cannot_be_read_is_one_line(tmp_path, monkeypatch):
    from geolab.data import check_text

    path = tmp_path / "input.txt"
    path.write_text("text\n")
    if os.geteuid() == 0:  # root reads any file: make the read itself fail as it would
        monkeypatch.setattr(Path, "open", lambda self, *a: (_ for _ in ()).throw(
            PermissionError(13, "Permission denied")))  # fmt: skip
    else:
        path.chmod(0)
    with pytest.raises(ValueError, match=r"input.txt' cannot be read \(Permission denied\)"):
        check_text(path)


def test_a_damaged_corpus_cache_is_rebuilt(tmp_path):
    from geolab.data import load_shakespeare

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "input.txt").write_text("to be or not to be\n" * 30)
    first = load_shakespeare(tmp_path / "data", tmp_path / "cache")
    (cached,) = (tmp_path / "cache").glob("*.pt")
    for damaged in (cached.read_bytes()[:100], b"", torch_bytes({"version": 1, "splits": 3})):
        cached.write_bytes(damaged)
        with pytest.warns(UserWarning, match="rebuilding it"):
            again = load_shakespeare(tmp_path / "data", tmp_path / "cache")
        assert again.vocab == first.vocab
        assert all(torch.equal(again.splits[k], first.splits[k]) for k in first.splits)


def torch_bytes(obj) -> bytes:
    import io

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 0.0, -1.0])
def test_the_graders_python_api_refuses_limits_that_are_not_finite_and_positive(tmp_path, value):
    from geolab.assignments.grade import grade_dir
    from geolab.assignments.sandbox import Limits

    with pytest.raises(ValueError, match=r"memory_gb=.* must be a finite number > 0"):
        Limits(memory_gb=value)
    for field in ("timeout", "task_timeout"):
        with pytest.raises(ValueError, match=rf"{field}=.* must be a finite number > 0"):
            grade_dir(tmp_path, "A1", **{field: value})


# --- Concurrency, faults and full disks: nothing a user had is lost ------------------------


def symlink_to(target: str):
    def setup(tmp: Path, finished: Path) -> None:
        (tmp / "link").symlink_to(target.replace("{tmp}", str(tmp)))

    return setup


OUT_FAULTS = [  # (id, setup, --out, fragment): where a folder is to be written
    ("file", a_file, "{tmp}/file", "is not allowed: it is a file, not a folder"),
    ("under-a-file", a_file, "{tmp}/file/run", "is not allowed: it lies under the file"),
    ("300-chars", None, "{tmp}/" + "x" * 300, "is 300 bytes long; this file system allows"),
    ("self-link", symlink_to("{tmp}/link"), "{tmp}/link", "links back to itself"),
    ("dangling-link", symlink_to("{tmp}/gone/run"), "{tmp}/link", "which does not exist"),
]
OUT_COMMANDS = {  # a command that writes a folder, before its --out
    "train": TINY,
    "reproduce": ["reproduce", "ablation", "--scale", "tiny", "--no-png"],
    "release": ["release", "--src", str(REPO / "assignments" / "instructor")],
}


@pytest.mark.parametrize("command", OUT_COMMANDS)
@pytest.mark.parametrize("fault", OUT_FAULTS, ids=[f[0] for f in OUT_FAULTS])
def test_an_output_folder_that_cannot_be_written_is_refused_up_front(
    command, fault, tmp_path, capsys, monkeypatch
):
    """A file, a path under a file, a name longer than the file system allows, a symbolic link
    to itself or to nothing: one line before any work, nothing written."""
    monkeypatch.chdir(tmp_path)
    _, setup, out, fragment = fault
    if setup is not None:
        setup(tmp_path, None)
    before = sorted(tmp_path.rglob("*"))
    assert main([*OUT_COMMANDS[command], "--out", out.replace("{tmp}", str(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"geolab {command}: error: ") and err.count("\n") == 1, err
    assert fragment in err and "Traceback" not in err
    assert sorted(tmp_path.rglob("*")) == before


def _holder(out: Path, steps: int = 10**6) -> subprocess.Popen:
    """A real `geolab train` into ``out`` that runs until it is killed (and saves no checkpoint
    before), once it holds the lock and has logged a step."""
    cmd = [sys.executable, "-m", "geolab", *TINY, "--steps", str(steps), "--ckpt-every", "0"]
    cmd += ["--out", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    lock, log = out / ".geolab.lock", out / "metrics.jsonl"
    for _ in range(1500):
        mine = lock.is_file() and lock.read_text().startswith(f"{proc.pid}\n")
        if mine and log.is_file() and log.stat().st_size:  # it trains: a step is logged
            return proc
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("the first geolab train never took its lock")


def test_two_trainings_into_one_folder_the_second_is_refused_a_dead_holder_taken_over(
    tmp_path, capsys
):
    """Two real processes: the second `geolab train` into the folder the first is training in
    exits 2 with one line naming the first's PID and command, and writes nothing; after the
    first is killed (SIGKILL: it cannot release), the next run takes the lock over, says so."""
    out = tmp_path / "run"
    first = _holder(out)
    try:
        files = {p.name: p.read_bytes() for p in out.iterdir() if p.name != ".geolab.lock"}
        cmd = [sys.executable, "-m", "geolab", *TINY, "--out", str(out)]
        second = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert second.returncode == 2, second.stderr
        assert second.stderr.count("\n") == 1 and "Traceback" not in second.stderr
        assert f"is in use by process {first.pid} (" in second.stderr
        assert "geolab train --task gyroscope" in second.stderr
        assert "--steps 1000000" in second.stderr
        kept = {p.name: p.read_bytes() for p in out.iterdir() if p.name in files}
        assert kept.keys() == files.keys()
        assert kept["config.json"] == files["config.json"]  # the first run's, not replaced
    finally:
        first.kill()
        first.wait()
    assert main([*TINY, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"took over the lock left by process {first.pid}" in err and "no longer runs" in err
    assert load_checkpoint(out / "ckpt.pt")["step"] == 3
    assert not (out / ".geolab.lock").exists()  # released


@pytest.mark.parametrize(
    "argv, folder",
    [
        (["reproduce", "ablation", "--scale", "tiny", "--no-png", "--out", "{tmp}/res"], "res"),
        ([*G, "--out", "{tmp}/books/gb.csv"], "books"),
        ([*OUT_COMMANDS["release"], "--out", "{tmp}/rel"], "rel"),
        ([*TINY, "--resume", "--out", "{tmp}/run"], "run"),
    ],
    ids=["reproduce", "grade", "release", "train-resume"],
)
def test_every_writer_is_refused_while_another_holds_its_folder(
    argv, folder, tmp_path, finished_run, capsys
):
    from geolab.lock import hold

    submissions(tmp_path, finished_run)
    _run_copy(tmp_path, finished_run)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with hold(tmp_path / folder, "--out"):
        argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"is in use by process {os.getpid()} (" in err, err
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before


def test_a_finished_run_without_its_checkpoint_is_refused(tmp_path, finished_run, capsys):
    """Its log shows a checkpoint was saved: neither a resume nor a fresh run replaces it."""
    ckpt = _run_copy(tmp_path, finished_run)
    out = ckpt.parent
    log = (out / "metrics.jsonl").read_bytes()
    ckpt.unlink()
    for extra in ([], ["--resume"]):
        assert main([*TINY, "--out", str(out), *extra]) == 2
        err = capsys.readouterr().err
        assert "its ckpt.pt is gone, but its metrics.jsonl shows one was saved at step 3" in err
    ckpt.symlink_to(tmp_path / "elsewhere.pt")
    assert main([*TINY, "--out", str(out), "--resume"]) == 2
    assert "is a symbolic link to" in capsys.readouterr().err
    assert (out / "metrics.jsonl").read_bytes() == log


def test_a_resume_checks_the_data_against_the_checkpoint_without_config_json(
    tmp_path, finished_run, capsys
):
    ckpt = _run_copy(tmp_path, finished_run)
    (ckpt.parent / "config.json").unlink()
    for flag, fragment in (
        (["--n-train", "32"], "resume: n_train=32 differs from the run's n_train=16"),
        (["--n-val", "8"], "resume: n_val=8 differs from the run's n_val=4"),
    ):
        assert main([*TINY, "--out", str(ckpt.parent), "--resume", *flag]) == 2
        assert fragment in capsys.readouterr().err
    state = load_checkpoint(ckpt)
    del state["task"]  # as a checkpoint written before it recorded its task
    torch.save(state, ckpt)
    assert main([*TINY, "--out", str(ckpt.parent), "--resume", "--n-train", "32"]) == 2
    assert "does not record the run's task and data" in capsys.readouterr().err
    assert not (ckpt.parent / "config.json").exists()


def test_a_resume_refuses_another_n_val(tmp_path, finished_run, capsys):
    ckpt = _run_copy(tmp_path, finished_run)
    assert main([*TINY, "--out", str(ckpt.parent), "--resume", "--n-val", "8"]) == 2
    assert "resume: n_val=8 differs from the run's n_val=4" in capsys.readouterr().err


def test_a_checkpoint_holding_nan_is_never_resumed(tmp_path, finished_run, capsys):
    ckpt = _run_copy(tmp_path, finished_run)
    state = load_checkpoint(ckpt)
    name = next(iter(state["model"]))
    state["model"][name] = torch.full_like(state["model"][name], float("nan"))
    torch.save(state, ckpt)
    assert main([*TINY, "--out", str(ckpt.parent), "--resume", "--steps", "5"]) == 2
    assert f"holds NaN or Inf in its weight {name}" in capsys.readouterr().err


def test_weights_that_are_not_finite_are_not_saved_as_a_good_checkpoint(tmp_path):
    """A weight the loss never reads (so the loss and gradients stay finite) holding NaN: the
    checkpoint is not written, and the error says none is good."""
    from geolab.model import GeoTransformer
    from geolab.tasks import get_task
    from geolab.train import TrainConfig, TrainingDiverged, train

    task = get_task("gyroscope", seed=0, n_train=16, n_val=4)
    cfg = GeoConfig(n_layer=1, d_model=16, n_head=2, **task.model_fields())
    model = GeoTransformer(cfg)
    model.spare = torch.nn.Parameter(torch.tensor([1.0, float("nan")]))
    out = str(tmp_path / "r")
    tc = TrainConfig(steps=3, batch_size=4, device="cpu", progress=False, out_dir=out)
    with pytest.raises(TrainingDiverged, match="weight spare is NaN or Inf after step 3; not "):
        train(cfg, task, tc, model=model)
    assert not (tmp_path / "r" / "ckpt.pt").exists()


@pytest.fixture
def small_disk(tmp_path):
    """mount(size) -> a folder on a tmpfs of ``size`` bytes (root's ``mount``; skipped where
    mounting is not permitted), unmounted after the test."""
    mounted = []

    def mount(size: int, *options: str) -> Path:
        where = tmp_path / f"disk{len(mounted)}"
        where.mkdir()
        opts = ",".join([f"size={size}", *options])
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)],
                              capture_output=True, text=True)  # fmt: skip
        if done.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
        mounted.append(where)
        return where

    yield mount
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_disk_without_room_for_one_checkpoint_is_refused_up_front(small_disk, capsys):
    disk = small_disk(16 * 1024)
    assert main([*TINY, "--out", str(disk / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "but one checkpoint needs at least" in err, err
    assert list(disk.iterdir()) == []


def test_a_disk_that_fills_up_keeps_the_last_checkpoint_and_log(small_disk, capsys):
    """Room for one checkpoint but not a second beside it (the atomic rename needs both): the
    second save fails, one line, the first checkpoint and the log are whole, no temp file."""
    disk = small_disk(200 * 1024)
    out = disk / "run"
    assert main([*TINY, "--steps", "4", "--ckpt-every", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("geolab train: error: cannot write ") and "ckpt.pt" in err, err
    assert "No space left on device" in err and "the checkpoint of step 1" in err
    assert "Traceback" not in err
    assert load_checkpoint(out / "ckpt.pt")["step"] == 1
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1] and rows[0]["checkpoint"] is True
    assert sorted(p.name for p in out.iterdir()) == ["ckpt.pt", "config.json", "metrics.jsonl"]


def test_a_read_only_run_folder_is_refused_before_a_resume(small_disk, finished_run, capsys):
    disk = small_disk(1024 * 1024)
    shutil.copytree(finished_run, disk / "run")
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    assert main([*TINY, "--out", str(disk / "run"), "--resume", "--steps", "5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Read-only file system" in err, err
    assert load_checkpoint(disk / "run" / "ckpt.pt")["step"] == 3


# --- the packed runner: signals, dead workers, damaged files ------------------------------

SWEEP = [
    "reproduce",
    "language_model",
    "--scale",
    "tiny",
    "--seeds",
    "1",
    "--no-png",
    "--jobs",
    "2",
]


def _children(pid: int) -> dict[int, str]:
    """pid -> command line of the processes whose parent is ``pid`` (Linux /proc)."""
    kids = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmd = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            kids[int(stat.parent.name)] = cmd
    return kids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _sweep(out: Path):
    """A real `geolab reproduce ... --jobs 2` and its two workers, once both run."""
    cmd = [sys.executable, "-m", "geolab", *SWEEP, "--out", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(1500):
        workers = [p for p, c in _children(proc.pid).items() if "spawn_main" in c]
        if len(workers) == 2:
            return proc, workers
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("the sweep never ran two workers")


@pytest.mark.parametrize(
    "signum",
    [signal.SIGTERM, signal.SIGINT, signal.SIGKILL],
    ids=["SIGTERM", "SIGINT", "SIGKILL"],
)
@pytest.mark.slow  # real processes, ~20 s each on 2 cores; the default run has the in-process
# test below and the exit status test
def test_a_signal_to_a_packed_sweep_stops_its_workers_and_keeps_finished_runs(signum, tmp_path):
    """SIGTERM or SIGINT to the parent: its workers and the resource tracker end, one line,
    exit 143 or 130, no result merged. SIGKILL (nothing to handle): the workers still end (the
    kernel signals them when their parent dies). (That finished runs stay saved: below.)"""
    out = tmp_path / "res"
    proc, workers = _sweep(out)
    others = [p for p in _children(proc.pid) if p not in workers]  # the resource tracker
    os.kill(proc.pid, signum)
    _, err = proc.communicate(timeout=120)
    deadline = time.monotonic() + 30
    while any(map(_alive, workers + others)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(map(_alive, workers + others)), "a worker or the tracker outlived its parent"
    if signum == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
        return
    assert proc.returncode == 128 + signum, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"geolab reproduce: {signal.Signals(signum).name}: stopped the work")
    assert "Traceback" not in err and "runs finished" in last
    assert not (out / "language_model-tiny.json").exists()


@pytest.mark.slow
def test_a_dead_worker_is_one_line_naming_its_run_and_the_others_go_on(tmp_path):
    out = tmp_path / "res"
    proc, workers = _sweep(out)
    os.kill(workers[0], signal.SIGKILL)
    stdout, err = proc.communicate(timeout=600)
    assert proc.returncode == 3, err
    (line,) = [x for x in stdout.splitlines() if "died" in x]
    assert f"worker {workers[0]} training " in line and "(killed by SIGKILL)" in line
    dead = line.split(" training ")[1].split()[0]
    saved = sorted(p.stem for p in (out / "language_model-tiny-runs").glob("*.json"))
    assert len(saved) == 3 and dead not in saved  # every other run finished
    assert err.strip().count("\n") == 0 and f"1 lost their worker: {dead}" in err
    assert "Traceback" not in err and "BrokenProcessPool" not in err


def square(x: int, settings: dict, log) -> dict:
    """A run for the packed runner: its job's square."""
    return {"square": x * x}


def fault(x: int, settings: dict, log) -> dict:
    """A run for the packed runner's workers: job 1 kills its worker, job 2 sleeps for ten
    minutes, the others are quick."""
    if x == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    if x == 2:
        time.sleep(600)
    return {"square": x * x}


def test_a_packed_sweep_stopped_by_sigterm_keeps_what_finished_and_ends_its_workers(tmp_path):
    """SIGTERM once the first run landed: Stopped (exit 143 on the command line) naming the
    signal and the runs kept, the finished run saved, the worker asleep in job 2 ended."""
    from geolab.experiments import pack

    def log(line: str) -> None:
        if "[1/3] 0 done" in line:
            os.kill(os.getpid(), signal.SIGTERM)

    def workers() -> list[int]:
        return [p for p, cmd in _children(os.getpid()).items() if "spawn_main" in cmd]

    with pack.sweep(run_dir=tmp_path), pytest.raises(pack.Stopped) as stop:
        pack.run_jobs(fault, [(0,), (2,), (3,)], {"jobs": 2}, log)
    assert stop.value.signum == signal.SIGTERM
    assert str(stop.value).startswith("SIGTERM: stopped the workers; 1 of 3 runs finished")
    assert json.loads((tmp_path / "0.json").read_text())["result"] == {"square": 0}
    assert not (tmp_path / "2.json").exists()
    assert not [p for p in workers() if _alive(p)]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler put back


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_command_prints_its_line_and_exits_128_plus_the_signal(signum, capsys):
    from geolab.cli.errors import run
    from geolab.experiments import pack

    def stopped(args):
        raise pack.Stopped(signum, f"{signal.Signals(signum).name}: stopped the workers")

    assert run("geolab reproduce", stopped, None) == 128 + signum
    err = capsys.readouterr().err
    assert err == f"geolab reproduce: {signal.Signals(signum).name}: stopped the workers\n"


def test_a_worker_that_dies_is_one_line_and_the_other_runs_go_on(tmp_path):
    from geolab.experiments import pack

    lines = []
    with pack.sweep(run_dir=tmp_path), pytest.raises(pack.Incomplete) as err:
        pack.run_jobs(fault, [(0,), (1,), (3,)], {"jobs": 2}, lines.append)
    (died,) = [x for x in lines if "died" in x]
    assert " training 1 died (killed by SIGKILL); the other runs go on" in died
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["0.json", "3.json"]
    assert "2 run(s) finished" in str(err.value) and "1 lost their worker: 1" in str(err.value)


@pytest.mark.parametrize(
    "content, why",
    [
        (b"", "not JSON: empty or cut short"),
        (b'{"key": "2", "identity": {"fn": ', "not JSON: empty or cut short"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        (b"[1, 2]", "a JSON list, not a run record"),
        ("no-result", "it lacks result"),
        ("empty-result", "its result is empty"),
    ],
    ids=["empty", "truncated", "not-utf8", "a-list", "missing-key", "empty-result"],
)
def test_a_damaged_saved_run_is_named_with_delete_it_or_pass_fresh(content, why, tmp_path):
    from geolab.experiments import pack

    settings = {"train": {"steps": 1}}
    with pack.sweep(run_dir=tmp_path):
        assert pack.run_jobs(square, [(2,), (3,)], settings, print) == [
            {"square": 4},
            {"square": 9},
        ]
    path = tmp_path / "2.json"
    if isinstance(content, str):
        record = json.loads(path.read_text())
        if content == "no-result":
            del record["result"]
        else:
            record["result"] = {}
        content = json.dumps(record).encode()
    path.write_bytes(content)
    with pack.sweep(run_dir=tmp_path), pytest.raises(ValueError) as err:
        pack.run_jobs(square, [(2,), (3,)], settings, print)
    assert str(err.value) == (
        f"{path} is damaged ({why}); delete it or pass --fresh to retrain the runs of this folder"
    )
    with pack.sweep(run_dir=tmp_path, fresh=True):  # --fresh retrains it
        assert pack.run_jobs(square, [(2,), (3,)], settings, print) == [
            {"square": 4},
            {"square": 9},
        ]


@pytest.mark.parametrize(
    "content",
    [
        "{",
        "[]",
        '{"cuda (H200)": {"flops_per_s": 0, "runs_per_min": 1}}',
        '{"cuda (H200)": {"flops_per_s": -2e13, "runs_per_min": 30}}',
        '{"cuda (H200)": {"flops_per_s": 2e13}}',
    ],
    ids=["truncated", "a-list", "zero-flops", "negative-flops", "missing-key"],
)
def test_a_damaged_throughput_file_is_ignored_with_a_note(content, tmp_path, capsys):
    from geolab.experiments import plan

    (tmp_path / "throughput.json").write_text(content)
    argv = ["reproduce", "language_model", "--scale", "paper", "--dry-run", "--out", str(tmp_path)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "throughput.json" in captured.err and "ignored" in captured.err
    assert "1e14 FLOP/s" in captured.out and "-" not in captured.out.split("total ≈ ")[1][:3]
    row = {"runs": 2, "devices": 1, "jobs": 1, "wall_s": 6.0, "runs_per_min": 20.0}
    notes = []
    path = plan.record_throughput(tmp_path, {"cpu": {**row, "flops_per_s": 1e9}}, {}, notes.append)
    assert path is not None and "replaced" in notes[0]
    assert list(json.loads(path.read_text())) == ["cpu"]


def test_a_throughput_file_that_cannot_be_written_never_costs_the_result(tmp_path):
    from geolab.experiments import plan

    (tmp_path / "throughput.json").mkdir()  # in the way of the rename
    row = {"runs": 2, "devices": 1, "jobs": 1, "wall_s": 6.0, "runs_per_min": 20.0}
    notes = []
    assert (
        plan.record_throughput(tmp_path, {"cpu": {**row, "flops_per_s": 1e9}}, {}, notes.append)
        is None
    )
    assert "was not written" in notes[-1] and not list(tmp_path.glob(".throughput*"))


def test_the_memory_check_reads_the_process_s_address_space_limit(tmp_path):
    """Under `ulimit -v` (RLIMIT_AS) a model that fits the machine's free memory but not the
    process's limit is refused up front, not a traceback at the first allocation."""
    import resource

    limit = 2 * 2**30

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    argv = [
        *TINY,
        "--layers",
        "4",
        "--d-model",
        "2048",
        "--heads",
        "8",
        "--out",
        str(tmp_path / "r"),
    ]
    cmd = [sys.executable, "-m", "geolab", *argv]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, preexec_fn=cap, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert (
        done.stderr.count("\n") == 1
        and "is not allowed here: training needs at least" in done.stderr
    )
    free = float(done.stderr.split("but cpu has ")[1].split(" GiB")[0])
    assert free < limit / 2**30  # the limit's room, not the machine's
    assert not (tmp_path / "r").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="paper scale trains on the GPU here")
def test_paper_scale_on_a_cpu_prints_the_estimate_and_needs_yes(tmp_path, capsys):
    from geolab.lock import hold

    argv = ["reproduce", "language_model", "--scale", "paper", "--out", str(tmp_path / "res")]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert "language_model at scale 'paper'" in out and "GPU-hours" in out
    assert err.count("\n") == 1 and "--scale paper is not started on cpu" in err
    assert "without --yes" in err
    assert not (tmp_path / "res").exists()
    with hold(tmp_path / "res", "--out"):  # --yes goes on to the next step: the folder's lock
        assert main([*argv, "--yes"]) == 2
    out, err = capsys.readouterr()
    assert "GPU-hours" in out and "is in use by process" in err


def test_a_launch_whose_time_limit_leaves_runs_out_exits_3_naming_them(
    tmp_path, monkeypatch, capsys
):
    """--launcher local --time-limit 0.001: the array job starts its first run and leaves the
    rest out; exit 3 as the help says (not a "still missing" error, exit 2)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    argv = ["reproduce", "language_model", "--scale", "tiny", "--seeds", "1", "--no-png"]
    argv += ["--out", str(tmp_path / "res"), "--launcher", "local", "--time-limit", "0.001"]
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("geolab reproduce: time limit: ")
    assert "left out: " in err and "rerun the same command" in err
    assert not (tmp_path / "res" / "language_model-tiny.json").exists()


def _views():
    from geolab.explore.gradients import gradient_view
    from geolab.explore.rank import rank_view
    from geolab.rules import glossary
    from geolab.tasks import get_task

    return rank_view, gradient_view, glossary, get_task


UNCHECKED = [  # (id, call on (rank_view, gradient_view, glossary, get_task), fragment)
    ("rank-seq-0", lambda r, g, gl, t: r(("preln",), 2, seq_len=0), "seq_len=0 is not allowed"),
    ("rank-seq-1", lambda r, g, gl, t: r(("preln",), 2, seq_len=1), "seq_len=1 is not allowed"),
    ("rank-d-0", lambda r, g, gl, t: r(("preln",), 2, d_model=0), "d_model=0 is not allowed"),
    ("rank-str", lambda r, g, gl, t: r("preln", 2), "rules='preln' is not allowed; pass a list"),
    ("grad-seq-1", lambda r, g, gl, t: g(("preln",), 2, seq_len=1), "seq_len=1 is not allowed"),
    ("grad-str", lambda r, g, gl, t: g("preln", 2), "rules='preln' is not allowed"),
    ("glossary-str", lambda r, g, gl, t: gl("preln"), "names='preln' is not allowed; pass a list"),
    ("task-seed", lambda r, g, gl, t: t("copy", seed=2**63), f"seed={2**63} is not allowed"),
]


@pytest.mark.parametrize(
    "call, fragment", [c[1:] for c in UNCHECKED], ids=[c[0] for c in UNCHECKED]
)
def test_a_value_that_would_reach_the_machine_unchecked_is_refused(call, fragment):
    with pytest.raises(ValueError) as err:
        call(*_views())
    assert fragment in str(err.value)


def test_a_token_outside_the_vocabulary_is_refused_by_the_stacked_model():
    from geolab.stack import stack_states

    cfg = GeoConfig(residual="preln", n_layer=1, d_model=8, n_head=2, vocab_size=16, seq_len=4)
    with pytest.raises(ValueError, match=r"token ids in \[-1, 2\] are not allowed"):
        stack_states(cfg, 0, torch.tensor([[0, 1, -1, 2]]))


def test_numpy_numbers_are_taken_as_python_numbers():
    """np.int64 / np.float32 (what arrays and widgets hand over) are accepted and stored as
    int / float, so config.json and the checks see plain numbers."""
    from geolab.train import TrainConfig

    tc = TrainConfig(steps=np.int64(3), lr=np.float32(0.5), seed=np.uint32(7))
    assert (type(tc.steps), type(tc.lr), type(tc.seed)) == (int, float, int)
    cfg = GeoConfig(n_layer=np.int64(2), d_model=np.int32(16), n_head=2, d_in=4, d_out=4)
    assert type(cfg.n_layer) is int and type(cfg.d_model) is int
    json.dumps(cfg.to_dict()) and json.dumps(tc.__dict__)
    with pytest.raises(ValueError, match="TrainConfig.steps=0 is not allowed"):
        TrainConfig(steps=np.int64(0))


def _script(name: str):
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(REPO / "scripts"))


def _folder_at_a_page(tmp: Path) -> list[str]:
    (tmp / "out" / "04_rank_collapse.ipynb").mkdir(parents=True)
    return ["--no-execute", str(tmp / "out")]


SCRIPT_FAULTS = [  # script, setup -> argv, fragment
    pytest.param(
        "make_ipynb", lambda t: ["--bogus"], "--bogus is not an option; usage:", id="bogus"
    ),
    pytest.param(
        "make_ipynb", lambda t: [str(a_file(t, None) or t / "file")], "it is a file", id="a-file"
    ),
    pytest.param("make_ipynb", _folder_at_a_page, "is a folder, not a file", id="page-a-folder"),
    pytest.param("make_ipynb", lambda t: ["a", "b"], "at most 1 folder(s)", id="two-folders"),
    pytest.param(
        "make_ipynb",
        lambda t: ["--no-execute", "/sys/kernel/geolab"],
        "cannot write in",
        marks=NO_SYSFS,
        id="read-only",
    ),
    pytest.param("make_html", lambda t: ["--bogus"], "--bogus is not an option", id="html-bogus"),
    pytest.param(
        "make_html", lambda t: [str(t), str(t / "html")], "holds no .ipynb", id="html-no-ipynb"
    ),
]


@pytest.mark.parametrize("script, setup, fragment", SCRIPT_FAULTS)
def test_a_notebook_script_refuses_bad_flags_and_outputs_before_any_page(
    script, setup, fragment, tmp_path, capsys, monkeypatch
):
    pytest.importorskip("nbclient")
    if script == "make_html":
        pytest.importorskip("nbconvert")
    monkeypatch.chdir(tmp_path)
    module = _script(script)
    argv = setup(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    assert module.run(script, module.main, argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{script}: error: ") and err.count("\n") == 1 and fragment in err, err
    assert sorted(tmp_path.rglob("*")) == before  # no page, no folder named --bogus


def test_a_damaged_ipynb_is_one_line_before_any_html_page(tmp_path, capsys):
    pytest.importorskip("nbconvert")
    make_ipynb, make_html = _script("make_ipynb"), _script("make_html")
    src = tmp_path / "ipynb"
    assert make_ipynb.run("make_ipynb", make_ipynb.main, ["--no-execute", str(src)]) == 0
    (src / "03_cayley_householder.ipynb").write_text('{"cells": [')  # cut short
    capsys.readouterr()
    assert make_html.run("make_html", make_html.main, [str(src), str(tmp_path / "html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "03_cayley_householder.ipynb is damaged" in err
    assert not (tmp_path / "html").exists()


def test_a_mixer_product_past_float64_stops_its_curve_instead_of_showing_inf():
    """streams_view(depth=1000, spread=10): JPmHC's product leaves float64 (it was an SVD of
    inf); its curves stop at the layer before, said in the readout, and no number is inf."""
    from geolab.explore.streams import OVERFLOW, streams_view

    view = streams_view(5, 10, 1000)
    over = view.numbers["overflow"]
    assert over and all(1 <= depth < 1000 for depth in over.values())
    for family, depth in over.items():
        f, b = view.numbers["final_gain"][family]
        assert math.isfinite(f) and math.isfinite(b) and f <= 4 * OVERFLOW
        (label,) = [k for k, _ in view.readout if k.startswith(f"{family}: Amax gain")]
        assert f"at depth {depth}" in label and "beyond float64" in label
    for trace in view.figures["gain"].data:  # a gap after the stop, never an inf drawn
        assert not np.isinf(np.asarray(trace.y, dtype=float)).any(), trace.name
    text = json.dumps(view.numbers, default=str)
    assert "Infinity" not in text and "inf" not in text


def test_a_sweep_whose_disk_fills_keeps_the_runs_saved_before(small_disk):
    from geolab.experiments import pack

    disk = small_disk(4096)  # one page: the first run's file, not the second
    with pack.sweep(run_dir=disk), pytest.raises(ValueError) as err:
        pack.run_jobs(square, [(2,), (3,)], {"train": {"steps": 1}}, print)
    assert f"cannot write {disk / '3.json'} (No space left on device)" in str(err.value)
    assert json.loads((disk / "2.json").read_text())["result"] == {"square": 4}
    assert sorted(p.name for p in disk.iterdir()) == ["2.json"]  # no temporary file left


def test_a_task_takes_numpy_counts():
    from geolab.tasks import get_task

    task = get_task("copy", seed=np.int64(1), n_train=np.int64(64), n_val=np.int32(8))
    assert (task.n_samples("train"), task.n_samples("val")) == (64, 8)


# issue 55, items 7-13: the faults a user still met end in one clear line, nothing lost


def test_a_full_disk_after_training_writes_the_result_and_keeps_the_runs(small_disk, capsys):
    """1 MiB: room for the runs and the result, not for plotly.min.js (≈ 4.6 MB): one line
    that says what was written and what to run, no cut file; with room, --force trains none of
    the saved runs again and draws the figures."""
    disk = small_disk(1 << 20)
    argv = ["reproduce", "ablation", "--scale", "tiny", "--no-png", "--out", str(disk / "res")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "wrote '" in err and "but not all its figures (No space left on device)" in err
    assert "the trained runs are kept in" in err and "with --force" in err
    names = sorted(p.name for p in (disk / "res").iterdir())
    assert names == ["ablation-tiny-runs", "ablation-tiny.json", "throughput.json"], names
    assert json.loads((disk / "res" / "ablation-tiny.json").read_text())["figures"] == []
    subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
    assert main([*argv, "--force"]) == 0
    result = json.loads((disk / "res" / "ablation-tiny.json").read_text())
    assert result["provenance"]["runs"]["trained"] == 0 and result["figures"]
    from plotly.offline import get_plotlyjs

    assert (disk / "res" / "plotly.min.js").read_text() == get_plotlyjs()


def test_a_cut_plotly_bundle_is_replaced(tmp_path):
    import plotly.graph_objects as go

    from geolab.experiments.export import save_figures

    (tmp_path / "plotly.min.js").write_text("/* cut short by a full disk")
    save_figures({"f": go.Figure()}, tmp_path, "x", False, print)
    from plotly.offline import get_plotlyjs

    assert (tmp_path / "plotly.min.js").read_text() == get_plotlyjs()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plotly.min.js", "x-f.html"]


def test_a_lock_that_cannot_be_removed_adds_no_second_traceback(tmp_path, monkeypatch, capsys):
    """The run folder made read-only mid-run (root writes anyway, so the unlink is made to fail
    as it would): the command's own outcome stands, and the next writer takes the lock."""
    from geolab.lock import LOCK, hold

    unlink = Path.unlink

    def refuse(self, missing_ok=False):
        if self.name == LOCK:
            raise PermissionError(13, "Permission denied", str(self))
        return unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", refuse)
    with pytest.raises(ValueError, match="the command's own error"), hold(tmp_path, "--out"):
        raise ValueError("the command's own error")
    assert main([*TINY, "--out", str(tmp_path / "run")]) == 0
    assert "Traceback" not in capsys.readouterr().err
    with hold(tmp_path / "run", "--out"):  # the flock went with the descriptor
        pass


def test_a_2_gib_data_file_of_nul_bytes_is_refused_from_its_first_chunk(tmp_path):
    import tracemalloc

    from geolab.data import check_text

    path = tmp_path / "input.txt"
    with open(path, "wb") as f:
        f.truncate(2 << 30)  # sparse: 2 GiB of NUL bytes, no disk used
    tracemalloc.start()
    t0 = time.process_time()
    with pytest.raises(ValueError, match=r"input.txt' holds a NUL byte \(offset 0\)"):
        check_text(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8 << 20 and time.process_time() - t0 < 2, (peak, time.process_time() - t0)


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("ab" + "é" * 10, None),  # every 2-byte character cut at a 1-byte chunk's end
        (b"ab\xc3\xa9\xff", "not UTF-8 text (byte 0xff at offset 4)"),
        (b"ab\xc3", "not UTF-8 text (byte 0xc3 at offset 2)"),  # cut at the end of the file
        (b"abc\xc3\x00", "not UTF-8 text (byte 0xc3 at offset 3)"),
        (b"abcd\x00\xff", "holds a NUL byte (offset 4)"),
        (b" \n\t", "holds no text"),
    ],
    ids=["split-char", "bad-byte", "cut-end", "cut-before-nul", "nul", "blank"],
)
def test_the_streamed_data_check_finds_the_first_fault_at_any_chunk_size(
    content, fragment, tmp_path, monkeypatch
):
    import hashlib

    from geolab import data

    raw = content.encode() if isinstance(content, str) else content
    path = tmp_path / "input.txt"
    path.write_bytes(raw)
    for chunk in (1, 2, 3, 1 << 20):
        monkeypatch.setattr(data, "CHUNK_BYTES", chunk)
        if fragment is None:
            assert data.check_text(path) == hashlib.sha256(raw).digest()
        else:
            with pytest.raises(ValueError, match=re.escape(fragment)):
                data.check_text(path)


@pytest.mark.parametrize("where", ["file", "under-file", "uncreatable"])
def test_a_cache_folder_that_cannot_be_one_is_one_line(where, tmp_path, monkeypatch, capsys):
    (tmp_path / "file").write_text("x")
    cache = {
        "file": tmp_path / "file",
        "under-file": tmp_path / "file" / "cache",
        "uncreatable": Path("/proc/geolab-cache"),
    }[where]
    monkeypatch.setenv("GEOLAB_CACHE", str(cache))
    monkeypatch.delenv("GEOLAB_DATA", raising=False)
    argv = ["train", "--task", "shakespeare", "--layers", "1", "--d-model", "16", "--heads", "2"]
    assert main([*argv, "--steps", "1", "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"GEOLAB_CACHE={str(cache)!r} is not allowed" in err, err
    assert "it must name a folder geolab can create and write" in err
    assert not (tmp_path / "run").exists()


def test_a_closed_pipe_on_stdout_trains_on_and_saves(tmp_path):
    """`geolab train … | head -1`: the reader leaves (here before the first line), the run
    trains its steps, saves its checkpoint and says so on stderr once; never exit 0 with
    nothing saved."""
    read, write = os.pipe()
    os.close(read)  # every write to stdout now meets a broken pipe
    cmd = [sys.executable, "-m", "geolab", *TINY, "--eval-every", "1", "--out", str(tmp_path)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    try:
        done = subprocess.run(cmd, stdout=write, stderr=subprocess.PIPE, text=True, env=env)
    finally:
        os.close(write)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("standard output was closed") == 1
    assert load_checkpoint(tmp_path / "ckpt.pt")["step"] == 3


def test_a_small_lr_alone_ends_its_cosine_at_a_tenth_and_says_so(tmp_path, capsys):
    """--lr under the default --min-lr, without --min-lr: the schedule ends at --lr/10 with a
    note (it was refused, blaming --min-lr, which the user never typed); --min-lr above a
    given --lr is still refused, naming both."""
    assert main([*TINY, "--lr", "5e-5", "--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    assert "--lr 5e-05 is below --min-lr's default 0.0001: the cosine ends at --lr/10" in err, err
    assert json.loads((tmp_path / "run" / "config.json").read_text())["train"]["min_lr"] == 5e-6
    assert main([*TINY, "--lr", "4.9e-324", "--out", str(tmp_path / "tiny")]) == 0
    capsys.readouterr()
    assert main([*TINY, "--lr", "5e-5", "--min-lr", "1e-4", "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--lr 5e-05 with --min-lr 0.0001 is not allowed" in err, err


@pytest.mark.parametrize(
    "damage, fragment",
    [
        (b'{"step": 1, "lo\n', "line 4 is not JSON (Unterminated string"),
        (b"[1, 2]\n", "line 4 is not a step's record"),
        (b"\xff\xfe\n", "it is not UTF-8 text"),
    ],
    ids=["cut-line", "not-a-record", "not-utf8"],
)
def test_a_damaged_log_on_resume_names_the_file(damage, fragment, tmp_path, finished_run, capsys):
    ckpt = _run_copy(tmp_path, finished_run)
    log = ckpt.parent / "metrics.jsonl"
    log.write_bytes(log.read_bytes() + damage)
    assert main([*TINY, "--steps", "4", "--resume", "--out", str(ckpt.parent)]) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert f"the run's log {str(log)!r} is damaged" in err and fragment in err, err
    assert load_checkpoint(ckpt)["step"] == 3


def test_a_hand_graded_csv_that_is_not_utf8_names_the_file(tmp_path):
    from geolab.assignments.gradebook import read_hand_grades

    path = tmp_path / "hand.csv"
    path.write_bytes(b"student,points,max\n\xff\xfe,1,2\n")
    with pytest.raises(ValueError, match=re.escape(f"hand_graded={str(path)!r} is not UTF-8")):
        read_hand_grades(path)


@pytest.mark.parametrize("command", ["tasks", "info"])
def test_a_cp1252_console_prints_every_line(command):
    env = {**os.environ, "PYTHONIOENCODING": "cp1252"}
    done = subprocess.run(
        [sys.executable, "-m", "geolab", command], capture_output=True, env=env, timeout=120
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    lines = done.stdout.decode("cp1252").splitlines()
    assert lines[-1].startswith("shakespeare" if command == "tasks" else "  "), lines[-3:]
    assert "rotation by ? = 3.14" in done.stdout.decode("cp1252") or command == "info"


def test_rank_view_with_a_huge_alpha0_names_the_growth():
    from geolab.explore.rank import rank_view

    view = rank_view(["mgt"], n_layer=12, alpha0=1e30, d_model=8, seq_len=4, reference=False)
    note = view.numbers["rejected"]["mgt"]
    assert "grows 5e+29^24 ≈ 6.0e712 times" in note and "a smaller α₀" in note


@pytest.mark.parametrize(
    "tokens, draw_depth, fragment",
    [
        (torch.zeros(3, dtype=torch.long), None, "tokens of shape (3,) are not allowed"),
        (torch.zeros(1, 9, dtype=torch.long), None, "tokens of shape (1, 9) are not allowed"),
        (torch.zeros(0, 4, dtype=torch.long), None, "tokens of shape (0, 4) are not allowed"),
        ([[1, 2]], None, "tokens of type list are not allowed"),
        (torch.zeros(1, 4, dtype=torch.long), -1, "draw_depth=-1 is not allowed"),
        (torch.zeros(1, 4, dtype=torch.long), 2.5, "draw_depth=2.5 is not allowed"),
        (torch.zeros(1, 4, dtype=torch.long), 10**12, "draw_depth=1000000000000 is not allowed"),
    ],
    ids=["1d", "too-long", "no-batch", "a-list", "negative", "float", "huge"],
)
def test_the_stack_refuses_bad_tokens_and_depths_in_one_line(tokens, draw_depth, fragment):
    from geolab.stack import stack_states

    cfg = GeoConfig(residual="preln", n_layer=2, d_model=16, n_head=2, vocab_size=32, seq_len=8)
    with pytest.raises(ValueError, match=re.escape(fragment)):
        stack_states(cfg, 0, tokens, draw_depth=draw_depth)


def test_a_data_folder_named_too_long_is_one_line(tmp_path, monkeypatch):
    """GEOLAB_DATA is read where --data-dir is not given: a name longer than the file system
    allows is a ValueError saying so and how to provide the data, not an OSError."""
    from geolab.data import local_files

    with pytest.raises(ValueError, match=r"cannot be read \(File name too long\)\. Provide"):
        local_files("shakespeare", tmp_path / ("x" * 300))
