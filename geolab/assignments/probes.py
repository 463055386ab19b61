"""Probes: the only code that touches a student's object. Each takes the object and plain inputs
and returns plain data (tensors, numbers, strings, tuples, dicts).

At grading time a probe runs inside the submission's sandboxed process and only its result
crosses to the grader (see ``wire``); in a notebook's live check it runs in place. The checks
(``a1``–``a4``) judge the returned values against references computed where the student's code
cannot reach them. Nothing here imports a reference implementation at module level: this
module is visible to submissions.
"""

import torch


def call(fn, *args):
    """``fn(*args)``."""
    return fn(*args)


def value_and_grad(fn, x: torch.Tensor) -> dict:
    """``fn(x)`` for a scalar-valued ``fn`` and, when it is differentiable, d fn / d x and, when
    that is differentiable too, d² fn / d x² (both from autograd; None where it has none)."""
    x = x.detach().clone().requires_grad_(True)
    out = fn(x)
    differentiable = isinstance(out, torch.Tensor) and out.requires_grad
    grad = torch.autograd.grad(out.sum(), x, create_graph=True)[0] if differentiable else None
    twice = grad is not None and grad.requires_grad
    second = torch.autograd.grad(grad.sum(), x)[0] if twice else None
    return {"out": out, "differentiable": differentiable,
            "grad": None if grad is None else grad.detach(), "second": second}  # fmt: skip


def rank_profile_on_stack(fn, residual: str, depth: int, seed: int):
    """``fn(model, x)`` on A3's attention-only stack ``make_stack(residual, depth, seed)``."""
    from geolab.assignments.setups import make_stack

    return fn(*make_stack(residual, depth, seed))


# --- A4: the student's rule as a black box the grader drives (``rules.RemoteRule``) -----------
# A rule answers two questions: its output for (x, parameters) — asking the grader for the
# sublayer's value at each point it calls it — and the vector-Jacobian product of any of those
# outputs. The model, the sublayers, the loss, the optimiser and every verdict stay in the grader.

ask = None  # set by the worker: ask(payload) -> the grader's answer (here: a sublayer's value)
_RULES: dict[int, object] = {}
_CALLS: dict[int, tuple] = {}
KEEP_CALLS = 64  # graphs kept for backward: a training step makes 4, its backward uses them


def rule_new(cls, fields: dict, seed: int) -> dict:
    """``cls(GeoConfig(**fields))`` (the residual named as the reference, which is registered
    here; torch seeded with ``seed``): its handle, whether it is a geolab Rule, and its
    parameters in order."""
    from geolab.assignments.setups import REFERENCE
    from geolab.config import GeoConfig
    from geolab.rules import Rule

    torch.manual_seed(seed)
    rule = cls(GeoConfig(**{**fields, "residual": REFERENCE}))
    handle = len(_RULES)
    _RULES[handle] = rule
    params = dict(rule.named_parameters()) if isinstance(rule, torch.nn.Module) else {}
    return {"handle": handle, "is_rule": isinstance(rule, Rule),
            "params": {name: p.detach() for name, p in params.items()}}  # fmt: skip


def rule_forward(cls, handle: int, x: torch.Tensor, params: list, grad: bool) -> dict:
    """``rule(x, sublayer)`` with the parameters set to ``params``; each ``sublayer(h)`` is the
    grader's answer for h. Its output, ``gates['beta']``, and the call's id for :func:`rule_vjp`."""
    rule = _RULES[handle]
    with torch.no_grad():
        for p, value in zip(rule.parameters(), params, strict=True):
            p.copy_(value)
    inputs, outputs = [], []

    def sublayer(h):
        outputs.append(h)
        s = ask(h.detach()).to(h.dtype).requires_grad_(grad)
        inputs.append(s)
        return s

    with torch.set_grad_enabled(grad):
        xl = x.clone().requires_grad_(grad)
        y = rule(xl, sublayer)
        outputs.append(y)
    call = len(_CALLS)
    if grad:
        _CALLS[call] = (xl, list(rule.parameters()), inputs, outputs)
        _CALLS.pop(call - KEEP_CALLS, None)
    gates = getattr(rule, "gates", None)
    return {"out": y, "beta": gates.get("beta") if isinstance(gates, dict) else None,
            "call": call}  # fmt: skip


def rule_vjp(cls, call: int, k: int, grad: torch.Tensor) -> list:
    """The vector-Jacobian product of call ``call``'s ``k``-th output (the k-th sublayer input,
    or last the rule's output) with ``grad``, w.r.t. x, each parameter and the sublayer values
    before it; None where it does not depend on one."""
    xl, params, inputs, outputs = _CALLS[call]
    wrt = [xl, *params, *inputs[:k]]
    out = outputs[k]
    if not out.requires_grad:
        return [None] * len(wrt)
    return list(torch.autograd.grad(out, wrt, grad.to(out.dtype), retain_graph=True,
                                    allow_unused=True))  # fmt: skip


PROBES = {
    f.__name__: f
    for f in (call, value_and_grad, rank_profile_on_stack, rule_new, rule_forward, rule_vjp)
}  # fmt: skip
