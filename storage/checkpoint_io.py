"""Lightning's checkpoints of a run, written atomically (`storage.files.write_atomic`) and read
as data (`storage.files.load_checkpoint`), with the paths a checkpoint keeps relative to its run.
Apart from `storage.files` so that what only reads or writes a run's files does not import
Lightning (seconds of CPU in every process that rebuilds a report)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import torch
from pytorch_lightning.plugins.io import TorchCheckpointIO

from storage.files import load_checkpoint, write_atomic

CHECKPOINT_PATH_KEYS = ("dirpath", "best_model_path", "kth_best_model_path", "last_model_path")
"""The paths a `ModelCheckpoint` keeps in its state (and `best_k_models`, keyed by path)."""


def _rebased(state: object, rebase: Callable[[str], str]) -> object:
    """A callback's state with its checkpoint paths passed through `rebase`."""
    if not isinstance(state, dict) or "best_model_path" not in state:
        return state
    state = dict(state)
    for key in CHECKPOINT_PATH_KEYS:
        if isinstance(state.get(key), str) and state[key]:
            state[key] = rebase(state[key])
    if isinstance(state.get("best_k_models"), dict):
        state["best_k_models"] = {rebase(str(k)): v for k, v in state["best_k_models"].items()}
    return state


def _save_to_file(checkpoint: dict, path: str) -> None:
    """`torch.save` through a Python file, whose writes raise an OSError with the errno of a full
    disk (torch's own writer to a path raises a RuntimeError without one)."""
    with open(path, "wb") as file:
        torch.save(checkpoint, file)


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning checkpoints written to a temporary file and renamed into place, read with
    `load_checkpoint`. With `run_dir`, the paths `ModelCheckpoint` keeps in a checkpoint (its
    folder, best and last checkpoints) are written relative to the run folder and read against
    the folder the checkpoint is read in: a copied or moved run resumes with its own files."""

    def __init__(self, run_dir: str | os.PathLike | None = None):
        super().__init__()
        self.run_dir = os.path.abspath(run_dir) if run_dir is not None else None

    def _relative(self, path: str) -> str:
        for base in (self.run_dir, os.path.realpath(self.run_dir)):
            if os.path.isabs(path) and os.path.commonpath([base, path]) == base:
                return Path(os.path.relpath(path, base)).as_posix()
        return path

    def _absolute(self, path: str) -> str:
        return path if os.path.isabs(path) else os.path.join(self.run_dir, path)

    def _with_paths(self, checkpoint: dict, rebase: Callable[[str], str]) -> dict:
        states = checkpoint.get("callbacks")
        if self.run_dir is None or not isinstance(states, dict):
            return checkpoint
        rebased = {key: _rebased(state, rebase) for key, state in states.items()}
        return {**checkpoint, "callbacks": rebased}

    def save_checkpoint(self, checkpoint, path, storage_options=None) -> None:
        checkpoint = self._with_paths(checkpoint, self._relative)
        write_atomic(path, lambda temporary: _save_to_file(checkpoint, temporary))

    def load_checkpoint(self, path, map_location=None, weights_only=None):
        return self._with_paths(load_checkpoint(path), self._absolute)
