"""`--shard i/n`: which runs of a reproduction one machine of n trains."""

from __future__ import annotations

import argparse
from collections.abc import Hashable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Shard:
    """`--shard i/n`: the i-th of n disjoint parts of a reproduction's runs, for n machines.

    Runs are split by group (a paper's choice: paper 1 splits by seed, since section 5's
    retrains start from the models of their own seed, so no shard needs another's checkpoints).
    The j-th group of the paper's fixed list (from 0) belongs to shard j mod n + 1: every group is
    in exactly one shard, and the same plan always splits the same way."""

    index: int = 1
    count: int = 1

    @classmethod
    def parse(cls, text: str) -> Shard:
        parts = text.split("/")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise argparse.ArgumentTypeError(
                f"{text!r} is not i/n: write e.g. 2/4 for the second of four shards"
            )
        index, count = map(int, parts)
        if not 1 <= index <= count:
            raise argparse.ArgumentTypeError(f"{text}: i must be from 1 to n")
        return cls(index, count)

    def keeps(self, group: Hashable, groups: Sequence[Hashable]) -> bool:
        return list(groups).index(group) % self.count == self.index - 1

    @property
    def whole(self) -> bool:
        return self.count == 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"
