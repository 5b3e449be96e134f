"""The toy 2-D problem of paper 3 ("Gradient Descent Resists Compositionality"), section 6 and
Appendix C (Figures 4-6).

Two binary latents Y1, Y2 give the inputs X_i = Y_i - U[0, 1] (so X_i lies in (Y_i - 1, Y_i]);
a model predicts Y1 from (X1, X2).

- training, setting A: (Y1, Y2) uniform on {(0, 0), (0, 1), (1, 0)} (the paper's problem): X2
  carries part of Y1, since Y2 = 1 implies Y1 = 0;
- training, setting B: Y1 = 1 with probability 1/3 (A's marginal), Y2 uniform on {0, 1}
  independently of Y1, so X2 carries nothing about Y1;
- test, both settings: (Y1, Y2) = (1, 1), the combination never seen in setting A.
"""

from __future__ import annotations

from typing import Literal

import torch

from datamodules.sampling import TensorRows, TrainTestDataModule

SETTINGS = ("A", "B")
SETTING_A_LATENTS = torch.tensor([[0, 0], [0, 1], [1, 0]])


def sample_toy_2d(
    count: int, setting_or_test: Literal["A", "B", "test"], generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """`count` points: inputs float [count, 2] (X1, X2) and latents long [count, 2] (Y1, Y2)."""
    if setting_or_test == "A":
        latent = SETTING_A_LATENTS[torch.randint(3, (count,), generator=generator)]
    elif setting_or_test == "B":
        first = (torch.rand(count, generator=generator) < 1 / 3).long()
        latent = torch.stack([first, torch.randint(2, (count,), generator=generator)], dim=1)
    elif setting_or_test == "test":
        latent = torch.ones(count, 2, dtype=torch.long)
    else:
        raise ValueError(f"unknown distribution {setting_or_test!r}; valid: 'A', 'B', 'test'")
    inputs = latent - torch.rand(count, 2, generator=generator)
    return inputs, latent


def toy_2d_rows(count: int, setting_or_test: str, generator: torch.Generator) -> TensorRows:
    inputs, latent = sample_toy_2d(count, setting_or_test, generator)
    return TensorRows(inputs=inputs, label=latent[:, 0].clone(), latent=latent)


class Toy2DDataModule(TrainTestDataModule):
    """The section 6 points; batches are dicts with `inputs` float [batch, 2] (X1, X2), `label`
    long [batch] (Y1), `latent` long [batch, 2] (Y1, Y2) and `index` long [batch].

    Splits are those of `TrainTestDataModule`: training batches drawn with replacement from the
    `train_size` training points; `train_sample`/`test_sample` (validation) are the first
    `eval_size` training/test points, `train`/`test` (test) all of them.

    Args:
        setting: "A" (no (1, 1) in training) or "B" (Y2 independent of Y1).
        train_size: training points.
        test_size: test points, all (1, 1).
        eval_size: points in each validation sample.
        batch_size: training batch size.
        steps_per_epoch: training batches per epoch.
        data_seed: seed of the points (training: ``2 * data_seed``, test: ``2 * data_seed + 1``)
            and of the training draws.
        num_workers: DataLoader workers.
    """

    num_classes = 2
    data_source = "generated (section 6)"

    def __init__(
        self,
        setting: Literal["A", "B"] = "A",
        train_size: int = 3000,
        test_size: int = 1000,
        eval_size: int = 1000,
        batch_size: int = 10,
        steps_per_epoch: int = 64,
        data_seed: int = 0,
        num_workers: int = 0,
    ) -> None:
        if setting not in SETTINGS:
            raise ValueError(f"unknown setting {setting!r}; valid settings: 'A', 'B'")
        super().__init__(batch_size, steps_per_epoch, eval_size, data_seed, num_workers)
        self.save_hyperparameters()
        self.setting = setting
        self.train_size = train_size
        self.test_size = test_size

    def make_datasets(self) -> tuple[TensorRows, TensorRows]:
        train_generator, test_generator = self.generators()
        return (
            toy_2d_rows(self.train_size, self.setting, train_generator),
            toy_2d_rows(self.test_size, "test", test_generator),
        )
