"""The README's commands: every one uses the venv's programs (the one convention it states),
every `geolab` command line parses with geolab's own parser, the CPU training examples are
CPU-sized (the paper-sized ones are marked GPU), and the "Your own residual rule" example runs
as printed and learns its task."""

import os
import re
import runpy
import shlex
import subprocess
import sys

import pytest
from conftest import REPO

from geolab.cli import build_parser
from geolab.cli.args import geo_config
from geolab.data import bundled_dir
from geolab.model import param_count
from geolab.rules import unregister
from geolab.tasks import get_task

README = (REPO / "README.md").read_text()
PREFIXES = (".venv/bin/", "make ", "scripts/", "bash scripts/", "#")
# steps × batch × positions × parameters: the first CPU example is 1.4e11 (≈ 45 CPU seconds),
# the paper-sized gyroscope run 5.9e13 (about a day on 2 cores)
CPU_BUDGET = 1e12


def blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", README, re.M | re.S)


def commands() -> list[tuple[str, str]]:
    """(command, the comment line above it) of every bash block; an indented line continues
    the command above it (after a trailing backslash or not), ``[...]`` marks optional flags
    (left out), ``#`` starts a comment."""
    out = []
    for block in blocks("bash"):
        comment = ""
        for line in block.splitlines():
            if line.startswith("#"):
                comment = line
            elif line.startswith(" ") and out:
                out[-1] = (out[-1][0].removesuffix("\\").rstrip() + " " + line.strip(), out[-1][1])
            elif line.strip():
                out.append((line, comment))
                comment = ""
    return [(re.sub(r"\[[^]]*\]", "", cmd.split(" #")[0]).strip(), c) for cmd, c in out]


def geolab_argv(cmd: str) -> list[str] | None:
    """The argument list after ``geolab`` / ``-m geolab``, or None for another program."""
    words = shlex.split(cmd)
    for i, w in enumerate(words):
        if w == ".venv/bin/geolab" or (w == "geolab" and i and words[i - 1] == "-m"):
            return words[i + 1 :]
    return None


def test_every_command_uses_the_venv():
    bare = [cmd for cmd, _ in commands() if not cmd.startswith(PREFIXES)]
    assert not bare, f"commands without .venv/bin/ (the README's convention): {bare}"


def test_every_geolab_command_parses():
    argvs = [a for a in (geolab_argv(cmd) for cmd, _ in commands()) if a is not None]
    assert len(argvs) >= 15
    for argv in argvs:
        try:
            build_parser().parse_args(argv)
        except SystemExit:
            pytest.fail(f"`geolab {' '.join(argv)}` does not parse")


def test_cpu_training_examples_are_cpu_sized_and_gpu_ones_are_marked():
    sized = {}
    for cmd, comment in commands():
        argv = geolab_argv(cmd)
        if argv is None or argv[0] != "train":
            continue
        args = build_parser().parse_args(argv)
        options = {k: getattr(args, k) for k in ("seq_len", "n_train", "n_val")}
        options = {k: v for k, v in options.items() if v is not None}
        if args.task in ("shakespeare", "wikitext2"):
            options["data_dir"] = args.data_dir or bundled_dir(args.task)
            if args.task == "wikitext2":  # only its sizes matter here: a stand-in vocabulary
                continue
        task = get_task(args.task, seed=args.seed, **options)
        cfg = geo_config(args, **task.model_fields())
        cost = args.steps * args.batch_size * task.seq_len * param_count(cfg)
        sized[cmd] = cost
        if comment.startswith("# GPU"):
            assert cost > CPU_BUDGET, f"marked GPU but CPU-sized: {cmd}"
        else:
            assert cost <= CPU_BUDGET, f"paper-sized example not marked '# GPU': {cmd}"
            assert re.search(r"≈ \d+ s", comment), f"no stated time above: {cmd}"
    assert sum(c <= CPU_BUDGET for c in sized.values()) >= 3


def test_the_own_rule_example_runs_as_printed(tmp_path, monkeypatch, capsys):
    """Both Python blocks of "Your own residual rule", written and run as a user would."""
    rule, script = (b for b in blocks("python") if "scaled_preln" in b)
    assert rule.startswith("# my_rules.py\n")
    (tmp_path / "my_rules.py").write_text(rule)
    (tmp_path / "run.py").write_text(script)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        env = runpy.run_path(str(tmp_path / "run.py"))
    finally:
        unregister("scaled_preln")
        sys.modules.pop("my_rules", None)
    assert env["result"].metrics["acc"] == 1.0  # what the README's comment promises
    assert "'acc': 1.0" in capsys.readouterr().out


def test_the_first_example_runs_as_written_on_one_thread(tmp_path):
    """The README's first command after `make`, as a user types it, at 3 steps instead of 200
    (its time is quoted for one thread, geolab's default: README "Threads")."""
    first = next(cmd for cmd, _ in commands() if (geolab_argv(cmd) or [""])[0] == "train")
    argv = geolab_argv(first)
    assert (
        argv[argv.index("--steps") + 1] == "200" and argv[argv.index("--out") + 1] == "runs/first"
    )
    argv[argv.index("--steps") + 1] = "3"
    venv = REPO / ".venv" / "bin" / "geolab"
    program = [str(venv)] if venv.exists() else [sys.executable, "-m", "geolab"]
    env = {k: v for k, v in os.environ.items() if k not in ("GEOLAB_THREADS", "OMP_NUM_THREADS")}
    done = subprocess.run(
        [*program, *argv, "--no-progress"],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "with 1 CPU thread -> runs/first" in done.stdout
    assert "done: step 3  mse " in done.stdout
    assert (tmp_path / "runs" / "first" / "ckpt.pt").exists()
