"""The packed runner: a protocol's independent training runs over worker processes, every
finished run saved as it lands and skipped when the same command runs again (docs/design.md §8).

A protocol hands its runs to :func:`run_jobs` (``runs.parallel_map``) as ``fn`` and ``jobs``:
``fn(*job, settings, log)`` trains one seeded run and returns its JSON-ready numbers. The runs
are independent (each seeds its own model, data order and dropout), so their numbers do not
depend on where or in which order they train. :func:`run_jobs`

* trains them in ``settings["jobs"]`` worker processes, spawned (torch's thread pools do not
  survive a fork), each with the parent's torch thread count and deterministic kernels. On CUDA
  each worker is a process of its own with its own CUDA context, pinned to one visible GPU
  round-robin (``CUDA_VISIBLE_DEVICES`` set before CUDA starts): N small models share one GPU,
  and N workers spread over M GPUs;
* writes each finished run to ``RUN_DIR/KEY.json`` the moment it lands (KEY: the job's parts
  joined by "-"), atomically, with the settings that shaped it, its device, FLOPs, seconds and
  the git revision, so a killed sweep leaves only whole files;
* on a rerun loads every run whose file is there instead of training it, when the file's
  settings equal today's (:func:`identity`); a file of other settings is an error, never
  silently reused or overwritten (``fresh=True`` retrains and overwrites);
* with a time limit, starts no run that would not finish in time by the longest run so far,
  and raises :class:`Incomplete` naming the runs left out (rerunning finishes them);
* survives its workers: a worker that dies (killed, out of memory) is one line naming its run,
  a fresh worker takes its place, the other runs go on, and :class:`Incomplete` names the lost
  run at the end. SIGINT/SIGTERM to the parent stop every worker and raise :class:`Stopped`
  (the finished runs are saved); a worker dies with its parent (``PR_SET_PDEATHSIG``) even
  when the parent is SIGKILLed. The workers are the runner's own spawned processes, a pipe
  each: a ``ProcessPoolExecutor`` breaks as a whole when one worker dies;
* refuses a damaged run file (not JSON or UTF-8, not a run record, an empty result) by name:
  "delete it or pass --fresh";
* tallies the runs it trained per device: :meth:`Sweep.throughput` gives runs per minute and
  the sustained FLOP/s (``plan.train_flops`` over the pool's wall time) of each device.

How runs are executed (folder, time limit, tally) lives in a :class:`Sweep` the runner enters,
not in the settings, so it is never recorded as part of what a run computed. A sweep in
``collect`` mode trains nothing: ``run_jobs`` raises :class:`Collected` with the jobs still to
train (the SLURM launcher, ``geolab.experiments.launch``, turns them into a job array).
"""

import ctypes
import functools
import json
import multiprocessing
import os
import signal
import threading
import time
from contextlib import contextmanager
from multiprocessing import connection
from pathlib import Path

import torch

from geolab.device import describe_device
from geolab.outputs import replace_atomically
from geolab.revision import git_revision
from geolab.threads import use_threads

# Settings keys that say how a sweep runs or which runs it holds, not what one run computes:
# a run's file is reused when every other key agrees, so a narrower or wider rerun (fewer seeds,
# one flavor, more rules) reuses the runs already there.
EXECUTION_KEYS = ("jobs", "data_dir", "reductions")
SELECTION_KEYS = ("seeds", "tasks", "rules", "flavors", "train_rules", "depths", "variants")
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies
# What the run in progress trained in this process (``tally``): (device, FLOPs) per model.
TALLY: list[tuple[str, float]] = []


class Incomplete(RuntimeError):
    """Raised when a time limit left runs out, or runs lost their worker process (``died``);
    the finished ones are saved in ``run_dir``."""

    def __init__(self, left_out: list[str], done: int, run_dir: Path | None, died: list[str] = ()):
        self.left_out, self.done, self.run_dir = [*died, *left_out], done, run_dir
        where = f", saved under {run_dir}" if run_dir is not None else ""
        parts = [f"{len(died)} lost their worker: {', '.join(died)}"] if died else []
        parts += [f"{len(left_out)} left out: {', '.join(left_out)}"] if left_out else []
        why = "time limit" if left_out and not died else "incomplete"
        super().__init__(
            f"{why}: {done} run(s) finished{where}; {'; '.join(parts)} (rerun the same "
            "command to train them)"
        )


class Stopped(KeyboardInterrupt):
    """SIGINT or SIGTERM (``signum``) stopped a sweep: its workers are stopped, every run that
    finished is saved (``geolab reproduce`` exits 128 + signum)."""

    def __init__(self, signum: int, message: str = ""):
        self.signum = signum
        super().__init__(message)


class Collected(Exception):  # noqa: N818 (a signal carrying the jobs, not an error)
    """Raised by ``run_jobs`` in a collecting sweep: the jobs a protocol would train."""

    def __init__(self, fn, jobs: list[tuple], settings: dict):
        super().__init__(f"{len(jobs)} job(s) of {fn.__name__}")
        self.fn, self.jobs, self.settings = fn, jobs, settings


class Sweep:
    """How runs execute: where they are read from (``run_dir``, None: nowhere) and whether this
    process writes there (``save``: rank 0 under torchrun), the time limit in seconds from now
    (None: none), whether to retrain what is saved (``fresh``) or only collect the jobs
    (``collect``); and the tally of what was trained and found."""

    def __init__(self, run_dir=None, time_limit=None, fresh=False, collect=False, save=True):
        self.run_dir = None if run_dir is None else Path(run_dir)
        self.deadline = None if time_limit is None else time.monotonic() + time_limit
        self.fresh, self.collect, self.save = fresh, collect, save
        self.trained: list[dict] = []  # {"device", "gpu", "flops", "seconds"} per trained run
        self.found = 0  # runs loaded from their files
        self.found_git: set = set()  # the commits those runs were trained at
        self.pool_s = 0.0  # wall time of the pools (or in-process loops) that trained
        self.workers = 1
        self._git = None

    def git(self) -> dict:
        if self._git is None:
            self._git = git_revision()
        return self._git

    def throughput(self) -> dict:
        """device -> {"runs", "devices", "jobs", "wall_s", "runs_per_min", "flops_per_s"} of the
        runs trained in this sweep; rates are per device (a pool over M GPUs divides by M)."""
        out = {}
        for name in dict.fromkeys(r["device"] for r in self.trained):
            rows = [r for r in self.trained if r["device"] == name]
            devices = len({r["gpu"] for r in rows})
            wall = max(self.pool_s, 1e-9)
            out[name] = {
                "runs": len(rows),
                "devices": devices,
                "jobs": self.workers,
                "wall_s": self.pool_s,
                "runs_per_min": len(rows) / wall * 60 / devices,
                "flops_per_s": sum(r["flops"] for r in rows) / wall / devices,
            }
        return out


_CURRENT = [Sweep()]  # the sweep in force; a plain one (nothing saved) outside the runner


@contextmanager
def sweep(**kwargs):
    """Context: a :class:`Sweep` (``Sweep(**kwargs)``) in force for the ``run_jobs`` inside."""
    _CURRENT.append(Sweep(**kwargs))
    try:
        yield _CURRENT[-1]
    finally:
        _CURRENT.pop()


def current() -> Sweep:
    return _CURRENT[-1]


def job_key(job: tuple) -> str:
    """The run's file name stem: the job's parts joined by "-" (e.g. "reference-echo-mhc-42")."""
    return "-".join(str(part) for part in job)


def identity(fn, settings: dict) -> dict:
    """What a saved run must match to be reused: the function and every settings key but
    ``EXECUTION_KEYS`` and ``SELECTION_KEYS``, as JSON (tuples read back as lists)."""
    kept = {k: v for k, v in settings.items() if k not in EXECUTION_KEYS + SELECTION_KEYS}
    return json.loads(json.dumps({"fn": f"{fn.__module__}.{fn.__qualname__}", "settings": kept}))


def load_run(path: Path, ident: dict) -> dict:
    """The saved run at ``path`` (its whole record); ValueError if it is damaged (not JSON, not
    a run record, an empty result) or was trained with settings other than ``ident``'s, naming
    what is wrong or the keys that differ."""
    saved = _read_run(path)
    if saved["identity"] != ident:
        old, new = saved["identity"]["settings"], ident["settings"]
        keys = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        if saved["identity"]["fn"] != ident["fn"]:
            keys.insert(0, "function")
        moved = ""
        if old.get("match_sizes") and not new.get("match_sizes"):  # saved before STEM-matched
            there = path.parent.with_name(path.parent.name.removesuffix("-runs") + "-matched-runs")
            moved = f" (matched-size runs: move {path.parent} to {there} to keep them)"
        raise ValueError(
            f"{path} was trained with other settings ({', '.join(keys)} differ){moved}; rerun "
            "with --fresh to retrain and overwrite the runs of this folder, or choose another --out"
        )
    return saved


def _read_run(path: Path) -> dict:
    """The record at ``path`` when it is whole: a JSON object with an identity (fn, settings),
    the git revision and a non-empty result; ValueError naming the damage otherwise."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        why = err.strerror
    except UnicodeDecodeError:
        why = "not UTF-8 text"
    except ValueError:
        why = "not JSON: empty or cut short"
    else:
        why = _damage(saved)
    if why:
        raise ValueError(
            f"{path} is damaged ({why}); delete it or pass --fresh to retrain the runs of "
            "this folder"
        )
    return saved


def _damage(saved) -> str | None:
    if not isinstance(saved, dict):
        return f"a JSON {type(saved).__name__}, not a run record"
    missing = [k for k in ("identity", "git", "result") if k not in saved]
    if missing:
        return f"it lacks {', '.join(missing)}"
    ident = saved["identity"]
    if not (isinstance(ident, dict) and isinstance(ident.get("settings"), dict) and "fn" in ident):
        return "its identity is not {fn, settings}"
    if not isinstance(saved["git"], dict):
        return "its git is not an object"
    if not isinstance(saved["result"], dict) or not saved["result"]:
        return "its result is empty" if saved["result"] in ({}, []) else "its result is no object"
    return None


def save_run(path: Path, record: dict) -> None:
    """Write ``record`` to ``path`` atomically (a temporary file renamed over it); a failed
    write removes the temporary file and is a one-line ValueError."""
    text = json.dumps(record, indent=1, allow_nan=False) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_atomically(path, lambda tmp: tmp.write_text(text))
    except OSError as err:  # a full disk: the runs saved before stay whole
        raise ValueError(
            f"cannot write {path} ({err.strerror}); the runs saved before it are whole: free "
            "space, then rerun the same command to train the rest"
        ) from None


def pending(fn, jobs: list[tuple], settings: dict, sw: Sweep) -> tuple[dict, list[tuple]]:
    """({key: saved result}, [jobs without a saved run]) under ``sw.run_dir``."""
    found, todo = {}, []
    ident = identity(fn, settings)
    for job in jobs:
        path = None if sw.run_dir is None else sw.run_dir / f"{job_key(job)}.json"
        if path is not None and path.is_file() and not sw.fresh:
            saved = load_run(path, ident)
            found[job_key(job)] = saved["result"]
            sw.found_git.add(saved["git"].get("commit"))
        else:
            todo.append(job)
    return found, todo


def visible_gpus(settings: dict) -> list[str]:
    """The GPUs workers are pinned to, round-robin: $CUDA_VISIBLE_DEVICES's entries (what a
    scheduler hands a job), else every GPU torch sees; none when the scale trains on the CPU or
    there is no CUDA."""
    if settings.get("train", {}).get("device", "cpu") == "cpu" or not torch.cuda.is_available():
        return []
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given:
        return [g.strip() for g in given.split(",") if g.strip()]
    return [str(i) for i in range(torch.cuda.device_count())]


def _init_worker(index: int, gpus: list[str], threads: int) -> None:
    """Pin worker ``index`` to its GPU (round-robin) before CUDA starts; torch's threads and
    deterministic kernels as in the parent."""
    if gpus:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus[index % len(gpus)]
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS
    use_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)


def _die_with(parent: int) -> None:
    """Have the kernel kill this worker when its parent dies, however it dies (SIGKILL too:
    Linux's PR_SET_PDEATHSIG), so no worker trains on for nobody; exit if it already has."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the parent's own cleanup must do
        pass
    if os.getppid() != parent:
        os._exit(1)


def _worker(conn, index: int, gpus: list[str], threads: int, parent: int) -> None:
    """A worker process: train each (fn, job, settings) the parent sends, reply ("done",
    (result, cost)) or ("error", exception); None or a closed pipe ends it."""
    # Ctrl-C reaches the whole process group: the parent decides, and stops its workers itself
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with(parent)
    _init_worker(index, gpus, threads)
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        try:
            reply = ("done", _work(*task))
        except Exception as err:  # noqa: BLE001 (the parent raises it)
            reply = ("error", err)
        try:
            conn.send(reply)
        except Exception as err:  # noqa: BLE001 (an exception that does not pickle)
            conn.send(("error", RuntimeError(f"{type(reply[1]).__name__}: {reply[1]} ({err})")))


class _Worker:
    """One worker process, its pipe and the job it trains (None: idle)."""

    def __init__(self, ctx, index: int, gpus: list[str], threads: int):
        self.conn, child = ctx.Pipe()
        args = (child, index, gpus, threads, os.getpid())
        self.proc = ctx.Process(target=_worker, args=args, daemon=True)
        self.proc.start()
        child.close()
        self.job = None

    def reply(self):
        """The worker's reply, or None when it died without one."""
        try:
            return self.conn.recv() if self.conn.poll() else None
        except (EOFError, OSError):
            return None

    def how_it_died(self) -> str:
        self.proc.join(5)
        code = self.proc.exitcode
        if code is not None and code < 0:
            return f"killed by {signal.Signals(-code).name}"
        return f"exit status {code}"

    def stop(self, wait: float) -> None:
        """End the process: asked to (``wait`` seconds), then terminated, then killed."""
        if self.proc.is_alive() and self.job is None and wait:
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.proc.join(wait)
        for end in (self.proc.terminate, self.proc.kill):
            if self.proc.is_alive():
                end()
                self.proc.join(5)
        self.conn.close()


@contextmanager
def stop_on_signals():
    """Context: SIGINT and SIGTERM raise :class:`Stopped` in the main thread (a sweep run from
    another thread keeps the handlers it has); a second signal during the cleanup is ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        for s in old:
            signal.signal(s, signal.SIG_IGN)
        raise Stopped(signum)

    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def tally(model: torch.nn.Module, flops: float) -> None:
    """Count one trained ``model`` and its training FLOPs towards the run in progress (the
    cost :func:`_train` records with it)."""
    TALLY.append((describe_device(next(model.parameters()).device), flops))


def _train(fn, job: tuple, settings: dict, log) -> tuple[dict, dict]:
    """fn(*job, settings, log) and what it cost: {"device", "gpu", "flops", "seconds"}."""
    TALLY.clear()
    t0 = time.perf_counter()
    result = fn(*job, settings, log)
    cost = {
        "device": TALLY[0][0] if TALLY else "unknown",
        "gpu": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
        "flops": sum(t[1] for t in TALLY),
        "seconds": time.perf_counter() - t0,
    }
    TALLY.clear()
    return result, cost


def _work(fn, job: tuple, settings: dict) -> tuple[dict, dict]:
    return _train(fn, job, settings, functools.partial(print, flush=True))  # stdout: a pipe?


def _pool(fn, queue: list, settings: dict, workers: int, fits, land, log) -> list[str]:
    """Train ``queue``'s jobs (popped as they start) in ``workers`` spawned processes, handing
    each finished one to ``land``, while ``fits()``; returns the keys of the runs whose worker
    died (each said in one line; a fresh worker takes its place and the others go on). A run
    that raises stops the pool and raises here; so does :class:`Stopped`. Every worker is
    ended on the way out."""
    ctx = multiprocessing.get_context("spawn")
    gpus, threads = visible_gpus(settings), torch.get_num_threads()
    pool = [_Worker(ctx, i, gpus, threads) for i in range(workers)]
    started, died, clean = workers, [], False
    try:
        while True:
            for w in pool:
                if w.job is None and queue and fits():
                    w.job = queue.pop(0)
                    w.conn.send((fn, w.job, settings))
            busy = [w for w in pool if w.job is not None]
            if not busy:
                break
            ready = set(connection.wait([w.conn for w in busy] + [w.proc.sentinel for w in busy]))
            for i, w in enumerate(pool):
                if w.job is None or not {w.conn, w.proc.sentinel} & ready:
                    continue
                job, reply = w.job, w.reply()
                if reply is None:  # the process ended without a word: a kill, the OOM killer
                    died.append(job_key(job))
                    log(
                        f"  worker {w.proc.pid} training {job_key(job)} died "
                        f"({w.how_it_died()}); the other runs go on"
                    )
                    w.job = None
                    w.stop(0)
                    if queue:  # a fresh worker takes its place
                        pool[i] = _Worker(ctx, started, gpus, threads)
                        started += 1
                    continue
                w.job = None
                status, payload = reply
                if status == "error":
                    raise payload
                land(job, *payload)
        clean = True
    finally:
        for w in pool:
            w.stop(10 if clean else 0)
    return died


def run_jobs(fn, jobs: list[tuple], settings: dict, log) -> list:
    """[fn(*job, settings, log) for job in jobs], packed into ``settings["jobs"]`` worker
    processes under the sweep in force (module docstring): saved runs are loaded, the others
    trained and saved as they land. Raises :class:`Incomplete` when the time limit left runs
    out, :class:`Collected` in a collecting sweep."""
    sw = current()
    found, todo = pending(fn, jobs, settings, sw)
    if sw.collect:
        raise Collected(fn, todo, settings)
    sw.found += len(found)
    if found:
        log(f"{len(found)} of {len(jobs)} runs found under {sw.run_dir}; {len(todo)} to train")
        other = sorted(str(c) for c in sw.found_git - {sw.git()["commit"]})
        if other:
            log(f"  some were trained at other commits ({', '.join(other)}); --fresh retrains")
    ident = identity(fn, settings)
    workers = max(1, min(settings.get("jobs", 1), len(todo)))
    sw.workers = max(sw.workers, workers)
    longest, t0 = 0.0, time.perf_counter()

    def fits() -> bool:  # no run is started that the longest run so far says cannot finish
        return sw.deadline is None or time.monotonic() + longest <= sw.deadline

    def land(job, result, cost):
        nonlocal longest
        key = job_key(job)
        found[key] = result
        longest = max(longest, cost["seconds"])
        sw.trained.append(cost)
        if sw.run_dir is not None and sw.save:
            record = {"key": key, "identity": ident, "job": list(job), "git": sw.git(), **cost}
            record["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            save_run(sw.run_dir / f"{key}.json", {**record, "result": result})
        log(f"  [{len(found)}/{len(jobs)}] {key} done ({cost['seconds']:.1f} s)")

    queue, died = list(todo), []
    try:
        with stop_on_signals():
            if workers == 1:
                while queue and fits():
                    job = queue.pop(0)
                    land(job, *_train(fn, job, settings, log))
            else:
                died = _pool(fn, queue, settings, workers, fits, land, log)
    except Stopped as stop:
        name = signal.Signals(stop.signum).name
        where = f", saved under {sw.run_dir}" if sw.run_dir is not None and sw.save else ""
        raise Stopped(
            stop.signum,
            f"{name}: stopped the workers; {len(found)} of {len(jobs)} runs finished{where} "
            "(rerun the same command to train the rest)",
        ) from None
    finally:
        sw.pool_s += time.perf_counter() - t0
    left_out = [job_key(job) for job in queue]
    if left_out or died:
        raise Incomplete(left_out, len(found), sw.run_dir, died)
    return [found[job_key(job)] for job in jobs]
