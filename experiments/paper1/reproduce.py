"""`make reproduce-paper1`: Baan et al. 2019, "On the Realization of Compositionality in Neural
Networks", every table and figure of sections 2-5 and Appendix A.

Three stages, each run's fit going through the suite's CLI (`python -m experiments fit ...`, so
each run is what a user gets by hand) and measured once into `<run>/measurements.json`
(`experiments.paper1.runs`):
1. train 5 baseline and 5 Attentive-Guidance GRU seq2seq models on machine-tasks' sample1 (and
   the second reading's and footnote 1's models), test both selected checkpoints on the four
   test sets (Tables 5-6), and analyse each GRU as soon as it is trained
   (`experiments.paper1.analyses`: Figures 1-4, Tables 2-3), and its untrained weights the same
   way (the null model: every analysis claim is also decided on them, `analysis_claims`);
2. retrain them for the ablations (`experiments.paper1.ablations`: Table 4, section 5.2);
3. write `reports/paper1/{report.md, results.json, figures/, runs/}` from the measurements, with
   the paper's values beside ours, and log the figures and tables to W&B.

Scale (`SCALE` or `--scale`, see `SCALES`): `default` = `paper` = the paper's schedule (about 5 h
on 2 CPU cores, resumable with `--reuse-runs`); `short` = training for 40 epochs and substitution
retraining for 5 (about 2 h); `paper-training` = the paper's training and pruning, substitutions
retrained 15 epochs (about 2 h); `quick` = the whole pipeline on tiny sizes in minutes, whose
verdicts mean nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from datamodules.machine_tasks import LookupData
from experiments.engine.publish import Stopwatch, kept_note
from experiments.engine.reproduce import Built, Request, Study, reproduction_main
from experiments.paper1.ablations import (
    PRUNED_READINGS,
    PRUNING_CONTROL,
    ablation_figure,
    control_claims,
    pruning_claims,
    retraining_length_note,
    substitution_claims,
    substitution_table,
)
from experiments.paper1.analyses import (
    activation_figure,
    connectivity_figure,
    connectivity_table,
    convention_table,
    heatmap_figure,
    paper_equation_results,
    probe_table,
    saturation_figure,
)
from experiments.paper1.claims import activation_claims, primary_claims, probe_claims, weight_claims
from experiments.paper1.findings import FINDINGS
from experiments.paper1.lstm import footnote1_analyses_text, footnote1_analysis_claims, lstm_claims
from experiments.paper1.reading_claims import FIELDS as READING_FIELDS
from experiments.paper1.reading_claims import PREFIXES as READING_PREFIXES
from experiments.paper1.reading_claims import beside, judged_readings, readings_text
from experiments.paper1.registered import (
    BEFORE,
    REGISTRATION,
    judged_against_nulls,
    registered_history,
)
from experiments.paper1.runs import ablations, data_name, lookup_data_of, measure_all
from experiments.paper1.scales import (
    ANALYSED,
    DATA_CHANGED,
    EARLIER,
    FOOTNOTE1,
    PAPER,
    SCALES,
    SELECTIONS,
    VARIANTS,
    Scale,
    command_line,
    our_values,
)
from experiments.paper1.shapley import footnote5_claims, footnote5_text
from experiments.paper1.tables import (
    data_comparison_text,
    figure,
    footnote1_claims,
    footnote1_text,
    pattern_claims,
    selections_text,
    table_claims,
    tables_markdown,
)
from experiments.report import (
    Claim,
    claims_frame,
    claims_in,
    current_commit,
    judged_against_untrained,
    report_title,
    runs_named,
    with_earlier,
)

GATE_READING = (
    "the reading: the update gate read as torch's z, as the authors' code reads it. The update "
    "gate was read by the paper's equation of section 2.2 (z mirrored); the authors' analysis code "
    "(machine-analysis, models/analysable_cells.py and inspect_gate_activations.py) reads torch's "
    "z, which Figure 4 and section 3's weight polarities therefore show, so torch's z decides and "
    "the equation's reading stays beside it"
)


FUNCTIONAL_GROUPS = (
    "the reading: functional groups built as the co-authors' code builds them. The functional "
    "groups were built by the paper's text alone (unregularised, one 2/3 split of the test sets, "
    "units ranked by all classes' weights); the co-authors' code (machine-analysis "
    "functional_groups.py: saga with C=1, 5 random 90/10 splits of all the data, units ranked by "
    "the first class's mean coefficient) settles what the text leaves open and decides now"
)


def gate_reading_claims(analysed: dict[str, list[dict]]) -> list[Claim]:
    """Sections 3-4's weight and activation claims with the update gate read as torch's `z`
    (the authors' code), each keeping its verdict under the paper's equation where that
    differs."""
    equation = paper_equation_results(analysed)
    return with_earlier(
        weight_claims(analysed) + activation_claims(analysed),
        weight_claims(equation) + activation_claims(equation),
        GATE_READING,
    )


def analysis_claims(analysed: dict[str, list[dict]]) -> list[Claim]:
    """Sections 3-4's claims (Figures 1-4, Tables 2-3 and their patterns) from the models'
    analyses by variant, each keeping its verdict under the earlier readings (`GATE_READING`,
    `FUNCTIONAL_GROUPS`): the claims that have an untrained counterpart, the same analyses of the
    same GRUs' untrained weights. Tables 5-6's accuracies, their patterns, footnote
    1's LSTMs and section 5's retrains have none here: their `null` stays None."""
    return gate_reading_claims(analysed) + with_earlier(
        probe_claims(analysed, PAPER),
        probe_claims(analysed, PAPER, "probes_text"),
        FUNCTIONAL_GROUPS,
    )


class Runs(NamedTuple):
    """Paper 1's measured runs: the trained models and section 5's retrains by `(variant, seed)`,
    the scale they ran at (its data folder set) and the data they read."""

    models: dict[tuple, dict]
    retrains: dict[tuple, dict]
    scale: Scale
    data: LookupData


def measure(request: Request) -> Runs:
    """Train and analyse every model (sections 3-4, Appendix A), then ablate (section 5). Offline,
    a rebuild from runs recorded on sample1 matches them on that record and trains nothing."""
    data, sitting = lookup_data_of(request.sitting)
    print(f"paper 1's data: {data.notice}", flush=True)
    scale = dataclasses.replace(
        request.scale, data=("--data.init_args.data_dir", data.data_dir or "null")
    )
    with request.clock.stage("training and analyses"):
        models = measure_all(scale, sitting)
    with request.clock.stage("ablations"):
        retrains = ablations(scale, models, sitting)
    return Runs(models, retrains, scale, data)


def report(request: Request, runs: Runs) -> Built:
    """Every table, figure and claim of paper 1 from the runs' measurements alone."""
    models, retrains, scale, data = runs
    root, jobs, seeds = request.sitting.root, request.sitting.jobs, scale.seeds
    scale_name, clock, out = request.scale_name, request.clock, request.out
    selections = {
        selection: {v: [models[(v, s)]["selections"][selection] for s in variant_seeds]
                    for v, variant_seeds in scale.model_seeds.items()}
        for selection in SELECTIONS
    }  # fmt: skip
    measured = selections[ANALYSED]  # the authors' code's: the verdicts, analyses and ablations
    analysed = {v: [models[(v, s)]["analysis"] for s in seeds] for v in VARIANTS}
    untrained = {v: [models[(v, s)]["untrained_analysis"] for s in seeds] for v in VARIANTS}
    ablation = ablation_of(retrains, scale)
    original = {
        v: [measured[v][i]["new_compositions"] for i in range(scale.pairs)] for v in VARIANTS
    }
    original["guided_all"] = our_values(measured, "guided", "new_compositions")
    shap, untrained_shap = measured_on_all(models, FOOTNOTE5_FIELDS, VARIANTS, seeds)
    gru = judged_against_nulls(analysis_claims(analysed), analysis_claims(untrained), analysed,
                               primary_claims)  # fmt: skip
    readings = measured_on_all(models, READING_FIELDS, VARIANTS, seeds)
    if readings[0] is not None:
        gru = beside(gru, judged_readings(analysed, untrained, *readings))
    if shap is not None:
        gru += judged_against_untrained(footnote5_claims(analysed, shap),
                                        footnote5_claims(untrained, untrained_shap))  # fmt: skip
    lstm_analysed, lstm_untrained = measured_on_all(models, ANALYSIS_FIELDS, FOOTNOTE1, seeds)
    lstm = []
    if lstm_analysed is not None:
        shap_of_lstms = measured_on_all(models, FOOTNOTE5_FIELDS, FOOTNOTE1, seeds)
        lstm = lstm_claims(lstm_analysed, lstm_untrained, *shap_of_lstms)
    claims = (
        table_claims(measured)
        + table_claims(selections["best"], "selection_text.")
        + pattern_claims(measured)
        + footnote1_claims(measured)
        + (footnote1_analysis_claims(gru, lstm) if lstm else [])
        + gru
        + substitution_claims(ablation["substitution"], original, PAPER)
        + pruning_claims(ablation["pruning"], original["guided_all"], PAPER)
        + control_claims(ablation, original, PAPER)
    )
    earlier = []
    if data.is_paper_data and scale_name in ("default", "paper", "paper-training"):
        earlier = claims_in(EARLIER)
        claims = with_earlier(claims, earlier, DATA_CHANGED)
    if data.is_paper_data and scale_name == "default":
        before = claims_in(BEFORE)
        claims = registered_history(claims, before)
    curves = {v: [models[(v, s)]["curve"] for s in seeds] for v in VARIANTS}
    figures = paper1_figures(measured, curves, analysed, ablation, original, seeds,
                             out / "figures")  # fmt: skip
    records = [*models.values(), *retrains.values()]
    markdown = (
        header_text(
            scale_name, scale, data.notice, measured, clock, kept_note(records), root, jobs
        )  # fmt: skip
        + selections_text(selections, scale.model_seeds)
        + data_comparison_text(measured, earlier, data.is_paper_data)
        + footnote1_text(measured)
        + footnote1_analyses_text(gru, lstm, lstm_analysed)
        + analyses_text(analysed, scale.probe_splits)
        + readings_text(analysed, readings[0])
        + footnote5_text(analysed, shap)
        + ablation_text(scale, ablation, original)
    )
    runs = [(r["variant"], r["seed"]) for r in records]
    tables = paper1_tables(claims, analysed, ablation, seeds)
    return Built(claims, markdown, figures, tables, records, runs)


FOOTNOTE5_FIELDS = ("footnote5", "untrained_footnote5")
ANALYSIS_FIELDS = ("analysis", "untrained_analysis")


def measured_on_all(models: dict[tuple, dict], fields: tuple[str, ...], variants,
                    seeds: Sequence[int]) -> tuple:  # fmt: skip
    """Each of `fields` of every model of `variants` (of `seeds`) by variant, or Nones where a
    model's measurements lack one of them (`OPTIONAL`, not yet added to kept runs: not
    measured)."""
    records = [{v: [models[(v, s)].get(field) for s in seeds] for v in variants}
               for field in fields]  # fmt: skip
    if any(r is None for by_variant in records for rs in by_variant.values() for r in rs):
        return (None,) * len(fields)
    return tuple(records)


def ablation_of(retrains: dict[tuple, dict], scale) -> dict:
    """Section 5's measurements as the claims, table and figure read them: new-composition
    accuracy and best epoch per `(receiver, component)` in pair-seed order, and the pruning's
    `before`, `after` and `kept` per guided seed."""
    substitution: dict[tuple[str, str], list[float]] = {}
    best_epochs: dict[tuple[str, str], list[int]] = {}
    controls: dict[str, list[float]] = {}
    for record in retrains.values():
        if record.get("component", False) is None:  # a control: nothing frozen
            controls.setdefault(record["receiver"], []).append(record["new_compositions"])
        elif "component" in record:
            key = (record["receiver"], record["component"])
            substitution.setdefault(key, []).append(record["new_compositions"])
            best_epochs.setdefault(key, []).append(record["best_epoch"])
    pruning = pruned_values([retrains[("pruned/guided", seed)] for seed in scale.seeds])
    pruning_control = [retrains[(PRUNING_CONTROL, seed)]["after"]
                       for seed in scale.seeds if (PRUNING_CONTROL, seed) in retrains]  # fmt: skip
    pruned = {}
    for variant, _ in PRUNED_READINGS.values():  # the registered readings, where retrained
        pruned[variant] = pruned_values(
            [retrains[(variant, s)] for s in scale.seeds if (variant, s) in retrains]
        )
    return {"substitution": substitution, "best_epochs": best_epochs, "pruning": pruning,
            "controls": controls, "pruning_control": pruning_control,
            "pruned": {v: values for v, values in pruned.items() if values["after"]}}  # fmt: skip


def pruned_values(records: list[dict]) -> dict[str, list]:
    """Pruned retrains' accuracies `before` and `after` retraining and units `kept`, in order."""
    return {
        name: [record[key] for record in records]
        for name, key in (("before", "before"), ("after", "after"), ("kept", "kept_units"))
    }


def paper1_figures(measured, curves, analysed, ablation, original, seeds: Sequence[int],
                   folder: Path) -> dict[str, Path]:  # fmt: skip
    """Tables 5-6 as a figure, Figures 1-4 and Table 4 with pruning, from the measurements."""
    first = {v: analysed[v][0] for v in VARIANTS}
    return {
        "tables5_6": figure(measured, curves, folder),
        "fig1_decoder_embedding": heatmap_figure(
            analysed, seeds, folder / "fig1_decoder_embedding.png"
        ),
        "fig2_connectivity": connectivity_figure(first, folder / "fig2_connectivity.png"),
        "fig3_activations": activation_figure(first, folder / "fig3_activations.png"),
        "fig4_gate_saturation": saturation_figure(analysed, folder / "fig4_gate_saturation.png"),
        "table4_pruning": ablation_figure(ablation, original, PAPER, folder / "table4_pruning.png"),
    }


def paper1_tables(claims, analysed, ablation, seeds: Sequence[int]) -> dict[str, pd.DataFrame]:
    """The tables logged to W&B beside the figures."""
    probe_rows = [
        {"variant": variant, "seed": seed, "reading": reading, "probe": name,
         **{k: v for k, v in stats.items() if k != "units"}}
        for variant in VARIANTS
        for seed, result in zip(seeds, analysed[variant], strict=True)
        for reading in ("probes", "probes_text")
        for name, stats in result[reading].items()
    ]  # fmt: skip
    substitution_rows = [
        {"receiver": receiver, "component": component, "pair": i + 1, "new_compositions": value,
         "best_epoch": ablation["best_epochs"][(receiver, component)][i]}
        for (receiver, component), values in ablation["substitution"].items()
        for i, value in enumerate(values)
    ]  # fmt: skip
    return {
        "claims": claims_frame(claims),
        "functional_groups": pd.DataFrame(probe_rows),
        "substitution": pd.DataFrame(substitution_rows),
        "pruning": pd.DataFrame({k: v for k, v in ablation["pruning"].items() if k != "kept"}),
    }


def header_text(scale_name, scale, data_notice: str, measured, clock: Stopwatch, reused: str,
                root: Path, jobs: int) -> str:  # fmt: skip
    """The report's title, how it ran, and Appendix A's Tables 5-6."""
    count, seeds = len(scale.seeds), ", ".join(map(str, scale.seeds))
    title = report_title("Paper 1: On the Realization of Compositionality in Neural Networks",
                         scale_name)  # fmt: skip
    return f"""{title}

Baan et al. 2019, every table and figure of sections 2-5 and Appendix A, regenerated by
`make reproduce-paper1` (`python -m experiments.paper1`). Units are numbered from 0.

- **Data:** {data_notice} All runs share the data, as the zoo behind the paper did (train 232,
  validation 16, heldout inputs 40, heldout compositions 64, heldout tables 192, new
  compositions 32).
- **Scale:** `{scale_name}`: training at most {scale.train_epochs or 100} epochs per model (paper:
  100); substitution retraining {scale.substitution_epochs} epochs (paper: up to 100) on
  {scale.pairs} model pairs (paper: 3); pruning retraining {scale.pruning_epochs} epochs (paper:
  20). Extra overrides: `{" ".join(scale.overrides) or "none"}`.
- **Commit:** `{current_commit()}`; **wall time:** {clock.total:.1f} min on {os.cpu_count()} CPU
  cores, {jobs} jobs at a time ({clock.stages()}).{reused}
- **Models:** {count} baseline and {count} guided GRU seq2seq (seeds {seeds}), encoder
  embedding 16, hidden 512, pre-rnn MLP attention with full focus, batch 1, Adam lr 0.001, no
  teacher forcing, token and attention losses averaged over the decoder steps (the text's 1/T);
  the validation set is evaluated every 200 steps on the model's own outputs (the authors'
  trainer); the checkpoint of lowest validation loss (the authors' code, which made the paper's
  models; the text's "best accuracy on a held-out set" is shown beside it below, with its own
  verdicts). Configs:
  `experiments/configs/paper1/{{baseline,guided}}.yaml`; runs in {runs_named(root, "paper1")}.
- **Metric:** sequence accuracy under greedy decoding; a sequence counts when every output token
  (the copied input and each intermediate result, no EOS) is right.
- **Analyses** (sections 3-4) use each model's lowest-loss checkpoint and its activations on the
  four test sets (328 sequences; the co-authors' functional groups: every split, 576). The
  update gate is torch's `z` (`h = (1 - z) n + z h_prev`), as in the authors' analysis code
  (`mitjanikolaus/machine-analysis`, `models/analysable_cells.py`, which calls it the "input
  gate"). The paper's equation (section 2.2, `h = (1 - z) h_prev + z h~`) mirrors it (`1 - z`,
  `W_z` negated); the claims it decides differently keep that verdict beside theirs (the
  claims' changed column).
- **Verdicts** are computed by the rule written beside each claim (table at the end); a
  qualitative statement is checked by one measured statistic. The claims table's **untrained**
  column is the same rule's verdict on the same GRUs untrained (their `epoch=init` weights, the
  same data and analysis: the null model): a claim the untrained models pass says nothing
  about training and is reported as uninformative. Only the analysis claims of sections 3-4
  (Figures 1-4, Tables 2-3) and footnote 5 have one; the accuracies of Tables 5-6 and footnote
  1 (its LSTMs' analyses are judged against the untrained LSTMs in its own section) and section
  5's retrains are not measured untrained ("-"). The baseline and guided model of a seed start
  from the same weights (they differ in their loss alone), so untrained a guided-against-baseline
  comparison sits at its null value (a ratio of 1, a difference of 0) and could never pass: those
  19 comparisons' null is the **seed split** instead (the column says so), what two groups of one
  variant's seeds show by their seeds alone: every split of a variant's {count} runs into
  {count // 2} and {count - count // 2}, the claim's own statistic with one group as guided and the
  other as baseline, both ways round, the larger kept; the median over both variants' splits,
  judged by the claim's own rule (`experiments/paper1/registered.py`, registered in
  [preregistration.md](preregistration.md) before its results, with the rules of
  `sec3_2.inverse_gate_polarity.*`, `table3.encoder.hidden.*.accuracy_all` and
  `sec4_1.group_units_in_top5pct`).

## Appendix A: Tables 5-6

![Tables 5-6 and training curves](figures/tables5_6.png)

{tables_markdown(measured)}

"""


def analyses_text(analysed, splits: int) -> str:
    """Sections 3-4: heat maps, connectivity, activations and functional groups, saturation."""
    runs = len(analysed["guided"])
    over = f"over the {runs} runs"
    return f"""## Section 3.1: weight heat maps (Figure 1)

Decoder embedding (rows: output tokens, columns: the 512 decoder input units), each seed's
baseline beside its guided model, and the mean absolute weight over the {runs} seeds.

![Figure 1](figures/fig1_decoder_embedding.png)

## Section 3.2: connectivity graphs (Figure 2)

Edges are weights with |w| >= 0.2 (encoder) or 0.17 (decoder), the paper's thresholds. A neuron is
*connected* with at least one such edge, *polar* with at least 3 of which at least 90% share a
sign; the *hub share* is the share of edges on the best-connected 5% of neurons. Counted on the
receiving ("top") side of encoder W_hh and the sending ("bottom") side of decoder W_ih, where the
paper sees the strongly connected neurons. r is the Pearson correlation over neurons of the mean
update-gate and reset-gate weight (paper's sign). Means {over}; the figure shows seed 1.

![Figure 2](figures/fig2_connectivity.png)

{connectivity_table(analysed)}

## Section 4.1: activations and functional groups (Figure 3, Tables 2-3)

![Figure 3](figures/fig3_activations.png)

Diagnostic classifiers and functional groups, two readings (means over {splits} runs). Labels: the
table processed at each encoder step (steps 1-2), at each decoder step (the table the target
attention points at), or the encoder time step (Table 3).

- **The co-authors' code** (`mitjanikolaus/machine-analysis`, `functional_groups.py`,
  `perform_ablation_study`; the verdicts): multinomial logistic regression (sklearn,
  `solver="saga"`, `max_iter=100`, default `C=1`, an L2 penalty) on the activations of all the
  data (their `*_all.pt`; here every split: train, validation and the four test sets); accuracy
  and coefficients averaged over {splits} random 90/10 splits (their `num_runs=5`); units added by
  decreasing |mean coefficient| until the mean accuracy over the same splits reaches 0.95 x the
  all-unit mean. Their ranking reads the first 512 entries of the flattened `[classes, units]`
  coefficients: the first class's coefficients only. Majority baseline on all the labels.
- **The text alone** (the reading of the first reports; its verdicts kept as the earlier ones):
  unregularised (footnote 4) multinomial logistic regression on the test sets' activations,
  trained on a label-stratified 2/3 and scored on the other 1/3, units added by decreasing
  absolute weight summed over classes, retrained, until 95% of the all-unit accuracy.

Both fit on one BLAS thread with fixed seeds, so a group does not depend on the machine.

{probe_table(analysed, PAPER)}

## Section 4.2: gate saturation (Figure 4)

Every gate unit of every run: the fraction of test steps with activation above 0.9 (x) and below
0.1 (y).

![Figure 4](figures/fig4_gate_saturation.png)

The update-gate findings depend on which way the gate is read. Torch's GRU, which
i-machine-think's models use and the authors' analysis code reads, makes `z` the share of the old
state; the paper's equation (section 2.2) makes it the share of the new candidate. The verdicts
use torch's `z`; the same statistics under the paper's equation (left and right saturation
swapped, `W_z` negated) are:

{convention_table(analysed)}

"""


def ablation_text(scale, ablation, original) -> str:
    """Section 5: component substitution (Table 4) and pruning."""
    pruning = ablation["pruning"]
    pruning_table = "\n".join(
        ["| seed | pruned | pruned + retrained | full network |", "|---|---|---|---|"]
        + [
            f"| {seed} | {before:.2f} | {after:.2f} | {full:.2f} |"
            for seed, before, after, full in zip(
                scale.seeds,
                pruning["before"],
                pruning["after"],
                original["guided_all"],
                strict=True,
            )
        ]
    )
    kept_units = "; ".join(
        f"seed={seed}: encoder {kept['encoder.hidden']}, decoder {kept['decoder.hidden']}"
        for seed, kept in zip(scale.seeds, pruning["kept"], strict=True)
    )
    return f"""## Section 5: component substitution (Table 4) and pruning

Each substitution is a fit of the receiving model from its own lowest-loss checkpoint with the
other model's component (from its lowest-loss checkpoint) loaded and frozen (`LoadWeights`
callbacks), trained by its own procedure (with or without Attentive Guidance) at lr 0.001, and
tested at its lowest-validation-loss checkpoint on new compositions. Pairs are the baseline and
guided models of the same seed. Components: encoder =
encoder embedding + encoder GRU; decoder = decoder embedding + GRU + attention + full-focus layer
+ output layer; W_ih / W_hh include their biases. Pruning keeps the 5% (26) of encoder and of
decoder units with the largest summed absolute weights and holds every other hidden unit at zero
(`--model.removed_units`), then retrains {scale.pruning_epochs} epochs the same way.

![Table 4 and pruning](figures/table4_pruning.png)

{substitution_table(ablation, original, PAPER)}

{retraining_length_note(ablation["best_epochs"], scale.substitution_epochs)}

Pruning (section 5.2), NC sequence accuracy per guided seed:

{pruning_table}

Units kept: {kept_units}.
"""


def scale_of(args: argparse.Namespace, scale: Scale) -> Scale:
    """`--add-measurements`: the footnotes' fields added to kept runs that lack them;
    `--section5-controls`: section 5's controls retrained too."""
    return dataclasses.replace(scale, added=tuple(args.add_measurements),
                               controls=args.section5_controls or scale.controls)  # fmt: skip


def registered_on(claim_id: str) -> str | None:
    """The day the rule of a claim of the readings `reports/paper1/preregistration.md` registers
    was written (items 5-7: section 5's controls and pruning readings, Figures 2 and 4's other
    readings), before those readings were measured; None for every other claim."""
    readings = (*READING_PREFIXES, "control.", "pool3.", *(f"{p}." for p in PRUNED_READINGS))
    return REGISTRATION if claim_id.startswith(readings) else None


STUDY = Study("paper1", SCALES, command_line, measure, report, scale_of, findings=FINDINGS,
              registered=registered_on, data_of=data_name)  # fmt: skip


def main(argv: list[str] | None = None) -> list[Claim] | None:
    return reproduction_main(STUDY, argv)
