"""A fit that meets a full disk, a damaged `metrics.csv`, settings under which no validation runs,
or a checkpoint folder outside its run: one line saying what happened, and a run folder that
resumes, or is as it was.

Every fit is the tiny lookup-table run of `tests.tiny_run.TINY` (seed 3, 6 batches an epoch).
A full disk is simulated where the suite writes (`torch.save` raising what it raises on a full
disk, with the disk's free space read as none), so these tests run on any machine.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
import torch
import yaml

from experiments.cli import main
from lightning_modules.metrics_csv import RunMetricsCSV
from storage import RunLayout
from storage import files as storage_files
from storage.files import RunFileError, recorded_entries, write_atomic
from tests.test_received_runs import RUN, assert_same_run, fit, refused, state, write_config


@pytest.fixture()
def config(tmp_path) -> Path:
    return write_config(tmp_path)


class FullDisk:
    """`torch.save` raising what torch's C++ writer raises on a full disk from the `at`-th call
    on (`basic_ios::clear`, no errno), with the run's disk reading as full meanwhile."""

    def __init__(self, monkeypatch, at: int = 0):
        self.calls, self.at, self.real_save = 0, at, torch.save
        self.real_statvfs = os.statvfs
        monkeypatch.setattr(torch, "save", self.save)
        monkeypatch.setattr(storage_files.os, "statvfs", self.statvfs)

    @property
    def full(self) -> bool:
        return self.calls > self.at

    def save(self, checkpoint, file, *args, **kwargs):
        self.calls += 1
        if self.full:  # the first bytes, as a real writer leaves them
            if isinstance(file, (str, os.PathLike)):
                Path(file).write_bytes(b"PK\x03\x04")
            else:
                file.write(b"PK\x03\x04")
            raise RuntimeError("basic_ios::clear: iostream error")
        return self.real_save(checkpoint, file, *args, **kwargs)

    def statvfs(self, path):
        stats = self.real_statvfs(path)
        if not self.full:
            return stats
        return os.statvfs_result((*stats[:4], 0, *stats[5:]))  # f_bavail: no block free


def test_a_full_disk_before_the_first_checkpoint_is_one_line_and_leaves_no_run(
    config, tmp_path, capsys, monkeypatch
):
    FullDisk(monkeypatch)
    root = tmp_path / "runs"
    error = refused(capsys, "fit", "--config", str(config), "--run.root", str(root))
    run = root / RUN
    assert f"the disk holding {run} is full" in error, error
    assert "start the fit again" in error, error
    assert recorded_entries(run) == []  # nothing that a fresh fit would take for a run
    monkeypatch.undo()
    fit(config, root, "--trainer.max_epochs", "1")  # free space: a fresh fit starts
    assert RunLayout(run).checkpoint("last").is_file()


def test_a_full_disk_after_a_checkpoint_is_one_line_and_the_run_resumes(
    config, tmp_path, capsys, monkeypatch
):
    full = FullDisk(monkeypatch, at=3)  # best, then last of epoch 0, then best of epoch 1
    root = tmp_path / "runs"
    error = refused(capsys, "fit", "--config", str(config), "--run.root", str(root))
    run = root / RUN
    assert full.calls > 3
    assert f"the disk holding {run} is full" in error, error
    assert f"python -m experiments fit --resume {run}" in error, error
    assert not [p for p in run.rglob("*") if p.name.endswith(".tmp")]
    monkeypatch.undo()
    main(["fit", "--resume", str(run)])
    assert_same_run(run, fit(config, tmp_path / "whole"))


@pytest.mark.parametrize("raised", [
    OSError(errno.ENOSPC, "No space left on device"),
    OSError(errno.EDQUOT, "Disk quota exceeded"),
    RuntimeError("Error while serializing: I/O error: No space left on device (os error 28)"),
])  # fmt: skip
def test_an_atomic_write_on_a_full_disk_names_the_file(tmp_path, raised):
    def write(temporary):
        Path(temporary).write_text("half")
        raise raised

    with pytest.raises(OSError) as failed:
        write_atomic(tmp_path / "weights.safetensors", write)
    assert failed.value.errno == errno.ENOSPC
    assert failed.value.filename == str(tmp_path / "weights.safetensors")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_on_a_disk_with_space_keeps_its_own_error(tmp_path):
    def write(temporary):
        raise RuntimeError("a bug in a writer")

    with pytest.raises(RuntimeError, match="a bug in a writer"):
        write_atomic(tmp_path / "file", write)


# metrics.csv with a row whose step is missing.
def test_a_metrics_row_without_a_step_is_refused_not_dropped(tmp_path):
    logger = RunMetricsCSV(tmp_path)
    for step in range(3):
        logger.log_metrics({"train/loss": float(step)}, step=step)
    logger.save()
    path = tmp_path / "metrics.csv"
    lines = path.read_text().splitlines()
    assert lines[0] == "step,train/loss"
    lines[2] = "," + lines[2].split(",", 1)[1]  # line 3: step 1 without its step
    path.write_text("\n".join(lines) + "\n")
    before = path.read_text()
    with pytest.raises(RunFileError) as refusal:
        _ = RunMetricsCSV(tmp_path, keep_before_step=2).experiment  # a fit resumed at step 2
    assert f"{path}, line 3" in str(refusal.value) and "step" in str(refusal.value)
    assert path.read_text() == before
    assert RunMetricsCSV(tmp_path, keep_before_step=float("inf")).experiment  # validate, test
    assert path.read_text() == before


def test_resuming_a_run_whose_metrics_lack_a_step_is_one_line_and_changes_nothing(
    config, tmp_path, capsys
):
    run = fit(config, tmp_path / "runs", "--trainer.max_epochs", "1")
    metrics = RunLayout(run).metrics
    header, first, *rest = metrics.read_text().splitlines()
    at = header.split(",").index("step")
    cells = first.split(",")
    cells[at] = ""
    metrics.write_text("\n".join([header, ",".join(cells), *rest]) + "\n")
    before = state(run)
    error = refused(capsys, "fit", "--resume", str(run), "--trainer.max_epochs", "2")
    assert f"{metrics}, line 2 has no step" in error, error
    assert state(run) == before


# A fit during which no validation runs.
def test_a_fit_without_validation_says_so_and_tests_its_last_weights(config, tmp_path, capsys):
    run = fit(config, tmp_path / "runs", "--trainer.max_epochs", "2",
              "--trainer.check_val_every_n_epoch", "3")  # fmt: skip
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "no validation ran" in notes[0], notes
    assert "tested the last weights" in notes[0], notes
    assert not RunLayout(run).checkpoint("best").exists()
    header = RunLayout(run).metrics.read_text().splitlines()[0].split(",")
    assert "test/new_compositions/seq_acc" in header


# A ModelCheckpoint writing outside its run.
def test_a_checkpoint_folder_outside_the_run_is_one_line(config, tmp_path, capsys):
    settings = yaml.safe_load(config.read_text())
    elsewhere = tmp_path / "elsewhere"
    settings["trainer"]["callbacks"].append({
        "class_path": "pytorch_lightning.callbacks.ModelCheckpoint",
        "init_args": {"dirpath": str(elsewhere), "monitor": "val/seq_acc", "mode": "max"},
    })  # fmt: skip
    config.write_text(yaml.safe_dump(settings))
    root = tmp_path / "runs"
    error = refused(capsys, "fit", "--config", str(config), "--run.root", str(root))
    assert f"dirpath {elsewhere} is outside the run folder {root / RUN}" in error, error
    assert "remove dirpath" in error
    assert not elsewhere.exists() and recorded_entries(root / RUN) == []


def test_a_run_killed_before_its_first_checkpoint_is_refused_without_advice_to_resume(
    config, tmp_path, capsys
):
    run = tmp_path / "runs" / RUN
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(config.read_text())  # what a fit killed early leaves
    (run / "metrics.csv").write_text("step,train/loss_step\n0,2.5\n")
    error = refused(capsys, "fit", "--config", str(config), "--run.root", str(tmp_path / "runs"))
    assert "no checkpoints/last.ckpt to resume from" in error and "--run.replace true" in error
    assert "--resume" not in error
