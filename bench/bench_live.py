"""Live notebooks: slider value -> recomputed numbers and figures, through ``geolab.explore``.

Each row times the exact call a notebook cell makes when a slider moves (the view function:
operators or model forward, metrics, and every plotly figure of that notebook), with the value
changed on every call so no cache answers. Times are on the suite's clock (process CPU time on a
CPU). Targets: ≤ 50 ms for 01 and 03 (issue 4).

Notebook 04 (200 layers, D = 128, S = 32; postln, preln, mgt and the pure-attention reference)
and ``rank_profile`` run on the views' stacked model (``geolab.stack``), and each is reported as
a ratio to a matrix-product floor timed in the same interleaved rounds (issue 23): the same
forward's ``F.linear`` calls, recorded with a ``TorchFunctionMode`` and replayed on
preallocated inputs. Targets: rank_profile of preln, mgt, edelta, ddl ≤ 2.2× its floor and of mhc
≤ 3.5× (issue 38; ``PROFILE_TARGETS``, mhc's in bench_streams); a new depth
(weights kept) and a β₀ move ≤ 2.2× the 4 curves' and the mgt curve's floors (issue 38; issue 23
asked 2.5× and 2×); the first load ≤ 3× the 4 curves' floor when it reads the curves a first
session kept on disk (``geolab.disk_cache``; issue 38), and ≤ 4× cold (issue 23). The other
rows run with the disk cache off. Medians of per-round ratios; the notes give the medians of both
sides and the spread of the ratios.
Training steps (bench_rules' step, 12 layers) are reported as their ratio to preln's divided by
the ratio of their linear maps' multiply-adds (≤ 1.15; hc ≤ 1.3, mhc and mhc_lite ≤ 1.6:
``TRAIN_TARGETS``).
"""

import contextlib
import itertools
import math
import os
import statistics
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from bench.bench_rules import _step_fn
from bench.timing import bracketed, interleaved, median_ratio, seconds, spread
from geolab import compiling, disk_cache, explore, stack
from geolab.metrics import effective_rank

RULES = ("postln", "preln", "mgt")  # 04's default curves, with the pure-attention reference
PROFILE_RULES = ("preln", "mgt", "edelta", "ddl")
TRAIN_RULES = ("mgt", "ddl", "hc", "mhc", "mhc_lite", "edelta")
# issue 38's training targets (step / preln ÷ FLOP ratio): ≤ 1.15 each, but the stream rules
# carry an n-wide state no fusion removes: hc ≤ 1.3, mhc ≤ 1.6 (mhc_lite, its iteration-free
# mixer, is held to mhc's)
TRAIN_TARGETS = {"hc": 1.3, "mhc": 1.6, "mhc_lite": 1.6}
TRAIN_TARGET = 1.15
# issue 38: rank_profile / its floor per rule (mhc_lite, a rule of its own, has none)
PROFILE_TARGETS = {"preln": 2.2, "mgt": 2.2, "edelta": 2.2, "ddl": 2.2, "mhc": 3.5}
# issue 38's table (depth, β₀, the first load reading 04's disk cache); the cold first load:
# issue 23's
TARGETS = {"profile": PROFILE_TARGETS, "depth": 2.2, "beta0": 2.2, "first": 4.0, "first kept": 3.0}
COMPILED = " [compiled layer step]"  # the suffix of every row measured with GEOLAB_COMPILE=1
OPENING_DEPTH = 24  # notebook 04's depth slider opens here


def _row(name, ms: list[float], target_ms, notes="") -> dict:
    value = statistics.median(ms)
    return {
        "group": "live",
        "name": name,
        "value": value,
        "unit": "ms",
        "target": f"≤ {target_ms} ms" if target_ms else None,
        "met": value <= target_ms if target_ms else None,
        "notes": f"min {min(ms):.1f} ms over {len(ms)} rounds" + (f"; {notes}" if notes else ""),
    }


def _sweep(values):
    """A callable factory: each call takes the next value, so no cache can answer."""
    it = itertools.cycle(values)
    return lambda: next(it)


def _small_views(rounds: int, min_time: float) -> list[dict]:
    beta = _sweep([0.05 * i for i in range(-19, 60)])
    cayley_beta = _sweep([0.1 * i for i in range(0, 200)])
    lam = _sweep([1.0 + 0.01 * i for i in range(50)])
    depth = _sweep(list(range(60, 120)))
    fns = {
        "01": lambda: explore.delta_view(beta(), 0.5, 1.0),
        "03": lambda: explore.cayley_view(cayley_beta(), 1.2, 0.5),
        "02": lambda: explore.mgt_view(lam(), 0.0, 0.1, 0.5),
        "05": lambda: explore.spectrum_view("random", depth()),
    }
    times = interleaved(fns, rounds=rounds, min_time=min_time)
    ms = {k: [t * 1e3 for t in v] for k, v in times.items()}
    return [
        _row("01 delta operator: β slider -> numbers + 4 figures", ms["01"], 50),
        _row("03 Cayley/Householder: β slider -> numbers + 4 figures", ms["03"], 50),
        _row("02 MGT block: λ slider -> numbers + Jacobian + 3 figures", ms["02"], None),
        _row(
            "05 streams: depth slider -> |λ₂| of 4 families' products + 5 figures", ms["05"], None
        ),
    ]


class _Linears(TorchFunctionMode):
    """Records every ``F.linear`` call of the code run inside it: (input shape, weight, bias)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.linear:
            bias = args[2] if len(args) > 2 else kwargs.get("bias")
            self.calls.append((tuple(args[0].shape), args[1], bias))
        return func(*args, **kwargs)


def _floor(*fns):
    """The matrix-product floor of ``fns``: their ``F.linear`` calls (every linear map of the
    forward: QKV, output, MLP, the rules' own) replayed on preallocated inputs of the same
    shapes, without attention, norms, gates or residual adds. Returns the replay callable."""
    rec = _Linears()
    with rec:
        for fn in fns:
            fn()
    inputs = {shape: torch.randn(shape) for shape, _, _ in rec.calls}
    calls = [(inputs[shape], w, b) for shape, w, b in rec.calls]

    @torch.inference_mode()
    def replay():
        for x, w, b in calls:
            F.linear(x, w, b)

    return replay


def _ratio_row(name, num: list[float], den: list[float], target, notes="") -> dict:
    value = median_ratio(num, den)
    return {
        "group": "live",
        "name": name,
        "value": value,
        "unit": "× floor",
        "target": f"≤ {target}×" if target else None,
        "met": value <= target if target else None,
        "notes": f"{statistics.median(num) * 1e3:.0f} ms vs floor "
        f"{statistics.median(den) * 1e3:.0f} ms (medians), ratios {spread(_ratios(num, den))}"
        + (f"; {notes}" if notes else ""),
    }


def _ratios(num, den):
    return [a / b for a, b in zip(num, den, strict=True)]


def _profile(cfg, x):
    """``rank_profile`` on the views' stacked model: the merged state after every residual step
    and its effective rank (what ``geolab rank`` prints)."""
    return effective_rank(stack.stack_states(cfg, 0, x, every_step=True)).mean(dim=-1)


@contextlib.contextmanager
def _env(**values: str):
    """Environment variables set inside, restored after (geolab reads them per call)."""
    old = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in old.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def _views_compiled(on: bool):
    """``GEOLAB_COMPILE`` set to ``on`` inside (the stack reads it per call)."""
    return _env(**{compiling.ENV: "1" if on else "0"})


@contextlib.contextmanager
def _disk_cache_in_empty_folder():
    """04's disk cache on (``geolab.disk_cache``), in a new empty cache folder, removed after;
    inductor's cache folder stays where it was."""
    compiling.use_cache_folder()
    with tempfile.TemporaryDirectory() as folder:
        with _env(GEOLAB_CACHE=folder, **{disk_cache.ENV: "1"}):
            yield


def _rank_rows(
    n_layer: int, d: int, seq: int, targets: dict, rounds: int, compiled: bool = False
) -> list[dict]:
    """Issue 23's targets, each a ratio to a matrix-product floor timed in the same rounds;
    ``compiled``: the views' per-layer compiled step (``GEOLAB_COMPILE=1``), its graphs compiled
    before the rounds (the compile itself is `_compile_rows`'), the floors the same eager
    replays."""
    with _views_compiled(False):  # the floors record eager F.linear calls
        floors = _rank_floors(n_layer, d, seq)
    with _views_compiled(compiled):
        if compiled:
            x = explore.rank_tokens(seq, 0)
            for r in (*RULES, explore.REFERENCE, *PROFILE_RULES):
                stack.stack_states(explore.rank_config(r, n_layer, d, seq), 0, x)
        rows = _rank_timed(n_layer, d, seq, targets, rounds, floors, compiled)
    return _marked(rows, compiled)


def _marked(rows: list[dict], compiled: bool) -> list[dict]:
    """``rows`` with ``COMPILED`` after each name when they were measured compiled."""
    for row in rows:
        row["name"] += COMPILED if compiled else ""
    return rows


def _rank_floors(n_layer: int, d: int, seq: int) -> dict:
    """The floors `_rank_timed` divides by: per curve, per profile rule, and at the shallow and
    opening depths."""
    x = explore.rank_tokens(seq, 0)
    curves = (*RULES, explore.REFERENCE)
    cfgs = {r: explore.rank_config(r, n_layer, d, seq) for r in curves}

    def floors_at(depth):
        return [
            _floor(lambda c=c: stack.stack_states(c.replace(n_layer=depth), 0, x))
            for c in cfgs.values()
        ]

    return {
        "curves": {r: _floor(lambda c=c: stack.stack_states(c, 0, x)) for r, c in cfgs.items()},
        "profiles": _profile_floors(PROFILE_RULES, n_layer, d, seq),
        "shallow": floors_at(max(2, n_layer // 4)),
        "opening": floors_at(min(OPENING_DEPTH, n_layer)),
    }


def _profile_floors(rules, n_layer: int, d: int, seq: int) -> dict:
    """Per rule, the matrix-product floor of its ``rank_profile`` on the stacked model."""
    x = explore.rank_tokens(seq, 0)
    cfgs = {r: explore.rank_config(r, n_layer, d, seq) for r in rules}
    return {r: _floor(lambda c=c: _profile(c, x)) for r, c in cfgs.items()}


def _profile_fns(rules, n_layer: int, d: int, seq: int, floors: dict) -> dict:
    """The contenders of the profile rows: each rule's ``rank_profile`` and its floor."""
    x = explore.rank_tokens(seq, 0)
    fns = {}
    for r in rules:
        cfg = explore.rank_config(r, n_layer, d, seq)
        fns[f"profile {r}"] = lambda c=cfg: _profile(c, x)
        fns[f"profile floor {r}"] = floors[r]
    return fns


def _profile_rows(rules, times: dict, label: str, targets: dict) -> list[dict]:
    """``rank_profile`` / its floor per rule, from the rounds `_profile_fns` ran in; ``targets``
    maps a rule to its target (none for a rule not in it)."""
    return [
        _ratio_row(
            f"rank_profile {r} on the stacked model / its matrix-product floor — {label}",
            times[f"profile {r}"],
            times[f"profile floor {r}"],
            targets.get(r),
            "forward of every residual step, merged, and the effective rank of each state",
        )
        for r in rules
    ]


def _rank_timed(n_layer, d, seq, targets, rounds, floor_fns, compiled) -> list[dict]:
    label = f"{n_layer} layers, D={d}, S={seq}"
    curves = (*RULES, explore.REFERENCE)
    opening = min(OPENING_DEPTH, n_layer)

    def cold(depth):
        """04's first load at ``depth``, ms: weights drawn, every curve probed, the figures."""
        stack.clear()
        explore.rule_profile.cache_clear()
        return 1e3 * seconds(lambda: explore.rank_view(RULES, depth, d_model=d, seq_len=seq))

    opening_ms = cold(opening)
    first_ms = cold(n_layer)
    with _disk_cache_in_empty_folder():  # a first session computes and writes, a later reads
        written_ms, read_ms = cold(n_layer), cold(n_layer)
    floors = floor_fns["curves"]
    beta0 = _sweep([0.5 - 0.001 * i for i in range(1, 400)])
    shallow = max(2, n_layer // 4)

    def new_depth(depth):
        def run():
            explore.rule_profile.cache_clear()
            return explore.rank_view(RULES, depth, d_model=d, seq_len=seq)

        return run

    shallow_floors, opening_floors = floor_fns["shallow"], floor_fns["opening"]
    # The β₀ slider in its own rounds: the depth rows below clear the per-curve cache, which
    # the slider relies on (only mgt reads β₀; the other curves are cached, as in 04).
    explore.rank_view(RULES, n_layer, d_model=d, seq_len=seq)
    slider = interleaved(
        {
            "beta0": lambda: explore.rank_view(
                RULES, n_layer, beta0=beta0(), d_model=d, seq_len=seq
            ),
            "mgt floor": floors["mgt"],
        },
        rounds=2 * rounds,
    )
    fns = {
        "new depth": new_depth(n_layer),
        "new shallow depth": new_depth(shallow),
        "4 floors": lambda: [f() for f in floors.values()],
        "4 shallow floors": lambda: [f() for f in shallow_floors],
        "4 opening floors": lambda: [f() for f in opening_floors],
    }
    fns.update(_profile_fns(PROFILE_RULES, n_layer, d, seq, floor_fns["profiles"]))
    times = interleaved(fns, rounds=rounds)
    four = times["4 floors"]
    rows = _profile_rows(PROFILE_RULES, times, label, targets.get("profile", {}))
    rows += [
        _ratio_row(
            f"04 new depth {n_layer} (weights kept, 4 curves probed + figures) / the 4 curves' "
            f"floor — {'/'.join(curves)}, {label}",
            times["new depth"],
            four,
            targets.get("depth"),
        ),
        _ratio_row(
            f"04 new depth {shallow} (a prefix of the kept {n_layer} layers) / the 4 curves' "
            f"floor at {shallow} layers",
            times["new shallow depth"],
            times["4 shallow floors"],
            targets.get("depth"),
        ),
        _ratio_row(
            f"04 β₀ slider (mgt recomputed, 4 curves' figures) / the mgt curve's floor — {label}",
            slider["beta0"],
            slider["mgt floor"],
            targets.get("beta0"),
        ),
        _ratio_row(
            f"04 first load, cold (weights drawn, 4 curves probed + figures) / the 4 curves' "
            f"floor — {label}",
            [first_ms / 1e3],
            [statistics.median(four)],
            targets.get("first"),
            "one cold call against the floor's median in the rounds after it",
        ),
        _ratio_row(
            f"04 first load, disk cache empty (computed as cold, then written) / the 4 curves' "
            f"floor — {label}",
            [written_ms / 1e3],
            [statistics.median(four)],
            None,
            "one call; what a first session pays once (geolab.disk_cache)",
        ),
        _ratio_row(
            f"04 first load, disk cache filled (4 curves read, figures) / the 4 curves' floor — "
            f"{label}",
            [read_ms / 1e3],
            [statistics.median(four)],
            targets.get("first kept"),
            "one call, the files just written (in the OS's page cache); every later session",
        ),
        _ratio_row(
            f"04 first load at its opening depth {opening}, cold (its layers drawn, 4 curves "
            f"probed + figures) / the 4 curves' floor at {opening} layers",
            [opening_ms / 1e3],
            [statistics.median(times["4 opening floors"])],
            None,
            "one cold call; the deeper layers are drawn when a deeper depth is first asked",
        ),
    ]
    if compiled:  # each of the rank rules would compile its own step first
        return rows
    rows.append(
        _row(
            f"04 rank collapse: compare all {len(explore.rank_rules())} rules (cold) — {label}",
            [_compare_all_ms(n_layer, d, seq)],
            None,
            "one cold call, as the notebook's button runs it (one rule per progress step)",
        )
    )
    return rows


def _compare_all_ms(n_layer: int, d: int, seq: int) -> float:
    """The notebook's "compare all rules" loop on a cold cache, on the suite's clock, in ms."""
    explore.rule_profile.cache_clear()
    stack.clear()
    return 1e3 * seconds(
        lambda: [
            explore.rank_view([name], n_layer, d_model=d, seq_len=seq, reference=False)
            for name in explore.rank_rules()
        ]
    )


def _linear_flops(fn) -> int:
    """Multiply-adds of the linear maps one call of ``fn`` runs (``F.linear`` calls recorded)."""
    rec = _Linears()
    with rec:
        fn()
    return sum(math.prod(shape[:-1]) * w.shape[0] * w.shape[1] for shape, w, _ in rec.calls)


def _train_rows(
    n_layer: int,
    d: int,
    seq: int,
    batch: int,
    rounds: int,
    compiled: bool = False,
    rules=TRAIN_RULES,
) -> list[dict]:
    """Training step / preln's (bench_rules' step: forward + backward, 12 layers), each divided
    by the ratio of its linear maps' multiply-adds to preln's (issue 23: ≤ 1.15): how much a rule
    costs beyond the matrix products it adds. ``compiled``: every model, preln's too, with its
    layer step compiled (``compile_layers``; compiled in the warm-up round)."""
    base, _ = _step_fn("preln", n_layer, d, seq, batch)
    steps = {r: _step_fn(r, n_layer, d, seq, batch)[0] for r in rules}
    base_flops = _linear_flops(base)
    flops = {r: _linear_flops(step) / base_flops for r, step in steps.items()}
    if compiled:
        base = _step_fn("preln", n_layer, d, seq, batch, compiled=True)[0]
        steps = {r: _step_fn(r, n_layer, d, seq, batch, compiled=True)[0] for r in rules}
    ratios = bracketed(base, steps, rounds=rounds)
    rows = []
    for rule in rules:
        per_flop = [r / flops[rule] for r in ratios[rule]]
        value = statistics.median(per_flop)
        rows.append(
            {
                "group": "live",
                "name": f"training step {rule} / preln ÷ linear-map FLOP ratio ({n_layer} layers, "
                f"D={d}, S={seq}, B={batch})" + (COMPILED if compiled else ""),
                "value": value,
                "unit": "× FLOP ratio",
                "target": f"≤ {TRAIN_TARGETS.get(rule, TRAIN_TARGET)}×",
                "met": value <= TRAIN_TARGETS.get(rule, TRAIN_TARGET),
                "notes": f"step ratio {statistics.median(ratios[rule]):.2f}, linear-map FLOP "
                f"ratio {flops[rule]:.2f}; {spread(per_flop)}",
            }
        )
    return rows


_COMPILE_TIME = """
import os, sys, torch
from geolab import explore, stack
torch.set_num_threads(1)
rule, n_layer, d, seq = sys.argv[1], *map(int, sys.argv[2:])
cfg = explore.rank_config(rule, n_layer, d, seq)
x = explore.rank_tokens(seq, 0)
stack.stack_weights(cfg, 0)  # the weights drawn outside the timing
cpu = lambda t: t.user + t.system + t.children_user + t.children_system  # with the C++ compiler
start = cpu(os.times())
stack.stack_states(cfg, 0, x)
print(cpu(os.times()) - start)
"""


def _compile_rows(n_layer: int, d: int, seq: int, rules) -> list[dict]:
    """The views' first compiled call per rule in a fresh process (CPU seconds of the process
    and of the C++ compiler it runs, one thread, the first forward included): with an empty
    inductor cache folder, then again from the one the first run filled — what a session pays
    once, and what every later session pays."""
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, compiling.ENV: "1", "TORCHINDUCTOR_CACHE_DIR": cache}
        # Compiled in this process (no worker pool): its C++ compiler runs are its children,
        # which os.times counts once waited for.
        env.update(OMP_NUM_THREADS="1", TORCHINDUCTOR_COMPILE_THREADS="1")
        for rule in rules:
            args = [sys.executable, "-c", _COMPILE_TIME, rule, str(n_layer), str(d), str(seq)]
            times = [
                float(subprocess.run(args, env=env, check=True, capture_output=True, text=True)
                      .stdout.split()[-1])
                for _ in range(2)
            ]  # fmt: skip
            rows.append(
                {
                    "group": "live",
                    "name": f"views' layer step compile, {rule}: first call in a new process, "
                    f"cold / from the cache folder — {n_layer} layers, D={d}, S={seq}",
                    "value": times[0],
                    "unit": "s CPU",
                    "target": "≤ 30 s cold, ≤ 5 s cached",
                    "met": times[0] <= 30 and times[1] <= 5,
                    "notes": f"from the cache folder {times[1]:.1f} s (the forward included)",
                }
            )
    return rows


def run(quick: bool) -> list[dict]:
    """Eager rows; with ``GEOLAB_COMPILE=1`` also the same rows with the layer step compiled
    (views and training) and each profile rule's compile time."""
    with _env(**{disk_cache.ENV: "0"}):  # cold rows recompute; the first-load rows turn it on
        return _run(quick)


def _run(quick: bool) -> list[dict]:
    both = compiling.views_compile()
    if quick:
        rows = (
            _small_views(rounds=2, min_time=0.0)
            + _rank_rows(4, 32, 8, {}, rounds=2)
            + _train_rows(2, 32, 16, 2, rounds=2)
        )
        if both:
            rows += _rank_rows(4, 32, 8, {}, rounds=2, compiled=True)
            rows += _train_rows(2, 32, 16, 2, rounds=2, compiled=True)
        return rows
    rows = (
        _small_views(rounds=7, min_time=0.2)
        + _rank_rows(200, 128, 32, TARGETS, rounds=5)
        + _train_rows(12, 128, 64, 16, rounds=3)
    )
    if both:
        rows += _compile_rows(200, 128, 32, PROFILE_RULES)
        rows += _rank_rows(200, 128, 32, TARGETS, rounds=5, compiled=True)
        rows += _train_rows(12, 128, 64, 16, rounds=3, compiled=True)
    return rows
