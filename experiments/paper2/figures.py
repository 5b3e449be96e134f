"""Paper 2's Figures 1-3, drawn from the runs' measurements combined over seeds."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from experiments.paper2.readings import Estimate, Snapshot  # noqa: E402
from experiments.paper2.scales import Scale  # noqa: E402
from experiments.report import save_figure  # noqa: E402
from probes.command.outputs import SMALLEST_POINTS, legend_beside  # noqa: E402

SHIFT = 0.06
"""Figure 1 draws each n's points this far apart along k (`figure1_drawn`): lines at the same
value (several n at the ceiling) stay apart, as the title says."""
MARKERS = ("o", "s", "^", "D", "v", "P")


def figure1_drawn(figure1: dict[tuple[int, int], Snapshot], scale: Scale) -> plt.Figure:
    """Figure 1 drawn: P(omega) from the open symbol (solid) and from the conduit (dashed)
    against k, a colour and a marker per n, a larger n drawn thinner on top of a smaller one
    and each n's points shifted by a multiple of `SHIFT` in k, so curves at the same value
    (n = 300 and 1000 at the ceiling) both show; the legend below the axes, off the data."""
    counts = scale.rule_counts
    fig, axis = plt.subplots(figsize=(6.4, 5))
    colours = plt.cm.viridis([i / max(len(counts) - 1, 1) for i in range(len(counts))])
    for index, (colour, n) in enumerate(zip(colours, counts, strict=True)):
        shift, under = (index - (len(counts) - 1) / 2) * SHIFT, len(counts) - 1 - index
        ks = [k + shift for k in scale.conduit_lengths]
        for phrase, style, fill in (("open", "-", colour), ("conduit", "--", "white")):
            values = [figure1[(k, n)].phrase[phrase].mean for k in scale.conduit_lengths]
            axis.plot(ks, values, style, marker=MARKERS[index % len(MARKERS)], color=colour,
                      markerfacecolor=fill, linewidth=1.0 + 0.8 * under,
                      markersize=4 + 1.5 * under, label=f"n={n}, {phrase}")  # fmt: skip
    axis.set_yscale("log")
    axis.set_xticks(scale.conduit_lengths)
    axis.set_xlabel("conduit length k")
    axis.set_ylabel("P(x_t = omega) from the phrase (CD)")
    axis.set_title(f"Figure 1: open symbol (solid, filled) vs conduit (dashed, open), "
                   f"{scale.figure1_epoch} epochs\nso that equal curves show: a larger n is "
                   f"thinner and on top, each n shifted by {SHIFT:g} in k",
                   fontsize=9)  # fmt: skip
    axis.legend(
        fontsize=SMALLEST_POINTS, ncol=len(counts), loc="upper center", bbox_to_anchor=(0.5, -0.14)
    )
    return fig


def figure1(figure1: dict[tuple[int, int], Snapshot], scale: Scale, path: Path) -> Path:
    """Figure 1 (`figure1_drawn`) written to `path`."""
    return save_figure(figure1_drawn(figure1, scale), path)


def figure2(prefixes: dict[int, list[Estimate]], k: int, epochs: int, path: Path) -> Path:
    """Figure 2: P(omega | alpha and the first i conduit tokens) against i, a line per n."""
    fig, axis = plt.subplots(figsize=(6, 4))
    for n, values in prefixes.items():
        axis.plot(range(len(values)), [v.mean for v in values], marker="o", label=f"n={n}")
    axis.set_xlabel("i (alpha and the first i conduit tokens)")
    axis.set_ylabel("P(x_t = omega | x_{t-k} .. x_{t-k+i}) (CD)")
    axis.set_title(f"Figure 2: k = {k}, {epochs} epochs", fontsize=9)
    axis.legend(fontsize=SMALLEST_POINTS)
    return save_figure(fig, path)


def figure2_training(curves: dict[int, list[list[Estimate]]], k: int, path: Path) -> Path:
    """Figure 2 along training: P(omega | alpha) (solid) and P(omega | alpha and the
    whole conduit) (dashed) after each epoch, a colour per n."""
    fig, axis = plt.subplots(figsize=(6, 4))
    for index, (n, curve) in enumerate(curves.items()):
        epochs = range(1, len(curve) + 1)
        axis.plot(epochs, [p[0].mean for p in curve], "-", color=f"C{index}", label=f"n={n}, alpha")
        axis.plot(epochs, [p[-1].mean for p in curve], "--", color=f"C{index}",
                  label=f"n={n}, alpha + conduit")  # fmt: skip
    axis.set_yscale("log")
    axis.set_xlabel("epoch")
    axis.set_ylabel("P(x_t = omega | phrase) (CD)")
    axis.set_title(f"Figure 2 along training: k = {k}", fontsize=9)
    legend_beside(axis)
    return save_figure(fig, path)


def figure3(curves: dict[tuple[int, int], list[Estimate]], scale: Scale, path: Path,
            title: str = "Figure 3") -> Path:  # fmt: skip
    """Figure 3: P(omega | alpha) over training, unpredictable (solid) vs predictable conduits
    (dashed: the primary reading of m; dotted: the second)."""
    fig, axis = plt.subplots(figsize=(6, 4))
    styles = dict(zip((0, *scale.conduit_copies), ("-", "--", ":", "-."), strict=False))
    for index, k in enumerate(scale.predictability_lengths):
        for copies, style in styles.items():
            values = [v.mean for v in curves[(k, copies)]]
            kind = f"predictable m={copies}" if copies else "unpredictable"
            axis.plot(range(1, len(values) + 1), values, style, color=f"C{index}",
                      label=f"k={k}, {kind}")  # fmt: skip
    axis.set_xlabel("epoch")
    axis.set_ylabel("P(x_t = omega | x_{t-k} = alpha) (CD)")
    axis.set_title(f"{title}: unpredictable (solid) vs predictable conduits", fontsize=9)
    legend_beside(axis)
    return save_figure(fig, path)
