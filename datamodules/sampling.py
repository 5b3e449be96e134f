"""Training batches drawn with replacement, as paper 3 trains (Appendix B: "Each step has a
mini-batch of 256 samples randomly and uniformly selected from training data with
replacement"); its toy experiment is trained the same way here, and so are its two-digit images
from a fixed pool of pairs (`training_batches="from_pool"`).

An "epoch" is `steps_per_epoch` batches: a fit of `max_steps` steps is `max_steps /
steps_per_epoch` epochs, which is what the recording callbacks count in.

`TrainTestDataModule` is the DataModule shared by the two-digit image (section 5.1) and toy 2-D
(section 6) experiments: a training and a test set of `TensorRows`, trained on with replacement
and evaluated as samples of both and as both in full. `OrderedPasses` serves a training set as
the TensorFlow Playground does (paper 3's toy problem under the authors' reading); `EpochSteps`
numbers the steps of an epoch for a dataset that draws each step's batch afresh (paper 3's
two-digit images, as the authors' code trains them). Every DataModule's training loader is a
`ResumableLoader`, which a fit resumes from inside an epoch.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator, Sized

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import (
    DataLoader,
    Dataset,
    DistributedSampler,
    RandomSampler,
    Sampler,
    default_collate,
)


class WithReplacementSampler(RandomSampler):
    """torch's `RandomSampler(replacement=True)`: `num_samples` indices drawn uniformly with
    replacement from `range(len(data))`, whose generator is reseeded with `seed + e` by
    `set_epoch(e)`. Lightning calls `set_epoch` before each epoch, so a resumed fit draws exactly
    what an uninterrupted one would (a plain `RandomSampler` carries its generator's state over
    epochs, which a checkpoint does not keep)."""

    def __init__(self, data: Sized, num_samples: int, seed: int):
        if len(data) == 0:
            raise ValueError("cannot sample training batches from an empty training set.")
        super().__init__(
            data, replacement=True, num_samples=num_samples, generator=torch.Generator()
        )
        self.seed = seed
        self.set_epoch(0)

    def set_epoch(self, epoch: int) -> None:
        self.generator.manual_seed(self.seed + epoch)


class OrderedPasses(Sampler[list[int]]):
    """The TensorFlow Playground's training order, as batches of row indices: an epoch is one
    pass over rows 0..size-1 in order, with an update after every `batch_size`-th row of the
    pass (`tensorflow/playground` `src/playground.ts` lines 909-918, `oneStep`: `(i + 1) %
    batchSize === 0`). Each update averages the derivatives accumulated since the last one
    (`src/nn.ts` lines 343 and 357-358, divided by `numAccumulatedDers`), and the accumulators
    are not cleared at the end of a pass: the `size % batch_size` rows after a pass's last update
    join the first update of the next pass, computed with the same weights (no update lies
    between them). So every pass makes `size // batch_size` updates; in every pass but the first
    the first batch is those leftover rows followed by rows 0..batch_size-1, and the mean loss
    over a batch gives the playground's update. The leftover rows of the last pass are never
    applied, as in the playground.

    Use it as a DataLoader's `sampler` with `batch_size=None` over a dataset indexed by lists
    (`TensorRows`); Lightning calls `set_epoch` before every epoch.
    Written by hand: torch's samplers restart their batches at every epoch.
    """

    def __init__(self, size: int, batch_size: int):
        if size < batch_size:
            raise ValueError(
                f"{size} training rows never fill a batch of {batch_size}: the playground would "
                "never update the weights"
            )
        self.size, self.batch_size, self.epoch = size, batch_size, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.size // self.batch_size

    def __iter__(self) -> Iterator[list[int]]:
        leftover = self.size % self.batch_size if self.epoch > 0 else 0
        carried = list(range(self.size - leftover, self.size))
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            yield carried + list(range(start, start + self.batch_size))
            carried = []


class EpochSteps(Sampler[int]):
    """The training steps of one epoch, as numbers counted from the fit's first step: epoch e
    yields `steps_per_epoch * e` up to `steps_per_epoch * (e + 1) - 1`. Lightning calls
    `set_epoch` before every epoch, so a resumed fit continues with the steps it would have
    reached. For a dataset whose item `step` is that step's whole batch (`batch_size=None`)."""

    def __init__(self, steps_per_epoch: int):
        if steps_per_epoch < 1:
            raise ValueError(f"an epoch needs at least one step, got {steps_per_epoch}")
        self.steps_per_epoch, self.epoch = steps_per_epoch, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.steps_per_epoch

    def __iter__(self) -> Iterator[int]:
        first = self.epoch * self.steps_per_epoch
        return iter(range(first, first + self.steps_per_epoch))


class EpochShuffle(DistributedSampler):
    """torch's one-replica `DistributedSampler` (a shuffle seeded with `seed + epoch`) whose
    `set_epoch` also tells the dataset the epoch when the dataset has a `set_epoch`, so a dataset
    can draw per epoch what it serves (paper 4's signals) as reproducibly as the order."""

    def set_epoch(self, epoch: int) -> None:
        super().set_epoch(epoch)
        if hasattr(self.dataset, "set_epoch"):
            self.dataset.set_epoch(epoch)


class ResumableLoader(DataLoader):
    """A training loader that a fit resumes inside an epoch. Lightning keeps a loader's
    `state_dict` (here: the batches of the epoch in progress handed out so far) in each
    checkpoint, and hands it back (`load_state_dict`) when a fit resumes from one written inside
    an epoch (`--run.checkpoint_minutes`); the resumed epoch then starts after those batches.

    Exact because every sampler of the suite orders an epoch by its seed and epoch alone
    (`set_epoch`): the resumed epoch's iterator is made at its first batch, after Lightning's
    `set_epoch`; the batches trained before are drawn again and dropped; and the random draws that
    making the iterator and drawing them take are undone, since the uninterrupted fit made them
    at the epoch's start (the checkpoint's generator states are the ones its next batch saw).
    Skipping costs the loading of the skipped batches, not their training. Written by hand:
    torch's DataLoader keeps no position (torchdata's StatefulDataLoader does, but is not among
    the suite's dependencies)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.served = 0
        self.resume_after = 0

    def state_dict(self) -> dict[str, int]:
        return {"batches_served": self.served}

    def load_state_dict(self, state: dict) -> None:
        self.resume_after = int(state["batches_served"])

    def __iter__(self) -> Iterator:
        skip, self.resume_after = self.resume_after, 0
        return _ServedBatches(self, skip if 0 < skip < len(self) else 0)


class _ServedBatches:
    """One epoch's batches of a `ResumableLoader`, counted as they are handed out; for a resumed
    epoch, torch's iterator made at the first batch with the `skip` batches before dropped."""

    def __init__(self, loader: ResumableLoader, skip: int):
        self.loader, self.skip = loader, skip
        self.batches = None if skip else DataLoader.__iter__(loader)
        loader.served = skip

    def __iter__(self) -> _ServedBatches:
        return self

    def __next__(self):
        if self.batches is None:
            states = torch.get_rng_state(), np.random.get_state(), random.getstate()
            self.batches = DataLoader.__iter__(self.loader)
            for _ in range(self.skip):
                next(self.batches)
            torch.set_rng_state(states[0])
            np.random.set_state(states[1])
            random.setstate(states[2])
        batch = next(self.batches)
        self.loader.served += 1
        return batch


def split_loader(
    datasets: dict[str, Dataset],
    name: str,
    batch_size: int,
    collate_fn,
    num_workers: int = 0,
    shuffle_seed: int | None = None,
) -> DataLoader:
    """A loader over `datasets[name]`: in order, or with `shuffle_seed` (a training loader)
    shuffled by a sampler that Lightning reseeds every epoch (`seed + epoch`, `EpochShuffle`), so
    a resumed fit repeats the order, even from inside an epoch (`ResumableLoader`).
    An unknown `name` is one error listing the valid ones."""
    if name not in datasets:
        raise ValueError(f"unknown split {name!r}; valid splits: {', '.join(datasets)}")
    sampler = None
    if shuffle_seed is not None:
        sampler = EpochShuffle(
            datasets[name], num_replicas=1, rank=0, shuffle=True, seed=shuffle_seed % 2**31
        )
    loader = DataLoader if sampler is None else ResumableLoader
    return loader(
        datasets[name], batch_size=batch_size, sampler=sampler, num_workers=num_workers,
        collate_fn=collate_fn,
    )  # fmt: skip


class TensorRows(Dataset):
    """Rows of equally long tensors (`columns`), each row a dict with its `index` in the set.

    `__getitems__` (which DataLoader prefers to `__getitem__`) gathers a whole batch with one
    indexing per tensor; pass `collate_rows` as the loader's `collate_fn`. Subclasses derive
    more fields in `rows`.
    """

    def __init__(self, **columns: torch.Tensor):
        lengths = {name: len(column) for name, column in columns.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"TensorRows needs columns of one length, got {lengths}")
        self.columns = columns

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())))

    def rows(self, indices: torch.Tensor) -> dict[str, torch.Tensor]:
        return {name: column[indices] for name, column in self.columns.items()} | {"index": indices}

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return self.rows(torch.tensor(index))

    def __getitems__(self, indices: list[int]) -> dict[str, torch.Tensor]:
        return self.rows(torch.tensor(indices, dtype=torch.long))

    def head(self, count: int) -> TensorRows:
        """The first `count` rows (same indices), sharing everything else with this set."""
        first = copy.copy(self)
        first.columns = {name: column[:count] for name, column in self.columns.items()}
        return first


def collate_rows(batch: dict[str, torch.Tensor] | list) -> dict[str, torch.Tensor]:
    """A batch from `TensorRows.__getitems__` is already collated; anything else is stacked."""
    return batch if isinstance(batch, dict) else default_collate(batch)


class TrainTestDataModule(pl.LightningDataModule):
    """A generated training set and test set, served as paper 3 evaluates them (sections 5-6).

    Subclasses build the two `TensorRows` sets in `make_datasets`. Splits:

    - `train_dataloader()`: `steps_per_epoch` batches of `batch_size` rows drawn uniformly with
      replacement from the training set (`WithReplacementSampler`, seeded by `data_seed`).
    - `val_splits` = ("train_sample", "test_sample"): the first `eval_size` training / test rows.
    - `test_splits` = ("train", "test"): all training / test rows.

    Evaluation loaders keep the split's order and use batches of `eval_batch_size` rows unless
    told otherwise. A subclass whose rows are not `TensorRows` (SCAN's token sequences) overrides
    `setup` to fill `datasets` with the four splits and sets `collate_fn`.
    """

    val_splits = ("train_sample", "test_sample")
    test_splits = ("train", "test")
    eval_batch_size = 1000
    collate_fn = staticmethod(collate_rows)

    def __init__(
        self,
        batch_size: int,
        steps_per_epoch: int,
        eval_size: int,
        data_seed: int,
        num_workers: int,
    ) -> None:
        super().__init__()
        self.batch_size = batch_size
        self.steps_per_epoch = steps_per_epoch
        self.eval_size = eval_size
        self.data_seed = data_seed
        self.num_workers = num_workers
        self.datasets: dict[str, Dataset] | None = None

    def make_datasets(self) -> tuple[TensorRows, TensorRows]:
        """The (training, test) sets."""
        raise NotImplementedError

    def generators(self) -> tuple[torch.Generator, torch.Generator]:
        """Seeded generators for drawing the training set (`2 * data_seed`) and the test set
        (`2 * data_seed + 1`), so the two settings of an experiment share their test set."""
        return (
            torch.Generator().manual_seed(2 * self.data_seed),
            torch.Generator().manual_seed(2 * self.data_seed + 1),
        )

    def setup(self, stage: str | None = None) -> None:
        if self.datasets is not None:
            return
        train, test = self.make_datasets()
        self.datasets = {
            "train": train,
            "test": test,
            "train_sample": train.head(self.eval_size),
            "test_sample": test.head(self.eval_size),
        }

    def split_dataloader(self, name: str, batch_size: int | None = None) -> DataLoader:
        """A loader over any of the four splits, in order."""
        self.setup()
        return split_loader(
            self.datasets, name, batch_size or self.eval_batch_size, self.collate_fn,
            self.num_workers,
        )  # fmt: skip

    def train_dataloader(self) -> DataLoader:
        self.setup()
        train = self.datasets["train"]
        draws = self.steps_per_epoch * self.batch_size
        return ResumableLoader(
            train,
            batch_size=self.batch_size,
            sampler=WithReplacementSampler(train, draws, seed=self.data_seed),
            num_workers=self.num_workers,
            collate_fn=self.collate_fn,
        )

    def val_dataloader(self) -> list[DataLoader]:
        return [self.split_dataloader(name) for name in self.val_splits]

    def test_dataloader(self) -> list[DataLoader]:
        return [self.split_dataloader(name) for name in self.test_splits]


class SplitLoaders:
    """Lightning's loaders for a DataModule whose `split_dataloader(name, shuffle=False)` serves
    named splits: training shuffled, `validation`, and one test loader per `test_splits`."""

    test_splits: tuple[str, ...]

    def train_dataloader(self) -> DataLoader:
        return self.split_dataloader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self.split_dataloader("validation")

    def test_dataloader(self) -> list[DataLoader]:
        return [self.split_dataloader(name) for name in self.test_splits]


class VocabularySizes:
    """`source_vocab_size` and `target_vocab_size` (what the CLI links to a model's vocabulary
    sizes) of a DataModule that spells token ids with `source_vocab` and `target_vocab`."""

    source_vocab: list[str]
    target_vocab: list[str]

    @property
    def source_vocab_size(self) -> int:
        return len(self.source_vocab)

    @property
    def target_vocab_size(self) -> int:
        return len(self.target_vocab)
