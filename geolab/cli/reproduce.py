"""``geolab reproduce``: run a protocol (docs/design.md §8) and write its result and figures.

    geolab reproduce --list
    geolab reproduce rank_evolution --scale tiny --out runs/results
    geolab reproduce edelta_benchmarks --scale small --seeds 1 --threads 1
    geolab reproduce --readme --out data/results   # README table + figures from the JSON files
    geolab reproduce --readme --rejudge --out data/results   # judge the JSON files again first
    geolab reproduce ablation --scale paper --dry-run   # runs, sizes, estimated GPU-hours
    geolab reproduce edelta_benchmarks --scale paper --jobs 16      # 16 runs at once per GPU
    torchrun --standalone --nproc_per_node 8 -m geolab reproduce ablation --scale paper
    geolab reproduce edelta_benchmarks --scale paper --jobs 8 --launcher slurm --partition gpu

Each run writes OUT/NAME-SCALE.json (config, seeds, per-seed and mean ± std numbers, hypotheses
with verdicts, reductions, provenance) and OUT/NAME-SCALE-FIG.html (+ .png with a Chrome); a
variant's files are NAME-SCALE-VARIANT… (``runner.variant``: matched sizes, some of the E∆
table's tasks, one of its two flavors), beside the published settings' ones.
``--rejudge`` (with ``--readme``) judges every result file again by the current rules from its
stored numbers (``geolab.experiments.runner.rejudge``: no training) and writes it back.
``--dry-run`` trains nothing: it prints every run of the protocol at that scale with its sizes
and an estimate of GPU-hours (``geolab.experiments.plan`` states how; a throughput measured in
OUT is used when there is one); it needs no data or network. ``--jobs N`` packs the runs of
every protocol into N worker
processes (round-robin over the visible GPUs); every finished run is saved under
OUT/NAME-SCALE[-VARIANT]-runs/ and skipped when the same command runs again
(``--fresh`` retrains).
``--steps N`` trains every run N steps instead of the scale's, ``--tasks T …`` only those of
the E∆ table's tasks (a longer budget where the results README says one decides a claim: a
variant of its own, OUT/edelta_benchmarks-SCALE-T.json, tasks joined by "+"; ``--flavor F``
alone is one too, OUT/edelta_benchmarks-SCALE[-T]-F.json); ``--match-sizes --flavor geolab``
trains the E∆ table's matched-size variant (OUT/edelta_benchmarks-SCALE-matched.json);
``--readme`` shows a variant's verdicts beside the published settings' ones.
``--time-limit MIN`` starts no run that cannot finish in time and exits with status 3 naming the
runs left out. Under ``torchrun`` every training run is data-parallel over the GPUs (each batch
split across them, so the global batch must divide by their count) and rank 0 writes the files.
``--launcher slurm|local`` submits the runs as a submitit job array
(``geolab.experiments.launch``), waits and merges.
"""

import argparse
import ast
import importlib.util
import json
import os
import shutil
import sys
from contextlib import nullcontext
from pathlib import Path

from geolab.choices import SCALE_NAMES
from geolab.cli.args import add_compile_mode_argument, add_threads_argument, compile_option
from geolab.experiments import NAMES, get_protocol
from geolab.lock import hold
from geolab.registry import FLAVORS
from geolab.terms import TERMS
from geolab.threads import check_jobs, thread_count, use_threads

INCOMPLETE = 3  # exit status when --time-limit left runs out (the finished ones are saved)
MAX_MINUTES = 1e6  # --time-limit's largest value (≈ 2 years): timers and SLURM take finite ones


def budget_options(args: argparse.Namespace, module) -> dict:
    """The settings ``--steps``, ``--tasks`` and ``--match-sizes`` override (a longer budget, a
    subset of the E∆ table's tasks, its matched-size variant), checked against the scale; {}
    when none is given."""
    from geolab.experiments.runner import scale_settings
    from geolab.train.config import STEPS_MAX

    out = {}
    settings = scale_settings(module, args.scale)
    if args.steps is not None:
        if isinstance(args.steps, bool) or not 1 <= args.steps <= STEPS_MAX:
            raise ValueError(
                f"--steps {args.steps} is not allowed; it must be >= 1 and <= {STEPS_MAX:,}"
            )
        out["train"] = {**settings["train"], "steps": args.steps}
    if args.tasks is not None:
        allowed = settings.get("tasks")
        if allowed is None:
            raise ValueError(f"--tasks is not allowed for {args.name}: it trains on one task")
        wrong = [t for t in args.tasks if t not in allowed]
        if wrong or not args.tasks:
            raise ValueError(
                f"--tasks {' '.join(args.tasks)} is not allowed; choose from {', '.join(allowed)}"
            )
        out["tasks"] = list(args.tasks)
    if args.match_sizes:
        if args.name != "edelta_benchmarks":
            raise ValueError(
                f"--match-sizes is not allowed for {args.name}: only edelta_benchmarks has a "
                "matched-size variant"
            )
        if args.flavor != "geolab":
            raise ValueError(
                f"--match-sizes is not allowed with --flavor {args.flavor}: the reference builds "
                "keep the public code's MLP width; pass --flavor geolab"
            )
        out["match_sizes"] = True
    return out


def list_protocols() -> list[tuple[str, str]]:
    """(name, title) of every protocol, each title read from its module's source (the literal
    ``TITLE = "…"``) without running it: importing a protocol loads the trainer and torch,
    and ``--list`` needs neither."""
    return [(name, _title(name)) for name in NAMES]


def _title(name: str) -> str:
    source = Path(importlib.util.find_spec(f"geolab.experiments.{name}").origin).read_text()
    for node in ast.parse(source).body:
        targets = [getattr(t, "id", None) for t in getattr(node, "targets", ())]
        if targets == ["TITLE"]:
            return ast.literal_eval(node.value)
    raise LookupError(f"geolab.experiments.{name} has no TITLE = '...' line")


def run_reproduce_cli(args: argparse.Namespace) -> int:
    if args.list:
        for name, title in list_protocols():
            print(f"{name:<18} {title}")
        return 0
    if args.readme:
        from geolab.experiments import report

        results = report.load_results(args.out)
        if not results:
            raise ValueError(
                f"--readme is not allowed with --out {args.out!r}: it holds no NAME-small.json "
                "results to write the README from (run a protocol at --scale small first)"
            )
        if args.data_dir is not None:
            os.environ["GEOLAB_DATA"] = args.data_dir
        with hold(args.out, "--out", note):
            return write_readme(args, results)
    return reproduce(args)


def note(text: str) -> None:
    print(f"geolab reproduce: note: {text}", file=sys.stderr)


def write_readme(args: argparse.Namespace, results: dict) -> int:
    """``--readme``: judge again (``--rejudge``), redraw every figure, write OUT/README.md."""
    from geolab.experiments import report
    from geolab.experiments.export import save_figures
    from geolab.experiments.runner import rejudge, result_stem

    stems = {key: result_stem(r["protocol"], "small", r["config"]) for key, r in results.items()}
    if args.rejudge:  # every file judged again before any figure is drawn from it
        for key, result in results.items():
            path = Path(args.out) / f"{stems[key]}.json"
            path.write_text(json.dumps(rejudge(result), indent=1, allow_nan=False) + "\n")
            done = result["judging"]
            newer = {True: "rules newer than the runs", False: "the runs' own rules"}
            rules = newer.get(done["newer_than_runs"], "rules at the runs unknown")
            print(f"rejudged {path} ({rules})")
            since = "the runs" if done["compared_with"] == "at_runs" else "the first record"
            for c in done["changed"]:
                print(f"  {c['id']}: {c['before']} -> {c['after']} (changed since {since})")
    figures = {}
    for key, result in results.items():  # all drawn before any file is written
        try:
            figures[key] = report.result_figures(result)
        except (KeyError, TypeError, IndexError, ValueError) as err:
            raise ValueError(
                f"{str(Path(args.out) / f'{stems[key]}.json')!r}: its numbers do not fit "
                f"protocol {result['protocol']} ({type(err).__name__}: {err}); rerun it"
            ) from None
    for i, (key, figs) in enumerate(figures.items(), 1):
        kind = "HTML" if args.no_png else "HTML and PNG"
        print(f"[{i}/{len(results)}] {stems[key]}: {len(figs)} figures ({kind})", flush=True)
        save_figures(figs, Path(args.out), stems[key], not args.no_png, print)
    path = Path(args.out) / "README.md"
    path.write_text(report.readme_text(results, args.out))
    print(f"wrote {path} and redrew the figures of {len(results)} results")
    return 0


def reproduce(args: argparse.Namespace) -> int:
    """A protocol's run (or its plan, ``--dry-run``)."""
    from geolab.experiments.provenance import device_name
    from geolab.experiments.runner import scale_settings

    if args.rejudge:
        raise ValueError("--rejudge is only allowed with --readme")
    if args.name is None:
        raise ValueError("name a protocol or pass --list")
    use_threads(args.threads)  # the protocol's runs keep it (geolab.threads)
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
        options["jobs"] = check_jobs(args.jobs, "--jobs")
    module = get_protocol(args.name)
    options |= budget_options(args, module)
    check_launch_flags(args)
    time_limit = None if args.time_limit is None else args.time_limit * 60
    mode = compile_option(args)
    if args.compile:
        settings = scale_settings(module, args.scale)
        train = {**options.get("train", settings["train"]), "compile": True}
        options["train"] = {**train, "compile_mode": mode} if mode else train
    settings = {**scale_settings(module, args.scale), **options}
    device = device_name(settings)
    if args.dry_run:
        print(estimate(args, module, settings, device))
        return 0
    if args.scale == "paper" and device.startswith("cpu") and args.launcher != "slurm":
        # paper scale is sized for GPUs: on a CPU it runs for days with nothing to show for
        # minutes, so the plan is shown first and the user says yes to it
        if int(os.environ.get("RANK", "0")) == 0:
            print(estimate(args, module, settings, device))
        if not args.yes:
            raise ValueError(
                f"--scale paper is not started on {device} without --yes: the runs above are "
                "sized for GPUs and take far longer on a CPU; pass --yes to start anyway, "
                "or run it on a GPU machine"
            )
    # One writer per --out (rank 0 writes under torchrun), taken before --out is read: two
    # sweeps into one folder would each train every run and overwrite each other's files.
    lead = os.environ.get("RANK", "0") == "0"
    with hold(args.out, "--out", note) if lead else nullcontext():
        return run_locked(args, module, options, time_limit)


def run_locked(args: argparse.Namespace, module, options: dict, time_limit) -> int:
    """Train the protocol into --out (held by this process) and print its verdicts."""
    from geolab.experiments import pack
    from geolab.experiments.runner import result_stem, run_protocol, variant

    previous = Path(args.out) / f"{result_stem(args.name, args.scale, options)}.json"
    if not args.force and previous.exists():
        which = variant(args.name, args.scale, options)
        kind = f" (variant {which})" if which else ""
        raise ValueError(
            f"--out {args.out!r} already holds {previous.name}, an earlier {args.name} result"
            f"{kind} at scale {args.scale}; pass --force to replace it (and its figures), or "
            "choose another --out"
        )
    try:
        if args.launcher is not None:
            from geolab.experiments.launch import launch

            result = launch(
                module,
                args.scale,
                args.seeds,
                args.out,
                args.launcher,
                partition=args.partition,
                gpus_per_job=args.gpus_per_job or 1,
                array_parallelism=args.array_parallelism,
                runs_per_job=args.runs_per_job,
                time_limit=time_limit or 24 * 3600,
                threads=thread_count() if args.threads is None else args.threads,
                png=not args.no_png,
                options=options,
            )
        else:
            result, _ = run_protocol(
                module,
                args.scale,
                args.seeds,
                args.out,
                png=not args.no_png,
                options=options,
                time_limit=time_limit,
                fresh=args.fresh,
            )
    except pack.Incomplete as err:
        print(f"geolab reproduce: {err}", file=sys.stderr)
        return INCOMPLETE
    if os.environ.get("RANK", "0") == "0":  # under torchrun, rank 0 speaks
        for h in result["hypotheses"]:
            print(f"{h['id']}: {h['verdict']} — {h['measured']}")
        for line in words_used(result):
            print(line)
    return 0


def words_used(result: dict) -> list[str]:
    """A line per verdict word the printout used ("converged", "learned"), saying what it means
    (``geolab.terms``): a run can converge, its loss flat, without having learned anything."""
    text = json.dumps(result["hypotheses"], ensure_ascii=False) + json.dumps(
        result.get("per_seed"), default=str
    )
    return [f"{w}: {TERMS[w]}" for w in ("converged", "learned") if w in text]


def estimate(args: argparse.Namespace, module, settings: dict, device: str) -> str:
    """The dry run's printout: every run with its sizes and the GPU-hours (a throughput
    measured in --out when there is one, else the stated assumption)."""
    from geolab.experiments import plan
    from geolab.experiments.runner import pick_seeds

    n_seeds = len(pick_seeds(settings, args.seeds))
    measured = plan.measured(args.out, device, note)
    flops, source = measured or (plan.SUSTAINED_FLOPS, plan.ASSUMPTION)
    rows = plan.protocol_plan(module, settings, n_seeds, flops)
    return plan.plan_text(args.name, args.scale, rows, source)


def check_launch_flags(args: argparse.Namespace) -> None:
    """One-line ValueErrors for flag combinations that cannot work together."""
    cluster = {
        "--partition": args.partition,
        "--gpus-per-job": args.gpus_per_job,
        "--array-parallelism": args.array_parallelism,
        "--runs-per-job": args.runs_per_job,
    }
    for flag in ("--gpus-per-job", "--array-parallelism", "--runs-per-job"):
        if cluster[flag] is not None and cluster[flag] < 1:
            raise ValueError(f"{flag} {cluster[flag]} is not allowed; it must be >= 1")
    if args.time_limit is not None and not 0 < args.time_limit <= MAX_MINUTES:
        raise ValueError(
            f"--time-limit {args.time_limit:g} is not allowed; it must be a number of minutes "
            f"in (0, {MAX_MINUTES:g}]"
        )
    if args.partition is not None and not args.partition.strip():
        raise ValueError(f"--partition {args.partition!r} is not allowed; name a SLURM partition")
    for flag, given in (("--time-limit", args.time_limit is not None), ("--fresh", args.fresh)):
        if given and args.dry_run:
            raise ValueError(f"{flag} is not allowed with --dry-run (it trains nothing)")
    if args.launcher is None:
        given = [flag for flag, value in cluster.items() if value is not None]
        if given:
            raise ValueError(f"{given[0]} is not allowed without --launcher slurm (or local)")
        return
    if args.dry_run:
        raise ValueError(f"--launcher {args.launcher} is not allowed with --dry-run (it trains)")
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise ValueError(f"--launcher {args.launcher} is not allowed under torchrun")
    if args.fresh:
        raise ValueError("--fresh is not allowed with --launcher; remove the run folder instead")
    if args.launcher == "slurm" and args.partition is None:
        raise ValueError("--launcher slurm needs --partition P (the SLURM partition to submit to)")
    if args.launcher == "slurm" and shutil.which("sbatch") is None:
        raise ValueError(
            "--launcher slurm is not allowed here: SLURM's sbatch is not on PATH; run it on "
            "the cluster's login node, or use --launcher local"
        )
    if args.launcher == "local":
        for flag in ("--partition", "--gpus-per-job", "--array-parallelism"):
            if cluster[flag] is not None:
                raise ValueError(f"{flag} is not allowed with --launcher local (SLURM only)")


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
    p.add_argument(
        "--rejudge",
        action="store_true",
        help="with --readme: judge OUT's small results again by the current rules (no "
        "training) and write them back first",
    )
    p.add_argument("--scale", choices=SCALE_NAMES, default="tiny", help="tiny | small | paper")
    p.add_argument(
        "--seeds",
        type=int,
        default=None,
        help="use the first N seeds of the scale; past its list, 1001, 1002, … (at most 12)",
    )
    p.add_argument("--out", default="results", help="output directory (default ./results)")
    add_threads_argument(p)
    p.add_argument("--data-dir", default=None, help="local text data (else $GEOLAB_DATA)")
    p.add_argument("--no-png", action="store_true", help="HTML figures only")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an earlier result of the same protocol, scale and variant (published, "
        "--match-sizes, --tasks, --flavor) in --out",
    )
    p.add_argument(
        "--yes",
        action="store_true",
        help="start --scale paper on a CPU after printing its estimate (refused without it)",
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
        help="worker processes (default 1) packed with the protocol's runs, round-robin over "
        "the visible GPUs (per array job with --launcher)",
    )
    p.add_argument("--compile", action="store_true", help="torch.compile every model")
    add_compile_mode_argument(p)
    p.add_argument(
        "--steps",
        type=int,
        default=None,
        help="train every run this many steps instead of the scale's (e.g. twice as long)",
    )
    p.add_argument(
        "--match-sizes",
        action="store_true",
        help="edelta_benchmarks, geolab flavor: every model's MLP width moved until its parameter "
        "count is GPT's (within 3 %%), beside the published settings",
    )
    p.add_argument(
        "--tasks",
        nargs="+",
        default=None,
        help="only these of the E∆ table's tasks (edelta_benchmarks), e.g. --tasks near_pi",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="MIN",
        help="start no run that cannot finish within MIN minutes; exit 3 naming those left out "
        "(with --launcher: each array job's time limit, default 1440)",
    )
    p.add_argument(
        "--fresh", action="store_true", help="retrain and overwrite the runs saved under OUT"
    )
    p.add_argument(
        "--launcher",
        choices=("local", "slurm"),
        default=None,
        help="submit the runs as a submitit job array (slurm; local: on this machine), wait "
        "and merge",
    )
    p.add_argument("--partition", default=None, help="--launcher slurm: the partition")
    p.add_argument(
        "--gpus-per-job", type=int, default=None, help="--launcher slurm: GPUs per array job (1)"
    )
    p.add_argument(
        "--array-parallelism",
        type=int,
        default=None,
        help="--launcher slurm: at most K array jobs at once (default: the scheduler's)",
    )
    p.add_argument(
        "--runs-per-job",
        type=int,
        default=None,
        help="--launcher: runs per array job (default 4 × --jobs)",
    )
    p.add_argument(
        "--flavor",
        choices=("both", *FLAVORS),
        default="both",
        help="edelta_benchmarks: geolab's causal models, the reference's, or both (default)",
    )
    p.set_defaults(func=run_reproduce_cli)
