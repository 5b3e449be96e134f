"""The probes `python -m probes` runs, each as an adapter from a recorded run to tidy rows.

A `RunProbe` says which checkpoint tags a run offers it (`tags`), which files one result reads
(`reads`, the cache key hashes their contents), how to check those cheaply before any work
(`check`), how to compute the rows of one run and tag (`rows`), and how to summarise and draw the
table of all of them (`summary`, `figures`). The methods themselves are the suite's probe
functions; the defaults of each probe's options are the settings of the paper it comes from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch
from safetensors import SafetensorError, safe_open

from probes.activations import gate_saturation
from probes.outputs import pyplot, save_figure
from probes.runs import RunFolder, tag_order
from probes.traces import (
    CONVENTIONS,
    joined_trace,
    site_functional_group,
    site_values,
    trace_keys,
    valid_steps,
)
from probes.weights import connectivity, gate_weights
from storage.files import RunFileError

PAPER1 = "paper 1 (Baan et al. 2019)"
PAPER1_TEST_SPLITS = [
    "heldout_inputs",
    "heldout_compositions",
    "heldout_tables",
    "new_compositions",
]
PAPER1_GATES = ["encoder.update_gate", "encoder.reset_gate", "decoder.update_gate",
                "decoder.reset_gate"]  # fmt: skip


def option(default, help: str, **spec):
    """A probe option: its default, its help and, for lists, the element `type`."""
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"help": help, **spec})
    return field(default=default, metadata={"help": help, **spec})


def convention_option():
    return option("paper1", "sign convention of the update gate: torch's z, or paper 1's 1 - z "
                  "(h = (1 - z) h_prev + z h~, Baan et al. section 2.2)",
                  choices=CONVENTIONS)  # fmt: skip


class RunProbe:
    """A probe as the command runs it (see the module docstring)."""

    name: str
    paper: str
    purpose: str
    details: str = ""
    options: type
    version = 1  # bump when the rows change for the same inputs

    def validate(self, options) -> None:
        """Raise `ValueError` naming a bad option."""

    def tags(self, run: RunFolder, options) -> list[str]:
        raise NotImplementedError

    def where(self, run: RunFolder, options) -> str:
        raise NotImplementedError

    def reads(self, run: RunFolder, tag: str, options) -> list[Path]:
        raise NotImplementedError

    def check(self, run: RunFolder, tag: str, options) -> None:
        raise NotImplementedError

    def rows(self, run: RunFolder, tag: str, options, device: torch.device) -> list[dict]:
        raise NotImplementedError

    def summary_table(self, table: pd.DataFrame) -> pd.DataFrame:
        raise NotImplementedError

    def figures(self, table: pd.DataFrame, options, folder: Path) -> dict[str, Path]:
        return {}


def trained_by(run: RunFolder) -> str:
    """`", a run of <class>"` when the run's checkpoint says, else `""` (for error messages)."""
    try:
        return f", a run of {run.model_class_path()}"
    except RunFileError:
        return ""


class TraceProbe(RunProbe):
    """A probe of recorded activations: `<run>/traces/<split>/<tag>.safetensors` of `splits`."""

    def keys(self, options) -> list[str]:
        raise NotImplementedError

    def tags(self, run: RunFolder, options) -> list[str]:
        common = None
        for split in options.splits:
            if not run.files.traces(split).is_dir():
                recorded = sorted(p.name for p in run.files.traces(split).parent.glob("*"))
                raise RunFileError(
                    f"{run.path}{trained_by(run)}, has no traces of split {split!r} (it has "
                    f"{', '.join(recorded) or 'none'}): {self.name} reads traces of "
                    f"{', '.join(options.splits)}. Give runs recorded by TraceRecorder on those "
                    "splits, or name the run's splits with --splits."
                )
            tags = run.trace_tags(split)
            common = tags if common is None else [t for t in common if t in tags]
        return common or []

    def where(self, run: RunFolder, options) -> str:
        return str(run.files.traces(options.splits[0]))

    def reads(self, run: RunFolder, tag: str, options) -> list[Path]:
        return [run.trace_path(split, tag) for split in options.splits]

    def check(self, run: RunFolder, tag: str, options) -> None:
        for path in self.reads(run, tag, options):
            try:
                with safe_open(path, "pt") as handle:
                    held = set(handle.keys())
            except (SafetensorError, OSError) as error:
                raise RunFileError(
                    f"{path} is corrupt ({error}): delete it and record the run again."
                ) from None
            missing = sorted(set(self.keys(options)) - held)
            if missing:
                raise RunFileError(
                    f"{path}{trained_by(run)}, has no {', '.join(missing)} (it has "
                    f"{', '.join(sorted(held))}): probe sites it has (see --help)."
                )

    def trace(self, run: RunFolder, tag: str, options) -> dict:
        return joined_trace(run, options.splits, tag, self.keys(options))


class WeightProbe(RunProbe):
    """A probe of parameters: a checkpoint (`best`, `last`) or a `WeightSnapshot`."""

    def parameters(self, options) -> list[str]:
        raise NotImplementedError

    def tags(self, run: RunFolder, options) -> list[str]:
        return run.checkpoint_tags()

    def where(self, run: RunFolder, options) -> str:
        return str(run.path)

    def reads(self, run: RunFolder, tag: str, options) -> list[Path]:
        return [run.weights_path(tag)]

    def check(self, run: RunFolder, tag: str, options) -> None:
        state = run.state_dict(tag)
        missing = sorted(set(self.parameters(options)) - set(state))
        if missing:
            raise RunFileError(
                f"{run.weights_path(tag)}{trained_by(run)}, has no {', '.join(missing)}: "
                f"{self.name} needs a GRU seq2seq (lightning_modules.seq2seq.Seq2Seq)."
            )


class ModelProbe(RunProbe):
    """A probe that runs the trained model: a checkpoint (`best`, `last`) of one of
    `model_classes`, with the DataModule that trained it (`RunFolder.model`, `.datamodule`)."""

    model_classes: tuple[str, ...] = ("lightning_modules.seq2seq.Seq2Seq",)

    def tags(self, run: RunFolder, options) -> list[str]:
        return sorted((p.stem for p in run.files.checkpoints.glob("*.ckpt")), key=tag_order)

    def where(self, run: RunFolder, options) -> str:
        return str(run.files.checkpoints)

    def reads(self, run: RunFolder, tag: str, options) -> list[Path]:
        return [run.files.checkpoint(tag)]

    def check(self, run: RunFolder, tag: str, options) -> None:
        trained = run.model_class_path(tag)  # reads the checkpoint: a corrupt one fails here
        if trained not in self.model_classes:
            raise RunFileError(
                f"{self.reads(run, tag, options)[0]} is a run of {trained}: {self.name} probes "
                f"runs of {', '.join(self.model_classes)}; give --runs of such a model."
            )


def units_text(units) -> str:
    """Unit indices (from 0; a tensor or a list) as one space-separated table cell."""
    return " ".join(map(str, units.tolist() if hasattr(units, "tolist") else units))


def run_labels(table: pd.DataFrame) -> list[str]:
    """The figure series, `<run group> <checkpoint>`, in first-seen order."""
    return list(dict.fromkeys(table["group"] + " " + table["checkpoint"]))


def grouped(table: pd.DataFrame, by: list[str], columns: dict) -> pd.DataFrame:
    """Means (and the like) of `table` per run group, checkpoint and `by`, in first-seen order."""
    keys = ["group", "checkpoint", *by]
    summary = table.groupby(keys, sort=False).agg(**columns).reset_index()
    return summary


# ---- paper 1: functional groups (section 4.1, Tables 2-3) -------------------------------------
@dataclass(frozen=True)
class FunctionalGroupOptions:
    splits: list = option(PAPER1_TEST_SPLITS, "trace splits, probed as one set")
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
    seed: int = option(0, "seed of the held-out third of the steps")


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
    name = "functional-group"
    paper = f"{PAPER1}, section 4.1"
    purpose = "diagnostic classifiers and the functional group of units each needs"
    details = (
        "An unregularised logistic regression predicts LABEL from a SITE's units at every labelled "
        "valid step (held-out accuracy = the diagnostic classifier); units are then added by "
        "decreasing absolute weight until a retrained classifier reaches SHARE of that accuracy "
        "(the functional group, after Dalvi et al. 2019). One row per run, checkpoint and target."
    )
    options = FunctionalGroupOptions

    def validate(self, options) -> None:
        for target in options.targets:
            parsed_target(target)

    def keys(self, options) -> list[str]:
        sites, labels = [], []
        for site, label, align in map(parsed_target, options.targets):
            sites.append(site)
            labels += [label, align] if align else [label]
        return trace_keys(sites, labels)

    def rows(self, run, tag, options, device) -> list[dict]:
        trace = self.trace(run, tag, options)
        rows = []
        for target in options.targets:
            site, label, align = parsed_target(target)
            group = site_functional_group(trace, site, label, align,
                                          options.update_gate_convention, options.share,
                                          options.seed)  # fmt: skip
            rows.append({
                "target": target, "site": site, "label": label, "align": align or "",
                "accuracy": group.accuracy, "accuracy_all": group.accuracy_all,
                "majority": group.majority, "size": group.size,
                "units": units_text(group.units),
            })  # fmt: skip
        return rows

    def summary_table(self, table):
        return grouped(table, ["target"], {
            "runs": ("run", "count"), "accuracy_group": ("accuracy", "mean"),
            "accuracy_all": ("accuracy_all", "mean"), "size_mean": ("size", "mean"),
            "sizes": ("size", lambda s: ", ".join(str(int(v)) for v in s)),
        })  # fmt: skip

    def figures(self, table, options, folder):
        plt = pyplot()
        summary = self.summary_table(table)
        figure, axis = plt.subplots(figsize=(max(6, 1.6 * len(options.targets)), 4))
        groups = run_labels(summary)
        width = 0.8 / len(groups)
        for index, name in enumerate(groups):
            part = summary[summary["group"] + " " + summary["checkpoint"] == name]
            positions = [options.targets.index(t) + index * width for t in part["target"]]
            axis.bar(positions, part["size_mean"], width, label=name)
        labels = [t.replace(":", "\n", 1).replace("@", "\n@") for t in options.targets]
        axis.set_xticks([i + 0.4 - width / 2 for i in range(len(options.targets))], labels,
                        fontsize=6)  # fmt: skip
        axis.set_ylabel("units in the functional group (mean over runs)")
        axis.legend(fontsize=7)
        return {"sizes": save_figure(figure, folder / "functional_group_sizes.png")}


# ---- paper 1: gate saturation (section 4.2, Figure 4) ------------------------------------------
@dataclass(frozen=True)
class GateSaturationOptions:
    splits: list = option(PAPER1_TEST_SPLITS, "trace splits, probed as one set")
    gates: list = option(PAPER1_GATES, "recorded gate sites")
    update_gate_convention: str = convention_option()
    low: float = option(0.1, "left-saturated (closed) below this value")
    high: float = option(0.9, "right-saturated (open) above this value")
    between: float = option(0.01, "a unit is off the axes when saturated on both sides at least "
                            "this share of the steps")  # fmt: skip


class GateSaturationProbe(TraceProbe):
    name = "gate-saturation"
    paper = f"{PAPER1}, section 4.2"
    purpose = "how often each gate unit is closed (< low) or open (> high)"
    details = "After Karpathy et al. (2015). One row per run, checkpoint, gate and unit."
    options = GateSaturationOptions

    def keys(self, options) -> list[str]:
        return trace_keys(options.gates)

    def rows(self, run, tag, options, device) -> list[dict]:
        trace = self.trace(run, tag, options)
        rows = []
        for site in options.gates:
            gate = site_values(trace, site, options.update_gate_convention)
            saturation = gate_saturation(gate, valid_steps(trace, site), options.low, options.high)
            off = saturation.off_axes(options.between)
            units = zip(saturation.left, saturation.right, off, strict=True)
            rows += [{"site": site, "unit": unit, "left": float(left), "right": float(right),
                      "off_axes": bool(both)}
                     for unit, (left, right, both) in enumerate(units)]  # fmt: skip
        return rows

    def summary_table(self, table):
        return grouped(table, ["site"], {
            "runs": ("run", "nunique"), "left": ("left", "mean"), "right": ("right", "mean"),
            "off_axes": ("off_axes", "mean"),
        })  # fmt: skip

    def figures(self, table, options, folder):
        plt = pyplot()
        figure, axes = plt.subplots(1, len(options.gates), figsize=(4 * len(options.gates), 4),
                                    squeeze=False)  # fmt: skip
        for axis, site in zip(axes[0], options.gates, strict=True):
            for name, part in table[table["site"] == site].groupby("group", sort=False):
                axis.scatter(part["right"], part["left"], s=3, alpha=0.3, label=name)
            axis.plot([0, 1], [1, 0], color="grey", linewidth=0.5)
            axis.set(
                xlim=(-0.02, 1.02),
                ylim=(-0.02, 1.02),
                title=site,
                xlabel="fraction right-saturated",
                ylabel="fraction left-saturated",
            )
            axis.legend(markerscale=4, fontsize=7)
        return {"saturation": save_figure(figure, folder / "gate_saturation.png")}


# ---- paper 1: weight heat maps and connectivity graphs (section 3) -----------------------------
@dataclass(frozen=True)
class ConnectivityOptions:
    matrices: list = option(
        ["encoder.update_gate.hh:to:0.2", "encoder.reset_gate.hh:to:0.2",
         "decoder.update_gate.ih:from:0.17", "decoder.reset_gate.ih:from:0.17"],
        "MODULE.GATE.KIND:SIDE:THRESHOLD: a gate's input (ih) or recurrent (hh) weights, the "
        "side whose neurons are counted (to = receiving rows, from = sending columns) and the "
        "|weight| an edge needs (the defaults are paper 1's Figure 2)",
    )  # fmt: skip
    update_gate_convention: str = convention_option()
    hub_share: float = option(0.05, "the best-connected share of neurons whose edges are counted")


def parsed_matrix(text: str) -> tuple[str, str, str, str, float]:
    try:
        name, side, threshold = text.split(":")
        module, gate, kind = name.split(".")
        if side not in ("to", "from") or kind not in ("ih", "hh"):
            raise ValueError
        return module, gate, kind, side, float(threshold)
    except ValueError:
        raise ValueError(
            f"--matrices {text!r} is not MODULE.GATE.KIND:SIDE:THRESHOLD, e.g. "
            "encoder.update_gate.hh:to:0.2"
        ) from None


class ConnectivityProbe(WeightProbe):
    name = "connectivity"
    paper = f"{PAPER1}, section 3"
    purpose = "weight heat maps and connectivity graphs of the gate weights"
    details = (
        "Neurons are nodes and weights with |w| >= THRESHOLD are edges (section 3.2). One row per "
        "run, checkpoint and matrix: the share of weights kept, connected neurons on SIDE, the "
        "share of edges held by the best-connected HUB_SHARE of them, and strongly polar neurons. "
        "The figure shows each matrix of the first run as a heat map (section 3.1)."
    )
    options = ConnectivityOptions

    def validate(self, options) -> None:
        for matrix in options.matrices:
            parsed_matrix(matrix)

    def parameters(self, options) -> list[str]:
        return sorted({f"{parsed_matrix(m)[0]}.weight_{parsed_matrix(m)[2]}_l0"
                       for m in options.matrices})  # fmt: skip

    def weights(self, state, matrix: str, convention: str):
        module, gate, kind, side, threshold = parsed_matrix(matrix)
        weight = gate_weights(state, module, gate, kind)
        flip = convention == "paper1" and gate == "update_gate"
        return (-weight if flip else weight), side, threshold

    def rows(self, run, tag, options, device) -> list[dict]:
        state = run.state_dict(tag)
        rows = []
        for matrix in options.matrices:
            weight, side, threshold = self.weights(state, matrix, options.update_gate_convention)
            graph = connectivity(weight, threshold)
            rows.append({
                "matrix": matrix, "edge_share": graph.edge_share, "edges": graph.edges,
                "connected": graph.connected(side), "hub_share": graph.hub_share(
                    side, options.hub_share), "polar": graph.polar(side),
            })  # fmt: skip
        return rows

    def summary_table(self, table):
        return grouped(table, ["matrix"], {
            "runs": ("run", "count"), "edge_share": ("edge_share", "mean"),
            "connected": ("connected", "mean"), "hub_share": ("hub_share", "mean"),
            "polar": ("polar", "mean"),
        })  # fmt: skip

    def figures(self, table, options, folder):
        plt = pyplot()
        run, tag = table["run"].iloc[0], table["checkpoint"].iloc[0]
        state = RunFolder(run).state_dict(tag)
        count = len(options.matrices)
        figure, axes = plt.subplots(1, count, figsize=(4 * count, 4), squeeze=False)
        for axis, matrix in zip(axes[0], options.matrices, strict=True):
            weight = self.weights(state, matrix, options.update_gate_convention)[0]
            limit = float(weight.abs().max())
            image = axis.imshow(weight, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto",
                                interpolation="nearest")  # fmt: skip
            axis.set(title=matrix.split(":")[0], xlabel="from unit", ylabel="to unit")
            figure.colorbar(image, ax=axis, fraction=0.04)
        figure.suptitle(f"{run} ({tag})", fontsize=9)
        return {"heatmaps": save_figure(figure, folder / "weight_heatmaps.png")}
