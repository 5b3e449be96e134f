"""Paper 2's second reading of the corpora: the authors' generator (synthetic_range_data.py),
whose slice assignments insert tokens, put `)` over the conduit's second-last token and let
copies overwrite rules."""

import pytest
import torch

from datamodules.rule_corpora_authors import authors_evaluation_corpus, authors_training_corpus


def test_without_copies_each_rule_reads_open_conduit_close_and_the_conduits_last_token():
    """Few rules on a long document: none overlaps, so each is `( q[0..k-1] ) q[k+1]` (the
    slice assignment inserted 2 tokens, `)` covers q[k]), rule r takes pool conduit r % pool,
    and Sigma has vocab_size + 1 types."""
    corpus, pool = authors_training_corpus(
        20_000, vocab_size=50, rule_count=6, rule_length=5, conduit_vocab_size=4, seed=3
    )
    k = 3
    assert corpus.vocabulary == 51 and corpus.conduit_length == k
    assert len(corpus.tokens) == 20_000 + 2 * 6
    assert corpus.opened == corpus.intact == 6
    sigma = corpus.tokens[corpus.tokens < 51]
    assert int(sigma.max()) == 50 and int(sigma.min()) == 0
    conduits_seen = []
    for begin in corpus.open_positions.tolist():
        rule = corpus.tokens[begin : begin + k + 3].tolist()
        assert rule[0] == corpus.open_symbol and rule[k + 1] == corpus.close_symbol
        conduit = next(c for c in pool if c[:k] == rule[1 : k + 1])
        assert rule[k + 2] == conduit[k + 1]  # the conduit's last token follows `)`
        conduits_seen.append(pool.index(conduit))
    assert sorted(conduits_seen) == [0, 0, 1, 1, 2, 3]
    assert torch.equal(corpus.conduits, torch.tensor([c[:k] for c in pool]))


def test_copies_insert_one_token_each_and_overwrite_about_half_the_rules():
    """`conduit_count` - 1 copies per rule, each inserting one token; where the locations fill
    the grid (k = 8, conduit_count = 100, the authors' predictable setting at 1/10 of the
    corpus) later rules and copies break about half of the rules (502 of 1000 at 1M tokens)."""
    corpus, pool = authors_training_corpus(100_000, vocab_size=1000, rule_count=100,
                                           rule_length=10, conduit_count=100, seed=0)  # fmt: skip
    assert len(corpus.tokens) == 100_000 + 2 * 100 + 99 * 100
    assert corpus.opened < 100 and 35 <= corpus.intact <= 65
    again, _ = authors_training_corpus(100_000, vocab_size=1000, rule_count=100,
                                       rule_length=10, conduit_count=100, seed=0)  # fmt: skip
    assert torch.equal(again.tokens, corpus.tokens)
    with pytest.raises(ValueError, match="do not fit on the grid"):
        authors_training_corpus(1000, rule_count=100, rule_length=10, conduit_count=2)


def test_evaluation_documents_hold_one_rule_per_sequence():
    """`test.txt`: one intact rule per 35-token sequence with random tokens inside;
    `domain_test.txt`: the pool's conduits, each insertion 2 tokens longer."""
    _, pool = authors_training_corpus(5_000, vocab_size=100, rule_count=10, rule_length=6,
                                      conduit_vocab_size=5, seed=1)  # fmt: skip
    test = authors_evaluation_corpus(None, 3_500, vocab_size=100, rule_length=6, seed=2)
    assert len(test.tokens) == 3_500 and test.opened == test.intact == 100
    starts = test.open_positions
    assert torch.equal(starts // 35, torch.arange(100)) and bool((starts % 35 <= 29).all())
    domain = authors_evaluation_corpus(pool, 3_500, vocab_size=100, rule_length=6,
                                       conduit_count=2, seed=2)  # fmt: skip
    assert len(domain.tokens) == 3_500 + 2 * 100 and domain.opened == 100
    inside = [domain.tokens[b + 1 : b + 5].tolist() for b in domain.open_positions.tolist()]
    assert all(conduit in [c[:4] for c in pool] for conduit in inside)


def test_datamodule_builds_the_authors_splits_with_one_more_type():
    """`generator: authors`: Sigma of vocabulary + 1 types, the authors' valid/test documents
    and their domain_test as a split, probes with pooled conduits; a wrong name is one error."""
    from datamodules.rule_corpora import RuleCorpusDataModule

    settings = dict(corpus_length=20_000, rules=100, conduit_length=4, conduit_pool=10,
                    conduit_copies=100, probe_rules=5, evaluation_length=3_500)  # fmt: skip
    text = RuleCorpusDataModule(**settings)
    authors = RuleCorpusDataModule(**settings, generator="authors")
    assert (text.vocab_size, authors.vocab_size) == (1002, 1003)
    corpora = {name: authors.corpus(name) for name in ("train", "test", "domain_test")}
    assert len(corpora["train"].tokens) == 20_000 + 2 * 100 + 9 * 100  # conduit_count 10
    assert corpora["test"].intact == 100 and len(corpora["domain_test"].tokens) == 3_700
    probes = next(iter(authors.split_dataloader("rules")))
    conduits = {tuple(c) for c in corpora["train"].conduits.tolist()}
    assert all(tuple(row[21:25]) in conduits for row in probes["input"].tolist())
    assert bool((probes["input"][:, 20] == 1001).all())
    assert bool((probes["target"][:, -1] == 1002).all())
    with pytest.raises(ValueError, match="generator must be one of text, authors"):
        RuleCorpusDataModule(generator="paper")
