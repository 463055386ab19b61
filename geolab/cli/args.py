"""The flags every model-building subcommand shares, and the one place they become a GeoConfig."""

import argparse

from geolab.choices import MODE_NAMES
from geolab.config import GeoConfig
from geolab.registry import FLAVORS


class LazyParser(argparse.ArgumentParser):
    """A subcommand's parser whose flags ``fill(parser)`` adds on first use: when it parses,
    or prints its help or usage. A subcommand whose flags need a heavy module (the grader's,
    which loads torch) then costs nothing to ``geolab --help`` and the other subcommands."""

    def __init__(self, *args, fill=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._fill = fill

    def _filled(self) -> None:
        if self._fill is not None:
            fill, self._fill = self._fill, None
            fill(self)

    def parse_known_args(self, args=None, namespace=None):
        self._filled()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._filled()
        return super().format_help()

    def format_usage(self) -> str:
        self._filled()
        return super().format_usage()


def add_model_arguments(parser: argparse.ArgumentParser, layers: int) -> None:
    """--residual, --layers, --d-model, --heads (alias --n-head) and --flavor."""
    parser.add_argument("--residual", default="preln", help="residual rule (see `geolab info`)")
    parser.add_argument(
        "--layers", type=int, default=layers, help=f"transformer layers (default {layers})"
    )
    parser.add_argument("--d-model", type=int, default=128, help="model width (default 128)")
    parser.add_argument(
        "--heads", "--n-head", dest="heads", type=int, default=4, help="attention heads (default 4)"
    )
    parser.add_argument(
        "--flavor",
        choices=FLAVORS,
        default="geolab",
        help="geolab (default, causal) or reference: the E∆ table's models as the public E∆ "
        "code builds them (its ddl and edelta are not causal)",
    )


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    """--threads: torch's CPU threads for the command (``geolab.threads``; default
    $GEOLAB_THREADS, else 1, which measured fastest at the CPU sizes)."""
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads of each process (default: $GEOLAB_THREADS, else 1)",
    )


def geo_config(args: argparse.Namespace, **fields) -> GeoConfig:
    """The GeoConfig of the model flags plus ``fields`` (the task's, or the command's own)."""
    return GeoConfig(
        residual=args.residual,
        n_layer=args.layers,
        d_model=args.d_model,
        n_head=args.heads,
        flavor=args.flavor,
        **fields,
    )


def add_compile_mode_argument(parser: argparse.ArgumentParser) -> None:
    """``--compile-mode`` (with ``--compile``), shared by ``geolab train`` and ``reproduce``."""
    parser.add_argument(
        "--compile-mode",
        default=None,
        help=f"with --compile: {' or '.join(MODE_NAMES)} (CUDA graphs on top of the compiled "
        "layer step, for small models on a GPU; on a CPU the same as default)",
    )


def compile_option(args: argparse.Namespace) -> str | None:
    """``--compile-mode`` checked: its mode (``compiling.compile_mode``: None for default), None
    when not given; a one-line ValueError for another value, or for one given without
    ``--compile``."""
    if args.compile_mode is None:
        return None
    from geolab.compiling import compile_mode  # torch: only when a mode is given

    mode = compile_mode(args.compile_mode)
    if not args.compile:
        raise ValueError(f"--compile-mode {args.compile_mode} is not allowed without --compile")
    return mode
