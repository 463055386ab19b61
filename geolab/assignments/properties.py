"""How an assignment declares its checks: ``Properties``, the named properties of one stub, and
``stubs``, the assignment's ``TASKS`` table (docs/design.md §11)."""

from collections.abc import Callable

from geolab.assignments.checks import Check, run_check


class Properties:
    """The checks of one stub, each named where its property is written::

        checks = Properties()

        @checks.add("delta_operator: symmetric")
        def symmetric():
            ...

        return checks.run()

    ``add(name, points)`` keeps the property (it stays a plain function); ``run`` runs them in
    the order they were added, each through :func:`run_check`.

    ``add(name, points, gate=True)`` marks the property that is the point of the stub — the
    answer at a size no dense method survives, a gradient autograd can give: the stub's other
    properties count only when it passes. A dense or non-differentiable answer also has them
    (a rotation keeps the norm whatever computes it), so without the gate it would earn every
    mark but the measured one, whichever module the dense method came from.
    """

    def __init__(self):
        self._props = []

    def add(self, name: str, points: float = 1.0, gate: bool = False):
        def keep(prop: Callable[[], None]):
            self._props.append((name, prop, points, gate))
            return prop

        return keep

    def run(self) -> list[Check]:
        results = [run_check(name, prop, points) for name, prop, points, _ in self._props]
        is_gate = [gate for *_, gate in self._props]
        shut = next((r for r, g in zip(results, is_gate, strict=True) if g and not r.passed), None)
        if shut is None:
            return results
        why = f"holds, but counts only when “{shut.name}” passes"
        return [r if g or not r.passed else Check(r.name, False, why, r.points)
                for r, g in zip(results, is_gate, strict=True)]  # fmt: skip


def stubs(*checks: Callable) -> dict:
    """An assignment's ``TASKS``: {stub name: check} for check functions named ``check_<stub>``,
    in the order given (the gradebook's column order)."""
    return {check.__name__.removeprefix("check_"): check for check in checks}
