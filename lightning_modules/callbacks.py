"""Callbacks that record what a model computes while it trains.

`TraceRecorder` serves every model of the suite through the model's one `trace(batch)` method
(sites named as in `lightning_modules.recurrent.SITES`); `WeightSnapshot` keeps its weights.
Both write safetensors files atomically under the run folder (`trainer.default_root_dir`), on
rank zero only.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from pytorch_lightning.callbacks import Callback, ModelCheckpoint
from torch import Tensor

from lightning_modules.run_files import load_checkpoint, save_tensors_atomic


def pad_and_concatenate(chunks: list[Tensor]) -> Tensor:
    """Concatenate along dim 0, zero-padding every other dim to the largest size."""
    shape = [max(c.shape[d] for c in chunks) for d in range(chunks[0].dim())]
    padded = []
    for chunk in chunks:
        pad = []
        for dim in reversed(range(1, chunk.dim())):
            pad += [0, shape[dim] - chunk.shape[dim]]
        padded.append(F.pad(chunk, pad) if any(pad) else chunk)
    return torch.cat(padded)


@torch.no_grad()
def record_split(model: pl.LightningModule, loader) -> dict[str, Tensor]:
    """`model.trace` over every batch of `loader`, with the batch itself under `batch.<key>`."""
    was_training = model.training
    model.eval()
    chunks: dict[str, list[Tensor]] = {}
    try:
        for batch in loader:
            batch = {k: v.to(model.device) for k, v in batch.items()}
            traced = model.trace(batch)
            traced.update({f"batch.{key}": value for key, value in batch.items()})
            for key, value in traced.items():
                chunks.setdefault(key, []).append(value)
    finally:
        model.train(was_training)
    return {key: pad_and_concatenate(values) for key, values in chunks.items()}


class TraceRecorder(Callback):
    """Record `trace(batch)` plus the inputs and labels of chosen splits.

    Writes `<run>/traces/<split>/epoch=<e>.safetensors` after every `every_n_epochs` training
    epochs (0 = never) and, when the fit ends, `<run>/traces/<split>/best.safetensors` from the
    best checkpoint of the run's `ModelCheckpoint`.

    Args:
        splits: split names the DataModule's `split_dataloader(name)` knows.
        every_n_epochs: record every this many epochs (0: only at the best checkpoint).
        at_best: record the best checkpoint when the fit ends.
        batch_size: rows per traced batch (recording only; training is unaffected).
    """

    def __init__(
        self,
        splits: list[str] | None = None,
        every_n_epochs: int = 10,
        at_best: bool = True,
        batch_size: int = 256,
    ):
        self.splits = list(splits or ["validation"])
        self.every_n_epochs = every_n_epochs
        self.at_best = at_best
        self.batch_size = batch_size

    def record(self, trainer: pl.Trainer, model: pl.LightningModule, tag: str) -> None:
        if not trainer.is_global_zero:
            return
        datamodule = trainer.datamodule
        for split in self.splits:
            loader = datamodule.split_dataloader(split, batch_size=self.batch_size)
            tensors = record_split(model, loader)
            path = Path(trainer.default_root_dir) / "traces" / split / f"{tag}.safetensors"
            save_tensors_atomic(tensors, path, {"split": split, "tag": tag})

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        epoch = trainer.current_epoch
        if self.every_n_epochs and (epoch + 1) % self.every_n_epochs == 0:
            self.record(trainer, pl_module, f"epoch={epoch}")

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        checkpoint = trainer.checkpoint_callback
        if not (self.at_best and isinstance(checkpoint, ModelCheckpoint)):
            return
        if not checkpoint.best_model_path:
            return
        best = copy.deepcopy(pl_module)
        best.load_state_dict(load_checkpoint(checkpoint.best_model_path)["state_dict"])
        self.record(trainer, best, "best")


class WeightSnapshot(Callback):
    """Save the model's weights to `<run>/weights/epoch=<e>.safetensors` every N epochs.

    Args:
        every_n_epochs: snapshot after every this many training epochs (and before training
            as `epoch=init`).
    """

    def __init__(self, every_n_epochs: int = 10):
        self.every_n_epochs = every_n_epochs

    def _save(self, trainer: pl.Trainer, pl_module: pl.LightningModule, tag: str) -> None:
        if trainer.is_global_zero:
            path = Path(trainer.default_root_dir) / "weights" / f"{tag}.safetensors"
            save_tensors_atomic(dict(pl_module.state_dict()), path)

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.current_epoch == 0:
            self._save(trainer, pl_module, "epoch=init")

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        epoch = trainer.current_epoch
        if self.every_n_epochs and (epoch + 1) % self.every_n_epochs == 0:
            self._save(trainer, pl_module, f"epoch={epoch}")
