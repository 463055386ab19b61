"""What every protocol shares: scales, seeded training runs, provenance, result files, figures.

A protocol module (``rank_evolution``, ``ablation``, …) defines ``NAME``, ``TITLE``, ``SCALES``
(scale name -> settings dict, with a ``"reductions"`` entry saying how it departs from the paper's
sizes) and ``run(settings, seeds, log) -> Outcome``. :func:`run_protocol` wraps it: it fixes the
torch determinism switches, times the run, stamps provenance and writes

    OUT/NAME-SCALE.json           config, seeds, per-seed and mean ± std numbers, hypotheses with
                                  verdicts, reductions, package versions, git revision, wall time,
                                  device, thread count
    OUT/NAME-SCALE-FIG.html       one plotly figure each (plotly.js from its CDN, to keep the
                                  committed files small)
    OUT/NAME-SCALE-FIG.png        the same, when kaleido finds a Chrome/Chromium (else a one-line
                                  notice is logged and recorded in the JSON)

Verdicts are computed from the measured numbers by rules written next to each hypothesis, never
edited by hand: "reproduced", "not reproduced at this scale" or "inconclusive".
"""

import importlib.metadata
import json
import math
import os
import platform
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced at this scale"
INCONCLUSIVE = "inconclusive"
SCALE_NAMES = ("tiny", "small", "paper")
PACKAGES = ("torch", "numpy", "plotly", "marimo", "datasets", "kaleido")


@dataclass
class Hypothesis:
    """One claim next to what geolab measured: ``claim`` (the paper's words or number),
    ``measured`` (ours, as text), ``verdict`` (one of the three above) and ``rule`` (how the
    verdict follows from the numbers)."""

    id: str
    claim: str
    measured: str
    verdict: str
    rule: str


@dataclass
class Outcome:
    """What a protocol's ``run`` returns: JSON-ready numbers and plotly figures by name."""

    per_seed: dict
    summary: dict
    hypotheses: list[Hypothesis]
    figures: dict = field(default_factory=dict)


def mean_std(values) -> dict:
    """{"mean", "std", "n"} of a list of numbers; std is the sample std (0 for one value)."""
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("mean_std: values is empty; pass at least one number")
    n = len(vals)
    mean = sum(vals) / n
    var = sum((v - mean) ** 2 for v in vals) / (n - 1) if n > 1 else 0.0
    return {"mean": mean, "std": math.sqrt(var), "n": n}


def sign_verdict(stats: dict) -> str:
    """Verdict for a claim "quantity > 0" from its mean ± std over seeds.

    reproduced if mean − std > 0, not reproduced if mean + std < 0, inconclusive otherwise —
    including every single-seed measurement, which has no spread to judge against (geolab's rule).
    """
    if stats["n"] < 2:
        return INCONCLUSIVE
    if stats["mean"] - stats["std"] > 0:
        return REPRODUCED
    if stats["mean"] + stats["std"] < 0:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def fmt(x: float) -> str:
    """A number in 4 significant digits, for the measured-value text."""
    return f"{x:.4g}"


def fmt_ms(stats: dict) -> str:
    return f"{fmt(stats['mean'])} ± {fmt(stats['std'])}" if stats["n"] > 1 else fmt(stats["mean"])


def pick_seeds(settings: dict, seeds: int | None) -> list[int]:
    """The first ``seeds`` seeds of the scale's list (all of them when None)."""
    allowed = settings["seeds"]
    if seeds is None:
        return list(allowed)
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= len(allowed):
        raise ValueError(f"seeds={seeds!r} is not allowed; choose 1..{len(allowed)} of {allowed}")
    return list(allowed[:seeds])


def scale_settings(module, scale: str) -> dict:
    if scale not in module.SCALES:
        raise ValueError(f"scale={scale!r} is not allowed; allowed: {', '.join(module.SCALES)}")
    return module.SCALES[scale]


def data_dir(settings: dict):
    """Where text corpora come from: the settings' data_dir, else $GEOLAB_DATA, else the hub."""
    return settings.get("data_dir") or os.environ.get("GEOLAB_DATA") or None


def train_config(settings: dict, seed: int, **changes):
    """The protocol's ``TrainConfig`` for one seed: settings["train"] plus ``changes``.

    No checkpoints or metric files (the protocol writes one JSON), evaluation only at the end
    unless eval_every is set, float32 (bf16 only where a scale asks for it on CUDA).
    """
    from geolab.train import TrainConfig

    base = {"eval_every": 0, "ckpt_every": 0, "bf16": False, "device": "cpu"}
    return TrainConfig(seed=seed, **{**base, **settings["train"], **changes})


def train_run(cfg, task, settings: dict, seed: int, log=None) -> dict:
    """Train ``GeoTransformer(cfg)`` on ``task`` with the scale's settings and seed.

    Returns JSON-ready numbers: "val" (the trainer's final validation metrics), "n_params",
    "curve" (training loss per step), "seconds".
    """
    from geolab.model import count_params
    from geolab.train import train

    t0 = time.perf_counter()
    res = train(cfg, task, train_config(settings, seed))
    out = {
        "val": {k: v for k, v in res.metrics.items() if k != "step"},
        "n_params": count_params(res.model),
        "curve": [row["loss"] for row in res.history],
        "seconds": time.perf_counter() - t0,
    }
    if log is not None:
        vals = " ".join(f"{k} {fmt(v)}" for k, v in out["val"].items())
        log(f"  seed {seed} {cfg.residual} L={cfg.n_layer} D={cfg.d_model}: {vals}")
    return out


def model_config(settings: dict, task, rule: str, **changes):
    """The protocol's ``GeoConfig`` for residual rule ``rule`` on ``task``.

    The scale's ``n_layer``, ``d_model`` and ``n_head`` (those it sets) and ``grad_checkpoint``
    (off unless set), then ``changes``, plus the task's fields (``task.model_fields()``).
    """
    from geolab.config import GeoConfig

    fields = {k: settings[k] for k in ("n_layer", "d_model", "n_head") if k in settings}
    fields["grad_checkpoint"] = settings.get("grad_checkpoint", False)
    return GeoConfig(residual=rule, **{**fields, **changes}, **task.model_fields())


def train_rule(
    task, settings: dict, seed: int, log, rule: str, budget: int | None = None, **changes
) -> dict:
    """:func:`train_run` of ``model_config(settings, task, rule, **changes)``.

    With ``budget`` the width is first matched to that many parameters
    (``match_params(cfg, budget, vary="d_model")``) and recorded as "d_model".
    """
    from geolab.model import match_params

    cfg = model_config(settings, task, rule, **changes)
    if budget is not None:
        cfg = match_params(cfg, budget, vary="d_model")
    out = train_run(cfg, task, settings, seed, log)
    if budget is not None:
        out["d_model"] = cfg.d_model
    return out


def train_rules(task, settings: dict, seed: int, log, rules=None, **changes) -> dict:
    """rule -> :func:`train_rule` numbers, for ``rules`` (default: the scale's) in order."""
    rules = settings["rules"] if rules is None else rules
    return {rule: train_rule(task, settings, seed, log, rule, **changes) for rule in rules}


def text_probe(task, n: int) -> torch.Tensor:
    """The first ``n`` non-overlapping validation windows of a stream task (or samples), (n, S)."""
    idx = task.eval_index("val")[:n]
    return task.batch("val", idx)[0]


def git_revision() -> dict:
    """{"commit", "dirty"} of the checkout holding geolab, or {"commit": None} outside git."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", "geolab"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": None, "dirty": None}
    if commit.returncode:
        return {"commit": None, "dirty": None}
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


def versions() -> dict:
    import geolab

    out = {"python": platform.python_version(), "geolab": geolab.__version__}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def device_name(settings: dict) -> str:
    """The device the scale trains on ("cpu" for tiny/small, "auto" → cuda/mps/cpu for paper)."""
    from geolab.train import pick_device

    device = pick_device(settings.get("train", {}).get("device", "cpu"))
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"{device.type} ({platform.machine()}, {platform.processor() or 'unknown processor'})"


def chrome_path() -> str | None:
    """A Chrome/Chromium binary kaleido can drive, or None."""
    env = os.environ.get("BROWSER_PATH")
    if env and Path(env).is_file():
        return env
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def save_figures(figures: dict, out: Path, stem: str, png: bool, log) -> dict:
    """Write each figure as HTML (always) and PNG (when possible); returns file names and notes."""
    written, note = [], None
    chrome = chrome_path() if png else None
    if png and chrome is None:
        note = "PNG skipped: no Chrome/Chromium found for kaleido (HTML written)"
    if chrome is not None:
        try:
            import kaleido  # noqa: F401 (only probing that it is installed)
        except ImportError:
            chrome, note = None, "PNG skipped: kaleido is not installed (HTML written)"
    if note:
        log(note)
    for name, fig in figures.items():
        html = out / f"{stem}-{name}.html"
        fig.write_html(html, include_plotlyjs="cdn", full_html=True)
        written.append(html.name)
        if chrome is not None:
            os.environ.setdefault("BROWSER_PATH", chrome)
            path = out / f"{stem}-{name}.png"
            try:
                fig.write_image(path, width=900, height=fig.layout.height or 450, scale=1)
                written.append(path.name)
            except Exception as err:  # noqa: BLE001 (kaleido raises many types; HTML still stands)
                note = f"PNG skipped: kaleido failed ({type(err).__name__}: {err})"[:300]
                log(note)
                chrome = None
    return {"files": written, "png_note": note}


class deterministic:
    """Context: deterministic torch kernels (warn-only where none exists), restored on exit."""

    def __enter__(self):
        self._was = (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
        )
        torch.use_deterministic_algorithms(True, warn_only=True)
        return self

    def __exit__(self, *exc):
        torch.use_deterministic_algorithms(self._was[0], warn_only=self._was[1])
        return False


def run_protocol(
    module,
    scale: str,
    seeds: int | None = None,
    out: str | Path | None = None,
    png: bool = True,
    log=print,
) -> tuple[dict, dict]:
    """Run protocol ``module`` at ``scale`` and write its result and figures under ``out``.

    Returns (result dict, figures by name); the result is also written as
    ``out/NAME-SCALE.json`` with the figures beside it (out=None writes nothing).
    """
    settings = scale_settings(module, scale)
    chosen = pick_seeds(settings, seeds)
    log(f"{module.NAME} at scale {scale!r}, seeds {chosen}")
    git = git_revision()  # the code that runs, before anything can change the checkout
    t0 = time.perf_counter()
    with deterministic():
        outcome = module.run(settings, chosen, log)
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
        "hypotheses": [h.__dict__ for h in outcome.hypotheses],
        "provenance": {
            "versions": versions(),
            "git": git,
            "device": device_name(settings),
            "torch_threads": torch.get_num_threads(),
            "deterministic_algorithms": True,
            "wall_time_s": wall,
            "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        "figures": [],
    }
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        stem = f"{module.NAME}-{scale}"
        saved = save_figures(outcome.figures, out, stem, png, log)
        result["figures"] = saved["files"]
        result["provenance"]["png_note"] = saved["png_note"]
        path = out / f"{stem}.json"
        path.write_text(json.dumps(result, indent=1, allow_nan=False) + "\n")
        log(f"wrote {path} ({wall:.1f} s)")
    return result, outcome.figures


def load_result(path: str | Path) -> dict:
    """A result JSON written by :func:`run_protocol`."""
    return json.loads(Path(path).read_text())
