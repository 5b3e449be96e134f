"""The run-folder layout, spelled once: every path inside a run folder comes from here.

A run trained by ``python -m experiments fit`` lives in ``<root>/<paper>/<variant>/seed=<s>/``
(:meth:`RunLayout.of`; a variant may hold a slash, e.g. ``pruned/guided``) and holds::

    config.yaml                       the LightningCLI config
    started.txt                       the command a reproduction started it with
    sittings.json                     when each of a reproduction's fits of it ran (a resumed run
                                      has several): [{"started", "until"}, ...], seconds since
                                      the epoch, updated while it runs (sittings.SITTING_CLOCK)
    command.txt                       the command that trained it (written last: a finished run)
    train.log                         its output, when a reproduction trained it
    metrics.csv                       every logged metric (RunMetricsCSV)
    hparams.yaml                      the model's hyperparameters, as Lightning's CSV log keeps them
    wandb_run_id                      its W&B run, continued on a resume
    wandb/                            the W&B run's files (offline runs)
    .lock                             held while a process writes the run (RunFolderLock)
    .old-run/                         the run a `fit --run.replace` replaces, held until the fit
                                      ends (.old-run.moving and .old-run.deleting on its way
                                      aside and out: storage.replacement)
    checkpoints/{best,last}.ckpt      Lightning checkpoints, read with weights_only=True
    traces/<split>/<tag>.safetensors  what TraceRecorder recorded
    weights/<tag>.safetensors         WeightSnapshot's weights
    analysis.json                     a reproduction's cached analysis of the run
    analysis_<tag>.json               the same of its weight snapshot <tag> (e.g. epoch=init)
    measurements.json                 what a reproduction's report reads of the run (no weights)

A run folder is data: nothing in it is read or written through a symbolic link, the paths it keeps
about itself are relative to it, and class paths in its files are resolved only when trusted
(`storage.trusted_classes`). Every path here stays inside the run folder: a split, tag, paper,
seed or part of a variant that holds a path separator or `..` is one `RunNameError`.
"""

from __future__ import annotations

import os
from pathlib import Path

RUNS_ENV = "RECURRENT_PROBES_RUNS"
SCALE_ENV = "RECURRENT_PROBES_SCALE"
"""The scale of the reproduction running a fit (set by the reproduction for its fits), which the
fit's W&B run records in its config as `run.scale`."""


UNTRAINED = "epoch=init"
"""The weight snapshot of a run before its first update (`WeightSnapshot`): its untrained model,
the null model every claim about training is also judged on."""


class RunNameError(ValueError):
    """A split, tag or run name that would reach outside its folder (`checked_name`)."""


def checked_name(name: object, what: str) -> str:
    """`name` as it is, if it is one name of a file or folder: refused (one `RunNameError`) when
    it is empty or holds a path separator (`/`, `\\`), `..` or a NUL byte, which would make
    a path built from it leave the run folder."""
    if not isinstance(name, str) or not name or ".." in name or any(c in name for c in "/\\\0"):
        raise RunNameError(
            f"{name!r} is not a {what} name (it is empty or holds a path separator or '..'): "
            f"name a {what} the run folder holds."
        )
    return name


def default_run_root() -> str:
    """The run root when none is given (`--run.root`, a reproduction's `--runs`):
    ``$RECURRENT_PROBES_RUNS``, else ``runs`` in the working directory."""
    return os.environ.get(RUNS_ENV) or "runs"


class RunLayout:
    """The paths of one run folder (nothing is read or created here)."""

    MEASUREMENTS = "measurements.json"

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.config = self.path / "config.yaml"
        self.started = self.path / "started.txt"
        self.sittings = self.path / "sittings.json"
        self.command = self.path / "command.txt"
        self.train_log = self.path / "train.log"
        self.metrics = self.path / "metrics.csv"
        self.wandb_run_id = self.path / "wandb_run_id"
        self.lock = self.path / ".lock"
        self.old_run = self.path / ".old-run"
        self.old_run_moving = self.path / ".old-run.moving"
        self.old_run_deleting = self.path / ".old-run.deleting"
        self.analysis = self.path / "analysis.json"
        self.measurements = self.path / self.MEASUREMENTS
        self.measurement_parts = self.path / "measurements.parts.json"
        self.checkpoints = self.path / "checkpoints"
        self.weights = self.path / "weights"

    def __repr__(self) -> str:
        return f"RunLayout({str(self.path)!r})"

    @classmethod
    def of(cls, root: str | Path, paper: str, variant: str, seed: int | str) -> RunLayout:
        """The run of `paper`'s `variant` at `seed` under the run root `root` (a variant of
        several parts, `pruned/guided`, is folders within folders)."""
        variant_parts = [checked_name(part, "variant") for part in str(variant).split("/")]
        seed = checked_name(str(seed), "seed")
        return cls(Path(root, checked_name(paper, "paper"), *variant_parts, f"seed={seed}"))

    def checkpoint(self, tag: str) -> Path:
        return self.checkpoints / f"{checked_name(tag, 'checkpoint')}.ckpt"

    def traces(self, split: str) -> Path:
        return self.path / "traces" / checked_name(split, "split")

    def trace(self, split: str, tag: str) -> Path:
        return self.traces(split) / f"{checked_name(tag, 'tag')}.safetensors"

    def trace_analysis(self, split: str, tag: str) -> Path:
        """Probe results of the trace at `split` and `tag` that order its units in the view
        (`{"analysis": ...}`, as a run's measurements hold them)."""
        return self.traces(split) / f"{checked_name(tag, 'tag')}.analysis.json"

    def analysis_at(self, tag: str) -> Path:
        """The cached analysis of checkpoint `best` (`analysis`) or of another tag."""
        tag = checked_name(tag, "tag")
        return self.analysis if tag == "best" else self.path / f"analysis_{tag}.json"

    def weight_snapshot(self, tag: str) -> Path:
        return self.weights / f"{checked_name(tag, 'weight snapshot')}.safetensors"
