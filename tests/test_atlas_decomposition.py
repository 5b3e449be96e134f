"""The atlas's `contextual_decomposition` cell (`experiments.atlas.decomposition`) with known
answers: a hand-built seq2seq whose output at T only its signal pair decides, each task's
determining phrase, the check that beta + gamma is the model's own logit, a model CD cannot
follow explained as a cell that does not apply, and question 2 judged from the cell."""

from __future__ import annotations

import pytest
import torch

from datamodules.lookup_tables import LookupTableDataModule
from experiments.atlas import decomposition
from experiments.atlas.claims import question2
from experiments.atlas.decomposition import (
    TOLERANCE,
    applied_tables,
    decomposition_cell,
    phrase_shares,
    signal_pair,
)
from experiments.atlas.report import NOT_APPLICABLE, cell, found_not_applicable, matrix
from experiments.atlas.targets import Rows, lookup_table_rows
from lightning_modules.seq2seq import Seq2Seq
from probes.contextual_decomposition import Decomposition
from probes.neuron_functions import trace_rows

# Token positioning's vocabulary: 4 specials, <pos=1..3>, then the words.
POSITIONS = 3
A, B, D1, D2 = 7, 8, 9, 10
V = 11
UNITS = 4


def planted_seq2seq(writers: tuple[int, int, int, int] = (A, B, D1, D2),
                    vocabulary: int = V) -> Seq2Seq:  # fmt: skip
    """A GRU seq2seq over `vocabulary` words, no attention, in which the words `writers` each
    write one unit (in order 0 .. 3) and every other word nothing; the logit of A (B) reads unit
    0 (1) only. Every bias but the update gates' (z = sigmoid(2), a slow decay) is 0, the units
    never mix, the decoder ignores its inputs. With the default writers, A (B) writes unit 0 (1)
    and the distractor words units 2 and 3, which no logit reads: the logit of the signal's token
    at T comes from the signal pair alone."""
    torch.manual_seed(0)
    model = Seq2Seq(vocabulary, vocabulary, cell="gru", embedding_size=UNITS, hidden_size=UNITS,
                    attention="none", bridge="last").eval()  # fmt: skip
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        model.decoder_embedding.weight.normal_()  # ignored: the decoder's input weights are 0
        for unit, word in enumerate(writers):
            model.encoder_embedding.weight[word, unit] = 1.0
        model.encoder.weight_ih_l0[2 * UNITS :] = 3 * torch.eye(UNITS)  # the candidate n
        for layer in (model.encoder, model.decoder):
            layer.bias_ih_l0[UNITS : 2 * UNITS] = 2.0  # the update gate z
        model.output.weight[A, 0] = model.output.weight[B, 1] = 5.0
    return model


def planted_rows(model: Seq2Seq, sources: list[list[int]], tokens: list[int],
                 positions: list[int]) -> Rows:  # fmt: skip
    """Token-positioning rows: each source line then its signal pair (token, <pos=T>)."""
    lines = [line + [token, 3 + position] for line, token, position
             in zip(sources, tokens, positions, strict=True)]  # fmt: skip
    width = max(map(len, lines))
    batch = {
        "source": torch.tensor([line + [0] * (width - len(line)) for line in lines]),
        "source_lengths": torch.tensor([len(line) for line in lines]),
        "signal_token": torch.tensor(tokens)[:, None],
        "signal_position": torch.tensor(positions)[:, None],
    }
    traced = trace_rows(model, batch, POSITIONS + 2)
    return Rows(traced, traced.answered, [A, B], {A: "A", B: "B"})


@pytest.fixture(scope="module")
def planted():
    model = planted_seq2seq()
    sources = [[D1, D2, D1], [D2], [D1, D1, D2, D2, D1], [], [D2, D1], [D1]]
    rows = planted_rows(model, sources, [A, B, A, B, A, B], [1, 2, 3, 3, 2, 1])
    return model, rows


def test_the_signal_pair_carries_the_whole_logit_of_the_token_it_decides(planted):
    """The planted model outputs each row's token at its T; with the signal pair as the phrase
    (token positioning's determining phrase) beta is the whole logit and gamma 0: the cell is 1,
    for each token; beta + gamma is the model's logit."""
    model, rows = planted
    assert rows.correct.all()
    found = decomposition_cell(model, rows, "token positioning")
    assert found["value"] == pytest.approx(1.0, abs=1e-6)
    assert found["tokens"] == pytest.approx({"A": 1.0, "B": 1.0}, abs=1e-6)
    assert found["rows"] == 6 and found["error"] < TOLERANCE


def test_a_phrase_the_output_ignores_carries_none_of_it(planted):
    """The distractor words as the phrase: the token's logit does not read what they write, so
    beta is 0 and the share 0 on every row (the rows with no distractor included)."""
    model, rows = planted
    traced = rows.traced
    distractors = (traced.batch["source"] == D1) | (traced.batch["source"] == D2)
    shares, error = phrase_shares(model, traced, distractors)
    assert shares.abs().max() < 1e-6 and error < TOLERANCE


def test_the_signal_pair_is_the_last_two_source_positions(planted):
    """Token positioning's phrase: the signal pair, at the end of each row's source (before its
    padding); a row that does not end in its own signal pair is refused."""
    _, rows = planted
    phrase = signal_pair(rows.traced)
    assert phrase[0].tolist() == [False] * 3 + [True, True] + [False] * 2
    assert phrase[3].tolist() == [True, True] + [False] * 5
    broken = rows.traced.rows(torch.arange(6))
    broken.batch["signal_token"] = torch.full((6, 1), B)
    with pytest.raises(ValueError, match="row 0 does not end in its signal pair"):
        signal_pair(broken)


@pytest.fixture(scope="module")
def lookup():
    """Paper 1's shape (GRU, pre-rnn mlp attention, full focus), untrained, on lookup-table rows."""
    torch.manual_seed(1)
    data = LookupTableDataModule(data_dir=None, batch_size=1)
    data.setup()
    model = Seq2Seq(data.source_vocab_size, data.target_vocab_size, cell="gru", embedding_size=8,
                    hidden_size=8, attention="mlp", full_focus=True,
                    decoder_embedding_size=8).eval()  # fmt: skip
    with torch.no_grad():
        rows = lookup_table_rows(model, data, tokens=4, per_token=3, correct_only=False)
    return model, rows


def test_lookup_tables_phrase_is_the_bits_and_every_table_up_to_T(lookup):
    """A lookup-table row `bits t_a t_b <eos>` outputs its final string at T = 3: the phrase is
    the bits and both tables (the positions its steps 0 .. 2 attend), never the `<eos>`."""
    _, rows = lookup
    traced = rows.traced
    phrase = applied_tables(traced)
    time = torch.arange(phrase.shape[1])[None]
    assert torch.equal(phrase, time < traced.position[:, None])
    assert not phrase[traced.batch["source"] == 1].any()  # the source's <eos>


def test_beta_and_gamma_sum_to_the_logit_through_attention_and_full_focus(lookup):
    """On an untrained paper-1-shaped model the cell is a share in [-1, 1] and beta + gamma gives
    its own logits (attention weights and full-focus gates held fixed)."""
    model, rows = lookup
    found = decomposition_cell(model, rows, "lookup tables")
    assert -1 <= found["value"] <= 1 and found["rows"] == 12
    assert found["error"] < TOLERANCE


def test_a_decomposition_off_the_models_logit_stops_the_measurement(planted, monkeypatch):
    """beta + gamma 1% off the model's own logits is a decomposition that does not follow the
    model: the cell refuses to report a value."""
    model, rows = planted
    real = decomposition.decompose_seq2seq

    def off(*arguments):
        states = real(*arguments)
        return Decomposition(states.relevant * 1.01, states.irrelevant)

    monkeypatch.setattr(decomposition, "decompose_seq2seq", off)
    with pytest.raises(RuntimeError, match="off the model's own logits"):
        decomposition_cell(model, rows, "token positioning")


def test_a_model_cd_cannot_follow_gets_the_cell_explained_as_not_applicable(planted):
    """Paper 3's bidirectional encoder: the cell is not measured but says why, and the matrix
    counts it as a cell the method does not apply to, with the reason in the report."""
    _, rows = planted
    model = Seq2Seq(V, V, cell="lstm", embedding_size=4, hidden_size=4, attention="none",
                    bidirectional=True).eval()  # fmt: skip
    found = decomposition_cell(model, rows, "token positioning")
    assert found["value"] is None and "bidirectional" in found["does_not_apply"]
    record = {"cells": {"contextual_decomposition": None}, "contextual_decomposition": found}
    records = {("paper3_scan_A", 0): {**record, "untrained": record}}
    entry = cell(records, "paper3_scan_A", "contextual_decomposition")
    assert entry["status"] == NOT_APPLICABLE and "bidirectional" in entry["why"]
    text = found_not_applicable(matrix(records))
    assert "`paper3_scan_A` x `contextual_decomposition`: contextual decomposition" in text


def test_question2_reads_the_cell_of_every_seq2seq_model():
    """q2's claims from the cell: each measured model's mean over seeds, guided minus baseline
    (reported as the seeds' differences, whose mean it is); setting B minus A waits for both SCAN
    models."""

    def record(value: float, null: float) -> dict:
        return {"cells": {"contextual_decomposition": value},
                "untrained": {"cells": {"contextual_decomposition": null}}}  # fmt: skip

    records = {("paper1_baseline", 1): record(0.4, 0.1),
               ("paper1_baseline", 2): record(0.6, 0.1),
               ("paper1_guided", 1): record(0.8, 0.0),
               ("paper4_gru", 0): record(0.3, 0.2)}  # fmt: skip
    claims = {claim.id: claim for claim in question2(records, trained=True)}
    assert set(claims) == {"q2.most.paper1_baseline", "q2.most.paper1_guided",
                           "q2.most.paper4_gru", "q2.guided_over_baseline"}  # fmt: skip
    assert claims["q2.most.paper1_baseline"].threshold.statistic == pytest.approx(0.5)
    assert claims["q2.most.paper1_guided"].verdict == "reproduced"
    assert claims["q2.most.paper4_gru"].verdict == "not reproduced"
    assert claims["q2.guided_over_baseline"].verdict == "reproduced"
    assert "= 0.300" in claims["q2.guided_over_baseline"].rule
    assert claims["q2.guided_over_baseline"].measured.mean == pytest.approx(0.3)  # as judged
    both = {**records, ("paper1_guided", 2): record(0.2, 0.0)}  # 0.8 - 0.4, then 0.2 - 0.6
    paired = next(c for c in question2(both, trained=True) if c.id == "q2.guided_over_baseline")
    assert paired.measured.values == pytest.approx((0.4, -0.4))
    assert paired.verdict == "not reproduced"  # a difference of means of 0
    untrained = {claim.id: claim for claim in question2(records, trained=False)}
    assert untrained["q2.guided_over_baseline"].verdict == "not reproduced"  # -0.1
