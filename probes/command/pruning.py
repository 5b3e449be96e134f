"""The `pruning` probe: paper 1's pruning of the weakest units (section 5.2), running
`probes.interventions.pruned_units` and `split_accuracy` as `experiments/paper1/ablations.py`'s
`pruned_accuracy` does."""

from __future__ import annotations

from dataclasses import dataclass

from lightning_modules.recurrent import removal_edits
from probes.command.base import (
    PAPER1_TEST_SPLITS,
    ModelProbe,
    grouped,
    option,
    run_labels,
    units_text,
)
from probes.command.outputs import SMALLEST_POINTS, legend_beside, pyplot, save_figure
from probes.interventions import KEEP_SHARE, PRUNED_MODULES, pruned_units, split_accuracy
from storage.files import RunFileError
from storage.run_folder import RunFolder


@dataclass(frozen=True)
class PruningOptions:
    share: float = option(
        KEEP_SHARE,
        "share of each pruned layer's units kept: the ceil(share * units) with the strongest "
        "connections (summed |weight| in and out, probes.weights.unit_strength); 1 keeps every "
        "unit, 0 none (section 5.2 keeps 0.05)",
    )
    splits: list = option(PAPER1_TEST_SPLITS, "splits of the run's DataModule tested")
    modules: list = option(list(PRUNED_MODULES), "recurrent layers pruned, each to its own "
                           "strongest share (encoder, decoder)")  # fmt: skip


class PruningProbe(ModelProbe):
    """Paper 1's pruning without retraining, on the checkpoints of GRU seq2seq runs (the
    `ModelProbe` tags: the pruning ranks the trained model's units)."""

    details = (
        "Every unit of each pruned GRU layer but the SHARE with the strongest connections is "
        "held at zero at every step (removed from the network) and the model is tested, "
        "without retraining, with greedy decoding (paper 1: 5% of 512 units = 26 kept, 12.4% "
        "new-composition accuracy). One row per run, checkpoint and split: sequence accuracy "
        "unpruned and pruned, and the units kept (indexed from 0)."
    )
    options = PruningOptions

    def validate(self, options) -> None:
        if not 0 <= options.share <= 1:
            raise ValueError(f"--share {options.share} is not between 0 and 1")
        unknown = sorted(set(options.modules) - set(PRUNED_MODULES))
        if unknown or not options.modules:
            raise ValueError(
                f"--modules {' '.join(options.modules)}: give one or both of "
                f"{', '.join(PRUNED_MODULES)}"
            )
        if not options.splits:
            raise ValueError("--splits needs at least one split")

    def check(self, run: RunFolder, tag: str, options) -> None:
        super().check(run, tag, options)
        settings = run.checkpoint(tag)["hyper_parameters"]
        if settings.get("cell", "gru") != "gru" or settings.get("bidirectional", False):
            raise RunFileError(
                f"{self.reads(run, tag, options)[0]} is a {settings.get('cell')} seq2seq"
                f"{' (bidirectional)' if settings.get('bidirectional') else ''}: {self.name} "
                "ranks the units of unidirectional GRU layers; give --runs of such a model."
            )

    def rows(self, run, tag, options, device) -> list[dict]:
        kept, removed = pruned_units(run.state_dict(tag), options.share, options.modules)
        model = run.model(tag).to(device)
        data = run.datamodule(tag)
        rows = []
        for split in options.splits:
            try:
                accuracy = split_accuracy(model, data, split)
            except (KeyError, ValueError) as error:
                raise RunFileError(
                    f"the run's DataModule has no split {split!r} ({error}); name its test "
                    "splits with --splits."
                ) from None
            pruned = split_accuracy(model, data, split, removal_edits(removed))
            row = {"split": split, "share": options.share, "accuracy": accuracy,
                   "pruned_accuracy": pruned}  # fmt: skip
            for site, units in kept.items():
                module = site.split(".")[0]
                row[f"{module}_kept"] = len(units)
                row[f"{module}_units"] = units_text(units)
            rows.append(row)
        return rows

    def summary_table(self, table):
        kept = {c: (c, "mean") for c in table.columns if c.endswith("_kept")}
        return grouped(table, ["split"], {
            "runs": ("run", "count"), "accuracy": ("accuracy", "mean"),
            "pruned_accuracy": ("pruned_accuracy", "mean"), **kept,
        })  # fmt: skip

    def figures(self, table, options, folder):
        plt = pyplot()

        summary = self.summary_table(table)
        names = run_labels(summary)
        figure, axis = plt.subplots(figsize=(max(6, 1.8 * len(options.splits)), 4))
        width = 0.8 / (2 * len(names))
        for index, name in enumerate(names):
            part = summary[summary["group"] + " " + summary["checkpoint"] == name]
            positions = [options.splits.index(s) for s in part["split"]]
            for offset, column, hatch in ((0, "accuracy", ""), (1, "pruned_accuracy", "//")):
                axis.bar([p + (2 * index + offset) * width for p in positions], part[column],
                         width, color=f"C{index % 10}", hatch=hatch,
                         label=f"{name}, {'pruned' if offset else 'unpruned'}")  # fmt: skip
        ticks = [s.replace("_", "\n") for s in options.splits]
        axis.set_xticks([i + 0.4 - width / 2 for i in range(len(options.splits))], ticks,
                        fontsize=SMALLEST_POINTS)  # fmt: skip
        axis.set_ylabel("sequence accuracy (mean over runs)")
        axis.set_title(f"Keeping the strongest {options.share:.0%} of units (hatched)", fontsize=9)
        legend_beside(axis)
        return {"accuracy": save_figure(figure, folder / "pruning_accuracy.png")}
