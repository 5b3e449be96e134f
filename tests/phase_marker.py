"""A callback for the kill-and-resume tests: it writes which phase and batch a fit is in to a
file, and sleeps at each batch so that a test can kill the fit inside a chosen phase."""

from __future__ import annotations

import os
import time
from pathlib import Path

from pytorch_lightning.callbacks import Callback


class PhaseMarker(Callback):
    def __init__(self, path: str, seconds: float = 0.0):
        self.path = Path(path)
        self.seconds = seconds

    def _mark(self, trainer, phase: str, batch_idx: int) -> None:
        text = f"{phase} {trainer.current_epoch} {batch_idx}"
        temporary = self.path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(text)
        os.replace(temporary, self.path)
        time.sleep(self.seconds)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self._mark(trainer, "train", batch_idx)

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dl_idx=0):
        if not trainer.sanity_checking:
            self._mark(trainer, "validation", batch_idx)

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dl_idx=0):
        self._mark(trainer, "test", batch_idx)
