"""Paper 1's runs: the models of Tables 5-6 and the retrains of section 5, each fit through the
suite's CLI (`python -m experiments fit ...`) and then measured once into its own small file,
`<run>/measurements.json`, from which the report is built.

A model's measurements (no weights) are everything the report reads of it: the command that
trained it (without the run root, so a copy elsewhere is the same run), its test accuracies under
both checkpoint selections and where each selected checkpoint lies, its validation curve and,
for the baseline and guided GRUs, sections 3-4's analysis with the data of Figures 1-3, and the
same analysis of their untrained weights (`untrained_analysis`: the `epoch=init` snapshot, the
null model). A retrain's are its new-composition accuracy and best epoch (and, pruned, the
accuracy before it and the units kept). With `--reuse-runs` a run whose measurements were taken
from the same command is never trained or measured again, so the report can be rebuilt from the
measurement files alone (`reports/paper1/runs/`); measurements without the untrained analysis
get it from their run folder, the run kept, or, where that folder is gone, from the weights the
same command starts from, rebuilt by a one-batch fit in a scratch folder: the seed fixes them, so
nothing is trained again (`experiments.engine.measure`, shared with paper 4). The optional
measurements (`scales.OPTIONAL`: footnote 5's SHAP groups of every GRU and LSTM, the LSTMs'
analyses for footnote 1, each trained and untrained) are measured on a kept run lacking them
only when asked (`--add-measurements`, `Scale.added`): from its run folder, or by training it
again from its command where the folder is gone (bit for bit: its test accuracies must come out
as kept, `experiments.engine.measure.same_model`); without them the report says which claims are not
measured. A section-5 retrain still to run starts from its models' weights: where their folders
are gone, those models are trained again first, checked the same way (`ablations`).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from datamodules.cache import ChecksumError
from datamodules.machine_tasks import (
    SAMPLE1,
    SAMPLE1_RECORD,
    LookupData,
    lookup_data,
    sample1_as_recorded,
)
from experiments.engine.fit import finished, fit_command, left_to_compute
from experiments.engine.measure import Field, measured, measured_before
from experiments.engine.pool import run_all
from experiments.engine.sitting import Sitting, SittingError
from experiments.paper1.ablations import (
    OPPOSITE,
    PRUNED_BY_EDGES,
    PRUNING_CONTROL,
    ZEROED,
    Substitution,
    pruning_arguments,
    pruning_of,
)
from experiments.paper1.analyses import analyse_run
from experiments.paper1.readings import measure_readings
from experiments.paper1.scales import (
    ABBREVIATION,
    ANALYSED,
    CONFIGS,
    FOOTNOTE1,
    SEEDS,
    SELECTIONS,
    SPLITS,
    VARIANTS,
    Scale,
    run_dir,
)
from experiments.paper1.shapley import SAMPLE_SEEDS, footnote5_of
from probes.interventions import split_accuracy
from storage import RunLayout
from storage.layout import UNTRAINED
from storage.run_folder import RunFolder

if TYPE_CHECKING:  # a type only: a report rebuilt from measurements loads no Lightning
    from datamodules.lookup_tables import LookupTableDataModule


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


def analysis_of(run: RunFolder, seed: int, scale: Scale, tag: str = ANALYSED) -> dict:
    """Sections 3-4's analysis of a baseline or guided GRU at `tag` (its `ANALYSED` checkpoint,
    or `UNTRAINED`: its weights before training); Figure 2's edges (thousands a matrix) are kept
    for the first seed only, the one the figure draws."""
    analysis = analyse_run(run.path, tag, scale.probe_splits)
    if seed != SEEDS[0]:
        del analysis["figures"]["edges"]
    return analysis


def untrained_fields(variant: str, seed: int, scale: Scale) -> dict:
    """What a model's measurements hold of its untrained weights (the null model), by
    field: the analysis of `UNTRAINED` for the analysed GRUs (`VARIANTS`), nothing for the
    rest (their claims are accuracies, not analyses)."""
    if variant not in VARIANTS:
        return {}
    return {"untrained_analysis": lambda run: analysis_of(run, seed, scale, UNTRAINED)}


def optional_fields(variant: str, seed: int, scale: Scale) -> dict[str, tuple[str, Field]]:
    """The measurements of `OPTIONAL` a model has, field -> (group, measure): footnote 5's SHAP
    groups of every GRU and LSTM of Tables 5-6, trained (two sample seeds) and untrained (one),
    the LSTMs' analyses of sections 3-4, trained and untrained (footnote 1), and the baseline and
    guided GRUs' pre-registered readings, trained and untrained (`readings.measure_readings`),
    with the guided ones' pruning by strong edges (section 5.2's)."""
    if variant not in (*VARIANTS, *FOOTNOTE1):
        return {}

    def shap(tag: str, seeds: Sequence[int]) -> Field:
        return lambda run: footnote5_of(run, tag, scale.shap_rows, scale.shap_samples, seeds,
                                        scale.probe_splits)  # fmt: skip

    fields = {
        "footnote5": ("footnote5", shap(ANALYSED, SAMPLE_SEEDS)),
        "untrained_footnote5": ("footnote5", shap(UNTRAINED, SAMPLE_SEEDS[:1])),
    }
    if variant in VARIANTS:
        fields["readings"] = ("readings", lambda run: measure_readings(run, ANALYSED))
        fields["untrained_readings"] = ("readings", lambda run: measure_readings(run, UNTRAINED))
    if variant == "guided":  # section 5.2 with the units ranked by strong edges
        edges = functools.partial(pruning_of, tag=ANALYSED, by_edges=True)
        fields["pruning_by_edges"] = ("readings", edges)
    if variant in FOOTNOTE1:
        analysis = functools.partial(analysis_of, seed=seed, scale=scale)
        fields["analysis"] = ("footnote1", analysis)
        fields["untrained_analysis"] = ("footnote1", functools.partial(analysis, tag=UNTRAINED))
    return fields


def added_fields(variant: str, seed: int, scale: Scale) -> list[str]:
    """The fields of `optional_fields` a kept model lacking them gets (`--add-measurements`:
    their groups in `Scale.added`)."""
    return [name for name, (group, _) in optional_fields(variant, seed, scale).items()
            if group in scale.added]  # fmt: skip


def model_identity(run: RunFolder) -> dict:
    """What must come out as kept when a model whose folder is gone is trained again from its
    command (`experiments.engine.measure.same_model`): its test accuracies under both selections and
    where each selected checkpoint lies."""
    return {
        "selections": {s: test_accuracies(run, s) for s in SELECTIONS},
        "checkpoints": {s: {"epoch": run.checkpoint(s)["epoch"],
                            "step": run.checkpoint(s)["global_step"]} for s in SELECTIONS},
    }  # fmt: skip


def data_record(data: LookupTableDataModule) -> dict:
    """What a model's measurements record of the data it read: sample1's commit and checksums
    (`SAMPLE1_RECORD`), the generated tables' generator and seed, or another folder's name."""
    if data.data_dir == SAMPLE1:
        return SAMPLE1_RECORD
    if data.data_dir is None:
        return {"source": "generate_lookup_tables", "data_seed": data.data_seed}
    return {"source": data.data_dir}


def recorded_on_sample1(root: Path, runs: str = "paper1/*") -> bool:
    """Some model measured under the run root `root` (its run folders `<root>/<runs>/seed=*`)
    records sample1 as its data."""
    for path in sorted(root.glob(f"{runs}/seed=*/{RunLayout.MEASUREMENTS}")):
        try:
            if json.loads(path.read_text()).get("data") == SAMPLE1_RECORD:
                return True
        except (OSError, ValueError, AttributeError):
            continue
    return False


GENERATED = "tables generated by generate_lookup_tables(data_seed=0)"
"""How a report's `build.json` names the data read where sample1 cannot be had."""


def data_name(args: argparse.Namespace, runs: str = "paper1/*") -> str:
    """The data a reproduction of paper 1's models with these options reads, as its report's
    `build.json` names it (`Study.data_of`): sample1, also where it cannot be had but the kept
    runs it rebuilds from record it (`data_read`), else the generated tables (`GENERATED`). A
    `$RECURRENT_PROBES_SAMPLE1` folder that is not sample1 is one line (`SittingError`)."""
    reuse = bool(args.reuse_runs or args.merge)
    try:
        data = data_read((Path(args.runs), *map(Path, args.merge)), reuse, runs)
    except ChecksumError as error:
        raise SittingError(str(error)) from None
    return SAMPLE1 if data.data_dir == SAMPLE1 else GENERATED


def data_read(roots: Sequence[Path], reuse: bool, runs: str = "paper1/*") -> LookupData:
    """Paper 1's data as its reproduction reads it: sample1 where it can be had, else, with
    `reuse`, sample1 as the kept runs `<root>/<runs>` of one of `roots` record it (nothing can
    be trained on it: `LookupData.unavailable` says why), else the generated tables."""
    data = lookup_data()
    if data.unavailable and reuse and any(recorded_on_sample1(root, runs) for root in roots):
        return sample1_as_recorded(data.unavailable)
    return data


def lookup_data_of(sitting: Sitting, runs: str = "paper1/*") -> tuple[LookupData, Sitting]:
    """Paper 1's data as its reproduction reads it (`data_read`), and the sitting that trains on
    it: offline, where the kept runs `<root>/<runs>` record sample1, they are matched on that
    record and nothing can be trained."""
    data = data_read((sitting.root,), sitting.reuse, runs)
    if data.unavailable and data.data_dir == SAMPLE1:
        why = f"machine-tasks' sample1 is not available here ({data.unavailable})"
        sitting = dataclasses.replace(sitting, cannot_train=why)
    return data, sitting


def measure_model(variant: str, seed: int, scale: Scale, sitting: Sitting,
                  weights: bool = False) -> dict:  # fmt: skip
    """One model of Tables 5-6, trained and measured (the GRUs of Tables 5-6 also analysed,
    trained and untrained); with `weights`, trained again where its folder is gone
    (`experiments.engine.measure.measured`)."""

    def measure(run: RunFolder) -> dict:
        return {
            "variant": variant,
            "seed": seed,
            "data_dir": run.datamodule().data_dir,
            "data": data_record(run.datamodule()),
            **model_identity(run),
            "curve": validation_curve(run),
            "analysis": analysis_of(run, seed, scale) if variant in VARIANTS else None,
            "pruning": pruning_of(run, tag=ANALYSED) if variant == "guided" else None,
        }  # fmt: skip

    layout = RunLayout.of(sitting.root, "paper1", variant, seed)
    arguments = model_arguments(variant, seed, scale, sitting.root)
    optional = {name: field for name, (_, field) in optional_fields(variant, seed, scale).items()}
    return measured(layout, arguments, sitting, measure, untrained_fields(variant, seed, scale),
                    optional=optional, add=added_fields(variant, seed, scale),
                    identity=model_identity, settings=dataclasses.asdict(scale),
                    weights=weights)  # fmt: skip


def measure_all(scale: Scale, sitting: Sitting, keys: Sequence[tuple] | None = None,
                weights: bool = False) -> dict[tuple, dict]:  # fmt: skip
    """Every model of `scale.model_seeds` (of the sitting's shard: its seeds), or those of
    `keys`, `jobs` at a time, each analysed as soon as it is trained; with `weights`, each trained
    again, its folder being gone (`measure_model`)."""
    if keys is None:
        keys = [(variant, seed) for variant, seeds in scale.model_seeds.items()
                for seed in seeds if sitting.shard.keeps(seed, scale.seeds)]  # fmt: skip
    tasks = {key: functools.partial(measure_model, *key, scale, sitting, weights) for key in keys}

    def done_before(key) -> bool:
        return not weights and measured_before(
            RunLayout.of(sitting.root, "paper1", *key), model_arguments(*key, scale, sitting.root),
            sitting, list(untrained_fields(*key, scale)), added_fields(*key, scale),
        )  # fmt: skip

    def describe(key, record):
        scores = record["selections"][ANALYSED]
        return f"{key[0]} seed={key[1]}: " + " ".join(
            f"{ABBREVIATION[s]} {scores[s]:.2f}" for s in SPLITS
        )

    def left(key) -> str | None:
        arguments = model_arguments(*key, scale, sitting.root)
        return left_to_compute(run_dir(sitting.root, *key), arguments, sitting.reuse)

    return run_all(tasks, sitting.jobs, describe, done_before, left=left)


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


def pruned_arguments(seed: int, pruning: dict, base: list[str], root: Path,
                     variant: str = "pruned/guided") -> list[str]:  # fmt: skip
    """The fit of the guided model of `seed` with the units of `pruning` removed, or as
    `variant` `PRUNING_CONTROL` none."""
    source = run_dir(root, "guided", seed)
    removed = {} if variant == PRUNING_CONTROL else pruning["removed"]
    return pruning_arguments(root, seed, base, CONFIGS, source, removed, ANALYSED, variant,
                             zeroed=variant in ZEROED)  # fmt: skip


def measure_pruned(seed: int, pruning: dict, base: list[str], sitting: Sitting,
                   variant: str = "pruned/guided") -> dict:  # fmt: skip
    """Section 5.2: the guided model of `seed` pruned as its measurements say (`pruning`: the
    units kept and removed, the accuracy before retraining), and retrained; as `variant`
    `PRUNING_CONTROL`, retrained so with nothing removed."""
    arguments = pruned_arguments(seed, pruning, base, sitting.root, variant)

    def measure(run: RunFolder) -> dict:
        by = {s: new_compositions(run, s) for s in SELECTIONS}
        before = pruning["before"]
        if variant in ZEROED:  # measured on the retrain's start (zeroed), not assumed the mask's
            before = split_accuracy(run.model(UNTRAINED), run.datamodule(UNTRAINED),
                                    "new_compositions")  # fmt: skip
        pruned = ({} if variant == PRUNING_CONTROL else
                  {"before": before, "kept_units": pruning["kept"]})  # fmt: skip
        return {"variant": variant, "seed": seed, **pruned, "after": by[ANALYSED],
                "after_by": by}  # fmt: skip

    layout = RunLayout.of(sitting.root, "paper1", variant, seed)
    return measured(layout, arguments, sitting, measure)


def by_edges(record: dict, seed: int) -> dict:
    """The guided model's pruning with its units ranked by strong edges, from its measurements
    (`optional_fields`' `pruning_by_edges`); a SittingError naming the fix where they lack it."""
    if record.get("pruning_by_edges") is None:
        raise SittingError(
            f"--section5-controls: guided seed={seed}'s measurements lack its pruning by strong "
            "edges (measured before it existed): add --add-measurements readings"
        )
    return record["pruning_by_edges"]


def ablations(scale: Scale, models: dict[tuple, dict], sitting: Sitting) -> dict[tuple, dict]:
    """Section 5: every substitution of `scale` and the pruning retrains of the measured
    `models` (of the sitting's shard: its seeds), with `scale.controls` also their controls on
    the first `scale.pairs` seeds, `jobs` at a time; their measurements by `(variant, seed)`."""
    base = [*scale.data, *scale.epochs(scale.substitution_epochs), *scale.overrides]
    pruning_base = [*scale.data, *scale.epochs(scale.pruning_epochs), *scale.overrides]
    ours = [seed for seed in scale.seeds if sitting.shard.keeps(seed, scale.seeds)]
    arguments, tasks, sources = {}, {}, {}  # sources: the models a retrain starts from
    pool = scale.seeds[: scale.pairs]
    controls = (None,) if scale.controls else ()  # the registered control: nothing frozen
    for receiver in VARIANTS:
        for component in (*scale.components, *controls):
            for seed in (s for s in pool if s in ours):
                job = Substitution(receiver, component, seed, ANALYSED)
                arguments[(job.variant, seed)] = substitution_arguments(job, base, sitting.root)
                tasks[(job.variant, seed)] = functools.partial(
                    measure_substitution, job, base, sitting
                )
                donors = () if component is None else (OPPOSITE[receiver],)
                sources[(job.variant, seed)] = [(v, seed) for v in (receiver, *donors)]
    for seed in ours:
        record = models[("guided", seed)]
        variants = {"pruned/guided": record["pruning"]}
        if scale.controls and seed in pool:
            variants |= {PRUNING_CONTROL: record["pruning"],
                         PRUNED_BY_EDGES: by_edges(record, seed)}  # fmt: skip
            variants |= {zeroed: variants[masked] for zeroed, masked in ZEROED.items()}
        for variant, pruning in variants.items():
            arguments[(variant, seed)] = pruned_arguments(
                seed, pruning, pruning_base, sitting.root, variant
            )
            tasks[(variant, seed)] = functools.partial(
                measure_pruned, seed, pruning, pruning_base, sitting, variant
            )
            sources[(variant, seed)] = [("guided", seed)]

    def describe(key, record):
        accuracy = record.get("new_compositions", record.get("after"))
        return f"{key[0]} seed={key[1]}: NC {accuracy:.2f}"

    def done_before(key) -> bool:
        layout = RunLayout.of(sitting.root, "paper1", *key)
        return sitting.kept(layout, arguments[key]) is not None

    def left(key) -> str | None:
        return left_to_compute(run_dir(sitting.root, *key), arguments[key], sitting.reuse)

    def trained_here(model: tuple) -> bool:  # a finished run of its command, weights and all
        command = fit_command(model_arguments(*model, scale, sitting.root))
        return finished(run_dir(sitting.root, *model), command)

    gone = sorted({source for key in tasks if not done_before(key) for source in sources[key]
                   if not trained_here(source)})  # fmt: skip
    if gone:  # a run root rebuilt from measurement files: the weights are not in them
        models = ("1 model whose run folder holds no weights: it is" if len(gone) == 1 else
                  f"{len(gone)} models whose run folders hold no weights: each is")  # fmt: skip
        print(
            f"section 5's retrains start from {models} trained again from its command first, "
            "and checked to be the model its measurements were taken from",
            flush=True,
        )
        measure_all(scale, sitting, gone, weights=True)
    return run_all(tasks, sitting.jobs, describe, done_before, left=left)
