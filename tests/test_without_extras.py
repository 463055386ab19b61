"""The training and experiment path runs with plotly, marimo and datasets absent (a bare GPU image:
torch, numpy, tqdm): each is imported only where figures, notebooks or the hub need it."""

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from conftest import TINY_TRAIN

REPO = Path(__file__).resolve().parents[1]
BLOCKED = ("plotly", "marimo", "datasets")
# Put first on PYTHONPATH, this sitecustomize makes importing a blocked package fail as if it
# were not installed, for the whole process and every worker process it spawns.
BLOCKER = f"""
import sys

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
        return None

sys.meta_path.insert(0, Blocker())
"""


def geolab(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "blocker").mkdir(exist_ok=True)
    (tmp_path / "blocker" / "sitecustomize.py").write_text(BLOCKER)
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "blocker"), str(REPO)]),
        **env,
    }
    cmd = [sys.executable, "-m", "geolab", *args]
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_the_blocker_blocks(tmp_path):
    done = geolab(tmp_path, "info")  # runs under the blocker; then prove it is in force
    assert done.returncode == 0, done.stderr[-2000:]
    probe = subprocess.run(
        [sys.executable, "-c", "import plotly"],
        env={**os.environ, "PYTHONPATH": str(tmp_path / "blocker")},
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 1 and "(blocked)" in probe.stderr


def test_train_and_reproduce_without_plotly_marimo_datasets(tmp_path):
    done = geolab(tmp_path, "train", *TINY_TRAIN, "--out", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "done: step 3" in done.stdout
    out = tmp_path / "results"
    args = ["reproduce", "ablation", "--scale", "tiny", "--seeds", "1", "--jobs", "2"]
    done = geolab(tmp_path, *args, "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "figures skipped: plotly is not installed" in done.stdout
    result = json.loads((out / "ablation-tiny.json").read_text())
    assert result["figures"] == [] and "plotly" in result["provenance"]["figures_note"]
    assert len(list((out / "ablation-tiny-runs").iterdir())) == 6
    # a plan needs no corpus: WikiText-2 is nowhere, datasets cannot fetch it
    plan = ["reproduce", "language_model", "--scale", "paper", "--dry-run"]
    done = geolab(tmp_path, *plan, GEOLAB_DATA=str(tmp_path / "no-data"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "GPU-hours" in done.stdout


def test_gpu_check_dry_run_runs_the_device_script_end_to_end(tmp_path):
    """scripts/gpu_check.sh --dry-run: the device check's every step at tiny sizes on this CPU,
    with plotly, marimo and datasets blocked as on the bare GPU image."""
    (tmp_path / "blocker").mkdir()
    (tmp_path / "blocker" / "sitecustomize.py").write_text(BLOCKER)
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "OUT": str(out),
        "JOBS": "2",
        "PYTHONPATH": str(tmp_path / "blocker"),
    }
    cmd = ["bash", str(REPO / "scripts" / "gpu_check.sh"), "--dry-run"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= 8 and all((out / f).stat().st_size <= 16 << 20 for f in files)
    assert {"check.log", "pytest-gpu.txt", "step-times.txt", "throughput.json"} <= set(files)
    assert "skipped" in (out / "pytest-gpu.txt").read_text()  # no CUDA here
    lines = (out / "step-times.txt").read_text().splitlines()
    assert len(lines) == 17 and all(" ms " in line and "FLOP/s" in line for line in lines)
    (eager,) = (out / "compile-times.txt").read_text().splitlines()  # compiled: on a GPU only
    assert "edelta [eager]" in eager and " ms " in eager
    log = (out / "check.log").read_text()
    assert "compiled modes skipped" in log
    assert "E∆ table complete" in log or "left out:" in log
    (device,) = json.loads((out / "throughput.json").read_text()).values()
    assert device["runs"] >= 1 and device["runs_per_min"] > 0
    with tarfile.open(out / "edelta-runs.tar.gz") as tar:
        names = [m.name for m in tar.getmembers() if m.isfile()]
        assert len(names) == device["runs"]
        record = json.load(tar.extractfile(names[0]))
        assert record["result"]["val"]["mse"] > 0 and record["device"].startswith("cpu")
