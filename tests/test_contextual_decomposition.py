"""Contextual decomposition of an LSTM (Murdoch et al. 2018; paper 2, section 3.1): the parts
sum to the true outputs, batching changes nothing, and known answers on planted networks."""

import math

import pytest
import torch
from torch import nn

from lightning_modules.recurrent import LSTM
from probes.contextual_decomposition import contextual_decomposition

FEATURES, UNITS, VOCABULARY = 5, 7, 11


def random_lstm(dtype=torch.float32, seed: int = 0) -> tuple[LSTM, nn.Linear]:
    torch.manual_seed(seed)
    lstm, output = LSTM(FEATURES, UNITS), nn.Linear(UNITS, VOCABULARY)
    with torch.no_grad():  # weights large enough for saturating, far-from-linear gates
        for parameter in [*lstm.parameters(), *output.parameters()]:
            parameter.mul_(4)
    return lstm.to(dtype), output.to(dtype)


def phrases(batch: int, time: int) -> torch.Tensor:
    """Row b marks a different phrase: positions b % time .. b % time + b % 3."""
    mask = torch.zeros(batch, time, dtype=torch.bool)
    for row in range(batch):
        start = row % time
        mask[row, start : start + 1 + row % 3] = True
    return mask


@pytest.mark.parametrize("dtype, bound", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_parts_sum_to_the_true_hidden_states_and_logits(dtype, bound):
    lstm, output = random_lstm(dtype)
    inputs = torch.randn(12, 9, FEATURES, dtype=dtype, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        decomposition = contextual_decomposition(lstm, inputs, phrases(12, 9))
        hidden, _ = lstm(inputs)
        logits = output(hidden)
        relevant, irrelevant = decomposition.logits(output)
    hidden_error = (
        decomposition.relevant + decomposition.irrelevant - hidden
    ).norm() / hidden.norm()
    logit_error = (relevant + irrelevant - logits).norm() / logits.norm()
    assert hidden_error < bound and logit_error < bound
    assert decomposition.relevant.abs().max() > 0.01 and decomposition.irrelevant.abs().max() > 0.01


def test_a_batch_of_phrases_equals_each_row_alone():
    lstm, _ = random_lstm(torch.float64)
    sequence = torch.randn(1, 6, FEATURES, dtype=torch.float64)
    masks = phrases(6, 6)
    with torch.no_grad():
        batched = contextual_decomposition(lstm, sequence.expand(6, -1, -1), masks)
        for row in range(6):
            alone = contextual_decomposition(lstm, sequence, masks[row : row + 1])
            torch.testing.assert_close(batched.relevant[row], alone.relevant[0])
            torch.testing.assert_close(batched.irrelevant[row], alone.irrelevant[0])


def test_whole_sequence_is_all_relevant_and_empty_phrase_is_none():
    lstm, _ = random_lstm(torch.float64)
    inputs = torch.randn(3, 5, FEATURES, dtype=torch.float64)
    with torch.no_grad():
        hidden, _ = lstm(inputs)
        everything = contextual_decomposition(lstm, inputs, torch.ones(3, 5, dtype=torch.bool))
        nothing = contextual_decomposition(lstm, inputs, torch.zeros(3, 5, dtype=torch.bool))
    assert everything.irrelevant.abs().max() == 0
    torch.testing.assert_close(everything.relevant, hidden)
    assert nothing.relevant.abs().max() == 0


def planted_lstm() -> LSTM:
    """One-hot inputs; only token 0 writes to the cell (candidate tanh(2) for token 0, tanh(0) =
    0 for the others), the forget gate keeps the cell (bias 20), no recurrent weights: every
    hidden state after token 0 depends on token 0 alone."""
    lstm = LSTM(FEATURES, UNITS).double()
    with torch.no_grad():
        for parameter in lstm.parameters():
            parameter.zero_()
        lstm.weight_ih_l0[2 * UNITS : 3 * UNITS, 0] = 2.0  # candidate g from token 0
        lstm.weight_ih_l0[:UNITS, 0] = 3.0  # input gate opens for token 0
        lstm.bias_ih_l0[UNITS : 2 * UNITS] = 20.0  # forget gate shut open: keep the cell
    return lstm


def test_planted_model_gives_the_one_token_it_depends_on_all_the_relevance():
    tokens = torch.tensor([[3, 0, 2, 4, 1, 3]])
    inputs = nn.functional.one_hot(tokens, FEATURES).double()
    lstm = planted_lstm()
    with torch.no_grad():
        hidden, _ = lstm(inputs)
        on_token = contextual_decomposition(lstm, inputs, tokens == 0)
        elsewhere = contextual_decomposition(lstm, inputs, tokens == 3)
    assert hidden[0, 1:].abs().min() > 0.1
    torch.testing.assert_close(on_token.relevant, hidden)
    assert on_token.irrelevant.abs().max() < 1e-12
    assert elsewhere.relevant.abs().max() < 1e-12


def test_only_single_layer_batch_first_lstms():
    with pytest.raises(ValueError, match="1-layer unidirectional batch_first"):
        contextual_decomposition(nn.LSTM(2, 3), torch.zeros(1, 2, 2), torch.ones(1, 2).bool())


def test_the_standard_error_is_scipys_sem_bit_for_bit():
    """`mean_and_standard_error` computes what scipy's `sem` does, in both dtypes the readings
    use, and NaN where one value gives no spread."""
    import warnings

    import numpy as np
    from scipy.stats import sem

    from probes.contextual_decomposition import mean_and_standard_error

    generator = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        for count in (2, 3, 5, 17, 100):
            values = (generator.standard_normal(count) * 3).astype(dtype)
            mean, error = mean_and_standard_error(torch.from_numpy(values))
            assert error == float(sem(values)) and mean == float(torch.from_numpy(values).mean())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning either
        mean, error = mean_and_standard_error(torch.tensor([0.25]))
    assert mean == 0.25 and math.isnan(error)
