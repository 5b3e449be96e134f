"""The atlas's `redundant_input` cell (`experiments.atlas.redundant`) with known answers: a
hand-built seq2seq whose output at T only the signal decides loses nothing when its source line is
swapped, one that copies its answer from the source line loses exactly the rows whose new line
names another token; the donors, the swapped rows, paper 4's own rows, and the matrix reading
the cell."""

from __future__ import annotations

import pytest
import torch

from datamodules.token_positioning import TokenPositioningDataModule
from experiments.atlas.questions import WIRED
from experiments.atlas.redundant import (
    donors,
    lines_and_signals,
    redundant_cell,
    swapped_batch,
)
from experiments.atlas.report import ABOVE, NOT_APPLICABLE, cell, not_yet_text
from experiments.atlas.scales import SCALES
from experiments.atlas.targets import token_positioning_rows
from lightning_modules.seq2seq import Seq2Seq
from tests.test_atlas_decomposition import planted_rows  # the same rows, lines named by tokens
from tests.test_atlas_decomposition import planted_seq2seq as planted_decomposition_seq2seq

# Token positioning's vocabulary: 4 specials, <pos=1..3>, then the words: the tokens A and B, the
# distractors D1 and D2, and the line words LA and LB (which name A and B to the copying model).
POSITIONS = 3
A, B, D1, D2, LA, LB = 7, 8, 9, 10, 11, 12
V = 13


def planted_seq2seq(writers: tuple[int, int, int, int]) -> Seq2Seq:
    """The decomposition tests' planted GRU (`tests.test_atlas_decomposition.planted_seq2seq`)
    over this file's vocabulary: with A and B as the writers the output at T comes from the
    signal alone; with LA and LB it is copied from the source line."""
    return planted_decomposition_seq2seq(writers, vocabulary=V)


SIGNAL_ONLY = (A, B, D1, D2)
COPYING = (LA, LB, D1, D2)


# Each line names its row's token (LA for A, LB for B) among distractors; some lines repeat.
LINES = [[LA, D1], [D2, LB], [LA], [LB, D1, D2], [LA], [D1, D1, LB], [D2, LA, D2], [LB]]
TOKENS = [A, B, A, B, A, B, A, B]
AT = [1, 2, 3, 3, 2, 1, 2, 3]


def letter(line: list[int]) -> int:
    return A if LA in line else B


def test_a_model_the_signal_alone_decides_loses_nothing():
    """Whatever line a row takes, the signal-only model still outputs its token at T: it
    answers every row before and after the swap, the cell is exactly 0, for each token."""
    model = planted_seq2seq(SIGNAL_ONLY)
    rows = planted_rows(model, LINES, TOKENS, AT)
    assert rows.correct.all()
    found = redundant_cell(model, rows, "token positioning")
    assert found["value"] == 0.0 and found["before"] == found["after"] == 1.0
    assert found["tokens"] == {"A": 0.0, "B": 0.0} and found["rows"] == 8


def test_a_model_that_copies_from_the_line_loses_the_rows_whose_new_line_names_another_token():
    """The copying model answers every row from its own line; with another row's line it outputs
    the token that line names, so the cell is the share of rows whose donor line names the other
    token, computed here from the donors."""
    model = planted_seq2seq(COPYING)
    rows = planted_rows(model, LINES, TOKENS, AT)
    assert rows.correct.all()
    taken = donors(lines_and_signals(rows.traced)[0]).tolist()
    named = [letter(LINES[other]) for other in taken]
    expected = sum(name != token for name, token in zip(named, TOKENS, strict=True)) / 8
    found = redundant_cell(model, rows, "token positioning")
    assert found["value"] == expected and found["before"] == 1.0
    assert found["value"] >= 0.25  # the lines naming A and B are drawn in a mixed order


def test_when_every_other_line_names_the_other_token_the_copying_model_loses_everything():
    """Lines [LA] and [LB] only: a row never takes its own line back, so every row takes the line
    naming the other token: the copying model loses every row (the cell is exactly 1), the
    signal-only model none."""
    lines, tokens = [[LA], [LB]] * 3, [A, B] * 3
    for writers, lost in ((COPYING, 1.0), (SIGNAL_ONLY, 0.0)):
        model = planted_seq2seq(writers)
        found = redundant_cell(model, planted_rows(model, lines, tokens, [1, 2, 3] * 2),
                               "token positioning")  # fmt: skip
        assert found["value"] == lost and found["tokens"] == {"A": lost, "B": lost}


def test_donors_take_another_rows_different_line_the_same_every_time():
    """Each row takes the line of another row whose line differs from its own (never its own line
    back, though three rows share it), the same donors on every call; with one line only there
    is none, and the cell says why instead of measuring."""
    lines = [torch.tensor(line) for line in LINES]
    taken = donors(lines)
    assert torch.equal(taken, donors(lines))
    for row, other in enumerate(taken.tolist()):
        assert other != row and LINES[other] != LINES[row]
    assert donors([torch.tensor([LA])] * 3).tolist() == [-1, -1, -1]
    model = planted_seq2seq(COPYING)
    rows = planted_rows(model, [[LA]] * 3, [A] * 3, [1, 2, 3])
    found = redundant_cell(model, rows, "token positioning")
    assert found["value"] is None and "fewer than two different source lines" in found["why"]


def test_the_swapped_row_is_the_donors_line_then_its_own_signal():
    """The rest of the row (its signal pair) is kept: a swapped source is the donor's line then
    the row's own (token, <pos=T>), its length that of both; the signal columns are the row's."""
    model = planted_seq2seq(COPYING)
    rows = planted_rows(model, LINES, TOKENS, AT)
    lines, signals = lines_and_signals(rows.traced)
    assert [line.tolist() for line in lines] == LINES
    assert signals[3].tolist() == [B, 3 + 3]
    taken = torch.tensor([3, 0, 1, 2, 5, 4, 7, 6])
    batch = swapped_batch(rows.traced, taken)
    assert batch["source"][0, :5].tolist() == [LB, D1, D2, A, 3 + 1]
    assert batch["source"][3].tolist() == [LA, B, 3 + 3, 0, 0]  # row 2's line, padded
    assert batch["source_lengths"].tolist() == [len(LINES[o]) + 2 for o in taken.tolist()]
    assert torch.equal(batch["signal_token"], rows.traced.batch["signal_token"])
    assert torch.equal(batch["signal_position"], rows.traced.batch["signal_position"])


def test_paper4s_rows_split_into_their_pairs_line_and_signal(tmp_path, monkeypatch):
    """On paper 4's own rows (held-out pairs re-requested for its most common tokens), each row's
    line is its pair's source line, and an untrained model's cell is its accuracy at T before
    minus after the swap."""
    monkeypatch.setenv("RECURRENT_PROBES_CACHE", str(tmp_path / "cache"))
    words = "the cat sat on a mat and the dog ran to the cat".split()
    text = "\n".join(" ".join(words[i % 5 :] + words[: i % 5][: i % 3]) for i in range(80))
    (tmp_path / "book.txt").write_text(text + "\n")
    data = TokenPositioningDataModule(data_dir=str(tmp_path), validation_share=0.1, test_share=0.1)
    torch.manual_seed(0)
    model = Seq2Seq(data.source_vocab_size, data.target_vocab_size, cell="gru", embedding_size=8,
                    hidden_size=8, attention="none").eval()  # fmt: skip
    with torch.no_grad():
        rows = token_positioning_rows(model, data, tokens=3, per_token=6, correct_only=False)
    traced = rows.traced
    lines, signals = lines_and_signals(traced)
    pairs = {"validation": data.datasets["validation"].pairs, "test": data.datasets["test"].pairs}
    ids = {word: i for i, word in enumerate(data.vocab)}
    for row, line in enumerate(lines):
        split = ("validation", "test")[int(traced.batch["split"][row])]
        source_words = pairs[split][int(traced.batch["pair"][row])][0]
        assert line.tolist() == [ids[word] for word in source_words]
        assert signals[row][0] == traced.token[row]
    found = redundant_cell(model, rows, "token positioning")
    assert found["rows"] == len(lines) and -1 <= found["value"] <= 1
    assert found["value"] == pytest.approx(found["before"] - found["after"])


def test_tasks_without_redundant_input_say_so_and_an_unknown_task_stops():
    """Lookup tables and the rule corpus have no redundant input: the cell says so without
    reading the rows; a task whose redundant input is not built stops in one line (SCAN's is
    tests/test_atlas_scan.py's)."""
    for task in ("lookup tables", "rule corpus"):
        found = redundant_cell(None, None, task)
        assert found["value"] is None and "no redundant input" in found["does_not_apply"]
    with pytest.raises(ValueError, match="redundant input of 'images' rows is not built yet"):
        redundant_cell(None, None, "images")


def test_the_matrix_reads_the_cell_beside_its_null():
    """The column is wired: a token-positioning model's cell is its mean over seeds beside its
    untrained null, a lookup-table model's is the pre-registered "does not apply", and the report
    no longer lists the method as not wired."""
    assert "redundant_input" in WIRED

    def record(value: float | None, null: float | None) -> dict:
        return {"cells": {"redundant_input": value},
                "untrained": {"cells": {"redundant_input": null}}}  # fmt: skip

    records = {("paper4_gru", 0): record(0.25, 0.0), ("paper4_gru", 1): record(0.75, 0.0),
               ("paper1_baseline", 1): record(None, None)}  # fmt: skip
    found = cell(records, "paper4_gru", "redundant_input")
    assert found == {"status": ABOVE, "value": 0.5, "null": 0.0, "seeds": 2}
    assert cell(records, "paper1_baseline", "redundant_input")["status"] == NOT_APPLICABLE
    assert "not wired" not in not_yet_text(SCALES["quick"])
