"""Tasks (docs/design.md §6): shapes, determinism by seed, and each task's defining property."""

import argparse
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from geolab.cli.tasks import add_tasks_cli
from geolab.tasks import TASK_LINES, TASKS, get_task, rotate_in_planes

SMALL = {"n_train": 24, "n_val": 8}


def dense_rotation(dim: int, planes, theta: float) -> torch.Tensor:
    """Independent reference: the rotation matrix by θ in each coordinate plane (i, j)."""
    R = torch.eye(dim, dtype=torch.float64)
    c, s = math.cos(theta), math.sin(theta)
    for i, j in planes:
        R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


@pytest.mark.parametrize(
    "name, options, x_shape, y_shape",
    [
        ("copy", {"m": 5, "vocab_size": 7}, (24, 9), (24, 9)),
        ("echo", {"steps": 20}, (24, 19, 64), (24, 19, 64)),
        ("gyroscope", {"steps": 20}, (24, 19, 16), (24, 19, 16)),
        ("inversion", {"seq_len": 6}, (24, 6, 64), (24, 6, 64)),
        ("near_pi", {"steps": 20}, (24, 19, 64), (24, 19, 64)),
        ("near_pi_multi", {"steps": 20}, (24, 19, 64), (24, 19, 64)),
    ],
)
def test_shapes_and_determinism(name, options, x_shape, y_shape):
    task = get_task(name, seed=3, **options, **SMALL)
    assert task.x["train"].shape == x_shape and task.y["train"].shape == y_shape
    assert task.x["val"].shape[0] == 8 and task.seq_len == x_shape[1]
    assert task.n_samples("train") == 24 and task.eval_index("val").tolist() == list(range(8))
    again = get_task(name, seed=3, **options, **SMALL)
    other = get_task(name, seed=4, **options, **SMALL)
    for split in ("train", "val"):
        assert torch.equal(task.x[split], again.x[split])
        assert torch.equal(task.y[split], again.y[split])
        assert not torch.equal(task.x[split], other.x[split])
    # The validation set does not depend on the size of the training set.
    bigger = get_task(name, seed=3, **options, n_train=40, n_val=8)
    assert torch.equal(task.x["val"], bigger.x["val"])
    if task.kind == "regression":
        assert task.x["train"].dtype == torch.float32 and task.d_in == x_shape[-1]
        assert task.model_fields() == {
            "seq_len": x_shape[1],
            "d_in": x_shape[-1],
            "d_out": y_shape[-1],
        }


def test_defaults_match_the_spec_table():
    echo = get_task("echo")
    assert echo.x["train"].shape == (900, 127, 64) and echo.x["val"].shape == (100, 127, 64)
    gyro_sizes = TASKS["gyroscope"].__defaults__
    assert gyro_sizes == (0, 16, 256, 0.1, 2.5, 9000, 1000, "geolab")
    inv = get_task("inversion")
    assert inv.x["train"].shape[0] == 500 and inv.d_in == 64
    assert TASKS["near_pi"].__defaults__ == (0, "single", None, 64, 128, 1000, 500)


def test_echo_targets_equal_the_key_within_noise():
    task = get_task("echo", seed=1, steps=16, **SMALL)
    key = task.info["train"]["key"]
    assert torch.allclose(key.norm(dim=-1), torch.ones(24))
    dev_y = task.y["train"] - key[:, None, :]
    dev_x = task.x["train"] - key[:, None, :]
    # N(0, 0.001²) noise: nothing beyond 6σ among 24·15·64 draws, and the spread is σ.
    assert dev_y.abs().max() < 6e-3 and dev_x.abs().max() < 6e-3
    assert abs(dev_y.std().item() - 1e-3) < 1e-4
    # Inputs are steps 1..T−1 and targets steps 2..T of one trajectory.
    assert torch.equal(task.x["train"][:, 1:], task.y["train"][:, :-1])


def test_gyroscope_steps_are_rotations_by_theta_in_one_plane():
    task = get_task("gyroscope", seed=2, steps=12, **SMALL)
    x, y = task.x["train"].double(), task.y["train"].double()
    theta, planes = task.info["train"]["theta"], task.info["train"]["plane"]
    assert ((theta >= 0.1) & (theta <= 2.5)).all() and theta.std() > 0.3
    assert torch.allclose(x.norm(dim=-1), torch.ones(24, 11, dtype=torch.float64), atol=1e-6)
    assert torch.allclose(y.norm(dim=-1), torch.ones(24, 11, dtype=torch.float64), atol=1e-6)
    assert (planes[:, 0] < planes[:, 1]).all()
    assert len({tuple(p) for p in planes.tolist()}) > 5  # planes vary across samples
    for n in range(24):
        R = dense_rotation(16, [planes[n].tolist()], theta[n].item())
        assert torch.allclose(y[n], x[n] @ R.T, atol=1e-6)
        i, j = planes[n].tolist()
        angle = torch.atan2(
            y[n, :, j] * x[n, :, i] - y[n, :, i] * x[n, :, j],
            y[n, :, i] * x[n, :, i] + y[n, :, j] * x[n, :, j],
        )
        assert torch.allclose(angle, torch.full_like(angle, theta[n].item()), atol=1e-4)


def test_inversion_targets_are_minus_inputs():
    task = get_task("inversion", seed=5, seq_len=16, n_train=200, n_val=8)
    assert torch.equal(task.y["train"], -task.x["train"])
    x = task.x["train"]
    assert abs(x.mean().item()) < 0.02 and abs(x.std().item() - 1) < 0.02
    assert task.metrics == ("mse", "cos")


@pytest.mark.parametrize(
    "name, theta, planes",
    [
        ("near_pi", 3.10, [(0, 1)]),
        ("near_pi_multi", 3.14, [(2 * i, 2 * i + 1) for i in range(32)]),
    ],
)
def test_near_pi_rotates_by_the_specified_angle(name, theta, planes):
    task = get_task(name, seed=0, steps=10, **SMALL)
    assert task.info["theta"] == theta
    x, y = task.x["train"].double(), task.y["train"].double()
    R = dense_rotation(64, planes, theta)
    assert torch.allclose(y, x @ R.T, atol=1e-6)
    a = torch.atan2(
        y[..., 1] * x[..., 0] - y[..., 0] * x[..., 1], y[..., 0] * x[..., 0] + y[..., 1] * x[..., 1]
    )
    assert torch.allclose(a, torch.full_like(a, theta), atol=1e-4)
    if name == "near_pi":  # only plane (0, 1) moves
        assert torch.equal(x[..., 2:], y[..., 2:])


def test_copy_mask_covers_only_the_second_half():
    m = 6
    task = get_task("copy", seed=0, m=m, vocab_size=5, **SMALL)
    x, y, mask = task.x["train"], task.y["train"], task.mask["train"]
    assert mask.dtype == torch.bool and mask.shape == (24, 2 * m - 1)
    assert (mask.sum(1) == m).all() and not mask[:, : m - 1].any() and mask[:, m - 1 :].all()
    first_half = x[:, :m]
    assert torch.equal(y[mask].view(24, m), first_half)  # masked targets are the copy
    assert torch.equal(x[:, 1:], y[:, :-1]) and x.max() < 5
    assert task.vocab_size == 5 and task.metrics == ("loss", "acc")


def test_losses_match_torch():
    task = get_task("gyroscope", seed=0, steps=8, **SMALL)
    x, y, mask = task.batch("train", torch.arange(5))
    assert mask is None
    out = torch.randn_like(y)
    assert torch.allclose(task.loss(out, y), F.mse_loss(out, y))
    copy = get_task("copy", seed=0, m=4, vocab_size=6, **SMALL)
    x, y, mask = copy.batch("val", torch.tensor([0, 3, 7]))
    logits = torch.randn(3, 7, 6)
    want = F.cross_entropy(logits[mask], y[mask])
    assert torch.allclose(copy.loss(logits, y, mask), want)


def test_stream_batches_are_shifted_windows():
    from geolab.data import Corpus
    from geolab.tasks import _text_task

    corpus = Corpus(
        {"train": torch.arange(100), "val": torch.arange(50)}, [str(i) for i in range(100)]
    )
    task = _text_task("wikitext2", corpus, seq_len=8)
    x, y, mask = task.batch("train", torch.tensor([0, 91]))
    assert mask is None and torch.equal(x[1], torch.arange(91, 99))
    assert torch.equal(y, x + 1) and task.n_samples("train") == 92
    assert task.eval_index("val").tolist() == [0, 8, 16, 24, 32, 40]
    with pytest.raises(ValueError, match="seq_len=60"):
        _text_task("wikitext2", corpus, seq_len=60)


@settings(max_examples=30, deadline=None)
@given(
    dim=st.integers(2, 12),
    theta=st.floats(-10, 10, allow_nan=False),
    steps=st.integers(1, 40),
    seed=st.integers(0, 10_000),
)
def test_rotate_in_planes_matches_repeated_dense_rotation(dim, theta, steps, seed):
    g = torch.Generator().manual_seed(seed)
    planes = torch.randperm(dim, generator=g)[: 2 * (dim // 2)].view(-1, 2)
    v0 = torch.randn(1, dim, generator=g, dtype=torch.float64)
    traj = rotate_in_planes(v0, torch.tensor([theta], dtype=torch.float64), planes[None], steps)[0]
    R = dense_rotation(dim, planes.tolist(), theta)
    v = v0[0]
    for t in range(steps):
        assert torch.allclose(traj[t], v, atol=1e-9)
        v = R @ v
    assert torch.allclose(traj.norm(dim=-1), v0.norm().expand(steps), atol=1e-9)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: get_task("nope"), "unknown task 'nope'; allowed: copy, echo"),
        (lambda: get_task("echo", n_trian=3), r"no option\(s\) n_trian=3; allowed: dim, steps"),
        (lambda: get_task("echo", n_train=0), "n_train=0 must be a positive integer"),
        (lambda: get_task("gyroscope", steps=1), "steps >= 2"),
        (lambda: get_task("near_pi", mode="triple"), "mode='triple'"),
        (lambda: get_task("near_pi_multi", dim=7), "even for multi"),
        (lambda: get_task("echo", seed=1.5), "seed=1.5"),
        (lambda: get_task("echo", **SMALL).batch("test", torch.tensor([0])), "no split 'test'"),
    ],
)
def test_bad_input_is_rejected(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_tasks_cli_lists_every_task_on_one_line(capsys):
    parser = argparse.ArgumentParser()
    add_tasks_cli(parser.add_subparsers())
    args = parser.parse_args(["tasks"])
    assert args.func(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(TASKS) == list(TASK_LINES)
