"""``geolab tasks``: the training tasks, one line each."""

import argparse

from geolab.choices import TASK_LINES


def _list_tasks(args) -> int:
    width = max(map(len, TASK_LINES))
    for name in TASK_LINES:  # geolab.tasks.TASKS's names, without loading torch
        print(f"{name:<{width}}  {TASK_LINES[name]}")
    return 0


def add_tasks_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``geolab tasks``: one line per task."""
    parser = subparsers.add_parser("tasks", help="list the training tasks, one line each")
    parser.set_defaults(func=_list_tasks)
