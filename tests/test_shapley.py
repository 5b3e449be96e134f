"""Kernel SHAP over a classifier's units (paper 1, footnote 5): known answers."""

import pytest
import torch

from probes.diagnostic import (
    SplitClassifier,
    ablation_functional_group,
    ablation_functional_groups,
    labelled_steps,
    shap_order,
)
from probes.shapley import explained_rows, kernel_shap, shap_unit_order
from tests.test_probes import planted_gru, planted_inputs


def independent_rows(rows: int = 40, units: int = 6) -> torch.Tensor:
    generator = torch.Generator().manual_seed(3)
    scales = torch.linspace(0.5, 3.0, units)
    return torch.randn(rows, units, generator=generator, dtype=torch.float64) * scales


def test_kernel_shap_of_a_linear_classifier_is_weight_times_distance_from_the_mean():
    """For a linear score with independent inputs, exact SHAP with the mean as baseline is
    w_i (x_i - E x_i): captum's Kernel SHAP (more coalitions than units) gives it at each row's
    target class, whatever the sample seed."""
    features = independent_rows()
    weights = torch.tensor([[1.5, -2.0, 0.0, 0.3, 4.0, -0.7], [-1.0, 0.5, 2.5, 0.0, -3.0, 1.2]],
                           dtype=torch.float64)  # fmt: skip
    classifier = SplitClassifier(1.0, weights, torch.tensor([0.2, -0.4], dtype=torch.float64))
    target = torch.arange(len(features)) % 2
    mean = features.mean(0)
    for seed in (0, 1):
        values = kernel_shap(classifier.logits, features, mean, target, n_samples=200, seed=seed)
        expected = weights[target] * (features - mean)
        assert values.shape == features.shape
        assert torch.allclose(values.double(), expected, atol=2e-3), seed
    # too few coalitions (fewer than units + 1) leave the regression underdetermined: not exact
    few = kernel_shap(classifier.logits, features, mean, target, n_samples=4, seed=0)
    assert not torch.allclose(few.double(), weights[target] * (features - mean), atol=2e-3)


def test_kernel_shap_repeats_with_its_seed_whatever_torchs_generator_holds():
    features = independent_rows(4)
    classifier = SplitClassifier(1.0, torch.ones(1, 6, dtype=torch.float64),
                                 torch.zeros(1, dtype=torch.float64))  # fmt: skip
    torch.manual_seed(123)
    target = torch.ones(4, dtype=torch.long)
    first = kernel_shap(classifier.probabilities, features, features.mean(0), target, 20, seed=5)
    torch.manual_seed(9)
    again = kernel_shap(classifier.probabilities, features, features.mean(0), target, 20, seed=5)
    other = kernel_shap(classifier.probabilities, features, features.mean(0), target, 20, seed=6)
    assert torch.equal(first, again) and not torch.equal(first, other)


def test_units_are_ranked_by_mean_absolute_shapley_value():
    attributions = torch.tensor([[0.1, -3.0, 0.5, 0.0], [-0.1, 1.0, -0.5, 2.0]])
    assert shap_unit_order(attributions).tolist() == [1, 3, 2, 0]  # means .1, 2, .5, 1


def test_explained_rows_take_as_many_of_each_label():
    labels = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2, 0])
    rows = explained_rows(labels, 2)
    assert torch.bincount(labels[rows]).tolist() == [2, 2, 2]
    assert torch.equal(rows, explained_rows(labels, 2)) and rows.tolist() == sorted(rows.tolist())


def test_the_shap_group_of_the_planted_pair_holds_that_pair():
    """The planted GRU holds its table in units 0 and 1 only: ranked by Shapley values of the
    co-authors' classifier (each row's own label, so every class counts), the group is that pair;
    ranked by the first class's coefficient (their code) it grows past the noise units (see
    `test_the_coauthors_ablation_on_the_planted_pair`). Both share the all-unit classifier."""
    inputs, tables = planted_inputs()
    record = {}
    planted_gru()(inputs, record=record)
    features, labels = labelled_steps(record["hidden"], tables)
    weight, shap = ablation_functional_groups(
        features, labels, [lambda c: ablation_order(c), shap_order(features, labels, 16, 100)]
    )
    assert set(shap.units.tolist()) == {0, 1}
    assert shap.accuracy >= 0.95 * shap.accuracy_all and shap.accuracy_all == weight.accuracy_all
    assert weight.size > 2 and torch.equal(weight.units, ablation_functional_group(
        features, labels).units)  # fmt: skip
    logit = ablation_functional_group(
        features, labels, unit_order=shap_order(features, labels, 16, 100, output="logit")
    )
    assert set(logit.units.tolist()) == {0, 1}
    with pytest.raises(ValueError, match="output must be probability or logit"):
        shap_order(features, labels, 16, 100, output="margin")


def ablation_order(classifier: SplitClassifier) -> torch.Tensor:
    """The co-authors' ranking (the first class's |mean coefficient|), written out."""
    return torch.sort(classifier.coefficients[0].abs(), descending=True, stable=True).indices


def test_kernel_shap_in_two_threads_at_once_gives_what_each_gives_alone():
    """captum draws from torch's global generator: two runs measured at once (the reproduction's
    threads) must not interleave their draws."""
    from concurrent.futures import ThreadPoolExecutor

    features = independent_rows(12)
    classifier = SplitClassifier(1.0, torch.randn(3, 6, dtype=torch.float64,
                                                  generator=torch.Generator().manual_seed(0)),
                                 torch.zeros(3, dtype=torch.float64))  # fmt: skip
    target = torch.arange(12) % 3

    def explain(seed: int) -> torch.Tensor:
        return kernel_shap(classifier.probabilities, features, features.mean(0), target, 30, seed)

    alone = [explain(seed) for seed in range(4)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        together = list(pool.map(explain, range(4)))
    assert all(torch.equal(a, b) for a, b in zip(alone, together, strict=True))


def test_kernel_shap_coalitions_ignore_draws_others_make_from_torchs_generator():
    """What another thread draws from torch's global generator while Kernel SHAP samples (here:
    the forward itself, between captum's draws, as a second run measured at once does) changes
    no coalition."""
    features = independent_rows(6)
    classifier = SplitClassifier(1.0, torch.randn(3, 6, dtype=torch.float64,
                                                  generator=torch.Generator().manual_seed(0)),
                                 torch.zeros(3, dtype=torch.float64))  # fmt: skip
    target = torch.arange(6) % 3

    def drawing(inputs: torch.Tensor) -> torch.Tensor:
        torch.rand(7)  # another thread's draw
        return classifier.probabilities(inputs)

    quiet = kernel_shap(classifier.probabilities, features, features.mean(0), target, 25, seed=4)
    disturbed = kernel_shap(drawing, features, features.mean(0), target, 25, seed=4)
    assert torch.equal(quiet, disturbed)
