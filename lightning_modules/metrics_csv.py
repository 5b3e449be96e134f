"""`<run>/metrics.csv` that survives a resume and a kill.

Lightning's `CSVLogger` deletes an existing `metrics.csv` when it starts (a resumed fit kept only
the epochs after the resume) and rewrites the file in place when a new column appears (a kill
then left it at 0 bytes). `RunMetricsCSV` keeps the rows logged before the step a fit resumes
from (the rows after it are logged again by the resumed fit, so every epoch is there once),
replaces the file atomically whenever its header changes, and otherwise appends the new rows in
one write that is undone if it fails (a full disk leaves the file as it was). Lightning lacks this
behaviour, hence this small subclass.
"""

from __future__ import annotations

import csv
import io
import math
import os

from pytorch_lightning.core.saving import save_hparams_to_yaml
from pytorch_lightning.loggers import CSVLogger
from pytorch_lightning.loggers.csv_logs import ExperimentWriter
from pytorch_lightning.loggers.logger import rank_zero_experiment

from storage.files import RunFileError, as_full_disk, open_own, write_atomic, write_text_atomic


def _csv_text(rows: list[dict], keys: list[str], header: bool) -> str:
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=keys, lineterminator="\n")
    if header:
        writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()


def _read_csv(path: str) -> tuple[list[str], list[tuple[int, dict]]]:
    """The header and rows (each with the line it ends on) of the CSV file at `path` (none if
    there is no file), as Lightning or a spreadsheet saved it (a byte-order mark and CRLF line
    ends are read as plain text); never read through a symbolic link."""
    if not os.path.lexists(path):
        return [], []
    with os.fdopen(open_own(path, os.O_RDONLY), newline="", encoding="utf-8-sig") as file:
        reader = csv.DictReader(file)
        rows = [(reader.line_num, row) for row in reader]
        return list(reader.fieldnames or []), rows


class _MetricsWriter(ExperimentWriter):
    """Lightning's writer, keeping the rows with step < `keep_before_step` of an existing file."""

    def __init__(self, log_dir: str, keep_before_step: float):
        super().__init__(log_dir)  # Lightning's `_check_log_dir_exists` is a no-op below
        kept: list[dict] = []
        if keep_before_step > 0:
            self.metrics_keys, kept = kept_rows(self.metrics_file_path, keep_before_step)
        if self.metrics_keys:
            write_text_atomic(self.metrics_file_path, _csv_text(kept, self.metrics_keys, True))
        elif os.path.isfile(self.metrics_file_path):
            os.remove(self.metrics_file_path)  # a fresh fit: the old run's rows go

    def _check_log_dir_exists(self) -> None:
        pass

    def log_hparams(self, params: dict) -> None:
        """Lightning's `hparams.yaml`, written atomically (a link there is replaced, not
        followed)."""
        self.hparams.update(params)
        path = os.path.join(self.log_dir, self.NAME_HPARAMS_FILE)
        write_atomic(path, lambda temporary: save_hparams_to_yaml(temporary, self.hparams))

    def save(self) -> None:
        if not self.metrics:
            return
        if self._record_new_keys() or not os.path.isfile(self.metrics_file_path):
            _, rows = _read_csv(self.metrics_file_path)
            text = _csv_text([row for _, row in rows] + self.metrics, self.metrics_keys, True)
            write_text_atomic(self.metrics_file_path, text)
        else:
            _append(self.metrics_file_path, _csv_text(self.metrics, self.metrics_keys, False))
        self.metrics = []


def kept_rows(path: str, keep_before_step: float) -> tuple[list[str], list[dict]]:
    """The header of the `metrics.csv` at `path` and its rows logged before `keep_before_step`
    (all of them for `math.inf`). A row whose step is not a number is one `RunFileError` naming
    its line: where it stands against a checkpoint's step is unknown, so it is neither dropped
    (it would be lost) nor kept (it could be logged twice)."""
    keys, rows = _read_csv(path)
    if keep_before_step == math.inf:
        return keys, [row for _, row in rows]
    kept = []
    for line, row in rows:
        cell = (row.get("step") or "").strip()
        try:
            step = float(cell)
        except ValueError:
            step = math.nan
        if not math.isfinite(step):
            held = f"step {cell!r}, not a number" if cell else "no step"
            raise RunFileError(
                f"{path}, line {line} has {held}: a resumed fit keeps the rows logged before its "
                "checkpoint's step; write the row's step (its global step, as in the rows around "
                "it) or delete the row, then resume again."
            )
        if step < keep_before_step:
            kept.append(row)
    return keys, kept


def _append(path: str, text: str) -> None:
    """Append `text` in one write; on any failure cut the file back to its old length."""
    data = text.encode("utf-8")
    handle = open_own(path, os.O_WRONLY | os.O_APPEND)
    try:
        size = os.fstat(handle).st_size
        try:
            if os.write(handle, data) != len(data):
                raise OSError(f"short write to {path}")
        except BaseException as error:
            os.ftruncate(handle, size)
            full = as_full_disk(error, path)
            if full is not None:
                raise full from None
            raise
    finally:
        os.close(handle)


class RunMetricsCSV(CSVLogger):
    """`CSVLogger` writing `<save_dir>/metrics.csv`.

    Args:
        save_dir: the run folder.
        keep_before_step: rows of an existing file kept: those logged before this global step
            (0, a fresh fit: none; a resumed fit: its checkpoint's `global_step`; `math.inf`, a
            `validate` or `test` of a finished run: all).
    """

    def __init__(self, save_dir, keep_before_step: float = 0, **kwargs):
        super().__init__(save_dir=save_dir, name="", version="", **kwargs)
        self.keep_before_step = keep_before_step

    @property
    @rank_zero_experiment
    def experiment(self) -> ExperimentWriter:
        if self._experiment is None:
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = _MetricsWriter(self.log_dir, self.keep_before_step)
        return self._experiment
