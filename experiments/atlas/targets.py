"""Each task's analysed rows, with the counterparts of the pre-registration
(`questions.COUNTERPARTS`): every row carries its analysed token and its output position T as
paper 4's rows do (`signal_token`, `signal_position`), so that paper 4's identification and every
other method read any task's rows alike, and the table index labels its decoder steps.

- token positioning (paper 4): paper 4's own rows (`probes.neuron_functions.analysed_rows`);
- lookup tables (paper 1): every split's rows; T the position of the final output string, the
  analysed token that string; the table index of a decoder step the table its attention target
  points at (paper 1, Table 2).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

import torch
from torch import Tensor

from datamodules.lookup_tables import SPLITS as LOOKUP_SPLITS
from datamodules.lookup_tables import collate_sequences
from probes.neuron_functions import (
    ANALYSED_POSITIONS,
    ANALYSED_SPLITS,
    Traced,
    analysed_rows,
    analysed_tokens,
    trace_rows,
)

EOS = 2
"""`<eos>` in every seq2seq vocabulary of the suite (0 `<pad>`, 1 `<sos>`); outputs are above it."""
NO_LABEL = -100


@dataclass(frozen=True)
class Rows:
    """A model's analysed rows: `traced` (paper 4's `Traced`: the batch with `signal_token` and
    `signal_position`, the record of every site and the greedy outputs), `correct` `[requested
    rows]` (answered correctly at T, over every requested row), `tokens` (the analysed tokens'
    ids) and their `names`."""

    traced: Traced
    correct: Tensor
    tokens: list[int]
    names: dict[int, str]


def selected(batch: dict[str, Tensor], keep: Tensor) -> dict[str, Tensor]:
    return {key: value[keep] for key, value in batch.items()}


def lookup_table_batch(datamodule, tokens: int, per_token: int, seed: int = 0):
    """Every split's lookup-table rows as one batch, each with its final output string
    (`signal_token`) at its position T (`signal_position`: 1 + the number of tables), at most
    `per_token` rows of each of the `tokens` most common final strings (drawn with `seed`),
    ordered by string, then T; and the strings' ids."""
    datamodule.setup()
    rows = [row for split in LOOKUP_SPLITS for row in datamodule.datasets[split]]
    batch = collate_sequences(rows)
    position = (batch["target"] > EOS).sum(1)
    final = batch["target"][torch.arange(len(position)), position - 1]
    counts = Counter(final.tolist())
    chosen = sorted(counts, key=lambda token: (-counts[token], token))[:tokens]
    generator, kept = random.Random(seed), []
    for token in chosen:
        rows = torch.nonzero(final == token).flatten().tolist()
        generator.shuffle(rows)
        kept += sorted(rows[:per_token], key=lambda row: (int(position[row]), row))
    batch = selected(batch, torch.tensor(kept))
    batch["signal_token"] = final[kept][:, None]
    batch["signal_position"] = position[kept][:, None]
    return batch, chosen


def lookup_table_rows(model, datamodule, tokens: int, per_token: int, correct_only: bool) -> Rows:
    """Paper 1's task as paper 4's rows (`lookup_table_batch`), decoded greedily for T + 3
    steps; with `correct_only` only the rows whose final string the model outputs at T."""
    batch, chosen = lookup_table_batch(datamodule, tokens, per_token)
    traced = trace_rows(model, batch, int(batch["signal_position"].max()) + 3)
    correct = traced.answered
    names = {token: datamodule.target_vocab[token] for token in chosen}
    return Rows(traced.rows(correct) if correct_only else traced, correct, chosen, names)


def token_positioning_rows(model, datamodule, tokens: int, per_token: int,
                           correct_only: bool) -> Rows:  # fmt: skip
    """Paper 4's rows: its held-out pairs re-requested for its `tokens` most common tokens at
    positions 1-13, at most `per_token` rows each (`analysed_rows`)."""
    chosen = analysed_tokens(datamodule, tokens)
    traced, correct = analysed_rows(model, datamodule, chosen, ANALYSED_POSITIONS, per_token,
                                    ANALYSED_SPLITS, correct_only)  # fmt: skip
    return Rows(traced, correct, chosen, {token: datamodule.vocab[token] for token in chosen})


ROWS = {"lookup tables": lookup_table_rows, "token positioning": token_positioning_rows}
"""The analysed rows of each wired task (`scales.WIRED_TASKS`)."""


def decoder_steps(traced: Traced) -> Tensor:
    """`[rows, decoder time]`: the decoder steps up to the one that outputs the analysed token
    (steps 0 .. T - 1)."""
    time = torch.arange(traced.record["decoder.hidden"].shape[1])
    return time[None] < traced.position[:, None]


def encoder_steps(traced: Traced) -> Tensor:
    """`[rows, source time]`: the encoder's steps within each source."""
    time = torch.arange(traced.record["encoder.hidden"].shape[1])
    return time[None] < traced.batch["source_lengths"][:, None]


def table_index(traced: Traced, task: str) -> Tensor:
    """`[rows, decoder time]` the table index of each decoder step (`questions.COUNTERPARTS`),
    `NO_LABEL` where a step has none: lookup tables, the table the step's attention target points
    at, for steps 0 .. T - 1; token positioning, the analysed token at the step that outputs it
    (T - 1)."""
    steps = traced.record["decoder.hidden"].shape[1]
    labels = torch.full((len(traced.token), steps), NO_LABEL)
    if task == "token positioning":
        labels[torch.arange(len(traced.token)), traced.position - 1] = traced.token
        return labels
    attention = traced.batch["attention_target"][:, :steps]
    tables = traced.batch["source_table"].gather(1, attention.clamp_min(0))
    width = attention.shape[1]
    labels[:, :width] = torch.where(attention >= 0, tables, NO_LABEL)
    return torch.where(decoder_steps(traced), labels, NO_LABEL)
