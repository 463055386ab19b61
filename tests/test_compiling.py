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
    # Traced, then run as eager ops: the same bits, but for mhc's Sinkhorn, whose traced CPU
    # graph divides by sums where eager runs log_softmax rounds (geolab.mixing.sinkhorn).
    exact = {"rtol": 1e-5, "atol": 1e-6} if rule == "mhc" else {"rtol": 0, "atol": 0}
    torch.testing.assert_close(got, want, **exact)
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


def test_views_compile_every_rule_past_dynamo_s_default_of_eight_graphs(monkeypatch, counter):
    # One graph per rule class (and mid-step flag) on the one views step: "compare all" asks
    # for 16. Past dynamo's default limit of 8 the later rules would run eagerly, uncompiled.
    from geolab import explore

    rules = explore.rank_rules()
    assert len(rules) > 8
    monkeypatch.setenv(compiling.ENV, "1")
    monkeypatch.setattr(
        stack, "checked", lambda step, *a: compiling.checked(step, *a, backend=counter)
    )
    stack.clear()
    for rule in rules:
        stack.stack_states(explore.rank_config(rule, 2, 16, 8), 0, TOKENS)
    assert counter.frame_count == len(rules)  # one graph each, none left to eager


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
@pytest.mark.parametrize("rule", ["mgt", "edelta", "mhc"])
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


def test_a_bad_compile_mode_is_one_line_naming_it(capsys):
    from geolab.cli import main
    from geolab.train import TrainConfig

    with pytest.raises(ValueError, match=r"^TrainConfig.compile_mode='fast' is not allowed"):
        TrainConfig(compile=True, compile_mode="fast")
    with pytest.raises(
        ValueError, match=r"compile_mode='reduce-overhead' is not allowed; it needs"
    ):
        TrainConfig(compile_mode="reduce-overhead")
    for argv, named in [
        (["--compile", "--compile-mode", "fast"], "--compile-mode 'fast' is not allowed; allowed:"),
        (["--compile-mode", "reduce-overhead"], "--compile-mode reduce-overhead is not allowed"),
    ]:
        for command in (["train", "--task", "gyroscope"], ["reproduce", "edelta_benchmarks"]):
            dry = ["--dry-run"] if command[0] == "reproduce" else []  # checked before anything
            assert main([*command, *argv, *dry]) == 2
            err = capsys.readouterr().err
            assert named in err and err.count("\n") == 1, err


def _recorded_modes(monkeypatch) -> list:
    """torch.compile replaced by a recorder of its mode that returns the function as it is."""
    modes = []

    def record(fn, dynamic=None, mode=None, backend=None):
        modes.append(mode)
        return fn

    monkeypatch.setattr(compiling.torch, "compile", record)
    return modes


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_training_s_compile_mode_reaches_torch_compile(monkeypatch, counter, tmp_path, mode):
    from geolab.cli import main

    modes = _recorded_modes(monkeypatch)
    flags = [] if mode is None else ["--compile-mode", mode]
    argv = "train --task gyroscope --residual preln --layers 1 --d-model 16 --heads 2 --steps 2"
    argv += " --batch-size 4 --n-train 16 --n-val 4 --device cpu --no-progress --compile"
    assert main([*argv.split(), *flags, "--out", str(tmp_path / "run")]) == 0
    assert modes == [mode]


def test_reproduce_s_compile_mode_reaches_every_run_s_train_config(monkeypatch):
    from geolab.cli import main, reproduce
    from geolab.experiments.runs import train_config

    seen = []
    monkeypatch.setattr(reproduce, "estimate", lambda args, module, s, device: seen.append(s))
    argv = ["reproduce", "edelta_benchmarks", "--scale", "tiny", "--dry-run", "--compile"]
    assert main([*argv, "--compile-mode", "reduce-overhead"]) == 0
    tc = train_config(seen[0], seed=0)
    assert tc.compile and tc.compile_mode == "reduce-overhead"
    assert main(argv) == 0
    assert train_config(seen[1], seed=0).compile_mode is None
