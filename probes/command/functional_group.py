"""The `functional-groups` probe: paper 1's diagnostic classifiers and functional groups
(Tables 2-3) over recorded traces."""

from __future__ import annotations

from dataclasses import dataclass

from probes.command.base import (
    PAPER1_SPLITS,
    TraceProbe,
    convention_option,
    option,
    run_labels,
    units_text,
)
from probes.command.outputs import SMALLEST_POINTS, legend_beside, pyplot, save_figure
from probes.diagnostic import FUNCTIONAL_GROUP_PROCEDURES, functional_group_of
from probes.traces import site_samples, trace_keys


@dataclass(frozen=True)
class FunctionalGroupOptions:
    splits: list = option(
        PAPER1_SPLITS,
        "trace splits, probed as one set (default: every split of paper 1's lookup tables, as the "
        "co-authors' `*_all.pt` activations; paper 1's text reading used the four test sets)",
    )
    targets: list = option(
        ["encoder.hidden:batch.source_table",
         "decoder.update_gate:batch.source_table@batch.attention_target",
         "decoder.reset_gate:batch.source_table@batch.attention_target",
         "encoder.hidden:time"],
        "what to probe, SITE:LABEL[@ALIGN]: a recorded site, the trace entry [batch, time] to "
        "predict (or `time`, the step), and optionally the entry that maps each step to the step "
        "whose label it takes (the defaults are paper 1's Tables 2 and 3)",
    )  # fmt: skip
    update_gate_convention: str = convention_option()
    share: float = option(0.95, "a group reaches this share of the all-unit accuracy")
    procedure: str = option(
        "coauthors",
        "coauthors: as paper 1's co-authors' code (machine-analysis functional_groups.py): saga "
        "logistic regression with sklearn's default C=1, accuracy and coefficients averaged over "
        "REPEATS random 90/10 splits, units ranked by the first class's |mean coefficient|; text: "
        "the paper's words alone: unregularised (footnote 4), one label-stratified 2/3 split, "
        "units ranked by their summed |weight| over classes",
        choices=FUNCTIONAL_GROUP_PROCEDURES,
    )
    repeats: int = option(
        5, "coauthors: random 90/10 splits each classifier is averaged over (their num_runs=5)"
    )
    seed: int = option(0, "seed of the held-out samples (and of saga)")


def parsed_target(target: str) -> tuple[str, str, str | None]:
    site, colon, rest = target.partition(":")
    label, _, align = rest.partition("@")
    if not colon or not label:
        raise ValueError(
            f"--targets {target!r} is not SITE:LABEL[@ALIGN], e.g. encoder.hidden:time or "
            "decoder.update_gate:batch.source_table@batch.attention_target"
        )
    return site, label, align or None


class FunctionalGroupProbe(TraceProbe):
    details = (
        "A logistic regression predicts LABEL from a SITE's units at every labelled valid step "
        "(held-out accuracy = the diagnostic classifier); units are then added by decreasing "
        "absolute weight until a retrained classifier reaches SHARE of that accuracy (the "
        "functional group, after Dalvi et al. 2019), by the co-authors' procedure or the text's "
        "(--procedure). One row per run, checkpoint and target."
    )
    options = FunctionalGroupOptions
    summary_by = ["target"]
    summary_columns = {
        "runs": ("run", "count"), "accuracy_group": ("accuracy", "mean"),
        "accuracy_all": ("accuracy_all", "mean"), "size_mean": ("size", "mean"),
        "sizes": ("size", lambda s: ", ".join(str(int(v)) for v in s)),
    }  # fmt: skip

    def validate(self, options) -> None:
        for target in options.targets:
            parsed_target(target)

    def keys(self, options, recorded=()) -> list[str]:
        sites, labels = [], []
        for site, label, align in map(parsed_target, options.targets):
            sites.append(site)
            labels += [label, align] if align else [label]
        return trace_keys(sites, labels, recorded)

    def rows(self, run, tag, options, device) -> list[dict]:
        trace = self.trace(run, tag, options)
        rows = []
        for target in options.targets:
            site, label, align = parsed_target(target)
            samples = site_samples(trace, site, label, align, options.update_gate_convention)
            group = functional_group_of(*samples, options.procedure, options.repeats,
                                        options.share, options.seed)  # fmt: skip
            rows.append({
                "target": target, "site": site, "label": label, "align": align or "",
                "accuracy": group.accuracy, "accuracy_all": group.accuracy_all,
                "majority": group.majority, "size": group.size,
                "units": units_text(group.units),
            })  # fmt: skip
        return rows

    def figures(self, table, options, folder):
        plt = pyplot()
        summary = self.summary_table(table)
        figure, axis = plt.subplots(figsize=(max(6, 2.0 * len(options.targets)), 4))
        groups = run_labels(summary)
        width = 0.8 / len(groups)
        for index, name in enumerate(groups):
            part = summary[summary["group"] + " " + summary["checkpoint"] == name]
            positions = [options.targets.index(t) + index * width for t in part["target"]]
            axis.bar(positions, part["size_mean"], width, label=name)
        labels = [t.replace(":", "\n", 1).replace("@", "\n@") for t in options.targets]
        axis.set_xticks([i + 0.4 - width / 2 for i in range(len(options.targets))], labels,
                        fontsize=SMALLEST_POINTS)  # fmt: skip
        axis.set_ylabel("units in the functional group (mean over runs)")
        legend_beside(axis)
        return {"sizes": save_figure(figure, folder / "functional_group_sizes.png")}
