"""The authors' CD before their fix (`bias_at_phrase_end="irrelevant"`): `nsaphra/acd` before
commit 820fabd, `acd/scores/cd.py` `cd_lstm`, put the bias product `i_b * g_b` of the phrase's
last token in the irrelevant part. Known answers: the parts still sum to the model; the relevant
cell loses exactly `sigmoid(b_i) * tanh(b_g)` at the phrase's last step and nothing before it;
every step equals a NumPy port of their loop before and after the fix, from a zero or a carried
state; paper 2's readings pass the option and float64 through."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from experiments.paper2.readings import CdSettings, close_probabilities, stream_snapshots
from lightning_modules.language_model import LanguageModel
from probes.contextual_decomposition import (
    bias_with_phrase,
    decompose_language_model,
    decompose_recurrent,
)
from probes.stream_decomposition import stream_close_probabilities
from storage.files import save_tensors_atomic

FEATURES, UNITS = 3, 4
BEFORE, AFTER = "before", "after"


def seeded_lstm(seed: int = 0) -> nn.LSTM:
    """A float64 one-layer LSTM with weights large enough for far-from-linear gates."""
    torch.manual_seed(seed)
    lstm = nn.LSTM(FEATURES, UNITS, batch_first=True).double()
    with torch.no_grad():
        for parameter in lstm.parameters():
            parameter.mul_(3)
    return lstm


def one_phrase(time: int, start: int, stop: int) -> torch.Tensor:
    """The mask `[1, time]` of the inclusive phrase `start..stop` (the authors' spans)."""
    mask = torch.zeros(1, time, dtype=torch.bool)
    mask[0, start : stop + 1] = True
    return mask


def cell_parts(lstm: nn.LSTM, inputs: torch.Tensor, mask: torch.Tensor, where: str):
    """The (relevant, irrelevant) cell after the last step of `inputs`."""
    (layer,) = decompose_recurrent(lstm, inputs, mask, bias_at_phrase_end=where)
    return layer.final[1]


def bias_product(lstm: nn.LSTM) -> torch.Tensor:
    """`i_b * g_b = sigmoid(b_i) * tanh(b_g)`: the bias-only term of every step's cell update,
    from the weights by hand (torch's gate order i, f, g, o)."""
    bias = (lstm.bias_ih_l0 + lstm.bias_hh_l0).detach()
    return torch.sigmoid(bias[:UNITS]) * torch.tanh(bias[2 * UNITS : 3 * UNITS])


# ---- where the bias product goes ----------------------------------------------------------------
def test_the_bias_leaves_the_phrase_at_its_last_step_only():
    mask = torch.tensor([[0, 1, 1, 1, 0], [1, 0, 0, 0, 0], [0, 0, 0, 1, 1], [0, 0, 0, 0, 0]])
    before = bias_with_phrase(mask.bool(), "irrelevant").int()
    assert before.tolist() == [[0, 1, 1, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 1, 0], [0] * 5]
    assert bias_with_phrase(mask.bool()).int().tolist() == mask.tolist()
    with pytest.raises(ValueError, match="pass 'relevant' .* or 'irrelevant'"):
        bias_with_phrase(mask.bool(), "rest")


def test_one_token_phrase_at_the_start_loses_exactly_its_bias_product():
    """At t = 0 from a zero state the phrase's token is all the input: today the relevant cell
    is the whole cell c and the irrelevant one 0; before the fix `bp = sigmoid(b_i) tanh(b_g)`
    moves to the rest, and the relevant hidden state is `o (tanh(c - bp) + tanh(c) -
    tanh(bp)) / 2` (the Shapley split of tanh)."""
    lstm = seeded_lstm()
    inputs = torch.randn(
        1, 3, FEATURES, dtype=torch.float64, generator=torch.Generator().manual_seed(1)
    )
    mask = one_phrase(3, 0, 0)
    product = bias_product(lstm)
    assert product.abs().min() > 0.01
    with torch.no_grad():
        hidden, (_, cell) = lstm(inputs[:, :1])
        today = cell_parts(lstm, inputs[:, :1], mask[:, :1], "relevant")
        before = cell_parts(lstm, inputs[:, :1], mask[:, :1], "irrelevant")
        (layer,) = decompose_recurrent(lstm, inputs, mask, bias_at_phrase_end="irrelevant")
    torch.testing.assert_close(today[0][0], cell[0, 0])
    assert today[1].abs().max() == 0
    torch.testing.assert_close(before[0][0], cell[0, 0] - product)
    torch.testing.assert_close(before[1][0], product)
    output_gate = hidden[0, 0] / torch.tanh(cell[0, 0])
    expected = output_gate * (torch.tanh(cell[0, 0] - product) + torch.tanh(cell[0, 0])
                              - torch.tanh(product)) / 2  # fmt: skip
    torch.testing.assert_close(layer.states.relevant[0, 0], expected)
    torch.testing.assert_close(layer.states.irrelevant[0, 0], hidden[0, 0] - expected)


def test_two_token_phrase_first_differs_at_its_last_token_by_the_bias_product():
    """Phrase 1..2: steps 0 and 1 are today's exactly; at step 2 the relevant cell is today's
    minus `bp` and the irrelevant one today's plus `bp`, and the hidden parts are tanh's split of
    those cells times the output gate."""
    lstm = seeded_lstm(2)
    inputs = torch.randn(
        1, 5, FEATURES, dtype=torch.float64, generator=torch.Generator().manual_seed(3)
    )
    mask = one_phrase(5, 1, 2)
    product = bias_product(lstm)
    with torch.no_grad():
        (today,) = decompose_recurrent(lstm, inputs, mask)
        (before,) = decompose_recurrent(lstm, inputs, mask, bias_at_phrase_end="irrelevant")
        today_cell = cell_parts(lstm, inputs[:, :3], mask[:, :3], "relevant")
        before_cell = cell_parts(lstm, inputs[:, :3], mask[:, :3], "irrelevant")
        hidden, (_, cell) = lstm(inputs[:, :3])
    assert torch.equal(before.states.relevant[:, :2], today.states.relevant[:, :2])
    assert torch.equal(before.states.irrelevant[:, :2], today.states.irrelevant[:, :2])
    torch.testing.assert_close(before_cell[0], today_cell[0] - product)
    torch.testing.assert_close(before_cell[1], today_cell[1] + product)
    relevant, irrelevant = before_cell[0][0], before_cell[1][0]
    output_gate = hidden[0, 2] / torch.tanh(cell[0, 0])
    expected = (
        output_gate * (torch.tanh(relevant) + torch.tanh(cell[0, 0]) - torch.tanh(irrelevant)) / 2
    )
    torch.testing.assert_close(before.states.relevant[0, 2], expected)
    assert (before.states.relevant[0, 2] - today.states.relevant[0, 2]).abs().min() > 1e-3


@pytest.mark.parametrize("start, stop", [(0, 0), (2, 4), (7, 7)])
def test_the_parts_first_differ_at_the_phrases_last_step_wherever_it_ends(start, stop):
    """A phrase ending before the end and one ending at the last step (7) alike: equal to
    today's before `stop`, different from `stop` on (their code has no end-of-sequence case)."""
    lstm = seeded_lstm(4)
    inputs = torch.randn(
        1, 8, FEATURES, dtype=torch.float64, generator=torch.Generator().manual_seed(5)
    )
    mask = one_phrase(8, start, stop)
    with torch.no_grad():
        (today,) = decompose_recurrent(lstm, inputs, mask)
        (before,) = decompose_recurrent(lstm, inputs, mask, bias_at_phrase_end="irrelevant")
    difference = (before.states.relevant - today.states.relevant).abs().amax(-1)[0]
    assert stop == 0 or difference[:stop].max() == 0
    assert difference[stop:].min() > 1e-4


# ---- the authors' loop, ported to NumPy ---------------------------------------------------------
def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _propagate_three(a, b, c, activation):
    a_contrib = 0.5 * (
        activation(a + c) - activation(c) + activation(a + b + c) - activation(b + c)
    )
    b_contrib = 0.5 * (
        activation(b + c) - activation(c) + activation(a + b + c) - activation(a + c)
    )
    return a_contrib, b_contrib, activation(c)


def _propagate_tanh_two(a, b):
    return 0.5 * (np.tanh(a) + (np.tanh(a + b) - np.tanh(b))), 0.5 * (
        np.tanh(b) + (np.tanh(a + b) - np.tanh(a))
    )


def authors_cd_lstm(lstm: nn.LSTM, word_vecs: np.ndarray, start: int, stop: int, version: str,
                    cell_state=None):  # fmt: skip
    """`cd_lstm` of `nsaphra/acd` `acd/scores/cd.py` for one sequence `word_vecs` `[T,
    features]`, line by line in NumPy; `version` BEFORE (the parent of 820fabd: the bias product
    with the phrase where `start <= i < stop`) or AFTER (820fabd: `start <= i <= stop`).
    `cell_state` `(h0, c0)` as theirs. Returns `relevant_h`, `irrelevant_h` `[T, units]`."""
    weights = {name: value.detach().numpy() for name, value in lstm.state_dict().items()}
    W_ii, W_if, W_ig, W_io = np.split(weights["weight_ih_l0"].T, 4, 1)
    W_hi, W_hf, W_hg, W_ho = np.split(weights["weight_hh_l0"].T, 4, 1)
    b_i, b_f, b_g, b_o = np.split(weights["bias_ih_l0"] + weights["bias_hh_l0"], 4, 0)
    T, hidden_dim = len(word_vecs), W_hi.shape[0]
    relevant, irrelevant = np.zeros((T, hidden_dim)), np.zeros((T, hidden_dim))
    relevant_h, irrelevant_h = np.zeros((T, hidden_dim)), np.zeros((T, hidden_dim))
    if cell_state is None:
        start_state, prev_irrel_h = np.zeros(hidden_dim), np.zeros(hidden_dim)
    else:
        prev_irrel_h, start_state = cell_state[0].copy(), cell_state[1]
    prev_rel_h = np.zeros(hidden_dim)
    for i in range(T):
        if i > 0:
            prev_rel_h, prev_irrel_h = relevant_h[i - 1], irrelevant_h[i - 1]
        rel_i, rel_g, rel_f = prev_rel_h @ W_hi, prev_rel_h @ W_hg, prev_rel_h @ W_hf
        irrel_i, irrel_g, irrel_f = prev_irrel_h @ W_hi, prev_irrel_h @ W_hg, prev_irrel_h @ W_hf
        if i >= start and i <= stop:
            rel_i, rel_g, rel_f = (
                rel_i + word_vecs[i] @ W_ii,
                rel_g + word_vecs[i] @ W_ig,
                rel_f + word_vecs[i] @ W_if,
            )
        else:
            irrel_i, irrel_g = irrel_i + word_vecs[i] @ W_ii, irrel_g + word_vecs[i] @ W_ig
            irrel_f = irrel_f + word_vecs[i] @ W_if
        rel_contrib_i, irrel_contrib_i, bias_contrib_i = _propagate_three(
            rel_i, irrel_i, b_i, _sigmoid
        )
        rel_contrib_g, irrel_contrib_g, bias_contrib_g = _propagate_three(
            rel_g, irrel_g, b_g, np.tanh
        )
        relevant[i] = (
            rel_contrib_i * (rel_contrib_g + bias_contrib_g) + bias_contrib_i * rel_contrib_g
        )
        irrelevant[i] = (irrel_contrib_i * (rel_contrib_g + irrel_contrib_g + bias_contrib_g)
                         + (rel_contrib_i + bias_contrib_i) * irrel_contrib_g)  # fmt: skip
        inside = (i >= start and i < stop) if version == BEFORE else (i >= start and i <= stop)
        if inside:
            relevant[i] += bias_contrib_i * bias_contrib_g
        else:
            irrelevant[i] += bias_contrib_i * bias_contrib_g
        rel_contrib_f, irrel_contrib_f, bias_contrib_f = _propagate_three(
            rel_f, irrel_f, b_f, _sigmoid
        )
        if i > 0:
            relevant[i] += (rel_contrib_f + bias_contrib_f) * relevant[i - 1]
            irrelevant[i] += ((rel_contrib_f + irrel_contrib_f + bias_contrib_f) * irrelevant[i - 1]
                              + irrel_contrib_f * relevant[i - 1])  # fmt: skip
        else:
            irrelevant[i] += (rel_contrib_f + irrel_contrib_f + bias_contrib_f) * start_state
        o = _sigmoid(word_vecs[i] @ W_io + (prev_rel_h + prev_irrel_h) @ W_ho + b_o)
        new_rel_h, new_irrel_h = _propagate_tanh_two(relevant[i], irrelevant[i])
        relevant_h[i], irrelevant_h[i] = o * new_rel_h, o * new_irrel_h
    return relevant_h, irrelevant_h


SPANS = [(0, 0), (0, 3), (2, 4), (5, 5), (6, 7), (7, 7)]


@pytest.mark.parametrize("version, where", [(BEFORE, "irrelevant"), (AFTER, "relevant")])
def test_every_step_equals_the_authors_loop_before_and_after_their_fix(version, where):
    lstm = seeded_lstm(6)
    inputs = torch.randn(
        1, 8, FEATURES, dtype=torch.float64, generator=torch.Generator().manual_seed(7)
    )
    rows = torch.cat([one_phrase(8, start, stop) for start, stop in SPANS])
    with torch.no_grad():
        (layer,) = decompose_recurrent(lstm, inputs.expand(len(SPANS), -1, -1), rows,
                                       bias_at_phrase_end=where)  # fmt: skip
    for row, (start, stop) in enumerate(SPANS):
        relevant, irrelevant = authors_cd_lstm(lstm, inputs[0].numpy(), start, stop, version)
        torch.testing.assert_close(layer.states.relevant[row], torch.from_numpy(relevant))
        torch.testing.assert_close(layer.states.irrelevant[row], torch.from_numpy(irrelevant))


@pytest.mark.parametrize("version, where", [(BEFORE, "irrelevant"), (AFTER, "relevant")])
def test_from_a_carried_state_equals_the_authors_loop(version, where):
    """Their stream reading starts CD from the carried state, all of it irrelevant."""
    lstm = seeded_lstm(8)
    generator = torch.Generator().manual_seed(9)
    inputs = torch.randn(1, 6, FEATURES, dtype=torch.float64, generator=generator)
    h0, c0 = (torch.randn(1, UNITS, dtype=torch.float64, generator=generator) for _ in range(2))
    zeros = torch.zeros_like(h0)
    with torch.no_grad():
        (layer,) = decompose_recurrent(lstm, inputs, one_phrase(6, 1, 3),
                                       [((zeros, h0), (zeros, c0))], where)  # fmt: skip
    relevant, irrelevant = authors_cd_lstm(lstm, inputs[0].numpy(), 1, 3, version,
                                           (h0[0].numpy(), c0[0].numpy()))  # fmt: skip
    torch.testing.assert_close(layer.states.relevant[0], torch.from_numpy(relevant))
    torch.testing.assert_close(layer.states.irrelevant[0], torch.from_numpy(irrelevant))


# ---- a language model, float32 and float64 ------------------------------------------------------
def language_model(dtype: torch.dtype, seed: int = 0, vocabulary: int = 12) -> LanguageModel:
    torch.manual_seed(seed)
    model = LanguageModel(vocab_size=vocabulary, embedding_size=5, hidden_size=6, init_range=1.0)
    return model.to(dtype).eval()


@pytest.mark.parametrize("dtype, bound", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_parts_still_sum_to_the_models_logits(dtype, bound):
    model = language_model(dtype)
    tokens = torch.randint(12, (4, 9), generator=torch.Generator().manual_seed(1))
    rows = tokens.repeat_interleave(3, 0)
    relevant = torch.zeros(rows.shape, dtype=torch.bool)
    for row, (start, stop) in enumerate([(0, 0), (3, 5), (8, 8)] * 4):
        relevant[row, start : stop + 1] = True
    today = decompose_language_model(model, rows, relevant)
    before = decompose_language_model(model, rows, relevant, bias_at_phrase_end="irrelevant")
    assert before.relevant.dtype == dtype
    assert before.approximation_error().max() < bound
    torch.testing.assert_close(before.full, today.full)
    assert (before.relevant - today.relevant).abs().max() > 0.01


OPEN, CLOSE = 10, 11


def test_stream_reading_before_the_fix_equals_the_authors_loop_from_the_carried_state():
    model = language_model(torch.float64)
    k, bptt = 2, 7
    stream = torch.randint(10, (3 * bptt,), generator=torch.Generator().manual_seed(2))
    opens = [1, 7 + 3]
    for begin in opens:
        stream[begin], stream[begin + k + 1] = OPEN, CLOSE
    read = stream_close_probabilities(model, stream, k, OPEN, CLOSE, ["prefix=1"], bptt=bptt,
                                      bias_at_phrase_end="irrelevant")  # fmt: skip
    assert read.rules == 2 and read.error < 1e-12
    with torch.no_grad():
        for rule, begin in enumerate(opens):
            window = begin // bptt * bptt
            state = torch.zeros(1, 1, 6, dtype=torch.float64)
            h0, c0 = (state, state)
            if window:
                _, (h0, c0) = model.lstm(model.embedding(stream[None, :window]))
            vectors = model.embedding(stream[window : window + bptt]).numpy()
            start = begin - window
            relevant, _ = authors_cd_lstm(model.lstm, vectors, start, start + 1, BEFORE,
                                          (h0[0, 0].numpy(), c0[0, 0].numpy()))  # fmt: skip
            logits = torch.from_numpy(relevant) @ model.output.weight.T
            probability = logits.softmax(-1)[:, CLOSE]
            close = start + k + 1
            torch.testing.assert_close(read.at_close["prefix=1"][rule], probability[close - 1])
            torch.testing.assert_close(read.after_close["prefix=1"][rule], probability[close])


# ---- paper 2's readings pass the option and the dtype through -----------------------------------
CORPUS = dict(corpus_length=3000, vocabulary=30, rules=40, conduit_length=3, batch_size=4,
              bptt=7, probe_rules=12, context=5)  # fmt: skip


@pytest.fixture(scope="module")
def language_run(tmp_path_factory) -> Path:
    """A run folder (checkpoint `last`, snapshot `epoch=0`) of a random `LanguageModel`."""
    run = tmp_path_factory.mktemp("paper2") / "seed=0"
    model = language_model(torch.float32, 1, CORPUS["vocabulary"] + 2)
    settings = {**model.hparams, "_class_path": "lightning_modules.language_model.LanguageModel"}
    data = {"_class_path": "datamodules.RuleCorpusDataModule", **CORPUS}
    (run / "checkpoints").mkdir(parents=True)
    checkpoint = {"state_dict": model.state_dict(), "hyper_parameters": settings,
                  "datamodule_hyper_parameters": data}  # fmt: skip
    torch.save(checkpoint, run / "checkpoints" / "last.ckpt")
    state = language_model(torch.float32, 2, CORPUS["vocabulary"] + 2).state_dict()
    save_tensors_atomic(state, run / "weights" / "epoch=0.safetensors")
    return run


def test_paper2_readings_take_the_before_fix_cd_in_float64(language_run):
    """Float64 shows in the approximation error (float32's is ~1e-7); the option moves the
    phrases' readings and leaves the full model's alone; the defaults are today's."""
    tags, only = ["epoch=0"], ["open", "conduit"]
    today = close_probabilities(language_run, tags, only)["epoch=0"]
    before_fix, float64 = CdSettings("irrelevant", torch.float64), CdSettings(dtype=torch.float64)
    before = close_probabilities(language_run, tags, only, before_fix)["epoch=0"]
    today64 = close_probabilities(language_run, tags, only, float64)["epoch=0"]
    assert today.error > 1e-10 and before.error < 1e-12 and today64.error < 1e-12
    assert before.full.mean == pytest.approx(today.full.mean, rel=1e-5)
    for phrase in only:
        assert today64.phrase[phrase].mean == pytest.approx(today.phrase[phrase].mean, rel=1e-4)
        assert before.phrase[phrase].mean != pytest.approx(today64.phrase[phrase].mean, rel=1e-4)


def test_paper2_stream_readings_take_the_before_fix_cd_in_float64(language_run):
    shorter = {"stream_length": 2000}  # their streams, shorter
    today = stream_snapshots(language_run, ["epoch=0"], ["open"], **shorter)
    before = stream_snapshots(language_run, ["epoch=0"], ["open"],
                              CdSettings("irrelevant", torch.float64), **shorter)  # fmt: skip
    for reading, snapshots in before.items():
        assert snapshots["epoch=0"].error < 1e-12 < today[reading]["epoch=0"].error
        assert snapshots["epoch=0"].phrase["open"].mean != pytest.approx(
            today[reading]["epoch=0"].phrase["open"].mean, rel=1e-3
        )
