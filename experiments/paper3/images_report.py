"""The report's section on the two-digit images' second reading: the images trained as
the authors' TensorFlow program ran them (`IMAGES_AUTHORS`,
`experiments/configs/paper3/two_digit_images_authors.yaml`), their curves beside the primary
reading's, both readings' accuracies, and the table of the images' settings with their sources;
built from the runs' measurements alone."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from experiments.paper3.claims import EARLY_IMAGE_STEPS, early_image_accuracy, summary
from experiments.paper3.report import plot_curves, spread
from experiments.paper3.scales import IMAGES_AUTHORS, SETTINGS, Scale
from experiments.report import markdown_table, save_figure

PRIMARY = "two_digit_images"
READING_NAMES = {PRIMARY: "primary", IMAGES_AUTHORS: "authors' program"}


def readings_figure(measured: dict, path: Path) -> Path:
    """Figure 3a under both readings: train and test accuracy on the samples, settings A and B,
    mean +- std over runs; the primary reading left, the authors' program right."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
    for axis, (experiment, name) in zip(axes, READING_NAMES.items(), strict=True):
        plot_curves(axis, spread(measured, experiment), f"Figure 3a, two-digit images: {name}",
                    "accuracy")  # fmt: skip
    return save_figure(fig, path)


def readings_table(measured: dict) -> pd.DataFrame:
    """Per reading and setting: the mean training-sample accuracy over the early steps and the
    accuracies after the last step (all pairs), mean and spread over runs."""
    first, last = EARLY_IMAGE_STEPS
    rows = []
    for experiment, name in READING_NAMES.items():
        early = early_image_accuracy(measured, experiment)
        for setting in SETTINGS:
            finals = measured["final"][(experiment, setting)]
            row = {"reading": name, "setting": setting}
            row |= {f"early ({first}-{last}) {k}": v for k, v in summary(early[setting]).items()}
            for key in ("train", "test", "gap"):
                row |= {f"{key} {k}": v for k, v in summary([f[key] for f in finals]).items()}
            rows.append(row)
    return pd.DataFrame(rows)


MNIST_PY = "`mnist.py`"
IMAGE_SETTINGS = [
    ("settings A, B", "right digit Y or Y+1 / any; test Y+2..Y+9 from the test images",
     "text, 5.1", "the same: `--mask_input 0` / `2`",
     f"{MNIST_PY} lines 41-53; `experiments/mnist_paired_first/*.sh`, `mnist_paired_second/*.sh`"),
    ("a pair", "Y1 uniform, X1 uniform among its images; Y2 as the setting says, X2 uniform "
     "among its images; X = [X1 X2], Y = Y1", "text, 5.1", "the same",
     f"{MNIST_PY} lines 55-66, 111-116"),
    ("training pairs", "64 new pairs every step", f"text silent: code, {MNIST_PY} lines 288-289 "
     "(the first runs drew from a fixed pool of 60,000)", "the same",
     f"{MNIST_PY} lines 288-289"),
    ("layers", "conv 3x3x32 ReLU, max-pool 2x2, conv 3x3x64 ReLU, dense 64 ReLU, dense 64 ReLU, "
     "dense 10 linear", "Appendix A, which lists the dense 64 ReLU layer twice (5.1: 'two "
     f"fully-connected layers'): code, {MNIST_PY} lines 131-139 (the first runs: one dense 64)",
     "the same", f"{MNIST_PY} lines 131-142"),
    ("loss", "Keras's categorical_hinge: max(0, 1 + max(0, max_{j != y} s_j) - s_y), batch mean",
     f"Appendix A: 'hinge loss', its form silent: code, {MNIST_PY} lines 139, 154 (torch's "
     "Weston-Watkins multi_margin_loss in the first runs)", "the same",
     f"{MNIST_PY} lines 139, 154"),
    ("optimizer", "torch's Adam, learning rate 0.001 (eps 1e-8 on the corrected second moment)",
     "Appendix A; Adam's epsilon: suite",
     "Keras's Adam, learning rate 0.001 (epsilon 1e-7 on the uncorrected second moment)",
     f"{MNIST_PY} lines 152, 324"),
    ("batch, steps", "64 pairs, 200 steps", "Appendix A", "the same",
     f"{MNIST_PY} line 320; the scripts' `--steps 200`"),
    ("initialisation", "torch's defaults: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) weights and biases",
     "suite", "Keras's defaults: Glorot uniform weights, zero biases",
     f"{MNIST_PY} lines 131-142 set no initializer"),
    ("evaluation", "after every update, on the first pairs (the scale's sample size) of 10,000 "
     "fixed training-distribution and 10,000 test pairs; after the last step on all of them",
     "suite", "after every update, on 100 training-distribution and 100 test pairs drawn before "
     "training (also at step 0, not kept here); after the last step: the suite's 10,000 each",
     f"{MNIST_PY} lines 266-267, 287, 300-301; final: suite"),
    ("seeds", "a run's seed seeds its model and its data", "suite",
     "one data seed for every run, the model's seed varying", f"{MNIST_PY} lines 255-256, 306; "
     "the scripts set `--parameter_random_seed` 7-11 only"),
    ("framework", "PyTorch", "suite", "PyTorch (TensorFlow's random streams and kernels are not "
     "replayed)", "Appendix A: 'We use TensorFlow'"),
]  # fmt: skip
"""The images' settings under both readings, each with its source. `mnist.py` and
the scripts are `yuanpeng16/BCDLSG` at efb6c20."""


def settings_table() -> str:
    columns = ["setting", "primary reading", "source", "authors' program", "source "]
    return markdown_table(pd.DataFrame(IMAGE_SETTINGS, columns=columns), index=False)


def images_figures(measured: dict, folder: Path) -> dict[str, Path]:
    path = folder / "fig3a_two_digit_images_readings.png"
    return {"fig3a_two_digit_images_readings": readings_figure(measured, path)}


def authors_images_section(tables: dict[str, pd.DataFrame], scale: Scale) -> str:
    """The report's section on the images' two readings."""
    return f"""
## The two-digit images under the authors' program

The primary reading follows the text and, where the text is silent or repeats itself, the
authors' code (`yuanpeng16/BCDLSG` efb6c20, `mnist.py`): two dense 64 layers, Keras's
categorical hinge loss and 64 new pairs every step. The second reading runs their TensorFlow
program as it ran (`experiments/configs/paper3/two_digit_images_authors.yaml`, runs
`{IMAGES_AUTHORS}_<setting>`, {scale.steps[IMAGES_AUTHORS]:,} steps): Keras's initialisation
and Adam, evaluation on {scale.eval_size[IMAGES_AUTHORS]:,}-pair samples after every step, and
one data seed for all its runs. Section 5.1's claims are decided again on its runs by the same
rules (ids `authors.images.*`). What differs, with the source of each setting:

{settings_table()}

![Figure 3a, both readings](figures/fig3a_two_digit_images_readings.png)

Accuracy over the early steps (training sample) and after the last step (all pairs), mean and
spread over runs:

{markdown_table(tables["two_digit_images_readings"], 3, index=False)}
"""
