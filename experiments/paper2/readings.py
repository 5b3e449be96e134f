"""Paper 2's readings of a run: P(omega | phrase) by contextual decomposition (CD) at the close
symbol of its probe rules (section 3.1), as estimates over the rules, and their combination
over seeds; and the same as the plain JSON a run's `measurements.json` keeps (`snapshot_record`,
`snapshot_of`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from probes.command.contextual_decomposition import rule_close_probabilities
from probes.contextual_decomposition import mean_and_standard_error
from storage.run_folder import RunFolder


@dataclass(frozen=True)
class Estimate:
    """A mean over the probe rules and its standard error."""

    mean: float
    standard_error: float

    def above(self, other: Estimate) -> bool:
        """Higher than `other` by more than twice the standard error of the difference and by
        more than a tenth of the larger mean (near chance, 1/|V|, tiny differences can be
        many standard errors apart and still mean nothing)."""
        spread = (self.standard_error**2 + other.standard_error**2) ** 0.5
        margin = max(2 * spread, 0.1 * max(self.mean, other.mean))
        return self.mean - other.mean > margin


@dataclass(frozen=True)
class Snapshot:
    """CD at one weight snapshot: P(omega | phrase) by phrase name, the full model's P(omega),
    and the largest approximation error over every position of every decomposition."""

    phrase: dict[str, Estimate]
    full: Estimate
    error: float


def estimate(values: torch.Tensor) -> Estimate:
    return Estimate(*mean_and_standard_error(values))


def over_seeds(estimates: Sequence[Estimate]) -> Estimate:
    """The mean over seeds of each seed's mean, with its standard error over seeds; with one
    seed, that seed's estimate (standard error over the probe rules)."""
    if len(estimates) == 1:
        return estimates[0]
    return estimate(torch.tensor([e.mean for e in estimates], dtype=torch.float64))


def combined(snapshots: Sequence[Snapshot]) -> Snapshot:
    """One snapshot of several seeds' (`over_seeds` for each phrase and the full model)."""
    return Snapshot(
        {name: over_seeds([s.phrase[name] for s in snapshots]) for name in snapshots[0].phrase},
        over_seeds([s.full for s in snapshots]),
        max(s.error for s in snapshots),
    )


def close_probabilities(
    run: Path, tags: list[str], only: Sequence[str] | None = None
) -> dict[str, Snapshot]:
    """For each weight snapshot `tag`, P(omega | phrase) at the close symbol of the run's probe
    rules (section 3.1: softmax of the phrase's part of the logits), for every phrase of
    `probes.contextual_decomposition.rule_phrases` (or the phrases named in `only`), decomposed
    in one batch (`rule_close_probabilities`, which the `contextual-decomposition` probe runs
    too), as estimates over the rules."""
    measured = rule_close_probabilities(RunFolder(run), tags, only)
    return {
        tag: Snapshot(
            {name: estimate(values) for name, values in result.phrase.items()},
            estimate(result.full),
            result.error,
        )
        for tag, result in measured.items()
    }


def snapshot_record(snapshot: Snapshot) -> dict:
    """`snapshot` as JSON: `{"phrase": {name: {"mean", "standard_error"}}, "full": {"mean",
    "standard_error"}, "error"}` (floats as Python writes them, so read back they are equal)."""
    return asdict(snapshot)


def snapshot_of(record: dict) -> Snapshot:
    """The `Snapshot` a `snapshot_record` holds."""
    return Snapshot(
        {name: Estimate(**value) for name, value in record["phrase"].items()},
        Estimate(**record["full"]),
        record["error"],
    )
