"""Accuracy of a model under interventions on its units.

One routine serves paper 1's pruning (Baan et al. 2019, section 5.2: every unit but the
strongest held at zero) and paper 4's manipulations of neuron values (zero, previous step, k
steps earlier): the edits are `lightning_modules.recurrent.Intervention`s, applied only inside
`model.intervene(...)`. Paper 1's pruned units (`pruned_units`) are shared by
`experiments/paper1/ablations.py` and the `pruning` probe.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from lightning_modules.recording import evaluating
from lightning_modules.recurrent import Intervention
from lightning_modules.sequences import sequence_correct
from probes.weights import strong_edge_count, strongest_units, unit_strength

if TYPE_CHECKING:  # a type only: the Lightning model is not imported to probe it
    from lightning_modules.seq2seq import Seq2Seq

KEEP_SHARE = 0.05
"""Paper 1, section 5.2: "keeping only 5% of neurons with the biggest weights"."""
PRUNED_MODULES = ("encoder", "decoder")
"""Paper 1, section 5.2: the recurrent layers pruned, each on its own."""
EVALUATION_BATCH = 256
"""Rows per batch when a split is evaluated (sequence accuracy does not depend on it)."""


@torch.no_grad()
def sequence_accuracy(
    model: Seq2Seq, batches: Iterable[dict[str, Tensor]], edits: Sequence[Intervention] = ()
) -> float:
    """Greedy-decoding sequence (sentence) accuracy of `model` over `batches` with `edits`
    applied: the share of rows whose every target token it outputs, each batch decoded for as
    many steps as its targets (`lightning_modules.seq2seq.sequence_correct`, what its fit logs),
    in eval mode, one batch at a time (nothing but the count is kept)."""
    hits = rows = 0
    with evaluating(model), model.intervene(edits):
        for batch in batches:
            batch = {key: value.to(model.device) for key, value in batch.items()}
            target = batch["target"]
            logits, _ = model(batch["source"], batch["source_lengths"], steps=target.shape[1])
            hits += int(sequence_correct(logits.argmax(-1), target).sum())
            rows += len(target)
    if not rows:
        raise ValueError("no rows to score: the batches are empty")
    return hits / rows


def split_accuracy(model: Seq2Seq, data, split: str, edits: Sequence[Intervention] = ()) -> float:
    """`sequence_accuracy` on the DataModule `data`'s `split` (every row, in order), in batches
    of `EVALUATION_BATCH`: paper 1's accuracies and pruning, the atlas's SCAN sentence accuracy
    (paper 3's)."""
    batches = data.split_dataloader(split, batch_size=EVALUATION_BATCH)
    return sequence_accuracy(model, batches, edits)


def pruned_units(
    state_dict: dict[str, Tensor],
    share: float = KEEP_SHARE,
    modules: Sequence[str] = PRUNED_MODULES,
    edge_thresholds: Mapping[str, float] | None = None,
) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """Paper 1, section 5.2: the hidden units (kept, removed) of each recurrent layer of
    `modules`, by site (`"encoder.hidden"`, units indexed from 0, ascending); kept are the
    `ceil(share * units)` with the strongest connections (`probes.weights.unit_strength`,
    `strongest_units`), the rest removed (`lightning_modules.recurrent.removal_edits`). With
    `edge_thresholds` (by module), the units with the most strong edges are kept instead
    (`strong_edge_count`; ties by summed |w|, then by index)."""
    kept, removed = {}, {}
    for module in modules:
        strength = unit_strength(state_dict, module)
        if edge_thresholds is None:
            strongest = strongest_units(strength, share)
        else:
            edges = strong_edge_count(state_dict, module, edge_thresholds[module])
            strongest = strongest_units(edges, share, ties=strength)
        strongest = set(strongest.tolist())
        kept[f"{module}.hidden"] = sorted(strongest)
        removed[f"{module}.hidden"] = [u for u in range(strength.numel()) if u not in strongest]
    return kept, removed
