"""scripts/sweep_bad_input.py: its cases come from geolab's own parsers (every flag of every
subcommand), and its classes read an exit status and stderr as the docstring says."""

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("sweep", REPO / "scripts" / "sweep_bad_input.py")
sweep = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sweep)


def test_every_flag_of_every_subcommand_is_swept():
    """A flag added to any subcommand gets cases without editing the script."""
    subs = sweep.subparsers(REPO)
    assert set(subs) == set(sweep.BASES)
    for name, parser in subs.items():
        swept = {c["flag"] for c in sweep.cases_of(name, parser)}
        for action in parser._actions:
            if sweep.flag_kind(action) is not None:
                assert sweep.flag_name(action) in swept, (name, action.dest)


def test_flag_kinds_follow_type_choices_and_help():
    subs = sweep.subparsers(REPO)
    kinds = {
        sweep.flag_name(a): sweep.flag_kind(a) for a in subs["train"]._actions if a.dest != "help"
    }
    assert kinds["--lr"] == "float" and kinds["--steps"] == "int"
    assert kinds["--flavor"] == "choice" and kinds["--resume"] == "switch"
    assert kinds["--out"] == "path" and kinds["--data-dir"] == "path"
    assert kinds["--device"] == "text"
    grade = {sweep.flag_name(a): sweep.flag_kind(a) for a in subs["grade"]._actions}
    assert grade["SUBMISSIONS_DIR"] == "path" and grade["--hand-graded"] == "path"


USAGE = "usage: geolab rank [-h] [--layers LAYERS]\n                   [--seed SEED]\n"


@pytest.mark.parametrize(
    "rc, out, err, names, expected",
    [
        (2, "", "geolab rank: error: --layers 0 is not allowed\n", ["--layers"], "one-line"),
        (2, "", USAGE + "geolab rank: error: argument --layers: bad\n", ["--layers"], "one-line"),
        (2, "", "geolab rank: error: d_model=1e+30 needs 9 GiB\n", ["--d-model"], "one-line"),
        (2, "", "geolab rank: error: --seed 3 is wrong\n", ["--seeds"], "other"),
        (2, "", "geolab train: note: x\ngeolab train: error: --lr 0\n", ["--lr"], "other"),
        (0, "done: step 2  mse 0.5\n", "", ["--lr"], "accepted"),
        (0, "done: step 2  mse nan\n", "", ["--lr"], "nan"),
        (1, "", "geolab train: diverged: loss inf at step 1\n", ["--lr"], "nan"),
        (1, "", "Traceback (most recent call last):\nOSError\n", ["--out"], "traceback"),
        (None, "", "", ["--steps"], "timeout"),
        (3, "", "geolab reproduce: time limit: 0 run(s) finished\n", ["--time-limit"], "other"),
    ],
)
def test_classes(rc, out, err, names, expected):
    assert sweep.classify(rc, out, err, names) == expected
