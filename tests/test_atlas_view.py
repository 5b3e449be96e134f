"""What `python -m probes view` opens of an atlas cell (`experiments.atlas.view`): the rows a
model's cells read, at the checkpoint they measure and on its untrained weights, as the page's
traces of split `atlas`."""

from __future__ import annotations

import torch

from experiments.atlas.targets import RULE_CORPUS, Rows
from experiments.atlas.view import ROWS_PER_TOKEN, SPLIT, shown, view_trace
from lightning_modules.sequences import PAD
from probes.neuron_functions import Traced

TOKENS = {5: 15, 7: 3}
"""A hand-built model's analysed rows: 15 of token 5, 3 of token 7."""


def rows_of(tokens: dict[int, int], source_steps: int = 4, decoder_steps: int = 6) -> Rows:
    """Rows by token, then T (1, 2, 3, ... for each token), each site holding its row's index."""
    token = torch.tensor([t for t, count in tokens.items() for _ in range(count)])
    position = torch.tensor([1 + i % 3 for count in tokens.values() for i in range(count)])
    rows = len(token)
    index = torch.arange(rows, dtype=torch.float)[:, None, None]
    batch = {
        "source": torch.arange(3, 3 + source_steps).repeat(rows, 1),
        "source_lengths": torch.full((rows,), source_steps - 1),
        "target": torch.arange(3, 6).repeat(rows, 1),  # shorter than the decoded steps
        "signal_token": token[:, None],
        "signal_position": position[:, None],
    }
    record = {
        "encoder.hidden": index.expand(rows, source_steps, 2).clone(),
        "decoder.hidden": index.expand(rows, decoder_steps, 2).clone(),
    }
    outputs = torch.full((rows, decoder_steps), 9)
    traced = Traced(batch, record, outputs, None)
    return Rows(traced, torch.ones(rows, dtype=torch.bool), list(tokens), {})


def test_a_trace_keeps_the_first_rows_of_each_analysed_token_in_order():
    kept = shown(rows_of(TOKENS))
    assert kept.token.tolist() == [5] * ROWS_PER_TOKEN + [7] * 3
    assert kept.record["decoder.hidden"][:, 0, 0].tolist() == [*range(ROWS_PER_TOKEN), 15, 16, 17]


def test_the_steps_shown_are_the_sources_and_the_decoder_steps_up_to_T():
    """The encoder's valid steps are its source's; the decoder's are 0 .. T - 1 (its step T - 1
    outputs the analysed token); the target is padded to the decoded steps, beside the greedy
    outputs."""
    traced = shown(rows_of(TOKENS))
    trace = view_trace(traced, "token positioning")
    assert trace["valid.encoder"].sum(1).tolist() == [3] * len(traced.token)
    assert trace["valid.decoder"].sum(1).tolist() == traced.position.tolist()
    assert trace["valid.decoder"][0].tolist() == [True, False, False, False, False, False]
    assert trace["batch.target"][0].tolist() == [3, 4, 5, PAD, PAD, PAD]
    assert trace["prediction"].shape == trace["batch.target"].shape == (13, 6)
    assert trace["decoder.hidden"].shape == (13, 6, 2)


def test_a_language_models_trace_shows_its_whole_window():
    rows = rows_of({11: 4})
    batch = {"input": torch.arange(8).repeat(4, 1), "signal_token": rows.traced.batch[
        "signal_token"], "signal_position": rows.traced.batch["signal_position"]}  # fmt: skip
    record = {"lstm.hidden": torch.zeros(4, 8, 3)}
    language = Rows(Traced(batch, record, torch.zeros(4, 2), None), rows.correct, [11], {})
    trace = view_trace(shown(language), RULE_CORPUS)
    assert set(trace) == {"lstm.hidden", "batch.input", "valid.lstm"}
    assert bool(trace["valid.lstm"].all()) and SPLIT == "atlas"
