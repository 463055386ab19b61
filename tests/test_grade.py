"""The grader: a folder with a correct, a wrong, a crashing, a never-ending, a garbage-printing, a
flooding and a stub-hanging submission gives the right gradebook, each row within the time
limit; the teacher's files (LMS CSV, feedback, hand-graded column, hidden checks, warnings).
The adversarial corpus is in test_grade_adversarial.py."""

import csv
import json
import os
from pathlib import Path

import pytest
import torch

from geolab.assignments import sandbox
from geolab.assignments.catalog import all_failed
from geolab.assignments.grade import find_submissions, grade_dir
from geolab.assignments.gradebook import read_hand_grades
from geolab.assignments.wire import decode, encode, type_name

REPO = Path(__file__).resolve().parents[1]
SOLUTION = (REPO / "assignments" / "instructor" / "A1_delta.py").read_text(encoding="utf-8")
TIMEOUT, TASK_TIMEOUT = 30.0, 8.0  # generous: the tests share a small, busy machine
N_CHECKS = len(all_failed("A1", ""))
POINTS = sum(c.points for c in all_failed("A1", ""))
MODE_CHECKS = {
    "mode: names β = 0, 1, 2 and a generic β",
    "mode: orthogonal exactly for identity/reflect, singular exactly for erase",
}
MODE_BODY = '    return {0.0: "identity"'


def _mutate(old: str, new: str) -> str:
    assert old in SOLUTION
    return SOLUTION.replace(old, new, 1)


SUBMISSIONS = {
    "correct.py": SOLUTION,
    # prints to stdout and stderr, at import and inside a stub: must not disturb the result
    "garbage.py": _mutate("import marimo\n", "import marimo\nprint('{\"status\": \"ok\"')\n")
    .replace(MODE_BODY, '    print("\\x00garbage" * 100)\n' + MODE_BODY),
    # the reflection sign is wrong: only the delta_operator checks can fail
    "wrong.py": _mutate("return eye - b * kh.unsqueeze(-1)", "return eye + b * kh.unsqueeze(-1)"),
    "crash.py": _mutate("import marimo\n", "import os\nos._exit(3)\nimport marimo\n"),
    "never_ends.py": _mutate("import marimo\n", "while True:\n    pass\nimport marimo\n"),
    "stub_hangs.py": _mutate(MODE_BODY, "    while True:\n        pass\n" + MODE_BODY),
    "syntax_error.py": "def broken(:\n",
    "floods.py": "while True:\n    print('x' * 100_000)\n",
}  # fmt: skip


# grading needs bwrap, or an ordinary user (as root without bwrap the grader refuses to run)
GRADES = pytest.mark.skipif(
    not sandbox.bwrap_works() and os.geteuid() == 0, reason="root without bwrap: grading refused"
)


def _failed(row):
    return {c["name"] for c in row["checks"] if not c["passed"]}


@GRADES
def test_grade_a_folder_of_good_bad_and_broken_submissions(tmp_path, capsys):
    """One grading run (through the command line) with every assertion on its gradebook: one run
    keeps the suite fast and puts it on one pytest-xdist worker."""
    from geolab.cli import main

    folder = tmp_path / "submissions"
    folder.mkdir()
    for name, text in SUBMISSIONS.items():
        (folder / name).write_text(text, encoding="utf-8")
    out = tmp_path / "book" / "gradebook.csv"
    argv = ["grade", str(folder), "--assignment", "A1", "--out", str(out), "--jobs", "4"]
    assert main(argv + ["--timeout", f"{TIMEOUT:g}", "--task-timeout", f"{TASK_TIMEOUT:g}"]) == 0
    printed = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()}
    assert printed["correct.py"] == ["ok", f"{POINTS:g}/{POINTS:g}"]

    rows = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    by_name = {row["submission"]: row for row in rows}
    assert [r["submission"] for r in rows] == sorted(SUBMISSIONS)
    assert len({row["seed"] for row in rows}) == 1 and isinstance(rows[0]["seed"], int)
    for row in rows:
        assert len(row["checks"]) == N_CHECKS and row["max_score"] == POINTS

    for name in ("correct.py", "garbage.py"):  # garbage printed anywhere changes nothing
        assert by_name[name]["status"] == "ok" and by_name[name]["score"] == POINTS, name

    wrong = by_name["wrong.py"]
    assert wrong["status"] == "ok" and 0 < wrong["score"] < POINTS
    assert _failed(wrong) and all(name.startswith("delta_operator") for name in _failed(wrong))
    messages = [c["message"] for c in wrong["checks"] if not c["passed"]]
    assert any("k of shape (3, 5)" in m and "expected" in m for m in messages)

    expected = {"crash.py": "crash", "never_ends.py": "timeout", "syntax_error.py": "error"}
    expected["floods.py"] = "error"  # printing is capped: the write past the cap raises
    for name, status in expected.items():
        row = by_name[name]
        assert row["status"] == status and row["score"] == 0, (name, row["error"])
        assert len(_failed(row)) == N_CHECKS
    assert "exit code 3" in by_name["crash.py"]["error"]
    assert f"{TIMEOUT:g} s time limit" in by_name["never_ends.py"]["error"]
    assert "SyntaxError" in by_name["syntax_error.py"]["error"]
    assert "File too large" in by_name["floods.py"]["error"]

    hung = by_name["stub_hangs.py"]  # an endless stub costs only its own checks
    assert hung["status"] == "ok" and _failed(hung) == MODE_CHECKS
    assert hung["score"] == POINTS - len(MODE_CHECKS)
    assert all(f"{TASK_TIMEOUT:g} s" in c["message"] for c in hung["checks"] if not c["passed"])

    with open(out, newline="", encoding="utf-8") as f:
        table = {r["submission"]: r for r in csv.DictReader(f)}
    assert sorted(table) == sorted(SUBMISSIONS)
    assert table["wrong.py"]["mode: names β = 0, 1, 2 and a generic β"] == "1"
    assert table["wrong.py"]["delta_operator: depends on k only through its direction"] == "1"
    assert {table[n]["status"] for n in expected} == {"crash", "timeout", "error"}
    assert float(table["stub_hangs.py"]["score"]) == POINTS - len(MODE_CHECKS)


@GRADES
def test_teacher_files_hand_grades_hidden_checks_and_skipped_files(tmp_path, capsys):
    """upper-case .PY is graded, the rest is skipped with a reason; the hand-graded CSV adds a
    column and counts in the LMS total; hidden checks run; one feedback file per student."""
    from geolab.cli import main

    folder = tmp_path / "submissions"
    folder.mkdir()
    (folder / "Upper.PY").write_text(SOLUTION, encoding="utf-8")
    (folder / "notes.txt").write_text("my answers", encoding="utf-8")
    (folder / "dir.py").mkdir()
    (folder / "link.py").symlink_to(folder / "Upper.PY")
    hand = tmp_path / "hand.csv"
    hand.write_text("student,points,max\nUpper,3.5,5\nghost,2,5\n", encoding="utf-8")
    out = tmp_path / "book" / "gb.csv"
    hidden = REPO / "assignments" / "instructor" / "hidden"
    argv = ["grade", str(folder), "--assignment", "A1", "--out", str(out), "--seed", "7"]
    argv += ["--hand-graded", str(hand), "--hidden", str(hidden), "--task-timeout", "20"]
    assert main(argv) == 0
    shown = capsys.readouterr()
    err = shown.err
    assert ": 1 submission, seed 7" in shown.out  # the summary counts in words that agree
    assert f"hand 3.5/5  total {POINTS + 5.5:g}/{POINTS + 7:g}" in shown.out
    assert "skipped notes.txt: not a .py file" in err and "skipped dir.py: not a regular" in err
    assert "skipped link.py: a symbolic link" in err and "ghost, who has no graded" in err
    (row,) = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    hidden_checks = [c for c in row["checks"] if c.get("hidden")]
    assert row["submission"] == "Upper.PY" and row["seed"] == 7 and len(hidden_checks) == 2
    assert row["status"] == "ok" and row["score"] == row["max_score"] == POINTS + 2
    assert row["hand"] == 3.5 and row["total"] == POINTS + 2 + 3.5
    lms = (tmp_path / "book" / "gb_lms.csv").read_text(encoding="utf-8").splitlines()
    assert lms == ["student_id,total,max", f"Upper,{POINTS + 5.5},{POINTS + 7.0}"]
    feedback = (tmp_path / "book" / "gb_feedback" / "Upper.md").read_text(encoding="utf-8")
    assert "hand-graded question: 3.5" in feedback and "seed 7" in feedback
    assert feedback.count("| pass |") == N_CHECKS + 2 and "(hidden check)" in feedback


@pytest.mark.parametrize(
    "text, field",
    [
        ("student,points\na,1\n", "header"),
        ("student,points,max\na,x,5\n", "points='x'"),
        ("student,points,max\na,6,5\n", "not in [0, 5]"),
        ("student,points,max\na,1,5\nb,1,4\n", "max=4"),
    ],
)
def test_hand_grades_reject_bad_rows(tmp_path, text, field):
    path = tmp_path / "hand.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=field.replace("[", r"\[")):
        read_hand_grades(path)


def test_plain_data_round_trip_and_rejects_anything_else():
    value = (torch.arange(6.0).reshape(2, 3), torch.tensor(0.5, dtype=torch.float64), 3, "s",
             [1.5, None, True], {"k": torch.ones(2, dtype=torch.bool)}, float("nan"))  # fmt: skip
    back = decode(json.loads(json.dumps(encode(value))))
    assert isinstance(back, tuple) and back[0].equal(value[0]) and back[1].shape == ()
    assert back[2:6] == value[2:5] + (back[5],) and back[5]["k"].dtype == torch.bool
    assert back[6] != back[6]  # nan survives
    assert type_name(decode(encode(object()))) == "object"
    short = {"tensor": {"dtype": "float64", "shape": [3], "data": "AAAAAAAAAAA="}}
    for bad in ({"pickle": "gASV"}, {"tensor": {"dtype": "object", "shape": [1], "data": ""}},
                short, [1]):  # fmt: skip
        with pytest.raises(ValueError):
            decode(bad)


def test_find_submissions_reads_every_file_up_front(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "b.Py").write_bytes(b"\xff\xfe")
    texts, skipped = find_submissions(tmp_path)
    assert texts == {"a.py": "x = 1\n"} and skipped == ["skipped b.Py: not UTF-8 text"]


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="SUBMISSIONS_DIR"):
        grade_dir(tmp_path, "A1")
    with pytest.raises(ValueError, match="assignment"):
        grade_dir(tmp_path, "A9")
    (tmp_path / "x.py").write_text("x = 1\n")
    with pytest.raises(ValueError, match="timeout"):
        grade_dir(tmp_path, "A1", timeout=0)
    from geolab.cli import main

    assert main(["grade", str(tmp_path / "nothing"), "--assignment", "A1"]) == 2


def test_bwrap_binds_python_and_package_over_the_private_tmp(tmp_path, monkeypatch):
    """A checkout or virtualenv under /tmp must stay visible: bwrap applies its mounts in order,
    so the private /tmp has to come before every bind (else it hides them)."""
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 1000)
    args = sandbox.command("bwrap", tmp_path / "view", tmp_path, "a.py", {"tmp_bytes": 1 << 20})
    tmpfs = args.index("--tmpfs")
    assert args[tmpfs + 1] == "/tmp"
    binds = [i for i, a in enumerate(args) if a in ("--ro-bind", "--bind", "--dir")]
    assert binds and min(binds) > tmpfs
