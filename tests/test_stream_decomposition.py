"""Paper 2's second reading of P(omega | phrase): the authors' stream analysis, CD from the state
carried across windows, read at the last conduit token and at omega's own step."""

import pytest
import torch

from lightning_modules.language_model import LanguageModel
from probes.contextual_decomposition import decompose_language_model
from probes.stream_decomposition import stream_close_probabilities, window_rules

OPEN, CLOSE = 10, 11


def test_window_rules_pair_as_the_authors_boundaries_do():
    """Known answers from their get_rule_boundaries: pairs in order; a rule crossing the
    window's start or end empties the window (their trimming drops the wrong symbol)."""
    x = 0
    assert window_rules([x, OPEN, x, x, CLOSE, x], OPEN, CLOSE) == [(1, 4)]
    assert window_rules([OPEN, CLOSE, x, OPEN, x, CLOSE], OPEN, CLOSE) == [(0, 1), (3, 5)]
    assert window_rules([x, CLOSE, x, OPEN, x, CLOSE], OPEN, CLOSE) == []
    assert window_rules([OPEN, x, CLOSE, x, OPEN, x], OPEN, CLOSE) == []
    assert window_rules([x, x, x], OPEN, CLOSE) == []


def test_carried_state_reading_equals_cd_of_the_whole_stream_from_zero():
    """Known answer: CD of a phrase in a window started from the carried state (all
    irrelevant) equals CD of the whole stream up to that window from a zero state with the same
    phrase, since everything before the phrase is irrelevant; both read positions, float64."""
    torch.manual_seed(0)
    model = LanguageModel(vocab_size=12, embedding_size=5, hidden_size=4, init_range=1.0)
    model = model.double().eval()
    k, bptt = 2, 7
    stream = torch.randint(10, (5 * bptt,))
    opens = [1, 7 + 3, 21 + 0, 28 + 3]  # one rule in windows 0, 1, 3 and 4; none in window 2
    for begin in opens:
        stream[begin], stream[begin + k + 1] = OPEN, CLOSE
    readings = stream_close_probabilities(model, stream, k, OPEN, CLOSE, bptt=bptt)
    assert readings.rules == 4 and readings.broken == 0 and readings.error < 1e-12
    for rule, begin in enumerate(opens):
        end = (begin // bptt + 1) * bptt
        for name, positions in (("open", [begin]), ("conduit", [begin + 1, begin + 2]),
                                ("prefix=1", [begin, begin + 1])):  # fmt: skip
            relevant = torch.zeros(1, end, dtype=torch.bool)
            relevant[0, positions] = True
            whole = decompose_language_model(model, stream[None, :end], relevant)
            probability = whole.relevant_probabilities()[0, :, CLOSE]
            close = begin + k + 1
            torch.testing.assert_close(readings.at_close[name][rule], probability[close - 1])
            torch.testing.assert_close(readings.after_close[name][rule], probability[close])
        full = model(stream[None, :end])[0][0].softmax(-1)[:, CLOSE]
        torch.testing.assert_close(readings.full_after_close[rule], full[begin + k + 1])
    first_two = stream_close_probabilities(model, stream, k, OPEN, CLOSE, ["open"], bptt, 2)
    assert list(first_two.at_close) == ["open"] and first_two.rules == 2
    torch.testing.assert_close(first_two.at_close["open"], readings.at_close["open"][:2])
    stream[opens[0] + k + 1] = 0  # a broken rule: window 0 has an open symbol only
    broken = stream_close_probabilities(model, stream, k, OPEN, CLOSE, bptt=bptt)
    assert broken.rules == 3
    with pytest.raises(ValueError, match="no rule"):
        stream_close_probabilities(model, torch.zeros(3 * bptt, dtype=torch.long), k, OPEN,
                                   CLOSE, bptt=bptt)  # fmt: skip
