"""The `gate-saturation` probe: paper 1's gate saturation (Figure 4) over recorded traces."""

from __future__ import annotations

from dataclasses import dataclass

from probes.activations import gate_saturation
from probes.command.base import (
    PAPER1_GATES,
    PAPER1_TEST_SPLITS,
    TraceProbe,
    convention_option,
    option,
)
from probes.command.outputs import legend_beside, pyplot, save_figure
from probes.traces import site_values, trace_keys, valid_steps


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
    details = "After Karpathy et al. (2015). One row per run, checkpoint, gate and unit."
    options = GateSaturationOptions
    summary_by = ["site"]
    summary_columns = {
        "runs": ("run", "nunique"), "left": ("left", "mean"), "right": ("right", "mean"),
        "off_axes": ("off_axes", "mean"),
    }  # fmt: skip

    def keys(self, options, recorded=()) -> list[str]:
        return trace_keys(options.gates, recorded=recorded)

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
        legend_beside(axes[0][-1], markerscale=4)  # the same run groups in every panel
        return {"saturation": save_figure(figure, folder / "gate_saturation.png")}
