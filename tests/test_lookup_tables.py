"""Tests for the lookup-table task data (Baan et al. section 2.1; machine-tasks layout)."""

import pytest
import torch
from torch.utils.data import SequentialSampler

from datamodules import LookupTableDataModule
from datamodules.lookup_tables import (
    SPLITS,
    generate_lookup_tables,
    read_lookup_tables,
)
from tests.data_files import write_lookup_tables

BITS = [format(i, "03b") for i in range(8)]
TABLES = [f"t{k}" for k in range(1, 9)]
# The sizes of machine-tasks LookupTables/lookup-3bit/samples/sample1.
SIZES = {
    "train": 232,
    "validation": 16,
    "heldout_inputs": 40,
    "heldout_compositions": 64,
    "heldout_tables": 192,
    "new_compositions": 32,
}


@pytest.fixture(scope="module")
def splits():
    return generate_lookup_tables(seed=0)


def atomic_tables(splits):
    """Each table's mapping, read back from the atomic rows of train."""
    tables = {}
    for source, target, _ in splits["train"]:
        bits, *names = source.split()
        if len(names) == 1:
            tables.setdefault(names[0], {})[bits] = target.split()[1]
    return tables


def compositions(rows):
    return {tuple(source.split()[1:]) for source, _, _ in rows}


def test_split_sizes(splits):
    assert {name: len(rows) for name, rows in splits.items()} == SIZES


def test_generation_is_deterministic_per_seed(splits):
    assert generate_lookup_tables(seed=0) == splits
    assert atomic_tables(generate_lookup_tables(seed=1)) != atomic_tables(splits)


def test_tables_are_bijections_and_every_row_is_correct(splits):
    tables = atomic_tables(splits)
    assert sorted(tables) == TABLES
    for mapping in tables.values():
        assert sorted(mapping) == BITS and sorted(mapping.values()) == BITS
    for rows in splits.values():
        for source, target, attention in rows:
            bits, *names = source.split()
            expected = [bits]
            for name in names:
                expected.append(tables[name][expected[-1]])
            assert target.split() == expected
            assert attention == " ".join(str(i) for i in range(len(names) + 2))


def test_composition_structure(splits):
    seen = TABLES[:6]
    train = compositions(splits["train"])
    train_pairs = {c for c in train if len(c) == 2}
    assert {c for c in train if len(c) == 1} == {(t,) for t in TABLES}
    assert len(train_pairs) == 28 and all(a in seen and b in seen for a, b in train_pairs)
    held = compositions(splits["heldout_compositions"])
    assert len(held) == 8 and all(a in seen and b in seen for a, b in held)
    assert held.isdisjoint(train_pairs)
    assert compositions(splits["heldout_tables"]) == {
        (a, b) for a in TABLES for b in TABLES if (a in seen) != (b in seen)
    }
    assert compositions(splits["new_compositions"]) == {
        ("t7", "t7"),
        ("t7", "t8"),
        ("t8", "t7"),
        ("t8", "t8"),
    }
    # As in machine-tasks: validation and heldout_inputs are the 2 held-out inputs of every
    # training composition, the other 6 inputs are trained on.
    for pair in train_pairs:

        def count(split, pair=pair):
            return sum(tuple(s.split()[1:]) == pair for s, _, _ in splits[split])

        assert count("train") == 6
        assert count("validation") + count("heldout_inputs") == 2


def test_no_leakage(splits):
    sources = {name: {row[0] for row in rows} for name, rows in splits.items()}
    assert all(len(sources[name]) == len(splits[name]) for name in SPLITS)  # no duplicates
    for i, first in enumerate(SPLITS):
        for second in SPLITS[i + 1 :]:
            assert sources[first].isdisjoint(sources[second]), (first, second)
    for source, _, _ in splits["train"]:
        names = source.split()[1:]
        assert len(names) == 1 or not {"t7", "t8"} & set(names)


def test_write_read_round_trip(splits, tmp_path):
    write_lookup_tables(splits, tmp_path / "sample")
    assert sorted(p.name for p in (tmp_path / "sample").iterdir()) == sorted(
        f"{name}.tsv" for name in SPLITS
    )
    first = (tmp_path / "sample" / "train.tsv").read_text().splitlines()[0]
    assert first == "\t".join(splits["train"][0])
    assert read_lookup_tables(tmp_path / "sample") == splits


def test_reads_machine_tasks_format(tmp_path):
    for name in SPLITS:
        (tmp_path / f"{name}.tsv").write_text("001 t1\t001 010\t0 1 2\n")
    train = "000 t7\t000 011\t0 1 2\n  \n111 t4 t5\t111 011 100\t0 1 2 3\n\n"
    (tmp_path / "train.tsv").write_text(train)
    data = read_lookup_tables(tmp_path)
    assert data["train"] == [
        ("000 t7", "000 011", "0 1 2"),
        ("111 t4 t5", "111 011 100", "0 1 2 3"),
    ]
    assert data["validation"] == [("001 t1", "001 010", "0 1 2")]
    # a UTF-8 byte-order mark (as some editors save) is not part of the first token
    (tmp_path / "validation.tsv").write_bytes(b"\xef\xbb\xbf001 t1\t001 010\t0 1 2\n")
    assert read_lookup_tables(tmp_path)["validation"] == [("001 t1", "001 010", "0 1 2")]


def test_missing_folder_and_file_are_explained(splits, tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError, match="nowhere") as info:
        read_lookup_tables(missing)
    assert "data_dir" in str(info.value) and "train.tsv" in str(info.value)
    with pytest.raises(FileNotFoundError, match="nowhere"):
        LookupTableDataModule(data_dir=str(missing)).prepare_data()

    write_lookup_tables(splits, tmp_path)
    (tmp_path / "heldout_tables.tsv").unlink()
    with pytest.raises(FileNotFoundError, match="lacks heldout_tables.tsv") as info:
        read_lookup_tables(tmp_path)
    assert str(tmp_path) in str(info.value)


@pytest.mark.parametrize(
    "bad",
    ["000 t7\t000 011", "000 t7\t000 011\t0 1", "000 t7\t000 011\t0 x 2", "000 t7\t000 011\t0 1 9"],
)
def test_malformed_line_names_file_and_line(splits, tmp_path, bad):
    write_lookup_tables(splits, tmp_path)
    rows = [*map("\t".join, splits["validation"][:2]), bad]
    (tmp_path / "validation.tsv").write_text("\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=r"validation\.tsv, line 3"):
        read_lookup_tables(tmp_path)


@pytest.mark.parametrize("split", ["train", "validation", "heldout_tables"])
@pytest.mark.parametrize("content", ["", "\n \n\t\n"], ids=["0 bytes", "blank lines"])
def test_empty_split_file_is_one_error_naming_it(splits, tmp_path, split, content):
    write_lookup_tables(splits, tmp_path)
    (tmp_path / f"{split}.tsv").write_text(content)
    message = (
        f"{tmp_path / split}.tsv is empty: a split file needs at least one "
        "'input tables<TAB>outputs<TAB>attention' row; fill it (or copy it again from "
        "machine-tasks), or leave --data.data_dir unset to generate the tables"
    )
    with pytest.raises(ValueError) as info:
        read_lookup_tables(tmp_path)
    assert str(info.value) == message
    with pytest.raises(ValueError, match=rf"{split}\.tsv is empty"):
        LookupTableDataModule(data_dir=str(tmp_path)).setup()


def test_non_utf8_split_file_names_the_file_and_line(splits, tmp_path):
    write_lookup_tables(splits, tmp_path)
    lines = (tmp_path / "train.tsv").read_bytes().splitlines(keepends=True)
    lines[11] = "110 t3\t110 caf\u00e9\t0 1 2\n".encode("latin-1")  # 0xe9, line 12
    (tmp_path / "train.tsv").write_bytes(b"".join(lines))
    with pytest.raises(ValueError) as info:
        read_lookup_tables(tmp_path)
    assert str(info.value) == (
        f"{tmp_path / 'train.tsv'} is not UTF-8 text (byte 0xe9 on line 12): save it as UTF-8"
    )


@pytest.fixture(scope="module")
def datamodule():
    module = LookupTableDataModule(batch_size=1000)
    module.setup()
    return module


def test_vocabularies(datamodule):
    assert datamodule.source_vocab == ["<pad>", "<eos>", *BITS, *TABLES]
    assert datamodule.target_vocab == ["<pad>", "<sos>", "<eos>", *BITS]
    # The vocabularies load the data lazily, without an explicit setup().
    assert LookupTableDataModule(data_seed=3).source_vocab == datamodule.source_vocab


def test_batch_layout(datamodule):
    batch = next(iter(datamodule.split_dataloader("train")))
    rows = datamodule.splits["train"]
    assert set(batch) == {
        "source",
        "source_lengths",
        "target",
        "attention_target",
        "source_table",
        "index",
    }
    assert all(tensor.dtype == torch.long for tensor in batch.values())
    assert batch["source"].shape == batch["source_table"].shape == (232, 4)
    assert batch["target"].shape == batch["attention_target"].shape == (232, 4)
    assert batch["index"].tolist() == list(range(232))

    # Row 0 is atomic, e.g. "000 t1": one slot of padding in every sequence.
    bits, table = rows[0][0].split()
    out = rows[0][1].split()
    src, tgt = datamodule.source_vocab, datamodule.target_vocab
    assert batch["source"][0].tolist() == [src.index(bits), src.index(table), 1, 0]
    assert batch["source_lengths"][0].item() == 3
    assert batch["target"][0].tolist() == [tgt.index(out[0]), tgt.index(out[1]), 2, 0]
    assert batch["attention_target"][0].tolist() == [0, 1, 2, -100]
    assert batch["source_table"][0].tolist() == [-100, TABLES.index(table), -100, -100]

    # The last row is a composition "xxx ta tb": no padding.
    last = rows[-1][0].split()
    assert batch["source_lengths"][-1].item() == 4
    assert batch["attention_target"][-1].tolist() == [0, 1, 2, 3]
    assert batch["source_table"][-1].tolist() == [
        -100,
        TABLES.index(last[1]),
        TABLES.index(last[2]),
        -100,
    ]
    assert datamodule.decode_target(batch["target"]) == [row[1] for row in rows]
    assert datamodule.decode_target(batch["target"][-1]) == [rows[-1][1]]


def training_order(module, epoch):
    loader = module.train_dataloader()
    loader.sampler.set_epoch(epoch)  # Lightning calls this at the start of every epoch
    return list(loader.sampler)


def test_training_order_depends_on_seed_and_epoch_only(datamodule):
    first = training_order(datamodule, 0)
    assert sorted(first) == list(range(232)) and first != list(range(232))
    assert training_order(datamodule, 1) != first
    seeded = [LookupTableDataModule(shuffle_seed=7) for _ in range(2)]
    assert training_order(seeded[0], 3) == training_order(seeded[1], 3)
    assert training_order(seeded[0], 3) != training_order(LookupTableDataModule(shuffle_seed=8), 3)


def test_loaders(datamodule):
    val = datamodule.val_dataloader()
    assert isinstance(val.sampler, SequentialSampler) and len(val.dataset) == 16
    tests = datamodule.test_dataloader()
    assert [len(loader.dataset) for loader in tests] == [40, 64, 192, 32]
    assert datamodule.test_splits == (
        "heldout_inputs",
        "heldout_compositions",
        "heldout_tables",
        "new_compositions",
    )
    with pytest.raises(ValueError, match="heldout_tables"):
        datamodule.split_dataloader("test")


def test_reads_data_dir(splits, tmp_path):
    write_lookup_tables(splits, tmp_path)
    module = LookupTableDataModule(data_dir=str(tmp_path), data_seed=99)
    module.prepare_data()
    module.setup("fit")
    assert module.splits == splits
