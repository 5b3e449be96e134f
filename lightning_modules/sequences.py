"""The seq2seq models' reserved token ids and what counts as a correct sequence, torch only: the
probes and a report's rebuild read them without importing the Lightning models."""

from __future__ import annotations

from torch import Tensor

PAD, SOS, EOS = 0, 1, 2
"""Reserved target ids: padding, start and end of sequence (source: 0 pad, 1 eos)."""


def sequence_correct(prediction: Tensor, target: Tensor) -> Tensor:
    """`[batch]` booleans: every non-padding token of `target` `[batch, time]` predicted."""
    return ((prediction == target) | (target == PAD)).all(-1)
