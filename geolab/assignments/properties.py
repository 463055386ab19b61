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
    """

    def __init__(self):
        self._props = []

    def add(self, name: str, points: float = 1.0):
        def keep(prop: Callable[[], None]):
            self._props.append((name, prop, points))
            return prop

        return keep

    def run(self) -> list[Check]:
        return [run_check(name, prop, points) for name, prop, points in self._props]


def stubs(*checks: Callable) -> dict:
    """An assignment's ``TASKS``: {stub name: check} for check functions named ``check_<stub>``,
    in the order given (the gradebook's column order)."""
    return {check.__name__.removeprefix("check_"): check for check in checks}
