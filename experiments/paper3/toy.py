"""Paper 3's toy 2-D problem (section 6, Figures 4-6) under its two readings, and what is read
of a trained toy run's decision boundary.

- **text** (`toy_2d`, the primary reading): X_i = Y_i - U[0, 1], an MLP with two logits and
  cross-entropy, 1,024 SGD updates on batches of 10 drawn with replacement; a step is one update.
- **playground** (`toy_2d_playground`): the authors' `dataset.ts` in the TensorFlow Playground
  (`datamodules.toy_2d`, `distribution="authors"`), one tanh output and the square loss, a step
  is one ordered pass over the ~187 training points with an update after every 10
  (`experiments/configs/paper3/toy_2d_playground.yaml`).

Each reading fixes the grid the boundary is read on (the text's data range [-1, 1]; the
playground's heat map domain [-6, 6], `src/playground.ts` line 156, at its `DENSITY` of 100
points a side, lines 54 and 807-808), where its data lie (X1 of the Y1 = 1 points: (0, 1] and
[0.3, 5.3]) and how a step's weights are named in the run folder.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

import numpy as np
import torch

STEP1_MIDDLE = (0.25, 0.75)
"""Section 6: the update "push[es] the boundary in step 1 to the middle of upper right area":
after step 1 the share of the upper-right quadrant predicted Y1 = 1 lies in [0.25, 0.75] (the
boundary crosses the quadrant, a quarter of it or more on either side)."""
STEP1_STABLE = 0.10
"""Section 6: "In the following steps ... the boundary remains stable": no later snapshot of
Figure 5's steps differs from step 1's prediction on more than a tenth of the quadrant."""


@dataclass(frozen=True, eq=False)
class ToyReading:
    """One reading of the toy problem: which runs, the grid its boundary is read on, and where
    its data lie on that grid."""

    name: str
    experiment: str
    axis: torch.Tensor = field(repr=False)
    """Both axes of the grid the Y1 prediction is read on."""
    positive_from: float
    """X1 of the Y1 = 1 points lies in (positive_from, data_edge] (Y2 = 1: X2 likewise)."""
    data_edge: float
    """|X| of every data point is at most this."""
    step_unit: str
    """What one of the reading's steps is."""
    claim_prefix: str

    def snapshot_tag(self, step: int) -> str:
        """The weights after `step` steps: `step=<n>` (`WeightSnapshot.at_steps`) for the text;
        `epoch=init` / `epoch=<n - 1>` (`WeightSnapshot.after_epochs`) for the playground."""
        if self.name == "text":
            return f"step={step}"
        return "epoch=init" if step == 0 else f"epoch={step - 1}"

    @property
    def positive(self) -> torch.Tensor:
        """Grid coordinates where the Y = 1 points lie."""
        return (self.axis > self.positive_from) & (self.axis <= self.data_edge)

    @property
    def in_data(self) -> torch.Tensor:
        """Grid coordinates within the data's range."""
        return self.axis.abs() <= self.data_edge

    @property
    def extent(self) -> tuple[float, float, float, float]:
        low, high = float(self.axis[0]), float(self.axis[-1])
        return low, high, low, high


TEXT = ToyReading("text", "toy_2d", torch.arange(-100, 101) / 100, 0.0, 1.0,
                  "update of 10 points", "")  # fmt: skip
PLAYGROUND = ToyReading("playground", "toy_2d_playground", torch.linspace(-6, 6, 100), 0.3, 5.3,
                        "pass over the training points, about 18 updates",
                        "playground.")  # fmt: skip
READINGS = (TEXT, PLAYGROUND)
GRID = TEXT.axis
"""The text reading's grid: both axes over the data's range [-1, 1], 201 points."""


@torch.no_grad()
def y1_probability(model, state: dict[str, torch.Tensor], reading: ToyReading = TEXT):
    """P(Y1 = 1) on the reading's grid, `[x2, x1]` (rows X2, columns X1); for the playground's
    one tanh unit o this is sigmoid(2 o), 0.5 on its boundary o = 0."""
    model.load_state_dict(state)
    x2, x1 = torch.meshgrid(reading.axis, reading.axis, indexing="ij")
    logits = model(torch.stack([x1.flatten(), x2.flatten()], -1))
    return logits.softmax(-1)[:, 1].reshape(len(reading.axis), len(reading.axis))


def x2_dependence(probability: torch.Tensor, reading: ToyReading = TEXT) -> float:
    """Share of the X1 columns where the Y1 = 1 points lie (text: (0, 1]; playground: [0.3,
    5.3]) whose predicted Y1 changes as X2 moves over the data's range (text: [-1, 1];
    playground: [-5.3, 5.3]). A compositional model (Y1 read from X1 alone) has 0."""
    predicted = probability[reading.in_data][:, reading.positive] > 0.5
    return float((predicted.any(0) & ~predicted.all(0)).float().mean())


def quadrant_prediction(probability: torch.Tensor, reading: ToyReading) -> torch.Tensor:
    """The predicted Y1 (bool) on the grid points of the upper-right (test) quadrant's data."""
    return probability[reading.positive][:, reading.positive] > 0.5


def boundary_over_training(grids: dict[int, torch.Tensor], reading: ToyReading) -> dict:
    """What the step-1 claim reads of a run (`grids`: P(Y1 = 1) by steps done, step 1 among
    them): the share of the upper-right quadrant predicted Y1 = 1 after each step, and the
    largest share of the quadrant whose prediction differs from step 1's at a later step."""
    predicted = {step: quadrant_prediction(grid, reading) for step, grid in grids.items()}
    later = [step for step in predicted if step > 1]
    changed = [float((predicted[step] != predicted[1]).float().mean()) for step in later]
    return {
        "quadrant_y1_share": {str(s): float(p.float().mean()) for s, p in predicted.items()},
        "changed_after_step1": max(changed, default=0.0),
    }


def step1_holds(quadrant_shares: dict[str, float], changed_after_step1: float) -> bool:
    """The rule of the step-1 claim for one run (`STEP1_MIDDLE`, `STEP1_STABLE`)."""
    low, high = STEP1_MIDDLE
    return low <= quadrant_shares["1"] <= high and changed_after_step1 <= STEP1_STABLE


GRID_LEVELS = 255
"""P(Y1 = 1) grids are kept for the figures as 8-bit levels (`encoded_grid`): the colour map's
own resolution, within 1/510 of the full-precision grid."""


def encoded_grid(probability: torch.Tensor) -> dict:
    """A P(Y1 = 1) grid `[rows, columns]` as JSON: its shape and its values as `GRID_LEVELS`
    levels, one byte each, base64 (about 54 kB for 201 x 201, against about 280 kB as decimals).
    Only figures read them; every claim is measured on the full-precision grid."""
    levels = (probability.double() * GRID_LEVELS).round().to(torch.uint8)
    return {"shape": list(levels.shape),
            "levels": base64.b64encode(levels.numpy().tobytes()).decode("ascii")}  # fmt: skip


def decoded_grid(record: dict) -> np.ndarray:
    """The grid `encoded_grid` kept, as probabilities."""
    levels = np.frombuffer(base64.b64decode(record["levels"]), dtype=np.uint8)
    return levels.reshape(record["shape"]) / GRID_LEVELS
