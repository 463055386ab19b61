"""Sweeps beyond one machine: a protocol's runs as a job array of the scheduler, via submitit.

``geolab reproduce NAME --launcher slurm --partition P`` (or ``--launcher local``, submitit's
local executor: the same path on one machine, what the tests run):

1. collect: the protocol runs in a collecting sweep (``pack``), which stops at its runs and
   keeps those without a saved file under ``OUT/STEM-runs/`` (STEM: NAME-SCALE, or
   NAME-SCALE-VARIANT for a variant, ``runner.result_stem``);
2. submit: those runs, ``runs_per_job`` per array job, as one submitit job array (SLURM: the
   partition, ``gpus_per_job`` GPUs and one CPU per worker each, at most ``array_parallelism``
   jobs at once, the time limit); each job runs the packed runner (``pack.run_jobs``, ``jobs``
   workers round-robin over the GPUs the scheduler gave it) and saves every finished run into
   the shared run folder as it lands;
3. wait for the array, then merge: ``run_protocol`` finds every run saved and writes
   ``OUT/STEM.json`` as a local run would. A run that no job finished (a failed job, a
   time limit) is named and nothing is merged (:class:`pack.Incomplete`, exit 3, when only the
   time limit left runs out); rerunning the same command submits only the runs still missing,
   so an interrupted sweep resumes.

submitit's logs and pickles go to ``OUT/STEM-submitit/``.
"""

import math
import time
from pathlib import Path

from geolab.experiments import pack, plan
from geolab.experiments.runner import (
    deterministic,
    pick_seeds,
    result_stem,
    run_protocol,
    runs_folder,
    scale_settings,
)
from geolab.outputs import check_dir
from geolab.threads import use_threads

LAUNCHERS = ("local", "slurm")
MARGIN_S = 120  # a job stops starting runs this long before its scheduler time limit


def train_chunk(fn, jobs: list[tuple], settings: dict, run_dir: str, limit_s, threads: int):
    """One array job: ``jobs`` through the packed runner, saved under ``run_dir``. Returns
    (runs trained, runs left out by the time limit, throughput per device)."""
    use_threads(threads)
    with pack.sweep(run_dir=run_dir, time_limit=limit_s) as sw, deterministic():
        try:
            pack.run_jobs(fn, jobs, settings, print)
            left = []
        except pack.Incomplete as err:
            left = err.left_out
    return len(sw.trained), left, sw.throughput()


def collect(module, settings: dict, seeds: list[int], run_dir: Path):
    """(fn, jobs without a saved run, settings as the protocol passes them) of ``module``
    (every protocol packs its runs): its ``run`` stops at its first ``run_jobs``."""
    with pack.sweep(run_dir=run_dir, collect=True):
        try:
            module.run(settings, seeds, lambda msg: None)
        except pack.Collected as got:
            return got.fn, got.jobs, got.settings
    raise RuntimeError(f"{module.NAME}.run returned without handing its runs to run_jobs")


def launch(
    module,
    scale: str,
    seeds: int | None,
    out,
    launcher: str,
    partition: str | None = None,
    gpus_per_job: int = 1,
    array_parallelism: int | None = None,
    runs_per_job: int | None = None,
    time_limit: float = 24 * 3600,
    threads: int = 1,
    png: bool = True,
    options: dict | None = None,
    log=print,
) -> dict:
    """Submit ``module``'s missing runs at ``scale`` as a job array, wait, merge (module
    docstring); returns the merged result. ValueError when runs are still missing after the
    array has finished."""
    import submitit  # only a launch needs it

    settings = {**scale_settings(module, scale), **(options or {})}
    chosen = pick_seeds(settings, seeds)
    out = check_dir(out, "--out")
    stem = result_stem(module.NAME, scale, settings)
    run_dir = runs_folder(out, stem, settings)
    fn, todo, passed = collect(module, settings, chosen, run_dir)
    workers = settings.get("jobs", 1)
    per_job = runs_per_job or 4 * workers
    chunks = [todo[i : i + per_job] for i in range(0, len(todo), per_job)]
    if chunks:
        executor = submitit.AutoExecutor(folder=out / f"{stem}-submitit", cluster=launcher)
        params = {"timeout_min": math.ceil(time_limit / 60), "name": stem}
        if launcher == "slurm":
            params |= {"slurm_partition": partition, "slurm_gpus_per_node": gpus_per_job}
            params |= {"slurm_cpus_per_task": workers * threads}
            if array_parallelism is not None:
                params["slurm_array_parallelism"] = array_parallelism
        executor.update_parameters(**params)
        limit = max(time_limit - MARGIN_S, time_limit / 2)
        args = [(fn, chunk, passed, str(run_dir), limit, threads) for chunk in chunks]
        jobs = executor.map_array(train_chunk, *zip(*args, strict=True))
        log(
            f"{launcher}: {len(todo)} runs in {len(jobs)} array job(s) of ≤ {per_job} "
            f"({workers} worker(s) each): {', '.join(str(j.job_id) for j in jobs)}"
        )
        best, failed, left_out = None, [], []
        for job in jobs:
            try:
                trained, left, throughput = job.result()
            except Exception as err:  # noqa: BLE001 (a job's failure is reported, not fatal here)
                failed.append(f"job {job.job_id}: {type(err).__name__}: {str(err)[-300:]}")
                continue
            left_out += left
            log(f"  job {job.job_id}: {trained} run(s) trained, {len(left)} left out")
            if throughput and (best is None or trained > best[0]):
                best = (trained, throughput)
        if best is not None:
            about = {"protocol": module.NAME, "scale": scale, "launcher": launcher}
            about["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            plan.record_throughput(out, best[1], about, log)
        for line in failed:
            log(line)
        _, missing, _ = collect(module, settings, chosen, run_dir)
        keys = [pack.job_key(j) for j in missing]
        if missing and not failed and set(keys) <= set(left_out):  # only the time limit
            raise pack.Incomplete(keys, len(todo) - len(keys), run_dir)
        if missing:
            raise ValueError(
                f"{len(missing)} run(s) are still missing after the array "
                f"({', '.join(pack.job_key(j) for j in missing)}); logs in "
                f"{out / f'{stem}-submitit'}; rerun the same command to submit them again"
            )
    else:
        log(f"{launcher}: every run is saved under {run_dir}; nothing to submit")
    result, _ = run_protocol(module, scale, seeds, out, png=png, log=log, options=options)
    return result
