"""Shared test setup: offline Hugging Face, the shared data folder, small torch thread counts, the
helpers that run a marimo notebook headless with injected slider values, and the seeded tensors
and hypothesis settings of the operator property tests."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from hypothesis import settings
from hypothesis import strategies as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
torch.set_num_threads(1)

# operator property tests: float32/float64, ≤ 2 leading dims, 50 examples, seeded inputs
F32, F64 = torch.float32, torch.float64
FAST = settings(max_examples=50, deadline=None)
dtypes = st.sampled_from([F32, F64])
batch_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)


def randn(*shape, dtype=F64, seed=0):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
NOTEBOOK_ENV = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
# `geolab train` flags of a run that takes a second: 3 steps of a 1-layer gyroscope model on CPU
TINY_TRAIN = (
    "--task gyroscope --residual preln --layers 1 --d-model 16 --heads 2 --steps 3 "
    "--batch-size 4 --n-train 16 --n-val 4 --device cpu --no-progress"
).split()


def load_app(path: Path):
    """The ``marimo.App`` of the notebook file at ``path``, imported fresh."""
    spec = importlib.util.spec_from_file_location(f"nb_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.app


def ui(value):
    """Stands in for a marimo UI element: the cells read only ``.value``."""
    return SimpleNamespace(value=value)


def shown(outputs) -> str:
    """Everything the notebook displayed, as HTML text."""
    return "\n".join(str(getattr(o, "text", "")) for o in outputs if o is not None)


def assert_marimo_check_clean(paths) -> None:
    """``marimo check --strict`` reports nothing for the notebook files ``paths``."""
    proc = subprocess.run(
        [sys.executable, "-m", "marimo", "check", "--strict", *map(str, paths)],
        capture_output=True,
        text=True,
        env=NOTEBOOK_ENV,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data beside the checkout (WikiText-2 and tiny-shakespeare)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} not found (it lies beside the checkout)")
    return SHARED_DATA
