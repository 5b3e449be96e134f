"""The `interventions` probe: paper 4's stage 3 (section 3.3), Table 1 and finding 4 by editing
unit values, with size-matched random controls."""

from __future__ import annotations

from probes.command.base import grouped, run_labels, units_text
from probes.command.outputs import SMALLEST_POINTS, legend_beside, pyplot, save_figure
from probes.command.token_positioning import (
    MANIPULATED,
    InterventionsOptions,
    TokenPositioningProbe,
    reaches_the_decoder,
)
from probes.neuron_functions import DIAGNOSTICS, MANIPULATIONS, identify_neurons
from probes.neuron_manipulation import verify_neurons


class InterventionsProbe(TokenPositioningProbe):
    details = (
        "Per analysed token (rows as svm-rfe's), the storing, counting, triggering and "
        "outputting units are identified by stages 1-2 (probes.neuron_functions."
        "identify_neurons: SVM + RFE keeping KEEP, then the integrated-gradients filter) and "
        "manipulated on the token's rows with T >= 2 (verify_neurons): storing units zeroed at "
        "T-1 or replaced by their previous values (the token at T), counting units at T-1 set "
        "to their values at T-1-k (the token at T+k; counting_before_trigger_k edits T-2, a "
        "diagnostic), triggering units' T-1 values written at T-1-k (the token at T-k), and at "
        "T the outputting units zeroed or every other unit zeroed (finding 4). One row per run, "
        "checkpoint, token and manipulation: hits, rows and accuracy, and the edited function's "
        "units (indexed from 0; others_zero zeroes every unit but these); rows control.* edit "
        "as many random units that are not the function's candidates instead (CONTROL_DRAWS "
        "draws, pooled). The summary is "
        "experiments.paper4's Table 1: per run, hits / rows over all tokens, then the mean "
        "over the runs of a group."
    )
    options = InterventionsOptions
    version = 2  # 2: with the random-unit control rows

    def rows_of_token(self, model, traced, token: int, options) -> list[dict]:
        if not reaches_the_decoder(traced, token):
            return []  # nothing to filter or manipulate (experiments.paper4 would stop)
        neurons = identify_neurons(model, traced, token, options.keep, options.seed,
                                   options.ig_steps)  # fmt: skip
        verification = verify_neurons(model, traced, neurons, options.control_draws,
                                      options.seed)  # fmt: skip
        controls = [f"control.{m}" for m in MANIPULATIONS if f"control.{m}" in verification]
        rows = []
        for manipulation in MANIPULATIONS + DIAGNOSTICS + tuple(controls):
            hits, total = verification[manipulation]
            control = manipulation.startswith("control.")
            function = MANIPULATED[manipulation.removeprefix("control.")]
            rows.append({
                "manipulation": manipulation, "diagnostic": manipulation in DIAGNOSTICS,
                "control": control, "hits": hits, "rows": total,
                "accuracy": hits / total if total else None, "function": function,
                "size": len(neurons.units(function)),
                "units": "" if control else units_text(neurons.units(function)),
            })  # fmt: skip
        return rows

    def summary_table(self, table):
        per_run = table.groupby(["group", "checkpoint", "run", "manipulation"], sort=False).agg(
            hits=("hits", "sum"), rows=("rows", "sum"), tokens=("token", "count"),
        ).reset_index()  # fmt: skip
        per_run["accuracy"] = per_run["hits"] / per_run["rows"].where(per_run["rows"] > 0)
        return grouped(per_run, ["manipulation"], {
            "runs": ("run", "count"), "accuracy": ("accuracy", "mean"),
            "per_run": ("accuracy", lambda s: ", ".join(f"{v:.3f}" for v in s)),
            "rows": ("rows", "sum"), "tokens": ("tokens", "mean"),
        })  # fmt: skip

    def figures(self, table, options, folder):
        plt = pyplot()

        everything = self.summary_table(table)
        control = everything["manipulation"].str.startswith("control.")
        summary, controls = everything[~control], everything[control]
        names = list(MANIPULATIONS + DIAGNOSTICS)
        labels = run_labels(summary)
        figure, axis = plt.subplots(figsize=(13, 4))
        width = 0.8 / len(labels)
        for index, label in enumerate(labels):
            part = summary[summary["group"] + " " + summary["checkpoint"] == label]
            hatches = ["//" if m in DIAGNOSTICS else "" for m in part["manipulation"]]
            axis.bar([names.index(m) + index * width for m in part["manipulation"]],
                     part["accuracy"], width, color=f"C{index % 10}", label=label,
                     hatch=hatches)  # fmt: skip
            random = controls[controls["group"] + " " + controls["checkpoint"] == label]
            axis.scatter([names.index(m.removeprefix("control.")) + index * width
                          for m in random["manipulation"]], random["accuracy"], marker="_",
                         s=120, color="black", label="random units (control)" if not index
                         else None, zorder=3)  # fmt: skip
        ticks = [n.replace("counting_before_trigger_", "counting at\nT-2, ") for n in names]
        ticks = [n.replace("_", "\n", 1) for n in ticks]
        axis.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], ticks,
                        fontsize=SMALLEST_POINTS)  # fmt: skip
        axis.set(ylim=(0, 1), ylabel="accuracy after the manipulation (mean over runs)")
        axis.set_title("Table 1 and finding 4: the token at the expected position (hatched: "
                       "diagnostics, not in the paper)", fontsize=9)  # fmt: skip
        legend_beside(axis)
        return {"table1": save_figure(figure, folder / "interventions_table1.png")}
