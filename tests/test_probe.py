"""record() captures states and gates and always removes its hooks; rank_profile's shape/values."""

import pytest
import torch

from geolab import GeoConfig, GeoTransformer, effective_rank, rank_profile, record


def model_for(rule, layers=3, mlp=True, **kw):
    torch.manual_seed(0)
    cfg = GeoConfig(
        residual=rule,
        n_layer=layers,
        d_model=16,
        n_head=2,
        seq_len=8,
        d_in=16,
        d_out=4,
        mlp=mlp,
        **kw,
    )
    return GeoTransformer(cfg).eval()


def hook_count(model):
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


@pytest.mark.parametrize("rule", ["preln", "mgt", "mhc", "jpmhc", "edelta"])
def test_record_captures_every_step_and_gates(rule):
    model = model_for(rule)
    x = torch.randn(2, 8, 16)
    with record(model) as rec:
        out = model(x)
    assert len(rec.states) == 6 and len(rec.gates) == 6 and len(rec.embedding) == 1
    expected = (2, 8, 4, 16) if rule == "mhc" else (2, 8, 16)
    assert all(s.shape == expected for s in rec.states)
    # The last state, merged and through the head, is the model's output.
    torch.testing.assert_close(model.head(model.norm(model.rule_cls.merge(rec.states[-1]))), out)
    if rule == "mgt":
        assert rec.gates[0]["beta"].shape == (2, 8, 16)
    if rule == "edelta":
        assert set(rec.gates[3]) == {"beta", "gamma"}
    assert hook_count(model) == 0


def test_record_removes_hooks_when_forward_raises():
    model = model_for("mgt")
    with pytest.raises(RuntimeError):
        with record(model):
            model(torch.randn(2, 8, 5))  # wrong input width
    assert hook_count(model) == 0


def test_record_again_and_again_does_not_stack_hooks():
    model = model_for("preln")
    for _ in range(3):
        with record(model) as rec:
            model(torch.randn(1, 8, 16))
        assert len(rec.states) == 6
    assert hook_count(model) == 0


def test_rank_profile_matches_manual_computation():
    model = model_for("mhc", layers=2)
    x = torch.randn(3, 8, 16)
    prof = rank_profile(model, x)
    assert prof.shape == (5,)
    with record(model) as rec:
        model(x)
    manual = [effective_rank(rec.embedding[0]).mean()]
    manual += [effective_rank(s.sum(-2)).mean() for s in rec.states]
    torch.testing.assert_close(prof, torch.stack(manual))
    assert ((prof >= 0) & (prof <= 1)).all()


def test_pure_attention_collapses_and_preln_does_not():
    x = torch.randn(2, 8, 16)
    pure = rank_profile(model_for("noskip", layers=12, mlp=False), x)
    pre = rank_profile(model_for("preln", layers=12, mlp=False), x)
    assert pure.shape == (13,)
    assert pure[-1] < 0.5 * pure[0]
    assert pre[-1] > 0.5 * pre[0]
