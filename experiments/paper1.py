"""`make reproduce-paper1`: Baan et al. 2019, "On the Realization of Compositionality in Neural
Networks", section 2 and Appendix A (Tables 5-6).

Trains 5 baseline and 5 Attentive-Guidance GRU seq2seq models on the lookup-table task through
the suite's CLI (`python -m experiments fit --config experiments/configs/paper1/<variant>.yaml`,
so each run is what a user gets by hand), tests each best checkpoint on the four test sets, and
writes `reports/paper1/{report.md, results.json, figures/}` with the paper's values beside ours.

Scale (`SCALE` or `--scale`): `paper` = the configs as they are (100 epochs); `default` = the
same models and data for 40 epochs (47 minutes on 2 CPU cores), because paper scale would take
about 110 minutes (12.8 s per epoch per model with two models training at once).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from experiments.paper1_ablations import (  # noqa: E402
    COMPONENTS,
    Substitution,
    pruned_accuracy,
    retrain_pruned,
)
from experiments.runner import fit, run_all  # noqa: E402
from probes.runs import RunFolder  # noqa: E402
from experiments.report import (  # noqa: E402
    Claim,
    Measured,
    compare_means,
    current_commit,
    threshold_claim,
    write_report,
)

CONFIGS = Path(__file__).parent / "configs" / "paper1"
PAPER = json.loads((Path(__file__).parent / "paper_values" / "paper1.json").read_text())
SPLITS: list[str] = PAPER["splits"]
ABBREVIATION: dict[str, str] = PAPER["split_abbreviations"]
VARIANTS = ("baseline", "guided")
SEEDS = (1, 2, 3, 4, 5)
TABLES = {  # variant -> (key in paper_values/paper1.json, table name, title, colour)
    "baseline": ("table5_baseline", "Table 5", "Table 5: baseline GRU models", "tab:blue"),
    "guided": ("table6_guided", "Table 6", "Table 6: Attentive Guidance GRU models", "tab:orange"),
}


@dataclass(frozen=True)
class Scale:
    """How much of the paper a reproduction runs; every fit gets `overrides` too."""

    train_epochs: int | None  # None: the configs' 100
    substitution_epochs: int  # section 5.1: "a maximum of 100 epochs"
    pruning_epochs: int  # section 5.2: "re-training the network for 20 epochs"
    pairs: int  # model pairs in the substitutions (Table 4: "averaged over three models")
    components: tuple[str, ...] = tuple(COMPONENTS)
    overrides: tuple[str, ...] = ()

    def epochs(self, count: int | None) -> list[str]:
        return ["--trainer.max_epochs", str(count)] if count is not None else []


SCALES = {
    "paper": Scale(None, 100, 20, 3),
    "default": Scale(40, 5, 20, 3),
    # A minute-long check of the whole pipeline (used by the tests), not a reproduction.
    "smoke": Scale(1, 1, 1, 1, ("Encoder", "Decoder W_hh"), overrides=(
        "--trainer.limit_train_batches", "20",
        "--model.hidden_size", "16", "--model.decoder_embedding_size", "16",
    )),
}  # fmt: skip


def paper_values(variant: str, split: str) -> list[float]:
    """The paper's per-run sequence accuracies of `variant` on `split` (Tables 5-6)."""
    column = SPLITS.index(split)
    return [row[column] for row in PAPER[TABLES[variant][0]]]


def our_values(
    measured: dict[str, list[dict[str, float]]], variant: str, split: str
) -> list[float]:
    """Our per-run sequence accuracies of `variant` on `split`, in seed order."""
    return [run[split] for run in measured[variant]]


def run_dir(root: Path, variant: str, seed: int) -> Path:
    return root / "paper1" / variant / f"seed={seed}"


def test_accuracies(run: Path) -> dict[str, float]:
    """Sequence accuracy of the tested best checkpoint per test split, from `metrics.csv`."""
    return {split: RunFolder(run).test_accuracy(split) for split in SPLITS}


def train(variant: str, seed: int, scale: Scale, root: Path, reuse: bool) -> Path:
    """One model of Tables 5-6 through the CLI; returns its run folder."""
    run = run_dir(root, variant, seed)
    arguments = [
        "--config", str(CONFIGS / f"{variant}.yaml"),
        "--seed_everything", str(seed),
        "--run.root", str(root),
        "--trainer.enable_progress_bar", "false",
        *scale.epochs(scale.train_epochs),
        *scale.overrides,
    ]  # fmt: skip
    fit(run, arguments, reuse)
    return run


def train_all(scale: Scale, root: Path, jobs: int, reuse: bool) -> dict[str, list[dict[str, float]]]:
    """Every variant and seed, `jobs` at a time; their test accuracies by variant, seed order."""
    tasks = {
        (variant, seed): functools.partial(train, variant, seed, scale, root, reuse)
        for variant in VARIANTS
        for seed in SEEDS
    }

    def describe(key, run):
        scores = " ".join(f"{ABBREVIATION[s]} {test_accuracies(run)[s]:.2f}" for s in SPLITS)
        return f"{key[0]} seed={key[1]}: {scores}"

    runs = run_all(tasks, jobs, describe)
    return {v: [test_accuracies(runs[(v, seed)]) for seed in SEEDS] for v in VARIANTS}


def ablations(scale: Scale, root: Path, jobs: int, reuse: bool) -> dict:
    """Section 5: every substitution of `scale` and the pruning retrains, `jobs` at a time.

    Returns new-composition accuracies: `substitution[(receiver, component)]` per pair seed,
    and `pruning` with `before`/`after` retraining per guided seed and the units kept."""
    trained = functools.partial(run_dir, root)
    base = [*scale.epochs(scale.substitution_epochs), *scale.overrides]
    tasks = {}
    for receiver in VARIANTS:
        for component in scale.components:
            for seed in SEEDS[: scale.pairs]:
                job = Substitution(receiver, component, seed)
                tasks[job] = functools.partial(job.run, root, base, CONFIGS, trained, reuse)
    pruning_base = [*scale.epochs(scale.pruning_epochs), *scale.overrides]
    for seed in SEEDS:
        tasks[("pruned", seed)] = functools.partial(
            retrain_pruned, root, seed, pruning_base, CONFIGS, trained, reuse
        )

    def describe(key, run):
        name = key.variant if isinstance(key, Substitution) else "pruned/guided"
        return f"{name} seed={key[1] if isinstance(key, tuple) else key.seed}: NC " + (
            f"{RunFolder(run).test_accuracy('new_compositions'):.2f}"
        )

    runs = run_all(tasks, jobs, describe)
    substitution: dict[tuple[str, str], list[float]] = {}
    for key, run in runs.items():
        if isinstance(key, Substitution):
            accuracy = RunFolder(run).test_accuracy("new_compositions")
            substitution.setdefault((key.receiver, key.component), []).append(accuracy)
    pruning = {"before": [], "after": [], "kept": []}
    for seed in SEEDS:
        before, kept = pruned_accuracy(run_dir(root, "guided", seed), "new_compositions")
        pruning["before"].append(before)
        pruning["after"].append(RunFolder(runs[("pruned", seed)]).test_accuracy("new_compositions"))
        pruning["kept"].append(kept)
    return {"substitution": substitution, "pruning": pruning}


def table_claims(measured: dict[str, list[dict[str, float]]]) -> list[Claim]:
    """Tables 5-6: mean sequence accuracy per model type and test split, paper vs ours."""
    claims = []
    for variant, (table, name, _, _) in TABLES.items():
        for split in SPLITS:
            claims.append(
                compare_means(
                    f"{table.split('_')[0]}.{split}",
                    f"{name}: {variant} mean sequence accuracy on {split.replace('_', ' ')}",
                    paper_values(variant, split),
                    our_values(measured, variant, split),
                )
            )
    return claims


def pattern_claims(measured: dict[str, list[dict[str, float]]]) -> list[Claim]:
    """The qualitative pattern of section 2.3 / Appendix A, each checked by one statistic."""
    guided = {s: our_values(measured, "guided", s) for s in SPLITS}
    baseline = {s: our_values(measured, "baseline", s) for s in SPLITS}
    near_one = guided["heldout_compositions"] + guided["heldout_inputs"]
    claims = [
        threshold_claim(
            "pattern.guided_heldout_near_perfect",
            "Guided models generalise perfectly to heldout compositions and heldout inputs",
            "1.0 in all 5 runs",
            near_one,
            min(near_one),
            "lowest guided accuracy on HC and HI",
            reproduced_at=0.95,
            partially_at=0.80,
        ),
    ]
    for split in SPLITS:
        gap = Measured.of(guided[split]).mean - Measured.of(baseline[split]).mean
        paper_gap = Measured.of(paper_values("guided", split)).mean
        paper_gap -= Measured.of(paper_values("baseline", split)).mean
        claims.append(
            threshold_claim(
                f"pattern.guided_above_baseline.{split}",
                f"Guided models score far above the baseline on {split.replace('_', ' ')}",
                round(paper_gap, 3),
                [g - b for g, b in zip(guided[split], baseline[split], strict=True)],
                gap / paper_gap,
                "measured gap (guided - baseline mean) / paper gap",
                reproduced_at=0.5,
                partially_at=0.2,
            )
        )
    worst_baseline = max(baseline["new_compositions"])
    claims.append(
        threshold_claim(
            "pattern.baseline_fails_new_compositions",
            "Baseline models fail on new compositions (paper: at most .06)",
            0.06,
            baseline["new_compositions"],
            1 - worst_baseline,
            "1 - best baseline accuracy on NC",
            reproduced_at=0.9,
            partially_at=0.75,
        )
    )
    return claims


def figure(measured: dict[str, list[dict[str, float]]], root: Path, folder: Path) -> Path:
    """Test accuracy per split (paper vs ours) and validation accuracy over training."""
    figure, (bars, curves) = plt.subplots(1, 2, figsize=(12, 4))
    width = 0.2
    for offset, (variant, (_, _, _, colour)) in enumerate(TABLES.items()):
        positions = [i + (offset * 2 - 1.5) * width for i in range(len(SPLITS))]
        paper = [Measured.of(paper_values(variant, s)) for s in SPLITS]
        ours = [Measured.of(our_values(measured, variant, s)) for s in SPLITS]
        bars.bar(
            positions,
            [m.mean for m in paper],
            width,
            yerr=[m.std for m in paper],
            color=colour,
            alpha=0.4,
            label=f"{variant} (paper)",
        )
        bars.bar(
            [p + width for p in positions],
            [m.mean for m in ours],
            width,
            yerr=[m.std for m in ours],
            color=colour,
            label=f"{variant} (ours)",
        )
        for seed in SEEDS:
            metrics = pd.read_csv(run_dir(root, variant, seed) / "metrics.csv")
            validation = metrics.dropna(subset=["val/seq_acc"])
            curves.plot(
                validation["epoch"],
                validation["val/seq_acc"],
                color=colour,
                alpha=0.7,
                label=variant if seed == SEEDS[0] else None,
            )
    bars.set_xticks(range(len(SPLITS)), [ABBREVIATION[s] for s in SPLITS])
    bars.set_ylabel("sequence accuracy")
    bars.set_title("Tables 5-6: test sets (mean ± std over 5 runs)")
    bars.legend(fontsize=7)
    curves.set_xlabel("epoch")
    curves.set_ylabel("validation sequence accuracy")
    curves.set_title("Validation accuracy during training")
    curves.legend()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tables5_6.png"
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def tables_markdown(measured: dict[str, list[dict[str, float]]]) -> str:
    parts = []
    for variant, (_, _, title, _) in TABLES.items():
        header = " | ".join(f"{ABBREVIATION[s]} paper | {ABBREVIATION[s]} ours" for s in SPLITS)
        lines = [f"### {title}", "", f"| run | {header} |", "|---" * (1 + 2 * len(SPLITS)) + "|"]
        paper = {s: paper_values(variant, s) for s in SPLITS}
        ours = {s: our_values(measured, variant, s) for s in SPLITS}
        for index in range(len(measured[variant])):
            cells = " | ".join(f"{paper[s][index]:.2f} | {ours[s][index]:.2f}" for s in SPLITS)
            lines.append(f"| {index + 1} | {cells} |")
        means = " | ".join(
            f"{Measured.of(paper[s]).mean:.2f} | {Measured.of(ours[s]).mean:.2f}" for s in SPLITS
        )
        lines.append(f"| mean | {means} |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def reproduce(scale: str, root: Path, out: Path, jobs: int) -> list[Claim]:
    start = time.time()
    measured = train_all(scale, root, jobs)
    minutes = (time.time() - start) / 60
    claims = table_claims(measured) + pattern_claims(measured)
    figure_path = figure(measured, root, out / "figures")
    epochs = SCALES[scale][1] if SCALES[scale] else "100"  # "--trainer.max_epochs", N
    markdown = f"""# Paper 1: On the Realization of Compositionality in Neural Networks (Tables 5-6)

Baan et al. 2019, section 2 and Appendix A, regenerated by `make reproduce-paper1`.

- **Scale:** `{scale}` (at most {epochs} epochs per model; the paper trained up to 100);
  overrides of the configs: `{" ".join(SCALES[scale]) or "none"}`.
- **Commit:** `{current_commit()}`; **wall time:** {minutes:.1f} min on {os.cpu_count()} CPU
  cores, {jobs} runs at a time.
- **Data:** lookup tables generated by `datamodules.LookupTableDataModule` (seed 0; the
  machine-tasks `sample1` split sizes: train 232, validation 16, heldout inputs 40, heldout
  compositions 64, heldout tables 192, new compositions 32). All 10 runs share the data, as
  the zoo behind the paper did.
- **Models:** 5 baseline and 5 guided GRU seq2seq (seeds {", ".join(map(str, SEEDS))}), encoder
  embedding 16, hidden 512, pre-rnn MLP attention with full focus, batch 1, Adam lr 0.001, no
  teacher forcing; best checkpoint by validation sequence accuracy (ties: lower validation loss).
  Configs: `experiments/configs/paper1/{{baseline,guided}}.yaml`; runs in `{root}/paper1/`.
- **Metric:** sequence accuracy under greedy decoding; a sequence counts when every output token
  (the copied input and each intermediate result, no EOS) is right.

![Tables 5-6 and training curves](figures/{figure_path.name})

{tables_markdown(measured)}
"""
    write_report(out, claims, markdown)
    return claims


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scale", choices=sorted(SCALES), default=os.environ.get("SCALE") or "default"
    )
    parser.add_argument("--runs", type=Path, default=Path("runs"), help="root of run folders")
    parser.add_argument("--out", type=Path, default=Path("reports/paper1"))
    parser.add_argument("--jobs", type=int, default=2, help="runs trained at a time")
    args = parser.parse_args(argv)
    claims = reproduce(args.scale, args.runs, args.out, args.jobs)
    verdicts = [c.verdict for c in claims]
    print(
        f"wrote {args.out / 'report.md'}: "
        + ", ".join(
            f"{verdicts.count(v)} {v}"
            for v in ("reproduced", "partially reproduced", "not reproduced")
        )
    )


if __name__ == "__main__":
    main()
