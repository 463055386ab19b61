"""``geolab info`` (versions, device, the rule registry) and ``geolab rank`` (rank at init)."""

import json
import platform
import sys

import torch

from geolab.cli.args import add_model_arguments, geo_config
from geolab.device import describe_device, pick_device
from geolab.memory import check_fits
from geolab.model import GeoTransformer
from geolab.probe import rank_profile
from geolab.rules import RESIDUALS, describe


def cmd_info(args) -> int:
    import geolab

    versions = f"python {platform.python_version()}  torch {torch.__version__}"
    print(f"geolab {geolab.__version__}  {versions}")
    print(f"device: {describe_device(pick_device())}  threads: {torch.get_num_threads()}")
    print(f"\nresidual rules ({len(RESIDUALS)}):")
    for name in RESIDUALS:
        print(f"  {name:<12} {describe(name)}")
    return 0


def cmd_rank(args) -> int:
    if args.batch < 1:
        raise ValueError(f"--batch {args.batch} is not allowed; it must be >= 1")
    cfg = geo_config(
        args,
        seq_len=args.seq_len,
        d_in=args.d_model,
        d_out=args.d_model,
        mlp=not args.no_mlp,
    )
    check_fits(cfg, args.batch, args.seq_len, torch.device("cpu"), training=False)
    torch.manual_seed(args.seed)
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


def add_info_cli(sub) -> None:
    """Register ``geolab info`` and ``geolab rank``."""
    info = sub.add_parser("info", help="versions, device and the residual-rule registry")
    info.set_defaults(func=cmd_info)

    rank = sub.add_parser("rank", help="effective rank per layer of a randomly initialised stack")
    add_model_arguments(rank, layers=12)
    rank.add_argument("--seq-len", type=int, default=32)
    rank.add_argument("--batch", type=int, default=4)
    rank.add_argument("--seed", type=int, default=0)
    rank.add_argument("--no-mlp", action="store_true", help="attention-only layers")
    rank.add_argument("--json", action="store_true", help="print JSON instead of a table")
    rank.set_defaults(func=cmd_rank)
