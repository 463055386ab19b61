"""Gyroscope trial (docs/design.md §8): the E∆ table's small-scale JPmHC (7 layers, D = 128) on
gyroscope with the small scale's settings but ``STEPS`` iterations instead of 400, one seed;
prints its validation MSE and the ratio to the task's best trivial baseline (plane known, mean
rotation). A model has learned the rotation at ratio ≤ 0.5.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/gyroscope_trial.py 3000 geolab,reference
"""

import json
import sys
import time

import torch

from geolab.experiments import edelta_benchmarks as eb
from geolab.experiments.runner import deterministic
from geolab.experiments.runs import baseline, train_rule
from geolab.tasks import get_task


def main(steps: int, flavors: list[str], seed: int = 42) -> None:
    small = eb.SCALES["small"]
    settings = {**small, "train": {**small["train"], "steps": steps}}
    for flavor in flavors:
        task = get_task("gyroscope", seed=seed, flavor=flavor, **small["task_sizes"]["gyroscope"])
        found = baseline(task, settings, seed, flavor)
        t0 = time.perf_counter()
        with deterministic():
            run = train_rule(
                task, settings, seed, print, "jpmhc", flavor=flavor, n_layer=7, d_model=128
            )
        out = {
            "flavor": flavor,
            "steps": steps,
            "mse": run["val"]["mse"],
            "baseline": found,
            "ratio": run["val"]["mse"] / found["value"],
            "state": run["state"],
            "seconds": time.perf_counter() - t0,
        }
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    torch.set_num_threads(1)
    main(int(sys.argv[1]), sys.argv[2].split(",") if len(sys.argv) > 2 else ["geolab"])
