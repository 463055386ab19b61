"""Run directories: config.json, metrics.jsonl and ckpt.pt, written atomically (docs/design.md §7).

A checkpoint holds the model, the optimizer, the step, the data generator and every rank's RNG
states, so a resumed run continues exactly. Every ``torch.load`` here uses ``weights_only=True``.
"""

import json
import os
import warnings
from dataclasses import asdict
from pathlib import Path

import torch
import torch.distributed as dist

from geolab.config import finite_number
from geolab.outputs import check_dir, replace_atomically

CKPT = "ckpt.pt"
METRICS = "metrics.jsonl"
CONFIG = "config.json"
CKPT_COPIES = 3  # a checkpoint holds the weights and AdamW's two moments of each
STATE_KEYS = (
    "step",
    "model",
    "optimizer",
    "data_rng",
    "rng",
    "model_cfg",
    "train_cfg",
    "world_size",
)


def check_out_dir(out: Path | None, resume: bool) -> list[str]:
    """Refuse to mix runs; returns notes for the user (a stale folder reused).

    A fresh run needs a new folder, an empty one, or a stale one: config.json and metrics.jsonl
    without ckpt.pt, left by a run that crashed or diverged before its first checkpoint, which
    has nothing to resume and is replaced. A resume needs ckpt.pt, or restarts a stale folder
    from step 0. A folder whose log shows a checkpoint was saved (``checkpoint_steps``) but
    whose ckpt.pt is gone, or a ckpt.pt that links to nothing, is refused: restarting would
    replace a run that cannot be resumed.
    """
    if out is None:
        if resume:
            raise ValueError("TrainConfig.resume=True needs out_dir (where ckpt.pt lives)")
        return []
    check_dir(out, "TrainConfig.out_dir")
    ckpt = out / CKPT
    if ckpt.is_symlink() and not ckpt.exists():
        raise ValueError(
            f"{str(ckpt)!r} is a symbolic link to {os.readlink(ckpt)!r}, which does not exist; "
            "restore the checkpoint it points to, or choose another directory"
        )
    if ckpt.exists():
        if not resume:
            raise ValueError(
                f"TrainConfig.out_dir={str(out)!r} already holds a run; pass "
                "resume=True (--resume) to continue it or choose another directory"
            )
        return []
    stale = [name for name in (CONFIG, METRICS) if (out / name).exists()]
    for name in stale:
        if not _written_by_geolab(out / name):
            raise ValueError(
                f"TrainConfig.out_dir={str(out)!r} is not allowed: its {name} is not a geolab "
                "run's and a run would overwrite it; choose another directory"
            )
    saved_at = checkpoint_steps(out)
    if saved_at:
        raise ValueError(
            f"TrainConfig.out_dir={str(out)!r} is not allowed: its {CKPT} is gone, but its "
            f"{METRICS} shows one was saved at step {saved_at[-1]}; a new run would replace "
            f"that run's log. Restore {CKPT}, or choose another directory"
        )
    if not stale:
        if resume:
            raise ValueError(f"TrainConfig.resume=True but {str(out / CKPT)!r} does not exist")
        return []
    start = "restarting from step 0" if resume else "starting afresh"
    return [
        f"{str(out)!r} holds a run that stopped before its first checkpoint (no {CKPT}): "
        f"{start}; its {' and '.join(stale)} are replaced"
    ]


def checkpoint_steps(out: Path) -> list[int]:
    """The steps at which the run in ``out`` saved its checkpoint, as its log and config.json
    tell: rows marked ``"checkpoint": true``, and (logs written before the mark) the last step
    of the run and every ``ckpt_every``-th step."""
    try:
        rows = [json.loads(line) for line in (out / METRICS).read_text().splitlines() if line]
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    train = (read_run_config(out / CONFIG) or {}).get("train", {})
    steps, every = train.get("steps"), train.get("ckpt_every")
    saved = []
    for row in rows:
        step = row.get("step") if isinstance(row, dict) else None
        if not isinstance(step, int) or isinstance(step, bool):
            continue
        periodic = isinstance(every, int) and every > 0 and step % every == 0
        if row.get("checkpoint") or step == steps or periodic:
            saved.append(step)
    return saved


def _written_by_geolab(path: Path) -> bool:
    """Whether config.json or metrics.jsonl is what a geolab run writes there (the run's
    record; a step record per line), not a file of the user's that happens to share the name."""
    if path.name == CONFIG:
        return read_run_config(path) is not None
    try:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return all(isinstance(row, dict) and "step" in row for row in rows)


def read_run_config(path: Path) -> dict | None:
    """The run record config.json holds (task, model, train, ...), or None where it is missing,
    unreadable or not a geolab run's."""
    try:
        meta = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    keys = ("task", "model", "train")
    ours = isinstance(meta, dict) and all(isinstance(meta.get(k), dict) for k in keys)
    return meta if ours else None


def remove_stale_tmp(out: Path) -> None:
    """Delete the half-written ``.NAME.tmpPID`` files of processes that no longer run."""
    for name in (CKPT, METRICS, CONFIG):
        for tmp in out.glob(f".{name}.tmp*"):
            pid = tmp.name.rsplit(".tmp", 1)[1]
            if pid.isdigit() and not _alive(int(pid)):
                tmp.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def atomic_write(path: Path, write) -> None:
    """``write(tmp)`` then rename tmp over ``path``: a reader sees the old file or the new one.
    When the write fails (a full disk, a folder made read-only meanwhile) the temporary file is
    removed, ``path`` is left as it was and a one-line ValueError says so."""
    try:
        replace_atomically(path, write)
    except (OSError, RuntimeError) as err:  # torch.save reports a failed write as RuntimeError
        raise WriteFailed(path, err) from None


class WriteFailed(ValueError):
    """A run file could not be written; what was on disk before is intact."""

    def __init__(self, path: Path, err: Exception):
        # torch.save into a Python file raises its own RuntimeError ("unexpected pos ...")
        # during the file's OSError, which it keeps as the context: that one says why
        cause = err if isinstance(err, OSError) else err.__context__
        if isinstance(cause, OSError) and cause.strerror:
            why = cause.strerror
        else:
            why = str(err).strip().splitlines()[-1][-200:] if str(err).strip() else repr(err)
        self.path = path
        super().__init__(f"cannot write {str(path)!r} ({why}); the file as it was is kept")


def save_state(state: dict, path: Path) -> None:
    """``torch.save`` through a Python file, so a failed write keeps its OSError (WriteFailed)."""
    with open(path, "wb") as f:
        torch.save(state, f)


def append_line(log, text: str, path: Path) -> None:
    """Append ``text`` to the open log and flush it; a failed write is cut back off, so the log
    keeps only whole lines, and raises WriteFailed."""
    end = log.tell()
    try:
        log.write(text)
        log.flush()
    except OSError as err:
        try:
            log.truncate(end)
        except OSError:
            pass
        raise WriteFailed(path, err) from None


def check_space(out: Path, n_params: int) -> None:
    """ValueError when ``out``'s file system has no room for one checkpoint of a model of
    ``n_params`` float32 weights (weights + AdamW's two moments), checked before the first step."""
    need = CKPT_COPIES * 4 * n_params
    try:
        st = os.statvfs(out if out.exists() else out.parent)
    except OSError:
        return
    free = st.f_bavail * st.f_frsize
    if free < need:
        raise ValueError(
            f"TrainConfig.out_dir={str(out)!r} is not allowed: its disk has {free:,} bytes "
            f"free, but one checkpoint needs at least {need:,}; free space or choose another "
            "directory"
        )


def rng_state(device: torch.device) -> dict:
    state = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: dict, device: torch.device) -> None:
    torch.set_rng_state(state["cpu"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def load_checkpoint(path, map_location="cpu") -> dict:
    """A geolab checkpoint as a dict (step, model, optimizer, data_rng, rng, model_cfg, ...).

    ValueError, and nothing loaded, for a file that is damaged (empty, truncated), not a geolab
    checkpoint (other keys, another format) or holds anything but tensors and plain data.
    """
    try:
        with warnings.catch_warnings():  # torch's notes on pickle protocols are no help here
            warnings.simplefilter("ignore")
            state = torch.load(path, map_location=map_location, weights_only=True)
    except (PermissionError, IsADirectoryError) as err:
        raise ValueError(f"checkpoint {str(path)!r} cannot be read ({err.strerror})") from None
    except Exception as err:  # torch reports a bad file as any of half a dozen error types,
        # its UnpicklingError with advice to turn weights_only off: never pass that on
        raise ValueError(
            f"checkpoint {str(path)!r} is damaged or not a geolab checkpoint "
            f"({type(err).__name__} while reading it); it was not loaded"
        ) from None
    missing = [key for key in STATE_KEYS if not isinstance(state, dict) or key not in state]
    if missing:
        raise ValueError(
            f"checkpoint {str(path)!r} is not a geolab checkpoint (it lacks {missing}); "
            "it was not loaded"
        )
    return state


def check_state(state: dict, model: torch.nn.Module, opt, world: int, path) -> None:
    """ValueError unless checkpoint ``state`` loads into ``model`` and ``opt`` (built on the meta
    device: shapes only, no memory) and holds a data generator state and one RNG state per rank
    of the shapes this torch writes: so a resume never fails half-way through loading."""

    def bad(what: str, err: Exception | None = None) -> ValueError:
        why = f": {str(err).strip().splitlines()[-1]}" if err is not None else ""
        return ValueError(
            f"checkpoint {str(path)!r} does not fit this run ({what}{why}); it was not loaded"
        )

    try:
        with warnings.catch_warnings():  # "copying into a meta parameter is a no-op": wanted
            warnings.simplefilter("ignore")
            model.load_state_dict(state["model"])
    except (RuntimeError, TypeError, AttributeError, KeyError) as err:
        raise bad("its model weights differ in names or shapes", err) from None
    try:
        opt.load_state_dict(state["optimizer"])
    except (RuntimeError, ValueError, TypeError, AttributeError, KeyError) as err:
        raise bad("its optimizer state does not match the model", err) from None
    rng = state["rng"]
    if not isinstance(rng, list) or len(rng) != world:
        raise bad(f"it holds RNG states for {len(rng) if isinstance(rng, list) else 0} ranks")
    for what, blob in [("data generator", state["data_rng"])] + [
        ("RNG", r.get("cpu") if isinstance(r, dict) else None) for r in rng
    ]:
        try:
            torch.Generator().set_state(blob)
        except (RuntimeError, TypeError) as err:
            raise bad(f"its {what} state is damaged", err) from None
    step = state["step"]
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise bad(f"its step={step!r} is not a count")


def read_history(path: Path, upto: int) -> list[dict]:
    """The records of ``metrics.jsonl`` (``path``) up to step ``upto``; a one-line ValueError
    naming the file and the line when one is not a step's JSON record (a damaged log)."""
    if not path.exists():
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{_damaged(path)}: it is not UTF-8 text (offset {err.start})") from None
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{_damaged(path)}: line {number} is not JSON ({err.msg})") from None
        if not (isinstance(row, dict) and isinstance(row.get("step"), int)):
            raise ValueError(f"{_damaged(path)}: line {number} is not a step's record")
        rows.append(row)
    return [row for row in rows if row["step"] <= upto]


def _damaged(path: Path) -> str:
    return (
        f"the run's log {str(path)!r} is damaged (its checkpoint is whole; move the log away "
        "to resume without the earlier steps' records)"
    )


def check_finite(state: dict, path) -> None:
    """ValueError naming the first model weight or optimizer moment of checkpoint ``state`` that
    holds NaN or ±Inf: such a checkpoint cannot continue a run, so it is never "good"."""
    tensors = [(f"weight {k}", v) for k, v in state["model"].items()]
    for i, moments in state["optimizer"].get("state", {}).items():
        tensors += [(f"optimizer {name} of parameter {i}", v) for name, v in moments.items()]
    for what, value in tensors:
        if torch.is_tensor(value) and value.is_floating_point() and not value.isfinite().all():
            raise ValueError(
                f"checkpoint {str(path)!r} holds NaN or Inf in its {what}: the run had diverged "
                "when it was saved and cannot continue from it; start a new run"
            )


OPTIMIZER_SETTINGS = {  # AdamW's settings a checkpoint restores: the test, and what is allowed
    "lr": (lambda v: finite_number(v) and v >= 0, "a finite number >= 0"),
    "eps": (lambda v: finite_number(v) and v > 0, "a finite number > 0"),
    "weight_decay": (lambda v: finite_number(v) and v >= 0, "a finite number >= 0"),
    "betas": (
        lambda v: (
            isinstance(v, list | tuple)
            and len(v) == 2
            and all(finite_number(b) and 0 <= b < 1 for b in v)
        ),
        "two numbers in [0, 1)",
    ),
}


def check_optimizer_settings(state: dict, path) -> None:
    """ValueError naming the first AdamW setting of checkpoint ``state`` (lr, betas, eps,
    weight_decay of a parameter group) that is not allowed, NaN or ±Inf among them: loading it
    would restore that setting and the run would diverge, with no fault of the learning rate."""
    for i, group in enumerate(state["optimizer"].get("param_groups", [])):
        for name, (ok, allowed) in OPTIMIZER_SETTINGS.items():
            value = group.get(name)
            value = value.tolist() if torch.is_tensor(value) else value
            if name in group and not ok(value):
                raise ValueError(
                    f"checkpoint {str(path)!r} is not allowed: its optimizer {name}={value!r} "
                    f"(parameter group {i}) must be {allowed}; the file is damaged and the run "
                    "cannot continue from it (restore a good ckpt.pt, or start a new run in "
                    "another --out)"
                )


def save_checkpoint(
    path, raw, opt, data_gen, step, model_cfg, tc, device, world, lead, task=None, code=None
) -> None:
    """Save the state ``load_checkpoint`` reads (atomically, rank 0 only); ``task`` is the
    run's task record (``loop.task_record``) and ``code`` the code that wrote it
    (``revision.code_record``), kept so a resume can check them without config.json."""
    rng = [rng_state(device)]
    if world > 1:
        rng = [None] * world
        dist.all_gather_object(rng, {k: v.cpu() for k, v in rng_state(device).items()})
    if not lead:
        return
    state = {
        "step": step,
        "model": raw.state_dict(),
        "optimizer": opt.state_dict(),
        "data_rng": data_gen.get_state(),
        "rng": rng,
        "model_cfg": model_cfg.to_dict(),
        "train_cfg": asdict(tc),
        "world_size": world,
        "task": task,
        "code": code,
    }
    atomic_write(path, lambda p: save_state(state, p))
