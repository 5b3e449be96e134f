"""Writers of the native data formats the suite reads, for tests that need such files on disk
(the suite itself only reads them)."""

from pathlib import Path

import torch

from datamodules.scan import SPLIT_FILES


def write_lookup_tables(splits: dict[str, list[tuple[str, ...]]], folder: str | Path) -> None:
    """``<split>.tsv`` files of tab-separated rows, as ``read_lookup_tables`` reads them."""
    for split, rows in splits.items():
        lines = "".join("\t".join(row) + "\n" for row in rows)
        (Path(folder) / f"{split}.tsv").parent.mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{split}.tsv").write_text(lines, encoding="utf-8")


def write_scan_split(splits: dict[str, list[tuple[str, str]]], folder: str | Path) -> None:
    """A split in SCAN's format (``IN: ... OUT: ...`` lines), as ``read_scan_split`` reads it."""
    for split, pairs in splits.items():
        lines = "".join(f"IN: {command} OUT: {actions}\n" for command, actions in pairs)
        (Path(folder) / SPLIT_FILES[split]).parent.mkdir(parents=True, exist_ok=True)
        (Path(folder) / SPLIT_FILES[split]).write_text(lines, encoding="utf-8")


def write_best_checkpoint(folder: str | Path, checkpoint: dict) -> Path:
    """``checkpoint`` as the run folder's ``checkpoints/best.ckpt``, as a fit leaves it; returns
    the run folder."""
    (Path(folder) / "checkpoints").mkdir(parents=True)
    torch.save(checkpoint, Path(folder) / "checkpoints" / "best.ckpt")
    return Path(folder)
