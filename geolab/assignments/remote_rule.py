"""A4's rule at grading time: a geolab :class:`~geolab.rules.Rule` in the grader whose update is
answered by the student's class in its sandboxed process.

The student's code is a black box that answers two kinds of question (``probes.rule_forward``,
``probes.rule_vjp``): "your output for this x and these parameters" — during which it asks the
grader for the sublayer's value at each point it calls the sublayer — and "the vector-Jacobian
product of that output with this vector". Everything else runs here, on the grader's torch: the
model around the rule, the sublayers, the loss and its backward (each remote output is an
autograd node whose backward asks the worker, :class:`_Step`), the optimiser, the training loop
and every comparison. So patching the trainer, a probe or torch inside the submission changes
only what the black box answers — which is what the student's rule is.

The parameters live here too (a mirror of the student's, in the order its ``parameters()``
gives them), sent with every call: the optimiser updates the grader's copy.
"""

import dataclasses

import torch
from torch import nn

from geolab.assignments.checks import as_tensor, fail
from geolab.rules import Rule

# numbers in a rule's parameters (mgt_ddl has D² + D + 1: 1,057 at the training check's D = 32);
# every request to the worker carries them, so more is not a hand-in but a flood
MAX_PARAMS = 100_000


class _Step(torch.autograd.Function):
    """The ``k``-th output of one remote call (a sublayer input, or last the rule's output),
    received as ``value``; it depends on ``inputs`` = (x, the parameters, the sublayer values
    before it), and its backward is the worker's vector-Jacobian product."""

    @staticmethod
    def forward(ctx, call, k, value, *inputs):
        ctx.call, ctx.k = call, k
        ctx.shapes = [(tuple(t.shape), t.dtype) for t in inputs]
        return value.clone()

    @staticmethod
    def backward(ctx, grad):
        grads = ctx.call.vjp(ctx.k, grad)
        if not isinstance(grads, list) or len(grads) != len(ctx.shapes):
            fail("MyRule's backward gave the wrong number of gradients")
        out = [
            None if g is None else as_tensor(g, "a gradient of MyRule", shape).to(dtype)
            for g, (shape, dtype) in zip(grads, ctx.shapes, strict=True)
        ]
        return (None, None, None, *out)


class _Call:
    """One remote forward call: its id in the worker, set once the worker has answered."""

    def __init__(self, stub):
        self.stub, self.id = stub, None

    def vjp(self, k: int, grad: torch.Tensor) -> list:
        return self.stub.observe("rule_vjp", self.id, k, grad.detach())


class RemoteRule(Rule):
    """The student's rule, built in its worker from ``cfg``; ``stub`` is set per submission by
    :func:`remote_rule`. ``is_rule``: the worker's report that the class subclasses Rule."""

    stub = None
    seed = 0
    ready: list = []  # answers of rule_new fetched ahead (:meth:`prefetch`)

    @classmethod
    def prefetch(cls, cfg, count: int) -> None:
        """Build ``count`` rules in the worker now, so building a model takes no remote call
        (it happens while this thread holds torch's global generator, ``setups.seeded``)."""
        cls.ready = [cls.stub.observe("rule_new", dataclasses.asdict(cfg), cls.seed)
                     for _ in range(count)]  # fmt: skip

    def __init__(self, cfg):
        super().__init__(cfg)
        fields = dataclasses.asdict(cfg)
        ready = type(self).ready
        seen = ready.pop(0) if ready else self.stub.observe("rule_new", fields, self.seed)
        if not (isinstance(seen, dict) and isinstance(seen.get("params"), dict)):
            fail("MyRule(cfg) did not describe its parameters")
        self.handle, self.is_rule = seen.get("handle"), seen.get("is_rule") is True
        values = [as_tensor(v, f"MyRule's parameter {n!r}") for n, v in seen["params"].items()]
        if sum(v.numel() for v in values) > MAX_PARAMS:
            fail(f"MyRule has more than {MAX_PARAMS:,} parameters")
        if not all(v.is_floating_point() for v in values):
            fail("MyRule's parameters must be floating-point tensors")
        self.names = list(seen["params"])
        self.mirror = nn.ParameterList(nn.Parameter(v.clone()) for v in values)

    def named_student_parameters(self) -> list[tuple[str, nn.Parameter]]:
        """The parameters under the student's own names."""
        return list(zip(self.names, self.mirror, strict=True))

    def forward(self, x, sublayer):
        params = list(self.mirror)
        call, values = _Call(self.stub), []
        inputs = [x, *params]

        def on_ask(h):
            h = as_tensor(h, "what MyRule passes its sublayer", tuple(x.shape)).to(x.dtype)
            value = sublayer(_Step.apply(call, len(values), h, *inputs, *values))
            values.append(value)
            return value.detach()

        seen = self.stub.observe(
            "rule_forward", self.handle, x.detach(), [p.detach() for p in params],
            torch.is_grad_enabled(), on_ask=on_ask,
        )  # fmt: skip
        if not isinstance(seen, dict):
            fail("MyRule's forward did not answer")
        call.id = seen.get("call")
        out = as_tensor(seen.get("out"), "MyRule(cfg)(x, sublayer)", tuple(x.shape)).to(x.dtype)
        beta = seen.get("beta")
        self.gates = {"beta": beta} if isinstance(beta, torch.Tensor) else {}
        return _Step.apply(call, len(values), out, *inputs, *values)


def remote_rule(stub, seed: int = 0) -> type:
    """A RemoteRule class for the student's class behind ``stub`` (a ``remote.Stub``)."""
    return type("StudentRule", (RemoteRule,), {"stub": stub, "seed": seed, "ready": []})
