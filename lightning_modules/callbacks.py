"""Callbacks that record what a model computes while it trains.

`TraceRecorder` serves every model of the suite through the model's one `trace(batch)` method
(sites named as in `lightning_modules.recurrent.SITES`); `WeightSnapshot` keeps its weights.
Both write safetensors files atomically under the run folder (`trainer.default_root_dir`), on
rank zero only, through `lightning_modules.recording`, which the probes use without Lightning.
"""

from __future__ import annotations

import copy
import math
import random
from datetime import timedelta

import numpy as np
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import Callback, ModelCheckpoint
from pytorch_lightning.utilities import move_data_to_device
from torch import Tensor, nn
from torchmetrics import MeanMetric, Metric

from lightning_modules.recording import record_traces, savable_state
from lightning_modules.splits import metric_key, metric_prefix
from lightning_modules.zeroed_units import zero_units
from storage import RunLayout
from storage.files import load_checkpoint, save_tensors_atomic
from storage.layout import UNTRAINED


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
        record_traces(model, trainer.datamodule, self.splits, trainer.default_root_dir, tag,
                      self.batch_size)  # fmt: skip

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


class ZeroUnits(Callback):
    """Zero every weight of `units` (by site, e.g. `{"encoder.hidden": [3]}`) at the start of a
    fit, left trainable (`lightning_modules.zeroed_units.zero_units`): after the `LoadWeights`
    listed before it, before the optimizer is built; a resumed fit restores its own checkpoint
    over them. Paper 1's section 5.2 pruned by zeroing weights instead of masking units."""

    def __init__(self, units: dict[str, list[int]]):
        self.units = units

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage == "fit":
            zero_units(pl_module, self.units)


class WeightSnapshot(Callback):
    """Save the model's weights to `<run>/weights/<tag>.safetensors`.

    Tags: `epoch=init` before training, `epoch=<e>` after epoch e (from 0) ends, for every
    `every_n_epochs`-th epoch and for each count of epochs done in `after_epochs` (n epochs done
    is `epoch=<n - 1>`; 0 is `epoch=init`), and `step=<n>` after each training step `n` in
    `at_steps` (`step=0` = before training), for analyses that follow the first steps of
    training (paper 3, Figure 5; the playground's steps are epochs).

    Args:
        every_n_epochs: snapshot after every this many training epochs (0: never).
        at_steps: global steps after which to snapshot.
        after_epochs: numbers of epochs done after which to snapshot.
    """

    def __init__(
        self,
        every_n_epochs: int = 10,
        at_steps: list[int] | None = None,
        after_epochs: list[int] | None = None,
    ):
        self.every_n_epochs = every_n_epochs
        self.at_steps = set(at_steps or [])
        self.after_epochs = set(after_epochs or [])

    def _save(self, trainer: pl.Trainer, pl_module: pl.LightningModule, tag: str) -> None:
        if trainer.is_global_zero:
            path = RunLayout(trainer.default_root_dir).weight_snapshot(tag)
            tensors, metadata = savable_state(pl_module.state_dict())
            save_tensors_atomic(tensors, path, metadata)

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.current_epoch == 0 and trainer.global_step == 0:
            self._save(trainer, pl_module, UNTRAINED)
            if 0 in self.at_steps:
                self._save(trainer, pl_module, "step=0")

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.global_step in self.at_steps:
            self._save(trainer, pl_module, f"step={trainer.global_step}")

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        epoch = trainer.current_epoch
        every = self.every_n_epochs and (epoch + 1) % self.every_n_epochs == 0
        if every or epoch + 1 in self.after_epochs:
            self._save(trainer, pl_module, f"epoch={epoch}")


class LoadWeights(Callback):
    """Start a fit from the weights of a trained run, optionally frozen.

    Paper 1's ablations (Baan et al. 2019, section 5) are fits configured this way: component
    substitution (5.1) loads a model's own checkpoint, then one component from the opposite
    model with `freeze: true`; pruning (5.2) loads the pruned model's checkpoint. Weights are
    loaded in `setup`, before the optimizer is built (so frozen parameters stay out of it); a
    resumed fit (`--ckpt_path`) then restores its own checkpoint over them.

    Args:
        checkpoint: a Lightning checkpoint of a model with the same parameter names.
        parameters: names or dotted prefixes of the parameters to take (e.g. `encoder` for
            every `encoder.*` parameter, `encoder.weight_ih_l0`); None takes all.
        freeze: stop training the loaded parameters.
    """

    def __init__(self, checkpoint: str, parameters: list[str] | None = None, freeze: bool = False):
        self.checkpoint = checkpoint
        self.parameters = list(parameters) if parameters is not None else None
        self.freeze = freeze

    def selected(self, names: list[str]) -> list[str]:
        """The names among `names` that `parameters` selects (each prefix must select one)."""
        if self.parameters is None:
            return list(names)
        chosen = []
        for prefix in self.parameters:
            matches = [n for n in names if n == prefix or n.startswith(prefix + ".")]
            if not matches:
                raise ValueError(
                    f"LoadWeights: {prefix!r} names no parameter of {self.checkpoint}; "
                    f"its parameters are {sorted(names)}."
                )
            chosen += [n for n in matches if n not in chosen]
        return chosen

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage != "fit":
            return
        state = load_checkpoint(self.checkpoint)["state_dict"]
        own = dict(pl_module.named_parameters())
        missing = [n for n in own if n not in state]
        if self.parameters is None and missing:
            raise ValueError(
                f"LoadWeights: {self.checkpoint} lacks {missing[:5]}: it is a checkpoint of "
                "another model; use a run of the same architecture."
            )
        names = self.selected([n for n in state if n in own])
        for name in names:
            if state[name].shape != own[name].shape:
                raise ValueError(
                    f"LoadWeights: {name} is {tuple(state[name].shape)} in {self.checkpoint} "
                    f"but {tuple(own[name].shape)} in this model: use a checkpoint of the same "
                    "architecture."
                )
        with torch.no_grad():
            for name in names:
                own[name].copy_(state[name])
                if self.freeze:
                    own[name].requires_grad_(False)


class TokenPositioningAccuracy(Metric):
    """Share of requested (token, position) signals whose token the model outputs at exactly
    that position (Lee et al., "Exposing the Functionalities of Neurons for GRU Seq2Seq",
    section 2: "whether the target token appears in the target position").

    `update(prediction [batch, time], signal_token [batch, signals], signal_position
    [batch, signals])` with 1-based positions; a position beyond the decoded steps counts as
    wrong. With several signals each one counts separately.
    """

    higher_is_better = True
    full_state_update = False

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.add_state("correct", torch.tensor(0.0), dist_reduce_fx="sum")
        self.add_state("total", torch.tensor(0.0), dist_reduce_fx="sum")

    def update(self, prediction: Tensor, signal_token: Tensor, signal_position: Tensor) -> None:
        index = (signal_position - 1).clamp(0, prediction.shape[1] - 1)
        output = prediction.gather(1, index)
        hit = (output == signal_token) & (signal_position <= prediction.shape[1])
        self.correct += hit.sum()
        self.total += hit.numel()

    def compute(self) -> Tensor:
        return self.correct / self.total


class TokenPositioningMetric(Callback):
    """Paper 4's metric as a callback: logs `<prefix>/position_acc` (`TokenPositioningAccuracy`,
    prefixes as `lightning_modules.splits.metric_prefix`: `train`, `val`, `test/<split>`) once
    per epoch for every stage whose batches carry `signal_token` and `signal_position`, from the
    greedy `prediction` the model's step returns. Name it in a config's callbacks (paper 4's do);
    the model itself knows no paper's metric."""

    def __init__(self) -> None:
        self.metrics: dict[str, TokenPositioningAccuracy] = {}

    def _update(self, pl_module, stage: str, split: str, outputs, batch) -> None:
        if "signal_token" not in batch:
            return
        prefix = metric_prefix(stage, split)
        if prefix not in self.metrics:
            self.metrics[prefix] = TokenPositioningAccuracy().to(pl_module.device)
        prediction = outputs["prediction"]
        self.metrics[prefix].update(prediction, batch["signal_token"], batch["signal_position"])

    def _log(self, pl_module, stage: str) -> None:
        for prefix, metric in self.metrics.items():
            if prefix.split("/")[0] == stage and metric.update_called:
                pl_module.log(f"{prefix}/position_acc", metric.compute(), add_dataloader_idx=False)
                metric.reset()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._update(pl_module, "train", "train", outputs, batch)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self._log(pl_module, "train")

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx,
                                dataloader_idx: int = 0) -> None:  # fmt: skip
        self._update(pl_module, "val", pl_module.val_splits[dataloader_idx], outputs, batch)

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        self._log(pl_module, "val")

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx,
                          dataloader_idx: int = 0) -> None:  # fmt: skip
        self._update(pl_module, "test", pl_module.test_splits[dataloader_idx], outputs, batch)

    def on_test_epoch_end(self, trainer, pl_module) -> None:
        self._log(pl_module, "test")


class SelectionScore(Callback):
    """Paper 1's model-selection rule as a callback: logs `val/selection`, the sequence accuracy
    on the validation split `val` with ties broken by lower validation loss,
    `seq_acc - 1e-4 * loss / (1 + loss)`, for a `ModelCheckpoint` to monitor.

    Paper 1 (section 2.4) selects models "by their best accuracy on a held-out set"; on its
    16-row validation set accuracy ties often, so the loss (whose share of the score is below
    1e-4, less than one row's worth of accuracy) decides between equal accuracies. Needs a
    model with `val_splits` and a `seq_acc` metric per split (`Seq2Seq`), and a split `val`.
    """

    def __init__(self) -> None:
        self.loss = MeanMetric()

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx,
                                dataloader_idx: int = 0) -> None:  # fmt: skip
        if pl_module.val_splits[dataloader_idx] == "val":
            self.loss = self.loss.to(outputs["loss"].device)
            self.loss.update(outputs["loss"], weight=batch["target"].shape[0])

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        if not self.loss.update_called:
            return
        loss = self.loss.compute()
        accuracy = pl_module.seq_acc[metric_key("val", "val")].compute()
        pl_module.log("val/selection", accuracy - 1e-4 * loss / (1 + loss))
        self.loss.reset()


class RandomState(Callback):
    """Keeps the random generators' states (torch, numpy, Python's `random`) in every checkpoint
    and restores them when a fit resumes from one, so that a resumed fit draws the same dropout
    masks and shuffles as an uninterrupted one (Lightning restores the model, optimizer and loops
    but not these). The states are stored as tensors, lists and ints, which a checkpoint read with
    `weights_only=True` accepts. The CLI adds it to every fit (`experiments.cli`)."""

    def state_dict(self) -> dict:
        name, keys, position, has_gauss, cached = np.random.get_state()
        version, python_state, gauss_next = random.getstate()
        return {
            "torch": torch.get_rng_state(),
            "numpy": [name, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, cached],
            "python": [version, list(python_state), gauss_next],
        }

    def load_state_dict(self, state_dict: dict) -> None:
        torch.set_rng_state(state_dict["torch"])
        name, keys, position, has_gauss, cached = state_dict["numpy"]
        np.random.set_state((name, keys.numpy().astype(np.uint32), position, has_gauss, cached))
        version, python_state, gauss_next = state_dict["python"]
        random.setstate((version, tuple(python_state), gauss_next))


class CheckpointWithinEpochs(ModelCheckpoint):
    """Lightning's `ModelCheckpoint` on a time interval, writing the run's `last.ckpt` every
    `minutes` (wall clock) inside the epochs (the configs' own `last` checkpoint writes it at each
    epoch's end), and at the end of the batch at hand when the fit gets SIGTERM (a cluster's time
    limit, a reproduction's sitting ending) before Lightning stops it there. A fit resumed from it
    continues exactly where it was: the training loaders skip the batches trained before
    (`datamodules.sampling.ResumableLoader`), and the checkpoint keeps the random generators
    (`RandomState`), what the epoch's means gathered so far (`EpochInProgress`) and a language
    model's carried states. The CLI adds it to every fit (`--run.checkpoint_minutes`)."""

    def __init__(self, minutes: float):
        super().__init__(filename="last", enable_version_counter=False,
                         train_time_interval=timedelta(minutes=minutes))  # fmt: skip

    def on_train_batch_end(self, trainer: pl.Trainer, *args, **kwargs) -> None:
        if trainer.received_sigterm:
            self._last_time_checked = -math.inf  # the interval counts as elapsed: write now
        super().on_train_batch_end(trainer, *args, **kwargs)


class EpochInProgress(Callback):
    """Keeps what the epoch in progress has accumulated towards its logged means in a checkpoint
    written inside it, and gives it back when a fit resumes from one, so that the epoch's means
    (`train/loss_epoch`, a model's torchmetrics such as `train/seq_acc`) cover the whole epoch as
    in an uninterrupted fit: the states of the model's torchmetrics `Metric`s, restored before the
    first resumed batch, and Lightning's running reductions of values logged with `on_epoch=True`
    (not kept in Lightning's checkpoints), joined with the resumed epoch's own after that batch
    (`saved + first`, the sum an uninterrupted fit computes). Written by hand: Lightning resumes
    the loops and weights, not these. What a checkpoint written at an epoch's end holds is
    dropped when the next epoch starts. The CLI adds it to every fit (`experiments.cli`)."""

    KEY = "epoch_in_progress"

    def __init__(self) -> None:
        self.saved: dict | None = None

    def on_save_checkpoint(self, trainer: pl.Trainer, pl_module, checkpoint: dict) -> None:
        if not trainer.training:
            return
        metrics = {
            name: {"states": dict(module.metric_state), "updates": module._update_count}
            for name, module in pl_module.named_modules() if isinstance(module, Metric)
        }  # fmt: skip
        logged = {
            key: {"value": result.value, "count": getattr(result, "cumulated_batch_size", None)}
            for key, result in trainer.fit_loop.epoch_loop._results.items()
            if getattr(result, "is_tensor", False) and result.meta.on_epoch
            and result.meta.fx != "on_train_epoch_end"  # logged again at the epoch's end
        }  # fmt: skip
        checkpoint[self.KEY] = {"metrics": metrics, "logged": logged}

    @classmethod
    def check(cls, checkpoint: dict, model: nn.Module) -> None:
        """Refuse, in one line, a checkpoint whose epoch in progress names metrics `model` lacks
        or holds other than tensors (another model's checkpoint, or a damaged one). The CLI
        calls it beside its other checks of a checkpoint, before the fit writes anything."""
        saved = checkpoint.get(cls.KEY)
        modules = dict(model.named_modules())
        if saved is not None and not (
            isinstance(saved, dict) and set(saved) == {"metrics", "logged"}
            and all(isinstance(modules.get(name), Metric) for name in saved["metrics"])
            and all(isinstance(entry.get("value"), Tensor) for entry in saved["logged"].values())
        ):  # fmt: skip
            raise ValueError(
                f"the checkpoint's {cls.KEY} does not match the model's metrics (another model's "
                "checkpoint, or a damaged one): resume from a checkpoint this model's fit wrote"
            )

    def on_load_checkpoint(self, trainer: pl.Trainer, pl_module, checkpoint: dict) -> None:
        self.saved = checkpoint.get(self.KEY)

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module) -> None:
        self.saved = None  # not called when a fit resumes inside an epoch

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module, batch, batch_idx) -> None:
        if self.saved is None:
            return
        modules = dict(pl_module.named_modules())
        for name, saved in self.saved["metrics"].items():
            metric = modules[name]
            for state, value in saved["states"].items():
                setattr(metric, state, move_data_to_device(value, metric.device))
            metric._update_count, metric._computed = saved["updates"], None

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module, outputs, batch, batch_idx):
        if self.saved is None:
            return
        results = trainer.fit_loop.epoch_loop._results
        for key, saved in self.saved["logged"].items():
            result = results.get(key)
            if result is None:  # logged in a hook a resumed epoch does not call again
                continue
            value = saved["value"].to(result.value.device)
            if result.meta.is_max_reduction or result.meta.is_min_reduction:
                result.value = result.meta.reduce_fx(value, result.value)
            else:
                result.value = value + result.value
            if saved["count"] is not None:
                count = saved["count"].to(result.cumulated_batch_size.device)
                result.cumulated_batch_size = count + result.cumulated_batch_size
        self.saved = None


class StepsInEpochs(Callback):
    """Runs a fit of `--trainer.max_steps` over a DataModule whose epoch is `steps_per_epoch`
    batches (paper 3's) as an epoch-based fit: `max_epochs` = the epochs those steps take,
    `max_steps` = -1, stopping after exactly the steps asked for. Lightning resumes an
    iteration-based fit (one with `max_steps`) from an epoch's last checkpoint one logging step
    off and with that epoch redrawn (a killed and resumed toy run then differs from an
    uninterrupted one); an epoch-based fit resumes exactly. Set before the loops' state is
    restored (`on_fit_start`); the CLI adds it to every fit (`experiments.cli`)."""

    def __init__(self) -> None:
        self.max_steps = -1

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        steps = trainer.fit_loop.epoch_loop.max_steps
        per_epoch = getattr(trainer.datamodule, "steps_per_epoch", None)
        if steps in (-1, None) or not isinstance(per_epoch, int) or per_epoch <= 0:
            return
        if trainer.limit_train_batches not in (1.0, None):
            return  # Lightning's epoch is then not `steps_per_epoch` batches
        epochs = -(-steps // per_epoch)
        if trainer.fit_loop.max_epochs not in (None, -1):
            epochs = min(epochs, trainer.fit_loop.max_epochs)
        self.max_steps = steps
        trainer.fit_loop.max_epochs = epochs
        trainer.fit_loop.epoch_loop.max_steps = -1

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module, outputs, batch, batch_idx):
        if self.max_steps != -1 and trainer.global_step >= self.max_steps:
            trainer.should_stop = True
