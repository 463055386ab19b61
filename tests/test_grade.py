"""The grader: a folder with a correct, a wrong, a crashing, a never-ending, a garbage-printing and
a stub-hanging submission gives the right gradebook, each row within the time limit."""

import csv
import json
from pathlib import Path

import pytest

from geolab.assignments.catalog import all_failed
from geolab.assignments.grade import _parse, grade_dir, write_gradebook

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
}  # fmt: skip


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    folder = tmp_path_factory.mktemp("submissions")
    for name, text in SUBMISSIONS.items():
        (folder / name).write_text(text, encoding="utf-8")
    rows = grade_dir(folder, "A1", timeout=TIMEOUT, task_timeout=TASK_TIMEOUT, jobs=4)
    return {row["submission"]: row for row in rows}, rows


def _failed(row):
    return {c["name"] for c in row["checks"] if not c["passed"]}


def test_every_submission_has_a_row_with_every_check(gradebook):
    by_name, rows = gradebook
    assert [r["submission"] for r in rows] == sorted(SUBMISSIONS)
    for row in rows:
        assert len(row["checks"]) == N_CHECKS and row["max_score"] == POINTS
        assert row["seconds"] < TIMEOUT + 30  # the never-ending one is killed at the limit


def test_correct_and_garbage_printing_submissions_get_full_marks(gradebook):
    by_name, _ = gradebook
    for name in ("correct.py", "garbage.py"):
        assert by_name[name]["status"] == "ok" and by_name[name]["score"] == POINTS, name


def test_wrong_submission_fails_exactly_the_broken_function(gradebook):
    row = gradebook[0]["wrong.py"]
    assert row["status"] == "ok" and 0 < row["score"] < POINTS
    failed = _failed(row)
    assert failed and all(name.startswith("delta_operator") for name in failed)
    messages = [c["message"] for c in row["checks"] if not c["passed"]]
    assert any("expected" in m and "shape" in m for m in messages)


def test_crash_timeout_and_syntax_error_score_zero(gradebook):
    by_name, _ = gradebook
    expected = {"crash.py": "crash", "never_ends.py": "timeout", "syntax_error.py": "error"}
    for name, status in expected.items():
        row = by_name[name]
        assert row["status"] == status and row["score"] == 0, (name, row["error"])
        assert len(_failed(row)) == N_CHECKS
    assert "exit code 3" in by_name["crash.py"]["error"]
    assert f"{TIMEOUT:g} s" in by_name["never_ends.py"]["error"]
    assert "SyntaxError" in by_name["syntax_error.py"]["error"]


def test_a_hanging_stub_costs_only_its_own_checks(gradebook):
    row = gradebook[0]["stub_hangs.py"]
    assert row["status"] == "ok" and _failed(row) == MODE_CHECKS
    assert row["score"] == POINTS - len(MODE_CHECKS)
    assert all(f"{TASK_TIMEOUT:g} s" in c["message"] for c in row["checks"] if not c["passed"])


def test_gradebook_files(gradebook, tmp_path):
    _, rows = gradebook
    csv_path, json_path = write_gradebook(rows, tmp_path / "out" / "gradebook.csv")
    with open(csv_path, newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert [r["submission"] for r in table] == sorted(SUBMISSIONS)
    wrong = next(r for r in table if r["submission"] == "wrong.py")
    assert wrong["status"] == "ok" and wrong["delta_operator: symmetric"] in ("0", "1")
    assert wrong["mode: names β = 0, 1, 2 and a generic β"] == "1"
    assert json.loads(json_path.read_text(encoding="utf-8")) == rows


@pytest.mark.parametrize(
    "text",
    ["", "garbage", "[]", '{"status": "ok"}', '{"status": "maybe", "checks": []}',
     '{"status": "ok", "checks": [{"name": "x", "passed": "yes", "message": "", "points": 1}]}'],
)  # fmt: skip
def test_malformed_results_are_rejected(text):
    assert _parse(text) is None


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="SUBMISSIONS_DIR"):
        grade_dir(tmp_path, "A1")
    with pytest.raises(ValueError, match="assignment"):
        grade_dir(tmp_path, "A9")
    (tmp_path / "x.py").write_text("x = 1\n")
    with pytest.raises(ValueError, match="timeout"):
        grade_dir(tmp_path, "A1", timeout=0)


def test_grade_command(tmp_path, capsys):
    from geolab.assignments.__main__ import main

    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "correct.py").write_text(SOLUTION, encoding="utf-8")
    out = tmp_path / "book.csv"
    argv = ["grade", str(tmp_path / "subs"), "--assignment", "A1", "--out", str(out)]
    assert main(argv + ["--timeout", str(TIMEOUT)]) == 0
    assert f"{POINTS:g}/{POINTS:g}" in capsys.readouterr().out
    assert out.is_file() and out.with_suffix(".json").is_file()
    assert main(["grade", str(tmp_path / "nothing"), "--assignment", "A1"]) == 2
