"""The toy 2-D problem of paper 3, section 6 and Appendix C."""

import pytest
import torch

from datamodules import Toy2DDataModule
from datamodules.toy_2d import sample_toy_2d


def combination_counts(latent: torch.Tensor) -> dict[tuple[int, int], int]:
    pairs, counts = latent.unique(dim=0, return_counts=True)
    return {tuple(pair.tolist()): int(count) for pair, count in zip(pairs, counts, strict=True)}


def assert_in_quadrants(inputs: torch.Tensor, latent: torch.Tensor) -> None:
    """X_i = Y_i - U[0, 1] lies in (Y_i - 1, Y_i]."""
    assert inputs.dtype == torch.float32 and inputs.shape == latent.shape
    assert ((inputs > latent - 1) & (inputs <= latent)).all()


def test_setting_a_never_shows_one_one():
    inputs, latent = sample_toy_2d(3000, "A", torch.Generator().manual_seed(0))
    counts = combination_counts(latent)
    assert set(counts) == {(0, 0), (0, 1), (1, 0)}  # all three, never (1, 1)
    assert all(900 < count < 1100 for count in counts.values())  # uniform
    assert_in_quadrants(inputs, latent)


def test_setting_b_makes_the_second_latent_independent_of_the_label():
    inputs, latent = sample_toy_2d(6000, "B", torch.Generator().manual_seed(0))
    counts = combination_counts(latent)
    assert set(counts) == {(0, 0), (0, 1), (1, 0), (1, 1)}  # both Y2 values occur with Y1 = 1
    assert 1800 < counts[(1, 0)] + counts[(1, 1)] < 2200  # P(Y1 = 1) = 1/3, as in setting A
    assert abs(counts[(1, 1)] / (counts[(1, 0)] + counts[(1, 1)]) - 0.5) < 0.05
    assert abs(counts[(0, 1)] / (counts[(0, 0)] + counts[(0, 1)]) - 0.5) < 0.05
    assert_in_quadrants(inputs, latent)


def test_test_points_are_all_one_one():
    inputs, latent = sample_toy_2d(500, "test", torch.Generator().manual_seed(0))
    assert (latent == 1).all()
    assert_in_quadrants(inputs, latent)
    with pytest.raises(ValueError, match="unknown distribution 'C'"):
        sample_toy_2d(5, "C", torch.Generator())


@pytest.mark.parametrize("setting", ["A", "B"])
def test_datamodule_splits_and_batches(setting):
    data = Toy2DDataModule(setting=setting, train_size=300, test_size=200, eval_size=100)
    assert data.num_classes == 2 and data.data_source == "generated (section 6)"
    assert data.val_splits == ("train_sample", "test_sample")
    assert data.test_splits == ("train", "test")
    batches = list(data.train_dataloader())
    assert len(batches) == 64  # steps_per_epoch batches of batch_size
    batch = batches[0]
    assert set(batch) == {"inputs", "label", "latent", "index"}
    assert batch["inputs"].shape == (10, 2) and batch["inputs"].dtype == torch.float32
    assert batch["label"].dtype == torch.long and torch.equal(batch["label"], batch["latent"][:, 0])
    assert all(len(b["label"]) == 10 for b in batches)
    assert [len(loader.dataset) for loader in data.val_dataloader()] == [100, 100]
    [full_train] = list(data.split_dataloader("train"))
    [sample] = list(data.split_dataloader("train_sample"))
    assert torch.equal(sample["inputs"], full_train["inputs"][:100])
    assert full_train["index"].tolist() == list(range(300))
    assert_in_quadrants(full_train["inputs"], full_train["latent"])
    test = list(data.split_dataloader("test", batch_size=50))
    assert len(test) == 4 and all((b["latent"] == 1).all() for b in test)
    with pytest.raises(ValueError, match="valid splits: train, test, train_sample, test_sample"):
        data.split_dataloader("val")


def test_datamodule_is_deterministic_and_shares_the_test_set_between_settings():
    a, again, b = (Toy2DDataModule(setting=s) for s in ("A", "A", "B"))
    for data in (a, again, b):
        data.setup()
    assert torch.equal(
        a.datasets["train"].columns["inputs"], again.datasets["train"].columns["inputs"]
    )
    assert torch.equal(a.datasets["test"].columns["inputs"], b.datasets["test"].columns["inputs"])
    first_draws = [
        torch.cat([batch["index"] for batch in d.train_dataloader()]) for d in (a, again)
    ]
    assert torch.equal(*first_draws)
    other = Toy2DDataModule(data_seed=1)
    other.setup()
    assert not torch.equal(
        a.datasets["train"].columns["inputs"], other.datasets["train"].columns["inputs"]
    )


def test_unknown_setting_is_refused():
    with pytest.raises(ValueError, match="unknown setting 'C'"):
        Toy2DDataModule(setting="C")
