"""Diagnostic classifiers and functional groups.

Diagnostic classification (Hupkes et al. 2018): a linear classifier trained on a network's
activations to predict a feature of its input; if it succeeds, the activations encode it.
Functional groups, as Baan et al. 2019 (paper 1) section 4.1 build them after Dalvi et al.
(2019): units are ranked by the absolute weight the classifier gives them, added one at a time,
and the classifier is retrained on each growing set until it reaches 95% of the accuracy with
all units. As the paper's footnote 4 says, the classifier is not regularised. sklearn's
`LogisticRegression` (`C=inf`: no penalty) does the fitting.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits
from torch import Tensor


def labelled_steps(values: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
    """Flatten `values` `[batch, time, units]` to the steps whose `labels` `[batch, time]` are
    set (>= 0; -100 marks steps without a label): features `[samples, units]`, labels
    `[samples]`."""
    keep = labels >= 0
    return values[keep], labels[keep]


@dataclass(frozen=True)
class DiagnosticClassifier:
    """A fitted classifier's held-out `accuracy` and its weights `[classes, units]` (one row for
    two classes)."""

    accuracy: float
    weights: Tensor

    def unit_order(self) -> Tensor:
        """Units by decreasing summed absolute weight over classes `[units]` (ties by index)."""
        importance = self.weights.abs().sum(0)
        return torch.sort(importance, descending=True, stable=True).indices


@dataclass(frozen=True)
class FunctionalGroup:
    """`units` (in the order added), held-out `accuracy` with them and `accuracy_all` with
    every unit, and `majority`: the held-out accuracy of always predicting the most frequent
    training label."""

    units: Tensor
    accuracy: float
    accuracy_all: float
    majority: float

    @property
    def size(self) -> int:
        return int(self.units.numel())


def split_samples(features: Tensor, labels: Tensor, test_share: float = 1 / 3, seed: int = 0):
    """A seeded split stratified by label: `(train_x, test_x, train_y, test_y)` as numpy."""
    return train_test_split(
        features.detach().double().numpy(),
        labels.numpy(),
        test_size=test_share,
        random_state=seed,
        stratify=labels.numpy(),
    )


def fit_diagnostic_classifier(
    train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray, test_y: np.ndarray
) -> DiagnosticClassifier:
    """An unregularised multinomial logistic regression, scored on the held-out samples.

    The fit runs on one BLAS thread: without a penalty, lbfgs often stops at `max_iter` before
    converging, and where it stops depends on the floating-point order of its sums, which the
    thread count changes (measured on paper 1's baseline decoder gates: functional groups of 55
    or 35 units for the same run). One thread makes the result the same in every process.
    """
    classifier = LogisticRegression(C=np.inf, max_iter=1000)
    with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
        warnings.simplefilter("ignore", ConvergenceWarning)  # separable data never "converge"
        classifier.fit(train_x, train_y)
    return DiagnosticClassifier(
        float(classifier.score(test_x, test_y)), torch.from_numpy(classifier.coef_)
    )


def functional_group(
    features: Tensor, labels: Tensor, share: float = 0.95, test_share: float = 1 / 3, seed: int = 0
) -> FunctionalGroup:
    """Paper 1, section 4.1: the smallest prefix of units, ranked by the all-unit classifier's
    absolute weights, whose retrained classifier reaches `share` of the all-unit accuracy.

    `features` `[samples, units]`, `labels` `[samples]` (e.g. from `labelled_steps`); accuracy
    is measured on a held-out, label-stratified `test_share` of the samples.
    """
    train_x, test_x, train_y, test_y = split_samples(features, labels, test_share, seed)
    everything = fit_diagnostic_classifier(train_x, train_y, test_x, test_y)
    values, counts = np.unique(train_y, return_counts=True)
    majority = float((test_y == values[counts.argmax()]).mean())
    order = everything.unit_order()
    for size in range(1, order.numel() + 1):
        units = order[:size].numpy()
        group = fit_diagnostic_classifier(train_x[:, units], train_y, test_x[:, units], test_y)
        if group.accuracy >= share * everything.accuracy:
            return FunctionalGroup(order[:size], group.accuracy, everything.accuracy, majority)
    raise AssertionError("unreachable: all units reach the all-unit accuracy")
