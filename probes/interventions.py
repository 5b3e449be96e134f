"""Accuracy of a model under interventions on its units.

One routine serves paper 1's pruning (Baan et al. 2019, section 5.2: every unit but the
strongest held at zero) and paper 4's manipulations of neuron values (zero, previous step, k
steps earlier): the edits are `lightning_modules.recurrent.Intervention`s, applied only inside
`model.intervene(...)`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from torch import Tensor

from lightning_modules.callbacks import record_split
from lightning_modules.recurrent import Intervention
from lightning_modules.seq2seq import Seq2Seq, sequence_correct


def sequence_accuracy(
    model: Seq2Seq, batches: Iterable[dict[str, Tensor]], edits: Sequence[Intervention] = ()
) -> float:
    """Greedy-decoding sequence accuracy of `model` over `batches` with `edits` applied."""
    with model.intervene(edits):
        traced = record_split(model, batches)
    return float(sequence_correct(traced["prediction"], traced["batch.target"]).double().mean())
