"""The DDL controls protocol (geolab.experiments.ddl_controls): bare operators against a dense
computation, matched sizes, the gap series the rule reads, and the verdicts of a tiny run."""

import pytest
import torch

from geolab.experiments import ddl_controls as dc
from geolab.experiments import settled
from geolab.experiments import verdicts as v

F64 = torch.float64


def _dense(kind: str, op: dc.BareOperator, x: torch.Tensor) -> torch.Tensor:
    """ŷ per sample with explicit loops in float64, from the operator's own nets."""
    out = []
    for row in x.double():
        k = op.k.double()(row)
        kh = k / k.norm()
        beta = 2 * torch.sigmoid(op.beta.double()(row))[0]
        value = op.value.double()(row)
        if kind == "ddl":
            out.append(row + beta * kh * (value[0] - kh @ row))
        elif kind == "ddl_write":
            out.append(row + beta * kh * value[0])
        else:
            state = row[:, None].repeat(1, dc.STATE_COLUMNS)  # x 1ᵀ
            new = state + beta * torch.outer(kh, value - kh @ state)
            weight = op.conv.double()[:, :, -1] * op.read.double()
            out.append((new * weight).sum(-1))
    op.float()
    return torch.stack(out)


@pytest.mark.parametrize("kind", dc.RULES)
def test_bare_operators_match_a_dense_per_sample_computation(kind):
    torch.manual_seed(0)
    op = dc.BareOperator(kind, 6, 12)
    x = torch.randn(5, 6)
    fast = op(x).double()
    torch.testing.assert_close(fast, _dense(kind, op, x), rtol=1e-4, atol=1e-5)


def test_the_controls_differ_from_ddl_only_where_they_say():
    torch.manual_seed(1)
    ddl, write = dc.BareOperator("ddl", 6, 12), dc.BareOperator("ddl_write", 6, 12)
    write.load_state_dict(ddl.state_dict())  # same nets: only the erase term differs
    x = torch.randn(4, 6)
    kh = torch.nn.functional.normalize(ddl.k(x), dim=-1)
    beta = 2 * torch.sigmoid(ddl.beta(x))
    erase = beta * kh * (kh * x).sum(-1, keepdim=True)
    torch.testing.assert_close(write(x) - erase, ddl(x), rtol=1e-5, atol=1e-6)
    sizes = {k: sum(p.numel() for p in dc.BareOperator(k, 64, 128).parameters()) for k in dc.RULES}
    assert sizes["ddl"] == sizes["ddl_write"]
    assert v.size_spread(sizes.values()) <= v.SIZE_TOLERANCE  # ddl_state's value net: 4 outputs


def test_near_pi_controls_are_matched_to_ddl_within_the_size_check():
    s = dc.SCALES["small"]
    task = dc.near_pi_task(s, 2001)
    counts = {r: dc.n_params(dc.near_pi_config(s, task, r)) for r in dc.RULES}
    assert v.size_spread(counts.values()) < 0.01


def test_gap_series_reads_the_rule_steps_from_series_or_curves():
    bare = {"series": {"steps": [2, 4, 8], "mse": [1.0, 0.5, 0.25]}}
    stack = {"val_curve": {"metric": "mse", "steps": [1, 2, 4, 6, 8], "values": [2, 2, 1, 1, 1]}}
    gap = dc.gap_series(bare, stack, 8)
    assert gap["steps"] == list(settled.reads(8))
    assert gap["values"] == pytest.approx([-0.6931472, -0.6931472, -1.3862944])


def test_a_tiny_run_judges_two_claims_per_task_with_sizes_and_the_rule():
    from geolab.experiments.runner import run_protocol

    result, _ = run_protocol(dc, "tiny", log=lambda m: None, png=False)
    ids = [h["id"] for h in result["hypotheses"]]
    assert ids == [f"{t}: {c}" for t in dc.TASKS for c in dc.CLAIMS]
    for h in result["hypotheses"]:
        assert settled.RULE_HASH in h["rule"] and h["sizes"]
        assert v.FEW_SEEDS in h["reasons"]  # tiny trains one seed
    assert set(result["summary"]["table"]) == {f"{t}/{r}" for t in dc.TASKS for r in dc.RULES}
