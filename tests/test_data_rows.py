"""A data file's row that the task cannot hold is refused in one error naming the file and line,
never trained on: a lookup-table row with a control character (a NUL byte) inside a token, a
SCAN row whose actions are not what SCAN's grammar gives its command. The data the suite
generates itself still loads, and reads back from files unchanged."""

import pytest

from datamodules import LookupTableDataModule, ScanDataModule
from datamodules.lookup_tables import generate_lookup_tables, read_lookup_tables
from datamodules.scan import SPLIT_FILES, addprim_jump_split, read_scan_split
from tests.data_files import write_lookup_tables, write_scan_split


@pytest.fixture(scope="module")
def tables():
    return generate_lookup_tables(seed=0)


@pytest.fixture(scope="module")
def scan():
    return addprim_jump_split()


@pytest.mark.parametrize(
    "bad",
    ["0\x0000 t1 .\t000 011\t0 1 2", "000 t\x001 .\t000 011\t0 1 2", "000 t1 .\t000 0\x0011\t0 1 2",
     "000 t1 \x07.\t000 011\t0 1 2"],
    ids=["NUL in a bit string", "NUL in a table", "NUL in an output", "a bell"],
)  # fmt: skip
def test_a_lookup_table_row_with_a_control_character_is_refused(tables, tmp_path, bad):
    write_lookup_tables(tables, tmp_path)
    rows = [*map("\t".join, tables["train"][:4]), bad]
    (tmp_path / "train.tsv").write_text("\n".join(rows) + "\n")
    with pytest.raises(ValueError) as refused:
        read_lookup_tables(tmp_path)
    message = str(refused.value)
    assert message.startswith(f"{tmp_path / 'train.tsv'}, line 5: an unprintable character (U+")
    assert "\n" not in message


def test_generated_lookup_tables_read_back_from_files(tables, tmp_path):
    write_lookup_tables(tables, tmp_path)
    assert read_lookup_tables(tmp_path) == tables
    LookupTableDataModule(data_dir=str(tmp_path)).setup()


@pytest.mark.parametrize(
    ("row", "said"),
    [("IN: walk twice OUT: I_JUMP", "SCAN's grammar gives 'walk twice' the actions "
                                    "'I_WALK I_WALK', not 'I_JUMP'"),
     ("IN: jump left OUT: I_JUMP I_TURN_LEFT", "'I_TURN_LEFT I_JUMP', not"),
     ("IN: walk walk OUT: I_WALK I_WALK", "'walk walk' is not a command of SCAN's grammar"),
     ("IN: twice OUT: I_WALK", "'twice' is not a command of SCAN's grammar")],
)  # fmt: skip
def test_a_scan_row_the_grammar_does_not_produce_is_refused(scan, tmp_path, row, said):
    write_scan_split(scan, tmp_path)
    path = tmp_path / SPLIT_FILES["test"]
    path.write_text("IN: jump twice OUT: I_JUMP I_JUMP\n" + row + "\n")
    with pytest.raises(ValueError) as refused:
        read_scan_split(tmp_path)
    message = str(refused.value)
    assert message.startswith(f"{path}, line 2: ") and said in message, message


def test_the_regenerated_scan_split_reads_back_from_files(scan, tmp_path):
    write_scan_split(scan, tmp_path)
    assert read_scan_split(tmp_path) == scan
    ScanDataModule().setup()
