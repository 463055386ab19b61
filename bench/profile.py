"""Profiles behind bench/README.md's misses: ``python -m bench.profile RULE [...]``.

For each rule, one forward+backward training step at the rule benchmark's shape (12 layers,
D = 128, S = 64, B = 16), or with ``--views`` its ``rank_profile`` on the views' stacked model
(200 layers, D = 128, S = 32, what ``bench --only live`` times), under ``torch.profiler``: split
into matrix products (``mm``/``addmm``/``bmm``/attention) and everything else, with the number of
operator calls — on a CPU at these sizes, each extra elementwise operator costs tens of
microseconds, so the call count is what the closed forms and fused updates have to keep small.
Times are the profiler's (wall-clock), so compare shares and counts, not absolute values, on a
shared machine. ``--first-load`` splits notebook 04's cold first load (no rule arguments).
"""

import argparse

import torch
from torch.profiler import profile

from bench.bench_live import RULES, _floor, _profile
from bench.bench_rules import _step_fn
from bench.timing import seconds, set_clock
from geolab import explore, stack

MATMUL = ("aten::mm", "aten::addmm", "aten::bmm", "aten::_scaled_dot_product")


def _split(label: str, fn, rows: int) -> str:
    """``fn`` run once under the profiler after a warm-up: its head line and operator table."""
    fn()
    with profile() as prof:
        fn()
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    matmul = sum(e.self_cpu_time_total for e in events if e.key.startswith(MATMUL))
    calls = sum(e.count for e in events if e.key.startswith("aten::"))
    head = (
        f"{label} — {calls} aten calls, matrix products {matmul / total:.0%} of "
        f"{total / 1e3:.0f} ms profiled"
    )
    return head + "\n" + events.table(sort_by="self_cpu_time_total", row_limit=rows)


def summary(rule: str, n_layer: int, rows: int) -> str:
    step, _ = _step_fn(rule, n_layer, 128, 64, 16)
    return _split(f"{rule}: training step, {n_layer} layers, D=128, S=64, B=16", step, rows)


def view_summary(rule: str, n_layer: int, rows: int, d_model: int = 128, seq_len: int = 32) -> str:
    cfg = explore.rank_config(rule, n_layer, d_model, seq_len)
    x = explore.rank_tokens(seq_len, 0)
    label = f"{rule}: rank_profile on the stacked model, {n_layer} layers, D={d_model}, S={seq_len}"
    return _split(label, lambda: _profile(cfg, x), rows)


def first_load(n_layer: int, d_model: int = 128, seq_len: int = 32) -> dict[str, float]:
    """Where notebook 04's cold first load at ``n_layer`` layers goes, in seconds of process CPU
    time: the whole cold call; drawing the sublayer weights and building the rule modules of its
    four curves, each timed alone from a cleared cache; the same call with the weights kept
    (forwards, spectra, figures); and the four curves' matrix-product floor (bench_live's)."""
    set_clock("cpu")
    curves = (*RULES, explore.REFERENCE)
    cfgs = [explore.rank_config(r, n_layer, d_model, seq_len) for r in curves]

    def cold():
        stack.clear()
        explore.rule_profile.cache_clear()
        explore.rank_view(RULES, n_layer, d_model=d_model, seq_len=seq_len)

    def warm():
        explore.rule_profile.cache_clear()
        explore.rank_view(RULES, n_layer, d_model=d_model, seq_len=seq_len)

    parts = {"cold first load": seconds(cold), "kept weights (a new depth)": seconds(warm)}
    # A pure-attention stack reads the same attention weights: the MLP stacks' draw covers it.
    parts["drawing the sublayer weights"] = seconds(
        lambda: stack.draw_sublayers(cfgs[0], 0, n_layer)
    )
    parts["building the rule modules"] = seconds(
        lambda: [stack.build_rules(cfg, 0, n_layer) for cfg in cfgs]
    )
    x = explore.rank_tokens(seq_len, 0)
    floors = [_floor(lambda c=c: stack.stack_states(c, 0, x)) for c in cfgs]
    parts["the 4 curves' matrix-product floor"] = seconds(lambda: [f() for f in floors])
    return parts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    parser.add_argument("rules", nargs="*", help="rule names, e.g. preln edelta mhc")
    parser.add_argument("--layers", type=int, help="default: 12, or 200 with --views")
    parser.add_argument("--views", action="store_true", help="rank_profile, not a training step")
    parser.add_argument("--first-load", action="store_true", help="04's cold first load, split")
    parser.add_argument("--rows", type=int, default=15, help="operators listed per rule")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if not args.rules and not args.first_load:
        parser.error("rules: name at least one rule, or pass --first-load")
    torch.set_num_threads(args.threads)
    layers = args.layers or (200 if args.views or args.first_load else 12)
    if args.first_load:
        parts = first_load(layers)
        total = parts["cold first load"]
        floor = parts["the 4 curves' matrix-product floor"]
        print(f"04's first load, {layers} layers, D=128, S=32 (process CPU time):")
        for name, s in parts.items():
            print(f"  {name:36s} {s * 1e3:7.0f} ms  {s / total:5.0%} of the load  "
                  f"{s / floor:5.2f}× the floor")  # fmt: skip
    for rule in args.rules:
        fn = view_summary if args.views else summary
        print(fn(rule, layers, args.rows), flush=True)


if __name__ == "__main__":
    main()
