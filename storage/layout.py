"""The run-folder layout, spelled once: every path inside a run folder comes from here.

A run trained by ``python -m experiments fit`` lives in ``<root>/<paper>/<variant>/seed=<s>/``
(:meth:`RunLayout.of`; a variant may hold a slash, e.g. ``pruned/guided``) and holds::

    config.yaml                       the LightningCLI config
    command.txt                       the command that trained it (written last: a finished run)
    train.log                         its output, when a reproduction trained it
    metrics.csv                       every logged metric (RunMetricsCSV)
    wandb_run_id                      its W&B run, continued on a resume
    .lock                             held while a process writes the run (RunFolderLock)
    checkpoints/{best,last}.ckpt      Lightning checkpoints, read with weights_only=True
    traces/<split>/<tag>.safetensors  what TraceRecorder recorded
    weights/<tag>.safetensors         WeightSnapshot's weights
    analysis.json                     a reproduction's cached analysis of the run
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunLayout:
    """The paths of one run folder (nothing is read or created here)."""

    path: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    @classmethod
    def of(cls, root: str | Path, paper: str, variant: str, seed: int | str) -> RunLayout:
        """The run of `paper`'s `variant` at `seed` under the run root `root`."""
        return cls(Path(root) / paper / variant / f"seed={seed}")

    @property
    def config(self) -> Path:
        return self.path / "config.yaml"

    @property
    def command(self) -> Path:
        return self.path / "command.txt"

    @property
    def train_log(self) -> Path:
        return self.path / "train.log"

    @property
    def metrics(self) -> Path:
        return self.path / "metrics.csv"

    @property
    def wandb_run_id(self) -> Path:
        return self.path / "wandb_run_id"

    @property
    def lock(self) -> Path:
        return self.path / ".lock"

    @property
    def analysis(self) -> Path:
        return self.path / "analysis.json"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    def checkpoint(self, tag: str) -> Path:
        return self.checkpoints / f"{tag}.ckpt"

    def traces(self, split: str) -> Path:
        return self.path / "traces" / split

    def trace(self, split: str, tag: str) -> Path:
        return self.traces(split) / f"{tag}.safetensors"

    @property
    def weights(self) -> Path:
        return self.path / "weights"

    def weight_snapshot(self, tag: str) -> Path:
        return self.weights / f"{tag}.safetensors"
