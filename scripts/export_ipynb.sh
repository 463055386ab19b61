#!/usr/bin/env bash
# Export the marimo notebooks 00–05 to Jupyter notebooks: scripts/export_ipynb.sh [OUT_DIR]
# (default build/ipynb). PYTHON picks the interpreter (default .venv/bin/python).
# The .ipynb files run top to bottom in Jupyter; for live sliders there use geolab.widgets.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-build/ipynb}"
py="${PYTHON:-.venv/bin/python}"
mkdir -p "$out"
for nb in notebooks/0[0-5]_*.py; do
  "$py" -m marimo export ipynb "$nb" -o "$out/$(basename "${nb%.py}").ipynb" -f
done
echo "exported $(ls "$out"/*.ipynb | wc -l) notebooks to $out"
