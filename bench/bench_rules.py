"""Rule overhead: forward+backward step time of every residual rule relative to ``preln``.

Same shape for every rule (12 layers, D = 128, S = 64, batch 16, 4 heads, vector input and output
of width D, loss = mean(out²) + the model's aux loss); 48 layers for the rules with targets.
``bracketed`` runs preln before and after every contender in each round, so each ratio compares
runs seconds apart; the value is the median over rounds. Targets (issue 7): mgt ≤ 1.35×,
ddl ≤ 1.15×, edelta (geometry "full") ≤ 1.5×, mhc (n = 4) ≤ 1.6×.
"""

import statistics

import torch

from bench.timing import bracketed, spread
from geolab.config import GeoConfig
from geolab.model import GeoTransformer, count_params
from geolab.rules import RESIDUALS

TARGETS = {"mgt": 1.35, "ddl": 1.15, "edelta": 1.5, "mhc": 1.6}


def _step_fn(rule: str, n_layer: int, d: int, seq: int, batch: int, compiled: bool = False):
    torch.manual_seed(0)
    cfg = GeoConfig(
        residual=rule, n_layer=n_layer, d_model=d, n_head=4, seq_len=seq, d_in=d, d_out=d
    )
    model = GeoTransformer(cfg)
    if compiled:
        model.compile_layers()
    x = torch.randn(batch, seq, d, generator=torch.Generator().manual_seed(1))

    def step():
        model.zero_grad(set_to_none=True)
        out = model(x)
        (out.square().mean() + model.aux_loss()).backward()

    return step, count_params(model)


def _rows(rules, n_layer, d, seq, batch, rounds) -> list[dict]:
    base, base_params = _step_fn("preln", n_layer, d, seq, batch)
    steps, params = {}, {}
    for rule in rules:
        steps[rule], params[rule] = _step_fn(rule, n_layer, d, seq, batch)
    ratios = bracketed(base, steps, rounds=rounds)
    rows = []
    for rule in rules:
        values = ratios[rule]
        value = statistics.median(values)
        target = TARGETS.get(rule)
        rows.append(
            {
                "group": "rules",
                "name": f"{rule} / preln step ({n_layer} layers, D={d}, S={seq}, B={batch})",
                "value": value,
                "unit": "× time",
                "target": f"≤ {target}×" if target else None,
                "met": value <= target if target else None,
                "notes": f"{spread(values)}; params ×{params[rule] / base_params:.2f}",
            }
        )
    return rows


def run(quick: bool) -> list[dict]:
    rules = [name for name in RESIDUALS if name != "preln"]
    if quick:
        return _rows(rules, 2, 32, 16, 2, rounds=2)
    return _rows(rules, 12, 128, 64, 16, rounds=3) + _rows(list(TARGETS), 48, 128, 64, 16, rounds=3)
