"""geolab.disk_cache through notebook 04's curves (``explore.rule_profile``): a kept result is the
computed one bit for bit, any change of its key misses, a damaged file is recomputed, the switch
off writes nothing, and every file lands under the cache folder (here tmp_path)."""

import numpy as np
import pytest
import torch

from geolab import disk_cache, explore, stack
from geolab.explore import rank

SIZES = dict(n_layer=5, d_model=16, seq_len=8, seed=0)
MGT = (("alpha0", 0.1), ("beta0", 0.5), ("lam", 1.0))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The disk cache on, in tmp_path/cache; the process's own caches empty; counts computes."""
    monkeypatch.setenv("GEOLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(disk_cache.ENV, "1")
    monkeypatch.chdir(tmp_path)
    computed = []
    real = rank._profile

    def counted(*key):
        computed.append(key)
        return real(*key)

    monkeypatch.setattr(rank, "_profile", counted)
    forget()
    yield tmp_path / "cache", computed
    forget()


def forget():
    explore.rule_profile.cache_clear()
    stack.clear()


def profile(rule="mgt", fields=MGT, **changes):
    sizes = {**SIZES, **changes}
    return explore.rule_profile(
        rule, sizes["n_layer"], sizes["d_model"], sizes["seq_len"], sizes["seed"], fields
    )


def files(root):
    return sorted(p for p in root.rglob("*") if p.is_file())


def assert_same(a, b):
    for x, y in zip(a[:2], b[:2], strict=True):
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)
    assert a[2].dtype == b[2].dtype and torch.equal(a[2], b[2])
    assert a[3] == b[3]


def test_a_kept_curve_is_the_computed_one_bit_for_bit(cache, monkeypatch):
    root, computed = cache
    first = profile()
    assert len(computed) == 1 and len(files(root)) == 1
    forget()
    kept = profile()
    assert len(computed) == 1  # read, not computed
    assert_same(kept, first)
    assert not kept[0].flags.writeable and not kept[1].flags.writeable
    monkeypatch.setenv(disk_cache.ENV, "0")
    forget()
    assert_same(kept, profile())  # computed again without the cache
    assert len(computed) == 2


@pytest.mark.parametrize(
    "change",
    [
        dict(seed=1),
        dict(n_layer=4),
        dict(d_model=8),
        dict(seq_len=6),
        dict(fields=(("alpha0", 0.1), ("beta0", 0.45), ("lam", 1.0))),
        dict(rule="preln", fields=()),
    ],
)
def test_any_change_of_the_key_misses(cache, change):
    root, computed = cache
    profile()
    forget()
    profile(**change)
    assert len(computed) == 2 and len(files(root)) == 2


@pytest.mark.parametrize("what", ["geolab's source", "threads", "compile"])
def test_a_change_of_the_code_or_the_environment_misses(cache, monkeypatch, what):
    root, computed = cache
    profile()
    forget()
    if what == "threads":
        monkeypatch.setattr(torch, "get_num_threads", lambda: 7)
    elif what == "compile":
        monkeypatch.setattr(disk_cache, "views_compile", lambda: True)
    else:
        monkeypatch.setattr(disk_cache, "package_digest", lambda: "an edited geolab")
    profile()
    assert len(computed) == 2 and len(files(root)) == 2


def test_a_class_without_source_file_has_no_key():
    cls = type("PromptRule", (), {"__module__": "a_cell_with_no_file"})  # a prompt's class
    assert disk_cache.key("k", (cls,), a=1) is None
    assert disk_cache.key("k", (torch.nn.Linear,), a=1) is not None


@pytest.mark.parametrize("damage", ["truncate", "garbage", "flip", "empty", "other key"])
def test_a_damaged_file_is_recomputed_never_read(cache, damage):
    root, computed = cache
    first = profile()
    (path,) = files(root)
    raw = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "garbage":
        path.write_bytes(b"not a zip file" * 100)
    elif damage == "flip":  # a byte in the middle of the states' data: the zip's CRC fails
        mid = len(raw) // 2
        path.write_bytes(raw[:mid] + bytes([raw[mid] ^ 0xFF]) + raw[mid + 1 :])
    elif damage == "empty":
        path.write_bytes(b"")
    else:  # a valid file of another curve under this name
        forget()
        profile(seed=1)
        other = next(p for p in files(root) if p != path)
        path.write_bytes(other.read_bytes())
    forget()
    again = profile()
    assert_same(again, first)
    assert np.isfinite(again[0]).all() and np.isfinite(again[1]).all()
    forget()
    n = len(computed)
    assert_same(profile(), first)  # the recomputed result was written again, whole
    assert len(computed) == n


def test_stored_arrays_are_checked():
    n, s, d = 4, 3, 2
    good = {
        "ranks": np.array([1.0, 0.5, np.nan, np.nan]),
        "residual": np.array([1.0, 0.4, np.nan, np.nan]),
        "states": np.zeros((n, s, d)),
        "lost": np.array(2),
    }
    ranks, residual, states, lost = rank._from_disk(n, s, d, dict(good))
    assert lost == 2 and states.dtype == torch.float64 and not ranks.flags.writeable
    bad = [
        {"lost": np.array(-1)},  # NaN where no precision was lost
        {"lost": np.array(3)},  # NaN before the layer lost
        {"lost": np.array(7)},
        {"lost": np.array(2.0)},
        {"states": np.zeros((n, s, d + 1))},
        {"states": np.full((n, s, d), np.inf)},
        {"ranks": np.array([1, 1, 1, 1])},
    ]
    for change in bad:
        with pytest.raises(ValueError):
            rank._from_disk(n, s, d, {**good, **change})


def test_off_writes_nothing_and_files_land_only_in_the_cache_folder(cache, monkeypatch):
    root, computed = cache
    tmp = root.parent
    monkeypatch.setenv(disk_cache.ENV, "0")
    explore.rank_view(["mgt", "preln"], 5, d_model=16, seq_len=8)
    assert files(tmp) == []
    monkeypatch.setenv(disk_cache.ENV, "1")
    forget()
    explore.rank_view(["mgt", "preln"], 5, d_model=16, seq_len=8)
    written = files(tmp)
    assert len(written) == 3  # mgt, preln, pure attention
    assert all(p.parent == root / "views" / "rank_profile" and p.suffix == ".npz" for p in written)


@pytest.mark.parametrize("value", ["2", "yes", "off"])
def test_a_bad_switch_is_one_line_naming_it(monkeypatch, value):
    monkeypatch.setenv(disk_cache.ENV, value)
    with pytest.raises(ValueError, match=f"GEOLAB_DISK_CACHE='{value}' is not allowed"):
        disk_cache.enabled()


def test_prune_keeps_the_folder_under_its_budget_newest_kept(tmp_path):
    import os

    for i in range(5):
        path = tmp_path / f"{i}.npz"
        path.write_bytes(b"x" * 100)
        os.utime(path, (i, i))
    disk_cache.prune(tmp_path, budget=250)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["3.npz", "4.npz"]


def test_a_failed_write_warns_and_the_view_still_runs(cache, monkeypatch):
    root, computed = cache
    root.parent.joinpath("cache").write_text("a file where the folder should be")
    with pytest.warns(UserWarning, match="could not write"):
        first = profile()
    assert np.isfinite(first[0]).all()
