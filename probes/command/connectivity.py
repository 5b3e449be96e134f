"""The `connectivity` probe: paper 1's weight heat maps and connectivity (section 3.2) over
weight snapshots and checkpoints."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from probes.command.base import WeightProbe, convention_option, option
from probes.command.outputs import pyplot, save_figure
from probes.weights import connectivity, gate_weights
from storage.files import RunFileError
from storage.run_folder import RunFolder


@dataclass(frozen=True)
class ConnectivityOptions:
    matrices: list = option(
        ["encoder.update_gate.hh:to:0.2", "encoder.reset_gate.hh:to:0.2",
         "decoder.update_gate.ih:from:0.17", "decoder.reset_gate.ih:from:0.17"],
        "LAYER.GATE.KIND:SIDE:THRESHOLD: a gate's input (ih) or recurrent (hh) weights (LAYER "
        "as traces name it: rnn.l1 is layer 1 of the stacked module rnn; GRU or LSTM gates), "
        "the side whose neurons are counted (to = receiving rows, from = sending columns) and "
        "the |weight| an edge needs (the defaults are paper 1's Figure 2)",
    )  # fmt: skip
    update_gate_convention: str = convention_option()
    hub_share: float = option(0.05, "the best-connected share of neurons whose edges are counted")


@dataclass(frozen=True)
class Matrix:
    """One `--matrices` entry: a gate's weights (`module` parameter prefix, stack `layer`)."""

    module: str
    layer: int
    gate: str
    kind: str
    side: str
    threshold: float

    @property
    def parameter(self) -> str:
        return f"{self.module}.weight_{self.kind}_l{self.layer}"


def parsed_matrix(text: str) -> Matrix:
    """`LAYER.GATE.KIND:SIDE:THRESHOLD`, LAYER named as traces name it (`encoder`,
    `encoder.gru`, `rnn.l1` for layer 1 of the stacked module `rnn`)."""
    try:
        name, side, threshold = text.split(":")
        layer, gate, kind = name.rsplit(".", 2)
        if side not in ("to", "from") or kind not in ("ih", "hh") or not layer:
            raise ValueError
        stacked = re.fullmatch(r"(.+)\.l(\d+)", layer)
        module, index = (stacked[1], int(stacked[2])) if stacked else (layer, 0)
        return Matrix(module, index, gate, kind, side, float(threshold))
    except ValueError:
        raise ValueError(
            f"--matrices {text!r} is not LAYER.GATE.KIND:SIDE:THRESHOLD, e.g. "
            "encoder.update_gate.hh:to:0.2 or rnn.l1.forget_gate.hh:to:0.2"
        ) from None


class ConnectivityProbe(WeightProbe):
    details = (
        "Neurons are nodes and weights with |w| >= THRESHOLD are edges (section 3.2). One row per "
        "run, checkpoint and matrix: the share of weights kept, connected neurons on SIDE, the "
        "share of edges held by the best-connected HUB_SHARE of them, and strongly polar neurons. "
        "The figure shows each matrix of the first run as a heat map (section 3.1)."
    )
    options = ConnectivityOptions
    summary_by = ["matrix"]
    summary_columns = {
        "runs": ("run", "count"), "edge_share": ("edge_share", "mean"),
        "connected": ("connected", "mean"), "hub_share": ("hub_share", "mean"),
        "polar": ("polar", "mean"),
    }  # fmt: skip

    def validate(self, options) -> None:
        for matrix in options.matrices:
            parsed_matrix(matrix)

    def parameters(self, options) -> list[str]:
        parsed = [parsed_matrix(m) for m in options.matrices]
        return sorted({m.parameter for m in parsed} |
                      {f"{m.module}.weight_hh_l{m.layer}" for m in parsed})  # fmt: skip

    def check(self, run, tag, options) -> None:
        """Also refuse a gate the run's cell lacks (an LSTM has no update or reset gate)."""
        super().check(run, tag, options)
        state = self.state(run, tag)
        for matrix in options.matrices:
            try:
                self.weights(state, matrix, options.update_gate_convention)
            except ValueError as error:
                raise RunFileError(
                    f"{self.weights_file(run, tag)}: {error}; name one of them in --matrices "
                    "(LAYER.GATE.KIND:SIDE:THRESHOLD)"
                ) from None

    def weights(self, state, matrix: str, convention: str):
        parsed = parsed_matrix(matrix)
        weight = gate_weights(state, parsed.module, parsed.gate, parsed.kind, convention,
                              parsed.layer)  # fmt: skip
        return weight, parsed.side, parsed.threshold

    def rows(self, run, tag, options, device) -> list[dict]:
        state = self.state(run, tag)
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

    def figures(self, table, options, folder):
        plt = pyplot()
        run, tag = table["run"].iloc[0], table["checkpoint"].iloc[0]
        state = self.state(RunFolder(run), tag)
        count = len(options.matrices)
        figure, axes = plt.subplots(1, count, figsize=(4 * count, 4), squeeze=False)
        for axis, matrix in zip(axes[0], options.matrices, strict=True):
            weight = self.weights(state, matrix, options.update_gate_convention)[0]
            limit = float(weight.abs().max())
            image = axis.imshow(weight, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto",
                                interpolation="nearest")  # fmt: skip
            axis.set(title=matrix.split(":")[0], xlabel="from unit", ylabel="to unit")
            figure.colorbar(image, ax=axis, fraction=0.04)
        figure.suptitle(f"{table['group'].iloc[0]}/{Path(run).name} ({tag})", fontsize=9)
        return {"heatmaps": save_figure(figure, folder / "weight_heatmaps.png")}
