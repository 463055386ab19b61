"""Per-layer compilation (geolab.compiling): one compiled step serves every layer, every later
call and every slider move, in training and in the views' stack, with the eager numbers.

The fast tests trace with dynamo and count graphs (``CompileCounter``, no code generation); the
slow ones compile with inductor (tens of seconds per rule on a CPU)."""

import pytest
import torch
import torch._dynamo
from torch._dynamo.testing import CompileCounter

from geolab import compiling, stack
from geolab.config import GeoConfig
from geolab.model import GeoTransformer

TOKENS = torch.randint(0, 11, (1, 8), generator=torch.Generator().manual_seed(0))


def _cfg(rule, n_layer=5, **fields):
    return GeoConfig(
        residual=rule, n_layer=n_layer, d_model=16, n_head=2, seq_len=8, vocab_size=11, **fields
    )


@pytest.fixture
def counter():
    torch._dynamo.reset()
    compiling.compiled.cache_clear()
    yield CompileCounter()
    torch._dynamo.reset()
    compiling.compiled.cache_clear()


@pytest.mark.parametrize("rule", ["mgt", "edelta", "mhc"])
def test_views_trace_one_step_for_every_layer_depth_and_slider(monkeypatch, counter, rule):
    cfg = _cfg(rule)
    stack.clear()
    want = stack.stack_states(cfg, 0, TOKENS, every_step=True)
    monkeypatch.setenv(compiling.ENV, "1")
    monkeypatch.setattr(
        stack, "checked", lambda step, *a: compiling.checked(step, *a, backend=counter)
    )
    got = stack.stack_states(cfg, 0, TOKENS, every_step=True)
    torch.testing.assert_close(got, want, rtol=0, atol=0)  # traced, then run as eager ops
    frames = counter.frame_count
    assert frames >= 1
    moves = [_cfg(rule, n_layer=3), _cfg(rule, n_layer=7)]  # depths: the 1/√steps scale moves
    if rule == "mgt":
        moves += [_cfg(rule, beta0=0.3), _cfg(rule, lam=1.5, eps=0.1, beta0=0.3)]
    if rule == "edelta":
        moves.append(_cfg(rule, gamma0=0.2))
    for moved in moves:
        got = stack.stack_states(moved, 0, TOKENS, every_step=True)
        monkeypatch.setenv(compiling.ENV, "0")
        torch.testing.assert_close(got, stack.stack_states(moved, 0, TOKENS, every_step=True))
        monkeypatch.setenv(compiling.ENV, "1")
    assert counter.frame_count == frames  # no move traced anything again


def test_training_traces_one_step_for_every_layer(counter):
    torch.manual_seed(0)
    model = GeoTransformer(_cfg("edelta", n_layer=4))
    plain = model(TOKENS)
    model.compile_layers(backend=counter)
    got = model(TOKENS)
    torch.testing.assert_close(got, plain, rtol=0, atol=0)
    frames = counter.frame_count
    got.square().sum().backward()  # the backward of the traced graphs
    model(TOKENS).sum().backward()
    assert counter.frame_count == frames  # four layers, two calls: each graph traced once


def test_bad_compile_settings_are_refused(monkeypatch):
    monkeypatch.setenv(compiling.ENV, "yes")
    with pytest.raises(ValueError, match=r"GEOLAB_COMPILE='yes' is not allowed; expected 0 or 1"):
        compiling.views_compile()
    model = GeoTransformer(_cfg("preln", n_layer=1))
    with pytest.raises(ValueError, match=r"compile mode 'fast' is not allowed"):
        model.compile_layers(mode="fast")
    assert model.layer_compile is None


def test_inductor_cache_goes_to_the_geolab_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("GEOLAB_CACHE", str(tmp_path))
    assert compiling.use_cache_folder() == str(tmp_path / "inductor")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/elsewhere")
    assert compiling.use_cache_folder() == "/elsewhere"  # the user's choice stays


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["mgt", "edelta"])
def test_inductor_views_equal_eager_to_rounding(monkeypatch, tmp_path, rule):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    compiling.compiled.cache_clear()
    stack.clear()
    for moved in (_cfg(rule), _cfg(rule, n_layer=3)):  # a new depth reuses the compiled step
        monkeypatch.setenv(compiling.ENV, "0")
        want = stack.stack_states(moved, 0, TOKENS, every_step=True)
        monkeypatch.setenv(compiling.ENV, "1")
        got = stack.stack_states(moved, 0, TOKENS, every_step=True)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    torch._dynamo.reset()
    compiling.compiled.cache_clear()
