"""The protocol runner: a scale and seeds in, one result file with provenance and figures out.

A protocol module (``rank_evolution``, ``ablation``, …) defines ``NAME``, ``TITLE``, ``SCALES``
(scale name -> settings dict, with a ``"reductions"`` entry saying how it departs from the paper's
sizes) and ``run(settings, seeds, log) -> Outcome``. :func:`run_protocol` wraps it: it fixes the
torch determinism switches, times the run, stamps provenance and writes

    OUT/NAME-SCALE.json           config, seeds, per-seed and mean ± std numbers (every trained
                                  run with its validation curve and converged flag), the
                                  convergence rule, hypotheses with verdicts, reductions,
                                  package versions, git revision, wall time, device, threads
    OUT/NAME-SCALE-FIG.html       one plotly figure each, loading OUT/plotly.min.js (offline)
    OUT/NAME-SCALE-FIG.png        the same, when kaleido finds a Chrome/Chromium (else a one-line
                                  notice is logged and recorded in the JSON)
    OUT/NAME-SCALE-runs/KEY.json  every finished run of a protocol that packs its runs
                                  (``pack``), written as it lands; a rerun skips them
    OUT/throughput.json           runs per minute and sustained FLOP/s per device (``plan``)

A variant is a result of its own: every file above but throughput.json has the stem
NAME-SCALE-VARIANT (``result_stem``), so it sits beside the published settings' result in one
OUT. Two settings make one: ``match_sizes`` (VARIANT "matched": the E∆ table with every model's
MLP width moved to GPT's parameter count) and ``tasks`` naming a strict subset of the scale's
(VARIANT the tasks joined by "+", e.g. "near_pi": a longer budget for some of the E∆ table's
tasks, which must not replace the whole table); both give "matched-near_pi".

The figures are drawn from the numbers by the protocol's ``make_figures``, here, and only when
plotly is installed (else a one-line notice, recorded in the JSON): training needs no plotly.
Under ``torchrun`` (WORLD_SIZE > 1) one process group serves every training run of the protocol
(each batch split across the ranks, ``geolab.train``); rank 0 logs and writes the files.

Verdicts come from ``verdicts``, training from ``runs`` and ``pack``, convergence from
``convergence``, provenance from ``provenance`` and the figure files from ``export``.
"""

import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist

from geolab.experiments import convergence, get_protocol, judging, pack, plan
from geolab.experiments.export import save_figures
from geolab.experiments.provenance import device_name, versions
from geolab.outputs import check_dir, replace_atomically
from geolab.revision import git_revision

# Reruns: bit-identical on the host that wrote a result (same torch build, deterministic kernels,
# one thread); on another host (other SIMD, e.g. AVX-512) the curves drift at ≈ 1e-6 relative
# within the first steps and the final metrics agree within this relative tolerance
RERUN_RTOL = 4e-6
MATCHED = "matched"  # the variant of a matched-size result (settings["match_sizes"])


def variant(name: str, scale: str, settings: dict) -> str:
    """Which variant of protocol ``name`` at ``scale`` ``settings`` train: "" for the published
    settings, "matched" with ``match_sizes``, the trained tasks joined by "+" when they are a
    strict subset of the scale's (``task_subset``), the trained flavor when it is one of the
    protocol's two (``flavor_subset``), each part joined by "-" (e.g. "near_pi-geolab")."""
    parts = [MATCHED] if settings.get("match_sizes") else []
    tasks = task_subset(name, scale, settings)
    flavors = flavor_subset(name, settings)
    parts += ["+".join(tasks)] if tasks else []
    return "-".join(parts + (["+".join(flavors)] if flavors else []))


def task_subset(name: str, scale: str, settings: dict) -> list[str]:
    """The tasks ``settings`` train, in the scale's order, when they are a strict subset of
    the scale's (``--tasks``); [] when they train all of them or the protocol has no tasks."""
    tasks = settings.get("tasks")
    if not tasks:
        return []
    full = get_protocol(name).SCALES.get(scale, {}).get("tasks") or []
    return [t for t in full if t in tasks] if set(tasks) < set(full) else []


def flavor_subset(name: str, settings: dict) -> list[str]:
    """The flavors ``settings`` train, in the protocol's order, when they are a strict subset of
    its ``FLAVORS`` (``--flavor``); [] when they train all, the protocol has no flavors, or with
    ``match_sizes`` (the matched-size variant is the geolab flavor's by construction)."""
    flavors = settings.get("flavors")
    if not flavors or settings.get("match_sizes"):
        return []
    every = getattr(get_protocol(name), "FLAVORS", ())
    return [f for f in every if f in flavors] if set(flavors) < set(every) else []


def variant_key(name: str, which: str) -> str:
    """How results are keyed: NAME for the published settings, NAME-VARIANT for a variant."""
    return f"{name}-{which}" if which else name


def result_stem(name: str, scale: str, settings: dict) -> str:
    """The stem of a protocol's result files: NAME-SCALE, or NAME-SCALE-VARIANT for a variant
    (``variant``), so each sits beside the published settings' result in one folder."""
    return variant_key(f"{name}-{scale}", variant(name, scale, settings))


def runs_folder(out: str | Path, stem: str, settings: dict) -> Path:
    """OUT/STEM-runs, where a packed sweep keeps its finished runs. ValueError for a
    matched-size sweep whose runs are still in the published settings' folder (written before
    the variant had a stem of its own): moved to STEM-runs they resume, nothing moves them."""
    folder = Path(out) / f"{stem}-runs"
    old = Path(out) / f"{'-'.join(stem.split('-')[:2])}-runs"  # NAME-SCALE: no '-' in either
    if settings.get("match_sizes") and not folder.exists() and _holds_matched_runs(old):
        raise ValueError(
            f"{old} holds matched-size runs, saved before the matched-size variant had files "
            f"of its own; move it to {folder} to resume them (or move it away to train afresh)"
        )
    return folder


def _holds_matched_runs(folder: Path) -> bool:
    """Whether the saved runs in ``folder`` were trained with ``match_sizes`` (read from the
    first one's identity: a folder holds the runs of one set of settings, ``pack.load_run``)."""
    paths = sorted(folder.glob("*.json")) if folder.is_dir() else []
    try:
        saved = json.loads(paths[0].read_text(encoding="utf-8")) if paths else {}
        return saved["identity"]["settings"].get("match_sizes") is True
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
        return False  # no run, or a damaged one: the sweep names it when it reads it


# Seeds past a scale's own (e.g. three more for a narrower interval): 1001, 1002, … — fixed, so
# a rerun with more seeds keeps the runs it already trained and adds the same new ones anywhere.
EXTRA_SEED_BASE = 1000
MAX_SEEDS = 12


def pick_seeds(settings: dict, seeds: int | None) -> list[int]:
    """The first ``seeds`` seeds of the scale's list (all of them when None); past its end, the
    extra seeds ``EXTRA_SEED_BASE`` + 1, + 2, … up to ``MAX_SEEDS`` in all."""
    allowed = list(settings["seeds"])
    if seeds is None:
        return allowed
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= MAX_SEEDS:
        raise ValueError(
            f"seeds={seeds!r} is not allowed; choose 1..{MAX_SEEDS}: the first N of the scale's "
            f"{allowed}, then {EXTRA_SEED_BASE + 1}, {EXTRA_SEED_BASE + 2}, … past them"
        )
    extra = [EXTRA_SEED_BASE + k for k in range(1, seeds - len(allowed) + 1)]
    return (allowed + extra)[:seeds]


def scale_settings(module, scale: str) -> dict:
    if scale not in module.SCALES:
        raise ValueError(f"scale={scale!r} is not allowed; allowed: {', '.join(module.SCALES)}")
    return module.SCALES[scale]


class deterministic:
    """Context: deterministic torch kernels (warn-only where none exists), restored on exit."""

    def __enter__(self):
        self._was = (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
        )
        torch.use_deterministic_algorithms(True, warn_only=True)
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # cuBLAS too, on CUDA
        return self

    def __exit__(self, *exc):
        torch.use_deterministic_algorithms(self._was[0], warn_only=self._was[1])
        return False


class torchrun_group:
    """Context: under torchrun, one process group (nccl on GPUs, gloo on CPU) for the whole
    protocol, destroyed on exit; yields this process's rank (0 without torchrun)."""

    def __init__(self, settings: dict):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.device = settings.get("train", {}).get("device", "cpu")

    def __enter__(self) -> int:
        self.joined = self.world > 1 and not dist.is_initialized()
        if self.joined:
            gpu = self.device != "cpu" and torch.cuda.is_available()
            if gpu:
                torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
            dist.init_process_group("nccl" if gpu else "gloo")
        return int(os.environ.get("RANK", "0"))

    def __exit__(self, *exc):
        if self.joined:
            dist.destroy_process_group()
        return False


def run_protocol(
    module,
    scale: str,
    seeds: int | None = None,
    out: str | Path | None = None,
    png: bool = True,
    log=print,
    options: dict | None = None,
    time_limit: float | None = None,
    fresh: bool = False,
) -> tuple[dict, dict]:
    """Run protocol ``module`` at ``scale`` and write its result and figures under ``out``.

    ``options`` override settings of the scale (e.g. {"flavors": ["reference"]} for the E∆
    table). Returns (result dict, figures by name); the result is also written as
    ``out/STEM.json`` with the figures beside it (out=None writes nothing; STEM: NAME-SCALE, or
    NAME-SCALE-VARIANT for a variant, ``result_stem``). Packed runs are saved in
    ``out/STEM-runs/`` and skipped when found there (``fresh``: retrained);
    ``time_limit`` (seconds) starts no run that cannot finish in time and raises
    ``pack.Incomplete`` naming those left out.
    """
    settings = {**scale_settings(module, scale), **(options or {})}
    chosen = pick_seeds(settings, seeds)
    if out is not None:
        check_dir(out, "out")  # before the run, not after it
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and settings.get("jobs", 1) > 1:
        raise ValueError(
            f"--jobs {settings['jobs']} is not allowed under torchrun ({world} ranks already "
            "share every run); pass --jobs 1, or run without torchrun to pack runs"
        )
    git = git_revision()  # the code that runs, before anything can change the checkout
    stem = result_stem(module.NAME, scale, settings)
    run_dir = None if out is None else runs_folder(out, stem, settings)
    with torchrun_group(settings) as rank:
        if rank:
            log, out = (lambda msg: None), None  # rank 0 speaks and writes
        log(f"{module.NAME} at scale {scale!r}, seeds {chosen}")
        t0 = time.perf_counter()
        with pack.sweep(run_dir=run_dir, time_limit=time_limit, fresh=fresh, save=not rank) as sw:
            try:
                with deterministic():
                    outcome = module.run(settings, chosen, log)
            finally:  # what was measured stays recorded, also when a time limit cut the sweep
                if out is not None and sw.trained:
                    about = {"protocol": module.NAME, "scale": scale, "git": git["commit"]}
                    about["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                    path = plan.record_throughput(out, sw.throughput(), about, log)
                    where = f"recorded in {path}" if path is not None else "not recorded"
                    for device, row in sw.throughput().items():
                        log(
                            f"throughput on {device}: {row['runs_per_min']:.3g} runs/min, "
                            f"{row['flops_per_s']:.3g} FLOP/s sustained per device with "
                            f"{row['jobs']} worker(s) ({where})"
                        )
        wall = time.perf_counter() - t0
    result = {
        "protocol": module.NAME,
        "title": module.TITLE,
        "scale": scale,
        "seeds": chosen,
        "config": {k: v for k, v in settings.items() if k not in ("reductions", "data_dir")},
        "reductions": settings.get("reductions", {}),
        "per_seed": outcome.per_seed,
        "summary": outcome.summary,
        "convergence": convergence.record(outcome.per_seed),
        "hypotheses": [h.__dict__ for h in outcome.hypotheses],
        "provenance": {
            "versions": versions(),
            "git": git,
            "device": device_name(settings),
            "torch_threads": torch.get_num_threads(),
            "world_size": world,
            "deterministic_algorithms": True,
            "wall_time_s": wall,
            "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        "figures": [],
    }
    result["judging"] = judging.record(result)
    if sw.trained or sw.found:
        result["provenance"]["runs"] = {
            "trained": len(sw.trained),
            "found": sw.found,
            "found_at_commits": sorted(c for c in sw.found_git if c) or None,
            "throughput": sw.throughput(),
        }
    figures, note = draw_figures(module, settings, outcome)
    if note:
        log(note)
    if note:
        result["provenance"]["figures_note"] = note
    if out is not None:
        write_result(result, figures, Path(out), stem, png, log)
    return result, figures


def write_result(result: dict, figures: dict, out: Path, stem: str, png: bool, log) -> None:
    """``out/STEM.json`` and the figures beside it, each file written whole or not at all.

    A disk that fills up is a one-line ValueError that says what was written, where the
    trained runs are kept (``out/STEM-runs/``, found again by the same command with --force)
    and what to run. The figures go first, then the result, so a result on disk names only
    figures that are there; when the figures fail, the result is still written without them.
    """
    path = out / f"{stem}.json"
    failed = None
    try:
        out.mkdir(parents=True, exist_ok=True)
        saved = save_figures(figures, out, stem, png, log)
    except OSError as err:
        failed, saved = err, {"files": [], "png_note": None}
    result["figures"] = saved["files"]
    result["provenance"]["png_note"] = saved["png_note"]
    text = json.dumps(result, indent=1, allow_nan=False) + "\n"
    try:
        replace_atomically(path, lambda tmp: tmp.write_text(text))
    except OSError as err:
        why = f"cannot write {str(path)!r} ({err.strerror})"
        raise ValueError(f"{why}; {_rerun(out, stem)}") from None
    if failed is not None:
        raise ValueError(
            f"wrote {str(path)!r}, but not all its figures ({failed.strerror}); "
            + _rerun(out, stem)
        )
    log(f"wrote {path} ({result['provenance']['wall_time_s']:.1f} s)")


def _rerun(out: Path, stem: str) -> str:
    """What a user does after a full disk: where the trained runs are kept, and the command."""
    runs = out / f"{stem}-runs"
    if runs.is_dir():
        return (
            f"the trained runs are kept in {str(runs)!r}: free some space and run the same "
            "command with --force (it trains none of them again)"
        )
    return "free some space and run the same command with --force"


def draw_figures(module, settings: dict, outcome) -> tuple[dict, str | None]:
    """(the protocol's figures of ``outcome``, None), or ({}, a notice) without plotly."""
    try:
        import plotly  # noqa: F401 (only probing that it is installed)
    except ImportError:
        return {}, "figures skipped: plotly is not installed (the numbers are all in the JSON)"
    return module.make_figures(settings, outcome.per_seed, outcome.summary), None


def rejudge(result: dict) -> dict:
    """``result`` judged again by the current rules, from its stored numbers alone (no
    training): each protocol's ``conclude`` recomputes the runs' convergence states, the trivial
    baselines on the regenerated validation splits, the learned flags, the summary and the
    hypotheses; the training numbers, config and provenance are kept as they are, and the
    reductions' text is the scale's current one when the config is the scale's. ``"judging"``
    records the rules now and every verdict they changed (``judging.record``)."""
    from geolab.experiments import get_protocol

    module = get_protocol(result["protocol"])
    before = {"judging": result.get("judging"), "hypotheses": list(result["hypotheses"])}
    summary, hyps = module.conclude(result["config"], result["seeds"], result["per_seed"])
    current = {k: v for k, v in module.SCALES.get(result["scale"], {}).items() if k != "reductions"}
    trained = {k: v for k, v in result["config"].items() if k != "jobs"}
    if json.loads(json.dumps(current)) == trained:  # the same training: its words may be new
        result["reductions"] = module.SCALES[result["scale"]]["reductions"]
    result["summary"] = summary
    result["hypotheses"] = [h.__dict__ for h in hyps]
    result["convergence"] = convergence.record(result["per_seed"])
    result["judging"] = judging.record(result, before)
    return result


def load_result(path: str | Path) -> dict:
    """A result JSON written by :func:`run_protocol`."""
    return json.loads(Path(path).read_text())
