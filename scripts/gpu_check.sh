#!/usr/bin/env bash
# The whole device check, in ≤ 8 minutes on one GPU, from the repository root:
#   bash scripts/gpu_check.sh              # on a machine with a CUDA GPU
#   bash scripts/gpu_check.sh --dry-run    # the same steps at tiny sizes on a CPU (a test runs it)
# Needs only python3 with torch (≥ 2.11), numpy, pytest and tqdm: no plotly, marimo or datasets,
# no network, no install (geolab is imported from this checkout through PYTHONPATH).
# Writes 7 files under $OUT (default ./gpu_check):
#   check.log                      everything below, with the time of each step
#   pytest-gpu.txt                 (1) pytest -m gpu: the trainer's CUDA path vs the CPU numbers
#   edelta_benchmarks-paper.json   (2) the E∆ table at its published size, both flavors, seed 42,
#                                      packed into worker processes (absent if runs were left out)
#   edelta-runs.tar.gz             (2) every finished run of it (OUT/NAME-SCALE-runs/*.json)
#   throughput.json                (2) runs/min and sustained FLOP/s of the packed runner
#   step-times.txt                 (3) one line per rule: step time at the paper's sizes
#   compile-times.txt              (4) the E∆ table's E∆ model: step time eager, its layer step
#                                      compiled, and compiled with CUDA graphs (reduce-overhead);
#                                      eager alone in a dry run (compiling is timed on a GPU)
# The E∆ run gets what is left of the budget as its --time-limit: the packed runner starts no
# run that the longest run so far says cannot finish in time, and names those it left out.
# Environment: PYTHON (default .venv/bin/python when it exists, else python3), OUT, BUDGET_S
# (seconds, default 480), JOBS (default: CPU cores − 2, at most 16 — one worker process per core,
# each with its own CUDA context). Every setting and argument is checked before anything is
# written: a bad one is one line "gpu_check.sh: error: ..." and exit status 2, and an earlier
# check.log in OUT is left as it was.
# Exit status 0 when every step ran (the E∆ table may be incomplete), 1 when a step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
refuse() { echo "gpu_check.sh: error: $*" >&2; exit 2; }
dry=0
for arg in "$@"; do
  case "$arg" in
    --dry-run) dry=1 ;;
    *) refuse "unknown argument '$arg' (allowed: --dry-run)" ;;
  esac
done
[ "$#" -le 1 ] || refuse "$# arguments given ($*); allowed: none or --dry-run"
default_py=python3
[ -x .venv/bin/python ] && default_py=.venv/bin/python
py="${PYTHON:-$default_py}"
out="${OUT-gpu_check}"
budget="${BUDGET_S-480}"
cores="$(nproc 2>/dev/null || echo 4)"
jobs="${JOBS-$(( cores > 18 ? 16 : (cores > 3 ? cores - 2 : 2) ))}"
[[ "$budget" =~ ^[0-9]{1,6}$ ]] && [ "$budget" -ge 1 ] && [ "$budget" -le 86400 ] ||
  refuse "BUDGET_S='$budget' is not allowed; it must be a whole number of seconds in [1, 86400]"
[[ "$jobs" =~ ^[0-9]{1,4}$ ]] && [ "$jobs" -ge 1 ] && [ "$jobs" -le 256 ] ||
  refuse "JOBS='$jobs' is not allowed; it must be a whole number of worker processes in [1, 256]"
[ -n "$out" ] || refuse "OUT='' is not allowed; name a folder (default gpu_check)"
[ ! -e "$out" ] || [ -d "$out" ] || refuse "OUT='$out' is not allowed; it is a file, not a folder"
command -v "$py" > /dev/null ||
  refuse "PYTHON='$py' is not allowed; no such program (run make setup, or set PYTHON)"
"$py" -c "import torch, numpy, pytest, tqdm" 2> /dev/null ||
  refuse "$py cannot import torch, numpy, pytest and tqdm (run make setup, or set PYTHON)"
if [ "$dry" = 0 ] && ! "$py" -c "import sys, torch; sys.exit(not torch.cuda.is_available())"; then
  refuse "CUDA is not available to $py (use --dry-run on a CPU machine)"
fi
mkdir -p "$out" 2> /dev/null && [ -w "$out" ] ||
  refuse "OUT='$out' is not allowed; it cannot be made a writable folder"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONUNBUFFERED=1
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
start=$SECONDS
log="$out/check.log"
: > "$log"
say() { echo "[gpu_check +$(( SECONDS - start ))s] $*" | tee -a "$log"; }
left() { echo $(( budget - (SECONDS - start) )); }

fail=0
if [ "$dry" = 1 ]; then
  scale=tiny; steps=6; warmup=2; margin=60
else
  scale=paper; steps=20; warmup=5; margin=45
fi
say "scale $scale, budget ${budget}s, $jobs workers, output in $out"
"$py" - <<'EOF' 2>&1 | tee -a "$log"
import platform, torch, geolab
gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
print(f"python {platform.python_version()}, torch {torch.__version__}, geolab {geolab.__version__}"
      f" from {geolab.__file__}, CUDA {torch.version.cuda}, GPU {gpu}, {torch.cuda.device_count()} visible")
EOF

say "(1) pytest -m gpu"
timeout 200 "$py" -m pytest -m gpu -q -p no:cacheprovider --noconftest -rs tests/test_gpu.py \
  > "$out/pytest-gpu.txt" 2>&1
code=$?
say "pytest exit $code: $(tail -n 1 "$out/pytest-gpu.txt")"
[ "$code" = 0 ] || fail=1

say "(3) step time per rule at scale $scale"
timeout 120 "$py" scripts/step_times.py --scale "$scale" --steps "$steps" --warmup "$warmup" \
  > "$out/step-times.txt" 2>&1
code=$?
say "step times exit $code"
[ "$code" = 0 ] || fail=1
cat "$out/step-times.txt" >> "$log"

compile_model="edelta_benchmarks geolab/gyroscope/edelta"
modes=eager,default,reduce-overhead
[ "$dry" = 1 ] && modes=eager
say "(4) $compile_model: step time $modes"
[ "$dry" = 1 ] && say "compiled modes skipped: a dry run has no GPU (they compile for minutes on a CPU)"
timeout 150 "$py" scripts/step_times.py --scale "$scale" --steps "$steps" --warmup "$warmup" \
  --only "$compile_model" --modes "$modes" > "$out/compile-times.txt" 2>&1
code=$?
say "compiled step times exit $code"
[ "$code" = 0 ] || fail=1
cat "$out/compile-times.txt" >> "$log"

limit=$(( $(left) - margin ))
hard=$(( limit + margin - 5 ))  # the limit counts from the sweep's start: room for start-up
# tiny runs on a CPU: the first wave always lands (a loaded CPU may take minutes to start the
# workers), the rest is left out by the limit or fits in it
[ "$dry" = 1 ] && limit=20 && hard=300
say "(2) E∆ table at scale $scale, both flavors, seed 42, --jobs $jobs, --time-limit ${limit}s"
if [ "$limit" -lt 20 ]; then
  say "skipped: only ${limit}s left"
else
  minutes="$("$py" -c "print($limit / 60)")"
  timeout "$hard" "$py" -m geolab reproduce edelta_benchmarks --scale "$scale" \
    --seeds 1 --jobs "$jobs" --time-limit "$minutes" --no-png --out "$scratch" \
    > "$scratch/reproduce.log" 2>&1
  code=$?
  grep -v "^  seed \|^  \[" "$scratch/reproduce.log" >> "$log"  # per-run lines: in the run files
  case $code in
    0) say "E∆ table complete" ;;
    3) say "E∆ table incomplete: the runs left out are named above (rerun to finish them)" ;;
    124) say "E∆ run killed at its hard timeout; the finished runs are kept" ;;
    *) say "E∆ run failed (exit $code)"; tail -n 20 "$scratch/reproduce.log" >> "$log"; fail=1 ;;
  esac
  cp "$scratch"/edelta_benchmarks-*.json "$out/" 2>/dev/null
  cp "$scratch/throughput.json" "$out/" 2>/dev/null
  if [ -d "$scratch/edelta_benchmarks-$scale-runs" ]; then
    tar -czf "$out/edelta-runs.tar.gz" -C "$scratch" "edelta_benchmarks-$scale-runs"
    say "$(ls "$scratch/edelta_benchmarks-$scale-runs" | wc -l) finished runs in edelta-runs.tar.gz"
  fi
  if [ -f "$scratch/throughput.json" ]; then
    "$py" - "$scratch/throughput.json" <<'EOF' 2>&1 | tee -a "$log"
import json, sys
for device, r in json.load(open(sys.argv[1])).items():
    print(f"packed runner on {device}: {r['runs']} runs by {r['jobs']} workers in {r['wall_s']:.0f} s:"
          f" {r['runs_per_min']:.3g} runs/min, {r['flops_per_s']:.3g} FLOP/s sustained")
EOF
  fi
fi
say "done in $(( SECONDS - start ))s (exit $fail); files in $out: $(ls "$out" | tr '\n' ' ')"
exit "$fail"
