"""A run measured once into `<run>/measurements.json`, and measurements kept from before a field
existed completed without training the run again (papers 1 and 4).

`measured` trains the run (or keeps it, with `--reuse-runs`) and writes its record: what the
paper's `measure(RunFolder)` reads of the trained run, and the fields of `needed`, each read of
the run's untrained weights (issue 29's null model). Kept measurements taken from the same
command are read back; those without a field of `needed` (taken before it existed) get it from
the run's `epoch=init` snapshot (`UNTRAINED`) or, where the run folder is gone or has no snapshot
(trained before its config saved one), from the weights the same command starts from: the seed
fixes them, so a one-batch fit in a scratch folder rebuilds them (`initial_weights`) and nothing
is trained again.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from experiments.runner import (
    Sitting,
    SittingError,
    finished,
    fit,
    fit_command,
    portable,
    write_measurements,
)
from storage import RunLayout
from storage.layout import UNTRAINED
from storage.run_folder import RunFolder

BOOKKEEPING = ("kept", "trained", "measured")
"""The fields of a measurements record that say when, not what (`write_measurements`, `kept`)."""
Fields = dict[str, Callable[[RunFolder], object]]
"""Fields of a record, each measured from a `RunFolder` holding the run's `UNTRAINED` weights."""


def missing_fields(record: dict | None, needed: Sequence[str]) -> list[str]:
    """The fields of `needed` that the kept `record` lacks (none without a record)."""
    return [] if record is None else [name for name in needed if name not in record]


def kept_record(layout: RunLayout, arguments: list[str], sitting: Sitting,
                needed: Sequence[str] = ()) -> dict | None:  # fmt: skip
    """The run's measurements from an earlier invocation of the same command (`Sitting.kept`),
    complete or not; merging (nothing is trained or measured), measurements without a field of
    `needed` stop the reproduction naming the run."""
    kept = sitting.kept(layout, arguments)
    missing = missing_fields(kept, needed)
    if missing and sitting.merged:
        raise SittingError(
            f"{layout.path.relative_to(sitting.root)} was measured without "
            f"{', '.join(missing)} (before issue 29's untrained analysis): measure it again where "
            "it was trained (with --reuse-runs: the run is kept) and merge again"
        )
    return kept


def measured_before(layout: RunLayout, arguments: list[str], sitting: Sitting,
                    needed: Sequence[str] = ()) -> bool:  # fmt: skip
    """The run's measurements were taken before, from the same command, with every field of
    `needed` (`run_all`'s `done_before`)."""
    kept = kept_record(layout, arguments, sitting, needed)
    return kept is not None and not missing_fields(kept, needed)


def measured(
    layout: RunLayout,
    arguments: list[str],
    sitting: Sitting,
    measure: Callable[[RunFolder], dict],
    needed: Fields | None = None,
    complete: bool = True,
) -> dict:
    """Train the run (or keep it, with `reuse`) and write `measure(RunFolder)`'s record and each
    of `needed` (field -> a function of a `RunFolder` with the run's untrained weights), or read
    back the measurements taken from the same command (with `reuse`). Kept measurements without
    a field of `needed` (taken before it existed) get it, every other field kept: from the run
    folder where it is finished (its `UNTRAINED` snapshot, or the weights rebuilt from its seed
    where it has none), else (the run folder is gone: a fresh machine, a run root rebuilt from
    the committed files) from the weights rebuilt from its seed, without training it again.
    Without `complete` they are read back as they are, the fields they lack left out."""
    needed = needed or {}
    kept = kept_record(layout, arguments, sitting, list(needed) if complete else ())
    missing = missing_fields(kept, list(needed)) if complete else []
    if kept is not None and not missing:
        return kept
    if kept is not None and not finished(layout.path, fit_command(arguments)):
        with initial_weights(layout, arguments, sitting.root) as run:
            record = {k: v for k, v in kept.items() if k not in BOOKKEEPING}
            record |= {name: needed[name](run) for name in missing}
        return {**write_measurements(layout, record, kept["trained"]), "kept": True}
    trained = fit(layout.path, arguments, sitting.reuse)
    torch.set_num_threads(1)  # two runs are measured at a time, beside the fits
    if kept is not None and not trained:
        record = {k: v for k, v in kept.items() if k not in BOOKKEEPING}
        fields = missing
    else:
        record = {"command": portable(arguments, sitting.root), **measure(RunFolder(layout.path))}
        fields = list(needed)
    if fields:
        with untrained_weights(layout, arguments, sitting.root) as run:
            record |= {name: needed[name](run) for name in fields}
    return {**write_measurements(layout, record), "kept": not trained}


SCRATCH_FIT = (
    "--trainer.max_epochs", "1", "--trainer.limit_train_batches", "1",
    "--trainer.val_check_interval", "1.0", "--trainer.limit_val_batches", "1",
    "--trainer.limit_test_batches", "1",
)  # fmt: skip
"""What `initial_weights` adds to a run's fit arguments (the last value given wins): one
training batch, one validation and one test batch. The weights are saved before the first
update; the rest only writes the checkpoint whose settings rebuild the model and DataModule."""


@contextlib.contextmanager
def initial_weights(layout: RunLayout, arguments: list[str], root: Path):
    """The run `layout` of the fit `arguments` (`python -m experiments fit`, run root `root`)
    fitted on one batch (`SCRATCH_FIT`) in a temporary run root under `root`, removed
    afterwards: its `UNTRAINED` weights are those the same command starts from (the seed fixes
    them; `tests/test_paper1_smoke.py` and `tests/test_paper4.py` check it bit for bit), its last
    checkpoint gives their model and DataModule settings. Yields its `RunFolder`."""
    with tempfile.TemporaryDirectory(dir=root, prefix=".initial-weights-") as scratch:
        at = arguments.index("--run.root") + 1
        one_batch = [*arguments[:at], scratch, *arguments[at + 1 :], *SCRATCH_FIT]
        run = Path(scratch) / layout.path.relative_to(root)
        try:
            fit(run, one_batch)
        except RuntimeError as error:
            log = RunLayout(run).train_log.read_text().splitlines()[-20:]
            raise RuntimeError(f"{error}; its log ended:\n" + "\n".join(log)) from None
        yield RunFolder(run)


@contextlib.contextmanager
def untrained_weights(layout: RunLayout, arguments: list[str], root: Path):
    """A `RunFolder` holding the `UNTRAINED` weights of the finished run `layout`: the run itself
    where its `epoch=init` snapshot was saved, else `initial_weights` (runs trained before their
    config saved it)."""
    if layout.weight_snapshot(UNTRAINED).is_file():
        yield RunFolder(layout.path)
    else:
        with initial_weights(layout, arguments, root) as run:
            yield run
