"""``python -m geolab.assignments release|grade ...``: the same commands as ``geolab release`` and
``geolab grade``, for when the ``geolab`` script is not on PATH."""

import argparse
import sys

from geolab.cli.assignments import add_grade_cli, add_release_cli
from geolab.cli.errors import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m geolab.assignments")
    sub = parser.add_subparsers(dest="command", required=True)
    add_release_cli(sub)
    add_grade_cli(sub)
    args = parser.parse_args(argv)
    return run(f"{parser.prog} {args.command}", args.func, args)


if __name__ == "__main__":
    sys.exit(main())
