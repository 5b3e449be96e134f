"""The `connectivity` probe: paper 1's weight heat maps and connectivity (section 3.2) over
weight snapshots and checkpoints."""

from __future__ import annotations

from dataclasses import dataclass

from probes.command.base import PAPER1, WeightProbe, convention_option, grouped, option
from probes.command.outputs import pyplot, save_figure
from probes.weights import connectivity, gate_weights
from storage.files import RunFileError
from storage.run_folder import RunFolder


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
        names = [(parsed_matrix(m)[0], parsed_matrix(m)[2]) for m in options.matrices]
        return sorted({f"{module}.weight_{kind}_l0" for module, kind in names} |
                      {f"{module}.weight_hh_l0" for module, _ in names})  # fmt: skip

    def check(self, run, tag, options) -> None:
        """Also refuse a gate the run's cell lacks (an LSTM has no update or reset gate)."""
        super().check(run, tag, options)
        state = run.state_dict(tag)
        for matrix in options.matrices:
            module, gate, kind, _, _ = parsed_matrix(matrix)
            try:
                gate_weights(state, module, gate, kind)
            except ValueError as error:
                raise RunFileError(
                    f"{run.weights_path(tag)}: {error}; name one of them in --matrices "
                    "(MODULE.GATE.KIND:SIDE:THRESHOLD)"
                ) from None

    def weights(self, state, matrix: str, convention: str):
        module, gate, kind, side, threshold = parsed_matrix(matrix)
        return gate_weights(state, module, gate, kind, convention), side, threshold

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
