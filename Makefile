# geolab: one venv inside the repo, created on first use.
#   make tour   set up, then open the notebook tour on http://127.0.0.1:2718
#   make test   set up, then run the whole test suite
# TORCH_VERSION pins torch (on this project's CPU machines the pinned wheel is a local CPU build).
# TORCH_INDEX picks a wheel index, e.g. https://download.pytorch.org/whl/cu128 for CUDA 12.8
# or https://download.pytorch.org/whl/cpu for a small CPU-only build.
PYTHON ?= python3
TORCH_VERSION ?= 2.13.0
TORCH_INDEX ?=
PORT ?= 2718
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.geolab-installed

.PHONY: setup tour test lint notebooks-ipynb notebooks-html screenshots

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "torch==$(TORCH_VERSION)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

tour: setup
	$(PY) -m marimo edit notebooks/00_tour.py --host 127.0.0.1 --port $(PORT)

test: setup
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(PY) -m pytest -n 2 --timeout 900

notebooks-ipynb: setup
	OMP_NUM_THREADS=1 $(PY) scripts/make_ipynb.py build/ipynb

notebooks-html: notebooks-ipynb
	$(PY) scripts/make_html.py build/ipynb build/html

screenshots: setup
	$(PY) scripts/screenshots.py docs

lint: setup
	$(PY) -m ruff check . && $(PY) -m ruff format --check . && $(PY) -m marimo check --strict notebooks/*.py notebooks/assignments/*.py assignments/instructor/*.py
