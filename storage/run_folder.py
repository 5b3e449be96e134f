"""A reader of the run folders that `python -m experiments fit` writes.

`<run>/checkpoints/{best,last}.ckpt` (Lightning, read with `weights_only=True`),
`<run>/traces/<split>/<tag>.safetensors` (`TraceRecorder`), `<run>/weights/<tag>.safetensors`
(`WeightSnapshot`) and `<run>/metrics.csv`. A missing or unreadable file is one `RunFileError`
naming the file and the fix. A checkpoint is data: the classes it names are imported only when
they are the suite's or named by the user (`storage.trusted_classes`). A folder that a killed
`fit --run.replace` left mid-replacement is first restored to its old run (`storage.replacement`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file
from torch import Tensor

from storage.files import RunFileError, load_checkpoint
from storage.layout import UNTRAINED, RunLayout
from storage.replacement import settle_replacement
from storage.trusted_classes import check_class_paths, resolve_class

if TYPE_CHECKING:  # imported by `model` and `datamodule`: reading a run's files needs no Lightning
    from pytorch_lightning import LightningModule

CHECKPOINT_FIX = "pick another checkpoint (python -m probes ... --checkpoint best|last|epoch=N)"


def safetensors_keys(path: Path, fix: str) -> set[str]:
    """The tensor names a safetensors file holds, read from its header only; a missing or
    unreadable file is one `RunFileError`: "<path> is corrupt (<error>): <fix>"."""
    try:
        with safe_open(path, "pt") as handle:
            return set(handle.keys())
    except (SafetensorError, OSError) as error:
        raise RunFileError(f"{path} is corrupt ({error}): {fix}") from None


class RunFolder:
    """One recorded run, e.g. `RunFolder("runs/paper1/guided/seed=1")`.

    `trusted_classes`: class paths beyond the suite's own that its checkpoints may name (the
    user's own models and DataModules, e.g. from `--trust-class`).
    """

    def __init__(self, path: str | Path, trusted_classes: Sequence[str] = ()):
        self.path = Path(path)
        self.files = RunLayout(self.path)
        self.trusted_classes = tuple(trusted_classes)
        self._checkpoints: dict[str, dict] = {}
        if not self.path.is_dir():
            raise RunFileError(
                f"Run folder {self.path} does not exist: train it first "
                "(python -m experiments fit --config ...) or give the right --runs path."
            )
        settle_replacement(self.path, purpose="read it")

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    def checkpoint(self, tag: str = "best") -> dict:
        """The Lightning checkpoint `checkpoints/<tag>.ckpt` (`best`, `last`, ...), read once per
        folder object: `model`, `datamodule`, `state_dict` and `model_class_path` share it
        (treat it as read-only). Reading it imports nothing; `model` and `datamodule` resolve
        the classes it names against the trusted ones first."""
        if tag not in self._checkpoints:
            self._checkpoints[tag] = load_checkpoint(self.checkpoint_path(tag), fix=CHECKPOINT_FIX)
        return self._checkpoints[tag]

    def checkpoint_path(self, tag: str = "best") -> Path:
        return self.files.checkpoint(tag)

    def state_dict(self, tag: str = "best") -> dict[str, Tensor]:
        """Weights by parameter name: a checkpoint tag, or a snapshot tag (`epoch=init`,
        `epoch=<e>`, `step=<n>`)."""
        if is_snapshot(tag):
            return self._safetensors(self.weights_path(tag), "WeightSnapshot")
        return self.checkpoint(tag)["state_dict"]

    def settings_tag(self, tag: str = "best") -> str:
        """The checkpoint whose settings (hyperparameters, classes) build the model and DataModule
        of `tag`: `tag` itself, or for a weight snapshot (weights only) the run's `last`
        checkpoint, else its `best`: one run, one set of settings."""
        if not is_snapshot(tag):
            return tag
        return next((t for t in ("last", "best") if self.checkpoint_path(t).is_file()), "last")

    def model(self, tag: str = "best") -> LightningModule:
        """The run's model with the weights of checkpoint or weight snapshot `tag` (`epoch=init`:
        the untrained model), in evaluation mode; its class and settings from the checkpoint
        `settings_tag(tag)` (its `_class_path`; runs from before the CLI recorded it are
        `Seq2Seq`)."""
        from pytorch_lightning import LightningModule

        source = self.settings_tag(tag)
        settings = self.checkpoint(source)["hyper_parameters"]
        model_class = self._trusted_class(
            settings, self.model_class_path(source), LightningModule, source
        )
        accepted = inspect.signature(model_class).parameters  # the CLI may store linked extras
        model = model_class(**{k: v for k, v in settings.items() if k in accepted})
        model.load_state_dict(self.state_dict(tag))
        return model.eval()

    def datamodule(self, tag: str = "best"):
        """The run's DataModule, rebuilt from the settings of checkpoint `settings_tag(tag)` and
        set up."""
        from pytorch_lightning import LightningDataModule

        tag = self.settings_tag(tag)
        settings = self.checkpoint(tag).get("datamodule_hyper_parameters")
        if not settings or "_class_path" not in settings:
            raise RunFileError(
                f"{self.checkpoint_path(tag)} does not say which DataModule trained it: train "
                "the run through `python -m experiments fit`."
            )
        data_class = self._trusted_class(
            settings, settings["_class_path"], LightningDataModule, tag
        )
        data = data_class(**{k: v for k, v in settings.items() if not k.startswith("_")})
        data.prepare_data()
        data.setup("test")
        return data

    def _trusted_class(self, settings: dict, class_path: str, base: type, tag: str) -> type:
        """The class that `settings` (the checkpoint's hyperparameters of a model or DataModule)
        are built with: every class path in them trusted, `class_path` a subclass of `base`."""
        where = str(self.checkpoint_path(tag))
        check_class_paths(settings, where, self.trusted_classes)
        return resolve_class(class_path, base, where, self.trusted_classes)

    def trace(
        self, split: str, tag: str = "best", keys: Sequence[str] | None = None
    ) -> dict[str, Tensor]:
        """What `TraceRecorder` stored for `split` at `tag`: sites `[batch, time, units]` and the
        batch under `batch.<key>`; with `keys`, only those, read from the memory-mapped file
        (the rest of the file is never loaded)."""
        return self._safetensors(self.trace_path(split, tag), "TraceRecorder", keys)

    def trace_path(self, split: str, tag: str = "best") -> Path:
        return self.files.trace(split, tag)

    def trace_tags(self, split: str) -> list[str]:
        """The tags recorded for `split`: `best` first, then `epoch=N` by N, then the rest."""
        return sorted(
            (p.stem for p in self.files.traces(split).glob("*.safetensors")), key=tag_order
        )

    def checkpoint_tags(self) -> list[str]:
        """Checkpoints (`best`, `last`) and weight snapshots (`epoch=init`, `epoch=N`, `step=N`)."""
        stems = [p.stem for p in self.files.checkpoints.glob("*.ckpt")]
        stems += [p.stem for p in self.files.weights.glob("*.safetensors")]
        return sorted(stems, key=tag_order)

    def weights_path(self, tag: str = "best") -> Path:
        """The file `state_dict(tag)` reads."""
        if is_snapshot(tag):
            return self.files.weight_snapshot(tag)
        return self.checkpoint_path(tag)

    def model_class_path(self, tag: str = "best") -> str:
        """The class that trained the run, from its checkpoint (`Seq2Seq` for runs from before the
        CLI recorded it; a weight snapshot's from `settings_tag`)."""
        settings = self.checkpoint(self.settings_tag(tag))["hyper_parameters"]
        return settings.get("_class_path", "lightning_modules.seq2seq.Seq2Seq")

    def metrics(self) -> pd.DataFrame:
        path = self.files.metrics
        if not path.is_file():
            raise RunFileError(f"{path} does not exist: the run has not logged any metrics yet.")
        return pd.read_csv(path)

    def test_accuracy(self, split: str, metric: str = "seq_acc") -> float:
        """`metric` (sequence accuracy unless told, e.g. `accuracy` for a classifier) of the tested
        checkpoint on `split` (the last logged value)."""
        metrics = self.metrics()
        column = f"test/{split}/{metric}"
        if column not in metrics or metrics[column].dropna().empty:
            raise RunFileError(
                f"{self.path / 'metrics.csv'} has no {column}: the fit did not finish its test; "
                "train the run again."
            )
        return float(metrics[column].dropna().iloc[-1])

    @staticmethod
    def _safetensors(
        path: Path, writer: str, keys: Sequence[str] | None = None
    ) -> dict[str, Tensor]:
        if not path.is_file():
            raise RunFileError(
                f"{path} does not exist: record it with the {writer} callback "
                "(see experiments/configs/paper1/*.yaml) or pick another split or tag."
            )
        try:
            if keys is None:
                return load_file(path)
            with safe_open(path, "pt") as handle:
                missing = sorted(set(keys) - set(handle.keys()))
                if missing:
                    raise RunFileError(
                        f"{path} has no {', '.join(missing)} (it holds "
                        f"{', '.join(sorted(handle.keys()))}): record those sites, or probe "
                        "one it holds."
                    )
                return {key: handle.get_tensor(key) for key in keys}
        except (SafetensorError, OSError, ValueError) as error:
            raise RunFileError(
                f"{path} is corrupt ({error}): delete it and record the run again."
            ) from None


def is_snapshot(tag: str) -> bool:
    """`tag` names a weight snapshot (`WeightSnapshot`: `epoch=init`, `epoch=<e>`, `step=<n>`),
    not a checkpoint."""
    return tag.startswith(("epoch=", "step="))


def tag_order(tag: str) -> tuple:
    """Sort key of checkpoint and trace tags: `best`, `last`, `epoch=init`, `epoch=N` and
    `step=N` by N, anything else by name."""
    named = {"best": 0, "last": 1, UNTRAINED: 2}
    if tag in named:
        return (named[tag], 0, "")
    match = re.fullmatch(r"(epoch|step)=(\d+)", tag)
    if match:
        return (3 if match[1] == "epoch" else 4, int(match[2]), "")
    return (5, 0, tag)
