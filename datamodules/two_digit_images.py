"""Two-digit MNIST images, paper 3 ("Gradient Descent Resists Compositionality"), section 5.1.

A sample X is the horizontal concatenation of two MNIST images, X1 (left) and X2 (right), a
28 x 56 image; its label is Y = Y1, the left digit. Y1 is uniform on the ten labels and X1
uniform among the images of that label; then Y2 is drawn, and X2 uniformly among the images of
label Y2 (labels mod 10):

- training, setting A: Y2 uniform on {Y, Y+1}, so X2 carries part of the label;
- training, setting B: Y2 uniform on all ten labels, so X2 carries nothing;
- test, both settings, from the MNIST test images: Y2 uniform on {Y+2, ..., Y+9}.

Pairs are stored as indices into the MNIST images and assembled batch by batch.

Training batches are drawn afresh for every step (`training_batches="fresh"`), as the authors'
code does (`yuanpeng16/BCDLSG` efb6c20, `mnist.py` lines 288-289: `get_training_samples(64)`
before each update; a pair is drawn as above, lines 55-66 and 111-116, every choice uniform and
independent of the others), or with replacement from a fixed pool of `train_pairs` training
pairs (`"from_pool"`). Either way the model is evaluated on fixed pairs of the training
distribution (the pool's) and of the test distribution.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from datamodules.mnist import Mnist, load_mnist
from datamodules.sampling import EpochSteps, ResumableLoader, TensorRows, TrainTestDataModule

SETTINGS = ("A", "B")
TRAINING_BATCHES = ("fresh", "from_pool")


class DigitPairs(TensorRows):
    """Image pairs as index columns into `images` (uint8 [n, 28, 28]); each row is a dict with
    `image` float [1, 28, 56] in [0, 1], `label` (left digit), `right_label` and `index`."""

    def __init__(self, images: torch.Tensor, **columns: torch.Tensor):
        super().__init__(**columns)
        self.images = images

    def rows(self, indices: torch.Tensor) -> dict[str, torch.Tensor]:
        row = super().rows(indices)
        left, right = self.images[row.pop("left_index")], self.images[row.pop("right_index")]
        image = torch.cat([left, right], dim=-1).unsqueeze(-3).float() / 255
        return {"image": image, **row}


def draw_images_of_labels(
    labels: torch.Tensor, wanted: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """For each entry of `wanted`, the index of an image drawn uniformly among those with that
    label (`labels` holds every image's label)."""
    counts = torch.bincount(labels, minlength=10)
    if (counts[wanted.unique()] == 0).any():
        raise ValueError(f"some wanted label has no image (images per label: {counts.tolist()})")
    by_label = torch.argsort(labels, stable=True)
    starts = counts.cumsum(0) - counts
    offsets = torch.rand(len(wanted), generator=generator, dtype=torch.float64) * counts[wanted]
    offsets = torch.minimum(offsets.long(), counts[wanted] - 1)
    return by_label[starts[wanted] + offsets]


def draw_digit_pairs(
    images: torch.Tensor,
    labels: torch.Tensor,
    count: int,
    distribution: Literal["A", "B", "test"],
    generator: torch.Generator,
) -> DigitPairs:
    """`count` pairs from `images`, the right label drawn as `distribution` says (see above)."""
    left_label = torch.randint(10, (count,), generator=generator)
    left_index = draw_images_of_labels(labels, left_label, generator)
    if distribution == "A":
        shift = torch.randint(2, (count,), generator=generator)
    elif distribution == "B":
        shift = torch.randint(10, (count,), generator=generator)
    elif distribution == "test":
        shift = torch.randint(2, 10, (count,), generator=generator)
    else:
        raise ValueError(f"unknown distribution {distribution!r}; valid: 'A', 'B', 'test'")
    right_label = (left_label + shift) % 10
    right_index = draw_images_of_labels(labels, right_label, generator)
    return DigitPairs(
        images,
        left_index=left_index,
        right_index=right_index,
        label=left_label,
        right_label=right_label,
    )


def step_generator(data_seed: int, step: int) -> torch.Generator:
    """The generator of training step `step`'s fresh pairs: seeded by a hash of (data_seed,
    step) (numpy's `SeedSequence`), so no step's stream repeats another's or those of the fixed
    pairs (seeded `2 * data_seed` and `2 * data_seed + 1`)."""
    if data_seed < 0 or step < 0:
        raise ValueError(f"data_seed and step must be >= 0, got {data_seed} and {step}")
    seed = np.random.SeedSequence([data_seed, step]).generate_state(1, dtype=np.uint64)[0]
    return torch.Generator().manual_seed(int(seed))


class FreshPairBatches(Dataset):
    """Training batches drawn afresh for every step: item `step` (from 0) is a batch of
    `batch_size` pairs of `distribution` ("A" or "B") from `images`/`labels`, drawn by
    `step_generator(data_seed, step)` alone, so a run's batches are the same however it is
    interrupted and resumed. A batch is a dict as `DigitPairs.rows` gives, its `index` the draw's
    number in the run (`step * batch_size` onward)."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, batch_size: int,
                 distribution: Literal["A", "B"], data_seed: int):  # fmt: skip
        self.images, self.labels = images, labels
        self.batch_size, self.distribution, self.data_seed = batch_size, distribution, data_seed

    def __getitem__(self, step: int) -> dict[str, torch.Tensor]:
        generator = step_generator(self.data_seed, step)
        pairs = draw_digit_pairs(self.images, self.labels, self.batch_size, self.distribution,
                                 generator)  # fmt: skip
        batch = pairs.rows(torch.arange(self.batch_size))
        batch["index"] = step * self.batch_size + torch.arange(self.batch_size)
        return batch


class TwoDigitImagesDataModule(TrainTestDataModule):
    """The section 5.1 images; batches are dicts with `image` float [batch, 1, 28, 56] in [0, 1],
    `label` long [batch] (Y = Y1), `right_label` long [batch] (Y2) and `index` long [batch].

    Splits are those of `TrainTestDataModule`: `train_sample`/`test_sample` (validation) are the
    first `eval_size` of the `train_pairs` training / `test_pairs` test pairs, `train`/`test`
    (test) all of them. Training batches are drawn afresh every step (`"fresh"`:
    `FreshPairBatches`; the `train_pairs` are then only evaluated on) or with replacement from
    the `train_pairs` (`"from_pool"`).

    Args:
        data_dir: a folder with the four MNIST IDX files; ``None``: the embedded copy (see
            `datamodules.mnist`).
        setting: "A" (right digit is Y or Y+1 in training) or "B" (right digit uniform).
        batch_size: training batch size (Appendix A: 64).
        steps_per_epoch: training batches per epoch.
        training_batches: "fresh" (new pairs every step, as the authors' `mnist.py`) or
            "from_pool" (drawn with replacement from the `train_pairs`).
        train_pairs: pairs of the training distribution, drawn from the MNIST training images.
        test_pairs: test pairs, drawn from the MNIST test images.
        eval_size: pairs in each validation sample.
        data_seed: seed of the pairs (training: ``2 * data_seed``, test: ``2 * data_seed + 1``,
            so both settings share their test pairs and their left digits) and of the training
            batches (fresh: `step_generator`).
        num_workers: DataLoader workers.
    """

    num_classes = 10
    eval_batch_size = 100  # a CNN's 1000-image batch is slower on CPU (its maps leave the cache)

    def __init__(
        self,
        data_dir: str | None = None,
        setting: Literal["A", "B"] = "A",
        batch_size: int = 64,
        steps_per_epoch: int = 50,
        training_batches: Literal["fresh", "from_pool"] = "fresh",
        train_pairs: int = 60000,
        test_pairs: int = 10000,
        eval_size: int = 1000,
        data_seed: int = 0,
        num_workers: int = 0,
    ) -> None:
        if setting not in SETTINGS:
            raise ValueError(f"unknown setting {setting!r}; valid settings: 'A', 'B'")
        if training_batches not in TRAINING_BATCHES:
            raise ValueError(f"unknown training_batches {training_batches!r}; valid: 'fresh', "
                             "'from_pool'")  # fmt: skip
        super().__init__(batch_size, steps_per_epoch, eval_size, data_seed, num_workers)
        self.save_hyperparameters()
        self.data_dir = data_dir
        self.setting = setting
        self.training_batches = training_batches
        self.train_pairs = train_pairs
        self.test_pairs = test_pairs
        self.mnist: Mnist | None = None

    @property
    def data_source(self) -> str:
        self.setup()
        return self.mnist.source

    def make_datasets(self) -> tuple[DigitPairs, DigitPairs]:
        self.mnist = mnist = load_mnist(self.data_dir)
        train_generator, test_generator = self.generators()
        train = draw_digit_pairs(
            mnist.train_images, mnist.train_labels, self.train_pairs, self.setting, train_generator
        )
        test = draw_digit_pairs(
            mnist.test_images, mnist.test_labels, self.test_pairs, "test", test_generator
        )
        return train, test

    def train_dataloader(self) -> DataLoader:
        if self.training_batches == "from_pool":
            return super().train_dataloader()
        self.setup()
        batches = FreshPairBatches(self.mnist.train_images, self.mnist.train_labels,
                                   self.batch_size, self.setting, self.data_seed)  # fmt: skip
        return ResumableLoader(
            batches, batch_size=None, sampler=EpochSteps(self.steps_per_epoch),
            num_workers=self.num_workers, collate_fn=self.collate_fn,
        )  # fmt: skip
