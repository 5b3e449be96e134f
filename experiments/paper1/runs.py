"""Paper 1's runs: the models of Tables 5-6 and the retrains of section 5, each fit through the
suite's CLI (`python -m experiments fit ...`), and the test accuracies read from them."""

from __future__ import annotations

import functools
from pathlib import Path

from experiments.paper1.ablations import Substitution, pruned_accuracy, retrain_pruned
from experiments.paper1.scales import (
    ABBREVIATION,
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
from experiments.runner import fit, run_all
from probes.interventions import split_accuracy
from storage.run_folder import RunFolder


def test_accuracies(run: Path, selection: str = "best") -> dict[str, float]:
    """Sequence accuracy per test split of the checkpoint `selection` picked: `best` (tested by
    the fit, from `metrics.csv`) or `lowest_loss` (evaluated here)."""
    folder = RunFolder(run)
    if selection == "best":
        return {split: folder.test_accuracy(split) for split in SPLITS}
    model, data = folder.model(selection), folder.datamodule(selection)
    return {split: split_accuracy(model, data, split) for split in SPLITS}


def train(variant: str, seed: int, scale: Scale, root: Path, reuse: bool) -> Path:
    """One model of Tables 5-6 through the CLI; returns its run folder."""
    run = run_dir(root, variant, seed)
    arguments = [
        "--config", str(CONFIGS / f"{variant}.yaml"),
        *scale.data,
        "--seed_everything", str(seed),
        "--run.root", str(root),
        "--trainer.enable_progress_bar", "false",
        *scale.epochs(scale.train_epochs),
        *scale.overrides,
    ]  # fmt: skip
    fit(run, arguments, reuse)
    return run


def train_all(scale: Scale, root: Path, jobs: int, reuse: bool) -> dict[str, dict]:
    """Every variant and seed, the second readings' too, `jobs` at a time; their test
    accuracies by selection (`SELECTIONS`), then variant, in seed order."""
    seeds = {variant: SEEDS for variant in (*VARIANTS, *FOOTNOTE1)} | SECOND_READINGS
    tasks = {
        (variant, seed): functools.partial(train, variant, seed, scale, root, reuse)
        for variant, variant_seeds in seeds.items()
        for seed in variant_seeds
    }

    def describe(key, run):
        scores = " ".join(f"{ABBREVIATION[s]} {test_accuracies(run)[s]:.2f}" for s in SPLITS)
        return f"{key[0]} seed={key[1]}: {scores}"

    runs = run_all(tasks, jobs, describe)
    return {
        selection: {v: [test_accuracies(runs[(v, s)], selection) for s in seeds[v]] for v in seeds}
        for selection in SELECTIONS
    }


def ablations(scale: Scale, root: Path, jobs: int, reuse: bool) -> dict:
    """Section 5: every substitution of `scale` and the pruning retrains, `jobs` at a time.

    Returns new-composition accuracies: `substitution[(receiver, component)]` per pair seed,
    and `pruning` with `before`/`after` retraining per guided seed and the units kept."""
    trained = functools.partial(run_dir, root)
    base = [*scale.data, *scale.epochs(scale.substitution_epochs), *scale.overrides]
    tasks = {}
    for receiver in VARIANTS:
        for component in scale.components:
            for seed in SEEDS[: scale.pairs]:
                job = Substitution(receiver, component, seed)
                tasks[job] = functools.partial(job.run, root, base, CONFIGS, trained, reuse)
    pruning_base = [*scale.data, *scale.epochs(scale.pruning_epochs), *scale.overrides]
    for seed in SEEDS:
        tasks[("pruned", seed)] = functools.partial(
            retrain_pruned, root, seed, pruning_base, CONFIGS, trained, reuse
        )

    def describe(key, run):
        accuracy = RunFolder(run).test_accuracy("new_compositions")
        return f"{run.parent.relative_to(root / 'paper1')} {run.name}: NC {accuracy:.2f}"

    runs = run_all(tasks, jobs, describe)
    substitution: dict[tuple[str, str], list[float]] = {}
    best_epochs: dict[tuple[str, str], list[int]] = {}  # 1-based epoch of each best checkpoint
    for key, run in runs.items():
        if isinstance(key, Substitution):
            folder = RunFolder(run)
            accuracy = folder.test_accuracy("new_compositions")
            substitution.setdefault((key.receiver, key.component), []).append(accuracy)
            best = folder.checkpoint("best")["epoch"] + 1
            best_epochs.setdefault((key.receiver, key.component), []).append(best)
    pruning = {"before": [], "after": [], "kept": []}
    for seed in SEEDS:
        before, kept = pruned_accuracy(run_dir(root, "guided", seed), "new_compositions")
        pruning["before"].append(before)
        pruning["after"].append(RunFolder(runs[("pruned", seed)]).test_accuracy("new_compositions"))
        pruning["kept"].append(kept)
    return {"substitution": substitution, "best_epochs": best_epochs, "pruning": pruning,
            "runs": list(runs.values())}  # fmt: skip
