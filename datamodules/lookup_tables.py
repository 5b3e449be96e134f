"""The lookup-table composition task (Baan et al., "On the Realization of Compositionality in
Neural Networks", section 2.1; Liška et al. 2019; Hupkes et al. 2019).

Eight random bijections ``t1 .. t8`` on the 3-bit strings are applied left to right to an input
string. A row is ``(input, target, attention)`` in the TSV format of the i-machine-think
``machine-tasks`` repository (``LookupTables/data/samples/sample<k>/<split>.tsv``; its inputs end
in a ``.`` token, and the attention column has one index per output plus one for ``<eos>``)::

    111 t4 t5 .<TAB>111 011 100<TAB>0 1 2 3

The target is the input followed by every intermediate result; the attention target is the
diagonal, one source position per decoder step including ``<eos>``.

Splits, with sizes for the defaults (which are those of machine-tasks ``sample1``):

- ``train`` (232): all 64 atomic rows (``000 t7``) plus the 28 non-held-out length-2
  compositions of t1-t6, each on 6 of its 8 inputs.
- ``validation`` (16) and ``heldout_inputs`` (40): the other 2 inputs of those 28 compositions
  (56 rows), randomly divided. This is what machine-tasks does: its ``validation.tsv`` holds 16
  rows whose compositions are training compositions but whose inputs appear neither in
  ``train.tsv`` nor in ``heldout_inputs.tsv`` (40 rows).
- ``heldout_compositions`` (64): 8 random compositions of t1-t6, all inputs.
- ``heldout_tables`` (192): t7 or t8 composed with one of t1-t6, either order, all inputs.
- ``new_compositions`` (32): t7/t8 composed with each other, all inputs.
"""

import os
import random
from itertools import product
from pathlib import Path

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from datamodules.machine_tasks import (
    SAMPLE1,
    SPLITS,
    TEST_SPLITS,
    Sample1Unavailable,
    resolve_sample1,
)
from datamodules.sampling import SplitLoaders, VocabularySizes, split_loader
from datamodules.sequences import IGNORE_INDEX, collate_sequences, decode_targets, encode_pair
from datamodules.text_files import read_rows

Row = tuple[str, str, str]
ROW_FORMAT = "'input tables<TAB>outputs<TAB>attention'"
EMPTY_FIX = (
    "fill it (or copy it again from machine-tasks), or leave --data.data_dir unset to generate "
    "the tables"
)


def _row(tables: dict[str, dict[str, str]], bits: str, names: tuple[str, ...]) -> Row:
    outputs = [bits]
    for name in names:
        outputs.append(tables[name][outputs[-1]])
    attention = " ".join(str(i) for i in range(len(names) + 2))
    return " ".join((bits, *names)), " ".join(outputs), attention


def generate_lookup_tables(
    seed: int,
    bits: int = 3,
    tables: int = 8,
    heldout_compositions: int = 8,
    heldout_inputs: int = 2,
    validation_size: int = 16,
) -> dict[str, list[Row]]:
    """Generate all splits from ``random.Random(seed)`` (identical on every machine).

    The last two tables play the role of t7/t8. ``validation_size`` rows are drawn from the
    ``heldout_inputs`` pool, as in machine-tasks (see the module docstring).
    """
    rng = random.Random(seed)
    strings = [format(i, f"0{bits}b") for i in range(2**bits)]
    names = [f"t{k}" for k in range(1, tables + 1)]
    maps = {
        name: dict(zip(strings, rng.sample(strings, len(strings)), strict=True)) for name in names
    }
    seen, new = names[:-2], names[-2:]

    pairs = list(product(seen, repeat=2))
    held = set(rng.sample(pairs, heldout_compositions))
    train = [_row(maps, x, (name,)) for name in names for x in strings]
    pool = []
    for pair in (p for p in pairs if p not in held):
        inputs = rng.sample(strings, len(strings))
        pool += [_row(maps, x, pair) for x in inputs[:heldout_inputs]]
        train += [_row(maps, x, pair) for x in inputs[heldout_inputs:]]
    if validation_size > len(pool):
        raise ValueError(f"validation_size={validation_size} > {len(pool)} held-out input rows")
    rng.shuffle(pool)

    def all_inputs(keep) -> list[Row]:
        return [_row(maps, x, p) for p in product(names, repeat=2) if keep(p) for x in strings]

    return {
        "train": train,
        "validation": pool[:validation_size],
        "heldout_inputs": pool[validation_size:],
        "heldout_compositions": all_inputs(lambda p: p in held),
        "heldout_tables": all_inputs(lambda p: (p[0] in new) != (p[1] in new)),
        "new_compositions": all_inputs(lambda p: p[0] in new and p[1] in new),
    }


def check_lookup_folder(path: str | os.PathLike) -> Path:
    """Raise one clear FileNotFoundError unless ``path`` holds every split file."""
    folder = Path(path)
    missing = [f"{s}.tsv" for s in SPLITS if not (folder / f"{s}.tsv").is_file()]
    if missing:
        problem = f"lacks {', '.join(missing)}" if folder.is_dir() else "does not exist"
        raise FileNotFoundError(
            f"lookup-table folder {folder} {problem}. Point --data.data_dir at a machine-tasks "
            "lookup-table sample folder (e.g. LookupTables/data/samples/sample1) "
            f"containing {', '.join(f'{s}.tsv' for s in SPLITS)}, or leave it unset to "
            "generate the tables."
        )
    return folder


def _parse_line(line: str, where: str) -> Row:
    parts = line.split("\t")
    unprintable = [c for c in "".join(parts) if not c.isprintable()]
    if unprintable:
        code = f"U+{ord(unprintable[0]):04X}" + (", NUL" if unprintable[0] == "\0" else "")
        raise ValueError(
            f"{where}: an unprintable character ({code}) inside the row, which would be trained "
            f"on as part of a token: remove it or copy the file again, got {line!r}"
        )
    if len(parts) == 3:
        source, target, attention = (part.split() for part in parts)
        steps = [int(a) if a.isdigit() else -1 for a in attention]
        if source and target and len(steps) == len(target) + 1:
            if all(0 <= step <= len(source) for step in steps):
                return parts[0], parts[1], parts[2]
    raise ValueError(
        f"{where}: expected {ROW_FORMAT} with one attention "
        f"index (0..#input tokens) per output token plus eos, got {line!r}"
    )


def read_lookup_tables(path: str | os.PathLike) -> dict[str, list[Row]]:
    """Read a machine-tasks sample folder (``<split>.tsv`` for every split in ``SPLITS``).

    Every file must be UTF-8 with at least one row (blank lines are skipped); a file that is
    not, or a malformed row, is one ValueError naming the file (and line).
    """
    folder = check_lookup_folder(path)
    splits = {}
    for split in SPLITS:
        file = folder / f"{split}.tsv"
        rows = read_rows(file, ROW_FORMAT, EMPTY_FIX)
        splits[split] = [_parse_line(line, f"{file}, line {n}") for n, line in rows]
    return splits


def _token_order(token: str) -> tuple[bool, int, str]:
    """Bit strings first, then tables in numeric order (t1, t2, ..., t10)."""
    return token.startswith("t"), len(token), token


def _table_index(token: str) -> int:
    return int(token[1:]) - 1 if token[:1] == "t" and token[1:].isdigit() else IGNORE_INDEX


class LookupTableDataModule(VocabularySizes, SplitLoaders, pl.LightningDataModule):
    """Lookup-table splits as padded batches.

    Every batch is a dict of long tensors:

    - ``source`` ``[batch, source_time]``: input tokens then ``<eos>`` (if ``source_eos``),
      padded with 0.
    - ``source_lengths`` ``[batch]``: tokens including ``<eos>``.
    - ``target`` ``[batch, target_time]``: outputs then ``<eos>`` (if ``target_eos``; no
      ``<sos>``), padded with 0.
    - ``attention_target`` ``[batch, target_time]``: source position attended at each decoder
      step, padded with -100 (without ``target_eos`` the file's last, eos, entry is dropped).
    - ``source_table`` ``[batch, source_time]``: table index (t1 -> 0 .. t8 -> 7) at each source
      position, -100 at the bit string, ``<eos>`` and padding.
    - ``index`` ``[batch]``: the row's index within its split.

    Args:
        data_dir: a machine-tasks sample folder; ``"sample1"``: machine-tasks' ``sample1``, paper
            1's data, found or downloaded and checked by
            :func:`datamodules.machine_tasks.resolve_sample1`; ``None`` generates the tables from
            ``data_seed``.
        data_seed: seed for :func:`generate_lookup_tables` (ignored when reading ``data_dir``).
        batch_size: rows per batch.
        num_workers: DataLoader workers.
        source_eos: append ``<eos>`` to the input (i-machine-think's ``use_input_eos``; paper 1's
            models had none).
        target_eos: end every target with ``<eos>`` (paper 1's models were trained with
            i-machine-think's ``--ignore_output_eos``, i.e. without).
        shuffle_seed: seed of the training order, reshuffled each epoch as ``seed + epoch`` so a
            resumed fit sees the same order as an uninterrupted one; ``None``: the global seed
            (``seed_everything``).
    """

    test_splits = TEST_SPLITS

    def __init__(
        self,
        data_dir: str | None = None,
        data_seed: int = 0,
        batch_size: int = 1,
        num_workers: int = 0,
        source_eos: bool = True,
        target_eos: bool = True,
        shuffle_seed: int | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.data_dir = data_dir
        self.data_seed = data_seed
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.source_eos = source_eos
        self.target_eos = target_eos
        self.shuffle_seed = shuffle_seed
        self.splits: dict[str, list[Row]] | None = None

    @property
    def source_vocab(self) -> list[str]:
        self.setup()
        return self._source_vocab

    @property
    def target_vocab(self) -> list[str]:
        self.setup()
        return self._target_vocab

    def prepare_data(self) -> None:
        if self.data_dir is not None:
            check_lookup_folder(self.folder())

    def folder(self) -> Path | None:
        """The sample folder read (``data_dir``, with ``"sample1"`` resolved), or None. Where
        sample1 cannot be had, the one-line error also names the offline fallback."""
        if self.data_dir == SAMPLE1:
            try:
                return resolve_sample1()[0]
            except Sample1Unavailable as error:
                raise Sample1Unavailable(
                    f"{str(error).rstrip('.')}; or train on generated lookup tables of the same "
                    "sizes, offline: --data.init_args.data_dir null"
                ) from error
        return None if self.data_dir is None else Path(self.data_dir)

    def setup(self, stage: str | None = None) -> None:
        if self.splits is not None:
            return
        if self.data_dir is None:
            splits = generate_lookup_tables(self.data_seed)
        else:
            splits = read_lookup_tables(self.folder())
        rows = [row for split in SPLITS for row in splits[split]]
        inputs = {tok for row in rows for tok in row[0].split()}
        outputs = {tok for row in rows for tok in row[1].split()}
        self._source_vocab = ["<pad>", "<eos>", *sorted(inputs, key=_token_order)]
        self._target_vocab = ["<pad>", "<sos>", "<eos>", *sorted(outputs, key=_token_order)]
        source_ids = {tok: i for i, tok in enumerate(self._source_vocab)}
        target_ids = {tok: i for i, tok in enumerate(self._target_vocab)}

        def encode(index: int, row: Row) -> dict[str, torch.Tensor]:
            source, target, attention = (column.split() for column in row)
            source_end = [1] if self.source_eos else []
            attention = attention[: len(target) + int(self.target_eos)]
            return {  # Python ints -> torch.long tensors
                **encode_pair(
                    source, target, source_ids, target_ids, self.source_eos, self.target_eos
                ),  # fmt: skip
                "attention_target": torch.tensor([int(a) for a in attention]),
                "source_table": torch.tensor(
                    [*map(_table_index, source), *[IGNORE_INDEX] * len(source_end)]
                ),
                "index": torch.tensor(index),
            }

        self.datasets = {
            name: [encode(i, row) for i, row in enumerate(split_rows)]
            for name, split_rows in splits.items()
        }
        self.splits = splits

    def split_dataloader(
        self, name: str, shuffle: bool = False, batch_size: int | None = None
    ) -> DataLoader:
        """A loader over any split, in file order unless ``shuffle``.

        Shuffling uses a sampler reseeded every epoch (Lightning calls its ``set_epoch``), so the
        order depends on the seed and the epoch only, and a resumed fit repeats it exactly.
        """
        self.setup()
        seed = None
        if shuffle:
            seed = torch.initial_seed() if self.shuffle_seed is None else self.shuffle_seed
        return split_loader(
            self.datasets, name, batch_size or self.batch_size, collate_sequences,
            self.num_workers, seed,
        )  # fmt: skip

    def decode_target(self, ids: torch.Tensor) -> list[str]:
        """Output ids ``[batch, time]`` (or ``[time]``) -> space-joined strings, cut at eos."""
        return decode_targets(ids, self.target_vocab)
