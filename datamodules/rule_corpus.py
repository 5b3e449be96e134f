"""One corpus of paper 2's long-range rules, as both generators (the paper's text,
`datamodules.rule_corpora`, and the authors' code, `datamodules.rule_corpora_authors`) build it."""

from __future__ import annotations

from dataclasses import dataclass

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
    pooled: bool = False

    @property
    def open_symbol(self) -> int:
        return self.vocabulary

    @property
    def close_symbol(self) -> int:
        return self.vocabulary + 1
