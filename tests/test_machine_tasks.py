"""Paper 1's data, machine-tasks' sample1: its format, the checksum check and the offline fallback.

machine-tasks has no license, so no file of it is here: the rows below are written in its format
(inputs end in ``.``; one attention index per output plus one for ``<eos>``), and the checksums
are those of these rows."""

import hashlib

import pytest

from datamodules import LookupTableDataModule, machine_tasks
from datamodules.cache import ChecksumError
from datamodules.lookup_tables import SPLITS

ROWS = {  # split -> rows in machine-tasks' format (hand-written, not machine-tasks' tables)
    "train": "011 t1 .\t011 010\t0 1 2\n100 t2 t1 .\t100 000 001\t0 1 2 3\n",
    "validation": "010 t1 .\t010 111\t0 1 2\n",
    "heldout_inputs": "110 t2 t1 .\t110 001 100\t0 1 2 3\n",
    "heldout_compositions": "001 t1 t2 .\t001 110 011\t0 1 2 3\n",
    "heldout_tables": "000 t1 t3 .\t000 101 010\t0 1 2 3\n",
    "new_compositions": "111 t3 t3 .\t111 100 100\t0 1 2 3\n",
}


def sample_folder(folder):
    folder.mkdir(parents=True, exist_ok=True)
    for split, rows in ROWS.items():
        (folder / f"{split}.tsv").write_text(rows, encoding="utf-8")
    return folder


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """A `file://` stand-in for GitHub holding the rows, their digests recorded as sample1's,
    and an empty data cache; no $RECURRENT_PROBES_SAMPLE1."""
    upstream = sample_folder(tmp_path / "upstream")
    digests = {
        f"{split}.tsv": hashlib.sha256(rows.encode()).hexdigest() for split, rows in ROWS.items()
    }
    monkeypatch.setattr(machine_tasks, "SAMPLE1_SHA256", digests)
    monkeypatch.setattr(machine_tasks, "DOWNLOAD_URL", upstream.as_uri())
    monkeypatch.setenv("RECURRENT_PROBES_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(machine_tasks.SAMPLE1_ENV, raising=False)
    monkeypatch.delenv(machine_tasks.OFFLINE_ENV, raising=False)
    return upstream


def test_the_real_format_keeps_the_period_and_drops_the_eos_attention(tmp_path):
    module = LookupTableDataModule(data_dir=str(sample_folder(tmp_path)), source_eos=False,
                                   target_eos=False)  # fmt: skip
    module.setup()
    assert "." in module.source_vocab
    row = module.datasets["train"][1]  # 100 t2 t1 . -> 100 000 001, attention 0 1 2 (3)
    source = [module.source_vocab[i] for i in row["source"]]
    assert source == ["100", "t2", "t1", "."]
    assert row["attention_target"].tolist() == [0, 1, 2]
    assert row["source_table"].tolist() == [-100, 1, 0, -100]
    with_eos = LookupTableDataModule(data_dir=str(tmp_path), source_eos=True, target_eos=True)
    with_eos.setup()
    assert with_eos.datasets["train"][1]["attention_target"].tolist() == [0, 1, 2, 3]


def test_download_is_checked_kept_and_then_read_from_the_cache(mirror):
    folder, origin = machine_tasks.resolve_sample1()
    assert origin == "a download into the data cache"
    assert folder == machine_tasks.cached_sample1()
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{s}.tsv" for s in SPLITS)
    assert machine_tasks.resolve_sample1(download=False) == (folder, "the data cache")
    module = LookupTableDataModule(data_dir="sample1", source_eos=False, target_eos=False)
    module.setup()
    assert module.splits["new_compositions"] == [("111 t3 t3 .", "111 100 100", "0 1 2 3")]


def test_a_changed_file_is_refused_and_nothing_is_kept(mirror):
    (mirror / "heldout_tables.tsv").write_text("000 t1 t3 .\t000 101 011\t0 1 2 3\n")
    with pytest.raises(ChecksumError, match="heldout_tables.tsv has SHA-256"):
        machine_tasks.resolve_sample1()
    cached = machine_tasks.cached_sample1()
    assert not (cached / "heldout_tables.tsv").exists()
    assert not [p for p in cached.iterdir() if p.name.endswith(".tmp")]


def test_the_environment_folder_must_be_sample1(mirror, tmp_path, monkeypatch):
    named = sample_folder(tmp_path / "named")
    monkeypatch.setenv(machine_tasks.SAMPLE1_ENV, str(named))
    assert machine_tasks.resolve_sample1() == (named, "$RECURRENT_PROBES_SAMPLE1")
    (named / "validation.tsv").write_text("010 t1 .\t010 110\t0 1 2\n")
    with pytest.raises(ChecksumError, match=r"validation.tsv missing or not machine-tasks' sampl"):
        machine_tasks.resolve_sample1()


def test_offline_the_reproduction_falls_back_with_a_notice(mirror, monkeypatch):
    monkeypatch.setattr(machine_tasks, "DOWNLOAD_URL", (mirror / "absent").as_uri())
    data = machine_tasks.lookup_data()
    assert data.data_dir is None and not data.is_paper_data
    assert data.notice.startswith("**Not the paper's data.**")
    assert machine_tasks.SAMPLE1_ENV in data.notice and ".17 against .05" in data.notice
    module = LookupTableDataModule(data_dir="sample1")
    with pytest.raises(machine_tasks.Sample1Unavailable, match="RECURRENT_PROBES_SAMPLE1") as error:
        module.prepare_data()
    assert str(error.value).endswith("offline: --data.init_args.data_dir null")
    assert machine_tasks.lookup_data().is_paper_data is False
    monkeypatch.setattr(machine_tasks, "DOWNLOAD_URL", mirror.as_uri())
    monkeypatch.setenv(machine_tasks.OFFLINE_ENV, "1")  # reachable, but told not to try
    assert not machine_tasks.lookup_data().is_paper_data
    monkeypatch.delenv(machine_tasks.OFFLINE_ENV)
    assert machine_tasks.lookup_data().is_paper_data
