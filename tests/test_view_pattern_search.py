"""The view's pattern search and side by side, without a browser: `find_pattern` over a hand-built
trace with planted spans (the known answer: exactly those spans, in the order the ranking rule
gives), read from a file the way the page reads it, and the comparison of two traces' examples.
The page itself is driven in `tests/test_view.py`, over the same planted trace.
"""

from __future__ import annotations

import pytest
import torch

from probes.command.view.pattern_search import Match, find_pattern, split_units
from probes.command.view.runs import RecordedTrace, ViewError
from probes.command.view.side_by_side import examples_differ
from storage.files import save_tensors_atomic

EXAMPLES, STEPS, UNITS = 6, 8, 5
PLANTED_UNITS = [1, 3]
SELECTION = (0, 2, 5)
"""Example 0, steps 2-4: the span the user picks (units 1 and 3 at 0.9)."""
PLANTED = {(3, 1, 4): 0.9, (1, 0, 3): 0.7, (5, 6, 8): 0.8, (2, 0, 7): 0.6}
"""(example, start, stop) -> the planted units' value there: the spans the search must find."""
EXPECTED = [(3, 1, 4), (1, 0, 3), (5, 6, 8), (2, 0, 7)]
"""Best first: length 3 like the selection (0.9 before 0.7), then 2 (one off), then 7."""
INVALID = (1, 7)
"""Example 1's last step is not one of its steps (it is 7 long): the units are on there anyway."""


def planted_trace() -> dict[str, torch.Tensor]:
    """A recorded LSTM's trace `[examples, time, units]` of quiet values (|v| <= 0.3) where units
    1 and 3 are on (>= 0.5) exactly in `SELECTION` and `PLANTED`; decoys: unit 1 alone on in
    example 4, both at 0.49 (just off) in example 4 too, and both on at an invalid step."""
    steps = torch.arange(EXAMPLES * STEPS * UNITS, dtype=torch.float32)
    hidden = 0.3 * torch.sin(steps).reshape(EXAMPLES, STEPS, UNITS)
    for (example, start, stop), value in [(SELECTION, 0.9), *PLANTED.items()]:
        hidden[example, start:stop, PLANTED_UNITS] = value
    hidden[4, 2:5, 1] = 0.9
    hidden[4, 5:7, PLANTED_UNITS] = 0.49
    hidden[INVALID[0], INVALID[1], PLANTED_UNITS] = 0.9
    valid = torch.ones(EXAMPLES, STEPS, dtype=torch.bool)
    valid[INVALID] = False
    tokens = torch.arange(EXAMPLES * STEPS).reshape(EXAMPLES, STEPS)
    return {"lstm.hidden": hidden, "valid.lstm": valid, "batch.input": tokens}


def spans(matches: list[Match]) -> list[tuple[int, int, int]]:
    return [(m.example, m.start, m.stop) for m in matches]


def test_the_planted_spans_are_found_best_first():
    trace = planted_trace()
    values = trace["lstm.hidden"][:, :, PLANTED_UNITS]
    matches = find_pattern(values, trace["valid.lstm"], 0.5, 3, skip=SELECTION)
    assert spans(matches) == EXPECTED
    assert [m.strength for m in matches] == pytest.approx([PLANTED[s] for s in EXPECTED])
    assert [m.length for m in matches] == [3, 3, 2, 7]
    unskipped = find_pattern(values, trace["valid.lstm"], 0.5, 3)
    assert spans(unskipped) == [SELECTION, *EXPECTED]  # 0.9 and 3 long: first, as strong as any
    assert spans(find_pattern(values, trace["valid.lstm"], 0.75, 3, SELECTION)) == [
        (3, 1, 4),
        (5, 6, 8),
    ]
    assert spans(find_pattern(values, trace["valid.lstm"], 0.5, 7, SELECTION)) == [
        (2, 0, 7),
        (3, 1, 4),
        (1, 0, 3),
        (5, 6, 8),
    ]


def test_a_span_counts_where_every_chosen_unit_is_on():
    trace = planted_trace()
    one_unit = find_pattern(trace["lstm.hidden"][:, :, [1]], trace["valid.lstm"], 0.5, 3, SELECTION)
    assert (4, 2, 5) in spans(one_unit)  # unit 1 alone is on there; with unit 3 it is not
    assert (4, 5, 7) not in spans(one_unit)  # 0.49 is off at 0.5
    lower = find_pattern(trace["lstm.hidden"][:, :, [1]], trace["valid.lstm"], 0.45, 3)
    assert (4, 2, 7) in spans(lower)  # at 0.45 both runs are on: one maximal span
    with pytest.raises(ViewError, match="Pick at least one unit"):
        find_pattern(trace["lstm.hidden"][:, :, []], trace["valid.lstm"], 0.5, 3)


def test_the_search_reads_the_chosen_units_of_the_split_from_the_file(tmp_path, monkeypatch):
    path = tmp_path / "traces" / "test" / "best.safetensors"
    save_tensors_atomic(planted_trace(), path)
    trace = RecordedTrace.open(path)
    read = []
    whole = RecordedTrace.read
    monkeypatch.setattr(
        RecordedTrace, "read", lambda self, keys: read.extend(keys) or whole(self, keys)
    )
    values, valid = split_units(trace, "lstm.hidden", [3, 1])
    assert read == ["valid.lstm"]  # the site itself only through its slice of the two units
    assert torch.equal(values, planted_trace()["lstm.hidden"][:, :, [3, 1]])
    assert torch.equal(valid, planted_trace()["valid.lstm"])
    assert spans(find_pattern(values, valid, 0.5, 3, SELECTION)) == EXPECTED
    with pytest.raises(ViewError, match=r"has units 0..4, not \[7\]"):
        split_units(trace, "lstm.hidden", [1, 7])


def test_two_traces_hold_the_same_examples_only_with_the_same_tokens_in_the_same_rows(tmp_path):
    traces = {}
    shuffled = {**planted_trace(), "batch.input": planted_trace()["batch.input"].flip(0)}
    fewer = {key: value[:4] for key, value in planted_trace().items()}
    for name, entries in [("same", planted_trace()), ("other", planted_trace()),
                          ("shuffled", shuffled), ("fewer", fewer)]:  # fmt: skip
        save_tensors_atomic(entries, tmp_path / f"{name}.safetensors")
        traces[name] = RecordedTrace.open(tmp_path / f"{name}.safetensors")
    assert examples_differ(traces["same"], traces["other"]) == ""
    assert examples_differ(traces["same"], traces["shuffled"]) == "batch.input differs"
    assert examples_differ(traces["same"], traces["fewer"]) == "4 examples, not 6"
