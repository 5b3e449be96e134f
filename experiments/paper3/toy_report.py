"""The report's section on the toy's second reading: the toy trained as the authors
ran it in the TensorFlow Playground (`experiments.paper3.toy.PLAYGROUND`), its Figures 4-6 and
curves, its table, the step-1 table of both readings and the table of the toy's settings with
their sources; built from the runs' measurements alone (Figure 4 draws the authors' data afresh
from its generator)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import torch

from datamodules.toy_2d_points import sample_authors_toy
from experiments.paper3.claims import TOY_DEPENDENT, TOY_FAIL, Records
from experiments.paper3.report import boundary_figure, mean_and_spread, plot_curves, y1_grids
from experiments.paper3.runs import figure5_run
from experiments.paper3.scales import SETTINGS, Scale
from experiments.paper3.toy import PLAYGROUND, STEP1_MIDDLE, STEP1_STABLE
from experiments.report import markdown_table, save_figure
from probes.command.outputs import legend_beside

EXPERIMENT = PLAYGROUND.experiment


def figure4_playground(path: Path) -> Path:
    """Figure 4 under the authors' reading: a training set of each setting (500 candidates,
    half of those kept) and 100 test points, on the playground's domain."""
    generator = torch.Generator().manual_seed(0)
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2))
    for axis, setting in zip(axes, SETTINGS, strict=True):
        inputs, latent = sample_authors_toy(setting, generator)
        test, _ = sample_authors_toy("test", generator, test_count=100)
        positive = latent[:, 0] == 1
        axis.scatter(*inputs[positive].T, marker="o", s=12, color="C0", label="train, Y1 = 1")
        axis.scatter(*inputs[~positive].T, marker="^", s=12, color="C1", label="train, Y1 = 0")
        axis.scatter(*test.T, marker="x", s=12, color="grey", label="test (1, 1), Y1 = 1")
        axis.set_xlim(*PLAYGROUND.extent[:2]), axis.set_ylim(*PLAYGROUND.extent[2:])
        axis.set_xlabel("X1 (x)"), axis.set_ylabel("X2 (y)")
        axis.set_title(f"Figure 4, the authors' data: setting {setting} ({len(inputs)} training "
                       "points)", fontsize=9)  # fmt: skip
    legend_beside(axes[-1])  # the same markers in both panels
    return save_figure(fig, path)


def playground_curves(records: Records, scale: Scale, path: Path) -> Path:
    """Accuracy on the training and test points after every playground step (pass), mean and
    spread over seeds, both settings."""
    curves = {}
    for setting in SETTINGS:
        for split in ("train", "test"):
            series = []
            for seed in scale.seeds:
                kept = records[(EXPERIMENT, setting, seed)]["curves"]
                series.append(pd.Series(kept[split], index=pd.Index(kept["passes"])))
            curves[(setting, split)] = mean_and_spread(series)
    fig, axis = plt.subplots(figsize=(6, 4))
    plot_curves(axis, curves, "Toy, the authors' playground (not in the paper's Figure 3)",
                "accuracy")  # fmt: skip
    axis.set_xlabel("playground step (pass over the training points)")
    return save_figure(fig, path)


def playground_figures(records: Records, scale: Scale, folder: Path) -> dict[str, Path]:
    """Figures 4-6 and the curves of the authors' reading."""
    last = scale.steps[EXPERIMENT]
    setting5, seed5 = figure5_run(scale)
    grids5 = y1_grids(records[(EXPERIMENT, setting5, seed5)])
    return {
        "fig4_toy_playground_data": figure4_playground(folder / "fig4_toy_playground_data.png"),
        "fig5_toy_playground_boundary_steps": boundary_figure(
            [(f"after {step} playground steps", grid) for step, grid in grids5.items()], 4,
            f"Figure 5, the authors' playground: setting {setting5}, seed {seed5}: P(Y1 = 1) "
            "after each step (pass)", folder / "fig5_toy_playground_boundary_steps.png",
            PLAYGROUND),
        "fig6_toy_playground_boundary_seeds": boundary_figure(
            [(f"{s}, seed {seed}", y1_grids(records[(EXPERIMENT, s, seed)])[last])
             for s in SETTINGS for seed in scale.seeds], len(scale.seeds),
            f"Figure 6, the authors' playground: after {last} steps, settings A (top) and B "
            "(bottom)", folder / "fig6_toy_playground_boundary_seeds.png", PLAYGROUND),
        "fig3c_toy_playground": playground_curves(
            records, scale, folder / "fig3c_toy_playground.png"),
    }  # fmt: skip


TOY_SETTINGS = [
    ("inputs", "X_i = Y_i - U[0, 1], in (-1, 1]", "text, section 6",
     "x, y ~ U(-5, 5), each pushed 0.3 from its axis: in +-[0.3, 5.3]",
     "BCDLSG efb6c20 `dataset.ts` lines 196-200"),
    ("label", "Y1", "text, section 6", "Y1 = 1 where x >= 0 (playground target +1, else -1)",
     "`dataset.ts` line 192"),
    ("setting A", "(Y1, Y2) uniform on (0,0), (0,1), (1,0)", "text, section 6",
     "the upper-right quadrant (x > 0, y > 0) dropped", "`dataset.ts` line 204"),
    ("noise", "none beyond U[0, 1]", "text", "0", "playground default, `src/state.ts` line 140"),
    ("training points", "3,000, batches drawn with replacement", "suite",
     "500 candidates, the ~375 kept shuffled, the first half trained on (~187; count varies "
     "with the seed)", "`src/playground.ts` lines 52, 1079-1084; `percTrainData` 50, "
     "`src/state.ts` line 144"),
    ("test points", "1,000 of (1, 1)", "text (test (1, 1)); count: suite",
     "1,000 of the upper-right quadrant drawn the same way", "suite (the playground's own test "
     "half is training-distribution data)"),
    ("setting B", "Y1 = 1 w.p. 1/3, Y2 independent", "suite (not in the paper)",
     "the same latents on the authors' scale, 375 points, half trained on", "suite"),
    ("hidden layers", "3 x 8 ReLU", "text, section 6; Appendix C", "3 x 8 ReLU",
     "text (the playground's default activation is tanh, `src/state.ts` line 145)"),
    ("output, loss", "two logits, cross-entropy", "Appendix C: 'two output nodes'; loss: suite",
     "one tanh unit o, 0.5 (o - t)^2 on t = +-1", "`src/playground.ts` lines 956-957, 914; "
     "`src/nn.ts` lines 94-98, 115-121"),
    ("initialisation", "torch's defaults", "suite",
     "weights U(-0.5, 0.5), biases 0.1", "`src/nn.ts` lines 161, 25"),
    ("optimizer", "SGD, learning rate 0.1", "Appendix C", "SGD, learning rate 0.1, no "
     "regularization", "Appendix C; `src/nn.ts` lines 335-376, `src/state.ts` lines 138, 146"),
    ("a step", "one update on 10 points", "Appendix C: batch 10, 1,024 steps (suite's reading)",
     "one pass in order, an update after every 10 points (~18 a pass, ~18,400 in all), "
     "leftover points carried into the next pass's first update",
     "`src/playground.ts` lines 909-918; `src/nn.ts` lines 343, 357-358"),
    ("evaluation", "after every update, on 1,000-point samples", "suite",
     "after every pass, on all points", "`src/playground.ts` lines 920-921"),
    ("decision boundary", "201 x 201 grid on [-1, 1]", "suite (the data's range)",
     "100 x 100 grid on [-6, 6]", "`src/playground.ts` lines 54, 156, 807-808"),
    ("seeds", "model and data seeded by the run's seed", "suite",
     "the same", "suite (the playground seeds `Math.random` by its `seed` before drawing the "
     "data, `src/playground.ts` line 1074; its weights come from the same stream)"),
]  # fmt: skip
"""The toy's settings under both readings, each with its source. `dataset.ts` is
`yuanpeng16/BCDLSG` at efb6c20; `src/` files are `tensorflow/playground` (02469bd; `nn.ts`
unchanged since 2017, `playground.ts` since 2018)."""


def settings_table() -> str:
    columns = ["setting", "text's reading", "source", "authors' reading (playground)", "source "]
    return markdown_table(pd.DataFrame(TOY_SETTINGS, columns=columns), index=False)


def playground_section(tables: dict[str, pd.DataFrame], scale: Scale) -> str:
    """The report's section on the toy's two readings."""
    low, high = STEP1_MIDDLE
    return f"""
## The toy under the authors' reading: the TensorFlow Playground

The authors ran the toy in the TensorFlow Playground with their own `dataset.ts`; the second
reading trains it that way (`experiments/configs/paper3/toy_2d_playground.yaml`, runs
`toy_2d_playground_<setting>`, {scale.steps[EXPERIMENT]:,} playground steps) and decides the
toy's claims again by the same rules on the playground's grid (ids `playground.toy.*`). A run
logs its accuracy on the first {scale.eval_size[EXPERIMENT]:,} training and test points after
every playground step (where the playground computes its losses, `src/playground.ts` lines
920-921; 1,000 is every training point, there are about 187) and keeps its weights after steps
0-8 and each power of 2 (`weights/epoch=<step - 1>`, step 0 `epoch=init`). The text's reading
stays the primary one. What differs, with the source of each setting:

{settings_table()}

![Figure 4, playground](figures/fig4_toy_playground_data.png)

![Figure 5, playground](figures/fig5_toy_playground_boundary_steps.png)

![Figure 6, playground](figures/fig6_toy_playground_boundary_seeds.png)

Per run: accuracy on the training points and on the upper-right test points after the last
playground step, and the X2 dependence of its Y1 prediction (share of the X1 columns in [0.3,
5.3] whose predicted Y1 changes as X2 moves over [-5.3, 5.3]). A setting-A run fails on the test
when its test accuracy falls over {TOY_FAIL} further below its training accuracy than that of
setting B's run of the same seed (the control) does; it depends on X2 when its X2 dependence is
over {TOY_DEPENDENT} above the control's.

{markdown_table(tables["toy_2d_playground"], 3, index=False)}

![Toy curves, playground](figures/fig3c_toy_playground.png)

### Figure 5's process under both readings (`*toy.step1_boundary_stable`)

The paper: the first update pushes the boundary "to the middle of upper right area" and "in the
following steps ... the boundary remains stable". Per run, the share of the upper-right
quadrant's data area predicted Y1 = 1 before training and after step 1 (text: one update of 10
points; playground: one pass, about 18 updates), and the largest share of the quadrant whose
prediction differs from step 1's at a later step of Figure 5. The rule holds for a run when the
step-1 share is in [{low}, {high}] and the largest change is at most {STEP1_STABLE}.

{markdown_table(tables["toy_boundary_over_training"], 3, index=False)}
"""
