"""The toy 2-D problem of paper 3 ("Gradient Descent Resists Compositionality"), section 6 and
Appendix C (Figures 4-6), as a DataModule: the points of `datamodules.toy_2d_points` (both
readings of its data, described there) as training and test rows."""

from __future__ import annotations

from typing import Literal

import torch
from torch.utils.data import DataLoader

from datamodules.sampling import OrderedPasses, ResumableLoader, TensorRows, TrainTestDataModule
from datamodules.toy_2d_points import (
    DISTRIBUTIONS,
    PLAYGROUND_CANDIDATES,
    PLAYGROUND_TRAIN_SHARE,
    SETTINGS,
    TRAINING_ORDERS,
    sample_authors_toy,
    sample_toy_2d,
)


def toy_rows(inputs: torch.Tensor, latent: torch.Tensor) -> TensorRows:
    return TensorRows(inputs=inputs, label=latent[:, 0].clone(), latent=latent)


def toy_2d_rows(count: int, setting_or_test: str, generator: torch.Generator) -> TensorRows:
    return toy_rows(*sample_toy_2d(count, setting_or_test, generator))


class Toy2DDataModule(TrainTestDataModule):
    """The section 6 points; batches are dicts with `inputs` float [batch, 2] (X1, X2), `label`
    long [batch] (Y1), `latent` long [batch, 2] (Y1, Y2) and `index` long [batch].

    Splits are those of `TrainTestDataModule`: `train_sample`/`test_sample` (validation) are the
    first `eval_size` training/test points, `train`/`test` (test) all of them. Training batches
    are drawn with replacement from the training points (`training_order="with_replacement"`,
    `steps_per_epoch` batches an epoch), or served as the playground trains
    (`"playground_passes"`: an epoch is one pass over the training points in their order, an
    update after every `batch_size` of them; see `datamodules.sampling.OrderedPasses`).

    Args:
        setting: "A" (no (1, 1) in training) or "B" (Y2 independent of Y1).
        distribution: "text" (X_i = Y_i - U[0, 1], section 6) or "authors" (their `dataset.ts`
            in the playground; `datamodules.toy_2d_points`' docstring).
        train_size: training points of the text's distribution (the authors' come from
            `candidates` and `train_share`).
        test_size: test points, all (1, 1).
        eval_size: points in each validation sample.
        batch_size: training batch size (the playground: points between updates).
        steps_per_epoch: training batches per epoch when drawn with replacement.
        training_order: "with_replacement" or "playground_passes".
        candidates: the authors' distribution: points drawn before the quadrant is dropped.
        train_share: the authors' distribution: share of the kept points trained on.
        data_seed: seed of the points (training: ``2 * data_seed``, test: ``2 * data_seed + 1``)
            and of the training draws.
        num_workers: DataLoader workers.
    """

    num_classes = 2

    def __init__(
        self,
        setting: Literal["A", "B"] = "A",
        distribution: Literal["text", "authors"] = "text",
        train_size: int = 3000,
        test_size: int = 1000,
        eval_size: int = 1000,
        batch_size: int = 10,
        steps_per_epoch: int = 64,
        training_order: Literal["with_replacement", "playground_passes"] = "with_replacement",
        candidates: int = PLAYGROUND_CANDIDATES,
        train_share: float = PLAYGROUND_TRAIN_SHARE,
        data_seed: int = 0,
        num_workers: int = 0,
    ) -> None:
        options = (("setting", setting, SETTINGS), ("distribution", distribution, DISTRIBUTIONS),
                   ("training_order", training_order, TRAINING_ORDERS))  # fmt: skip
        for name, value, valid in options:
            if value not in valid:
                names = ", ".join(map(repr, valid))
                raise ValueError(f"unknown {name} {value!r}; valid: {names}")
        super().__init__(batch_size, steps_per_epoch, eval_size, data_seed, num_workers)
        self.save_hyperparameters()
        self.setting, self.distribution, self.training_order = setting, distribution, training_order
        self.train_size = train_size
        self.test_size = test_size
        self.candidates, self.train_share = candidates, train_share

    @property
    def data_source(self) -> str:
        if self.distribution == "text":
            return "generated (section 6)"
        return "generated as the authors' dataset.ts (BCDLSG efb6c20) in the TensorFlow Playground"

    def make_datasets(self) -> tuple[TensorRows, TensorRows]:
        train_generator, test_generator = self.generators()
        if self.distribution == "text":
            return (
                toy_2d_rows(self.train_size, self.setting, train_generator),
                toy_2d_rows(self.test_size, "test", test_generator),
            )
        train = sample_authors_toy(self.setting, train_generator, self.candidates,
                                   self.train_share)  # fmt: skip
        test = sample_authors_toy("test", test_generator, test_count=self.test_size)
        return toy_rows(*train), toy_rows(*test)

    def train_dataloader(self) -> DataLoader:
        if self.training_order == "with_replacement":
            return super().train_dataloader()
        self.setup()
        train = self.datasets["train"]
        return ResumableLoader(
            train, batch_size=None, sampler=OrderedPasses(len(train), self.batch_size),
            num_workers=self.num_workers, collate_fn=self.collate_fn,
        )  # fmt: skip
