"""Paper 1's ablation studies (Baan et al. 2019, section 5), as fits through the suite's CLI.

Component substitution (5.1, Table 4): a component of one trained model, frozen, in the other
model, which is retrained by its own procedure (guided with Attentive Guidance, baseline
without) at lr 0.001, then tested on new compositions. Both directions, model pairs of the
same seed. Pruning (5.2): every encoder and decoder unit but the 5% with the strongest
connections held at zero; new-composition accuracy before and after retraining. The registered
controls and readings (`--section5-controls`): the same retrains with nothing frozen or removed,
the units ranked by strong edges, and the units' weights zeroed instead of masked.

Each retrain is `python -m experiments fit --config <receiver>.yaml` with `LoadWeights`
callbacks (the receiver's own best checkpoint, then the donor's component, frozen) or with
`--model.removed_units` (or a `ZeroUnits` callback), so a user can run any one of them by hand
from its `command.txt`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from experiments.paper1.analyses import THRESHOLDS  # noqa: E402
from experiments.paper1.scales import COMPONENTS  # noqa: E402
from experiments.report import (  # noqa: E402
    CLOSE,
    Claim,
    Measured,
    cannot_fail,
    compare_means,
    compare_summaries,
    direction_claim,
    save_figure,
    threshold_claim,
)
from lightning_modules.recurrent import removal_edits  # noqa: E402
from probes.command.outputs import SMALLEST_POINTS  # noqa: E402
from probes.interventions import pruned_units, split_accuracy  # noqa: E402
from storage import RunLayout  # noqa: E402
from storage.run_folder import RunFolder

OPPOSITE = {"guided": "baseline", "baseline": "guided"}


def slug(component: str) -> str:
    return component.lower().replace(" ", "_")


def load_weights(checkpoint: Path, parameters: list[str] | None = None, freeze: bool = False):
    """A `--trainer.callbacks+=` argument adding a `LoadWeights` callback."""
    init = {"checkpoint": str(checkpoint), "parameters": parameters, "freeze": freeze}
    callback = {"class_path": "lightning_modules.callbacks.LoadWeights", "init_args": init}
    return f"--trainer.callbacks+={json.dumps(callback)}"


@dataclass(frozen=True)
class Substitution:
    receiver: str  # variant retrained: guided or baseline
    component: str | None  # key of COMPONENTS, taken from the opposite variant and frozen;
    # None: the control, the receiver retrained the same way with nothing taken or frozen
    seed: int
    selection: str = "best"  # the checkpoint of receiver and donor the retrain starts from

    @property
    def variant(self) -> str:
        if self.component is None:
            return f"control/{self.receiver}_retrained"
        donor = OPPOSITE[self.receiver]
        return f"substitution/{self.receiver}_with_{donor}_{slug(self.component)}"

    def arguments(self, root: Path, base: list[str], configs: Path, trained) -> list[str]:
        """The fit arguments retraining the receiver of `trained(variant, seed)` with the
        donor's component frozen (the control: nothing frozen); `base` holds the scale's data
        and overrides."""
        own = RunLayout(trained(self.receiver, self.seed)).checkpoint(self.selection)
        donor = RunLayout(trained(OPPOSITE[self.receiver], self.seed)).checkpoint(self.selection)
        taken = [] if self.component is None else [
            load_weights(donor, COMPONENTS[self.component], freeze=True)
        ]  # fmt: skip
        arguments = [
            "--config",
            str(configs / f"{self.receiver}.yaml"),
            "--seed_everything",
            str(self.seed),
            "--run.root",
            str(root),
            "--run.variant",
            self.variant,
            "--trainer.enable_progress_bar",
            "false",
            *base,
            load_weights(own),
            *taken,
        ]
        return arguments


PRUNED_BY_EDGES = "pruned_by_edges/guided"
"""Section 5.2's pruning with the units ranked by strong-edge count (`--section5-controls`)."""
PRUNED_ZEROED, PRUNED_BY_EDGES_ZEROED = "pruned_zeroed/guided", "pruned_by_edges_zeroed/guided"
ZEROED = {PRUNED_ZEROED: "pruned/guided", PRUNED_BY_EDGES_ZEROED: PRUNED_BY_EDGES}
"""The pruned variants with the removed units' weights zeroed and trainable instead of masked
(`--section5-controls`), each of the masked variant whose units it removes."""
PRUNING_CONTROL = "control/guided_not_pruned"
"""The control of section 5.2 (`--section5-controls`): a guided model retrained as the pruned ones
are, with no unit removed."""


def pruned_accuracy(run: Path | RunFolder, split: str) -> tuple[float, dict[str, list[int]]]:
    """Section 5.2: sequence accuracy on `split` of the run's best model with its weak units
    removed (`probes.interventions.pruned_units`, as the `pruning` probe), without retraining;
    and the kept units."""
    pruned = pruning_of(run, split)
    return pruned["before"], pruned["kept"]


def pruning_of(run: Path | RunFolder, split: str = "new_compositions", tag: str = "best",
               by_edges: bool = False) -> dict:  # fmt: skip
    """`pruned_accuracy`'s measurements of a guided run's checkpoint `tag`: the units `kept` and
    `removed` by site, and the accuracy on `split` `before` retraining; `by_edges`: the units
    with the most strong edges kept (Figure 2's thresholds, `pruned_units`)."""
    folder = run if isinstance(run, RunFolder) else RunFolder(run)
    kept, removed = pruned_units(folder.state_dict(tag),
                                 edge_thresholds=THRESHOLDS if by_edges else None)  # fmt: skip
    data = folder.datamodule(tag)
    accuracy = split_accuracy(folder.model(tag), data, split, removal_edits(removed))
    return {"kept": kept, "removed": removed, "before": accuracy}


def pruning_arguments(
    root: Path,
    seed: int,
    base: list[str],
    configs: Path,
    source: Path,
    removed: dict,
    tag: str = "best",
    variant: str = "pruned/guided",
    zeroed: bool = False,
) -> list[str]:
    """The fit arguments retraining the guided model `source` of `seed` with its weak units
    (`removed`, from `pruned_accuracy`) removed (section 5.2): masked, or with `zeroed` their
    weights set to 0 and left trainable (`lightning_modules.callbacks.ZeroUnits`); with none
    removed, as `variant` `PRUNING_CONTROL`, its control."""
    zeroing = {"class_path": "lightning_modules.callbacks.ZeroUnits",
               "init_args": {"units": removed}}  # fmt: skip
    return [
        "--config",
        str(configs / "guided.yaml"),
        "--seed_everything",
        str(seed),
        "--run.root",
        str(root),
        "--run.variant",
        variant,
        "--trainer.enable_progress_bar",
        "false",
        *base,
        "--model.removed_units",
        "{}" if zeroed else json.dumps(removed),
        load_weights(RunLayout(source).checkpoint(tag)),
        *([f"--trainer.callbacks+={json.dumps(zeroing)}"] if zeroed else []),
    ]


# ---- claims, figure and table ------------------------------------------------------------------
def substitution_claims(substitution: dict, original: dict[str, list[float]], paper: dict):
    """Table 4 and the statements of section 5.1. `substitution[(receiver, component)]`: NC
    accuracies per pair; `original[variant]`: NC accuracies of the unmodified models of the same
    seeds (the rows '-')."""
    runs = paper["table4_runs"]
    claims = []
    for receiver, rows in paper["table4"].items():
        for component, (mean, std) in rows.items():
            values = (
                original[receiver] if component == "-" else substitution.get((receiver, component))
            )
            if values is None:
                continue
            label = (
                "no substitution"
                if component == "-"
                else f"frozen {OPPOSITE[receiver]} {component}"
            )
            claims.append(
                compare_summaries(
                    f"table4.{receiver}.{slug(component) if component != '-' else 'original'}",
                    f"Table 4: {receiver} model with {label}, NC sequence accuracy",
                    Measured(mean, std, runs),
                    Measured.of(values),
                )
            )
    return claims + substitution_pattern_claims(substitution, original, paper)


RISES = ("Encoder W_ih", "Decoder W_hh")
"""Section 5.1's components whose substitution the paper says raises the guided accuracy."""
RISE = 0.05
"""A rise of 5% of the original accuracy reproduces "improves" / "increases" (the paper's
decoder W_hh: 0.82 to 0.91, 11%); any rise above a tie is partial."""


def substitution_pattern_claims(substitution: dict, original: dict[str, list[float]],
                                paper: dict) -> list[Claim]:  # fmt: skip
    """Section 5.1's statements on what each frozen baseline component does to a guided model,
    and that no guided component helps a baseline one."""
    reference = sum(original["guided"]) / len(original["guided"])
    claims = []

    def ratio(component: str) -> tuple[list[float], float]:
        values = substitution[("guided", component)]
        return values, (sum(values) / len(values)) / max(reference, 1e-9)

    patterns = [  # (component, statement, paper ratio, statistic name, sign, reproduced, partial)
        ("Encoder Emb", "baseline encoder embeddings barely matter (similar score)", 1, 0.85, 0.7),
        ("Decoder Emb", "baseline decoder embeddings give a much lower score", -1, 0.4, 0.15),
        ("Encoder", "the baseline encoder drops accuracy by ~80%", -1, 0.6, 0.3),
        ("Decoder", "the baseline decoder drops accuracy sharply", -1, 0.6, 0.3),
        ("Encoder W_hh", "baseline encoder W_hh: a smaller drop", 1, 0.85, 0.7),
        ("Encoder W_ih", "baseline encoder W_ih improves accuracy", 1, 1.0, 0.9),
        ("Decoder W_ih", "baseline decoder W_ih drops accuracy (to ~0.6)", -1, 0.15, 0.05),
        ("Decoder W_hh", "baseline decoder W_hh increases accuracy (to ~0.9)", 1, 1.0, 0.9),
    ]
    paper_reference = paper["table4"]["guided"]["-"][0]
    for component, statement, sign, reproduced_at, partially_at in patterns:
        if ("guided", component) not in substitution:
            continue
        values, measured = ratio(component)
        paper_ratio = paper["table4"]["guided"][component][0] / paper_reference
        statistic, name = (measured, "substituted / original guided mean NC accuracy")
        if sign < 0:
            statistic, name = 1 - measured, "1 - substituted / original guided mean NC accuracy"
        if component in RISES:  # a rise: the direction first, a tie is not a rise
            claims.append(direction_claim(
                f"sec5_1.guided_with_{slug(component)}", f"Section 5.1: in a guided model, "
                f"{statement}", round(paper_ratio, 2), values, measured - 1,
                "substituted / original guided mean NC accuracy - 1", RISE, 1e-9,
            ))  # fmt: skip
            continue
        claims.append(
            threshold_claim(
                f"sec5_1.guided_with_{slug(component)}",
                f"Section 5.1: in a guided model, {statement}",
                round(paper_ratio if sign > 0 else 1 - paper_ratio, 2),
                values,
                statistic,
                name,
                reproduced_at,
                partially_at,
            )
        )
    gains = [
        sum(v) / len(v) - sum(original["baseline"]) / len(original["baseline"])
        for (receiver, _), v in substitution.items()
        if receiver == "baseline"
    ]
    claims.append(
        threshold_claim(
            "sec5_1.baseline_not_helped",
            "Section 5.1: no baseline model given a frozen guided component retrains to a "
            "significantly higher NC accuracy",
            "none significantly higher",
            gains,
            0.1 - max(gains),
            "0.1 - largest gain of a substituted baseline over the original baseline mean",
            reproduced_at=0.0,
            partially_at=-0.1,
        )
    )
    return claims


def pruning_claims(pruning: dict, full: list[float], paper: dict):
    """Section 5.2: pruned guided models before and after retraining, and the units kept."""
    values = paper["pruning"]
    after_minus_full = [a - f for a, f in zip(pruning["after"], full, strict=True)]
    kept = [len(units) for run in pruning["kept"] for units in run.values()]
    return [
        compare_means(
            "sec5_2.pruned_accuracy",
            "Guided models keeping only the strongest 5% "
            "of encoder and decoder units, NC accuracy before retraining",
            [values["before_retraining"]],
            pruning["before"],
        ),
        compare_means(
            "sec5_2.pruned_retrained_accuracy",
            'The pruned models after retraining, NC accuracy ("fully restores": the seeds\' '
            "spread widens the tolerance to at most 0.05)",
            [values["after_retraining"]],
            pruning["after"],
            at_most=CLOSE,
        ),
        threshold_claim(
            "sec5_2.retrained_beats_full",
            "Retraining fully restores the pruned models: at least as good as the full network",
            round(values["after_retraining"] - values["full_network"], 3),
            after_minus_full,
            sum(after_minus_full) / len(after_minus_full),
            "mean(pruned and retrained - full) NC accuracy",
            reproduced_at=0.0,
            partially_at=-0.1,
        ),
        cannot_fail(
            threshold_claim(
                "sec5_2.units_kept",
                "Units kept per layer (follows from keeping 5% of "
                "512 units; a check of the pruning, not of the paper)",
                values["kept_neurons"],
                kept,
                min(kept) == max(kept) == 26,
                "1 if every pruned layer kept 26 units",
                reproduced_at=1,
                partially_at=1,
            ),
            "5% of 512 units is 26 by construction: the check of the pruning cannot fail on "
            "any model",
        ),
    ]


CONTROLLED = "against the model retrained the same way with nothing frozen"


PRUNED_READINGS = {  # claim prefix: (variant, how it removes the units)
    "edges": (PRUNED_BY_EDGES, "units ranked by strong edges"),
    "zeroed": (PRUNED_ZEROED, "weights zeroed, not masked"),
    "edges_zeroed": (PRUNED_BY_EDGES_ZEROED, "ranked by strong edges, weights zeroed"),
}
"""The registered readings of section 5.2 that `--section5-controls` retrains, by claim prefix."""


def control_claims(ablation: dict, original: dict[str, list[float]], paper: dict) -> list[Claim]:
    """The registered readings of section 5 (`reports/paper1/preregistration.md`, item 5), where
    their runs were measured: 5.1's statements against each receiver retrained with nothing
    frozen (`control.sec5_1.*`, in place of the unretrained original), and 5.2 on the paper's
    pool, the guided models of the first three seeds (`pool3.sec5_2.*`) and by each of
    `PRUNED_READINGS`, the retrained pruned models also against the full model retrained as long
    with nothing removed."""
    claims = []
    controls = ablation["controls"]
    if set(controls) == set(OPPOSITE):
        for claim in substitution_pattern_claims(ablation["substitution"], controls, paper):
            claims.append(replace(claim, id=f"control.{claim.id}",
                                  claim=f"{claim.claim} ({CONTROLLED})"))  # fmt: skip
    pool = len(original["guided"])
    readings = {"pool3": {name: values[:pool] for name, values in ablation["pruning"].items()}}
    readings |= {prefix: ablation["pruned"][variant] for prefix, (variant, _) in
                 PRUNED_READINGS.items() if ablation["pruned"].get(variant)}  # fmt: skip
    for prefix, pruning in readings.items():
        claims += pool_claims(prefix, pruning, original["guided"], ablation["pruning_control"],
                              paper)  # fmt: skip
    return claims


def pool_claims(prefix: str, pruning: dict, full: list[float], retrained: list[float],
                paper: dict) -> list[Claim]:  # fmt: skip
    """Section 5.2's claims (`pruning_claims` but the check of the units kept) on the paper's
    pool, ids prefixed by the reading, and, where the full models were retrained as long with
    nothing removed (`retrained`), the pruned ones against them."""
    claims = []
    how = "" if prefix == "pool3" else f"{PRUNED_READINGS[prefix][1]}, "
    for claim in pruning_claims(pruning, full, paper)[:3]:
        words = f"{claim.claim} ({how}the paper's pool: the first {len(full)} seeds)"
        # a reading new since the rules' last change: no earlier rule ever judged it
        claims.append(replace(claim, id=f"{prefix}.{claim.id}", claim=words, earlier=()))
    if retrained:
        gaps = [a - c for a, c in zip(pruning["after"], retrained, strict=True)]
        claims.append(threshold_claim(
            f"{prefix}.sec5_2.restored_against_control",
            "Retraining fully restores the pruned models: as good as the full models retrained "
            "as long with nothing removed", "fully restores", gaps, sum(gaps) / len(gaps),
            "mean(pruned and retrained - full and retrained) NC accuracy",
            reproduced_at=-CLOSE, partially_at=-0.1,
        ))  # fmt: skip
    return claims


def table4_rows(ablation: dict, original: dict[str, list[float]]):
    """(receiver, component, NC accuracies) in Table 4's order, '-' = no substitution."""
    for receiver in ("guided", "baseline"):
        for component in ("-", *COMPONENTS):
            values = (
                original[receiver]
                if component == "-"
                else ablation["substitution"].get((receiver, component))
            )
            if values is not None:
                yield receiver, component, values


def ablation_figure(ablation: dict, original: dict[str, list[float]], paper: dict, path: Path):
    """Table 4 and section 5.2 as bars: paper (light) vs ours (dark), mean ± std."""
    figure, (table4, pruning_axis) = plt.subplots(
        1, 2, figsize=(14, 4.5), gridspec_kw={"width_ratios": [3, 1]}
    )
    labels, paper_bars, ours_bars = [], [], []
    for receiver, component, values in table4_rows(ablation, original):
        labels.append(f"{'AG' if receiver == 'guided' else 'BL'} {component}")
        paper_bars.append(paper["table4"][receiver].get(component, [float("nan"), 0]))
        ours_bars.append(Measured.of(values))
    positions = range(len(labels))
    table4.bar(
        [p - 0.2 for p in positions],
        [m for m, _ in paper_bars],
        0.4,
        yerr=[s for _, s in paper_bars],
        color="grey",
        alpha=0.5,
        label="paper",
    )
    table4.bar(
        [p + 0.2 for p in positions],
        [m.mean for m in ours_bars],
        0.4,
        yerr=[m.std for m in ours_bars],
        color="tab:orange",
        label="ours",
    )
    table4.set_xticks(list(positions), labels, rotation=60, ha="right", fontsize=SMALLEST_POINTS)
    table4.set_ylabel("NC sequence accuracy")
    table4.set_title("Table 4: frozen component from the other model, retrained")
    table4.legend()
    values = paper["pruning"]
    ours = [ablation["pruning"]["before"], ablation["pruning"]["after"], original["guided_all"]]
    names = ["pruned", "pruned + retrained", "full network"]
    paper_values = [values["before_retraining"], values["after_retraining"], values["full_network"]]
    pruning_axis.bar(
        [i - 0.2 for i in range(3)], paper_values, 0.4, color="grey", alpha=0.5, label="paper"
    )
    pruning_axis.bar(
        [i + 0.2 for i in range(3)],
        [Measured.of(v).mean for v in ours],
        0.4,
        yerr=[Measured.of(v).std for v in ours],
        color="tab:orange",
        label="ours",
    )
    pruning_axis.set_xticks(range(3), names, rotation=20, fontsize=SMALLEST_POINTS)
    pruning_axis.set_title("Section 5.2: pruning to 5% of units")
    pruning_axis.legend()
    return save_figure(figure, path)


def substitution_table(ablation: dict, original: dict[str, list[float]], paper: dict) -> str:
    lines = [
        "| model | frozen component | paper NC | ours NC (mean ± std) | ours per pair | "
        "best epoch per pair |",
        "|---|---|---|---|---|---|",
    ]
    for receiver, component, values in table4_rows(ablation, original):
        reported = paper["table4"][receiver].get(component)
        paper_cell = f"{reported[0]:.2f} ± {reported[1]:.2f}" if reported else "(not shown)"
        m = Measured.of(values)
        best = ablation["best_epochs"].get((receiver, component))  # none for the rows '-'
        lines.append(
            f"| {'AG' if receiver == 'guided' else 'BL'} | {component} | {paper_cell} | "
            f"{m.mean:.2f} ± {m.std:.2f} | {', '.join(f'{v:.2f}' for v in values)} | "
            f"{', '.join(map(str, best)) if best else '-'} |"
        )
    return "\n".join(lines)


def retraining_length_note(best_epochs: dict[tuple[str, str], list[int]], epochs: int) -> str:
    """How many substitution retrains had their best validation checkpoint in their last 5
    epochs, i.e. might have gone on improving had they run longer (the paper: up to 100)."""
    every = [epoch for values in best_epochs.values() for epoch in values]
    late = sum(epoch > epochs - 5 for epoch in every)
    return (
        f"Each substitution retrained {epochs} epochs (paper: up to 100) and kept its best "
        f"validation checkpoint; {late} of the {len(every)} retrains had it in their last 5 "
        f"epochs (epoch > {epochs - 5}), so {'those' if late else 'none'} might have improved "
        "with the paper's longer schedule."
    )
