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
import statistics

import torch
from torch.profiler import profile
from torch.utils._python_dispatch import TorchDispatchMode

from bench.bench_live import RULES, _disk_cache_in_empty_folder, _env, _floor, _profile
from bench.bench_rules import _step_fn
from bench.timing import interleaved, median_ratio, seconds, set_clock
from geolab import disk_cache, explore, stack

MATMUL = ("aten::mm", "aten::addmm", "aten::bmm", "aten::_scaled_dot_product")
REPLAY_ROUNDS = 5


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


class _Operators(TorchDispatchMode):
    """Records every aten operator call of the code run inside it, with its arguments."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.calls.append((func, args, kwargs))
        return func(*args, **kwargs)


def _replay(fn):
    """``fn``'s aten operators, recorded once, as a callable that runs them again one by one on
    the recorded arguments (no model code): what the operators cost without the Python that
    calls them. The arguments of in-place operators are copied first, so a replay never writes
    into the model's weights or its own other arguments."""
    rec = _Operators()
    with rec, torch.no_grad():
        fn()
    copies = {}

    def copy(a):
        if not isinstance(a, torch.Tensor):
            return a
        if id(a) not in copies:
            copies[id(a)] = a, a.clone()  # the original kept: its id stays unique
        return copies[id(a)][1]

    calls = [
        (f, [copy(a) for a in args], {k: copy(v) for k, v in kw.items()})
        if f._schema.is_mutable
        else (f, args, kw)
        for f, args, kw in rec.calls
    ]

    @torch.no_grad()
    def run():
        for f, args, kw in calls:
            f(*args, **kw)

    return run


def replay_ratios(rule: str, n_layer: int, rounds=REPLAY_ROUNDS, d_model=128, seq_len=32) -> dict:
    """``rank_profile`` of ``rule`` on the stacked model, its aten operators replayed
    (``_replay``) and its matrix-product floor, interleaved: medians over ``rounds`` of each
    one's seconds (process CPU time) and of the two ratios to the floor."""
    set_clock("cpu")
    cfg = explore.rank_config(rule, n_layer, d_model, seq_len)
    x = explore.rank_tokens(seq_len, 0)
    fns = {"model": lambda: _profile(cfg, x)}
    fns["model"]()
    fns["operators replayed"] = _replay(fns["model"])
    fns["floor"] = _floor(fns["model"])
    times = interleaved(fns, rounds=rounds)
    out = {name: statistics.median(t) for name, t in times.items()}
    for name in ("model", "operators replayed"):
        out[f"{name} / floor"] = median_ratio(times[name], times["floor"])
    return out


def first_load(n_layer: int, d_model: int = 128, seq_len: int = 32) -> dict[str, float]:
    """Where notebook 04's cold first load at ``n_layer`` layers goes, in seconds of process CPU
    time: the whole cold call; the same call with the weights kept (forwards, spectra, figures);
    the cold call with 04's disk cache empty (computed, then written) and filled (read: what
    every later session pays; ``geolab.disk_cache``, off in the other parts); drawing the
    sublayer weights and building each curve's rule modules, each timed alone from a cleared
    cache; and the four curves' matrix-product floor (bench_live's)."""
    set_clock("cpu")
    curves = (*RULES, explore.REFERENCE)
    cfgs = [explore.rank_config(r, n_layer, d_model, seq_len) for r in curves]

    def warm():
        explore.rule_profile.cache_clear()
        explore.rank_view(RULES, n_layer, d_model=d_model, seq_len=seq_len)

    def cold():
        stack.clear()
        warm()

    with _env(**{disk_cache.ENV: "0"}):
        parts = {"cold first load": seconds(cold), "kept weights (a new depth)": seconds(warm)}
    with _disk_cache_in_empty_folder():
        parts["cold, disk cache empty (computed, written)"] = seconds(cold)
        parts["cold, disk cache filled (read)"] = seconds(cold)
    # A pure-attention stack reads the same attention weights: the MLP stacks' draw covers it.
    parts["drawing the sublayer weights"] = seconds(
        lambda: stack.draw_sublayers(cfgs[0], 0, n_layer)
    )
    for name, cfg in zip(curves, cfgs, strict=True):
        parts[f"building the rule modules: {name}"] = seconds(
            lambda cfg=cfg: stack.build_rules(cfg, 0, n_layer)
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
    parser.add_argument(
        "--replay", action="store_true", help="with --views: the operators replayed vs the model"
    )
    parser.add_argument("--rows", type=int, default=15, help="operators listed per rule")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if not args.rules and not args.first_load:
        parser.error("rules: name at least one rule, or pass --first-load")
    if args.replay and not args.views:
        parser.error("--replay: replays a view's operators; allowed only with --views")
    torch.set_num_threads(args.threads)
    layers = args.layers or (200 if args.views or args.first_load else 12)
    if args.first_load:
        parts = first_load(layers)
        total = parts["cold first load"]
        floor = parts["the 4 curves' matrix-product floor"]
        print(f"04's first load, {layers} layers, D=128, S=32 (process CPU time):")
        for name, s in parts.items():
            print(f"  {name:42s} {s * 1e3:7.0f} ms  {s / total:5.0%} of the load  "
                  f"{s / floor:5.2f}× the floor")  # fmt: skip
    for rule in args.rules:
        fn = view_summary if args.views else summary
        print(fn(rule, layers, args.rows), flush=True)
        if args.views and args.replay:
            r = replay_ratios(rule, layers)
            print(
                f"{rule}: model {r['model'] * 1e3:.0f} ms = {r['model / floor']:.2f}× the floor, "
                f"its operators replayed {r['operators replayed'] * 1e3:.0f} ms = "
                f"{r['operators replayed / floor']:.2f}×, floor {r['floor'] * 1e3:.0f} ms "
                f"(medians of {REPLAY_ROUNDS} interleaved rounds)",
                flush=True,
            )


if __name__ == "__main__":
    main()
