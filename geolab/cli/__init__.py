"""The ``geolab`` command line (also ``python -m geolab``): every argparse parser lives here.

One module per group of subcommands registers them through an ``add_*_cli`` function; this file
wires them together. ``args`` holds the shared model flags and the one GeoConfig builder.
"""

import argparse
import signal
import sys
import threading
from contextlib import contextmanager

from geolab.cli.args import LazyParser
from geolab.cli.assignments import add_grade_cli, add_release_cli
from geolab.cli.bench import add_bench_cli
from geolab.cli.errors import run
from geolab.cli.info import add_info_cli
from geolab.cli.reproduce import add_reproduce_cli
from geolab.cli.tasks import add_tasks_cli
from geolab.cli.train import add_train_cli

DESCRIPTION = (
    "geolab: geometric residual connections (Delta, Cayley, hyper-connections, MGT, E∆) in very "
    "deep transformers: inspect them, train them, reproduce the papers' experiments."
)
EPILOG = """first steps (each about a minute or less on a laptop CPU):
  geolab info                    versions, the device used, the residual rules
  geolab tasks                   the training tasks
  geolab rank --residual postln --layers 100
                                 effective rank per layer of a fresh 100-layer stack
  geolab train --task gyroscope --residual edelta --layers 2 --d-model 64 \\
      --batch-size 16 --steps 200 --n-train 1000 --n-val 100 --out runs/first
                                 train (Ctrl-C saves; the same command + --resume continues)
  geolab reproduce ablation --scale tiny --out results
                                 one of the papers' experiments, in seconds

`geolab COMMAND --help` lists a command's flags; README.md has the notebooks (make tour)."""


def console_safe() -> None:
    """A character the console cannot show (θ, −, ∆ on a Windows cp1252 console) prints as
    "?" instead of stopping the command with UnicodeEncodeError halfway through its output."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):  # a TextIOWrapper (not a replaced stream)
            stream.reconfigure(errors="replace")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="geolab",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=LazyParser)
    add_info_cli(sub)
    add_tasks_cli(sub)
    add_train_cli(sub)
    add_grade_cli(sub)
    add_release_cli(sub)
    add_reproduce_cli(sub)
    add_bench_cli(sub)
    parser.commands = sub.choices  # each subcommand's parser, by name (for main's errors)
    return parser


@contextmanager
def interrupts_noted():
    """Yield a list that is non-empty once Ctrl-C came during the block, even where the
    KeyboardInterrupt it raises was lost: raised inside a finalizer (``__del__``, a weakref
    callback) while torch loads, it is printed as "Exception ignored" and the import goes on."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came  # only the main thread may set a handler; there Ctrl-C is not ours
        return

    def note_and_raise(number, frame):
        came.append(number)
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGINT, note_and_raise)
    try:
        yield came
    except KeyboardInterrupt:
        came.append(signal.SIGINT)  # raised here, or by the handler above: either way, noted
    finally:
        signal.signal(signal.SIGINT, before)


def main(argv: list[str] | None = None) -> int:
    console_safe()
    parser = build_parser()
    with interrupts_noted() as came:  # a subcommand's flags may load torch (seconds)
        args, unknown = parser.parse_known_args(argv)
    if came:
        words = sys.argv[1:] if argv is None else argv
        command = next((w for w in words if w in parser.commands), None)
        prog = f"geolab {command}" if command else "geolab"
        print(f"{prog}: interrupted while starting: nothing was done", file=sys.stderr)
        return 130
    if unknown:  # argparse would print the top-level usage; the subcommand's is the helpful one
        parser.commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    return run(f"geolab {args.command}", args.func, args)
