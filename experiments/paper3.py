"""`make reproduce-paper3`: "Gradient Descent Resists Compositionality", Figures 3-6 and the
claims of sections 5.1, 5.2 and 6.

Three experiments, each in setting A (the redundant input X2 carries label information in
training) and setting B (it does not), 5 runs each, every fit through the suite's CLI
(`python -m experiments fit ...`):
1. two-digit images (5.1, Appendix A): a CNN, the label is the left digit;
2. SCAN add-jump (5.2, Appendix B): a seq2seq LSTM with attention;
3. the toy 2-D problem (6, Appendix C): an MLP, with its decision boundaries over training.
Then `reports/paper3/{report.md, results.json, figures/}` are written and logged to W&B.

Scale (`SCALE` or `--scale`, see `SCALES`): `paper` evaluates every step on 1,000-row samples;
`default` evaluates the images on 250-row samples every step and SCAN on 500-row samples every
10 steps, sized for 2 CPU cores; `smoke` is a minute-long check. Training itself (steps, batch
sizes, optimizers) is the paper's at every scale but `smoke`.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from datamodules.toy_2d import sample_toy_2d  # noqa: E402
from experiments.report import (  # noqa: E402
    Claim,
    Measured,
    claims_frame,
    current_commit,
    graded,
    markdown_table,
    save_figure,
    threshold_claim,
)
from experiments.runner import (  # noqa: E402
    Sitting,
    Stopwatch,
    fit,
    publish,
    reproduction_main,
    reused_note,
    run_all,
    whole_runs_only,
)
from storage import RunLayout  # noqa: E402
from storage.run_folder import RunFolder

CONFIGS = Path(__file__).parent / "configs" / "paper3"
PAPER = json.loads((Path(__file__).parent / "paper_values" / "paper3.json").read_text())
EXPERIMENTS = ("two_digit_images", "scan", "toy_2d")
SETTINGS = ("A", "B")
ACCURACY = {"two_digit_images": "accuracy", "scan": "seq_acc", "toy_2d": "accuracy"}
"""The accuracy metric of each experiment (SCAN: sentence accuracy, as the paper)."""


@dataclass(frozen=True)
class Scale:
    """How much of the paper a reproduction runs."""

    seeds: tuple[int, ...]
    steps: dict[str, int]
    eval_size: dict[str, int]
    scan_eval_interval: int
    overrides: dict[str, tuple[str, ...]]
    """Extra CLI arguments per experiment."""


PAPER_STEPS = {"two_digit_images": 200, "scan": 2000, "toy_2d": 1024}
SCALES = {
    "paper": Scale(
        seeds=(0, 1, 2, 3, 4),
        steps=PAPER_STEPS,
        eval_size={"two_digit_images": 1000, "scan": 1000, "toy_2d": 1000},
        scan_eval_interval=1,
        overrides={},
    ),
    "default": Scale(
        seeds=(0, 1, 2, 3, 4),
        steps=PAPER_STEPS,
        eval_size={"two_digit_images": 250, "scan": 500, "toy_2d": 1000},
        scan_eval_interval=10,
        overrides={},
    ),
    "smoke": Scale(
        seeds=(0, 1),
        steps={"two_digit_images": 6, "scan": 6, "toy_2d": 16},
        eval_size={"two_digit_images": 40, "scan": 40, "toy_2d": 100},
        scan_eval_interval=2,
        overrides={
            "two_digit_images": ("--data.train_pairs", "400", "--data.test_pairs", "200"),
            "scan": ("--data.steps_per_epoch", "3"),
            "toy_2d": ("--data.steps_per_epoch", "8"),
        },
    ),
}


def variant(experiment: str, setting: str) -> str:
    return f"{experiment}_{setting}"


def train(experiment: str, setting: str, seed: int, scale: Scale, root: Path, reuse: bool) -> Path:
    """One run through the CLI; returns its folder. Runs differ in the model's seed and in the
    data's (the sampled pairs, the training draws and, for SCAN setting B, the action words)."""
    name = variant(experiment, setting)
    run = RunLayout.of(root, "paper3", name, seed).path
    arguments = [
        "--config", str(CONFIGS / f"{experiment}.yaml"),
        "--seed_everything", str(seed),
        "--run.root", str(root),
        "--run.variant", name,
        "--trainer.max_steps", str(scale.steps[experiment]),
        "--trainer.enable_progress_bar", "false",
        "--data.setting", setting,
        "--data.data_seed", str(seed),
        "--data.eval_size", str(scale.eval_size[experiment]),
        *(("--trainer.val_check_interval", str(scale.scan_eval_interval))
          if experiment == "scan" else ()),
        *scale.overrides.get(experiment, ()),
    ]  # fmt: skip
    fit(run, arguments, reuse)
    return run


def train_all(scale: Scale, root: Path, jobs: int, reuse: bool) -> dict[tuple, Path]:
    """Every run, longest first so that the pool stays busy."""
    keys = [(e, s, seed) for e in ("scan", "two_digit_images", "toy_2d")
            for s in SETTINGS for seed in scale.seeds]  # fmt: skip
    tasks = {key: functools.partial(train, *key, scale, root, reuse) for key in keys}
    return run_all(tasks, jobs, lambda key, run: f"{variant(*key[:2])} seed={key[2]}")


# ---- reading the runs ------------------------------------------------------------------------
def accuracy_curves(run: RunFolder, experiment: str) -> pd.DataFrame:
    """Accuracy on the training and test samples (columns `train`, `test`) by the number of
    training updates done. Lightning logs a validation row with `step` one below the updates
    done (checked against the weight snapshots: the row of step s matches `step=<s+1>`)."""
    metric = ACCURACY[experiment]
    columns = {f"val/train_sample/{metric}": "train", f"val/test_sample/{metric}": "test"}
    frame = run.metrics()[["step", *columns]].dropna().rename(columns=columns)
    frame.index = pd.Index(frame.pop("step").astype(int) + 1, name="updates")
    return frame


def batch_accuracy(run: RunFolder) -> pd.Series:
    """SCAN: each training batch's sentence accuracy before its update, by updates done."""
    frame = run.metrics()[["step", "train/batch_seq_acc"]].dropna()
    return pd.Series(
        frame["train/batch_seq_acc"].to_numpy(),
        index=pd.Index(frame["step"].astype(int), name="updates"),
    )


def summary(values: list[float]) -> dict[str, float]:
    return {"mean": float(np.mean(values)), "std": float(np.std(values, ddof=1))}


def mean_and_spread(series: list[pd.Series]) -> pd.DataFrame:
    """Mean and standard deviation over runs at every index."""
    stacked = pd.concat(series, axis=1)
    return pd.DataFrame({"mean": stacked.mean(axis=1), "std": stacked.std(axis=1)})


def final_accuracies(run: RunFolder, experiment: str) -> dict[str, float]:
    """Accuracy of the weights after the last step on all training and all test data."""
    metric = ACCURACY[experiment]
    train, test = (run.test_accuracy(split, metric) for split in ("train", "test"))
    return {"train": train, "test": test, "gap": train - test}


# ---- the toy problem's decision boundary (section 6) -----------------------------------------
GRID = torch.arange(-100, 101) / 100
"""Both axes of the grid the toy model's Y1 prediction is read on: the data's range."""


@torch.no_grad()
def y1_probability(model, state: dict[str, torch.Tensor]) -> torch.Tensor:
    """P(Y1 = 1) on `GRID` x `GRID`, `[x2, x1]` (rows X2, columns X1)."""
    model.load_state_dict(state)
    x2, x1 = torch.meshgrid(GRID, GRID, indexing="ij")
    logits = model(torch.stack([x1.flatten(), x2.flatten()], -1))
    return logits.softmax(-1)[:, 1].reshape(len(GRID), len(GRID))


def x2_dependence(probability: torch.Tensor) -> float:
    """Share of the X1 columns in (0, 1] (where Y1 = 1) whose predicted Y1 changes as X2 moves
    over [-1, 1]. A compositional model (Y1 read from X1 alone) has 0."""
    predicted = probability[:, GRID > 0] > 0.5
    return float((predicted.any(0) & ~predicted.all(0)).float().mean())


# ---- claims ----------------------------------------------------------------------------------
def greater_claim(id: str, a: list[float], b: list[float], statistic: str, margin: float) -> Claim:
    """Setting A's statistic exceeds setting B's. Runs are paired by seed (the same seed gives
    the same data seed in both settings). Rule: with d the per-seed differences A - B,
    reproduced if mean(d) > max(2 SE(d), `margin`), partially if mean(d) > 0, else not."""
    differences = [x - y for x, y in zip(a, b, strict=True)]
    measured = Measured.of(differences)
    standard_error = measured.std / np.sqrt(measured.n)
    threshold = max(2 * standard_error, margin)
    rule = (
        f"{statistic}: A {np.mean(a):.3f} vs B {np.mean(b):.3f}; mean per-seed difference A - B "
        f"= {measured.mean:.3f}; reproduced if > max(2 SE, {margin}) = {threshold:.3f}, "
        "partially if > 0"
    )
    verdict = graded(measured.mean > threshold, measured.mean > 0)
    return Claim(id, FINDINGS[id], "A > B (figure)", measured, rule, verdict)


def every_seed_claim(id: str, holds: list[bool], values: list[float], statistic: str) -> Claim:
    """A finding the paper states for every seed: reproduced if it holds for every seed,
    partially if for at least one, else not."""
    share = sum(holds) / len(holds)
    return threshold_claim(
        id, FINDINGS[id], "every seed (figure)", values, share,
        f"share of seeds where {statistic}", reproduced_at=1.0, partially_at=1 / len(holds),
    )  # fmt: skip


FINDINGS: dict[str, str] = PAPER["findings"]
EARLY_IMAGE_STEPS = (1, 50)
"""Section 5.1 names no steps: the first quarter of the 200 steps is compared."""
EARLY_SCAN_STEPS = (10, 25)
"""Section 5.2: "during the early training (steps 10-25)"."""
MARGIN = {"early": 0.02, "gap": 0.05}
"""Smallest difference of accuracies called "faster" (2 points) or a "larger gap" (5 points)."""
TOY_FAIL = 0.1
"""The toy model fails on (1, 1) when its test accuracy is over 10 points below its training
accuracy."""
TOY_DEPENDENT = 0.05
"""The toy model's Y1 depends on X2 when over 5% of the X1 columns in (0, 1] change with X2."""
TOY_STEPS = (0, 1, 2, 3, 4, 8, 64, 1024)
"""Figure 5's panels: the paper shows steps 0, 1, 2, ... and the end of training."""


# ---- figures ---------------------------------------------------------------------------------
COLOURS = {("A", "train"): "C0", ("A", "test"): "C9", ("B", "train"): "C3", ("B", "test"): "C5"}
"""Figure 3's colours: A train blue, A test cyan, B train red, B test brown."""


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
    axis.legend(fontsize=8)


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
        axis.legend(fontsize=7, loc="lower left")
    return save_figure(fig, path)


def boundary_panel(axis, probability: torch.Tensor, title: str) -> None:
    extent = (-1, 1, -1, 1)
    axis.imshow(probability.numpy(), origin="lower", extent=extent, cmap="coolwarm_r",
                vmin=0, vmax=1)  # fmt: skip
    axis.contour(GRID.numpy(), GRID.numpy(), probability.numpy(), levels=[0.5], colors="k")
    axis.axhline(0, color="grey", lw=0.5), axis.axvline(0, color="grey", lw=0.5)
    axis.set_title(title, fontsize=8)
    axis.set_xticks([-1, 0, 1]), axis.set_yticks([-1, 0, 1])


def boundary_figure(panels: list[tuple[str, torch.Tensor]], columns: int, title: str,
                    path: Path) -> Path:  # fmt: skip
    """Figures 5 and 6: P(Y1 = 1) (blue 1, red 0) and the decision boundary (black) over X1
    (horizontal) and X2 (vertical); the test area is the upper right quadrant."""
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(2.4 * columns, 2.4 * rows + 0.4),
                             squeeze=False)  # fmt: skip
    for axis, (name, probability) in zip(axes.flat, panels, strict=False):
        boundary_panel(axis, probability, name)
    for axis in list(axes.flat)[len(panels) :]:
        axis.axis("off")
    fig.suptitle(title, fontsize=9)
    return save_figure(fig, path)


# ---- the reproduction ------------------------------------------------------------------------
def reproduce(scale_name: str, out: Path, sitting: Sitting) -> list[Claim]:
    """Train both settings of every experiment, measure their curves and the toy's boundaries,
    report."""
    whole_runs_only("paper 3", sitting)
    root, jobs, reuse = sitting.root, sitting.jobs, sitting.reuse
    scale = SCALES[scale_name]
    clock = Stopwatch()
    with clock.stage("training"):
        paths = train_all(scale, root, jobs, reuse)
    with clock.stage("analyses"):
        runs = {key: RunFolder(path) for key, path in paths.items()}
        measured = measure(runs, scale)
        claims, early_frame = learning_claims(measured)
        toy, toy_frame = toy_boundaries(runs, scale, measured["final"])
        claims += toy_claims(toy_frame)
        figures = paper3_figures(measured, toy, scale, out / "figures")
    final_frame = pd.DataFrame([
        {"experiment": e, "setting": s}
        | {f"{k} {stat}": value for k in ("train", "test", "gap")
           for stat, value in summary([f[k] for f in measured["final"][(e, s)]]).items()}
        for e in EXPERIMENTS for s in SETTINGS
    ])  # fmt: skip
    first = scale.seeds[0]
    sources = {e: runs[(e, "A", first)].datamodule("last").data_source for e in EXPERIMENTS}
    markdown = report_text(scale_name, scale, sources, final_frame, early_frame, toy_frame,
                           clock, runs)  # fmt: skip
    publish(out, "paper3", claims, markdown, root, figures, {
        "claims": claims_frame(claims), "final_accuracy": final_frame,
        "early_training": early_frame, "toy_2d": toy_frame,
    })  # fmt: skip
    return claims


def measure(runs: dict[tuple, RunFolder], scale: Scale) -> dict:
    """Per (experiment, setting), one entry per seed: final accuracies (`final`), accuracy curves
    (`curves`) and, for SCAN, training-batch accuracies (`scan_batches`, per setting)."""

    def per_seed(experiment, setting, read):
        return [read(runs[(experiment, setting, seed)]) for seed in scale.seeds]

    return {
        "final": {(e, s): per_seed(e, s, lambda run, e=e: final_accuracies(run, e))
                  for e in EXPERIMENTS for s in SETTINGS},
        "curves": {(e, s): per_seed(e, s, lambda run, e=e: accuracy_curves(run, e))
                   for e in EXPERIMENTS for s in SETTINGS},
        "scan_batches": {s: per_seed("scan", s, batch_accuracy) for s in SETTINGS},
    }  # fmt: skip


def spread(measured: dict, experiment: str) -> dict[tuple[str, str], pd.DataFrame]:
    """Mean and spread over seeds of `experiment`'s train and test curves, per setting."""
    return {(s, split): mean_and_spread([c[split] for c in measured["curves"][(experiment, s)]])
            for s in SETTINGS for split in ("train", "test")}  # fmt: skip


def learning_claims(measured: dict) -> tuple[list[Claim], pd.DataFrame]:
    """Sections 5.1-5.2: setting A learns faster early and generalises worse (images and SCAN);
    with the table of early accuracies."""

    def early(frames, steps):
        return [float(f.loc[steps[0] : steps[1]].mean()) for f in frames]

    claims = []
    image_early = {s: early([c["train"] for c in measured["curves"][("two_digit_images", s)]],
                            EARLY_IMAGE_STEPS) for s in SETTINGS}  # fmt: skip
    scan_early = {s: early(measured["scan_batches"][s], EARLY_SCAN_STEPS) for s in SETTINGS}
    for name, experiment, early_values, steps in (
        ("images", "two_digit_images", image_early, EARLY_IMAGE_STEPS),
        ("scan", "scan", scan_early, EARLY_SCAN_STEPS),
    ):
        where = ("training-sample accuracy" if name == "images"
                 else "training-batch sentence accuracy")  # fmt: skip
        claims.append(greater_claim(
            f"{name}.faster_early", early_values["A"], early_values["B"],
            f"mean {where} over steps {steps[0]}-{steps[1]}", MARGIN["early"],
        ))  # fmt: skip
        gaps = {s: [f["gap"] for f in measured["final"][(experiment, s)]] for s in SETTINGS}
        claims.append(greater_claim(
            f"{name}.gap_larger", gaps["A"], gaps["B"],
            "train - test accuracy after the last step (all data)", MARGIN["gap"],
        ))  # fmt: skip
    early_frame = pd.DataFrame([
        {"experiment": name, "setting": s, "steps": f"{steps[0]}-{steps[1]}"} | summary(values[s])
        for name, values, steps in (
            ("two-digit images (training sample)", image_early, EARLY_IMAGE_STEPS),
            ("SCAN (training batches)", scan_early, EARLY_SCAN_STEPS),
        )
        for s in SETTINGS
    ])  # fmt: skip
    return claims, early_frame


def toy_boundaries(
    runs: dict[tuple, RunFolder], scale: Scale, final: dict
) -> tuple[dict, pd.DataFrame]:
    """Section 6: P(Y1 = 1) over the grid after each snapshot step, per (setting, seed); and per
    run its accuracies and X2 dependence after the last step."""
    toy = {}
    for setting in SETTINGS:
        for seed in scale.seeds:
            run = runs[("toy_2d", setting, seed)]
            model = run.model("last")
            last = scale.steps["toy_2d"]  # the config snapshots every step of TOY_STEPS and 16
            tags = [f"step={n}" for n in sorted({n for n in TOY_STEPS if n <= last} | {last})]
            toy[(setting, seed)] = {tag: y1_probability(model, run.state_dict(tag)) for tag in tags}
    last_tag = f"step={scale.steps['toy_2d']}"
    toy_rows = []
    for (setting, seed), probabilities in toy.items():
        accuracies = final[("toy_2d", setting)][scale.seeds.index(seed)]
        toy_rows.append({"setting": setting, "seed": seed, "train accuracy": accuracies["train"],
                         "test (1,1) accuracy": accuracies["test"],
                         "X2 dependence": x2_dependence(probabilities[last_tag])})  # fmt: skip
    return toy, pd.DataFrame(toy_rows)


def toy_claims(toy_frame: pd.DataFrame) -> list[Claim]:
    """Section 6: in setting A every seed fails on (1, 1) and depends on X2."""
    toy_a = toy_frame[toy_frame.setting == "A"]
    fails = (toy_a["test (1,1) accuracy"] < toy_a["train accuracy"] - TOY_FAIL).tolist()
    dependent = (toy_a["X2 dependence"] > TOY_DEPENDENT).tolist()
    return [
        every_seed_claim(
            "toy.fails_on_test", fails, toy_a["test (1,1) accuracy"].tolist(),
            f"setting A's test accuracy on (1, 1) < its training accuracy - {TOY_FAIL}",
        ),
        every_seed_claim(
            "toy.depends_on_x2", dependent, toy_a["X2 dependence"].tolist(),
            f"setting A's X2 dependence > {TOY_DEPENDENT} (share of X1 columns in (0, 1] whose "
            "predicted Y1 changes with X2)",
        ),
    ]  # fmt: skip


def paper3_figures(measured: dict, toy: dict, scale: Scale, folder: Path) -> dict[str, Path]:
    """Figures 3-6."""
    first = scale.seeds[0]
    last_tag = f"step={scale.steps['toy_2d']}"
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
            [(f"after {tag.split('=')[1]} steps", p) for tag, p in toy[("A", first)].items()],
            4, f"Figure 5: setting A, seed {first}: P(Y1 = 1) after each step",
            folder / "fig5_toy_boundary_steps.png"),
        "fig6_toy_boundary_seeds": boundary_figure(
            [(f"{s}, seed {seed}", toy[(s, seed)][last_tag]) for s in SETTINGS
             for seed in scale.seeds], len(scale.seeds),
            f"Figure 6: after {scale.steps['toy_2d']} steps, settings A (top) and B (bottom)",
            folder / "fig6_toy_boundary_seeds.png"),
    }  # fmt: skip


def report_text(scale_name, scale, sources, final_frame, early_frame, toy_frame,
                clock: Stopwatch, runs) -> str:  # fmt: skip
    reused = reused_note([run.path for run in runs.values()], clock.began)
    names = {"two_digit_images": "images", "scan": "SCAN", "toy_2d": "toy"}

    def per_experiment(values: dict) -> str:
        return ", ".join(f"{names[e]} {values[e]:,}" for e in EXPERIMENTS)

    return f"""# Paper 3: Gradient Descent Resists Compositionality

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
- **Commit** `{current_commit()}`; wall time {clock.minutes["training"]:.1f} min training,
  {clock.minutes["analyses"]:.1f} min analysis (2 CPU cores, 2 runs at a time).{reused}
- **Runs:** `runs/paper3/<experiment>_<setting>/seed=<s>/` with `metrics.csv`, the weights after
  every "epoch" (`weights/`; the toy's after steps 0-8 and each power of 2 up to 1,024), and traces
  (`traces/test_sample/`; SCAN: encoder and decoder states and gates, attention).

## Figure 3a: two-digit images (section 5.1)

![Figure 3a](figures/fig3a_two_digit_images.png)

## Figure 3b: SCAN add-jump (section 5.2)

Left: sentence accuracy on the samples, every {scale.scan_eval_interval} steps. Right: each
training batch's sentence accuracy measured before its own update, every step (with teacher
forcing, which gives the same sentence accuracy as greedy decoding: a sentence is right under
one exactly when it is right under the other).

![Figure 3b](figures/fig3b_scan.png)

## Accuracy after the last step (all training and test data)

{markdown_table(final_frame, 3, index=False)}

## Early training (the "trains faster" claims)

{markdown_table(early_frame, 3, index=False)}

## The toy 2-D problem (section 6): Figures 4-6

![Figure 4](figures/fig4_toy_data.png)

![Figure 5](figures/fig5_toy_boundary_steps.png)

![Figure 6](figures/fig6_toy_boundary_seeds.png)

Per run: accuracy on the training points and on the (1, 1) test points after the last step, and
the X2 dependence of its Y1 prediction (share of the X1 columns in (0, 1] whose predicted Y1
changes as X2 moves over [-1, 1]; 0 for a compositional model).

{markdown_table(toy_frame, 3, index=False)}

![Toy curves](figures/fig3c_toy_2d.png)

{READINGS}"""


READINGS = """## How the paper's terse descriptions were read

- **Images:** section 5.1 says "three convolution layers and two fully-connected layers";
  Appendix A lists two convolutions, a max-pool and two dense layers, which is what is built.
  "Hinge loss" is torch's multi-class margin loss (Weston-Watkins); TensorFlow's initialisation
  is replaced by torch's. Training pairs are drawn with replacement from 60,000 pairs (one per
  draw of a left digit), test pairs from the MNIST test images.
- **SCAN:** the decoder (64) starts from the bidirectional encoder's states (2 x 16) at the first
  and last source positions, concatenated (hidden and cell); attention is additive (MLP, ReLU
  as in i-machine-think) after the decoder step, its context joining the state in the output
  layer; the learning rate decays continuously (TensorFlow's `exponential_decay`). Setting B
  redraws every action word (walk, look, run, jump) of every training command uniformly at
  random and recomputes the actions, so words and actions still correspond; its test set is the
  original one.
- **Toy:** two output units are the logits of Y1 (Figure 4 is "for Y1 output"), cross-entropy,
  plain SGD; 3,000 training points. Setting B (not shown in the paper) draws Y2 independently of
  Y1, so X2 carries no information about Y1.
"""


def main(argv: list[str] | None = None) -> list[Claim]:
    return reproduction_main(
        "Reproduce paper 3 (Gradient Descent Resists Compositionality).", SCALES,
        "reports/paper3", reproduce, argv,
    )  # fmt: skip


if __name__ == "__main__":
    main()
