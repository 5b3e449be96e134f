"""A run measured once into `<run>/measurements.json`, and measurements kept from before a field
existed completed without training the run again (papers 1 and 4).

`measured` trains the run (or keeps it, with `--reuse-runs`) and writes its record: what the
paper's `measure(RunFolder)` reads of the trained run, and the fields of `needed`, each read of
the run's untrained weights (the null model). Kept measurements taken from the same
command are read back; those without a field of `needed` (taken before it existed) get it from
the run's `epoch=init` snapshot (`UNTRAINED`) or, where the run folder is gone or has no snapshot
(trained before its config saved one), from the weights the same command starts from: the seed
fixes them, so a one-batch fit in a scratch folder rebuilds them (`initial_weights`) and nothing
is trained again. Fields a paper added later that read the trained run (`optional`, paper 1's
footnotes) are measured on every new run, and on a kept run lacking them only when asked
(`add`): from its run folder, or, where the folder is gone, by training the run again from its
command; the seed fixes the training bit for bit on the same arithmetic (the kind of processor
and the thread count), which `same_model` checks (what `identity` reads of the run must come out
as kept). So does a run whose weights something trained later starts from (`weights`). A run
that fails the check is left unfinished, so no later invocation reads it as the measured model.
Each part of a measurement (what `measure` reads, each field), and each step of a long part
(`kept_step`), is kept as soon as it is taken (`MeasurementParts`): a measurement cut short goes
on from there.
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from experiments.engine.fit import finished, fit, fit_command
from experiments.engine.sitting import Sitting, SittingError
from experiments.engine.sittings import fit_time
from experiments.engine.store import MeasurementParts, Schema, portable, write_measurements
from storage import RunLayout
from storage.layout import UNTRAINED
from storage.run_folder import RunFolder

BOOKKEEPING = ("kept", "trained", "measured")
"""The fields of a measurements record that say when, not what (`write_measurements`, `kept`)."""
MEASURE = "measure"
"""The part of a record (`MeasurementParts`) that the paper's `measure(RunFolder)` gives."""
Field = Callable[[RunFolder], object]
"""A field of a record, measured from a `RunFolder`."""
Fields = dict[str, Field]
"""Fields of a record by name: `measured`'s `needed` each measured from a `RunFolder` holding the
run's `UNTRAINED` weights, its `optional` from the trained run's."""


def missing_fields(record: dict | None, needed: Sequence[str]) -> list[str]:
    """The fields of `needed` that the kept `record` lacks or holds as None (a field a paper
    wrote as None before measuring it, as paper 1's LSTMs' analysis before footnote 1's); none
    without a record."""
    return [] if record is None else [name for name in needed if record.get(name) is None]


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
            f"{', '.join(missing)} (measured before those fields existed): measure it again where "
            "it was trained (with --reuse-runs: the run is kept) and merge again"
        )
    return kept


def measured_before(layout: RunLayout, arguments: list[str], sitting: Sitting,
                    needed: Sequence[str] = (), add: Sequence[str] = ()) -> bool:  # fmt: skip
    """The run's measurements were taken before, from the same command, with every field of
    `needed` and of `add` (`measured`'s; `run_all`'s `done_before`)."""
    kept = kept_record(layout, arguments, sitting, needed)
    return kept is not None and not missing_fields(kept, [*needed, *add])


def not_merged_with(layout: RunLayout, added: Sequence[str], sitting: Sitting) -> SittingError:
    """The error of a merge asked to add measurements (`added`) to a run measured without them:
    they are added where the run was trained, not in a merge."""
    return SittingError(
        f"{layout.path.relative_to(sitting.root)} was measured without {', '.join(added)}: "
        "add them where it was trained (--reuse-runs --add-measurements) and merge again, "
        "or merge without --add-measurements"
    )


def measured(
    layout: RunLayout,
    arguments: list[str],
    sitting: Sitting,
    measure: Callable[[RunFolder], dict],
    needed: Fields | None = None,
    complete: bool = True,
    optional: Fields | None = None,
    add: Sequence[str] = (),
    identity: Callable[[RunFolder], dict] | None = None,
    trained_at: RunLayout | None = None,
    settings: dict | None = None,
    weights: bool = False,
) -> dict:
    """Train the run (or keep it, with `reuse`) and write `measure(RunFolder)`'s record, each
    of `needed` (field -> a function of a `RunFolder` with the run's untrained weights) and each
    of `optional` (field -> a function of the trained run's `RunFolder`), or read back the
    measurements taken from the same command (with `reuse`). Kept measurements without a field
    of `needed` (taken before it existed) get it, every other field kept: from the run folder
    where it is finished (its `UNTRAINED` snapshot, or the weights rebuilt from its seed where it
    has none), else (the run folder is gone: a fresh machine, a run root rebuilt from the
    committed files) from the weights rebuilt from its seed, without training it again. Without
    `complete` they are read back as they are, the fields they lack left out. Kept measurements
    without a field of `optional` named in `add` get it from the run folder, or, where it is
    gone, by training the run again from its command (`same_model`: `identity` of the new run
    must equal the kept fields it returns); merging, they stop the reproduction naming the run.

    With `weights` (something trained later starts from the run's weights: paper 1's section-5
    retrains), kept measurements whose run folder is gone are not enough: the run is trained
    again from its command and `same_model` checks it is the model they were taken from.

    `trained_at` is the run folder the fit trains into where it is not `layout`'s (another
    study's run of the same command, reused: the atlas reads the papers' runs); its own
    `measurements.json` is kept there, the record written at `layout`. `settings` (JSON: the
    study's scale) are what the measurement reads besides the command: a measurement cut short
    goes on from its kept parts only under the same ones (`MeasurementParts`)."""
    needed, optional = needed or {}, optional or {}
    trained_at = trained_at or layout
    kept = kept_record(layout, arguments, sitting, list(needed) if complete else ())
    missing = missing_fields(kept, list(needed)) if complete else []
    added = missing_fields(kept, [name for name in add if name in optional])
    folder = finished(trained_at.path, fit_command(arguments))
    if kept is not None and not missing and not added and (folder or not weights):
        return kept
    if added and sitting.merged:
        raise not_merged_with(layout, added, sitting)
    record = None if kept is None else {k: v for k, v in kept.items() if k not in BOOKKEEPING}
    if kept is not None and not added and not folder and not weights:
        with initial_weights(trained_at, arguments, sitting.root) as run:
            record |= {name: needed[name](run) for name in missing}
        return {**write_measurements(layout, record, sitting.schema, kept["trained"]), "kept": True}
    if sitting.cannot_train:
        raise SittingError(f"{layout.path} needs training, but {sitting.cannot_train}")
    own = kept is not None or trained_at != layout  # another study's record stays in its run
    trained = fit(trained_at.path, arguments, sitting.reuse, keep_measurements=own)
    torch.set_num_threads(1)  # two runs are measured at a time, beside the fits
    run = RunFolder(trained_at.path)
    command = portable(arguments, sitting.root)
    parts = MeasurementParts(layout, command, trained_at, settings)
    if kept is None:
        record = {"command": command, **parts.take(MEASURE, lambda: measure(run))}
        missing, added = list(needed), list(optional)
    elif trained or (added and identity is not None):  # trained again or gaining fields: the same?
        again = identity(run) if identity is not None else None
        checked_again(layout, trained_at, record, again, kept, sitting.schema)
        if not missing and not added:  # trained again for its weights alone: measured as kept
            return kept
    if untaken := [name for name in missing if name not in parts]:
        with untrained_weights(trained_at, arguments, sitting.root) as untrained:
            for name in untaken:
                parts.take(name, functools.partial(needed[name], untrained))
    record |= {name: parts.parts[name] for name in missing}
    record |= {name: parts.take(name, functools.partial(optional[name], run)) for name in added}
    kept_trained = fit_time(trained_at) if kept is None else kept["trained"]
    written = write_measurements(layout, record, sitting.schema, kept_trained)
    parts.done()
    return {**written, "kept": not trained}


def checked_again(layout: RunLayout, trained_at: RunLayout, record: dict, again: dict | None,
                  kept: dict, schema: Schema) -> None:  # fmt: skip
    """`same_model`, and a run that fails it left unfinished (its `command.txt` removed): a
    resumed fit ends it again, and no later invocation reads it as the measured model."""
    try:
        same_model(layout, record, again, kept, schema)
    except SittingError:
        trained_at.command.unlink(missing_ok=True)
        raise


def same_model(layout: RunLayout, record: dict, again: dict | None, kept: dict,
               schema: Schema) -> None:  # fmt: skip
    """The run trained again (or kept, and about to gain fields) is the one measured before:
    `again` (what `measured`'s `identity` reads of the run, e.g. its test accuracies and selected
    checkpoints) equals the same fields of the kept `record`; else (or, trained again, without an
    `identity`) a `SittingError` naming the run, its kept measurements written as they were, the
    run left in its folder (at the kept version of `schema`)."""
    before = {key: record.get(key) for key in again or {}}
    if again is not None and again == before:
        return
    write_measurements(layout, record, Schema(schema.version_of(kept)), kept["trained"])
    if again is None:
        raise SittingError(
            f"{layout.path} was trained again without a way to check it is the model its "
            "measurements were taken from: pass `measured` an `identity`"
        )
    differing = "; ".join(f"{name} {new} against {old}" for name, new, old in
                          differences(again, before)[:3])  # fmt: skip
    raise SittingError(
        f"{layout.path} trained again is not the model its measurements were taken from "
        f"({differing}): nothing is measured on it or started from it. The same "
        "command and seed train the same model only where the arithmetic is the same (the same "
        "kind of processor and thread count); compare its train.log with the first fit's, or "
        "move its measurements.json aside to measure the model trained here instead"
    )


def differences(new: object, old: object, name: str = "") -> list[tuple[str, object, object]]:
    """Where the JSON values `new` and `old` differ: each differing leaf's dotted name and its two
    values (a whole value where their shapes differ)."""
    if isinstance(new, dict) and isinstance(old, dict):
        return [found for key in {**old, **new} for found in
                differences(new.get(key), old.get(key), f"{name}.{key}".lstrip("."))]  # fmt: skip
    return [] if new == old else [(name, new, old)]


SCRATCH_FIT = (
    "--trainer.max_epochs", "1", "--trainer.max_steps", "1", "--trainer.limit_train_batches", "2",
    "--trainer.val_check_interval", "1", "--trainer.limit_val_batches", "2",
    "--trainer.limit_test_batches", "2",
)  # fmt: skip
"""What `initial_weights` adds to a run's fit arguments (the last value given wins): one
training step, validated after it (a step count: paper 1's configs validate by steps), two
validation and two test batches. The weights are saved before the first update; the rest only
writes the checkpoint whose settings rebuild the model and DataModule. No limit is 1: the CLI
would read every batch (`experiments.cli.check_batch_limits` refuses it)."""


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
