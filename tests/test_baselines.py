"""The trivial baselines against independent computations: gyroscope's closed forms by a
per-sample loop (numpy least squares, matrix exponentials), the Witten–Bell n-grams by a
dictionary implementation, echo's noise floor by its definition."""

import math
import random
from collections import Counter

import numpy as np
import pytest
import torch

from geolab.experiments import baselines
from geolab.tasks import Task, get_task


def _turned(a, b, i, j):
    """b rotated in the coordinate plane (i, j) by the angle from (a_i, a_j) to (b_i, b_j)."""
    ang = math.atan2(b[j], b[i]) - math.atan2(a[j], a[i])
    out = b.copy()
    out[i] = math.cos(ang) * b[i] - math.sin(ang) * b[j]
    out[j] = math.sin(ang) * b[i] + math.cos(ang) * b[j]
    return out


def test_gyroscope_closed_forms_by_hand():
    task = get_task("gyroscope", steps=7, n_train=30, n_val=4, seed=5)
    idx = torch.arange(4)
    x, y, _ = task.batch("val", idx)
    x, y = x.double(), y.double()
    got = baselines.gyroscope_predictions(task, x, idx)
    theta = task.info["train"]["theta"].double()
    c, s = theta.cos().mean().item(), theta.sin().mean().item()
    xs = x.numpy()
    for n in range(4):
        i, j = task.info["val"]["plane"][n].tolist()
        known, two, lsq = [], [], []
        for t in range(xs.shape[1]):
            b = xs[n, t]
            if t == 0:
                first = b.copy()
                first[i], first[j] = c * b[i] - s * b[j], s * b[i] + c * b[j]
                known.append(first)
                two.append(b)
                lsq.append(b)
                continue
            a = xs[n, t - 1]
            known.append(_turned(a, b, i, j))
            top = np.argsort(-np.abs(b - a))[:2]  # the two coordinates that moved most
            two.append(_turned(a, b, *top))
            past, later = xs[n, :t], xs[n, 1 : t + 1]  # rows: states k and k + 1
            coef = np.linalg.lstsq(past.T, b, rcond=baselines.LSQ_RTOL)[0]
            lsq.append(later.T @ coef)
        names = baselines.GYROSCOPE
        np.testing.assert_allclose(got[names[1]][n].numpy(), np.array(known), atol=1e-9)
        np.testing.assert_allclose(got[names[2]][n].numpy(), np.array(two), atol=1e-9)
        np.testing.assert_allclose(got[names[3]][n].numpy(), np.array(lsq), atol=1e-6)
    # from the second position on, both angle-of-the-last-two-states predictors are the true
    # rotation (float32 states: ~1e-7); the least squares map is exact from the fourth on (the
    # states span the plane and the fixed part after three)
    for name in names[1:3]:
        assert (got[name][:, 1:] - y[:, 1:]).abs().max() < 1e-5
    assert (got[names[3]][:, 3:] - y[:, 3:]).abs().max() < 1e-4
    found = baselines.regression(task, [idx])
    for name in names:
        assert found[name] == pytest.approx(((got[name] - y) ** 2).mean().item())


def _witten_bell(train: list[int], vocab: int, order: int, history: tuple, w: int) -> float:
    """p_order(w | history) by counting with dictionaries (the module docstring's recursion)."""
    uni = Counter(train)
    p = (uni[w] + 1) / (len(train) + vocab)
    for n in range(2, order + 1):
        if len(history) < n - 1:
            break
        h = tuple(history[len(history) - (n - 1) :])
        grams = Counter(tuple(train[k : k + n]) for k in range(len(train) - n + 1))
        c_h = sum(c for g, c in grams.items() if g[:-1] == h)
        t_h = len({g[-1] for g in grams if g[:-1] == h})
        if c_h:
            p = (grams.get((*h, w), 0) + t_h * p) / (c_h + t_h)
    return p


def test_witten_bell_ngrams_by_hand():
    rng = random.Random(0)
    vocab = 4
    train = [rng.choice([0, 1, 1, 2, 3, 0, 1]) for _ in range(60)]
    val = [rng.randrange(vocab) for _ in range(12)]
    seq = 5
    task = Task(
        "t",
        "tokens",
        "",
        seq,
        {"train": torch.tensor(train), "val": torch.tensor(val)},
        vocab_size=vocab,
        stream=True,
    )
    starts = torch.tensor([0, 6])
    found = baselines.text(task, [starts])
    assert list(found) == ["unigram", "bigram", "trigram", "4-gram", "5-gram"]
    for order, name in baselines.NGRAM.items():
        logs = []
        for s0 in starts.tolist():
            window = val[s0 : s0 + seq + 1]
            for t in range(1, seq + 1):  # target window[t], its context window[:t]
                p = _witten_bell(train, vocab, order, tuple(window[:t]), window[t])
                logs.append(math.log(p))
        assert found[name] == pytest.approx(math.exp(-sum(logs) / len(logs)), rel=1e-12)


def test_ngram_orders_fit_int64_keys():
    assert baselines.ngram_orders(65) == [1, 2, 3, 4, 5]
    assert baselines.ngram_orders(33278) == [1, 2, 3, 4]


def test_echo_floor_is_the_fresh_noise_and_makes_the_task_undecidable():
    task = get_task("echo", dim=8, steps=40, n_train=4, n_val=6, seed=2)
    idx = torch.arange(6)
    found = baselines.of_task(task, {"batch_size": 3})
    _, y, _ = task.batch("val", idx)
    key = task.info["val"]["key"].double()
    noise = y.double() - key[:, None, :]
    assert found["floor"] == pytest.approx((noise**2).mean().item())
    assert found["floor"] == pytest.approx(1e-6, rel=0.2)  # σ = 1e-3
    assert found["best"] == "running mean of the inputs" and found["undecidable"] is True
    assert "floor" not in baselines.of_task(
        get_task("near_pi", dim=4, steps=5, n_val=3), {"batch_size": 3}
    )
