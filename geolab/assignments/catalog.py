"""The assignments: which stubs each notebook defines and the checks that grade them.

``feedback`` is what a notebook's check cell calls (a live green/red callout); ``check_all`` is
what the grader runs on a submission's namespace.
"""

import importlib
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass

from geolab.assignments.checks import Check, TimeLimit, callout


@dataclass(frozen=True)
class Assignment:
    """An assignment: its id, title, notebook file name and the module holding ``TASKS``
    (stub name -> check function taking the student's object, returning a list of Checks)."""

    id: str
    title: str
    notebook: str
    module: str

    @property
    def tasks(self) -> dict[str, Callable[..., list[Check]]]:
        return importlib.import_module(self.module).TASKS


ASSIGNMENTS = {
    a.id: a
    for a in (
        Assignment("A1", "The Delta operator", "A1_delta.py", "geolab.assignments.a1"),
        Assignment("A2", "The Cayley rotation", "A2_cayley.py", "geolab.assignments.a2"),
        Assignment("A3", "Effective rank and rank collapse", "A3_rank.py", "geolab.assignments.a3"),
        Assignment("A4", "A residual rule of your own", "A4_rule.py", "geolab.assignments.a4"),
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


def _unimplemented(*args, **kwargs):
    raise NotImplementedError


def _task_failed(check, message: str) -> list[Check]:
    """The task's checks (names and points from a run on a stub that is not implemented), all
    failed with ``message``: a missing or hanging stub keeps the gradebook's columns."""
    return [Check(c.name, False, message, c.points) for c in check(_unimplemented)]


def all_failed(assignment: str, message: str) -> list[Check]:
    """Every check of ``assignment`` failed with ``message`` (a submission that did not run)."""
    return [c for check in get(assignment).tasks.values() for c in _task_failed(check, message)]


def check_all(assignment: str, namespace: Mapping, time_limit=None) -> list[Check]:
    """Every check of ``assignment`` against the stubs found in ``namespace``.

    ``time_limit(stub)`` (the grader's alarm) is entered around each task, so one hanging stub
    fails its own checks and the others are still graded.
    """
    results = []
    for stub, check in get(assignment).tasks.items():
        if stub not in namespace:
            results.extend(_task_failed(check, f"the submission defines no `{stub}`"))
            continue
        try:
            with time_limit(stub) if time_limit else nullcontext():
                results.extend(check(namespace[stub]))
        except TimeLimit as err:
            results.extend(_task_failed(check, str(err)))
    return results
