"""Probes of activation values: their spread per unit and gate saturation.

Baan et al. 2019 (paper 1), section 4.1 (Figure 3: the range of values each unit takes over a
test set) and section 4.2 (Figure 4: gate saturation, after Karpathy et al. 2015: the fraction
of steps at which a gate is left-saturated, below 0.1, i.e. closed, or right-saturated, above
0.9, i.e. open).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


def steps_of(values: Tensor, mask: Tensor) -> Tensor:
    """`values` `[batch, time, units]` at the steps where `mask` `[batch, time]` is True:
    `[steps, units]`."""
    return values[mask]


@dataclass(frozen=True)
class Saturation:
    """Per unit `[units]`: the fraction of steps left-saturated (`left`) and right-saturated
    (`right`)."""

    left: Tensor
    right: Tensor

    def off_axes(self, at_least: float = 0.01) -> Tensor:
        """Units `[units]` saturated on both sides, each at `at_least` of the steps: the points
        of Figure 4 that lie between its axes rather than on one ("values in between ...
        indicate gates that are rarely saturated", section 4.2)."""
        return (self.left >= at_least) & (self.right >= at_least)


def gate_saturation(gate: Tensor, mask: Tensor, low: float = 0.1, high: float = 0.9) -> Saturation:
    """Fractions of the valid steps (`mask` `[batch, time]`) at which each unit of `gate`
    `[batch, time, units]` is below `low` and above `high`."""
    values = steps_of(gate, mask).detach().double()
    return Saturation((values < low).double().mean(0), (values > high).double().mean(0))


def value_quantiles(values: Tensor, mask: Tensor) -> Tensor:
    """Minimum, lower quartile, median, upper quartile and maximum of each unit over the valid
    steps: `[units, 5]` (the boxes and full-range whiskers of Figure 3)."""
    steps = steps_of(values, mask).detach().double()
    levels = torch.tensor([0.0, 0.25, 0.5, 0.75, 1.0], dtype=steps.dtype)
    return torch.quantile(steps, levels, dim=0).T
