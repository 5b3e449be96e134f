"""Shapley values of a classifier over its input units (Lundberg and Lee 2017), by Kernel SHAP.

Paper 1's footnote 5 (Baan et al. 2019) ranks the units of a diagnostic classifier by Shapley
values instead of weights: "applying the methods [of] Lundberg and Lee (2017) seems to confirm
the responsible neurons we found, but selects more neurons and gives less consistent results,
which we trace back to the extensive approximations required and some model assumptions (e.g.
feature independence) being violated". The approximations and the independence assumption are
Kernel SHAP's: a weighted linear regression on a sample of unit coalitions, a unit left out of a
coalition set to a baseline value independently of the others. captum's `KernelShap` does the
sampling and the regression; written here are only its seeding (captum samples from torch's
global generator, locked, forked and seeded here so that nothing else disturbs it or is
disturbed) and the ranking of units by mean absolute Shapley value over the explained rows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch
from captum.attr import KernelShap
from torch import Tensor

GLOBAL_GENERATOR = threading.Lock()
"""Held while captum draws from torch's global generator (`kernel_shap`)."""


def kernel_shap(
    forward: Callable[[Tensor], Tensor],
    rows: Tensor,
    baseline: Tensor,
    target: Tensor,
    n_samples: int,
    seed: int = 0,
) -> Tensor:
    """Kernel SHAP values (captum) `[rows, units]` of `forward` (`[n, units] -> [n, classes]`) at
    each of `rows` `[rows, units]` for its `target` class `[rows]`, a unit left out of a coalition
    set to its `baseline` value (`[units]` or `[1, units]`), from `n_samples` coalitions per row
    drawn with `seed`. Each row's values sum to about `forward(row) - forward(baseline)` at its
    target; with fewer coalitions than units + 1 the regression is underdetermined.

    captum draws the coalitions from torch's global generator: the call holds `GLOBAL_GENERATOR`
    (one Kernel SHAP at a time in a process, so threads measuring two runs at once cannot
    interleave their draws) and forks the generator, so the caller's stream is left as it was.
    Rows are explained one at a time, in order, as captum does for a batch."""
    if n_samples < 2:
        raise ValueError(f"n_samples must be at least 2 (both end points), got {n_samples}")
    baseline = baseline.reshape(1, -1).to(rows.dtype)
    explainer = KernelShap(forward)
    with GLOBAL_GENERATOR, torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        return torch.cat([
            explainer.attribute(rows[i : i + 1], baselines=baseline, target=target[i : i + 1],
                                n_samples=n_samples, perturbations_per_eval=n_samples)
            for i in range(len(rows))
        ])  # fmt: skip


def shap_unit_order(attributions: Tensor) -> Tensor:
    """Units `[units]` by decreasing mean absolute Shapley value over the rows of `attributions`
    `[rows, units]` (ties by index)."""
    importance = attributions.abs().mean(0)
    return torch.sort(importance, descending=True, stable=True).indices


def explained_rows(labels: Tensor, per_class: int, seed: int = 0) -> Tensor:
    """Indices of up to `per_class` rows of each label in `labels` `[samples]`, drawn with `seed`
    (the rows Kernel SHAP explains: a few per class, since each row costs a regression)."""
    generator = torch.Generator().manual_seed(seed)
    chosen = []
    for label in torch.unique(labels):
        members = torch.nonzero(labels == label).flatten()
        chosen.append(members[torch.randperm(len(members), generator=generator)[:per_class]])
    return torch.sort(torch.cat(chosen)).values
