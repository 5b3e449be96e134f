"""Paper 3's report: Figures 3-6 and the text of `make reproduce-paper3`, built from the runs'
measurements alone (`experiments.paper3.runs`: one record per run); nothing here reads a
checkpoint or trains. Figure 4 draws the toy data afresh from its generator."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from datamodules.toy_2d_points import sample_toy_2d  # noqa: E402
from experiments.engine.publish import Stopwatch, kept_note  # noqa: E402
from experiments.paper3.claims import EARLY_SCAN_STEPS, Records  # noqa: E402
from experiments.paper3.runs import figure5_run  # noqa: E402
from experiments.paper3.scales import EXPERIMENTS, SETTINGS, Scale  # noqa: E402
from experiments.paper3.toy import TEXT, ToyReading, decoded_grid  # noqa: E402
from experiments.report import (  # noqa: E402
    current_commit,
    markdown_table,
    report_title,
    save_figure,
)
from probes.command.outputs import SMALLEST_POINTS, legend_beside  # noqa: E402

CACHED_AT = re.compile(r" \(cached at [^)]*\)")
"""Where a run's data was cached on the machine that trained it, which runs measured by earlier
versions recorded in their `data_source` and the report leaves out: a machine's own path says
nothing of the data."""
COLOURS = {("A", "train"): "C0", ("A", "test"): "C9", ("B", "train"): "C3", ("B", "test"): "C5"}
"""Figure 3's colours: A train blue, A test cyan, B train red, B test brown."""


# ---- Figure 3: accuracy curves ---------------------------------------------------------------
def mean_and_spread(series: list[pd.Series]) -> pd.DataFrame:
    """Mean and standard deviation over runs at every index."""
    stacked = pd.concat(series, axis=1)
    return pd.DataFrame({"mean": stacked.mean(axis=1), "std": stacked.std(axis=1)})


def spread(measured: dict, experiment: str) -> dict[tuple[str, str], pd.DataFrame]:
    """Mean and spread over seeds of `experiment`'s train and test curves, per setting."""
    return {(s, split): mean_and_spread([c[split] for c in measured["curves"][(experiment, s)]])
            for s in SETTINGS for split in ("train", "test")}  # fmt: skip


def plot_curves(axis, curves: dict[tuple[str, str], pd.DataFrame], title: str, ylabel: str):
    for (setting, split), frame in curves.items():
        colour = COLOURS[(setting, split)]
        axis.plot(frame.index, frame["mean"], color=colour, label=f"{split.title()} {setting}")
        axis.fill_between(frame.index, frame["mean"] - frame["std"],
                          frame["mean"] + frame["std"], color=colour, alpha=0.2)  # fmt: skip
    axis.set_xlabel("training step")
    axis.set_ylabel(ylabel)
    axis.set_ylim(-0.02, 1.02)
    axis.set_title(title, fontsize=9)
    axis.legend(fontsize=SMALLEST_POINTS)


def figure3(curves, batch_curves, path: Path, title: str, ylabel: str) -> Path:
    """Figure 3a/3b: train and test accuracy, settings A and B, mean +- std over runs; for SCAN a
    second panel of the training batches' accuracy over the first 100 steps."""
    panels = 2 if batch_curves else 1
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 4), squeeze=False)
    plot_curves(axes[0, 0], curves, title, ylabel)
    if batch_curves:
        early = {(s, "train"): frame.loc[:100] for (s, _), frame in batch_curves.items()}
        first, last = EARLY_SCAN_STEPS
        title = f"training batches before their update (steps {first}-{last} shaded)"
        plot_curves(axes[0, 1], early, title, ylabel)
        axes[0, 1].axvspan(*EARLY_SCAN_STEPS, color="grey", alpha=0.15)
    return save_figure(fig, path)


# ---- Figures 4-6: the toy problem ------------------------------------------------------------
def figure4(path: Path) -> Path:
    """Figure 4: the toy data for Y1 (setting A's training points and the test points)."""
    generator = torch.Generator().manual_seed(0)
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2))
    for axis, setting in zip(axes, SETTINGS, strict=True):
        inputs, latent = sample_toy_2d(300, setting, generator)
        test, _ = sample_toy_2d(100, "test", generator)
        positive = latent[:, 0] == 1
        axis.scatter(*inputs[positive].T, marker="o", s=12, color="C0", label="train, Y1 = 1")
        axis.scatter(*inputs[~positive].T, marker="^", s=12, color="C1", label="train, Y1 = 0")
        axis.scatter(*test.T, marker="x", s=12, color="grey", label="test (1, 1), Y1 = 1")
        axis.set_xlim(-1, 1), axis.set_ylim(-1, 1)
        axis.set_xlabel("X1"), axis.set_ylabel("X2")
        axis.set_title(f"Figure 4: setting {setting}", fontsize=9)
    legend_beside(axes[-1])  # the same markers in both panels
    return save_figure(fig, path)


def boundary_panel(axis, probability: np.ndarray, title: str, reading: ToyReading = TEXT) -> None:
    """One panel on the reading's grid; the playground's also outlines the test quadrant's
    data, [0.3, 5.3] on both axes."""
    grid = reading.axis.numpy()
    axis.imshow(probability, origin="lower", extent=reading.extent, cmap="coolwarm_r", vmin=0,
                vmax=1)  # fmt: skip
    axis.contour(grid, grid, probability, levels=[0.5], colors="k")
    axis.axhline(0, color="grey", lw=0.5), axis.axvline(0, color="grey", lw=0.5)
    if reading is not TEXT:
        low, high = reading.positive_from, reading.data_edge
        axis.add_patch(Rectangle((low, low), high - low, high - low, fill=False, ls=":", lw=0.6))
    axis.set_title(title, fontsize=8)
    ticks = [-1, 0, 1] if reading is TEXT else [-6, 0, 6]
    axis.set_xticks(ticks), axis.set_yticks(ticks)


def boundary_figure(panels: list[tuple[str, np.ndarray]], columns: int, title: str,
                    path: Path, reading: ToyReading = TEXT) -> Path:  # fmt: skip
    """Figures 5 and 6: P(Y1 = 1) (blue 1, red 0) and the decision boundary (black) over X1
    (horizontal) and X2 (vertical) on the reading's grid; the test area is the upper right
    quadrant."""
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(2.4 * columns, 2.4 * rows + 0.4),
                             squeeze=False)  # fmt: skip
    for axis, (name, probability) in zip(axes.flat, panels, strict=False):
        boundary_panel(axis, probability, name, reading)
    for axis in list(axes.flat)[len(panels) :]:
        axis.axis("off")
    fig.suptitle(title, fontsize=9)
    return save_figure(fig, path)


def y1_grids(record: dict) -> dict[int, np.ndarray]:
    """A toy run's kept P(Y1 = 1) grids (rows X2, columns X1 on its reading's grid) by its
    reading's steps done."""
    kept = {int(step): grid for step, grid in record["boundaries"]["y1_probability"].items()}
    return {step: decoded_grid(kept[step]) for step in sorted(kept)}


# ---- all figures -----------------------------------------------------------------------------
def paper3_figures(measured: dict, records: Records, scale: Scale, folder: Path) -> dict[str, Path]:
    """Figures 3-6."""
    last = scale.steps["toy_2d"]
    setting5, seed5 = figure5_run(scale)
    return {
        "fig3a_two_digit_images": figure3(
            spread(measured, "two_digit_images"), None, folder / "fig3a_two_digit_images.png",
            "Figure 3a: two-digit images", "accuracy"),
        "fig3b_scan": figure3(
            spread(measured, "scan"),
            {(s, "train"): mean_and_spread(measured["scan_batches"][s]) for s in SETTINGS},
            folder / "fig3b_scan.png", "Figure 3b: SCAN add-jump", "sentence accuracy"),
        "fig3c_toy_2d": figure3(
            spread(measured, "toy_2d"), None, folder / "fig3c_toy_2d.png",
            "Toy 2-D problem (not in the paper's Figure 3)", "accuracy"),
        "fig4_toy_data": figure4(folder / "fig4_toy_data.png"),
        "fig5_toy_boundary_steps": boundary_figure(
            [(f"after {step} steps", grid) for step, grid in
             y1_grids(records[("toy_2d", setting5, seed5)]).items()],
            4, f"Figure 5: setting {setting5}, seed {seed5}: P(Y1 = 1) after each step",
            folder / "fig5_toy_boundary_steps.png"),
        "fig6_toy_boundary_seeds": boundary_figure(
            [(f"{s}, seed {seed}", y1_grids(records[("toy_2d", s, seed)])[last])
             for s in SETTINGS for seed in scale.seeds], len(scale.seeds),
            f"Figure 6: after {last} steps, settings A (top) and B (bottom)",
            folder / "fig6_toy_boundary_seeds.png"),
    }  # fmt: skip


# ---- text ------------------------------------------------------------------------------------
def report_text(scale_name: str, scale: Scale, tables: dict[str, pd.DataFrame], clock: Stopwatch,
                records: Records) -> str:  # fmt: skip
    """The report's text above its claims: how it ran, Figures 3-6 and the tables, and how the
    paper's terse descriptions were read (`READINGS`)."""
    first = scale.seeds[0]
    sources = {e: CACHED_AT.sub("", records[(e, "A", first)]["data_source"]) for e in EXPERIMENTS}
    names = {"two_digit_images": "images", "scan": "SCAN", "toy_2d": "toy"}

    def per_experiment(values: dict) -> str:
        return ", ".join(f"{names[e]} {values[e]:,}" for e in EXPERIMENTS)

    title = report_title("Paper 3: Gradient Descent Resists Compositionality", scale_name)
    return f"""{title}

Figures 3-6 and the claims of sections 5.1, 5.2 and 6, regenerated by `make reproduce-paper3`
(`python -m experiments.paper3`). The paper gives its results as figures only; each statement is
checked by a measured statistic and the rule written beside it (rules fixed before the runs).

- **Scale:** `{scale_name}`: {len(scale.seeds)} runs per setting (seeds {list(scale.seeds)};
  a run's seed is both its model's and its data's); training steps: {per_experiment(scale.steps)}
  (paper: images 200, SCAN 2,000, toy 1,024). Curves are accuracies on fixed samples of the
  training and test data (rows: {per_experiment(scale.eval_size)}), evaluated after every step
  (SCAN: every {scale.scan_eval_interval}); final accuracies are on all training and test data.
- **Data:** images: {sources["two_digit_images"]}; SCAN: {sources["scan"]}; toy:
  {sources["toy_2d"]}.
- **Commit** `{current_commit()}`; wall time {clock.minutes["training and measuring"]:.1f} min
  training and measuring the runs (2 CPU cores, 2 runs at a time), {clock.minutes["report"]:.1f}
  min writing the report.{kept_note(list(records.values()))}
- **Runs:** `runs/paper3/<experiment>_<setting>/seed=<s>/` with `metrics.csv`, the weights after
  every "epoch" (`weights/`; the toy's after steps 0-8 and each power of 2 up to 1,024), and traces
  (`traces/test_sample/`; SCAN: encoder and decoder states and gates, attention). Each run's
  measurements, everything this report reads of it, are kept beside it in
  `runs/paper3/<experiment>_<setting>/seed=<s>/measurements.json` (the toy's decision
  boundaries only where Figures 5 and 6 draw them): `python -m experiments.paper3 --scale
  {scale_name} --runs reports/paper3/runs --reuse-runs` rebuilds the report from them alone.

## Figure 3a: two-digit images (section 5.1)

![Figure 3a](figures/fig3a_two_digit_images.png)

## Figure 3b: SCAN add-jump (section 5.2)

Left: sentence accuracy on the samples, every {scale.scan_eval_interval} steps. Right: each
training batch's sentence accuracy measured before its own update, every step (with teacher
forcing, which gives the same sentence accuracy as greedy decoding: a sentence is right under
one exactly when it is right under the other).

![Figure 3b](figures/fig3b_scan.png)

## Accuracy after the last step (all training and test data)

{markdown_table(tables["final_accuracy"], 3, index=False)}

## Early training (the "trains faster" claims)

{markdown_table(tables["early_training"], 3, index=False)}

## The toy 2-D problem (section 6): Figures 4-6

![Figure 4](figures/fig4_toy_data.png)

![Figure 5](figures/fig5_toy_boundary_steps.png)

![Figure 6](figures/fig6_toy_boundary_seeds.png)

Per run: accuracy on the training points and on the (1, 1) test points after the last step, and
the X2 dependence of its Y1 prediction (share of the X1 columns in (0, 1] whose predicted Y1
changes as X2 moves over [-1, 1]; 0 for a compositional model).

{markdown_table(tables["toy_2d"], 3, index=False)}

![Toy curves](figures/fig3c_toy_2d.png)

{READINGS}"""


READINGS = """## How the paper's terse descriptions were read

- **Images:** section 5.1 says "three convolution layers and two fully-connected layers";
  Appendix A lists two convolutions, a max-pool, a dense 64 ReLU layer twice and the 10 linear
  outputs. Where the text is silent or repeats itself the authors' code decides (BCDLSG
  efb6c20 `mnist.py`): two dense 64 layers (lines 135-136), "hinge loss" is Keras's
  `categorical_hinge` (line 154), and every step trains on 64 new pairs (lines 288-289); test
  pairs come from the MNIST test images. Initialisation and Adam are torch's; the training
  accuracy is measured on fixed pairs of the training distribution. The authors' TensorFlow
  program as it ran is the second reading (below).
- **SCAN:** the decoder (64) starts from the bidirectional encoder's states (2 x 16) at the first
  and last source positions, concatenated (hidden and cell). Where the text is silent the
  authors' code decides (sources in the table of SCAN's settings below): Luong
  attention ("general" score) with input feeding, an 8-dimensional decoder embedding, the
  learning rate decayed in whole steps (staircase), the global gradient norm clipped at 1.0 and
  the loss summed over each sequence, averaged over the batch. Setting B redraws every action
  word (walk, look, run, jump) of every training command uniformly at random and recomputes the
  actions, so words and actions still correspond; its test set is the original one.
- **Toy:** two output units are the logits of Y1 (Figure 4 is "for Y1 output"), cross-entropy,
  plain SGD; 3,000 training points. Setting B (not shown in the paper) draws Y2 independently of
  Y1, so X2 carries no information about Y1.
"""
