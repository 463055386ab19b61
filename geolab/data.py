"""Text corpora through HF ``datasets``: WikiText-2 (word level) and tiny-shakespeare (characters).

Where the text comes from, in order (docs/design.md §6):

1. a local directory: the ``data_dir`` argument (``--data-dir``), else ``$GEOLAB_DATA``. It holds
   ``wikitext-2/{train,valid,test}.txt`` (the files of pytorch/examples
   ``word_language_model/data/wikitext-2``) and ``tinyshakespeare/input.txt`` (karpathy/char-rnn),
   or those files directly. The files are read by the ``datasets`` "text" builder, so this works
   with ``HF_DATASETS_OFFLINE=1``. The repository ships tiny-shakespeare in ``data/`` (public
   domain, see data/tinyshakespeare/README.md); ``bundled_dir`` names that folder, and the
   protocols and the training lab use it when no directory is configured.
2. the Hugging Face hub (``Salesforce/wikitext`` ``wikitext-2-v1``; ``karpathy/tiny_shakespeare``),
   only when no directory is configured, ``HF_HUB_OFFLINE``/``HF_DATASETS_OFFLINE`` are unset and
   a TCP connection to the hub opens within 2 s — so an offline machine gets a clear error in
   seconds instead of the hub client's retry loop. A corpus fetched once is cached (below) and
   then loads offline too. (The hub path could not be exercised on the offline development
   machine; the local path is what the tests cover.)

Tokenisation. WikiText-2: words split on whitespace with ``<eos>`` after every line (blank lines
too), vocabulary from the train split in order of first appearance — exactly pytorch/examples
``word_language_model/data.py``; 33,278 types, train 2,088,628 tokens. A val/test word missing
from the train vocabulary maps to ``<unk>`` (none does in WikiText-2). Shakespeare: one id per
character, vocabulary = sorted distinct characters of the whole text (65), first 90 % of the
characters train, last 10 % val, as nanoGPT's ``shakespeare_char``.

Tokenised streams are cached as ``<cache>/<corpus>-<sha256 of the sources>.pt`` (loaded with
``weights_only=True``); the cache root is the ``cache_dir`` argument, else ``$GEOLAB_CACHE``, else
``~/.cache/geolab``. The ``datasets`` arrow cache lives in ``<cache>/hf``.
"""

import codecs
import hashlib
import os
import socket
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import torch

from geolab.outputs import check_dir, replace_atomically

WIKITEXT2_FILES = {"train": "train.txt", "val": "valid.txt", "test": "test.txt"}
SHAKESPEARE_FILE = "input.txt"
SUBDIRS = {"wikitext2": "wikitext-2", "shakespeare": "tinyshakespeare"}
HUB = {
    "wikitext2": ("Salesforce/wikitext", "wikitext-2-v1"),
    "shakespeare": ("karpathy/tiny_shakespeare", None),
}
HF_SPLITS = {"train": "train", "val": "validation", "test": "test"}
CACHE_VERSION = 1
PROBE_TIMEOUT_S = 2.0
NUL = b"\x00"  # in a corpus: a binary or damaged file, not text
# The repository's data/ folder (a source checkout or an editable install).
REPO_DATA = Path(__file__).resolve().parents[1] / "data"


class DataNotFound(FileNotFoundError, ValueError):
    """No corpus where geolab looked: a FileNotFoundError, and a user error (ValueError) that the
    command line reports in one line."""


@dataclass
class Corpus:
    """Token streams per split ("train", "val"[, "test"]) as 1-D int64 tensors, and the vocabulary
    (id -> token string)."""

    splits: dict[str, torch.Tensor]
    vocab: list[str]


def load_wikitext2(data_dir=None, cache_dir=None) -> Corpus:
    """WikiText-2, word level, with ``<eos>`` per line (see the module docstring)."""
    return _load("wikitext2", data_dir, cache_dir)


def load_shakespeare(data_dir=None, cache_dir=None) -> Corpus:
    """tiny-shakespeare, character level, 90/10 split (see the module docstring)."""
    return _load("shakespeare", data_dir, cache_dir)


def _load(corpus: str, data_dir, cache_dir) -> Corpus:
    root = cache_folder(cache_dir)
    directory = data_dir if data_dir is not None else os.environ.get("GEOLAB_DATA") or None
    if directory is not None:
        files = local_files(corpus, Path(directory))
        key = _digest([check_text(path) for path in files.values()])
    else:
        files, key = None, _digest([hashlib.sha256(repr(HUB[corpus]).encode()).digest()])
    cached = root / f"{corpus}-{key[:16]}.pt"
    if cached.exists():
        corpus_cached = read_cache(cached)
        if corpus_cached is not None:
            return corpus_cached
    if files is None:
        online, why = hub_reachable()
        if not online:
            raise DataNotFound(_how_to(corpus, f"no local directory is set and {why}"))
    texts = _read_local(corpus, files, root) if files else _read_hub(corpus, root)
    result = tokenize_words(texts) if corpus == "wikitext2" else tokenize_chars(texts["train"])
    root.mkdir(parents=True, exist_ok=True)
    kept = {"version": CACHE_VERSION, "splits": result.splits, "vocab": result.vocab}
    replace_atomically(cached, lambda tmp: torch.save(kept, tmp))
    return result


def read_cache(path: Path) -> Corpus | None:
    """The corpus cached in ``path``, or None (with a warning) when the file is damaged, of
    another version or not a cache: it is then rebuilt from the sources, which it only mirrors."""
    try:
        blob = torch.load(path, weights_only=True)
    except Exception as err:  # torch reports a bad file as any of half a dozen error types
        warnings.warn(
            f"cache {str(path)!r} is damaged ({type(err).__name__}); rebuilding it", stacklevel=3
        )
        return None
    if isinstance(blob, dict) and _is_corpus(blob.get("splits"), blob.get("vocab")):
        if blob.get("version") == CACHE_VERSION:
            return Corpus(blob["splits"], blob["vocab"])
        return None  # an older version: rebuilt, as intended
    warnings.warn(f"cache {str(path)!r} is not a geolab corpus; rebuilding it", stacklevel=3)
    return None


def _is_corpus(splits, vocab) -> bool:
    """Token streams (1-D int64 ids into ``vocab``) per split, and a vocabulary of strings."""
    if not isinstance(splits, dict) or not isinstance(vocab, list) or not splits:
        return False
    for ids in splits.values():
        if not (isinstance(ids, torch.Tensor) and ids.dtype == torch.int64 and ids.ndim == 1):
            return False
        if ids.numel() and not (0 <= int(ids.min()) and int(ids.max()) < len(vocab)):
            return False
    return all(isinstance(token, str) for token in vocab)


def bundled_dir(corpus: str) -> Path | None:
    """The repository's data/ folder when it holds ``corpus`` (only tiny-shakespeare is shipped),
    else None (e.g. geolab installed from a wheel, without the repository)."""
    if corpus not in SUBDIRS:
        return None
    try:
        local_files(corpus, REPO_DATA)
    except FileNotFoundError:
        return None
    return REPO_DATA


def cache_root(cache_dir=None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("GEOLAB_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "geolab"


def cache_folder(cache_dir=None) -> Path:
    """``cache_root(cache_dir)``, checked before any work (``outputs.check_dir``: created and
    written later, only when a corpus is saved): a one-line ValueError naming where it came from,
    ``GEOLAB_CACHE`` or the folder, when it is a file, lies under one or cannot be written."""
    root = cache_root(cache_dir)
    env = os.environ.get("GEOLAB_CACHE")
    what = "GEOLAB_CACHE" if cache_dir is None and env else "cache_dir"
    try:
        return check_dir(root, what)
    except ValueError as err:
        raise ValueError(
            f"{err}; it must name a folder geolab can create and write (unset GEOLAB_CACHE for "
            "~/.cache/geolab)"
        ) from None


def local_files(corpus: str, directory: Path) -> dict[str, Path]:
    """The source files of ``corpus`` under ``directory`` (or its conventional subdirectory)."""
    names = WIKITEXT2_FILES if corpus == "wikitext2" else {"train": SHAKESPEARE_FILE}
    for base in (directory / SUBDIRS[corpus], directory):
        files = {split: base / name for split, name in names.items()}
        try:
            if all(p.is_file() for p in files.values()):
                return files
        except OSError as err:  # a name too long for the file system: pathlib raises it
            why = f"the data directory {str(directory)!r} cannot be read ({err.strerror})"
            raise DataNotFound(_how_to(corpus, why)) from None
    raise DataNotFound(_how_to(corpus, f"the data directory {str(directory)!r} lacks them"))


CHUNK_BYTES = 1 << 20  # the data check reads a file this many bytes at a time


def check_text(path: Path) -> bytes:
    """The SHA-256 digest of data file ``path``; ValueError naming it if it holds no text, is not
    UTF-8 or holds a NUL byte (the ``datasets`` text builder would fail on it with a long
    traceback).

    The file is read in chunks of ``CHUNK_BYTES``: a bad byte stops the read where it is (a
    2 GiB file of NUL bytes is refused after its first chunk), and memory stays one chunk
    whatever the file's size.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    digest, offset, has_text = hashlib.sha256(), 0, False
    try:
        with path.open("rb") as f:
            while chunk := f.read(CHUNK_BYTES):
                _check_chunk(path, chunk, offset, decoder)
                digest.update(chunk)
                has_text = has_text or bool(chunk.strip())
                offset += len(chunk)
    except OSError as err:
        raise ValueError(f"data file {str(path)!r} cannot be read ({err.strerror})") from None
    _check_chunk(path, b"", offset, decoder, final=True)
    if not has_text:
        raise ValueError(f"data file {str(path)!r} holds no text; it must hold UTF-8 text")
    return digest.digest()


def _check_chunk(path: Path, chunk: bytes, offset: int, decoder, final: bool = False) -> None:
    """ValueError for the first NUL byte or invalid UTF-8 of ``chunk`` (at file ``offset``);
    ``decoder`` carries a character cut at the chunk's end over to the next one."""
    nul = chunk.find(NUL)
    end = len(chunk) if nul < 0 else nul
    try:
        decoder.decode(chunk[:end], final=final or nul >= 0)
    except UnicodeDecodeError as err:
        at = offset + err.start - len(err.object) + end  # err.object: the cut-over bytes + ours
        raise ValueError(
            f"data file {str(path)!r} is not UTF-8 text (byte 0x{err.object[err.start]:02x} at "
            f"offset {at}); convert it to UTF-8"
        ) from None
    if nul >= 0:
        raise ValueError(
            f"data file {str(path)!r} holds a NUL byte (offset {offset + nul}): it is not "
            "plain text (a binary or damaged file?); it must hold UTF-8 text"
        )


def _how_to(corpus: str, why: str) -> str:
    sub = SUBDIRS[corpus]
    wanted = ", ".join(WIKITEXT2_FILES.values()) if corpus == "wikitext2" else SHAKESPEARE_FILE
    hub, config = HUB[corpus]
    return (
        f"cannot load {corpus}: {why}. Provide the data with --data-dir DIR or GEOLAB_DATA=DIR, "
        f"where DIR/{sub}/ (or DIR itself) holds {wanted}; or go online so that `datasets` can "
        f"fetch {hub}{'/' + config if config else ''} from the Hugging Face hub."
    )


def hub_reachable(timeout: float = PROBE_TIMEOUT_S) -> tuple[bool, str]:
    """(True, "") when the hub (or the HTTPS proxy) accepts a TCP connection within ``timeout``.

    The probe runs in a daemon thread so that a hanging DNS lookup cannot exceed the timeout.
    """
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            return False, f"{var} is set"
    proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    url = urlparse(proxy or os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    address = (url.hostname, url.port or (443 if url.scheme == "https" else 80))
    outcome = []

    def probe():
        try:
            socket.create_connection(address, timeout=timeout).close()
            outcome.append("")
        except OSError as err:
            outcome.append(str(err))

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    if outcome and not outcome[0]:
        return True, ""
    reason = outcome[0] if outcome else f"no answer within {timeout:g} s"
    return False, f"the Hugging Face hub at {address[0]}:{address[1]} is unreachable ({reason})"


def _digest(digests: list[bytes]) -> str:
    """The cache key of sources with these SHA-256 digests (``check_text``'s), for this cache
    version."""
    h = hashlib.sha256(f"geolab-data-v{CACHE_VERSION}".encode())
    for part in digests:
        h.update(part)
    return h.hexdigest()


def _read_local(corpus: str, files: dict[str, Path], root: Path) -> dict[str, list[str]]:
    import datasets

    sample_by = "line" if corpus == "wikitext2" else "document"
    ds = datasets.load_dataset(
        "text",
        data_files={split: str(path) for split, path in files.items()},
        sample_by=sample_by,
        cache_dir=str(root / "hf"),
    )
    return {split: ds[split]["text"] for split in files}


def _read_hub(corpus: str, root: Path) -> dict[str, list[str]]:
    import datasets

    name, config = HUB[corpus]
    try:
        ds = datasets.load_dataset(name, config, cache_dir=str(root / "hf"))
    except Exception as err:
        raise DataNotFound(_how_to(corpus, f"the hub failed ({err})")) from err
    if corpus == "wikitext2":
        return {split: ds[hf]["text"] for split, hf in HF_SPLITS.items()}
    return {"train": ["".join(t for split in HF_SPLITS.values() for t in ds[split]["text"])]}


def tokenize_words(texts: dict[str, list[str]]) -> Corpus:
    """Word-level ids with ``<eos>`` per line; vocabulary from texts["train"] (first appearance)."""
    index: dict[str, int] = {}
    splits = {}
    for split in ["train"] + [s for s in texts if s != "train"]:
        ids: list = []
        for line in texts[split]:
            words = line.split()
            words.append("<eos>")
            if split == "train":
                ids.extend([index.setdefault(w, len(index)) for w in words])
            else:
                ids.extend([index.get(w) for w in words])
        if split != "train" and None in ids:
            unk = index.get("<unk>")
            if unk is None:
                word = next(w for line in texts[split] for w in line.split() if w not in index)
                raise ValueError(
                    f"word {word!r} of split {split!r} is not in the train "
                    "vocabulary and the vocabulary has no <unk>"
                )
            ids = [unk if i is None else i for i in ids]
        splits[split] = torch.tensor(ids, dtype=torch.int64)
    return Corpus(splits, list(index))


def tokenize_chars(text: list[str], train_fraction: float = 0.9) -> Corpus:
    """Character ids over the sorted character set; first ``train_fraction`` train, rest val."""
    full = "".join(text)
    vocab = sorted(set(full))
    lookup = {ch: i for i, ch in enumerate(vocab)}
    ids = torch.tensor([lookup[ch] for ch in full], dtype=torch.int64)
    n = int(train_fraction * len(ids))
    return Corpus({"train": ids[:n].clone(), "val": ids[n:].clone()}, vocab)
