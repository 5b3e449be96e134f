"""The `redundant_input` cell: paper 3's dependence on redundant input, on a seq2seq model's
analysed rows (`targets.Rows`). The cell is the accuracy lost on the analysed output (the token
at T) when each row's redundant input (`questions.COUNTERPARTS`) is replaced by that of another
analysed row, the rest of the row kept: the share of rows answered correctly at T as traced minus
the share answered correctly after the swap (1: every answer hangs on the redundant input, 0: none
does, negative: the swap helps).

Token positioning's redundant input is the source line, beside the signal that alone decides the
token at T: a row's source is its line then its signal pairs (token, <pos=T>); the swapped row is
another row's line then the row's own signal pairs (`swapped_batch`), decoded greedily for as many
steps as the row was traced, its answer read at its own T for its own token.

What the pre-registration leaves open, chosen here:

- the other held-out row (`donors`): drawn among the same analysed rows (paper 4's held-out pairs
  of the validation and test splits, for a trained model the rows it answers where the scale says
  so), so a trained model and its untrained weights are each swapped within their own rows. The
  rows are put in an order shuffled with a fixed seed (`SEED`) and each takes the line of the first
  row after it in that order (going round) whose line differs from its own: a row re-requested
  for several tokens or positions of one pair has its line several times, and taking the same line
  back would replace nothing. Fixed so the cell is repeatable and the same on the trained and the
  untrained weights' rows where they are the same rows;
- the accuracy before the swap is read on the same rows (1 where they are the rows the model
  answers), so the cell is the loss on exactly the rows swapped;
- a model with fewer than two distinct lines among its rows has no other line to take: the cell
  is None and says why.

SCAN's redundant input is the correlation of input words with output syntax that setting A keeps
and setting B removes (paper 3): no part of a row to swap, so the cell is paper 3's own reading of
it, the model's sentence accuracy (every action and `<eos>` greedily right) on all its training
rows minus that on all its test rows, the splits as the run's datamodule serves them (setting A's
1,467 `jump` rows counted as paper 3 counts them), whatever the analysed rows (`scan_cell`); the
same on the untrained weights is its null.

Lookup tables and the rule corpus have no redundant input (`questions.NOT_APPLICABLE`): the cell
says so (`does_not_apply`).
"""

from __future__ import annotations

import random

import torch
from torch import Tensor

from datamodules.sequences import collate_sequences
from experiments.atlas.decomposition import signal_pair
from experiments.atlas.targets import Rows
from probes.interventions import split_accuracy
from probes.neuron_functions import Traced, greedy_outputs, position_hits

SEED = 0
"""The seed of the order the donors are taken in (`donors`)."""
NO_REDUNDANT_INPUT = ("lookup tables", "rule corpus")
"""The tasks with no redundant input (`questions.NOT_APPLICABLE`)."""


def lines_and_signals(traced: Traced) -> tuple[list[Tensor], list[Tensor]]:
    """Each token-positioning row's source line and its signal pairs (token, <pos=T>, one pair
    per signal, the analysed one last), split where the pairs start; a row that does not end in
    its analysed signal pair is refused (`decomposition.signal_pair`)."""
    signal_pair(traced)
    source, lengths = traced.batch["source"], traced.batch["source_lengths"]
    width = 2 * traced.batch["signal_token"].shape[1]
    cut = [(source[row, : int(length) - width], source[row, int(length) - width : int(length)])
           for row, length in enumerate(lengths)]  # fmt: skip
    return [line for line, _ in cut], [signals for _, signals in cut]


def donors(lines: list[Tensor], seed: int = SEED) -> Tensor:
    """`[rows]`: the row whose line each row takes: the rows in an order shuffled with `seed`,
    each taking the first row after it (going round) whose line differs from its own; -1 where
    every row has its line."""
    keys = [tuple(line.tolist()) for line in lines]
    order = list(range(len(keys)))
    random.Random(seed).shuffle(order)
    taken = torch.full((len(keys),), -1)
    for place, row in enumerate(order):
        for step in range(1, len(order)):
            other = order[(place + step) % len(order)]
            if keys[other] != keys[row]:
                taken[row] = other
                break
    return taken


def swapped_batch(traced: Traced, taken: Tensor) -> dict[str, Tensor]:
    """The rows with each one's source line replaced by that of row `taken[row]`, its own signal
    pairs kept after it: `source`, `source_lengths`, `signal_token`, `signal_position`."""
    lines, signals = lines_and_signals(traced)
    rows = [{"source": torch.cat([lines[int(other)], signals[row]]),
             "source_lengths": torch.tensor(len(lines[int(other)]) + len(signals[row])),
             "signal_token": traced.batch["signal_token"][row],
             "signal_position": traced.batch["signal_position"][row]}
            for row, other in enumerate(taken)]  # fmt: skip
    return collate_sequences(rows)


@torch.no_grad()
def answered_after_swap(model, traced: Traced, taken: Tensor) -> Tensor:
    """`[rows]`: each row answered correctly at its T with its line swapped for row `taken`'s,
    decoded greedily for as many steps as traced."""
    batch = swapped_batch(traced, taken)
    outputs = greedy_outputs(model, batch, traced.outputs.shape[1])
    return position_hits(outputs, traced.token, traced.position)


def scan_cell(model, datamodule) -> dict:
    """SCAN's `redundant_input` cell: `value`, the sentence accuracy (`probes.interventions.
    split_accuracy`) on all training rows (`train`) minus that on all test rows (`test`), and
    the rows of each split."""
    datamodule.setup()
    splits = {split: datamodule.datasets[split] for split in ("train", "test")}
    accuracy = {split: split_accuracy(model, datamodule, split) for split in splits}
    return {"value": accuracy["train"] - accuracy["test"], **accuracy,
            "rows": {split: len(rows) for split, rows in splits.items()}}  # fmt: skip


def redundant_cell(model, rows: Rows, task: str, datamodule=None) -> dict:
    """The `redundant_input` cell of `model` on its analysed `rows` of `task`: `value` (the
    accuracy at T lost when each row's source line is another row's, `before` - `after`), the
    loss per analysed token and the rows; for SCAN, training minus test sentence accuracy on the
    run's `datamodule` (`scan_cell`); for a task with no redundant input, `value` None and
    `does_not_apply` (why)."""
    if task in NO_REDUNDANT_INPUT:
        return {"value": None, "does_not_apply": f"the pre-registration defines no redundant "
                f"input for {task} rows"}  # fmt: skip
    if task == "SCAN":
        if datamodule is None:
            raise ValueError("SCAN's redundant-input cell needs the run's SCAN datamodule "
                             "(its training and test splits): pass datamodule")  # fmt: skip
        return scan_cell(model, datamodule)
    if task != "token positioning":
        raise ValueError(f"the redundant input of {task!r} rows is not built yet "
                         "(built: token positioning, SCAN)")  # fmt: skip
    traced = rows.traced
    taken = donors(lines_and_signals(traced)[0])
    if not len(taken) or bool((taken < 0).any()):
        return {"value": None, "why": "fewer than two different source lines among the "
                "analysed rows: no other line to take"}  # fmt: skip
    before = traced.answered.float()
    lost = before - answered_after_swap(model, traced, taken).float()
    tokens = {rows.names[token]: float(lost[traced.token == token].mean())
              for token in rows.tokens if bool((traced.token == token).any())}  # fmt: skip
    after = float((before - lost).mean())
    return {"value": float(lost.mean()), "before": float(before.mean()), "after": after,
            "rows": len(lost), "tokens": tokens}  # fmt: skip
