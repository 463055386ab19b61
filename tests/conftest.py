"""Shared test setup: offline Hugging Face, the text data folder made from the repository, small
torch thread counts, the helpers that run a marimo notebook headless with injected slider values,
and the seeded tensors and hypothesis settings of the operator property tests."""

import html
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from hypothesis import settings
from hypothesis import strategies as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
# no results kept on disk between tests (tests/test_disk_cache.py turns it on, in tmp_path): a
# test that clears the views' caches to measure work would otherwise read another run's files
os.environ.setdefault("GEOLAB_DISK_CACHE", "0")
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


def table_row(text: str, label: str, claim: str) -> str:
    """The one markdown table row of ``text`` opening with cells ``label`` and ``claim``."""
    (line,) = [ln for ln in text.splitlines() if ln.startswith(f"| {label} | {claim} |")]
    return line


ABBR = re.compile(r'<abbr title="([^"]*)">(.*?)</abbr>', re.S)


def hovers(text: str) -> list[tuple[str, str]]:
    """(the word shown, the definition its hover gives) for every ``<abbr>`` in ``text``."""
    return [(html.unescape(word), html.unescape(title)) for title, word in ABBR.findall(text)]


def first_use_is_hovered(text: str, word: str) -> bool:
    """Whether the first time ``word`` is read in the page ``text`` (tags and hover texts left
    out, any case, as a whole word) it is a hover's word."""
    marked = ABBR.sub(lambda m: "\x00" + html.unescape(m[2]) + "\x01", text)
    read = re.sub(r"<[^>]*>", " ", marked)
    first = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", read, re.I)
    return first is not None and read[first.start() - 1] == "\x00"


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


WIKITEXT_LINES = {"train": 3000, "valid": 300, "test": 300}  # lines of tiny-shakespeare each


def write_wikitext_format(text: str, folder: Path) -> None:
    """``folder/{train,valid,test}.txt`` in WikiText-2's format, made from ``text``: one
    token per word or punctuation mark, every line " tok tok ... " (a blank line " "), words
    seen once in train and val/test words unseen in train written ``<unk>``, as WikiText-2
    itself does (its vocabulary is train's)."""
    lines = [re.findall(r"[\w']+|[^\w\s]", line) for line in text.splitlines()]
    parts, at = {}, 0
    for name, n in WIKITEXT_LINES.items():
        parts[name], at = lines[at : at + n], at + n
    counts = Counter(w for line in parts["train"] for w in line)
    vocab = {w for w, c in counts.items() if c > 1}
    folder.mkdir(parents=True)
    for name, part in parts.items():
        rows = [" " + "".join(f"{w if w in vocab else '<unk>'} " for w in line) for line in part]
        (folder / f"{name}.txt").write_text("".join(row + "\n" for row in rows))


@pytest.fixture(scope="session")
def text_data(tmp_path_factory) -> Path:
    """A data folder as ``--data-dir`` reads it, made from the repository alone, so the tests
    that train on text run on a plain clone: ``tinyshakespeare/input.txt`` (the copy in data/)
    and ``wikitext-2/`` in WikiText-2's format generated from it (``write_wikitext_format``;
    the real corpus is only needed to check its published counts, ``shared_data``)."""
    root = tmp_path_factory.mktemp("text-data")
    shakespeare = REPO / "data" / "tinyshakespeare" / "input.txt"
    (root / "tinyshakespeare").mkdir()
    shutil.copyfile(shakespeare, root / "tinyshakespeare" / "input.txt")
    write_wikitext_format(shakespeare.read_text(), root / "wikitext-2")
    return root


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data beside the checkout (the real WikiText-2 and tiny-shakespeare)."""
    if not (SHARED_DATA / "wikitext-2" / "train.txt").is_file():
        pytest.skip(
            f"needs the real WikiText-2 in {SHARED_DATA / 'wikitext-2'} (beside the checkout; "
            "not shipped) to check its published counts"
        )
    return SHARED_DATA
