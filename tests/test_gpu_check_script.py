"""scripts/gpu_check.sh checks its settings and arguments before it writes anything: a bad one is
one line ``gpu_check.sh: error: ...`` naming it, exit status 2, and an earlier check.log is kept.
(tests/test_without_extras.py runs the whole script with --dry-run.)"""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "gpu_check.sh"
EARLIER = "an earlier check's log\n"


def gpu_check(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "BUDGET_S", "JOBS")}
    env = {**base, "OUT": str(tmp_path / "out"), **env}
    return subprocess.run(
        ["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "args, env, named",
    [
        (["--dry-run", "--fast"], {}, "unknown argument '--fast'"),
        (["--dry-run", "--dry-run"], {}, "2 arguments"),
        (["--dry-run"], {"BUDGET_S": "abc"}, "BUDGET_S='abc'"),
        (["--dry-run"], {"BUDGET_S": "-5"}, "BUDGET_S='-5'"),
        (["--dry-run"], {"BUDGET_S": "0"}, "BUDGET_S='0'"),
        (["--dry-run"], {"JOBS": "0"}, "JOBS='0'"),
        (["--dry-run"], {"JOBS": "two"}, "JOBS='two'"),
        (["--dry-run"], {"OUT": ""}, "OUT=''"),
        (["--dry-run"], {"PYTHON": "/nonexistent/python"}, "PYTHON='/nonexistent/python'"),
        (["--dry-run"], {"PYTHON": "/bin/true -c"}, "PYTHON='/bin/true -c'"),
    ],
)
def test_a_bad_setting_is_one_line_exit_2_and_the_earlier_log_stays(tmp_path, args, env, named):
    out = tmp_path / "out"
    out.mkdir()
    (out / "check.log").write_text(EARLIER)
    done = gpu_check(tmp_path, *args, **env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("gpu_check.sh: error: ") and done.stderr.count("\n") == 1
    assert named in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert (out / "check.log").read_text() == EARLIER
    assert sorted(p.name for p in out.iterdir()) == ["check.log"]


def test_out_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "out").write_text("a file")
    done = gpu_check(tmp_path, "--dry-run")
    assert done.returncode == 2 and f"OUT='{tmp_path / 'out'}'" in done.stderr
    assert (tmp_path / "out").read_text() == "a file"


@pytest.mark.skipif(not (REPO / ".venv" / "bin" / "python").exists(), reason="no .venv here")
def test_without_python_set_it_uses_the_venv_and_refuses_a_cpu_before_writing(tmp_path):
    """The default interpreter is the repository's .venv (system python3 has no torch); on a
    machine without CUDA the full check refuses, naming it, and keeps the earlier log."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available: the full check would run")
    out = tmp_path / "out"
    out.mkdir()
    (out / "check.log").write_text(EARLIER)
    done = gpu_check(tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == (
        "gpu_check.sh: error: CUDA is not available to .venv/bin/python "
        "(use --dry-run on a CPU machine)\n"
    )
    assert (out / "check.log").read_text() == EARLIER


def test_the_compile_step_fits_the_budget_and_runs_eager_alone_without_a_gpu(tmp_path):
    """Step (4) times the E∆ model eager, compiled and compiled with CUDA graphs; the fixed
    timeouts of every step before the E∆ table (which gets what is left) fit in the default 8
    minutes; a dry run (no GPU) runs the eager line alone, and says the others are skipped."""
    import re
    import sys

    text = SCRIPT.read_text()
    assert "modes=eager,default,reduce-overhead" in text and '[ "$dry" = 1 ] && modes=eager' in text
    assert sum(map(int, re.findall(r"^\s*timeout (\d+) ", text, re.M))) <= 480
    model = re.search(r'^compile_model="([^"]+)"', text, re.M)[1]
    cmd = [sys.executable, str(REPO / "scripts" / "step_times.py"), "--scale", "tiny"]
    cmd += ["--steps", "4", "--warmup", "1", "--only", model, "--modes", "eager"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (line,) = done.stdout.splitlines()
    assert line.startswith(f"{model} [eager]") and " ms " in line
    bad = subprocess.run([*cmd[:-1], "eager,fast"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "--modes 'eager,fast' is not allowed" in bad.stderr
