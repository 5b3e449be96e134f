"""Bad data files are one clear error naming the file and the fix (datamodules.text_files), also
through `python -m experiments`."""

from pathlib import Path

import pytest

from datamodules.lookup_tables import generate_lookup_tables
from datamodules.text_files import decode_text, line_at, read_rows
from tests.data_files import write_lookup_tables
from tests.docs_blocks import run_module

BASELINE = str(Path(__file__).parents[1] / "experiments" / "configs" / "paper1" / "baseline.yaml")


def test_line_at_counts_the_newlines_before_the_offset():
    data = b"ab\r\ncd\n\nx"
    assert [line_at(data, offset) for offset in (0, 3, 4, 7, 8)] == [1, 1, 2, 3, 4]


def test_decode_text_names_file_byte_and_line(tmp_path):
    path = tmp_path / "rows.txt"
    assert decode_text("\ufeffé\n".encode(), path) == "é\n"  # the byte-order mark is dropped
    with pytest.raises(ValueError) as info:
        decode_text(b"\xffa\n", path)
    assert str(info.value) == f"{path} is not UTF-8 text (byte 0xff on line 1): save it as UTF-8"
    with pytest.raises(ValueError) as info:
        decode_text("a\nb\nc\u00e9".encode(), path, "ascii", "use plain ASCII")
    assert str(info.value) == f"{path} is not ASCII text (byte 0xc3 on line 3): use plain ASCII"


def test_read_rows_skips_blank_lines_and_refuses_a_file_without_rows(tmp_path):
    path = tmp_path / "rows.txt"
    path.write_text("first\n\n  \r\nsecond\r\n")
    assert read_rows(path, "'<x>'", "fill it") == [(1, "first"), (4, "second")]
    path.write_text(" \n\t\n")
    with pytest.raises(ValueError) as info:
        read_rows(path, "'<x>'", "fill it")
    assert str(info.value) == f"{path} is empty: a split file needs at least one '<x>' row; fill it"


@pytest.mark.parametrize(
    "file, bad, message",
    [
        ("validation.tsv", b"", "validation.tsv is empty: a split file needs at least one"),
        ("train.tsv", b"\xff", "train.tsv is not UTF-8 text (byte 0xff on line 233)"),
        (
            "train.tsv",
            b"000 " + b"t1 " * 3_000_000 + b"\t000\t0 1\n",
            "train.tsv, line 233 has 9,000,012 characters, more than the 10,000 a row may have",
        ),
    ],
)
def test_cli_reports_a_bad_data_file_in_one_line(tmp_path, file, bad, message):
    data = tmp_path / "data"
    write_lookup_tables(generate_lookup_tables(0), data)  # train.tsv has 232 rows
    path = data / file
    path.write_bytes(path.read_bytes() + bad if bad else b"")
    done = run_module("experiments", ["fit", "--config", BASELINE, "--data.init_args.data_dir",
                                      str(data), "--run.root", str(tmp_path / "runs")],
                      tmp_path, {})  # fmt: skip
    assert done.status == 2, done.output
    errors = [line for line in done.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {data / message}"), done.output
    assert "Traceback" not in done.output
    assert not (tmp_path / "runs").exists()
