"""Shapley values of a classifier over its input units (Lundberg and Lee 2017), by Kernel SHAP.

Paper 1's footnote 5 (Baan et al. 2019) ranks the units of a diagnostic classifier by Shapley
values instead of weights: "applying the methods [of] Lundberg and Lee (2017) seems to confirm
the responsible neurons we found, but selects more neurons and gives less consistent results,
which we trace back to the extensive approximations required and some model assumptions (e.g.
feature independence) being violated". The approximations and the independence assumption are
Kernel SHAP's: a weighted linear regression on a sample of unit coalitions, a unit left out of a
coalition set to a baseline value independently of the others. captum's `KernelShap` does the
sampling and the regression; written here are only its seeding (captum samples the coalitions
from torch's global generator, which another thread may draw from at the same time; here they
come from a generator of their own, `SeededKernelShap`) and the ranking of units by mean absolute
Shapley value over the explained rows.
"""

from __future__ import annotations

from collections.abc import Callable, Generator

import torch
from captum.attr import KernelShap
from torch import Tensor


class SeededKernelShap(KernelShap):
    """captum's `KernelShap` drawing its coalitions from `generator` instead of torch's global
    generator, so that a thread drawing from that one at the same time (measuring another run)
    cannot change them. The draws are captum's (`kernel_shap_perturb_generator`): the number of
    units in the coalition from the Shapley kernel's distribution, then which units, by
    thresholding normal draws; with `torch.Generator().manual_seed(s)` they are the draws captum
    makes after `torch.manual_seed(s)` for the first row explained."""

    def __init__(self, forward: Callable[[Tensor], Tensor], generator: torch.Generator) -> None:
        super().__init__(forward)
        self.generator = generator

    def kernel_shap_perturb_generator(
        self, original_inp: Tensor | tuple[Tensor, ...], **kwargs: object
    ) -> Generator[Tensor, None, None]:
        units = int(kwargs["num_interp_features"])
        sizes = kwargs["num_select_distribution"].probs.reshape(1, -1)
        yield torch.ones(1, units, dtype=torch.long)
        yield torch.zeros(1, units, dtype=torch.long)
        while True:
            size = torch.multinomial(sizes, 1, True, generator=self.generator).item()
            draws = torch.randn(1, units, generator=self.generator)
            threshold = torch.kthvalue(draws, units - size).values.item()
            yield (draws > threshold).long()


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

    The coalitions come from a generator of their own seeded with `seed` (`SeededKernelShap`), so
    what other threads draw from torch's global generator changes none of them. Rows are
    explained one at a time, in order, as captum does for a batch. (Measurements taken before the
    coalitions had their own generator drew them from the global one after
    `torch.manual_seed(seed)`: the same distribution, another sample.)"""
    if n_samples < 2:
        raise ValueError(f"n_samples must be at least 2 (both end points), got {n_samples}")
    baseline = baseline.reshape(1, -1).to(rows.dtype)
    generator = torch.Generator().manual_seed(seed)
    explainer = SeededKernelShap(forward, generator)
    values = []
    with torch.no_grad():
        for i in range(len(rows)):
            values.append(explainer.attribute(
                rows[i : i + 1], baselines=baseline, target=target[i : i + 1],
                n_samples=n_samples, perturbations_per_eval=n_samples,
            ))  # fmt: skip
    return torch.cat(values)


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
