"""The command line: geolab info and geolab rank (also as python -m geolab)."""

import json
import subprocess
import sys

import pytest

from geolab import explore
from geolab.cli import main
from geolab.rules import RESIDUALS


def test_info_lists_every_rule(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "torch" in out
    for name in RESIDUALS:
        assert f"  {name} " in out


def test_rank_table_and_json(capsys):
    assert main(["rank", "--residual", "mgt", "--layers", "3", "--d-model", "32"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert len([line for line in table if line.strip() and line.split()[0].isdigit()]) == 7
    assert "eff. rank is normalised" in table[1]
    assert "0.03125 = rank 1; it is never above 1" in table[1]  # 1/min(S=32, D=32)
    assert main(["rank", "--residual", "postln", "--layers", "3", "--d-model", "32", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["profile"]) == 7
    assert all(0 <= row["effective_rank"] <= 1 for row in data["profile"])


@pytest.mark.parametrize(
    "rule, cli",
    [("mgt", ["--residual", "mgt"]), ("pure attention", ["--residual", "noskip", "--no-mlp"])],
)
def test_rank_gives_notebook_04s_numbers(capsys, rule, cli):
    """Same rule, depth, width, sequence length and seed: each layer's last step is 04's curve,
    and step 0 (the embedding) is 04's layer 0."""
    args = ["rank", *cli, "--layers", "5", "--d-model", "32", "--seq-len", "8", "--seed", "2"]
    assert main([*args, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["profile"]
    last = {row["layer"]: row for row in rows}  # a layer's last residual step
    view = explore.rank_view(
        [] if rule == explore.REFERENCE else [rule],
        5,
        d_model=32,
        seq_len=8,
        seed=2,
        reference=rule == explore.REFERENCE,
    )
    # layer 0 (the input) included: 04's curves start there too
    assert [last[i]["effective_rank"] for i in range(6)] == view.numbers["ranks"][rule].tolist()
    assert [last[i]["dong_residual"] for i in range(6)] == view.numbers["residuals"][rule].tolist()


@pytest.mark.parametrize(
    "argv, unknown",
    [(["train", "--task", "copy", "--bogus", "1"], "--bogus 1"), (["rank", "-x"], "-x")],
)
def test_an_unknown_flag_gets_the_subcommands_usage(capsys, argv, unknown):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: geolab {argv[0]} ")
    assert err.endswith(f"geolab {argv[0]}: error: unrecognized arguments: {unknown}\n")


def test_rank_bad_rule_is_a_clear_error(capsys):
    assert main(["rank", "--residual", "nope"]) == 2
    err = capsys.readouterr().err
    assert "residual" in err and "nope" in err and "preln" in err


def test_python_dash_m_geolab():
    out = subprocess.run(
        [sys.executable, "-m", "geolab", "rank", "--layers", "100", "--residual", "postln"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert len([line for line in out.stdout.splitlines() if line.split()[:1] == ["200"]]) == 1


def test_help_speaks_to_a_user(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "argparse" not in out and "``" not in out  # no developer docstring
    assert "first steps" in out and "geolab train --task gyroscope" in out
    for command in ("info", "rank", "tasks", "train", "reproduce", "bench", "grade", "release"):
        assert f"    {command} " in out


def test_info_sentences_end_whole_and_a_closed_pipe_is_no_error(tmp_path):
    """Each rule's description ends its sentence (nothing cut); `geolab info | head -1`
    exits 0 without a BrokenPipeError traceback."""
    lines = subprocess.run(
        [sys.executable, "-m", "geolab", "info"], capture_output=True, text=True, timeout=120
    ).stdout.splitlines()
    # geolab's own rules: a test in this process may have registered one of its own
    own = {n for n, cls in RESIDUALS.items() if cls.__module__.startswith("geolab.")}
    rules = [line for line in lines if line.startswith("  ") and line.split()[0] in own]
    assert len(rules) == len(own) and all(line.endswith(".") for line in rules)
    head = subprocess.run(
        f"{sys.executable} -m geolab info | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        executable="/bin/bash",
    )
    assert head.stdout.startswith("geolab ") and "Traceback" not in head.stderr


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["tasks"], ["reproduce", "--list"], ["train", "--foo"]],
    ids=["help", "tasks", "reproduce-list", "train-parser"],
)
def test_commands_that_need_no_torch_start_without_it(argv):
    """Issue 53: `geolab --help`, `tasks`, `reproduce --list` do not pay ≈ 3 s of CPU for
    importing torch; train's flags (TrainConfig's defaults) load torch only for `geolab train`."""
    code = (
        "import sys\nfrom geolab.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        "mods = [m for m in ('torch',) if m in sys.modules]\n"
        "print('loaded:', mods)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    loaded = done.stdout.strip().splitlines()[-1]
    if argv[0] == "train":  # its flags read geolab.train, which loads torch
        assert "'torch'" in loaded, done
    else:
        assert loaded == "loaded: []", done


def test_reproduce_list_reads_each_protocol_s_own_title(capsys):
    from geolab.experiments import NAMES, get_protocol

    assert main(["reproduce", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"{name:<18} {get_protocol(name).TITLE}" for name in NAMES]


def test_info_reports_the_threads_geolab_uses(capsys, monkeypatch):
    monkeypatch.delenv("GEOLAB_THREADS", raising=False)
    assert main(["info"]) == 0
    assert "threads: 1 (the default; set GEOLAB_THREADS=N" in capsys.readouterr().out
    monkeypatch.setenv("GEOLAB_THREADS", "3")
    assert main(["info"]) == 0
    assert "threads: 3 (from GEOLAB_THREADS" in capsys.readouterr().out


def test_ctrl_c_before_training_says_nothing_was_trained(tmp_path, capsys, monkeypatch):
    import geolab.tasks

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(geolab.tasks, "get_task", interrupted)
    argv = "train --task gyroscope --residual preln --layers 1 --d-model 16 --heads 2"
    assert main([*argv.split(), "--out", str(tmp_path / "run")]) == 130
    err = capsys.readouterr().err
    assert err == (
        "geolab train: interrupted before training started: nothing was trained, nothing written\n"
    )
    assert not (tmp_path / "run").exists()


def test_ctrl_c_while_torch_imports_is_one_line_and_exit_130(tmp_path):
    """SIGINT while torch loads (``-X importtime`` reports each module as it finishes: the
    first of torch's is seconds before torch is done), so nothing was trained."""
    import signal

    argv = "train --task gyroscope --residual preln --layers 1 --d-model 16 --heads 2"
    cmd = [sys.executable, "-X", "importtime", "-m", "geolab", *argv.split()]
    cmd += ["--out", str(tmp_path / "run")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if line.rpartition("|")[2].strip().startswith("torch."):
            break
    proc.send_signal(signal.SIGINT)
    out, rest = proc.communicate(timeout=120)
    err = [x for x in rest.splitlines() if not x.startswith("import time:")]
    assert proc.returncode == 130 and len(err) == 1, rest[-3000:]
    if (tmp_path / "run").exists():  # a fast machine: already training, so it saved a step
        assert "SIGINT at step" in err[0] and "saved" in err[0], err
    else:  # while its flags load, or after, before the first step
        assert err[0] in (
            "geolab train: interrupted while starting: nothing was done",
            "geolab train: interrupted before training started: nothing was trained, nothing "
            "written",
        ), err


def test_a_reproduce_printout_says_what_converged_and_learned_mean(tmp_path, capsys):
    from geolab.terms import TERMS

    argv = ["reproduce", "ablation", "--scale", "tiny", "--no-png", "--out", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert "(converged)" in "\n".join(out) and "not learned" in "\n".join(out)
    assert out[-2:] == [f"converged: {TERMS['converged']}", f"learned: {TERMS['learned']}"]
