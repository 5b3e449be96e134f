"""What `python -m probes view` opens of an atlas cell (`experiments.atlas.view`): the rows a
model's cells read, at the checkpoint they measure and on its untrained weights, as the page's
traces of split `atlas`."""

from __future__ import annotations

import torch

from experiments.atlas.targets import RULE_CORPUS, Rows
from experiments.atlas.view import ROWS_PER_TOKEN, SPLIT, shown, unit_analysis, view_trace
from lightning_modules.sequences import PAD
from probes.command.view.unit_orders import UnitOrder, unit_orders
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


def test_the_page_orders_units_by_what_the_cells_found():
    """A model's cells record (`cells.measure_model`'s form) becomes the page's unit orders: the
    functional group of the update gate (an LSTM's forget gate) first, the gates by saturation,
    each token's units of each function first in `decoder.hidden`; nothing where a cell found
    none."""
    record = {
        "functional_groups": {"units": [2]},
        "gate_saturation": {"encoder": {"left": [0.0, 0.9, 0.1], "right": [0.0, 0.0, 0.5]},
                            "decoder": {"left": [0.0] * 3, "right": [0.0, 0.0, 1.0]}},
        "tokens": {"the": {"counting": [1, 0], "storing": []}},
    }  # fmt: skip
    analysis = unit_analysis(record, "token positioning", "lstm")
    gate = unit_orders(analysis, "decoder.forget_gate", 3)
    assert gate == {
        "index": UnitOrder([0, 1, 2]),
        "functional_groups.decoder.forget_gate: group of 1 first": UnitOrder([2, 0, 1], 1),
        "gate_saturation.decoder.forget_gate: most saturated first": UnitOrder([2, 0, 1]),
    }
    assert unit_orders(analysis, "encoder.forget_gate", 3)[
        "gate_saturation.encoder.forget_gate: most saturated first"
    ] == UnitOrder([1, 2, 0])
    assert list(unit_orders(analysis, "decoder.hidden", 3)) == [
        "index",
        "neuron_functions.counting units of 'the'.decoder.hidden: group of 2 first",
    ]
    saturation = {"lstm": record["gate_saturation"]["encoder"]}
    language = unit_analysis({"gate_saturation": saturation, "functional_groups": {"value": None}},
                             RULE_CORPUS, "lstm")  # fmt: skip
    assert list(unit_orders(language, "lstm.forget_gate", 3)) == [
        "index",
        "gate_saturation.lstm.forget_gate: most saturated first",
    ]
