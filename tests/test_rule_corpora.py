"""Paper 2's synthetic corpora (section 4): exact length, rules where they are said to be, the
open and close symbols nowhere else, conduit pools and copies counted, seeded."""

import pytest
import torch

from datamodules.rule_corpora import generate_rule_corpus


def windows(tokens: torch.Tensor, size: int) -> list[tuple[int, ...]]:
    return [tuple(w) for w in tokens.unfold(0, size, 1).tolist()]


def test_rules_sit_at_their_positions_and_symbols_nowhere_else():
    corpus = generate_rule_corpus(length=5000, vocabulary=50, rules=40, conduit_length=3, seed=1)
    tokens = corpus.tokens
    assert tokens.shape == (5000,)
    assert len(corpus.open_positions) == 40
    assert (tokens[corpus.open_positions] == corpus.open_symbol).all()
    assert (tokens[corpus.open_positions + 4] == corpus.close_symbol).all()
    assert int((tokens == corpus.open_symbol).sum()) == 40
    assert int((tokens == corpus.close_symbol).sum()) == 40
    conduits = {tuple(tokens[p + 1 : p + 4].tolist()) for p in corpus.open_positions.tolist()}
    assert conduits == {tuple(c) for c in corpus.conduits.tolist()}
    assert tokens.max() <= 51 and tokens.min() >= 0


def test_pooled_conduits_are_used_equally_and_copied_m_times():
    corpus = generate_rule_corpus(
        length=20_000, vocabulary=1000, rules=100, conduit_length=4, seed=2,
        conduit_pool=10, conduit_copies=7,
    )  # fmt: skip
    tokens = corpus.tokens
    inside = [tuple(tokens[p + 1 : p + 5].tolist()) for p in corpus.open_positions.tolist()]
    all_windows = windows(tokens, 4)
    for conduit in (tuple(c) for c in corpus.conduits.tolist()):
        assert inside.count(conduit) == 10
        # 10 uses in rules + 7 copies (a chance occurrence of 4 given tokens is ~1e-12 here)
        assert all_windows.count(conduit) == 17


def test_unpredictable_setting_has_no_copies_and_same_seed_same_corpus():
    first = generate_rule_corpus(length=3000, vocabulary=100, rules=20, conduit_length=5, seed=3,
                                 conduit_pool=10)  # fmt: skip
    again = generate_rule_corpus(length=3000, vocabulary=100, rules=20, conduit_length=5, seed=3,
                                 conduit_pool=10)  # fmt: skip
    other = generate_rule_corpus(length=3000, vocabulary=100, rules=20, conduit_length=5, seed=4,
                                 conduit_pool=10)  # fmt: skip
    assert torch.equal(first.tokens, again.tokens)
    assert not torch.equal(first.tokens, other.tokens)
    all_windows = windows(first.tokens, 5)
    for conduit in (tuple(c) for c in first.conduits.tolist()):
        assert all_windows.count(conduit) == 2  # only its 2 uses inside rules


def test_impossible_settings_are_clear_errors():
    with pytest.raises(ValueError, match="do not fit in 100 tokens"):
        generate_rule_corpus(length=100, vocabulary=10, rules=20, conduit_length=8)
    small = dict(length=1000, vocabulary=10, conduit_length=3)
    with pytest.raises(ValueError, match="multiple of conduit_pool"):
        generate_rule_corpus(rules=15, conduit_pool=10, **small)
    with pytest.raises(ValueError, match="needs a conduit_pool"):
        generate_rule_corpus(rules=10, conduit_copies=3, **small)
