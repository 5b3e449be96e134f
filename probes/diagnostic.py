"""Diagnostic classifiers and functional groups.

Diagnostic classification (Hupkes et al. 2018): a linear classifier trained on a network's
activations to predict a feature of its input; if it succeeds, the activations encode it.
Functional groups, as Baan et al. 2019 (paper 1) section 4.1 build them after Dalvi et al.
(2019): units are ranked by the absolute weight the classifier gives them, added one at a time,
and the classifier is retrained on each growing set until it reaches 95% of the accuracy with
all units. As the paper's footnote 4 says, the classifier is not regularised. sklearn's
`LogisticRegression` (`C=inf`: no penalty) does the fitting.

`ablation_functional_group` is the same idea as the paper's co-authors ran it
(`mitjanikolaus/machine-analysis`, `functional_groups.py`, `perform_ablation_study`):
sklearn's multinomial `LogisticRegression(solver="saga", max_iter=100)` with its default `C=1`
(an L2 penalty, against the footnote), accuracies and coefficients averaged over the same
repeated random 90/10 splits, units added in order of the absolute mean coefficient until the
mean accuracy reaches 95% of the all-unit mean, the majority baseline counted on all labels.
Their ranking reads the first `units` entries of the flattened `[classes, units]` coefficients,
that is the first class's coefficients only (`ranking="first_class"`); `ranking="all_classes"`
sums the absolute mean coefficients over classes, as `functional_group` does.

Paper 1's footnote 5 ranks the units by Shapley values instead (Lundberg and Lee 2017): the same
procedure with `shap_order`, Kernel SHAP values (`probes.shapley`) of the all-unit classifier.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from threadpoolctl import ThreadpoolController
from torch import Tensor

if TYPE_CHECKING:
    from sklearn.linear_model import LogisticRegression


@functools.cache
def _threadpools() -> ThreadpoolController:
    """threadpoolctl's controller of the BLAS libraries loaded, found once per process:
    `threadpool_limits` looks them up anew on every call (12 ms with torch loaded, a fifth of a
    functional group's search, which fits thousands of classifiers)."""
    return ThreadpoolController()


_ONE_FIT_AT_A_TIME = threading.RLock()  # re-entrant: a fit inside a fit does not wait


@contextlib.contextmanager
def one_blas_thread():
    """The context in which a classifier fits: BLAS on one thread (sklearn's solvers: the same
    sums in the same order in every process), one fit at a time in the process. OpenBLAS's count
    is process-wide and threadpoolctl restores the count each limit found on leaving it, so two
    threads fitting at once (a reproduction measures two runs at a time) would give one of them
    every core when the other left; fits in other processes are not held up."""
    with _ONE_FIT_AT_A_TIME, _threadpools().limit(limits=1, user_api="blas"):
        yield


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
    from sklearn.model_selection import train_test_split  # sklearn where a classifier is fit

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
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    classifier = LogisticRegression(C=np.inf, max_iter=1000)
    with warnings.catch_warnings(), one_blas_thread():
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


@dataclass(frozen=True)
class SplitClassifier:
    """The co-authors' diagnostic classifier: its mean held-out `accuracy` over the splits and its
    mean `coefficients` `[classes, units]` and `intercepts` `[classes]` (one row for two
    classes), the linear model that ranks the units."""

    accuracy: float
    coefficients: Tensor
    intercepts: Tensor

    def logits(self, features: Tensor) -> Tensor:
        """`[samples, classes]` scores of `features` `[samples, units]` (two classes: 0 and the
        one row's score, so that their softmax is the logistic model's probabilities)."""
        scores = features.to(self.coefficients.dtype) @ self.coefficients.T + self.intercepts
        return torch.cat([torch.zeros_like(scores), scores], 1) if scores.shape[1] == 1 else scores

    def probabilities(self, features: Tensor) -> Tensor:
        """`[samples, classes]` predicted class probabilities (softmax of `logits`)."""
        return torch.softmax(self.logits(features), 1)


def _every_class(classifier: LogisticRegression, classes: np.ndarray):
    """A fitted classifier's coefficients `[classes, units]` and intercepts `[classes]` over every
    class of `classes` (as sklearn gives them: one row for two classes). A class the split's
    training part lacked (a label of few samples, all held out) gets weight 0; a split that kept
    only two of three or more classes has its one row as the two softmax rows it equals."""
    coefficients, intercepts = classifier.coef_, classifier.intercept_
    if len(classes) <= 2 or len(classifier.classes_) == len(classes):
        return coefficients, intercepts
    if len(classifier.classes_) == 2:
        coefficients = np.concatenate([-coefficients / 2, coefficients / 2])
        intercepts = np.concatenate([-intercepts / 2, intercepts / 2])
    rows = np.searchsorted(classes, classifier.classes_)
    every = np.zeros((len(classes), coefficients.shape[1])), np.zeros(len(classes))
    every[0][rows], every[1][rows] = coefficients, intercepts
    return every


def _mean_split_score(
    features: np.ndarray, labels: np.ndarray, splits: list, penalty_c: float, seed: int
) -> SplitClassifier:
    """The saga classifier over `splits`: its mean held-out accuracy and mean coefficients and
    intercepts (one BLAS thread, so the result is the same whatever ran it)."""
    from sklearn import config_context
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    scores, coefficients, intercepts = [], [], []
    classes = np.unique(labels)
    for train, test in splits:
        classifier = LogisticRegression(solver="saga", max_iter=100, C=penalty_c, random_state=seed)
        # the parameters above are valid: sklearn's check of them took a sixth of a search
        with (
            warnings.catch_warnings(),
            one_blas_thread(),
            config_context(skip_parameter_validation=True),
        ):
            warnings.simplefilter("ignore", ConvergenceWarning)  # 100 saga epochs rarely converge
            classifier.fit(features[train], labels[train])
            predicted = classifier.predict(features[test])
        scores.append(float(np.mean(predicted == labels[test])))  # `score`, without its checks
        coefficient, intercept = _every_class(classifier, classes)
        coefficients.append(coefficient)
        intercepts.append(intercept)
    return SplitClassifier(float(np.mean(scores)), torch.from_numpy(np.mean(coefficients, axis=0)),
                           torch.from_numpy(np.mean(intercepts, axis=0)))  # fmt: skip


UnitOrder = Callable[[SplitClassifier], Tensor]
"""How a functional group ranks the units, given the all-unit classifier: `[units]`, first
added first (`ablation_functional_group`)."""


def coefficient_order(ranking: str = "first_class") -> UnitOrder:
    """The co-authors' ranking: decreasing absolute mean coefficient of the first class
    (`first_class`, their code) or summed over classes (`all_classes`); ties by index."""
    if ranking not in ("first_class", "all_classes"):
        raise ValueError(f"ranking must be first_class or all_classes, got {ranking!r}")

    def order(classifier: SplitClassifier) -> Tensor:
        absolute = classifier.coefficients.abs()  # of the mean coefficients, as their code
        weight = absolute[0] if ranking == "first_class" else absolute.sum(0)
        return torch.sort(weight, descending=True, stable=True).indices

    return order


def ablation_functional_group(
    features: Tensor,
    labels: Tensor,
    runs: int = 5,
    test_share: float = 0.1,
    share: float = 0.95,
    penalty_c: float = 1.0,
    ranking: str = "first_class",
    seed: int = 0,
    unit_order: UnitOrder | None = None,
) -> FunctionalGroup:
    """Paper 1, section 4.1, by the co-authors' procedure (see the module docstring): the units,
    ranked by the absolute mean coefficient over `runs` seeded random splits (`test_share` held
    out), added until the mean held-out accuracy over the same splits reaches `share` of the
    all-unit mean. `penalty_c=np.inf` is the footnote's unregularised reading; `ranking` is
    `first_class` (their code) or `all_classes`. `unit_order` ranks the units otherwise, given
    the all-unit classifier (footnote 5's Shapley values: `shap_order`)."""
    order = unit_order or coefficient_order(ranking)
    return ablation_functional_groups(features, labels, [order], runs, test_share, share,
                                      penalty_c, seed)[0]  # fmt: skip


def ablation_functional_groups(
    features: Tensor,
    labels: Tensor,
    unit_orders: Sequence[UnitOrder],
    runs: int = 5,
    test_share: float = 0.1,
    share: float = 0.95,
    penalty_c: float = 1.0,
    seed: int = 0,
) -> list[FunctionalGroup]:
    """`ablation_functional_group` once per ranking of `unit_orders`, all from the same splits
    and the same all-unit classifier (fit once)."""
    from sklearn.model_selection import ShuffleSplit

    x, y = features.detach().double().numpy(), labels.numpy()
    splits = list(ShuffleSplit(runs, test_size=test_share, random_state=seed).split(x))
    everything = _mean_split_score(x, y, splits, penalty_c, seed)
    majority = float(np.unique(y, return_counts=True)[1].max() / len(y))
    groups, accuracies = [], {}  # by units in order: rankings often share their first units
    for unit_order in unit_orders:
        order = unit_order(everything)
        for size in range(1, order.numel() + 1):
            units = order[:size]
            if (key := tuple(units.tolist())) not in accuracies:
                fit = _mean_split_score(x[:, units.numpy()], y, splits, penalty_c, seed)
                accuracies[key] = fit.accuracy
            accuracy = accuracies[key]
            if accuracy >= share * everything.accuracy:
                groups.append(FunctionalGroup(units, accuracy, everything.accuracy, majority))
                break
        else:
            raise AssertionError("unreachable: all units reach the all-unit accuracy")
    return groups


FUNCTIONAL_GROUP_PROCEDURES = ("coauthors", "text")
"""How paper 1's functional groups are built: as the co-authors' code does
(`ablation_functional_group`) or as the paper's text reads alone (`functional_group`)."""


def functional_group_of(
    features: Tensor,
    labels: Tensor,
    procedure: str = "coauthors",
    runs: int = 5,
    share: float = 0.95,
    seed: int = 0,
) -> FunctionalGroup:
    """Paper 1, section 4.1 (Tables 2-3): the functional group of `features` `[samples, units]`
    for `labels` (`probes.traces.site_samples` gives both for a recorded site) by one of
    `FUNCTIONAL_GROUP_PROCEDURES`: `coauthors` (`ablation_functional_group` as the authors' code
    runs it, averaged over `runs` random splits) or `text` (`functional_group`, the paper's text
    read alone)."""
    if procedure not in FUNCTIONAL_GROUP_PROCEDURES:
        raise ValueError(f"procedure {procedure!r} is not one of "
                         f"{', '.join(FUNCTIONAL_GROUP_PROCEDURES)}")  # fmt: skip
    if procedure == "text":
        return functional_group(features, labels, share=share, seed=seed)
    return ablation_functional_group(features, labels, runs, share=share, seed=seed)


def shap_order(features: Tensor, labels: Tensor, rows: int, n_samples: int,
               sample_seed: int = 0, output: str = "probability") -> UnitOrder:  # fmt: skip
    """Footnote 5's ranking: units by decreasing mean absolute Kernel SHAP value
    (`probes.shapley`) of the all-unit classifier's `output` (`probability` or `logit`) of each
    row's own label, over about `rows` rows, as many of each label (`explained_rows`: `rows /
    classes` rounded up, data seed 0), every unit left out of a coalition set to its mean over
    all `features` (the baseline), from `n_samples` coalitions per row drawn with
    `sample_seed`."""
    from probes.shapley import explained_rows, kernel_shap, shap_unit_order  # captum's

    if output not in ("probability", "logit"):
        raise ValueError(f"output must be probability or logit, got {output!r}")
    classes = torch.unique(labels)
    explained = explained_rows(labels, math.ceil(rows / len(classes)))
    values = features.detach().double()

    def order(classifier: SplitClassifier) -> Tensor:
        forward = classifier.probabilities if output == "probability" else classifier.logits
        target = torch.searchsorted(classes, labels[explained])  # sklearn's class index: sorted
        attributions = kernel_shap(forward, values[explained], values.mean(0), target, n_samples,
                                   sample_seed)  # fmt: skip
        return shap_unit_order(attributions)

    return order
