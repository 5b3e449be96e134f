"""Small stand-ins for what the docs' commands name, for `tests/test_docs_blocks.py`: a
machine-tasks-style lookup-table sample, Project Gutenberg books, MNIST IDX files, and paper 4's
hand-built GRU (`tests/planted_counter_gru.py`) saved as the run `runs/paper4/gru/seed=0` over a
text of the words the docs analyse ("i", "the", "and")."""

from __future__ import annotations

from pathlib import Path

from datamodules.lookup_tables import generate_lookup_tables
from datamodules.token_positioning import TokenPositioningDataModule
from tests.data_files import write_best_checkpoint, write_lookup_tables
from tests.planted_counter_gru import (
    A,
    B,
    P,
    X,
    renumbered_model,
    token_positioning_checkpoint,
)
from tests.test_two_digit_images import fake_images, write_fake_mnist

WORDS = {A: "i", B: "the", X: "and"}
"""The planted network's tokens A, B (the two it is asked for) and its filler x, as words."""
PAPER4_DATA = {"vocab_size": 4 + P + 3, "max_tokens": P, "validation_share": 0.25,
               "test_share": 0.25, "batch_size": 8, "data_seed": 0}  # fmt: skip


def lookup_sample(folder: Path) -> Path:
    """A machine-tasks sample folder: the tables `generate_lookup_tables(2)` writes."""
    write_lookup_tables(generate_lookup_tables(2), folder)
    return folder


def gutenberg_books(folder: Path) -> Path:
    """Two short Project Gutenberg books (header and footer lines around the text)."""
    folder.mkdir(parents=True)
    verse = ("the king and i went to the hall", "and there the queen sat with a book",
             "i read the book to the king", "the night was long and the fire low")  # fmt: skip
    for number in (1, 2):
        lines = [f"line {k} of book {number}: {verse[(k + number) % 4]}" for k in range(60)]
        (folder / f"book{number}.txt").write_text(
            f"*** START OF THE PROJECT GUTENBERG EBOOK {number} ***\n"
            + "\n".join(lines)
            + f"\n*** END OF THE PROJECT GUTENBERG EBOOK {number} ***\n"
        )
    return folder


def mnist_files(folder: Path) -> Path:
    """The four MNIST IDX files: 100 training and 50 test images."""
    folder.mkdir(parents=True)
    return Path(write_fake_mnist(folder, fake_images(100, 0), fake_images(50, 100)))


def planted_text(folder: Path) -> Path:
    """Pairs of lines "and .." (1-3 fillers) -> "i the i the .." or "the i the i ..", each pair
    its own chain, 4 copies of each."""
    patterns = (["i", "the"] * (P // 2), ["the", "i"] * (P // 2))
    chunks = [" ".join(["and"] * f) + "\n" + " ".join(p) for f in (1, 2, 3) for p in patterns]
    folder.mkdir(parents=True)
    (folder / "book.txt").write_text("\n\n".join(chunks * 4) + "\n")
    return folder


def planted_paper4_run(run: Path, text: Path) -> Path:
    """The planted network as a paper-4 run folder trained on `text` (its best checkpoint)."""
    settings = {"data_dir": str(text), **PAPER4_DATA}
    vocab = TokenPositioningDataModule(**settings).vocab
    model = renumbered_model(vocab, WORDS)
    return write_best_checkpoint(run, token_positioning_checkpoint(model, settings))
