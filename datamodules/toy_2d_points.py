"""The points of paper 3's toy 2-D problem ("Gradient Descent Resists Compositionality"), section 6
and Appendix C (Figures 4-6), under two readings of its data; torch only, so a report draws them
without loading Lightning (`datamodules.toy_2d` serves them as a DataModule).

**The text's** (`distribution="text"`, the primary reading): two binary latents Y1, Y2 give the
inputs X_i = Y_i - U[0, 1] (so X_i lies in (Y_i - 1, Y_i]); a model predicts Y1 from (X1, X2).

- training, setting A: (Y1, Y2) uniform on {(0, 0), (0, 1), (1, 0)} (the paper's problem): X2
  carries part of Y1, since Y2 = 1 implies Y1 = 0;
- training, setting B: Y1 = 1 with probability 1/3 (A's marginal), Y2 uniform on {0, 1}
  independently of Y1, so X2 carries nothing about Y1;
- test, both settings: (Y1, Y2) = (1, 1), the combination never seen in setting A.

**The authors'** (`distribution="authors"`): the TensorFlow Playground with the `dataset.ts` of
`yuanpeng16/BCDLSG` (commit efb6c20) copied in. Its `classifyXORData` (lines 190-210) draws
x, y ~ U(-5, 5) (line 196, 199), pushes each 0.3 away from its axis (lines 197-200: inputs in
±[0.3, 5.3]), labels a point +1 when x >= 0 (line 192: Y1 is the sign of x; Y2 here is the sign
of y) and drops the upper-right quadrant, x > 0 and y > 0 (line 204); noise is 0 (the
playground's default, `src/state.ts` line 140). The playground (`tensorflow/playground`
`src/playground.ts`) draws `NUM_SAMPLES_CLASSIFY` = 500 candidates (line 52, 1079), shuffles
the points kept (line 1081) and trains on the first floor(n * 50 / 100) of them (lines
1083-1084; `percTrainData` 50, `src/state.ts` line 144): about 187 points, their number varying
with the seed as the kept count does (375 expected). Here:

- training, setting A: exactly that procedure (`candidates` candidates, `train_share` kept);
- training, setting B (the suite's, on the authors' scale): round(3/4 `candidates`) points (A's
  expected count before the split) whose Y1 = 1 with probability 1/3 (A's marginal) and Y2
  uniform independently, each coordinate 0.3 + U(0, 5) away from its axis on the side its latent
  says (1: positive); shuffled and split as A;
- test, both settings: points of the upper-right quadrant drawn the same way (x, y = 0.3 +
  U(0, 5), the law of A's candidates there), (Y1, Y2) = (1, 1). (The playground's own test half
  comes from the training distribution; the paper's test is the dropped quadrant.)

Labels are Y1 in {0, 1} under both readings (the playground's targets are 2 Y1 - 1).
"""

from __future__ import annotations

from typing import Literal

import torch

SETTINGS = ("A", "B")
DISTRIBUTIONS = ("text", "authors")
TRAINING_ORDERS = ("with_replacement", "playground_passes")
SETTING_A_LATENTS = torch.tensor([[0, 0], [0, 1], [1, 0]])
AUTHORS_RANGE = 5.0
"""`classifyXORData` draws each coordinate from U(-5, 5) (`dataset.ts` lines 196, 199)."""
AUTHORS_PADDING = 0.3
"""...and pushes it 0.3 away from its axis (`dataset.ts` lines 197-200)."""
PLAYGROUND_CANDIDATES = 500
"""`NUM_SAMPLES_CLASSIFY` (`tensorflow/playground` `src/playground.ts` line 52)."""
PLAYGROUND_TRAIN_SHARE = 0.5
"""`percTrainData` 50 (`src/state.ts` line 144), the share of the shuffled points trained on."""


def sample_toy_2d(
    count: int, setting_or_test: Literal["A", "B", "test"], generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """`count` points of the text's reading: inputs float [count, 2] (X1, X2) and latents long
    [count, 2] (Y1, Y2)."""
    if setting_or_test == "A":
        latent = SETTING_A_LATENTS[torch.randint(3, (count,), generator=generator)]
    elif setting_or_test == "B":
        first = (torch.rand(count, generator=generator) < 1 / 3).long()
        latent = torch.stack([first, torch.randint(2, (count,), generator=generator)], dim=1)
    elif setting_or_test == "test":
        latent = torch.ones(count, 2, dtype=torch.long)
    else:
        raise ValueError(f"unknown distribution {setting_or_test!r}; valid: 'A', 'B', 'test'")
    inputs = latent - torch.rand(count, 2, generator=generator)
    return inputs, latent


def authors_candidates(count: int, generator: torch.Generator) -> torch.Tensor:
    """`count` candidate points of `classifyXORData` (float64, as JavaScript's numbers):
    x, y = U(-5, 5), then moved 0.3 further from 0 on their side (a 0 goes to -0.3, as
    `x > 0 ? padding : -padding` does)."""
    raw = torch.rand(count, 2, generator=generator, dtype=torch.float64) * 2 * AUTHORS_RANGE
    raw -= AUTHORS_RANGE
    return raw + torch.where(raw > 0, AUTHORS_PADDING, -AUTHORS_PADDING)


def authors_latents(points: torch.Tensor) -> torch.Tensor:
    """(Y1, Y2): the signs of x and y as 1 (>= 0) or 0 (`getXORLabel`, `dataset.ts` line 192)."""
    return (points >= 0).long()


def away_from_axes(latent: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Points 0.3 + U(0, 5) from each axis, on the positive side where the latent is 1: the law
    of `classifyXORData`'s candidates given their quadrant."""
    distance = AUTHORS_PADDING + AUTHORS_RANGE * torch.rand(
        latent.shape, generator=generator, dtype=torch.float64
    )
    return torch.where(latent == 1, distance, -distance)


def playground_split(points: torch.Tensor, share: float, generator: torch.Generator):
    """The playground's `generateData` (`src/playground.ts` lines 1081-1084): the points
    shuffled, the first floor(n * share) kept for training (its Fisher-Yates shuffle by
    `Math.random` replaced by a seeded permutation)."""
    order = torch.randperm(len(points), generator=generator)
    return points[order[: int(len(points) * share)]]


def sample_authors_toy(
    setting_or_test: Literal["A", "B", "test"],
    generator: torch.Generator,
    candidates: int = PLAYGROUND_CANDIDATES,
    train_share: float = PLAYGROUND_TRAIN_SHARE,
    test_count: int = 1000,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The authors' reading's points (the module's docstring says how each set is drawn):
    inputs float [n, 2] (x, y) and latents long [n, 2] (Y1, Y2). The training sets' size comes
    from `candidates` and `train_share`; the test set has `test_count` points."""
    if setting_or_test == "A":
        points = authors_candidates(candidates, generator)
        points = points[(points[:, 0] <= 0) | (points[:, 1] <= 0)]  # `dataset.ts` line 204
        points = playground_split(points, train_share, generator)
    elif setting_or_test == "B":
        count = round(candidates * 3 / 4)
        first = (torch.rand(count, generator=generator) < 1 / 3).long()
        latent = torch.stack([first, torch.randint(2, (count,), generator=generator)], dim=1)
        points = playground_split(away_from_axes(latent, generator), train_share, generator)
    elif setting_or_test == "test":
        latent = torch.ones(test_count, 2, dtype=torch.long)
        points = away_from_axes(latent, generator)
    else:
        raise ValueError(f"unknown distribution {setting_or_test!r}; valid: 'A', 'B', 'test'")
    return points.float(), authors_latents(points)
