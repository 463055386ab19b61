"""A1 hidden checks: run only by `geolab grade`, never shipped in the student release.

Properties the public checks do not name: the operator keeps the dtype it is given (float32 in,
float32 out: a model runs in float32) and handles two leading batch dimensions with a β per
matrix (Su & You 2026, Eq. 1 applied per head and per token).
"""

import torch

from geolab import operators as ref
from geolab.assignments.checks import as_tensor, close, describe, fail, forbid
from geolab.assignments.properties import Properties

BANNED = ["geolab.operators.delta_operator", "geolab.operators.householder"]


def check_delta_operator(fn, seed: int = 0):
    g = torch.Generator().manual_seed(seed + 13)
    k32 = torch.randn(3, 4, generator=g)
    k = torch.randn(2, 3, 5, generator=g, dtype=torch.float64)
    beta = torch.rand(2, 3, generator=g, dtype=torch.float64) * 2

    checks = Properties()

    @checks.add("hidden · delta_operator: float32 in, float32 out")
    def keeps_dtype():
        with forbid(BANNED, fn, label=f"delta_operator({describe(k=k32)}, 0.5) in float32"):
            out = as_tensor(fn(k32, 0.5), "delta_operator", (3, 4, 4))
        if out.dtype != torch.float32:
            fail(f"float32 keys gave a {out.dtype} operator; keep the dtype of k")
        close(out, ref.delta_operator(k32, 0.5), "delta_operator on float32 keys", atol=1e-5)

    @checks.add("hidden · delta_operator: two batch dimensions, a β per matrix")
    def two_batch_dims():
        with forbid(BANNED, fn, label=f"delta_operator({describe(k=k, beta=beta)})"):
            out = fn(k, beta)
        close(out, ref.delta_operator(k, beta), f"delta_operator({describe(k=k, beta=beta)})")

    return checks.run()


TASKS = {"delta_operator": check_delta_operator}
