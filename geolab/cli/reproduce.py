"""``geolab reproduce``: run a protocol (docs/design.md §8) and write its result and figures.

    geolab reproduce --list
    geolab reproduce rank_evolution --scale tiny --out runs/results
    geolab reproduce edelta_benchmarks --scale small --seeds 1 --threads 1
    geolab reproduce --readme --out data/results   # README table + figures from the JSON files
    geolab reproduce ablation --scale paper --dry-run   # runs, sizes, estimated GPU-hours
    torchrun --standalone --nproc_per_node 8 -m geolab reproduce ablation --scale paper

Each run writes OUT/NAME-SCALE.json (config, seeds, per-seed and mean ± std numbers, hypotheses
with verdicts, reductions, provenance) and OUT/NAME-SCALE-FIG.html (+ .png with a Chrome); an
earlier NAME-SCALE.json there is replaced only with ``--force``.
``--dry-run`` trains nothing: it prints every run of the protocol at that scale with its sizes
and an estimate of GPU-hours (``geolab.experiments.plan`` states how). Under ``torchrun`` every
training run is data-parallel over the GPUs (each batch split across them, so the global batch
must divide by their count) and rank 0 writes the files.
"""

import argparse
import os
from pathlib import Path

from geolab.experiments import NAMES, get_protocol, plan, report
from geolab.experiments.export import save_figures
from geolab.experiments.runner import SCALE_NAMES, pick_seeds, run_protocol, scale_settings
from geolab.registry import FLAVORS
from geolab.threads import check_threads


def list_protocols() -> list[tuple[str, str]]:
    """(name, title) of every protocol."""
    return [(name, get_protocol(name).TITLE) for name in NAMES]


def run_reproduce_cli(args: argparse.Namespace) -> int:
    if args.list:
        for name, title in list_protocols():
            print(f"{name:<18} {title}")
        return 0
    if args.readme:
        results = report.load_results(args.out)
        if not results:
            raise ValueError(f"--out {args.out!r} holds no NAME-small.json results")
        figures = {}
        for name, result in results.items():  # all drawn before any file is written
            try:
                figures[name] = report.result_figures(result)
            except (KeyError, TypeError, IndexError, ValueError) as err:
                raise ValueError(
                    f"{str(Path(args.out) / f'{name}-small.json')!r}: its numbers do not fit "
                    f"protocol {name} ({type(err).__name__}: {err}); rerun it"
                ) from None
        for i, (name, figs) in enumerate(figures.items(), 1):
            kind = "HTML" if args.no_png else "HTML and PNG"
            print(f"[{i}/{len(results)}] {name}: {len(figs)} figures ({kind})", flush=True)
            save_figures(figs, Path(args.out), f"{name}-small", not args.no_png, print)
        path = Path(args.out) / "README.md"
        path.write_text(report.readme_text(results))
        print(f"wrote {path} and redrew the figures of {len(results)} protocols")
        return 0
    if args.name is None:
        raise ValueError("name a protocol or pass --list")
    if args.threads is not None:
        import torch

        torch.set_num_threads(check_threads(args.threads, "--threads"))
    if args.data_dir is not None:
        os.environ["GEOLAB_DATA"] = args.data_dir
    options = {}
    if args.flavor != "both":
        if args.name != "edelta_benchmarks":
            raise ValueError(
                f"--flavor {args.flavor} is not allowed for {args.name}; only "
                "edelta_benchmarks has reference builds (default: both flavors)"
            )
        options["flavors"] = [args.flavor]
    if args.jobs is not None:
        if isinstance(args.jobs, bool) or args.jobs < 1:
            raise ValueError(f"--jobs {args.jobs} is not allowed; it must be >= 1")
        options["jobs"] = args.jobs
    module = get_protocol(args.name)
    if options.get("jobs", 1) > 1 and not getattr(module, "PARALLEL", False):
        parallel = [n for n in NAMES if getattr(get_protocol(n), "PARALLEL", False)]
        raise ValueError(
            f"--jobs {args.jobs} is not allowed for {args.name}: it trains one run at a time "
            f"(--jobs > 1 only for {', '.join(parallel)})"
        )
    previous = Path(args.out) / f"{args.name}-{args.scale}.json"
    if not args.dry_run and not args.force and previous.exists():
        raise ValueError(
            f"--out {args.out!r} already holds {previous.name}, an earlier {args.name} result at "
            f"scale {args.scale}; pass --force to replace it (and its figures), or choose "
            "another --out"
        )
    if args.dry_run:
        settings = {**scale_settings(module, args.scale), **options}
        n_seeds = len(pick_seeds(settings, args.seeds))
        print(plan.plan_text(args.name, args.scale, plan.protocol_plan(module, settings, n_seeds)))
        return 0
    result, _ = run_protocol(
        module,
        args.scale,
        args.seeds,
        args.out,
        png=not args.no_png,
        options=options,
    )
    if os.environ.get("RANK", "0") == "0":  # under torchrun, rank 0 speaks
        for h in result["hypotheses"]:
            print(f"{h['id']}: {h['verdict']} — {h['measured']}")
    return 0


def add_reproduce_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``geolab reproduce``."""
    p = subparsers.add_parser("reproduce", help="run a paper experiment protocol at a scale")
    p.add_argument("name", nargs="?", choices=NAMES, help="protocol (see --list)")
    p.add_argument("--list", action="store_true", help="list the protocols and exit")
    p.add_argument(
        "--readme",
        action="store_true",
        help="rewrite OUT/README.md and redraw the figures from OUT's small results",
    )
    p.add_argument("--scale", choices=SCALE_NAMES, default="tiny", help="tiny | small | paper")
    p.add_argument("--seeds", type=int, default=None, help="use the first N seeds of the scale")
    p.add_argument("--out", default="results", help="output directory (default ./results)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--data-dir", default=None, help="local text data (else $GEOLAB_DATA)")
    p.add_argument("--no-png", action="store_true", help="HTML figures only")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an earlier result of the same protocol and scale in --out",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the runs, their sizes and estimated GPU-hours; train nothing",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="worker processes (default 1): one seed each for ablation and language_model, "
        "one (flavor, seed) each for edelta_benchmarks",
    )
    p.add_argument(
        "--flavor",
        choices=("both", *FLAVORS),
        default="both",
        help="edelta_benchmarks: geolab's causal models, the reference's, or both (default)",
    )
    p.set_defaults(func=run_reproduce_cli)
