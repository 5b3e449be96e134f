"""The atlas's rule-corpus row (`paper2_lm`): the rule rows and their labels on a hand-made corpus,
and the language model's cells on a hand-built LSTM language model with known answers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from datamodules.rule_corpora import RuleCorpusDataModule
from datamodules.rule_corpus import RuleCorpus
from experiments.atlas.cells import NO_PAPER4_STAGES, ONE_RULE, measure_model
from experiments.atlas.questions import AMENDMENTS, WIRED, preregistration_text
from experiments.atlas.report import not_yet_text, report_text
from experiments.atlas.scales import SCALES, WIRED_TASKS
from experiments.atlas.targets import (
    NO_LABEL,
    ROWS,
    alpha_phrase,
    rule_corpus_batch,
    rule_corpus_rows,
    rule_instance_windows,
    steps_until_omega,
    table_index,
)
from experiments.engine.publish import Stopwatch
from lightning_modules.language_model import LanguageModel

SIGMA, K, CONTEXT = 4, 2, 3
ALPHA, OMEGA = SIGMA, SIGMA + 1
V, H = SIGMA + 2, 10
TOKENS = [ALPHA, 1, 2, OMEGA, 0, 3, ALPHA, 2, 1, OMEGA, 0, ALPHA, 3, 3, OMEGA, 1]
"""A corpus of three rule instances (alpha at 0, 6 and 11, omega k + 1 = 3 later); the first has
fewer than `CONTEXT` tokens before its alpha."""


def hand_made_data() -> SimpleNamespace:
    """A `RuleCorpusDataModule` stand-in: the hand-made corpus as its one split and one probe rule
    (`[3 context tokens] alpha 0 0 omega`, as `rule_windows` cuts them)."""
    corpus = RuleCorpus(torch.tensor(TOKENS), torch.tensor([0, 6, 11]), torch.zeros(3, K).long(),
                        SIGMA, K)  # fmt: skip
    probe = torch.tensor([1, 1, 1, ALPHA, 0, 0, OMEGA])
    return SimpleNamespace(
        setup=lambda: None, hparams=SimpleNamespace(context=CONTEXT), corpora={"train": corpus},
        corpus=lambda split: corpus,
        datasets={"rules": [{"input": probe[:-1], "target": probe[1:]}]},
    )  # fmt: skip


def test_rule_rows_put_alpha_omega_and_the_steps_remaining_where_the_corpus_has_them():
    """Each instance with `CONTEXT` tokens before its alpha becomes a row (the one at 0 cannot),
    then the probe rule: alpha at step 3, omega at T = k + 1 = 3 after it (the target of the last
    input step), steps remaining 3, 2, 1 from alpha to the last conduit token, alpha's identity
    there as the table index, alpha alone as omega's determining phrase."""
    data = hand_made_data()
    windows = rule_instance_windows(data.corpus("train"), CONTEXT)
    assert windows.tolist() == [TOKENS[3:10], TOKENS[8:15]]
    batch, omega = rule_corpus_batch(data, per_token=10)
    assert omega == OMEGA and batch["input"].tolist() == [TOKENS[3:9], TOKENS[8:14],
                                                          [1, 1, 1, ALPHA, 0, 0]]  # fmt: skip
    assert batch["open_position"].tolist() == [3, 3, 3]
    assert batch["signal_position"].tolist() == [[3]] * 3
    assert batch["signal_token"].tolist() == [[OMEGA]] * 3
    traced = rule_corpus_rows(planted_lm(0), data, 1, 10, correct_only=False).traced
    none = [NO_LABEL] * 3
    assert steps_until_omega(traced).tolist() == [none + [3, 2, 1]] * 3
    assert table_index(traced, "rule corpus").tolist() == [none + [ALPHA] * 3] * 3
    assert alpha_phrase(traced).long().tolist() == [[0, 0, 0, 1, 0, 0]] * 3
    assert len(rule_corpus_batch(data, per_token=2)[0]["input"]) == 2


def test_rule_rows_of_paper2s_datamodule_hold_a_rule_each():
    """Paper 2's own corpora and probe rules: every row reads `context` tokens, alpha and the
    conduit, and the next token of its last step is omega in the corpus."""
    data = RuleCorpusDataModule(corpus_length=2000, vocabulary=20, rules=10, conduit_length=3,
                                probe_rules=4, context=5)  # fmt: skip
    batch, omega = rule_corpus_batch(data, per_token=100)
    assert omega == 21 and len(batch["input"]) == 10 + 1 + 1 + 4  # train, validation, test, probes
    assert (batch["input"][:, 5] == 20).all() and batch["input"].shape[1] == 5 + 1 + 3
    assert "rule corpus" in WIRED_TASKS and "rule corpus" in ROWS


def planted_lm(unit: int) -> LanguageModel:
    """A hand-built LSTM language model over Sigma = 0..3, alpha, omega (one-hot embeddings, 10
    units, every forget and output gate shut open at 20): unit 0 is written by alpha alone and
    kept, unit 1 by every Sigma token; omega's logit reads unit `unit` alone (weight 5, no bias),
    every other logit is 0. Every recurrent forget-gate edge goes to unit 0 (a hub)."""
    model = LanguageModel(V, V, H).eval()
    gates = {"input": 0, "forget": 1, "candidate": 2, "output": 3}
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        model.embedding.weight.copy_(torch.eye(V))
        weight, bias = model.lstm.weight_ih_l0, model.lstm.bias_ih_l0
        bias[gates["input"] * H : (gates["input"] + 1) * H] = -20.0
        bias[gates["forget"] * H : (gates["forget"] + 1) * H] = 20.0
        bias[gates["output"] * H : (gates["output"] + 1) * H] = 20.0
        weight[gates["input"] * H + 0, ALPHA] = 40.0
        weight[gates["candidate"] * H + 0, ALPHA] = 5.0
        weight[gates["input"] * H + 1, :SIGMA] = 40.0
        weight[gates["candidate"] * H + 1, :SIGMA] = 5.0
        model.lstm.weight_hh_l0[gates["forget"] * H + 0] = 1.0
        model.output.weight[OMEGA, unit] = 5.0
    return model


def cells_of(model: LanguageModel) -> dict:
    data = hand_made_data()
    with torch.no_grad():
        rows = ROWS["rule corpus"](model, data, 1, 10, False)
    return measure_model(model, rows, "rule corpus", "lstm", model.state_dict(), 1, data)


def test_language_model_cells_of_a_model_where_alpha_alone_decides_omega():
    """Omega's logit read from the unit alpha alone writes: contextual decomposition gives alpha
    all of it (the cell: 1), integrated gradients of P(omega) at h_(T-1) all go to that one unit
    (the top 10%: 1), the forget gates are never left-saturated (0), the recurrent forget-gate
    edges all reach unit 0 (hub share 1); the model predicts omega on every row. The functional
    groups (one rule: one table index), paper 4's stages and the redundant input do not apply."""
    record = cells_of(planted_lm(0))
    cells = record["cells"]
    assert set(cells) == set(WIRED) and record["answered"] == 1.0 and record["rows"] == 3
    assert cells["contextual_decomposition"] == pytest.approx(1.0, abs=1e-6)
    assert record["contextual_decomposition"]["error"] < 1e-4
    assert cells["integrated_gradients"] == pytest.approx(1.0)
    assert (
        cells["gate_saturation"] == 0.0 and record["gate_saturation"]["lstm"]["right"] == [1.0] * H
    )
    assert cells["connectivity"] == 1.0
    assert record["functional_groups"]["does_not_apply"] == ONE_RULE
    assert record["neuron_functions"]["does_not_apply"] == NO_PAPER4_STAGES
    assert "does_not_apply" in record["redundant_input"]
    assert {name for name, value in cells.items() if value is None} == {
        "functional_groups", "neuron_functions", "redundant_input"}  # fmt: skip


def test_language_model_cells_of_a_model_where_the_conduit_decides_omega():
    """Omega's logit read from the unit every Sigma token writes: alpha contributes none of it
    (the decomposition cell: 0), while one unit still holds all the integrated gradients."""
    cells = cells_of(planted_lm(1))["cells"]
    assert cells["contextual_decomposition"] == 0.0
    assert cells["integrated_gradients"] == pytest.approx(1.0)


def test_the_rule_corpus_amendment_comes_before_its_runs():
    """What does not apply to paper2_lm is a dated amendment, before any paper2_lm run."""
    assert any(text.startswith("Before any paper2_lm run") for _, text in AMENDMENTS)
    assert "paper2_lm's `functional_groups` cell" in preregistration_text()


def test_the_default_scale_trains_every_model_and_says_no_reason_for_none():
    """With the rule corpus wired every task's models train at the default scale: the report
    gives no reason for cells not yet measured (an empty one would read "()"); paper2_lm's
    measured cells stand in its row, the two its measurement found not applying with why."""
    assert not_yet_text(SCALES["default"]) == ""
    found = cells_of(planted_lm(0))
    records = {("paper2_lm", 0): {**found, "untrained": found,
                                  "trained": {"started": 0.0, "finished": 60.0}}}  # fmt: skip
    text = " ".join(report_text("default", SCALES["default"], records, [], Stopwatch()).split())
    assert "40 not yet measured. A cell" in text and "()" not in text
    assert "4 cells measured" in text and "5 where the method does not apply" in text
    assert f"- `paper2_lm` x `neuron_functions`: {NO_PAPER4_STAGES}." in text
