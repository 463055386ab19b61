# geolab: one venv inside the repo, created on first use.
#   make tour   set up, then open the notebook tour on http://127.0.0.1:2718
#   make test   set up, then run the whole test suite
# TORCH_VERSION pins torch (on this project's CPU machines the pinned wheel is a local CPU build).
# TORCH_INDEX picks a wheel index, e.g. https://download.pytorch.org/whl/cu128 for CUDA 12.8
# or https://download.pytorch.org/whl/cpu for a small CPU-only build. The choice is remembered in
# .venv/.torch-choice: a later `make setup TORCH_INDEX=...` (or a new TORCH_VERSION) reinstalls
# torch from there, and a plain `make test` keeps the build chosen last
# (`make setup TORCH_INDEX=` goes back to PyPI's).
PYTHON ?= python3
TORCH_VERSION ?= 2.13.0
PORT ?= 2718
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.geolab-installed
TORCH_CHOICE := $(VENV)/.torch-choice
TORCH_INDEX ?= $(shell sed -n 's/^torch==[^ ]* //p' $(TORCH_CHOICE) 2>/dev/null)
TORCH_WANT := torch==$(TORCH_VERSION)$(if $(TORCH_INDEX), $(TORCH_INDEX))
TORCH_PIP := "torch==$(TORCH_VERSION)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))

.PHONY: setup torch tour test lint notebooks-ipynb screenshots

setup: torch $(STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH_PIP)
	echo '$(TORCH_WANT)' > $(TORCH_CHOICE)

# Reinstall torch when the choice changed; a venv set up before choices were recorded holds
# the default build (PyPI's).
torch: $(PY)
	@have="$$(cat $(TORCH_CHOICE) 2>/dev/null || echo 'torch==$(TORCH_VERSION)')"; \
	if [ "$$have" != '$(TORCH_WANT)' ]; then \
	  echo "torch: $$have -> $(TORCH_WANT)"; \
	  $(PY) -m pip uninstall --quiet -y torch && \
	  $(PY) -m pip install --quiet $(TORCH_PIP) || exit 1; \
	fi; \
	echo '$(TORCH_WANT)' > $(TORCH_CHOICE)

$(STAMP): pyproject.toml | torch
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

tour: setup
	$(PY) -m marimo edit notebooks/00_tour.py --host 127.0.0.1 --port $(PORT)

test: setup
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(PY) -m pytest -n 2 --timeout 900 -rs

notebooks-ipynb: setup
	OMP_NUM_THREADS=1 $(PY) scripts/make_ipynb.py build/ipynb

notebooks-html: notebooks-ipynb
	$(PY) scripts/make_html.py build/ipynb build/html

screenshots: setup
	$(PY) scripts/screenshots.py docs

lint: setup
	$(PY) -m ruff check . && $(PY) -m ruff format --check . && $(PY) -m marimo check --strict notebooks/*.py notebooks/assignments/*.py assignments/instructor/*.py
