"""Reading the text files a DataModule is pointed at, with one clear error per bad file.

Every error is a ValueError (which ``python -m experiments`` prints as one ``error:`` line) that
names the file, where in it the problem is, and what to do about it:

- a file that is not text in the expected encoding: the byte and the line it is on;
- a split file with no row (0 bytes, or only blank lines): which file, and what a row looks like;
- a row longer than ``MAX_ROW_CHARACTERS``: which file and line, and the limit.
"""

from __future__ import annotations

import codecs
import os
from pathlib import Path

MAX_ROW_CHARACTERS = 10_000
"""The longest row a split file may hold. The suite's rows are commands and lookup-table
compositions of a few hundred characters at most, and its seq2seq models attend over every pair of
tokens, so a row's cost grows with the square of its length: a longer row is refused when read,
in time linear in the file's size, instead of stalling training."""


def line_at(data: bytes, offset: int) -> int:
    """The 1-based line of byte ``offset`` of ``data`` (newlines before it, plus one)."""
    return data.count(b"\n", 0, offset) + 1


def decode_text(
    data: bytes,
    path: str | os.PathLike,
    encoding: str = "utf-8",
    fix: str = "save it as UTF-8",
) -> str:
    """``data``, the contents of ``path``, decoded strictly; a UTF-8 byte-order mark is dropped.

    Raises ValueError naming the file, the first undecodable byte and its line, and ``fix``:
    ``…/train.tsv is not UTF-8 text (byte 0xff on line 12): save it as UTF-8``.
    """
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        name = codecs.lookup(encoding).name.upper()
        where = f"byte 0x{data[error.start]:02x} on line {line_at(data, error.start)}"
        raise ValueError(f"{path} is not {name} text ({where}): {fix}") from error
    return text.removeprefix("\ufeff")


def read_rows(path: str | os.PathLike, row: str, fix: str) -> list[tuple[int, str]]:
    """The non-blank lines of the UTF-8 split file ``path``, each with its 1-based line number.

    Raises ValueError naming the file when it is not UTF-8 (see :func:`decode_text`) or has no
    non-blank line; ``row`` (the format of one row) and ``fix`` complete that message:
    ``…/validation.tsv is empty: a split file needs at least one <row> row; <fix>``.
    """
    path = Path(path)
    lines = decode_text(path.read_bytes(), path).splitlines()
    rows = [(number, line) for number, line in enumerate(lines, 1) if line.strip()]
    for number, line in rows:
        if len(line) > MAX_ROW_CHARACTERS:
            raise ValueError(
                f"{path}, line {number} has {len(line):,} characters, more than the "
                f"{MAX_ROW_CHARACTERS:,} a row may have: split or remove that row"
            )
    if not rows:
        raise ValueError(f"{path} is empty: a split file needs at least one {row} row; {fix}")
    return rows
