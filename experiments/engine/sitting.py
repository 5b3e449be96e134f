"""One invocation of a reproduction (`Sitting`): where its runs are, how many train at a time,
what it keeps from earlier invocations, which shard it trains and which run roots it merges."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from experiments.engine.shard import Shard
from experiments.engine.store import Schema, SittingError, kept_measurements, portable
from storage import RunLayout

__all__ = ["Sitting", "SittingError"]


@dataclass(frozen=True)
class Sitting:
    """One invocation of a reproduction: the run root, how many runs at a time, whether runs and
    measurements of an earlier invocation are kept (`--reuse-runs`), which shard of the runs it
    trains, and the run roots merged into `root` (then nothing is trained: every run must have
    its measurements)."""

    root: Path
    jobs: int = 2
    reuse: bool = False
    shard: Shard = Shard()
    merged: tuple[Path, ...] = ()
    cannot_train: str = ""
    """Why no run can be trained in this sitting (paper 1 offline, its data only recorded by its
    runs); empty where runs can be."""
    schema: Schema = Schema()
    """The study's measurements schema: files are read through it and written at its version."""
    variants: tuple[str, ...] = ()
    """The variants this sitting trains alone (a study's own option: paper 2's `--cells`), at the
    scale's seeds; empty: every variant. Such a sitting, like a shard, writes no report."""

    @property
    def whole(self) -> bool:
        """Whether this sitting trains every run of the scale (no shard, no variants alone), so
        that it writes the report."""
        return self.shard.whole and not self.variants

    def kept(self, layout: RunLayout, arguments: Sequence[str]) -> dict | None:
        """The run's measurements from an earlier invocation of the same command (`reuse`);
        merging, a run without them stops the reproduction naming it."""
        command = portable(arguments, self.root)
        kept = kept_measurements(layout, command, self.schema) if self.reuse else None
        if kept is None and self.merged:
            roots = " ".join(map(str, self.merged))
            raise SittingError(
                f"{layout.path.relative_to(self.root)} has no measurements from its command in "
                f"any merged run root ({roots}): run the shard that holds it to the end (with "
                "--reuse-runs) and merge again"
            )
        return kept
