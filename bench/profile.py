"""Profile one training step of a rule against preln: ``python -m bench.profile RULE [...]``.

The evidence behind the misses explained in bench/README.md: for each rule, one forward+backward
step at the rule benchmark's shape under ``torch.profiler``, split into matrix products
(``mm``/``addmm``/``bmm``/attention) and everything else, with the number of operator calls —
on a CPU at these sizes, each extra elementwise operator costs tens of microseconds, so the call
count is what the closed forms and fused updates have to keep small. Times are the profiler's
(wall-clock), so compare shares and counts, not absolute values, on a shared machine.
"""

import argparse

import torch
from torch.profiler import profile

from bench.bench_rules import _step_fn

MATMUL = ("aten::mm", "aten::addmm", "aten::bmm", "aten::_scaled_dot_product")


def summary(rule: str, n_layer: int, rows: int) -> str:
    step, _ = _step_fn(rule, n_layer, 128, 64, 16)
    step()
    with profile() as prof:
        step()
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    matmul = sum(e.self_cpu_time_total for e in events if e.key.startswith(MATMUL))
    calls = sum(e.count for e in events if e.key.startswith("aten::"))
    head = (
        f"{rule}: {n_layer} layers, D=128, S=64, B=16 — {calls} aten calls, matrix products "
        f"{matmul / total:.0%} of {total / 1e3:.0f} ms profiled"
    )
    table = events.table(sort_by="self_cpu_time_total", row_limit=rows)
    return head + "\n" + table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    parser.add_argument("rules", nargs="+", help="rule names, e.g. preln edelta mhc")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--rows", type=int, default=15, help="operators listed per rule")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    for rule in args.rules:
        print(summary(rule, args.layers, args.rows), flush=True)


if __name__ == "__main__":
    main()
