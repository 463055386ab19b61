"""The assignments: which stubs each notebook defines and the checks that grade them.

``feedback`` is what a notebook's check cell calls (a live green/red callout); ``check_all`` is
what the grader runs on a submission's stubs. Hidden checks: ``assignments/instructor/hidden/
<id>.py`` beside the instructor notebooks defines its own ``TASKS``; the release never ships it
and only the grader loads it (:func:`hidden_tasks`).
"""

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from geolab.assignments.checks import Check, TaskStopped, callout

HIDDEN_DIR = Path("assignments/instructor/hidden")


@dataclass(frozen=True)
class Assignment:
    """An assignment: its id, title, notebook file name and the module holding ``TASKS``
    (stub name -> check function taking the student's object and a seed, returning a list of
    Checks). ``needs_model``: the notebook itself builds geolab models, so a graded submission
    sees the whole package; otherwise it sees only the assignment helpers. ``hidden``: the
    dotted names (functions, methods) of the reference the student re-creates, whose code the
    graded submission's copy of the package does not contain (``sandbox.build_view``)."""

    id: str
    title: str
    notebook: str
    module: str
    needs_model: bool = False
    hidden: tuple[str, ...] = ()

    @property
    def tasks(self) -> dict[str, Callable[..., list[Check]]]:
        return importlib.import_module(self.module).TASKS


ASSIGNMENTS = {  # fmt: skip
    a.id: a
    for a in (
        Assignment("A1", "The Delta operator", "A1_delta.py", "geolab.assignments.a1"),
        Assignment("A2", "The Cayley rotation", "A2_cayley.py", "geolab.assignments.a2"),
        Assignment(
            "A3",
            "Effective rank and rank collapse",
            "A3_rank.py",
            "geolab.assignments.a3",
            True,
            (
                "geolab.metrics.effective_rank",
                "geolab.metrics._singular_values",
                "geolab.probe.rank_profile",
            ),
        ),
        Assignment(
            "A4",
            "A residual rule of your own",
            "A4_rule.py",
            "geolab.assignments.a4",
            True,
            tuple(
                f"geolab.rules.delta._MGTBlock.{m}" for m in ("__init__", "reset_init", "forward")
            ),
        ),
    )
}


def get(assignment: str) -> Assignment:
    if assignment not in ASSIGNMENTS:
        raise ValueError(
            f"assignment={assignment!r} is not known; allowed: {', '.join(ASSIGNMENTS)}"
        )
    return ASSIGNMENTS[assignment]


def feedback(assignment: str, stub: str, obj):
    """The live check of one stub, as a marimo callout (green / amber / red)."""
    checks = get(assignment).tasks[stub](obj)
    return callout(f"{assignment} · {stub}", checks)


class _Unimplemented:
    """A stub that is not implemented, as a proxy: ``forbid`` only records its bans instead of
    patching torch in this process, where other threads are computing references."""

    runs_elsewhere = True
    banned: list = []

    def observe(self, *args, **kwargs):
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        raise NotImplementedError


def _task_failed(check, message: str) -> list[Check]:
    """The task's checks (names and points from a run on a stub that is not implemented), all
    failed with ``message``: a missing or hanging stub keeps the gradebook's columns."""
    return [Check(c.name, False, message, c.points) for c in check(_Unimplemented())]


def all_failed(assignment: str, message: str, tasks: Mapping | None = None) -> list[Check]:
    """Every check of ``assignment`` (or of ``tasks``) failed with ``message`` (a submission
    that did not run)."""
    tasks = get(assignment).tasks if tasks is None else tasks
    return [c for check in tasks.values() for c in _task_failed(check, message)]


def check_all(
    assignment: str, namespace: Mapping, time_limit=None, seed: int = 0, tasks=None
) -> list[Check]:
    """Every check of ``assignment`` (or of ``tasks``) against the stubs in ``namespace``, on
    inputs drawn from ``seed``.

    ``time_limit(stub)`` (the grader's per-stub limit) is entered around each task, so a stub
    that hangs or kills its process fails its own checks and the others are still graded.
    """
    results = []
    for stub, check in (get(assignment).tasks if tasks is None else tasks).items():
        if stub not in namespace:
            results.extend(_task_failed(check, f"the submission defines no `{stub}`"))
            continue
        try:
            with time_limit(stub) if time_limit else nullcontext():
                results.extend(check(namespace[stub], seed=seed))
        except TaskStopped as err:
            results.extend(_task_failed(check, str(err)))
    return results


def hidden_tasks(folder: Path, assignment: str) -> dict:
    """The instructor-only ``TASKS`` of ``assignment`` in ``folder/<id>.py``, or {} when there
    is none. They check the same stubs as the public checks."""
    path = Path(folder) / f"{get(assignment).id}.py"
    if not Path(folder).is_dir():
        raise ValueError(f"hidden={str(folder)!r} is not a folder")
    if not path.is_file():
        return {}
    spec = importlib.util.spec_from_file_location(f"geolab_hidden_{assignment}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # the instructor's own file: say where it broke, in one line
        where = f" line {err.lineno}" if isinstance(err, SyntaxError) else ""
        raise ValueError(
            f"hidden checks {str(path)!r} cannot be loaded ({type(err).__name__}{where}: "
            f"{getattr(err, 'msg', None) or err}); fix the file or leave out --hidden"
        ) from None
    tasks = getattr(module, "TASKS", None)
    stubs = get(assignment).tasks
    if not isinstance(tasks, dict) or not set(tasks) <= set(stubs):
        raise ValueError(
            f"hidden checks {str(path)!r}: TASKS must map stub names ({', '.join(stubs)}) "
            "to check functions"
        )
    return tasks
