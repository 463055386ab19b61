"""Text data through HF ``datasets`` (docs/design.md §6): local copies, token counts, cache,
fast failure."""

import hashlib
import socket
import threading

import pytest
import torch
from conftest import REPO

from geolab import data
from geolab.tasks import get_task


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.delenv("GEOLAB_DATA", raising=False)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("geolab-cache")


@pytest.fixture(scope="module")
def wikitext(text_data, cache):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("HF_DATASETS_OFFLINE", "1")
        return data.load_wikitext2(text_data, cache)


def word_stream(path):
    """An independent reading of a WikiText-2 file: its words, ``<eos>`` after every line."""
    return [w for line in path.read_text().splitlines() for w in line.split() + ["<eos>"]]


def test_wikitext2_through_datasets(wikitext, text_data, cache):
    """A corpus in WikiText-2's format (generated from tiny-shakespeare by the conftest): the
    streams equal an independent reading, the vocabulary is train's in order of appearance."""
    streams = {
        split: word_stream(text_data / "wikitext-2" / name)
        for split, name in data.WIKITEXT2_FILES.items()
    }
    vocab = list(dict.fromkeys(streams["train"]))
    assert wikitext.vocab == vocab and "<unk>" in vocab
    for split, words in streams.items():
        tokens = wikitext.splits[split]
        assert tokens.dtype == torch.int64
        assert [vocab[i] for i in tokens.tolist()] == words
    # The datasets "text" builder did the reading: its arrow cache exists under the cache dir.
    assert list((cache / "hf").rglob("*.arrow"))


def test_real_wikitext2_has_its_published_counts(shared_data, tmp_path):
    corpus = data.load_wikitext2(shared_data, tmp_path)
    counts = {split: t.numel() for split, t in corpus.splits.items()}
    assert counts == {"train": 2_088_628, "val": 217_646, "test": 245_569}  # shared/data README
    assert len(corpus.vocab) == 33_278 and len(set(corpus.vocab)) == 33_278
    valid = word_stream(shared_data / "wikitext-2" / "valid.txt")
    assert [corpus.vocab[i] for i in corpus.splits["val"][:40].tolist()] == valid[:40]


def test_second_load_comes_from_the_tensor_cache(wikitext, text_data, cache, monkeypatch):
    cached = list(cache.glob("wikitext2-*.pt"))
    assert len(cached) == 1
    blob = torch.load(cached[0], weights_only=True)
    assert torch.equal(blob["splits"]["train"], wikitext.splits["train"])

    def no_datasets(*args, **kwargs):
        raise AssertionError("the cache should have answered")

    monkeypatch.setattr(data, "_read_local", no_datasets)
    again = data.load_wikitext2(text_data, cache)
    assert (
        torch.equal(again.splits["test"], wikitext.splits["test"]) and again.vocab == wikitext.vocab
    )


def test_geolab_data_env_and_task(wikitext, text_data, cache, monkeypatch):
    monkeypatch.setenv("GEOLAB_DATA", str(text_data))
    task = get_task("wikitext2", seq_len=16, cache_dir=cache)
    n_vocab = len(wikitext.vocab)
    assert task.vocab_size == n_vocab and task.kind == "tokens" and task.stream
    x, y, mask = task.batch("train", torch.tensor([0, 1000]))
    assert mask is None and x.shape == (2, 16) and torch.equal(x[:, 1:], y[:, :-1])
    assert torch.equal(x[1], wikitext.splits["train"][1000:1016])
    assert task.model_fields() == {"seq_len": 16, "vocab_size": n_vocab}


def test_shakespeare_characters(cache):
    """The copy the repository ships in data/ (the same bytes as karpathy/char-rnn's)."""
    folder = REPO / "data"
    assert data.bundled_dir("shakespeare") == folder
    corpus = data.load_shakespeare(folder, cache)
    text = (folder / "tinyshakespeare" / "input.txt").read_text()
    assert len(corpus.vocab) == 65 and corpus.vocab == sorted(set(text))
    n = int(0.9 * len(text))
    assert corpus.splits["train"].numel() == n == 1_003_854
    assert corpus.splits["val"].numel() == len(text) - n
    decoded = "".join(corpus.vocab[i] for i in corpus.splits["val"][:200].tolist())
    assert decoded == text[n : n + 200]


def test_tokenize_words_follows_word_language_model():
    texts = {"train": [" a b ", " ", " b <unk> c "], "val": [" c z "]}
    corpus = data.tokenize_words(texts)
    assert corpus.vocab == ["a", "b", "<eos>", "<unk>", "c"]
    assert corpus.splits["train"].tolist() == [0, 1, 2, 2, 1, 3, 4, 2]
    assert corpus.splits["val"].tolist() == [4, 3, 2]  # unseen "z" -> <unk>
    with pytest.raises(ValueError, match="'z' of split 'val'"):
        data.tokenize_words({"train": [" a "], "val": [" z "]})


def test_offline_without_a_copy_fails_fast_with_instructions(monkeypatch, tmp_path):
    def no_network(*args, **kwargs):
        raise AssertionError("offline mode must not touch the network")

    monkeypatch.setattr(socket, "create_connection", no_network)
    with pytest.raises(FileNotFoundError) as info:
        data.load_wikitext2(cache_dir=tmp_path)
    message = str(info.value)
    for needle in (
        "GEOLAB_DATA",
        "--data-dir",
        "train.txt",
        "valid.txt",
        "test.txt",
        "HF_HUB_OFFLINE is set",
        "Salesforce/wikitext",
    ):
        assert needle in message
    with pytest.raises(FileNotFoundError, match="input.txt"):
        get_task("shakespeare", cache_dir=tmp_path)
    assert not list(tmp_path.iterdir())  # nothing written


def test_missing_data_dir_names_the_directory(tmp_path):
    (tmp_path / "wikitext-2").mkdir()
    (tmp_path / "wikitext-2" / "train.txt").write_text(" a \n")
    with pytest.raises(FileNotFoundError, match=f"{tmp_path}.*lacks them.*valid.txt"):
        data.load_wikitext2(tmp_path, tmp_path / "cache")
    with pytest.raises(FileNotFoundError, match="does-not-exist"):
        data.load_wikitext2(tmp_path / "does-not-exist", tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_hub_probe_gives_up_after_its_timeout(monkeypatch, tmp_path):
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("HF_DATASETS_OFFLINE")
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("https_proxy", raising=False)
    release = threading.Event()

    def hang(*args, **kwargs):
        release.wait(30)
        raise OSError("released")

    monkeypatch.setattr(socket, "create_connection", hang)
    online, why = data.hub_reachable(timeout=0.2)
    release.set()
    assert not online and "huggingface.co:443" in why and "no answer within 0.2 s" in why

    def refused(*args, **kwargs):
        raise ConnectionRefusedError("refused")

    monkeypatch.setattr(socket, "create_connection", refused)
    assert data.hub_reachable(timeout=0.2) == (
        False,
        "the Hugging Face hub at huggingface.co:443 is unreachable (refused)",
    )
    with pytest.raises(FileNotFoundError, match="unreachable"):
        data.load_shakespeare(cache_dir=tmp_path)


def test_a_corpus_fetched_from_the_hub_once_loads_offline(tmp_path):
    key = data._digest([hashlib.sha256(repr(data.HUB["shakespeare"]).encode()).digest()])
    splits = {"train": torch.tensor([0, 1, 1]), "val": torch.tensor([1])}
    blob = {"version": data.CACHE_VERSION, "splits": splits, "vocab": ["a", "b"]}
    torch.save(blob, tmp_path / f"shakespeare-{key[:16]}.pt")
    corpus = data.load_shakespeare(cache_dir=tmp_path)  # HF_HUB_OFFLINE=1, no directory
    assert corpus.vocab == ["a", "b"] and torch.equal(corpus.splits["train"], splits["train"])
