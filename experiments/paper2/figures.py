"""Paper 2's Figures 1-3, drawn from the runs' measurements combined over seeds."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from experiments.paper2.readings import Estimate, Snapshot  # noqa: E402
from experiments.paper2.scales import Scale  # noqa: E402
from experiments.report import save_figure  # noqa: E402


def figure1(figure1: dict[tuple[int, int], Snapshot], scale: Scale, path: Path) -> Path:
    """Figure 1: P(omega) from the open symbol and from the conduit against k, a line per n."""
    fig, axis = plt.subplots(figsize=(6, 4))
    colours = plt.cm.viridis([i / max(len(scale.rule_counts) - 1, 1)
                              for i in range(len(scale.rule_counts))])  # fmt: skip
    for colour, n in zip(colours, scale.rule_counts, strict=True):
        for phrase, style in (("open", "-"), ("conduit", "--")):
            values = [figure1[(k, n)].phrase[phrase].mean for k in scale.conduit_lengths]
            axis.plot(scale.conduit_lengths, values, style, marker="o", color=colour,
                      label=f"n={n}, {phrase}")  # fmt: skip
    axis.set_yscale("log")
    axis.set_xlabel("conduit length k")
    axis.set_ylabel("P(x_t = omega) from the phrase (CD)")
    axis.set_title(f"Figure 1: open symbol (solid) vs conduit (dashed), "
                   f"{scale.figure1_epoch} epochs", fontsize=9)  # fmt: skip
    axis.legend(fontsize=7, ncol=2)
    return save_figure(fig, path)


def figure2(prefixes: dict[int, list[Estimate]], k: int, epochs: int, path: Path) -> Path:
    """Figure 2: P(omega | alpha and the first i conduit tokens) against i, a line per n."""
    fig, axis = plt.subplots(figsize=(6, 4))
    for n, values in prefixes.items():
        axis.plot(range(len(values)), [v.mean for v in values], marker="o", label=f"n={n}")
    axis.set_xlabel("i (alpha and the first i conduit tokens)")
    axis.set_ylabel("P(x_t = omega | x_{t-k} .. x_{t-k+i}) (CD)")
    axis.set_title(f"Figure 2: k = {k}, {epochs} epochs", fontsize=9)
    axis.legend(fontsize=8)
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
    axis.legend(fontsize=7)
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
    axis.legend(fontsize=7)
    return save_figure(fig, path)
