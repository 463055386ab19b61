#!/usr/bin/env bash
# Rerun every protocol at --scale small, in the background, from a clean checkout:
#   scripts/reproduce_small.sh            # returns at once; follow results/logs/*.log
# Two protocols at a time, one torch thread each (the committed results were made on a 2-core
# CPU); each writes data/results/NAME-small.json and its figures, and when all are done
# data/results/README.md is regenerated from the JSON files. The checkout must be clean
# (`git status --porcelain` empty) so every result records `dirty: false` with its commit.
# Text corpora: $GEOLAB_DATA, else ../shared/data beside the checkout, else the Hugging Face hub.
# PYTHON picks the interpreter (default .venv/bin/python); OUT the folder (default data/results).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "$(git status --porcelain)" ]; then
  echo "reproduce_small.sh: error: the checkout has uncommitted changes; commit or stash them" \
    "first (results must record dirty: false)" >&2
  git status --short >&2
  exit 2
fi
py="${PYTHON:-.venv/bin/python}"
out="${OUT:-data/results}"
logs="results/logs"
mkdir -p "$logs"
data="${GEOLAB_DATA:-}"
if [ -z "$data" ] && [ -d ../shared/data ]; then data="$(cd ../shared/data && pwd)"; fi
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
if [ -n "$data" ]; then export GEOLAB_DATA="$data" HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1; fi

# Two lanes of about equal projected length (≈ 2 h 15 min each on an idle 2-core CPU).
lane_a="edelta_benchmarks language_model"
lane_b="rank_evolution beta_dynamics ablation depth_scaling reflection"

run_lane() {
  for name in "$@"; do
    echo "$(date -u +%FT%TZ) start $name" >>"$logs/schedule.log"
    # --fresh: every run retrained at this commit, none reused from OUT/NAME-small-runs/;
    # --force: the committed NAME-small.json is replaced
    # beta_dynamics: one seed (a 12,000-step run of 100 layers is ≈ 1¾ h of one thread);
    # data/results/README.md prices the other two
    seeds=(); [ "$name" = beta_dynamics ] && seeds=(--seeds 1)
    "$py" -m geolab reproduce "$name" --scale small --threads 1 --fresh --out "$out" --force \
      "${seeds[@]}" >"$logs/$name.log" 2>&1 || echo "$(date -u +%FT%TZ) FAILED $name" >>"$logs/schedule.log"
    echo "$(date -u +%FT%TZ) done $name" >>"$logs/schedule.log"
  done
}

# shellcheck disable=SC2086  # the lanes are word lists
nohup bash -c "$(declare -f run_lane); logs=$logs py=$py out=$out
  run_lane $lane_a & run_lane $lane_b & wait
  \"$py\" -m geolab reproduce --readme --out \"$out\" >\"$logs/readme.log\" 2>&1
  echo \"\$(date -u +%FT%TZ) all done\" >>\"$logs/schedule.log\"" >"$logs/nohup.log" 2>&1 &
echo "started in the background (pid $!); follow $logs/schedule.log and $logs/NAME.log"
