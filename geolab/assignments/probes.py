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
    """``fn(x)`` for a scalar-valued ``fn`` and, when it is differentiable, d fn / d x."""
    x = x.detach().clone().requires_grad_(True)
    out = fn(x)
    differentiable = isinstance(out, torch.Tensor) and out.requires_grad
    grad = torch.autograd.grad(out.sum(), x)[0] if differentiable else None
    return {"out": out, "differentiable": differentiable, "grad": grad}


def rank_profile_on_stack(fn, residual: str, depth: int, seed: int):
    """``fn(model, x)`` on A3's attention-only stack ``make_stack(residual, depth, seed)``."""
    from geolab.assignments.setups import make_stack

    return fn(*make_stack(residual, depth, seed))


def _rule(cls, changes: dict, perturb_seed: int | None = None):
    from geolab.assignments.setups import rule_config

    rule = cls(rule_config(**changes))
    if perturb_seed is not None:  # random weights, so β must read X
        g = torch.Generator().manual_seed(perturb_seed)
        with torch.no_grad():
            for p in rule.parameters():
                p.add_(torch.randn(p.shape, generator=g) * 0.5)
    return rule


def rule_build(cls, changes: dict) -> dict:
    """``cls(cfg)``: is it a geolab Rule, and does it reuse geolab's MGT blocks?"""
    from geolab.rules import Rule, delta

    rule = _rule(cls, changes)
    mgt = isinstance(rule, delta._MGTBlock)
    if isinstance(rule, torch.nn.Module):
        mgt = mgt or any(isinstance(m, delta._MGTBlock) for m in rule.modules())
    return {"is_rule": isinstance(rule, Rule), "reuses_mgt": mgt}


def rule_step(cls, changes: dict, x: torch.Tensor, seed: int, perturb_seed: int | None = None):
    """One step ``rule(x, sublayer)`` of a fresh ``cls(cfg)``: its output and ``gates['beta']``."""
    from geolab.assignments.setups import sublayer

    rule = _rule(cls, changes, perturb_seed)
    out = rule(x, sublayer(x.shape[-1], seed))
    gates = getattr(rule, "gates", None)
    return {"out": out, "beta": gates.get("beta") if isinstance(gates, dict) else None}


def rule_grads(cls, changes: dict, x: torch.Tensor, seed: int) -> dict:
    """Backpropagate ``sum(rule(x, sublayer)²)``: parameter count, parameters without gradient,
    whether the gradient reaches x."""
    from geolab.assignments.setups import sublayer

    rule = _rule(cls, changes)
    xg = x.detach().clone().requires_grad_(True)
    rule(xg, sublayer(x.shape[-1], seed)).square().sum().backward()
    params = dict(rule.named_parameters())
    return {
        "n_params": sum(p.numel() for p in params.values()),
        "no_grad": [name for name, p in params.items() if p.grad is None],
        "x_grad": xg.grad is not None,
    }


def rule_trains(cls, seed: int) -> float:
    """Validation loss after 50 steps of the geolab trainer on A4's copy task."""
    from geolab.assignments.setups import copy_task, register_rule, train_config
    from geolab.config import GeoConfig
    from geolab.model import GeoTransformer
    from geolab.train import train

    task = copy_task(seed)
    with register_rule("student_rule", cls):
        cfg = GeoConfig(residual="student_rule", n_layer=2, d_model=32, n_head=4,
                        **task.model_fields())  # fmt: skip
        torch.manual_seed(seed)
        model = GeoTransformer(cfg)
        return float(train(cfg, task, train_config(50, seed), model=model).metrics["loss"])


PROBES = {
    f.__name__: f
    for f in (
        call, value_and_grad, rank_profile_on_stack, rule_build, rule_step, rule_grads, rule_trains
    )
}  # fmt: skip
