"""The ``geolab`` command line (also ``python -m geolab``).

Each subcommand lives next to what it runs and registers itself through an ``add_*_cli``
function; this file only wires them together.
"""

import argparse
import json
import platform
import sys

import torch


def _device_name() -> str:
    if torch.cuda.is_available():
        return f"cuda ({torch.cuda.get_device_name(0)})"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def cmd_info(args) -> int:
    import geolab
    from geolab.rules import RESIDUALS, describe

    versions = f"python {platform.python_version()}  torch {torch.__version__}"
    print(f"geolab {geolab.__version__}  {versions}")
    print(f"device: {_device_name()}  threads: {torch.get_num_threads()}")
    print(f"\nresidual rules ({len(RESIDUALS)}):")
    for name in RESIDUALS:
        print(f"  {name:<12} {describe(name)}")
    return 0


def cmd_rank(args) -> int:
    from geolab.config import GeoConfig
    from geolab.model import GeoTransformer
    from geolab.probe import rank_profile

    torch.manual_seed(args.seed)
    cfg = GeoConfig(
        residual=args.residual,
        n_layer=args.layers,
        d_model=args.d_model,
        n_head=args.n_head,
        seq_len=args.seq_len,
        d_in=args.d_model,
        d_out=args.d_model,
        mlp=not args.no_mlp,
    )
    model = GeoTransformer(cfg).eval()
    x = torch.randn(args.batch, args.seq_len, args.d_model)
    profile = rank_profile(model, x).tolist()
    per_step = 2 if cfg.mlp else 1
    rows = [
        {"step": i, "layer": 0 if i == 0 else (i - 1) // per_step + 1, "effective_rank": r}
        for i, r in enumerate(profile)
    ]
    if args.json:
        json.dump({"config": cfg.to_dict(), "seed": args.seed, "profile": rows}, sys.stdout)
        print()
        return 0
    print(
        f"effective rank per residual step: {args.residual}, {args.layers} layers, "
        f"D={args.d_model}, S={args.seq_len}, seed {args.seed} (random init)"
    )
    print(f"{'step':>5} {'layer':>5} {'eff. rank':>10}")
    for row in rows:
        print(f"{row['step']:>5} {row['layer']:>5} {row['effective_rank']:>10.4f}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="geolab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    info = sub.add_parser("info", help="versions, device and the residual-rule registry")
    info.set_defaults(func=cmd_info)

    rank = sub.add_parser("rank", help="effective rank per layer of a randomly initialised stack")
    rank.add_argument("--residual", default="preln", help="residual rule (see `geolab info`)")
    rank.add_argument("--layers", type=int, default=12)
    rank.add_argument("--d-model", type=int, default=128)
    rank.add_argument("--n-head", type=int, default=4)
    rank.add_argument("--seq-len", type=int, default=32)
    rank.add_argument("--batch", type=int, default=4)
    rank.add_argument("--seed", type=int, default=0)
    rank.add_argument("--no-mlp", action="store_true", help="attention-only layers")
    rank.add_argument("--json", action="store_true", help="print JSON instead of a table")
    rank.set_defaults(func=cmd_rank)

    from geolab.assignments.grade import add_grade_cli
    from geolab.assignments.release import add_release_cli
    from geolab.bench import add_bench_cli
    from geolab.reproduce import add_reproduce_cli
    from geolab.tasks import add_tasks_cli
    from geolab.train import add_train_cli

    add_tasks_cli(sub)
    add_train_cli(sub)
    add_grade_cli(sub)
    add_release_cli(sub)
    add_reproduce_cli(sub)
    add_bench_cli(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as err:
        print(f"geolab {args.command}: error: {err}", file=sys.stderr)
        return 2
