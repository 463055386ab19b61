"""``geolab info`` (versions, device, the rule registry) and ``geolab rank`` (rank at init)."""

import json
import os
import platform
import sys

from geolab.cli.args import add_model_arguments, geo_config
from geolab.config import check_seed
from geolab.threads import ENV, thread_count, use_threads

RANK_MAX_LAYERS = 10_000


def cmd_info(args) -> int:
    # torch here, not at the top: the device and the rules need it, `geolab tasks` does not
    import torch

    import geolab
    from geolab.device import describe_device, pick_device
    from geolab.rules import RESIDUALS, describe

    versions = f"python {platform.python_version()}  torch {torch.__version__}"
    print(f"geolab {geolab.__version__}  {versions}")
    print(f"device: {describe_device(pick_device())}  {threads_line()}")
    print(f"\nresidual rules ({len(RESIDUALS)}):")
    for name in RESIDUALS:
        print(f"  {name:<12} {describe(name)}")
    return 0


def threads_line() -> str:
    """The CPU threads geolab's commands use (``geolab.threads``): $GEOLAB_THREADS, else 1;
    ``--threads`` of train, rank and reproduce sets them for one command."""
    count = thread_count()
    source = f"from {ENV}" if os.environ.get(ENV, "").strip() else f"the default; set {ENV}=N"
    return f"threads: {count} ({source}, or --threads N per command)"


def cmd_rank(args) -> int:
    # The views' imports (plotly among them) and torch stay out of every other subcommand's
    # start-up.
    import torch

    from geolab.explore.rank import RANK_VOCAB, rank_tokens
    from geolab.memory import check_fits
    from geolab.metrics import effective_rank, rank_collapse_residual
    from geolab.stack import stack_states

    if args.batch < 1:
        raise ValueError(f"--batch {args.batch} is not allowed; it must be >= 1")
    if args.layers > RANK_MAX_LAYERS:  # a bound on the time, which check_fits does not see
        raise ValueError(
            f"--layers {args.layers} is not allowed for rank; at most {RANK_MAX_LAYERS} (every "
            "layer is built and run on the CPU: a million would not answer for hours)"
        )
    check_seed(args.seed, "--seed")
    use_threads()  # GEOLAB_THREADS, else one thread (geolab.threads)
    if args.flavor == "reference":
        raise ValueError(
            "--flavor reference is not allowed for rank: the reference models read vectors, and "
            "rank feeds tokens as notebook 04 does (use --flavor geolab)"
        )
    cfg = geo_config(args, seq_len=args.seq_len, vocab_size=RANK_VOCAB, mlp=not args.no_mlp)
    check_fits(cfg, args.batch, args.seq_len, torch.device("cpu"), training=False)
    tokens = rank_tokens(args.seq_len, args.seed, args.batch)
    states = stack_states(cfg, args.seed, tokens, every_step=True)
    ranks = effective_rank(states).mean(dim=-1).tolist()
    residuals = rank_collapse_residual(states).mean(dim=-1).tolist()
    per_step = 2 if cfg.mlp else 1
    rows = [
        {
            "step": i,
            "layer": 0 if i == 0 else (i - 1) // per_step + 1,
            "effective_rank": r,
            "dong_residual": res,
        }
        for i, (r, res) in enumerate(zip(ranks, residuals, strict=True))
    ]
    if args.json:
        json.dump({"config": cfg.to_dict(), "seed": args.seed, "profile": rows}, sys.stdout)
        print()
        return 0
    floor = 1 / min(args.seq_len, args.d_model)
    print(
        f"effective rank per residual step: {args.residual}, {args.layers} layers, "
        f"D={args.d_model}, S={args.seq_len}, seed {args.seed}, {args.batch} sequence(s) of "
        "random tokens (random init; a layer's last step is notebook 04's number)\n"
        f"eff. rank is normalised (Eq. 8: exp(entropy of the singular values) / min(S, D)): "
        f"1 = every direction used, {floor:.4g} = rank 1; it is never above 1"
    )
    print(f"{'step':>5} {'layer':>5} {'eff. rank':>10} {'Dong res.':>10}")
    for row in rows:
        print(
            f"{row['step']:>5} {row['layer']:>5} {row['effective_rank']:>10.4f} "
            f"{row['dong_residual']:>10.3e}"
        )
    return 0


def add_info_cli(sub) -> None:
    """Register ``geolab info`` and ``geolab rank``."""
    info = sub.add_parser("info", help="versions, device and the residual-rule registry")
    info.set_defaults(func=cmd_info)

    rank = sub.add_parser(
        "rank",
        help="effective rank per layer of a randomly initialised token stack (notebook 04's "
        "numbers)",
        description="Effective rank (Su & You 2026, Eq. 8) and Dong's residual after every "
        "residual step of a token model at init, fed seeded random tokens (vocabulary "
        "256), exactly as notebook 04: the same rule, depth, width, sequence length and seed "
        "give 04's numbers at each layer's last step (batch 1; --batch B averages B sequences, "
        "the first being 04's). Pure attention is --residual noskip --no-mlp.",
    )
    add_model_arguments(rank, layers=12)
    rank.add_argument("--seq-len", type=int, default=32, help="tokens per sequence (default 32)")
    rank.add_argument(
        "--batch", type=int, default=1, help="sequences, ranks averaged (default 1, as 04)"
    )
    rank.add_argument("--seed", type=int, default=0, help="weights and tokens (default 0)")
    rank.add_argument("--no-mlp", action="store_true", help="attention-only layers")
    rank.add_argument("--json", action="store_true", help="print JSON instead of a table")
    rank.set_defaults(func=cmd_rank)
