"""Seq2seq rows as tensors, torch only: a row's tokens encoded as ids, rows padded into a batch,
output ids decoded. Shared by the lookup-table, SCAN and token-positioning DataModules, and read
by the probes and the reports' rebuilds without importing Lightning."""

from __future__ import annotations

import torch
from torch.nn.utils.rnn import pad_sequence

IGNORE_INDEX = -100
"""The label of a step or row that no loss or classifier reads (torch's cross-entropy default)."""
SEQUENCE_PADDING = {
    "source": 0,
    "target": 0,
    "attention_target": IGNORE_INDEX,
    "source_table": IGNORE_INDEX,
}
"""The variable-length keys of the suite's seq2seq rows and the value each is padded with."""


def encode_pair(source: list[str], target: list[str], source_ids: dict[str, int],
                target_ids: dict[str, int], source_eos: bool,
                target_eos: bool) -> dict[str, torch.Tensor]:  # fmt: skip
    """A row's input and output tokens as ids (`source`, `source_lengths`, `target`), `<eos>`
    appended to each where asked, as the DataModule encodes its rows."""
    source_end = [1] if source_eos else []
    target_end = [2] if target_eos else []
    return {
        "source": torch.tensor([source_ids[t] for t in source] + source_end),
        "source_lengths": torch.tensor(len(source) + len(source_end)),
        "target": torch.tensor([target_ids[t] for t in target] + target_end),
    }


def collate_sequences(items: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Batch encoded seq2seq rows (lookup tables, SCAN, token positioning): the keys of
    ``SEQUENCE_PADDING`` a row has are padded into ``[batch, time]``, every other key (lengths,
    indices, fixed-size signals) is stacked."""
    return {
        key: pad_sequence(
            [item[key] for item in items], batch_first=True, padding_value=SEQUENCE_PADDING[key]
        )
        if key in SEQUENCE_PADDING
        else torch.stack([item[key] for item in items])
        for key in items[0]
    }


def decode_targets(ids: torch.Tensor, target_vocab: list[str]) -> list[str]:
    """Output ids ``[batch, time]`` (or ``[time]``) -> space-joined strings, cut at ``<eos>``
    (id 2; ids 0-2 are ``<pad>``, ``<sos>``, ``<eos>`` in every seq2seq vocabulary here)."""
    rows = ids.unsqueeze(0) if ids.dim() == 1 else ids
    decoded = []
    for row in rows.tolist():
        row = row[: row.index(2)] if 2 in row else row
        decoded.append(" ".join(target_vocab[i] for i in row if i > 2))
    return decoded
