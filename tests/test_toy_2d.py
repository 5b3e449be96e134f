"""The toy 2-D problem of paper 3, section 6 and Appendix C."""

import pytest
import torch

from datamodules import Toy2DDataModule
from datamodules.sampling import OrderedPasses
from datamodules.toy_2d_points import authors_candidates, sample_authors_toy, sample_toy_2d


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


# ---- the authors' reading: their dataset.ts in the TensorFlow Playground ----------------------
def test_authors_candidates_are_pushed_away_from_the_axes():
    """`classifyXORData`: x, y ~ U(-5, 5), each moved 0.3 further from 0: |x| in [0.3, 5.3], none
    nearer the axis, both sides and the whole range used evenly."""
    points = authors_candidates(20000, torch.Generator().manual_seed(0))
    assert points.dtype == torch.float64
    assert ((points.abs() >= 0.3) & (points.abs() <= 5.3)).all()
    assert points.abs().min() < 0.31 and points.abs().max() > 5.29
    assert abs(float((points > 0).double().mean()) - 0.5) < 0.02
    assert abs(float(points.abs().mean()) - 2.8) < 0.05  # 0.3 + the mean of U(0, 5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_authors_setting_a_is_the_playground_half_of_the_kept_candidates(seed):
    """500 candidates, the upper-right quadrant dropped, the kept ones shuffled and half of them
    (rounded down) trained on; Y1 is the sign of x, Y2 of y; the three quadrants left are equally
    likely."""
    inputs, latent = sample_authors_toy("A", torch.Generator().manual_seed(seed))
    candidates = authors_candidates(500, torch.Generator().manual_seed(seed))
    kept = int(((candidates[:, 0] <= 0) | (candidates[:, 1] <= 0)).sum())
    assert 330 < kept < 420 and len(inputs) == kept // 2  # 375 expected, about 187 trained on
    assert inputs.dtype == torch.float32
    assert not ((inputs[:, 0] > 0) & (inputs[:, 1] > 0)).any()  # the dropped quadrant
    assert torch.equal(latent, (inputs >= 0).long())
    assert ((inputs.abs() >= 0.3) & (inputs.abs() <= 5.3 + 1e-6)).all()
    counts = combination_counts(latent)
    assert set(counts) == {(0, 0), (0, 1), (1, 0)}
    assert all(40 < count < 85 for count in counts.values())


def test_authors_setting_a_label_shares_over_many_candidates():
    inputs, latent = sample_authors_toy("A", torch.Generator().manual_seed(0), candidates=40000)
    assert abs(len(inputs) - 15000) < 300
    shares = {pair: count / len(inputs) for pair, count in combination_counts(latent).items()}
    assert all(abs(share - 1 / 3) < 0.02 for share in shares.values())


def test_authors_setting_b_and_test_points():
    """Setting B: 375 points, half trained on (187), Y1 = 1 w.p. 1/3 and Y2 independent, on the
    authors' scale; test: the upper-right quadrant, (1, 1)."""
    inputs, latent = sample_authors_toy("B", torch.Generator().manual_seed(0))
    assert len(inputs) == 187 and torch.equal(latent, (inputs >= 0).long())
    _, many = sample_authors_toy("B", torch.Generator().manual_seed(1), candidates=40000)
    counts = combination_counts(many)
    assert set(counts) == {(0, 0), (0, 1), (1, 0), (1, 1)}
    positive = counts[(1, 0)] + counts[(1, 1)]
    assert abs(positive / len(many) - 1 / 3) < 0.02
    assert abs(counts[(1, 1)] / positive - 0.5) < 0.03
    test, test_latent = sample_authors_toy("test", torch.Generator().manual_seed(0), test_count=500)
    assert len(test) == 500 and (test_latent == 1).all()
    assert ((test >= 0.3) & (test <= 5.3 + 1e-6)).all()
    assert test.min() < 0.4 and test.max() > 5.2
    with pytest.raises(ValueError, match="unknown distribution 'C'"):
        sample_authors_toy("C", torch.Generator())


def test_ordered_passes_carry_the_leftover_rows_into_the_next_update():
    """37 rows, batch 10: every pass makes 3 updates; the 7 rows after the first pass's last
    update join the second pass's first update; the last pass's leftover is never served."""
    passes = OrderedPasses(37, 10)
    assert len(passes) == 3
    assert list(passes) == [list(range(0, 10)), list(range(10, 20)), list(range(20, 30))]
    passes.set_epoch(1)
    first, *rest = list(passes)
    assert first == list(range(30, 37)) + list(range(10))
    assert rest == [list(range(10, 20)), list(range(20, 30))]
    exact = OrderedPasses(30, 10)
    exact.set_epoch(5)
    assert list(exact)[0] == list(range(10))  # nothing left over
    with pytest.raises(ValueError, match="never fill a batch"):
        OrderedPasses(9, 10)


def test_authors_datamodule_serves_playground_passes():
    data = Toy2DDataModule(distribution="authors", training_order="playground_passes",
                           test_size=300, eval_size=1000, data_seed=3)  # fmt: skip
    assert "dataset.ts" in data.data_source
    data.setup()
    size = len(data.datasets["train"])
    assert 165 < size < 210
    loader = data.train_dataloader()
    loader.sampler.set_epoch(0)
    batches = list(loader)
    assert len(batches) == size // 10
    assert set(batches[0]) == {"inputs", "label", "latent", "index"}
    assert torch.cat([b["index"] for b in batches]).tolist() == list(range(size // 10 * 10))
    assert torch.equal(batches[0]["inputs"], data.datasets["train"].columns["inputs"][:10])
    loader.sampler.set_epoch(1)
    first = next(iter(loader))
    assert len(first["label"]) == 10 + size % 10
    assert [len(loader.dataset) for loader in data.val_dataloader()] == [size, 300]
    test = data.datasets["test"].columns
    assert (test["latent"] == 1).all() and (test["inputs"] >= 0.3).all()
    with pytest.raises(ValueError, match="unknown distribution 'paper'"):
        Toy2DDataModule(distribution="paper")
    with pytest.raises(ValueError, match="unknown training_order 'shuffled'"):
        Toy2DDataModule(training_order="shuffled")
