"""pyproject.toml and environment.yml declare the same dependencies; .ci/run calls `make test`;
the Jupyter front end the README names is declared and installed; marimo edit runs on open."""

import re
import subprocess
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

REPO = Path(__file__).resolve().parents[1]


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[ ;]", req.strip(), maxsplit=1)[0].lower()


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = {_name(r) for r in project["dependencies"] + project["optional-dependencies"]["dev"]}
    env_lines = (REPO / "environment.yml").read_text().splitlines()
    pip_section = env_lines[env_lines.index("  - pip:") + 1 :]
    conda = {_name(line.split("- ", 1)[1]) for line in pip_section if line.strip().startswith("- ")}
    conda.discard("-e")
    assert declared == conda


def test_license_is_an_spdx_expression():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"  # not the table form setuptools deprecates


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    assert "make test" in readme.split("\n## ", 1)[0]  # in the opening, before any section
    assert re.search(r"^make test$", ci, re.M)


def test_the_jupyter_front_end_is_declared_and_installed():
    """README "Learn" and docs/learning.md "Jupyter": `make setup` (geolab[dev]) installs
    JupyterLab, `.[jupyter]` names it alone, the pages say how to start it (as root in a
    container too), and the venv's `jupyter lab` runs."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert "jupyterlab" in {_name(r) for r in extras["dev"]}
    assert {_name(r) for r in extras["jupyter"]} == {"jupyterlab"}
    for page in ("README.md", "docs/learning.md"):
        text = (REPO / page).read_text()
        assert ".venv/bin/jupyter lab --ip 127.0.0.1" in text and "--allow-root" in text, page
    jupyter = REPO / ".venv" / "bin" / "jupyter"
    if not jupyter.exists():
        pytest.skip("no .venv made by make here")
    done = subprocess.run(
        [jupyter, "lab", "--version"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and re.fullmatch(r"\d+\.\d+\.\d+\s*", done.stdout), done


def test_marimo_edit_runs_notebooks_on_open():
    """make tour and the assignments under marimo edit open already run (tests/test_browser.py
    checks it in chromium)."""
    marimo = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["marimo"]
    assert marimo["runtime"]["auto_instantiate"] is True
