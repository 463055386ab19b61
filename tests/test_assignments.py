"""Classroom assignments: the release build, the checks on solutions, stubs and wrong code."""

import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import geolab.operators
from geolab.assignments import a1, a2, a3, a4, release, setups
from geolab.assignments.catalog import ASSIGNMENTS, all_failed, check_all, feedback
from geolab.assignments.checks import NOT_IMPLEMENTED, ForbiddenCall, forbid
from geolab.assignments.run_checks import load_submission
from geolab.rules import RESIDUALS, Rule

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "assignments" / "instructor"
OUT = REPO / "notebooks" / "assignments"
IDS = list(ASSIGNMENTS)


def _instructor(aid):
    return SRC / ASSIGNMENTS[aid].notebook


def _student(aid):
    return OUT / ASSIGNMENTS[aid].notebook


def _load(path, aid):
    return load_submission(path, ASSIGNMENTS[aid].tasks)


def _failures(results):
    return {r.name: r.message for r in results if not r.passed}


# --- release -------------------------------------------------------------------------------


def test_every_assignment_has_an_instructor_source_and_a_release():
    assert len(ASSIGNMENTS) >= 4
    for aid in IDS:
        assert _instructor(aid).is_file() and _student(aid).is_file()


def test_committed_release_is_up_to_date():
    assert release.build(SRC, OUT, check=True) == [], "run `geolab release` and commit the result"


@pytest.mark.parametrize("aid", IDS)
def test_release_contains_no_solution_code(aid):
    source = _instructor(aid).read_text(encoding="utf-8")
    student = _student(aid).read_text(encoding="utf-8")
    outside = set(line.strip() for line in release.strip_solutions(source).splitlines())
    lines = release.solution_lines(source)
    secret = [line for line in lines if len(line) >= 8 and line not in outside]  # not ")" etc.
    assert secret, "the instructor source must hold solution lines"
    leaked = [line for line in secret if line in student]
    assert not leaked, f"solution lines in the student release: {leaked}"
    assert release.BEGIN not in student and release.END not in student


def test_strip_solutions_keeps_indentation_and_the_rest():
    text = "def f(x):\n    y = 1\n    ### BEGIN SOLUTION\n    return x + y\n    ### END SOLUTION\n"
    out = release.strip_solutions(text)
    assert out == f"def f(x):\n    y = 1\n    {release.STUB}\n"
    scope = {}
    exec(compile(out, "<stub>", "exec"), scope)
    with pytest.raises(NotImplementedError):
        scope["f"](1)


@pytest.mark.parametrize(
    "text, where",
    [
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n", "nb:2"),
        ("x = 1\n### END SOLUTION\n", "nb:2"),
        ("x = 1\n### BEGIN SOLUTION\ny = 2\n", "nb:2"),
    ],
)
def test_strip_solutions_rejects_unbalanced_markers(text, where):
    with pytest.raises(ValueError, match=where):
        release.strip_solutions(text, "nb")


def test_release_command_writes_and_checks(tmp_path, capsys):
    from geolab.cli import main

    out = tmp_path / "release"
    assert main(["release", "--src", str(SRC), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.glob("*.py")) == sorted(p.name for p in SRC.glob("*.py"))
    assert main(["release", "--src", str(SRC), "--out", str(out), "--check"]) == 0
    assert capsys.readouterr().out.endswith(f"{out} is up to date with {SRC}\n")
    (out / ASSIGNMENTS["A1"].notebook).write_text("stale", encoding="utf-8")
    assert main(["release", "--src", str(SRC), "--out", str(out), "--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main(["release", "--src", str(tmp_path / "none"), "--out", str(out)]) == 2


def test_release_refuses_to_write_into_the_instructor_folder(tmp_path, capsys):
    from geolab.cli import main

    src = tmp_path / "instructor"
    src.mkdir()
    notebook = src / "A1_delta.py"
    notebook.write_text(_instructor("A1").read_text(encoding="utf-8"), encoding="utf-8")
    before = notebook.read_text(encoding="utf-8")
    for out in (src, src / "release", src / "." / "sub" / ".."):
        assert main(["release", "--src", str(src), "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "--out " in err and "inside" in err
    assert notebook.read_text(encoding="utf-8") == before and sorted(src.iterdir()) == [notebook]


# --- the checks ----------------------------------------------------------------------------


@pytest.mark.parametrize("aid", IDS)
def test_solutions_pass_every_check(aid):
    results = check_all(aid, _load(_instructor(aid), aid))
    assert results and not _failures(results)


@pytest.mark.parametrize("aid", IDS)
def test_student_release_fails_every_check_with_a_message(aid):
    results = check_all(aid, _load(_student(aid), aid))
    assert results and all(not r.passed and r.message == NOT_IMPLEMENTED for r in results)
    assert [r.name for r in results] == [r.name for r in all_failed(aid, "")]


def _reference_delta(k, beta):
    return geolab.operators.delta_operator(k, beta)


def _unnormalised_delta(k, beta):
    b = torch.as_tensor(beta, dtype=k.dtype)[..., None, None]
    return torch.eye(k.shape[-1], dtype=k.dtype) - b * k.unsqueeze(-1) * k.unsqueeze(-2)


def test_wrong_delta_operator_names_property_and_input():
    fails = _failures(a1.check_delta_operator(_unnormalised_delta))
    assert "delta_operator: depends on k only through its direction" in fails
    matches = fails["delta_operator: matches I − β k kᵀ/‖k‖² (batched k, tensor β)"]
    assert "k of shape (3, 5)" in matches and "expected" in matches
    assert "delta_operator: symmetric" not in fails


def test_calling_the_reference_is_forbidden():
    fails = _failures(a1.check_delta_operator(_reference_delta))
    assert len(fails) == 6
    assert all("geolab.operators.delta_operator" in m for m in fails.values())
    assert geolab.operators.delta_operator is not None
    assert "ForbiddenCall" not in repr(geolab.operators.delta_operator)


def test_forbid_catches_a_name_bound_in_the_student_namespace_and_restores_it():
    original = geolab.operators.cayley_apply
    scope = {"ref": original, "torch": torch}
    exec("def cayley_apply(x, u, v, beta):\n    return ref(x, u, v, beta)\n", scope)
    fails = _failures(a2.check_cayley_apply(scope["cayley_apply"]))
    assert len(fails) == 6 and all("cayley_apply" in m for m in fails.values())
    assert scope["ref"] is original and geolab.operators.cayley_apply is original
    with pytest.raises(ForbiddenCall), forbid(["torch.linalg.solve"]):
        torch.linalg.solve(torch.eye(2), torch.ones(2))
    assert torch.linalg.solve(torch.eye(2), torch.ones(2)).tolist() == [1.0, 1.0]


def test_dense_solve_is_not_the_closed_form():
    def dense(x, u, v, beta):
        A = u.unsqueeze(-1) * v.unsqueeze(-2) - v.unsqueeze(-1) * u.unsqueeze(-2)
        c = torch.as_tensor(beta, dtype=x.dtype)[..., None, None] / 2
        eye = torch.eye(x.shape[-1], dtype=x.dtype)
        return torch.linalg.solve(eye + c * A, ((eye - c * A) @ x.unsqueeze(-1))).squeeze(-1)

    fails = _failures(a2.check_cayley_apply(dense))
    assert fails and all("torch.linalg.solve" in m for m in fails.values())


def test_pasted_constant_fails():
    pasted = torch.tensor([[0.8, -0.2], [-0.2, 0.8]], dtype=torch.float64)
    fails = _failures(a1.check_delta_operator(lambda k, beta: pasted))
    assert len(fails) == 6


def test_nan_effective_rank_on_zero_is_reported():
    def naive(X):
        s = torch.linalg.svdvals(X)
        p = s / s.sum(-1, keepdim=True)
        return torch.exp(-(p * torch.log(p)).sum(-1)) / min(X.shape[-2:])

    fails = _failures(a3.check_effective_rank(naive))
    assert (
        "NaN"
        in fails["effective_rank: 0 (not NaN) for an all-zero matrix, beside others in a batch"]
    )


def test_a4_rejects_reusing_geolab_mgt():
    fails = _failures(a4.check_my_rule(RESIDUALS["mgt_ddl"]))
    assert "MyRule: equals geolab's mgt_ddl at initialisation" in fails
    assert all("MGT" in m or "geolab.rules.delta" in m for m in fails.values())


def test_register_rule_adds_and_removes():
    class Echo(Rule):
        def forward(self, x, sublayer):
            return x + sublayer(x)

    with setups.register_rule("echo_rule", Echo) as name:
        assert RESIDUALS[name] is Echo
    assert "echo_rule" not in RESIDUALS
    with pytest.raises(RuntimeError), setups.register_rule("echo_rule", Echo):
        raise RuntimeError
    assert "echo_rule" not in RESIDUALS
    with pytest.raises(ValueError, match="preln"):
        with setups.register_rule("preln", Echo):
            pass
    with pytest.raises(ValueError, match="Rule"):
        with setups.register_rule("x", dict):
            pass


def test_feedback_callout_colours():
    def kind(obj):
        return feedback("A1", "mode", obj).text.split("data-kind=")[1]

    assert "success" in kind(_load(_instructor("A1"), "A1")["mode"])
    assert "warn" in kind(_load(_student("A1"), "A1")["mode"])
    assert "danger" in kind(lambda beta: "general")
    # pass and fail told apart by words, not by emoji that draw as one box without an emoji font
    passed = feedback("A1", "mode", _load(_instructor("A1"), "A1")["mode"]).text
    failed = feedback("A1", "mode", lambda beta: "general").text
    assert "pass:" in passed and "FAIL" not in passed and "FAIL" in failed
    assert not any(c in passed + failed for c in "✅❌")


# --- the notebooks -------------------------------------------------------------------------


@pytest.mark.parametrize("aid", IDS)
@pytest.mark.parametrize("kind", ["student", "instructor"])
def test_notebook_runs_headless(aid, kind, capsys):
    """Run as a script, each notebook prints every stub's check: waiting in the release, every
    check passing with the instructor's solutions."""
    path = _student(aid) if kind == "student" else _instructor(aid)
    runpy.run_path(str(path), run_name="__main__")
    printed = capsys.readouterr().out.splitlines()
    ends = {"student": "— waiting for your code", "instructor": "checks pass"}[kind]
    for stub in ASSIGNMENTS[aid].tasks:
        line = next(x for x in printed if x.startswith(f"{aid} · {stub} —"))
        assert line.endswith(ends), line


def test_marimo_check_strict():
    files = [str(p) for p in sorted(SRC.glob("*.py")) + sorted(OUT.glob("*.py"))]
    proc = subprocess.run(
        [sys.executable, "-m", "marimo", "check", "--strict", *files],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


CELL_STUB = """import marimo

app = marimo.App()


@app.cell
def _():
    names = {0.0: "identity", 1.0: "erase", 2.0: "reflect"}
    return (names,)


@app.cell
def _(names):
    def mode(beta):
        return names.get(float(beta), "general")
    return (mode,)
"""


def test_a_stub_that_became_an_ordinary_cell_is_still_graded(tmp_path):
    path = tmp_path / "cell_stub.py"
    path.write_text(CELL_STUB, encoding="utf-8")
    results = check_all("A1", _load(path, "A1"))
    fails = _failures(results)
    assert not any(name.startswith("mode") for name in fails)
    assert fails["delta_operator: depends on k only through its direction"] == (
        "the submission defines no `delta_operator`"
    )
