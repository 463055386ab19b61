"""What runs inside each grading process: load one submission, run one assignment's checks.

``geolab grade`` forks a process per submission and calls :func:`run` in it; the result is
``{"status": "ok" | "error", "error": str, "checks": [Check.to_dict(), ...]}``, where "error"
means the submission itself failed to load (its checks are then all failed with that message).
A stub that runs past the per-task limit is stopped by a SIGALRM alarm.
"""

import importlib.util
import signal
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path

import torch

from geolab.assignments.catalog import all_failed, check_all, get
from geolab.assignments.checks import TimeLimit


def load_submission(path: Path, stubs) -> dict:
    """The names a submitted marimo notebook defines.

    Stubs written as marimo top-level functions/classes (``@app.function``) are module
    attributes, found by importing the file without running its cells. If a stub became an
    ordinary cell (it reads another cell's variable), the notebook is run once with ``app.run()``
    and its definitions are added.
    """
    spec = importlib.util.spec_from_file_location("submission", path)
    if spec is None:
        raise ValueError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # marimo's app.run() looks the notebook module up here
    spec.loader.exec_module(module)
    names = dict(vars(module))
    app = names.get("app")
    if hasattr(app, "run") and any(stub not in names for stub in stubs):
        try:
            _, defs = app.run()
            names = {**dict(defs.items()), **names}
        except Exception:  # a crashing cell must not hide the stubs already found
            traceback.print_exc()
    return names


@contextmanager
def alarm(seconds: float):
    """Raise TimeLimit in the main thread if the block runs longer than ``seconds``."""

    def ring(_signum, _frame):
        raise TimeLimit(f"did not finish within {seconds:g} s (an endless loop?)")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run(path: Path, assignment: str, task_timeout: float) -> dict:
    """Load ``path`` and run ``assignment``'s checks on it; the result as a JSON-ready dict.

    One torch thread: the checks are small, graders run several submissions side by side, and
    OpenMP threads competing for a busy CPU make a 2-second check take a minute.
    """
    torch.set_num_threads(1)
    stubs = get(assignment).tasks
    try:
        namespace = load_submission(path, stubs)
    except BaseException as err:  # noqa: B036 — SystemExit from a submission is a load failure too
        message = f"loading the submission raised {type(err).__name__}: {err}"
        checks = all_failed(assignment, message)
        return {"status": "error", "error": message, "checks": [c.to_dict() for c in checks]}
    checks = check_all(assignment, namespace, time_limit=lambda _stub: alarm(task_timeout))
    return {"status": "ok", "error": "", "checks": [c.to_dict() for c in checks]}
