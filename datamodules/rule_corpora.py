"""Synthetic long-range-rule corpora of paper 2 ("Do LSTMs Learn Compositionally?", section 4).

Tokens are drawn uniformly from a vocabulary Sigma of `vocabulary` types (ids `0 ..
vocabulary - 1`), and `rules` instances of the rule `alpha Sigma^k omega` are inserted, with the
open symbol alpha (id `vocabulary`) and the close symbol omega (id `vocabulary + 1`) outside
Sigma (section 4.1). For the conduit-predictability experiment (section 4.2) the conduits are
drawn from a pool of `conduit_pool` random conduits, each used equally often, and in the
predictable setting each conduit is also copied `conduit_copies` times elsewhere in the corpus.
Everything is seeded; the same arguments give the same corpus.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class RuleCorpus:
    """`tokens` `[length]`; `open_positions` `[rules]`: where each alpha stands (omega follows
    `conduit_length + 1` later); `conduits` `[distinct conduits, conduit_length]`."""

    tokens: Tensor
    open_positions: Tensor
    conduits: Tensor
    vocabulary: int
    conduit_length: int

    @property
    def open_symbol(self) -> int:
        return self.vocabulary

    @property
    def close_symbol(self) -> int:
        return self.vocabulary + 1


def generate_rule_corpus(
    length: int = 1_000_000,
    vocabulary: int = 1000,
    rules: int = 1000,
    conduit_length: int = 8,
    seed: int = 0,
    conduit_pool: int | None = None,
    conduit_copies: int = 0,
) -> RuleCorpus:
    """A corpus of exactly `length` tokens with `rules` instances of `alpha q omega`.

    `conduit_pool`: None draws every conduit `q` afresh from Sigma^k; a number draws that many
    conduits and uses each `rules / conduit_pool` times (paper 2, 4.2: 100 conduits, 10 uses
    each for n = 1000). `conduit_copies`: copies of each pooled conduit placed elsewhere (the
    predictable-conduit setting; 0 = unpredictable).
    """
    if conduit_pool is not None and rules % conduit_pool:
        raise ValueError(f"rules ({rules}) must be a multiple of conduit_pool ({conduit_pool}).")
    if conduit_copies and conduit_pool is None:
        raise ValueError("conduit_copies needs a conduit_pool: only pooled conduits are copied.")
    generator = torch.Generator().manual_seed(seed)
    if conduit_pool is None:
        conduits = torch.randint(vocabulary, (rules, conduit_length), generator=generator)
        used = conduits
    else:
        conduits = torch.randint(vocabulary, (conduit_pool, conduit_length), generator=generator)
        used = conduits.repeat(rules // conduit_pool, 1)
    rule_tokens = rules * (conduit_length + 2)
    copy_tokens = conduit_copies * len(conduits) * conduit_length
    filler = length - rule_tokens - copy_tokens
    if filler < 0:
        raise ValueError(
            f"{rules} rules of length {conduit_length + 2} and {copy_tokens} copied conduit "
            f"tokens do not fit in {length} tokens: use a longer corpus or fewer rules."
        )
    # Blocks: each rule, each copy of a conduit, each single filler token; shuffled together.
    kinds = torch.cat([
        torch.zeros(rules, dtype=torch.long),  # 0: rule, indexed into `used`
        torch.ones(conduit_copies * len(conduits), dtype=torch.long),  # 1: a copied conduit
        torch.full((filler,), 2, dtype=torch.long),  # 2: one random token
    ])  # fmt: skip
    order = torch.randperm(len(kinds), generator=generator)
    kinds = kinds[order]
    fillers = torch.randint(vocabulary, (filler,), generator=generator)
    copies = conduits.repeat(conduit_copies, 1)[torch.randperm(len(conduits) * conduit_copies,
                                                                generator=generator)]  # fmt: skip
    rule_order = torch.randperm(rules, generator=generator)
    sizes = torch.tensor([conduit_length + 2, conduit_length, 1])[kinds]
    starts = torch.cumsum(sizes, 0) - sizes
    tokens = torch.empty(length, dtype=torch.long)
    rule_starts = starts[kinds == 0]
    rule_body = torch.cat(
        [
            torch.full((rules, 1), vocabulary),
            used[rule_order],
            torch.full((rules, 1), vocabulary + 1),
        ],
        1,
    )
    offsets = torch.arange(conduit_length + 2)
    tokens[(rule_starts[:, None] + offsets).flatten()] = rule_body.flatten()
    copy_starts = starts[kinds == 1]
    if len(copy_starts):
        tokens[(copy_starts[:, None] + offsets[:conduit_length]).flatten()] = copies.flatten()
    tokens[starts[kinds == 2]] = fillers
    return RuleCorpus(tokens, rule_starts, conduits, vocabulary, conduit_length)
