"""`make setup`: the torch build chosen with TORCH_INDEX / TORCH_VERSION is installed, a change
of choice reinstalls it, a plain rerun keeps it. Runs the real Makefile with a stand-in for
Python that records every call instead of installing anything."""

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CU = "https://download.pytorch.org/whl/cu128"

# `python3 -m venv DIR` makes DIR/bin/python (this script again); every call is logged.
FAKE = """#!/bin/sh
echo "$*" >> "{log}"
if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; fi
"""

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


@pytest.fixture
def checkout(tmp_path):
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(REPO / name, tmp_path / name)
    fake = tmp_path / "python3"
    fake.write_text(FAKE.format(log=tmp_path / "calls.log"))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return tmp_path


def setup(checkout, *args) -> list[str]:
    """The calls one `make setup ARGS` made."""
    log = checkout / "calls.log"
    log.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_", "MAKE"))}
    done = subprocess.run(
        ["make", "-s", "setup", f"PYTHON={checkout / 'python3'}", *args],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines()


def test_the_chosen_torch_build_is_installed_and_kept(checkout):
    first = setup(checkout, f"TORCH_INDEX={CU}")
    assert first[0] == "-m venv .venv"
    assert f"-m pip install --quiet torch==2.13.0 --index-url {CU}" in first
    assert first[-1] == "-m pip install --quiet -e .[dev]"
    choice = checkout / ".venv" / ".torch-choice"
    assert choice.read_text() == f"torch==2.13.0 {CU}\n"
    assert setup(checkout) == []  # a plain `make test` later keeps the CUDA build
    cpu = "https://download.pytorch.org/whl/cpu"
    assert setup(checkout, f"TORCH_INDEX={cpu}") == [
        "-m pip uninstall --quiet -y torch",
        f"-m pip install --quiet torch==2.13.0 --index-url {cpu}",
    ]
    assert setup(checkout, "TORCH_VERSION=2.14.0")[-1].endswith(f"torch==2.14.0 --index-url {cpu}")
    assert choice.read_text() == f"torch==2.14.0 {cpu}\n"
    assert setup(checkout, "TORCH_INDEX=", "TORCH_VERSION=2.14.0")[-1].endswith("torch==2.14.0")
    assert choice.read_text() == "torch==2.14.0\n"  # back to PyPI's


def test_a_venv_set_up_before_choices_were_recorded_is_left_alone(checkout):
    setup(checkout)
    (checkout / ".venv" / ".torch-choice").unlink()
    assert setup(checkout) == []  # the default build is what it holds: nothing reinstalled
    assert (checkout / ".venv" / ".torch-choice").read_text() == "torch==2.13.0\n"
    (checkout / "pyproject.toml").touch()
    os.utime(checkout / "pyproject.toml", (2e9, 2e9))
    assert setup(checkout) == ["-m pip install --quiet -e .[dev]"]
