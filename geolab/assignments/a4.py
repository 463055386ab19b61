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

from geolab.assignments.checks import as_tensor, close, describe, fail, forbid
from geolab.assignments.properties import Properties
from geolab.assignments.remote_rule import RemoteRule, remote_rule
from geolab.assignments.setups import REFERENCE, rule_config, sublayer, trained_loss
from geolab.rules import RESIDUALS, Rule
from geolab.rules.delta import _MGTBlock as MGT

BANNED = ["geolab.rules.delta.MGTDDL", "geolab.rules.delta.MGT", "geolab.rules.delta.MGTmHC"]


def _rule_class(cls, seed: int) -> type:
    """The class the checks build: the student's own in a notebook; at grading time a geolab
    Rule in the grader whose update the student's class answers from its sandbox."""
    return remote_rule(cls, seed) if getattr(cls, "runs_elsewhere", False) else cls


def _named_parameters(rule) -> list:
    if isinstance(rule, RemoteRule):
        return rule.named_student_parameters()
    return list(rule.named_parameters()) if isinstance(rule, torch.nn.Module) else []


def beta_in_range(beta: torch.Tensor, lam: float, eps: float) -> bool:
    """β in (−λ + ε, λ + ε), up to the rounding of β's dtype: in float32 a saturated tanh makes
    λ·1 + ε, which rounds to the bound itself (1.5 + 0.2 -> 1.70000005)."""
    tol = 4 * torch.finfo(beta.dtype).eps * (abs(lam) + abs(eps))
    return bool(((beta > -lam + eps - tol) & (beta < lam + eps + tol)).all())


def check_my_rule(cls, seed: int = 0):
    """``MyRule(cfg)``: a geolab Rule implementing mgt_ddl initialised as in docs/design.md §3.1.

    Every verdict is computed here: at grading time the rule the checks build is a
    :class:`~geolab.assignments.remote_rule.RemoteRule`, so the model, the sublayer, the
    backward, the trainer and the comparisons run in the grader and the student's class only
    answers for its own outputs and gradients."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 6, 16, generator=g)
    make = _rule_class(cls, seed)

    def build(perturb=None, **changes):
        with forbid(BANNED, cls, label=f"MyRule(GeoConfig({changes or ''}))"):
            rule = make(rule_config(**changes))
        if not (rule.is_rule if isinstance(rule, RemoteRule) else isinstance(rule, Rule)):
            fail("MyRule must subclass geolab.rules.Rule (the common interface)")
        if isinstance(rule, torch.nn.Module) and any(isinstance(m, MGT) for m in rule.modules()):
            fail("MyRule must not reuse geolab's MGT rules; write the update yourself")
        if perturb is not None:  # random weights, so β must read X
            gen = torch.Generator().manual_seed(perturb)
            with torch.no_grad():
                for _, p in _named_parameters(rule):
                    p.add_(torch.randn(p.shape, generator=gen) * 0.5)
        return rule

    def step(changes, perturb=None):
        rule = build(perturb, **changes)
        with forbid(BANNED, cls, label=f"MyRule(cfg)({describe(x=x)}, sublayer)"):
            out = rule(x, sublayer(16, seed))
        gates = getattr(rule, "gates", None)
        return out, gates.get("beta") if isinstance(gates, dict) else None

    checks = Properties()

    @checks.add("MyRule: a geolab Rule, (B, S, D) -> (B, S, D)")
    def interface():
        as_tensor(step({})[0], "MyRule(cfg)(x, sublayer)", tuple(x.shape))

    @checks.add("MyRule: equals geolab's mgt_ddl at initialisation", 2.0)
    def at_init():
        for changes in ({}, {"beta0": 0.3, "alpha0": 0.4}, {"lam": 2.0, "eps": 0.1, "beta0": 1.2}):
            ref = RESIDUALS[REFERENCE](rule_config(**changes))
            close(
                step(changes)[0],
                ref(x, sublayer(16, seed)),
                f"MyRule at init with {changes or 'defaults'}"
                " vs geolab's mgt_ddl (W_β = 0, b_β = atanh((β₀ − ε)/λ), α = α₀)",
                atol=1e-5,
            )

    @checks.add("MyRule: records β in rule.gates, β = β₀ at init")
    def gates():
        beta0 = round(0.1 + 0.8 * float(torch.rand((), generator=g)), 3)
        beta = step({"beta0": beta0})[1]
        if beta is None:
            fail("after a call, rule.gates has no 'beta': record it with self.keep(beta=...)")
        close(beta, torch.full_like(x, beta0), f"rule.gates['beta'] at init with beta0 = {beta0}")

    @checks.add("MyRule: β = λ·tanh(X W_β + b_β) + ε depends on X and stays in range")
    def data_dependent():
        beta = step({"lam": 1.5, "eps": 0.2}, perturb=seed + 1)[1]
        beta = as_tensor(beta, "rule.gates['beta']", tuple(x.shape))
        if not beta_in_range(beta, 1.5, 0.2):
            fail("β must lie in (−λ + ε, λ + ε) = (−1.3, 1.7): β = λ·tanh(X W_β + b_β) + ε")
        if beta.std() < 1e-3:
            fail("β is the same for every token and channel after random weights: it must read X")

    @checks.add("MyRule: gradients reach x and every parameter")
    def gradients():
        # The backward's gradients must be the slope of the rule's own outputs: along a random
        # direction of (x, every parameter), measured here by central differences.
        rule = build()
        params = _named_parameters(rule)
        xg = x.clone().requires_grad_(True)

        def loss(shift: float = 0.0, direction=None):
            with forbid(BANNED, cls, label=f"backward through MyRule(cfg)({describe(x=x)}, …)"):
                if direction is None:
                    out = rule(xg, sublayer(16, seed))
                else:
                    with torch.no_grad():
                        for (_, p), d in zip(params, direction[1:], strict=True):
                            p.add_(shift * d)
                        out = rule(xg.detach() + shift * direction[0], sublayer(16, seed))
                        for (_, p), d in zip(params, direction[1:], strict=True):
                            p.sub_(shift * d)
            return (
                as_tensor(out, "MyRule(cfg)(x, sublayer)", tuple(x.shape)).double().square().sum()
            )

        loss().backward()
        if sum(p.numel() for _, p in params) < 16 * 16 + 16 + 1:
            fail(
                "MyRule has fewer parameters than W_β (D×D), b_β (D) and α: are they nn.Parameter?"
            )
        missing = [name for name, p in params if p.grad is None or not p.grad.abs().sum() > 0]
        if missing or xg.grad is None:
            fail(f"no gradient reaches {missing or ['the input x']}")
        gen = torch.Generator().manual_seed(seed + 2)
        direction = [torch.randn(t.shape, generator=gen) for t in (xg, *(p for _, p in params))]
        claimed = sum(float((t.grad * d).sum()) for t, d in zip(
            (xg, *(p for _, p in params)), direction, strict=True))  # fmt: skip
        h = 1e-2
        measured = float(loss(h, direction) - loss(-h, direction)) / (2 * h)
        if not abs(measured - claimed) <= 2e-2 * max(1.0, abs(measured)):
            fail(f"the gradient along a random direction is {claimed:.4g}, but the rule's outputs "
                 f"change at the rate {measured:.4g}: is something detached?")  # fmt: skip

    @checks.add("MyRule: trains on copy with the geolab trainer", 2.0)
    def trains():
        with forbid(BANNED, cls, label="training MyRule on copy"):
            loss = trained_loss(make, seed)
        if not loss < 0.75 * math.log(8):
            fail(f"after 50 steps on copy the validation loss is {loss:.3f}; "
                 f"geolab's mgt_ddl gets below {0.75 * math.log(8):.2f}")  # fmt: skip

    return checks.run()


TASKS = {"MyRule": check_my_rule}
