"""A4 — a residual rule of your own: MGT's "+DDL only" update against the common interface.

The student writes ``MyRule(Rule)`` for ``mgt_ddl`` (Su & You 2026, Eq. 6–7, docs/design.md §3 and
§3.1):
``X' = X + β ⊙ (F(LN X) − α X)``, ``β = λ·tanh(X W_β + b_β) + ε``, and trains it with the geolab
trainer. ``setups.register_rule`` puts a student's class into ``RESIDUALS`` (``geolab.register``)
for the length of a ``with`` block, so ``GeoConfig(residual=name)`` and ``GeoTransformer`` accept
it.
"""

import math

import torch

from geolab.assignments.checks import as_tensor, close, describe, fail, forbid, observe
from geolab.assignments.properties import Properties
from geolab.assignments.setups import REFERENCE, rule_config, sublayer
from geolab.rules import RESIDUALS

BANNED = ["geolab.rules.delta.MGTDDL", "geolab.rules.delta.MGT", "geolab.rules.delta.MGTmHC"]


def check_my_rule(cls, seed: int = 0):
    """``MyRule(cfg)``: a geolab Rule implementing mgt_ddl initialised as in docs/design.md §3.1.

    Every look at the student's class goes through a probe (``probes.rule_*``), so at grading
    time the class lives in the sandbox and only its outputs reach these comparisons."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 6, 16, generator=g)

    def build(**changes):
        with forbid(BANNED, cls, label=f"MyRule(GeoConfig({changes or ''}))"):
            seen = observe(cls, "rule_build", changes)
        if not seen["is_rule"]:
            fail("MyRule must subclass geolab.rules.Rule (the common interface)")
        if seen["reuses_mgt"]:
            fail("MyRule must not reuse geolab's MGT rules; write the update yourself")

    def step(changes, perturb=None):
        build(**changes)
        with forbid(BANNED, cls, label=f"MyRule(cfg)({describe(x=x)}, sublayer)"):
            return observe(cls, "rule_step", changes, x, seed, perturb)

    checks = Properties()

    @checks.add("MyRule: a geolab Rule, (B, S, D) -> (B, S, D)")
    def interface():
        as_tensor(step({})["out"], "MyRule(cfg)(x, sublayer)", tuple(x.shape))

    @checks.add("MyRule: equals geolab's mgt_ddl at initialisation", 2.0)
    def at_init():
        for changes in ({}, {"beta0": 0.3, "alpha0": 0.4}, {"lam": 2.0, "eps": 0.1, "beta0": 1.2}):
            ref = RESIDUALS[REFERENCE](rule_config(**changes))
            close(
                step(changes)["out"],
                ref(x, sublayer(16, seed)),
                f"MyRule at init with {changes or 'defaults'}"
                " vs geolab's mgt_ddl (W_β = 0, b_β = atanh((β₀ − ε)/λ), α = α₀)",
                atol=1e-5,
            )

    @checks.add("MyRule: records β in rule.gates, β = β₀ at init")
    def gates():
        beta = step({"beta0": 0.3})["beta"]
        if beta is None:
            fail("after a call, rule.gates has no 'beta': record it with self.keep(beta=...)")
        close(beta, torch.full_like(x, 0.3), "rule.gates['beta'] at init with beta0 = 0.3")

    @checks.add("MyRule: β = λ·tanh(X W_β + b_β) + ε depends on X and stays in range")
    def data_dependent():
        beta = step({"lam": 1.5, "eps": 0.2}, perturb=seed + 1)["beta"]
        beta = as_tensor(beta, "rule.gates['beta']", tuple(x.shape))
        if not ((beta > -1.5 + 0.2) & (beta < 1.5 + 0.2)).all():
            fail("β must lie in (−λ + ε, λ + ε) = (−1.3, 1.7): β = λ·tanh(X W_β + b_β) + ε")
        if beta.std() < 1e-3:
            fail("β is the same for every token and channel after random weights: it must read X")

    @checks.add("MyRule: gradients reach x and every parameter")
    def gradients():
        build()
        with forbid(BANNED, cls, label=f"backward through MyRule(cfg)({describe(x=x)}, sublayer)"):
            seen = observe(cls, "rule_grads", {}, x, seed)
        if seen["n_params"] < 16 * 16 + 16 + 1:
            fail(
                "MyRule has fewer parameters than W_β (D×D), b_β (D) and α: are they nn.Parameter?"
            )
        if seen["no_grad"] or not seen["x_grad"]:
            fail(f"no gradient reaches {seen['no_grad'] or ['the input x']}")

    @checks.add("MyRule: trains on copy with the geolab trainer", 2.0)
    def trains():
        with forbid(BANNED, cls, label="training MyRule on copy"):
            loss = observe(cls, "rule_trains", seed)
        if not isinstance(loss, float) or not loss < 0.75 * math.log(8):
            fail(f"after 50 steps on copy the validation loss is {loss:.3f}; "
                 f"geolab's mgt_ddl gets below {0.75 * math.log(8):.2f}")  # fmt: skip

    return checks.run()


TASKS = {"MyRule": check_my_rule}
