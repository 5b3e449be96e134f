"""The small classifiers of paper 3 (*Gradient Descent Resists Compositionality*).

- `two_digit_cnn` (section 5.1, Appendix A), on 28 x 56 images of two digits: conv 3x3x32 ReLU,
  max-pool 2x2, conv 3x3x64 ReLU, flatten, then `hidden_sizes` dense ReLU layers (the configs:
  two of 64, as the authors' `mnist.py` lines 131-136 at BCDLSG efb6c20) and dense `num_classes`
  (linear, line 139). Trained with Adam and a multi-class hinge loss: "We use hinge loss" is
  Keras's `categorical_hinge` in the authors' code (line 154; `categorical_hinge_loss`), torch's
  `MultiMarginLoss` (Weston & Watkins' form, `multi_margin`) is kept as an option. As their
  TensorFlow program ran, the layers can start from Keras's defaults (`init="keras"`: Glorot
  uniform weights, zero biases) and Adam can put its epsilon where Keras does (`KerasAdam`).
- `mlp` (section 6, Appendix C), on 2-d points: `hidden_sizes` fully connected ReLU layers (three
  of 8) and `num_classes` linear outputs, trained with plain SGD (the TensorFlow Playground's
  optimizer) and cross-entropy; or, as the TensorFlow Playground the authors ran it in
  (`loss="playground_square"`, `init="playground"`), one tanh output unit o trained by the
  square loss 0.5 (o - t)^2 on targets t = +-1 (`tensorflow/playground` `src/nn.ts` lines 94-98,
  115-121; `src/playground.ts` lines 956-957: a classification's output is tanh), with the
  playground's initialisation: weights U(-0.5, 0.5) (`src/nn.ts` line 161, `Math.random() -
  0.5`) and biases 0.1 (line 25). The one unit is served as the two logits [-o, o] (`TwoLogits`),
  so the prediction (o > 0: Y1 = 1), the accuracy and softmax probabilities (P(Y1 = 1) =
  sigmoid(2 o), 0.5 on the playground's boundary o = 0) work as for two outputs.

`trace(batch)` records each fully connected hidden layer after its ReLU (`hidden.<i>`,
`[batch, units]`, units from 0), the `logits` and the `prediction`; convolution maps are not
recorded (45k values per image).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Literal

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MeanMetric
from torchmetrics.classification import MulticlassAccuracy

from lightning_modules.recurrent import Intervenable
from lightning_modules.splits import metric_key, metric_prefix

LOSSES = ("categorical_hinge", "multi_margin", "cross_entropy", "playground_square")
OPTIMIZERS = ("adam", "keras_adam", "sgd")
INITS = ("torch", "playground", "keras")
IMAGE_SHAPE = (1, 28, 56)
"""Channels, height, width of a two-digit image (section 5.1)."""


class TwoLogits(nn.Module):
    """One output o `[batch, 1]` as the two logits `[-o, o]` of classes 0 and 1."""

    def forward(self, output: Tensor) -> Tensor:
        return torch.cat([-output, output], dim=-1)


def build_network(
    architecture: str,
    input_size: int,
    hidden_sizes: Sequence[int],
    num_classes: int,
    tanh_unit: bool = False,
) -> nn.Sequential:
    """The layers, named so that `hidden<i>`/`relu<i>` are the fully connected hidden layers;
    with `tanh_unit` (two classes) the output is one tanh unit served as two logits."""
    layers: OrderedDict[str, nn.Module] = OrderedDict()
    if architecture == "two_digit_cnn":
        channels, height, width = IMAGE_SHAPE
        layers.update(
            conv0=nn.Conv2d(channels, 32, 3), conv_relu0=nn.ReLU(), pool=nn.MaxPool2d(2),
            conv1=nn.Conv2d(32, 64, 3), conv_relu1=nn.ReLU(), flatten=nn.Flatten(),
        )  # fmt: skip
        input_size = 64 * ((height - 2) // 2 - 2) * ((width - 2) // 2 - 2)
    elif architecture != "mlp":
        raise ValueError(f"Unknown architecture {architecture!r}: use 'two_digit_cnn' or 'mlp'.")
    for index, size in enumerate(hidden_sizes):
        layers[f"hidden{index}"] = nn.Linear(input_size, size)
        layers[f"relu{index}"] = nn.ReLU()
        input_size = size
    if not tanh_unit:
        layers["output"] = nn.Linear(input_size, num_classes)
        return nn.Sequential(layers)
    if num_classes != 2:
        raise ValueError(f"One tanh output unit decides two classes, not {num_classes}.")
    layers.update(output=nn.Linear(input_size, 1), output_tanh=nn.Tanh(), two_logits=TwoLogits())
    return nn.Sequential(layers)


def playground_init(network: nn.Module) -> None:
    """The playground's initialisation of every layer: weights U(-0.5, 0.5), biases 0.1
    (`src/nn.ts` lines 161 and 25)."""
    with torch.no_grad():
        for layer in network.modules():
            if isinstance(layer, (nn.Linear, nn.Conv2d)):
                layer.weight.uniform_(-0.5, 0.5)
                layer.bias.fill_(0.1)


def keras_init(network: nn.Module) -> None:
    """Keras's default initialisation of its `Dense` and `Conv2D` layers, which the authors'
    `mnist.py` (lines 131-142) leaves in place: Glorot (Xavier) uniform weights, U(-a, a) with a
    = sqrt(6 / (fan_in + fan_out)) (a convolution's fans count its 3 x 3 window, as torch's
    `xavier_uniform_` does), and zero biases."""
    with torch.no_grad():
        for layer in network.modules():
            if isinstance(layer, (nn.Linear, nn.Conv2d)):
                nn.init.xavier_uniform_(layer.weight)
                layer.bias.zero_()


def categorical_hinge_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Keras's `categorical_hinge` (the authors' `mnist.py` line 154, on the linear outputs of
    line 139), a Crammer-Singer multi-class hinge: per row max(0, 1 + neg - pos) with pos = s_y,
    the true class's output, and neg = max_j (1 - onehot(y)_j) s_j, averaged over the batch.
    The mask leaves a 0 in the true class's place, so neg is max(0, max_{j != y} s_j): a row
    whose other outputs are all negative still costs max(0, 1 - s_y). `logits` [batch,
    classes], `labels` [batch]."""
    true_output = logits.gather(1, labels[:, None]).squeeze(1)
    others = logits.masked_fill(F.one_hot(labels, logits.shape[1]).bool(), 0.0)
    return torch.clamp(1 + others.max(dim=1).values - true_output, min=0).mean()


class KerasAdam(torch.optim.Adam):
    """Adam as TensorFlow 2's Keras runs it (`tf.keras.optimizers.Adam`, epsilon 1e-7, the
    authors' `mnist.py` line 152): its epsilon is added to the square root of the uncorrected
    second moment ("epsilon hat" of Kingma & Ba, before their section 2.1), torch's to the
    bias-corrected one. Before update t, torch's eps is set to epsilon / sqrt(1 - beta2^t),
    which makes the two updates equal: lr sqrt(1 - beta2^t) / (1 - beta1^t) m / (sqrt(v) +
    epsilon)."""

    def __init__(self, params, lr: float, epsilon: float = 1e-7):
        super().__init__(params, lr=lr, eps=epsilon)
        self.keras_epsilon = epsilon

    def step(self, closure=None):
        for group in self.param_groups:
            states = [self.state[p] for p in group["params"] if "step" in self.state[p]]
            update = int(states[0]["step"]) + 1 if states else 1
            group["eps"] = self.keras_epsilon / (1 - group["betas"][1] ** update) ** 0.5
        return super().step(closure)


def playground_square_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """The playground's square loss 0.5 (o - t)^2 (`src/nn.ts` lines 94-98) of the tanh unit o
    (`logits[:, 1]`, `TwoLogits`) on the target t = 2 label - 1, averaged over the batch (the
    playground averages the derivatives accumulated between updates: lines 343, 357-358)."""
    target = 2 * labels.to(logits.dtype) - 1
    return (0.5 * (logits[:, 1] - target) ** 2).mean()


class Classifier(Intervenable, pl.LightningModule):
    """A feed-forward classifier over `batch["image"]` or `batch["inputs"]` and `batch["label"]`.

    Args:
        architecture: `two_digit_cnn` (Appendix A) or `mlp` (Appendix C).
        input_size: input features of the `mlp` (ignored by the CNN).
        hidden_sizes: widths of the fully connected hidden layers.
        num_classes: output classes.
        loss: `categorical_hinge` (Keras's multi-class hinge, Appendix A as the authors' code
            computes it), `multi_margin` (torch's, Weston-Watkins), `cross_entropy`, or
            `playground_square` (one tanh output unit and the square loss; two classes).
        init: `torch` (torch's defaults), `playground` (weights U(-0.5, 0.5), biases 0.1) or
            `keras` (Glorot uniform weights, zero biases).
        optimizer: `adam` (Appendix A; torch's), `keras_adam` (Keras's epsilon, `KerasAdam`) or
            `sgd` (Appendix C).
        learning_rate: the optimizer's learning rate.
        val_splits, test_splits: names of the validation / test dataloaders, in order (linked
            from the DataModule); metrics are `val/<split>/accuracy`, `test/<split>/accuracy`.
    """

    def __init__(
        self,
        architecture: Literal["two_digit_cnn", "mlp"] = "mlp",
        input_size: int = 2,
        hidden_sizes: Sequence[int] = (8, 8, 8),
        num_classes: int = 2,
        loss: Literal[
            "categorical_hinge", "multi_margin", "cross_entropy", "playground_square"
        ] = "cross_entropy",
        optimizer: Literal["adam", "keras_adam", "sgd"] = "sgd",
        learning_rate: float = 0.1,
        val_splits: Sequence[str] = ("val",),
        test_splits: Sequence[str] = ("test",),
        init: Literal["torch", "playground", "keras"] = "torch",
    ):
        super().__init__()
        for name, value, valid in (("loss", loss, LOSSES), ("optimizer", optimizer, OPTIMIZERS),
                                   ("init", init, INITS)):  # fmt: skip
            if value not in valid:
                names = " or ".join(map(repr, valid))
                raise ValueError(f"Unknown {name} {value!r}: use {names}.")
        self.save_hyperparameters()
        self.val_splits, self.test_splits = tuple(val_splits), tuple(test_splits)
        self.network = build_network(architecture, input_size, hidden_sizes, num_classes,
                                     tanh_unit=loss == "playground_square")  # fmt: skip
        if init == "playground":
            playground_init(self.network)
        elif init == "keras":
            keras_init(self.network)
        splits = [("train", "train")]
        splits += [("val", s) for s in self.val_splits] + [("test", s) for s in self.test_splits]
        self.accuracy = nn.ModuleDict(
            {metric_key(*s): MulticlassAccuracy(num_classes, average="micro") for s in splits}
        )
        self.mean_loss = nn.ModuleDict({metric_key(*s): MeanMetric() for s in splits})

    @staticmethod
    def inputs_of(batch: dict[str, Tensor]) -> Tensor:
        return batch["image"] if "image" in batch else batch["inputs"]

    def forward(self, inputs: Tensor) -> Tensor:
        """Logits `[batch, num_classes]`; the hidden layers edited by `intervene`'s edits, whose
        sites are `hidden.<i>` (after the ReLU of fully connected layer i, `[batch, units]`)."""
        if not self._edits:
            return self.network(inputs)
        return self._layers(inputs)["logits"]

    def _layers(self, inputs: Tensor) -> dict[str, Tensor]:
        """Every hidden layer after its ReLU (`hidden.<i>`, edited) and the logits."""
        record: dict[str, Tensor] = {}
        values = inputs
        for name, layer in self.network.named_children():
            values = layer(values)
            if name.startswith("relu"):
                for edit in self._edits:
                    if edit.site == f"hidden.{name[4:]}":
                        values = edit.apply(values, 0)
                record[f"hidden.{name[4:]}"] = values
        record["logits"] = values
        return record

    def loss(self, logits: Tensor, labels: Tensor) -> Tensor:
        if self.hparams.loss == "categorical_hinge":
            return categorical_hinge_loss(logits, labels)
        if self.hparams.loss == "multi_margin":
            return F.multi_margin_loss(logits, labels)
        if self.hparams.loss == "playground_square":
            return playground_square_loss(logits, labels)
        return F.cross_entropy(logits, labels)

    @torch.no_grad()
    def trace(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        """Hidden layers after their ReLU (`hidden.<i>` `[batch, units]`), logits, prediction."""
        record = self._layers(self.inputs_of(batch))
        record["prediction"] = record["logits"].argmax(-1)
        return record

    def _step(self, batch: dict[str, Tensor], stage: str, split: str) -> Tensor:
        logits = self(self.inputs_of(batch))
        labels = batch["label"]
        loss = self.loss(logits, labels)
        key, prefix = metric_key(stage, split), metric_prefix(stage, split)
        self.accuracy[key](logits.argmax(-1), labels)  # forward: update, and the batch's value
        self.mean_loss[key](loss, weight=labels.shape[0])
        on_step = stage == "train"  # the training batch's own metrics every step
        kwargs = dict(on_step=on_step, on_epoch=True, add_dataloader_idx=False)
        self.log(f"{prefix}/loss", self.mean_loss[key], **kwargs)
        self.log(f"{prefix}/accuracy", self.accuracy[key], **kwargs)
        return loss

    def training_step(self, batch, batch_idx):
        return self._step(batch, "train", "train")

    def validation_step(self, batch, batch_idx, dataloader_idx: int = 0):
        self._step(batch, "val", self.val_splits[dataloader_idx])

    def test_step(self, batch, batch_idx, dataloader_idx: int = 0):
        self._step(batch, "test", self.test_splits[dataloader_idx])

    def configure_optimizers(self):
        if self.hparams.optimizer == "adam":
            return torch.optim.Adam(self.parameters(), lr=self.hparams.learning_rate)
        if self.hparams.optimizer == "keras_adam":
            return KerasAdam(self.parameters(), lr=self.hparams.learning_rate)
        return torch.optim.SGD(self.parameters(), lr=self.hparams.learning_rate)
