"""Callbacks for the kill-and-resume tests of step-based fits: when the fit is about to train its
`step`-th batch (after the checkpoints of the steps before it were written), the process ends at
once, as if killed (`KillAtStep`), is interrupted as by Ctrl-C (`InterruptAtStep`), or gets
SIGTERM, as from a cluster's time limit (`TerminateAtStep`: Lightning stops after that batch)."""

from __future__ import annotations

import os
import signal

from pytorch_lightning.callbacks import Callback


class KillAtStep(Callback):
    def __init__(self, step: int):
        self.step = step

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if trainer.global_step == self.step:
            os._exit(9)


class InterruptAtStep(KillAtStep):
    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if trainer.global_step == self.step:
            raise KeyboardInterrupt


class TerminateAtStep(KillAtStep):
    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if trainer.global_step == self.step:
            os.kill(os.getpid(), signal.SIGTERM)
