"""Paper 2's corpora as the authors' generator writes them: the suite's second reading of paper 2.

`nsaphra/acd`, `word_language_model/synthetic_range_data.py` (at commit aa072d5), followed
step by step on Python lists, because its list slice assignments change the document's length
and that is what the procedure does to the rules:

- tokens are `random.randint(0, vocab_size)`, both ends included: |Sigma| = `vocab_size + 1`;
- `conduit_vocab_size` conduits (default 100) of `rule_length` tokens each; the rules sit at
  `conduit_count * rule_count` distinct locations drawn from a grid of step `rule_length`;
- rule r writes `(` at its location, then assigns its conduit (`rule_length` tokens) to a slice
  of `rule_length - 2`, which inserts 2 tokens, and writes `)` at `location + rule_length - 1`,
  over the conduit's second-last token: the rule reads `( q[0] .. q[k-1] ) q[k+1]`, with
  k = `rule_length - 2` tokens between the symbols;
- each rule's next `conduit_count - 1` locations get a copy of its conduit (`rule_length`
  tokens into a slice of `rule_length - 1`, inserting one; the copy carries `q[k]`, the token
  that `)` covers in the rule). Locations were drawn before the insertions shifted the
  document, so later rules and copies overwrite parts of earlier ones: with k = 8 and
  `conduit_count` = 100 about half of the 1000 rules stay intact (`AuthorsCorpus.intact`).

The evaluation documents (`test.txt`, `domain_test.txt`, `valid.txt`) put one rule at a random
offset of each `sequence_length`-token sequence: `test` with the random tokens between the
symbols (fresh conduits), `domain_test` with the pool's conduits (inserted the same way, so the
later rules drift across sequence boundaries). The random stream is Python's `random.Random`
seeded once per document, so the same seed gives the same corpus; the authors' script seeds
nothing. Written by hand: no library generates these corpora.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

import torch

from datamodules.rule_corpus import RuleCorpus

OPEN, CLOSE = "(", ")"
VOCAB_SIZE, RULE_LENGTH, CONDUIT_COUNT = 1000, 10, 1
"""The script's defaults of `--vocab_size`, `--rule_length` and `--attractor_count` (here
`conduit_count`): one argument each serves its training and its evaluation documents."""


@dataclass(frozen=True)
class AuthorsCorpus(RuleCorpus):
    """A document of the authors' generator as token ids, numbered as the suite's `RuleCorpus`:
    Sigma is `0 .. vocabulary - 1` (`vocabulary` = the script's `vocab_size + 1`), `(` is
    `vocabulary` and `)` is `vocabulary + 1`; `open_positions`: every `(` followed by `)` exactly
    `conduit_length + 1` later (an intact rule); `conduits` `[pool, conduit_length]`: the tokens
    the pool puts between the symbols; `pooled`: whether probes draw their conduits from the pool
    (4.2) or afresh (4.1); `opened`: every `(` in the document (intact or not)."""

    pooled: bool = True
    opened: int = 0

    @property
    def intact(self) -> int:
        return len(self.open_positions)


def _as_corpus(document: list, vocab_size: int, conduit_vocab: list[list[int]],
               rule_length: int) -> AuthorsCorpus:  # fmt: skip
    vocabulary = vocab_size + 1
    ids = {OPEN: vocabulary, CLOSE: vocabulary + 1}
    tokens = torch.tensor([ids.get(token, token) for token in document], dtype=torch.long)
    k = rule_length - 2
    opens = (tokens == vocabulary).nonzero().flatten()
    ends = opens + k + 1
    inside = ends < len(tokens)
    intact = opens[inside][tokens[ends[inside]] == vocabulary + 1]
    conduits = torch.tensor([conduit[:k] for conduit in conduit_vocab], dtype=torch.long)
    return AuthorsCorpus(tokens, intact, conduits.view(-1, k), vocabulary, k, opened=len(opens))


def conduit_pool(rng: random.Random, vocab_size: int, rule_length: int,
                 conduit_vocab_size: int) -> list[list[int]]:  # fmt: skip
    """The script's `conduit_vocab`: `conduit_vocab_size` conduits of `rule_length` tokens."""
    return [[rng.randint(0, vocab_size) for _ in range(rule_length)]
            for _ in range(conduit_vocab_size)]  # fmt: skip


def authors_training_corpus(
    corpus_length: int = 1_000_000,
    vocab_size: int = VOCAB_SIZE,
    rule_count: int = 1000,
    rule_length: int = RULE_LENGTH,
    conduit_count: int = CONDUIT_COUNT,
    conduit_vocab_size: int = 100,
    seed: int = 0,
) -> tuple[AuthorsCorpus, list[list[int]]]:
    """The script's `train.txt` (its arguments, its defaults) and its conduit pool (full
    `rule_length` tokens each, for `authors_evaluation_corpus`)."""
    if conduit_count * rule_count > -(-corpus_length // rule_length):
        raise ValueError(
            f"{conduit_count} x {rule_count} rule locations do not fit on the grid of step "
            f"{rule_length} over {corpus_length} tokens: use fewer rules or copies."
        )
    rng = random.Random(seed)
    document: list = [rng.randint(0, vocab_size) for _ in range(corpus_length)]
    conduit_vocab = conduit_pool(rng, vocab_size, rule_length, conduit_vocab_size)
    locations = rng.sample(range(0, len(document), rule_length), conduit_count * rule_count)
    for first in range(0, len(locations), conduit_count):
        conduit = conduit_vocab[first // conduit_count % len(conduit_vocab)]
        begin = locations[first]
        document[begin] = OPEN
        document[begin + 1 : begin + rule_length - 1] = conduit
        document[begin + rule_length - 1] = CLOSE
        for copy in locations[first + 1 : first + conduit_count]:
            document[copy : copy + rule_length - 1] = conduit
    return _as_corpus(document, vocab_size, conduit_vocab, rule_length), conduit_vocab


def authors_evaluation_corpus(
    conduit_vocab: list[list[int]] | None,
    length: int,
    vocab_size: int = VOCAB_SIZE,
    rule_length: int = RULE_LENGTH,
    conduit_count: int = CONDUIT_COUNT,
    sequence_length: int = 35,
    seed: int = 1,
) -> AuthorsCorpus:
    """The script's `test.txt` (`conduit_vocab` None: random tokens between the symbols) or
    `domain_test.txt` (the training corpus's pool, rule i taking conduit
    `i // conduit_count % pool`); `valid.txt` is `test.txt` of another seed. `length` tokens:
    the script's `test_corpus_length`, left to the caller (the DataModule passes its
    `evaluation_length`)."""
    rng = random.Random(seed)
    document: list = [rng.randint(0, vocab_size) for _ in range(length)]
    offsets = [rng.randint(0, sequence_length - rule_length)
               for _ in range(length // sequence_length)]  # fmt: skip
    for index, offset in enumerate(offsets):
        begin = index * sequence_length + offset
        document[begin] = OPEN
        if conduit_vocab is not None:
            conduit = conduit_vocab[index // conduit_count % len(conduit_vocab)]
            document[begin + 1 : begin + rule_length - 1] = conduit
        document[begin + rule_length - 1] = CLOSE
    pool = conduit_vocab or [[0] * rule_length]
    return _as_corpus(document, vocab_size, pool, rule_length)


def authors_corpora(h) -> dict[str, AuthorsCorpus]:
    """`RuleCorpusDataModule`'s corpora by the authors' generator (`generator: authors`):
    `train.txt`, `valid.txt` (validation), `test.txt` (test) and `domain_test.txt`."""
    pool = h.conduit_pool or h.rules
    uses = max(h.rules // pool, 1)
    conduit_count = max(1, h.conduit_copies // uses)
    rule_length = h.conduit_length + 2
    train, conduit_vocab = authors_training_corpus(
        h.corpus_length, h.vocabulary, h.rules, rule_length, conduit_count, pool, h.data_seed
    )
    length = h.evaluation_length or max(h.corpus_length // 10, 1)
    settings = dict(length=length, vocab_size=h.vocabulary, rule_length=rule_length)
    return {
        "train": dataclasses.replace(train, pooled=h.conduit_pool is not None),
        "validation": authors_evaluation_corpus(None, seed=h.data_seed + 1, **settings),
        "test": authors_evaluation_corpus(None, seed=h.data_seed + 2, **settings),
        "domain_test": authors_evaluation_corpus(conduit_vocab, conduit_count=conduit_count,
                                                 seed=h.data_seed + 4, **settings),
    }  # fmt: skip
