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


EPS32 = torch.finfo(torch.float32).eps


def update_problem(x, values: list, out, beta, lam: float, eps: float) -> str | None:
    """None when ``out`` is mgt_ddl's update of ``x`` by the β the rule recorded: X' = X + β ⊙
    (V − α X) for one scalar α (fitted here by least squares), V the one value its sublayer
    returned, β in (−λ + ε, λ + ε); else what differs. So a β that is recorded but does not act
    (gates painted over another update) fails, whatever the rule knows about who calls it.

    The tolerance is float32 rounding: each entry of X' sums x, β V and αβ x, each rounded a
    few times (64 units of float32 rounding of their magnitudes is a wide margin)."""
    if len(values) != 1:
        return (f"it called its sublayer {len(values)} times; X' = X + β ⊙ (F(LN X) − α X) "
                "calls it once")  # fmt: skip
    if not isinstance(beta, torch.Tensor) or tuple(beta.shape) != tuple(x.shape):
        return "rule.gates['beta'] is missing or not of the input's shape"
    if not beta_in_range(beta, lam, eps):
        return f"β left (−λ + ε, λ + ε) = ({eps - lam:g}, {lam + eps:g})"
    x, v, out, beta = (t.detach().double() for t in (x, values[0], out, beta))
    a, t = beta * x, beta * v - (out - x)  # X' − X = β V − α β X, so t = α a
    norm = (a * a).sum()
    alpha = (a * t).sum() / norm if norm > 0 else torch.zeros((), dtype=torch.float64)
    size = x.abs() + (beta * v).abs() + (alpha * a).abs()
    gap = (t - alpha * a).abs() - 64 * EPS32 * size
    if (gap > 0).any():
        worst = (t - alpha * a).abs().max()
        return (f"X' − X is not β ⊙ (V − α X) with the β in rule.gates and one α "
                f"(off by up to {float(worst):.3g}): does the recorded β act?")  # fmt: skip
    return None


def slope_gap(claimed: float, measure, h: float = 1e-2) -> str | None:
    """None when the directional derivative ``claimed`` (from backward) is the slope of
    ``measure(t)`` (the loss at shift t along the direction, a float32 computation) at t = 0;
    else the message.

    The slope is central differences at h, h/2, h/4 extrapolated twice (Richardson, error
    O(h⁴)); the tolerance is what float32 leaves in it: the change between the two
    extrapolations (the truncation left, an over-estimate), plus the rounding of the losses —
    each within 4·eps₃₂·|L| (8 units of float32 rounding; a sum of squares of float32 outputs
    whose errors have random signs; measured: within 0.73 units over 200 seeds) — which the
    last extrapolation, (4 D(h/4) − D(h/2))/3, multiplies by at most 6/h."""
    diffs = []
    for step in (h, h / 2, h / 4):
        up, down = measure(step), measure(-step)
        diffs.append(((up - down) / (2 * step), max(abs(up), abs(down))))
    (d1, l1), (d2, l2), (d4, l4) = diffs
    r1, r2 = (4 * d2 - d1) / 3, (4 * d4 - d2) / 3
    rounding = 6 * 4 * EPS32 * max(l1, l2, l4) / h
    tol = abs(r2 - r1) + rounding + 1e-6 * abs(r2)
    if abs(claimed - r2) <= tol:
        return None
    return (
        f"the gradient along a random direction is {claimed:.4g}, but the rule's outputs "
        f"change at the rate {r2:.4g} (± {tol:.2g}): is something detached?"
    )


def watched(make: type, found: list) -> type:
    """``make`` with every call checked by :func:`update_problem` (the first problem is appended
    to ``found``): training runs the rule the checks judged, not one that knows it is training."""

    def forward(self, x, sublayer):
        values = []

        def sub(h):
            values.append(sublayer(h))
            return values[-1]

        out = super(watching, self).forward(x, sub)
        if not found:
            gates = getattr(self, "gates", None)
            beta = gates.get("beta") if isinstance(gates, dict) else None
            out_ = as_tensor(out, "MyRule(cfg)(x, sublayer) in training", tuple(x.shape))
            problem = update_problem(x, values, out_, beta, self.cfg.lam, self.cfg.eps)
            if problem is not None:
                found.append(problem)
        return out

    watching = type(make.__name__, (make,), {"forward": forward})
    return watching


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

    def step(changes, perturb=None, sub_seed=seed):
        """The rule's output, its recorded β and the values its sublayer returned."""
        rule = build(perturb, **changes)
        values, base = [], sublayer(16, sub_seed)

        def sub(h):
            values.append(base(h))
            return values[-1]

        with forbid(BANNED, cls, label=f"MyRule(cfg)({describe(x=x)}, sublayer)"):
            out = rule(x, sub)
        gates = getattr(rule, "gates", None)
        return out, gates.get("beta") if isinstance(gates, dict) else None, values

    checks = Properties()

    @checks.add("MyRule: a geolab Rule, (B, S, D) -> (B, S, D), reading its sublayer")
    def interface():
        out = as_tensor(step({})[0], "MyRule(cfg)(x, sublayer)", tuple(x.shape))
        other = as_tensor(step({}, sub_seed=seed + 7)[0], "MyRule(cfg)(x, sublayer)", x.shape)
        if not (out - other).abs().max() > 1e-6:
            fail("MyRule's output is the same for two different sublayers: X' must use F(LN X)")

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

    @checks.add("MyRule: records the β it updates with in rule.gates, β = β₀ at init")
    def gates():
        beta0 = round(0.1 + 0.8 * float(torch.rand((), generator=g)), 3)
        out, beta, values = step({"beta0": beta0})
        if beta is None:
            fail("after a call, rule.gates has no 'beta': record it with self.keep(beta=...)")
        close(beta, torch.full_like(x, beta0), f"rule.gates['beta'] at init with beta0 = {beta0}")
        out = as_tensor(out, "MyRule(cfg)(x, sublayer)", tuple(x.shape))
        if (problem := update_problem(x, values, out, beta, 1.0, 0.0)) is not None:
            fail(f"at init with beta0 = {beta0}: {problem}")

    @checks.add("MyRule: β = λ·tanh(X W_β + b_β) + ε depends on X, stays in range and acts")
    def data_dependent():
        out, beta, values = step({"lam": 1.5, "eps": 0.2}, perturb=seed + 1)
        beta = as_tensor(beta, "rule.gates['beta']", tuple(x.shape))
        if not beta_in_range(beta, 1.5, 0.2):
            fail("β must lie in (−λ + ε, λ + ε) = (−1.3, 1.7): β = λ·tanh(X W_β + b_β) + ε")
        if beta.std() < 1e-3:
            fail("β is the same for every token and channel after random weights: it must read X")
        out = as_tensor(out, "MyRule(cfg)(x, sublayer)", tuple(x.shape))
        if (problem := update_problem(x, values, out, beta, 1.5, 0.2)) is not None:
            fail(f"after random weights: {problem}")

    @checks.add("MyRule: gradients reach x and every parameter")
    def gradients():
        # The backward's gradients must be the slope of the rule's own outputs: along a random
        # direction of (x, every parameter), measured here by central differences.
        rule = build()
        params = _named_parameters(rule)
        xg = x.clone().requires_grad_(True)

        def loss(shift: float = 0.0, direction=None):
            # the shifted calls run as the backward's call does (and as training does): with
            # autograd on, fresh leaves, so the rule cannot tell a measurement from a step
            with forbid(BANNED, cls, label=f"backward through MyRule(cfg)({describe(x=x)}, …)"):
                if direction is None:
                    out = rule(xg, sublayer(16, seed))
                else:
                    with torch.no_grad():
                        for (_, p), d in zip(params, direction[1:], strict=True):
                            p.add_(shift * d)
                    shifted = (xg.detach() + shift * direction[0]).requires_grad_(True)
                    out = rule(shifted, sublayer(16, seed)).detach()
                    with torch.no_grad():
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
        if (problem := slope_gap(claimed, lambda t: float(loss(t, direction)))) is not None:
            fail(problem)

    @checks.add("MyRule: trains on copy with the geolab trainer", 2.0)
    def trains():
        found = []
        with forbid(BANNED, cls, label="training MyRule on copy"):
            loss = trained_loss(watched(make, found), seed)
        if found:
            fail(f"in training, MyRule is not the update the checks measured: {found[0]}")
        if not loss < 0.75 * math.log(8):
            fail(f"after 50 steps on copy the validation loss is {loss:.3f}; "
                 f"geolab's mgt_ddl gets below {0.75 * math.log(8):.2f}")  # fmt: skip

    return checks.run()


TASKS = {"MyRule": check_my_rule}
