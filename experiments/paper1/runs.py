"""Paper 1's runs: the models of Tables 5-6 and the retrains of section 5, each fit through the
suite's CLI (`python -m experiments fit ...`) and then measured once into its own small file,
`<run>/measurements.json`, from which the report is built.

A model's measurements (no weights) are everything the report reads of it: the command that
trained it (without the run root, so a copy elsewhere is the same run), its test accuracies under
both checkpoint selections and where each selected checkpoint lies, its validation curve and,
for the baseline and guided GRUs, sections 3-4's analysis with the data of Figures 1-3, and the
same analysis of their untrained weights (`untrained_analysis`: the `epoch=init` snapshot, issue
29's null model). A retrain's are its new-composition accuracy and best epoch (and, pruned, the
accuracy before it and the units kept). With `--reuse-runs` a run whose measurements were taken
from the same command is never trained or measured again, so the report can be rebuilt from the
measurement files alone (`reports/paper1/runs/`); measurements from before the untrained
analysis get it from their run folder, the run kept, or, where that folder is gone, from the
weights the same command starts from, rebuilt by a one-epoch fit in a scratch folder: the seed
fixes them, so nothing is trained again (`measured`, `initial_weights`). The measurements added
after the runs were first measured (`scales.OPTIONAL`: footnote 5's SHAP groups of every GRU and
LSTM, the LSTMs' analyses for footnote 1, each trained and untrained) are measured on a kept run
only when asked (`--add-measurements`, `Scale.added`): from its run folder, or by training it
again from its command where the folder is gone (bit for bit: its test accuracies must come out
as kept, `same_model`); without them the report says which claims are not measured.
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from experiments.paper1.ablations import Substitution, pruning_arguments, pruning_of
from experiments.paper1.analyses import analyse_run
from experiments.paper1.scales import (
    ABBREVIATION,
    ANALYSED,
    CONFIGS,
    FOOTNOTE1,
    SECOND_READINGS,
    SEEDS,
    SELECTIONS,
    SPLITS,
    VARIANTS,
    Scale,
    run_dir,
)
from experiments.paper1.shapley import SAMPLE_SEEDS, footnote5_of
from experiments.runner import (
    Sitting,
    SittingError,
    finished,
    fit,
    fit_command,
    portable,
    run_all,
    write_measurements,
)
from probes.interventions import split_accuracy
from storage import RunLayout
from storage.layout import UNTRAINED
from storage.run_folder import RunFolder

MODEL_SEEDS = {variant: SEEDS for variant in (*VARIANTS, *FOOTNOTE1)} | SECOND_READINGS
"""Every trained model: the variant's seeds."""


def test_accuracies(run: RunFolder, selection: str = ANALYSED) -> dict[str, float]:
    """Sequence accuracy per test split of the checkpoint `selection` picked: `best` (tested by
    the fit, from `metrics.csv`) or `lowest_loss` (evaluated here)."""
    if selection == "best":
        return {split: run.test_accuracy(split) for split in SPLITS}
    model, data = run.model(selection), run.datamodule(selection)
    return {split: split_accuracy(model, data, split) for split in SPLITS}


def new_compositions(run: RunFolder, selection: str) -> float:
    """A retrain's new-composition sequence accuracy at the checkpoint `selection` picked."""
    if selection == "best":
        return run.test_accuracy("new_compositions")
    return split_accuracy(run.model(selection), run.datamodule(selection), "new_compositions")


def model_arguments(variant: str, seed: int, scale: Scale, root: Path) -> list[str]:
    """The `python -m experiments fit` arguments of one model of Tables 5-6."""
    return [
        "--config", str(CONFIGS / f"{variant}.yaml"),
        *scale.data,
        "--seed_everything", str(seed),
        "--run.root", str(root),
        "--trainer.enable_progress_bar", "false",
        *scale.epochs(scale.train_epochs),
        *scale.overrides,
    ]  # fmt: skip


def validation_curve(run: RunFolder) -> dict[str, list[float]]:
    """Each validation's training step, sequence accuracy and loss."""
    metrics = run.metrics().dropna(subset=["val/seq_acc"])
    return {"step": metrics["step"].astype(int).tolist(),
            "seq_acc": metrics["val/seq_acc"].tolist(),
            "loss": metrics["val/loss"].tolist()}  # fmt: skip


BOOKKEEPING = ("kept", "trained", "measured")
"""The fields of a measurements record that say when, not what (`write_measurements`, `kept`)."""


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


def missing_fields(record: dict | None, needed: Sequence[str]) -> list[str]:
    """The fields of `needed` that the kept `record` lacks or holds as None (the LSTMs' analysis
    before footnote 1's was measured); none without a record."""
    return [] if record is None else [name for name in needed if record.get(name) is None]


Field = Callable[[RunFolder], object]
"""A field of a run's measurements, measured from its run folder."""


def measured(layout: RunLayout, arguments: list[str], sitting: Sitting, measure: Field,
             needed: dict[str, Field] | None = None,
             optional: dict[str, tuple[str, Field]] | None = None,
             added: Sequence[str] = ()) -> dict:  # fmt: skip
    """Train the run (or keep it, with `reuse`) and write `measure(RunFolder)`'s record and each
    of `needed` and `optional` (field -> `measure(RunFolder)`; `optional`: field -> (group,
    measure)), or read back the measurements taken from the same command (with `reuse`).

    Kept measurements without a field of `needed` (taken before it existed) get it from the run
    folder, every other field kept: the run is not trained again where it is finished (`fit`
    with `reuse`); where its folder is gone, from the weights its command starts from
    (`initial_weights`: the fields of `needed` read only those). Kept measurements without a
    field of `optional` get it only when its group is in `added`: from the run folder, or, where
    it is gone, by training the run again from its command (its seed fixes it bit for bit; its
    test accuracies must come out as kept, `same_model`)."""
    needed = needed or {}
    asked = {name: field for name, (group, field) in (optional or {}).items() if group in added}
    kept = kept_record(layout, arguments, sitting, list(needed))
    missing = missing_fields(kept, list(needed))
    missing_asked = missing_fields(kept, list(asked))
    if kept is not None and not missing and not missing_asked:
        return kept
    if missing_asked and sitting.merged:
        raise SittingError(
            f"{layout.path.relative_to(sitting.root)} was measured without "
            f"{', '.join(missing_asked)}: add them where it was trained (--reuse-runs "
            "--add-measurements) and merge again, or merge without --add-measurements"
        )
    record = None if kept is None else {k: v for k, v in kept.items() if k not in BOOKKEEPING}
    if kept is not None and not missing_asked and not finished(layout.path, fit_command(arguments)):
        # The run folder is gone (a fresh machine, a run root rebuilt from the committed
        # files): the fields of `needed` read only the weights before training, which the
        # command's seed fixes, so they are measured on those rather than training it again.
        with initial_weights(layout, arguments, sitting.root) as run:
            record |= {name: needed[name](run) for name in missing}
        return {**write_measurements(layout, record, kept["trained"]), "kept": True}
    try:
        trained = fit(layout.path, arguments, sitting.reuse)
    except BaseException:
        if kept is not None:  # training again removed the folder: its measurements stay
            write_measurements(layout, record, kept["trained"])
        raise
    torch.set_num_threads(1)  # two runs are measured at a time, beside the fits
    run = RunFolder(layout.path)
    if kept is None:
        fields = {**needed, **{name: field for name, (_, field) in (optional or {}).items()}}
        record = {"command": portable(arguments, sitting.root), **measure(run),
                  **{name: field(run) for name, field in fields.items()}}  # fmt: skip
        return {**write_measurements(layout, record), "kept": not trained}
    if trained:
        same_model(layout, run, record)
    record |= {name: needed[name](run) for name in missing}
    record |= {name: asked[name](run) for name in missing_asked}
    return {**write_measurements(layout, record, kept["trained"]), "kept": not trained}


def same_model(layout: RunLayout, run: RunFolder, kept: dict) -> None:
    """The run trained again is the one measured before: the same test accuracies under both
    selections and the same selected checkpoints; else a `SittingError` naming the run (its
    kept measurements are written back, the new run left in its folder)."""
    again = {
        "selections": {s: test_accuracies(run, s) for s in SELECTIONS},
        "checkpoints": {s: {"epoch": run.checkpoint(s)["epoch"],
                            "step": run.checkpoint(s)["global_step"]} for s in SELECTIONS},
    }  # fmt: skip
    if all(again[key] == kept[key] for key in again):
        return
    write_measurements(layout, kept, kept["trained"])
    raise SittingError(
        f"{layout.path} trained again is not the model its measurements were taken from (test "
        f"accuracies {again['selections']} against {kept['selections']}): its new fields are "
        "not added; compare its train.log with the first fit's"
    )


@contextlib.contextmanager
def initial_weights(layout: RunLayout, arguments: list[str], root: Path):
    """The run `layout` of the fit `arguments` (`python -m experiments fit`, run root `root`)
    trained for one epoch in a temporary run root under `root`, removed afterwards: its
    `UNTRAINED` weights are those the same command starts from (the seed fixes them;
    `tests/test_paper1_smoke.py` checks it), its last checkpoint gives their model and DataModule
    settings. Yields its `RunFolder`."""
    with tempfile.TemporaryDirectory(dir=root, prefix=".initial-weights-") as scratch:
        at = arguments.index("--run.root") + 1
        one_epoch = [*arguments[:at], scratch, *arguments[at + 1 :], "--trainer.max_epochs", "1"]
        run = Path(scratch) / layout.path.relative_to(root)
        try:
            fit(run, one_epoch)  # the last --trainer.max_epochs given wins
        except RuntimeError as error:
            log = RunLayout(run).train_log.read_text().splitlines()[-20:]
            raise RuntimeError(f"{error}; its log ended:\n" + "\n".join(log)) from None
        yield RunFolder(run)


def analysis_of(run: RunFolder, seed: int, tag: str = ANALYSED) -> dict:
    """Sections 3-4's analysis of a baseline or guided GRU at `tag` (its `ANALYSED` checkpoint,
    or `UNTRAINED`: its weights before training); Figure 2's edges (thousands a matrix) are kept
    for the first seed only, the one the figure draws."""
    analysis = analyse_run(run.path, tag)
    if seed != SEEDS[0]:
        del analysis["figures"]["edges"]
    return analysis


def untrained_fields(variant: str, seed: int) -> dict:
    """What a model's measurements hold of its untrained weights (issue 29's null model), by
    field: the analysis of `UNTRAINED` for the analysed GRUs (`VARIANTS`), nothing for the
    rest (their claims are accuracies, not analyses)."""
    if variant not in VARIANTS:
        return {}
    return {"untrained_analysis": lambda run: analysis_of(run, seed, UNTRAINED)}


def optional_fields(variant: str, seed: int, scale: Scale) -> dict[str, tuple[str, Field]]:
    """The measurements of `OPTIONAL` a model has, field -> (group, measure): footnote 5's SHAP
    groups of every GRU and LSTM of Tables 5-6, trained (two sample seeds) and untrained (one),
    and the LSTMs' analyses of sections 3-4, trained and untrained (footnote 1)."""
    if variant not in (*VARIANTS, *FOOTNOTE1):
        return {}

    def shap(tag: str, seeds: Sequence[int]) -> Field:
        return lambda run: footnote5_of(run, tag, scale.shap_rows, scale.shap_samples, seeds)

    fields = {
        "footnote5": ("footnote5", shap(ANALYSED, SAMPLE_SEEDS)),
        "untrained_footnote5": ("footnote5", shap(UNTRAINED, SAMPLE_SEEDS[:1])),
    }
    if variant in FOOTNOTE1:
        fields["analysis"] = ("footnote1", lambda run: analysis_of(run, seed))
        fields["untrained_analysis"] = ("footnote1", lambda run: analysis_of(run, seed, UNTRAINED))
    return fields


def measure_model(variant: str, seed: int, scale: Scale, sitting: Sitting) -> dict:
    """One model of Tables 5-6, trained and measured (the GRUs of Tables 5-6 also analysed,
    trained and untrained)."""

    def measure(run: RunFolder) -> dict:
        return {
            "variant": variant,
            "seed": seed,
            "data_dir": run.datamodule().data_dir,
            "selections": {s: test_accuracies(run, s) for s in SELECTIONS},
            "checkpoints": {s: {"epoch": run.checkpoint(s)["epoch"],
                                "step": run.checkpoint(s)["global_step"]} for s in SELECTIONS},
            "curve": validation_curve(run),
            "analysis": analysis_of(run, seed) if variant in VARIANTS else None,
            "pruning": pruning_of(run, tag=ANALYSED) if variant == "guided" else None,
        }  # fmt: skip

    layout = RunLayout.of(sitting.root, "paper1", variant, seed)
    arguments = model_arguments(variant, seed, scale, sitting.root)
    return measured(layout, arguments, sitting, measure, untrained_fields(variant, seed),
                    optional_fields(variant, seed, scale), scale.added)  # fmt: skip


def measure_all(scale: Scale, sitting: Sitting) -> dict[tuple, dict]:
    """Every model of `MODEL_SEEDS` (of the sitting's shard: its seeds), `jobs` at a time, each
    analysed as soon as it is trained."""
    keys = [(variant, seed) for variant, seeds in MODEL_SEEDS.items() for seed in seeds
            if sitting.shard.keeps(seed, SEEDS)]  # fmt: skip
    tasks = {key: functools.partial(measure_model, *key, scale, sitting) for key in keys}

    def done_before(key) -> bool:
        arguments = model_arguments(*key, scale, sitting.root)
        needed = list(untrained_fields(*key))
        needed += [name for name, (group, _) in optional_fields(*key, scale).items()
                   if group in scale.added]  # fmt: skip
        kept = kept_record(RunLayout.of(sitting.root, "paper1", *key), arguments, sitting, [])
        return kept is not None and not missing_fields(kept, needed)

    def describe(key, record):
        scores = record["selections"][ANALYSED]
        return f"{key[0]} seed={key[1]}: " + " ".join(
            f"{ABBREVIATION[s]} {scores[s]:.2f}" for s in SPLITS
        )

    return run_all(tasks, sitting.jobs, describe, done_before)


def substitution_arguments(job: Substitution, base: list[str], root: Path) -> list[str]:
    return job.arguments(root, base, CONFIGS, functools.partial(run_dir, root))


def measure_substitution(job: Substitution, base: list[str], sitting: Sitting) -> dict:
    """Section 5.1: one substitution retrain, measured."""
    arguments = substitution_arguments(job, base, sitting.root)

    def measure(run: RunFolder) -> dict:
        by = {s: new_compositions(run, s) for s in SELECTIONS}
        return {"variant": job.variant, "seed": job.seed, "receiver": job.receiver,
                "component": job.component, "new_compositions": by[ANALYSED],
                "new_compositions_by": by,
                "best_epoch": run.checkpoint(ANALYSED)["epoch"] + 1}  # fmt: skip

    layout = RunLayout.of(sitting.root, "paper1", job.variant, job.seed)
    return measured(layout, arguments, sitting, measure)


def pruned_arguments(seed: int, pruning: dict, base: list[str], root: Path) -> list[str]:
    source = run_dir(root, "guided", seed)
    return pruning_arguments(root, seed, base, CONFIGS, source, pruning["removed"], ANALYSED)


def measure_pruned(seed: int, pruning: dict, base: list[str], sitting: Sitting) -> dict:
    """Section 5.2: the guided model of `seed` pruned as its measurements say (`pruning`: the
    units kept and removed, the accuracy before retraining), and retrained."""
    arguments = pruned_arguments(seed, pruning, base, sitting.root)

    def measure(run: RunFolder) -> dict:
        by = {s: new_compositions(run, s) for s in SELECTIONS}
        return {"variant": "pruned/guided", "seed": seed, "before": pruning["before"],
                "kept_units": pruning["kept"], "after": by[ANALYSED],
                "after_by": by}  # fmt: skip

    layout = RunLayout.of(sitting.root, "paper1", "pruned/guided", seed)
    return measured(layout, arguments, sitting, measure)


def ablations(scale: Scale, models: dict[tuple, dict], sitting: Sitting) -> dict[tuple, dict]:
    """Section 5: every substitution of `scale` and the pruning retrains of the measured
    `models` (of the sitting's shard: its seeds), `jobs` at a time; their measurements by
    `(variant, seed)`."""
    base = [*scale.data, *scale.epochs(scale.substitution_epochs), *scale.overrides]
    pruning_base = [*scale.data, *scale.epochs(scale.pruning_epochs), *scale.overrides]
    ours = [seed for seed in SEEDS if sitting.shard.keeps(seed, SEEDS)]
    arguments, tasks = {}, {}
    for receiver in VARIANTS:
        for component in scale.components:
            for seed in (s for s in SEEDS[: scale.pairs] if s in ours):
                job = Substitution(receiver, component, seed, ANALYSED)
                arguments[(job.variant, seed)] = substitution_arguments(job, base, sitting.root)
                tasks[(job.variant, seed)] = functools.partial(
                    measure_substitution, job, base, sitting
                )
    for seed in ours:
        pruning = models[("guided", seed)]["pruning"]
        arguments[("pruned/guided", seed)] = pruned_arguments(
            seed, pruning, pruning_base, sitting.root
        )
        tasks[("pruned/guided", seed)] = functools.partial(
            measure_pruned, seed, pruning, pruning_base, sitting
        )

    def describe(key, record):
        accuracy = record.get("new_compositions", record.get("after"))
        return f"{key[0]} seed={key[1]}: NC {accuracy:.2f}"

    def done_before(key) -> bool:
        layout = RunLayout.of(sitting.root, "paper1", *key)
        return sitting.kept(layout, arguments[key]) is not None

    return run_all(tasks, sitting.jobs, describe, done_before)
