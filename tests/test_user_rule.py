"""A rule of your own: written in your own file, ``@register``ed, it trains with the geolab
trainer, is probed by ``rank_profile`` and appears in notebook 04's rule selector — without any
edit to geolab."""

import importlib.util
import math

import pytest
import torch
from conftest import REPO, load_app

from geolab import GeoConfig, GeoTransformer, rank_profile
from geolab.rules import RESIDUALS, unregister
from geolab.tasks import get_task
from geolab.train import TrainConfig, train

USER_RULE = '''
import torch
from torch import nn

from geolab import Rule, register
from geolab.layers import make_norm


@register("scaled_preln")
class ScaledPreLN(Rule):
    """Pre-LN with one learnable scalar on the branch: X' = X + s·F(LN X), s = 1 at init."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.ln = make_norm(cfg.norm, cfg.d_model)
        self.s = nn.Parameter(torch.ones(()))

    def forward(self, x, sublayer):
        self.keep(s=self.s)
        return x + self.s * sublayer(self.ln(x))
'''


@pytest.fixture
def user_rule(tmp_path):
    path = tmp_path / "my_rules.py"
    path.write_text(USER_RULE)
    spec = importlib.util.spec_from_file_location("my_rules", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module.ScaledPreLN
    unregister("scaled_preln")


def test_a_user_rule_trains_probes_and_shows_in_notebook_04(user_rule):
    assert RESIDUALS["scaled_preln"] is user_rule
    task = get_task("copy", seed=0, m=4, vocab_size=8, n_train=256, n_val=32)
    cfg = GeoConfig(residual="scaled_preln", n_layer=2, d_model=16, n_head=2, **task.model_fields())
    tc = TrainConfig(steps=20, batch_size=16, lr=3e-3, warmup=2, eval_every=0, ckpt_every=0)
    result = train(cfg, task, tc)
    assert len(result.history) == 20 and math.isfinite(result.metrics["loss"])
    assert result.history[-1]["loss"] < result.history[0]["loss"]
    assert all(isinstance(r, user_rule) for r in result.model.rules)

    torch.manual_seed(0)
    model = GeoTransformer(cfg.replace(n_layer=3)).eval()
    profile = rank_profile(model, torch.randint(0, 8, (2, cfg.seq_len)))
    assert profile.shape == (7,) and torch.all((profile > 0) & (profile <= 1))

    # the controls come with an answer to 04's question (any answer)
    outputs, defs = load_app(REPO / "notebooks" / "04_rank_collapse.py").run(
        defs={"answer": "exactly 0"}
    )
    assert "scaled_preln" in defs["rules"].options


def test_a_taken_name_or_a_non_rule_is_refused(user_rule):
    from geolab import register

    with pytest.raises(ValueError, match="taken by geolab.rules.classic.PreLN"):
        register("preln")(user_rule)
    with pytest.raises(ValueError, match="subclass geolab.rules.Rule"):
        register("not_a_rule")(dict)
    with pytest.raises(ValueError, match="GeoConfig.residual='nope'"):
        GeoConfig(residual="nope", vocab_size=8)
