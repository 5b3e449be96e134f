"""Every text of the figures drawn for pruning, contextual decomposition, gate saturation,
functional groups, the neuron manipulations and SVM-RFE (the probes' and the reproductions'),
paper 1's embedding, activations and Tables 5-6, paper 3's toy data and the atlas's matrix is
readable: no legend entry, tick label, title, annotation or axis label below `SMALLEST_POINTS`
(8 pt), and tick labels too many to fit are labelled one in k rather than shrunk. Each figure is
drawn on small hand-made measurements of the shape its caller passes."""

import matplotlib
import pandas as pd
import pytest

from probes.command.outputs import SMALLEST_POINTS

matplotlib.use("Agg")

GROUPS = ("runs/paper1/baseline", "runs/paper1/guided")


def probe_table(rows: list[dict]) -> pd.DataFrame:
    """`rows` for each run of two run groups at checkpoint `best`, as a probe's table."""
    return pd.DataFrame([{"run": f"{group}/seed=0", "group": group, "checkpoint": "best", **row}
                         for group in GROUPS for row in rows])  # fmt: skip


def pruning(tmp_path):
    from probes.command.pruning import PruningOptions, PruningProbe

    options = PruningOptions()
    rows = [{"split": split, "accuracy": 0.9, "pruned_accuracy": 0.1} for split in options.splits]
    PruningProbe().figures(probe_table(rows), options, tmp_path)


def functional_groups(tmp_path):
    from probes.command.functional_group import FunctionalGroupOptions, FunctionalGroupProbe

    options = FunctionalGroupOptions()
    rows = [{"target": target, "accuracy": 0.8, "accuracy_all": 0.9, "size": 5}
            for target in options.targets]  # fmt: skip
    FunctionalGroupProbe().figures(probe_table(rows), options, tmp_path)


def gate_saturation(tmp_path):
    from probes.command.gate_saturation import GateSaturationOptions, GateSaturationProbe

    options = GateSaturationOptions()
    rows = [{"site": site, "unit": unit, "left": unit / 10, "right": 1 - unit / 5,
             "off_axes": False} for site in options.gates for unit in range(5)]  # fmt: skip
    GateSaturationProbe().figures(probe_table(rows), options, tmp_path)


def interventions(tmp_path):
    from probes.command.interventions import InterventionsProbe
    from probes.neuron_functions import DIAGNOSTICS, MANIPULATIONS

    names = [*MANIPULATIONS, *DIAGNOSTICS, *(f"control.{m}" for m in MANIPULATIONS)]
    rows = [{"token": "i", "manipulation": name, "hits": 3, "rows": 4} for name in names]
    InterventionsProbe().figures(probe_table(rows), None, tmp_path)


def contextual_decomposition(tmp_path):
    from probes.command.contextual_decomposition import ContextualDecompositionProbe

    phrases = ("open", "conduit", "prefix=0", "prefix=1")
    rows = [{"checkpoint": f"epoch={epoch}", "epoch": epoch, "phrase": phrase,
             "probability": 0.1 * (epoch + 1)}
            for epoch in range(3) for phrase in phrases]  # fmt: skip
    ContextualDecompositionProbe().figures(probe_table(rows), None, tmp_path)


def paper1_pruning(tmp_path):
    from experiments.paper1.ablations import ablation_figure
    from experiments.paper1.scales import COMPONENTS

    substituted = {(receiver, component): [0.2, 0.3]
                   for receiver in ("guided", "baseline") for component in COMPONENTS}  # fmt: skip
    ablation = {"substitution": substituted, "pruning": {"before": [0.1, 0.12], "after": [0.5]}}
    original = {"guided": [0.9, 0.8], "baseline": [0.1, 0.2], "guided_all": [0.95, 0.9]}
    paper = {"table4": {"guided": {"-": [0.9, 0.05]}, "baseline": {"-": [0.1, 0.05]}},
             "pruning": {"before_retraining": 0.124, "after_retraining": 0.6,
                         "full_network": 0.9}}  # fmt: skip
    ablation_figure(ablation, original, paper, tmp_path / "ablation.png")


def paper1_analyses(tmp_path):
    from experiments.paper1.analyses import (
        GATES,
        activation_figure,
        heatmap_figure,
        saturation_figure,
    )

    run = {"saturation": {site: {"right": [0.1, 0.9], "left": [0.8, 0.05]} for site in GATES}}
    saturation_figure({"baseline": [run], "guided": [run]}, tmp_path / "saturation.png")
    vocabulary = ["<pad>", "<sos>", "<eos>", *(f"{i:03b}" for i in range(8))]
    embedding = [[(t - u) / 100 for u in range(64)] for t in range(len(vocabulary))]
    quantiles = [[-1.0, -0.5, 0.0, 0.5, 1.0]] * 512
    figures = {"vocabulary": vocabulary, "embedding": embedding,
               "quantiles": {"encoder": quantiles, "decoder": quantiles}}  # fmt: skip
    runs = {variant: [{"figures": figures}] * 2 for variant in ("baseline", "guided")}
    heatmap_figure(runs, [1, 2], tmp_path / "heatmap.png")
    activation_figure({variant: {"figures": figures} for variant in runs}, tmp_path / "a.png")


def paper1_tables(tmp_path):
    from experiments.paper1.scales import SPLITS
    from experiments.paper1.tables import figure

    measured = {variant: [dict.fromkeys(SPLITS, 0.5)] * 2 for variant in ("baseline", "guided")}
    curve = {"step": [0, 200, 400], "seq_acc": [0.1, 0.5, 0.9]}
    figure(measured, {variant: [curve] * 2 for variant in measured}, tmp_path)


def paper3_report(tmp_path):
    from experiments.paper3 import report

    frame = pd.DataFrame({"mean": [0.2, 0.6, 0.9], "std": [0.05] * 3}, index=[0, 50, 100])
    curves = {(setting, split): frame for setting in ("A", "B") for split in ("train", "test")}
    report.figure3(curves, curves, tmp_path / "3.png", "Figure 3b: SCAN", "accuracy")
    report.figure4(tmp_path / "4.png")


def paper3_toy_report(tmp_path):
    from experiments.paper3 import toy_report

    toy_report.figure4_playground(tmp_path / "4.png")


def atlas_matrix(tmp_path):
    from experiments.atlas import report
    from experiments.atlas.questions import METHODS, MODELS

    statuses = [report.NOT_APPLICABLE, report.NOT_YET]
    cells = {model: {method: {"status": report.ABOVE, "value": -0.125, "null": 0.5}
                     if (row + column) % 3 else {"status": statuses[row % 2]}
                     for column, method in enumerate(METHODS)}
             for row, model in enumerate(MODELS)}  # fmt: skip
    report.matrix_figure(cells, tmp_path / "atlas.png")


def svm_rfe(tmp_path):
    from probes.command.svm_rfe import SvmRfeProbe
    from probes.neuron_functions import HYPOTHESES

    rows = [{"hypothesis": hypothesis, "accuracy": 0.9 + token / 100}
            for hypothesis in HYPOTHESES for token in range(5)]  # fmt: skip
    SvmRfeProbe().figures(probe_table(rows), None, tmp_path)


def paper2_figures(tmp_path):
    from dataclasses import replace

    from experiments.paper2 import figures
    from experiments.paper2.readings import Estimate, Snapshot
    from experiments.paper2.scales import SCALES

    scale = replace(SCALES["default"], conduit_lengths=(2, 4), rule_counts=(300, 1000))
    cell = Snapshot({"open": Estimate(0.9, 0.0), "conduit": Estimate(0.01, 0.0)},
                    Estimate(0.9, 0.0), 0.0)  # fmt: skip
    figures.figure1({(k, n): cell for k in (2, 4) for n in (300, 1000)}, scale, tmp_path / "1.png")
    estimates = [Estimate(0.1 * i + 0.1, 0.01) for i in range(5)]
    figures.figure2({300: estimates, 1000: estimates}, 4, 10, tmp_path / "2.png")
    figures.figure2_training({300: [estimates] * 4, 1000: [estimates] * 4}, 4, tmp_path / "t.png")
    curves = {(k, copies): estimates for k in scale.predictability_lengths
              for copies in (0, *scale.conduit_copies)}  # fmt: skip
    figures.figure3(curves, scale, tmp_path / "3.png")


def paper4_figures(tmp_path):
    from experiments.paper4 import report

    curves = [{"epoch": e, "val/position_acc": 0.5 + e / 10, "train/position_acc": 0.4 + e / 10,
               "val/loss": 1 - e / 10} for e in range(4)]  # fmt: skip
    records = {(name, seed): {"curves": curves} for name in ("gru", "lstm") for seed in (0, 1)}
    report.training_figure(records, tmp_path / "training.png")
    tokens = ("the", ",", "and", ".", "of", "i", "to", ";", "that", "a")
    points = pd.DataFrame([{"token": token, "pc1": index + t, "pc2": t - index}
                           for index, token in enumerate(tokens) for t in range(5)])  # fmt: skip
    report.figure2(points, tmp_path / "2.png")
    report.figure3({str(T): [0.1 * t for t in range(T + 1)] for T in range(1, 13)},
                   tmp_path / "3.png")  # fmt: skip
    gates = {"update_output": 0.8, "update_output_masked": 0.2, "reset_store": 0.7,
             "reset_store_masked": 0.3}  # fmt: skip
    analysis = {"tokens": {token: {"gates": gates} for token in ("i", "the")}}
    report.figure5([analysis, analysis], [0, 1], tmp_path / "5.png")


DRAWERS = {
    "probes.command.pruning": pruning,
    "probes.command.functional_group": functional_groups,
    "probes.command.gate_saturation": gate_saturation,
    "probes.command.interventions": interventions,
    "probes.command.contextual_decomposition": contextual_decomposition,
    "experiments.paper1.ablations": paper1_pruning,
    "experiments.paper1.analyses": paper1_analyses,
    "experiments.paper1.tables": paper1_tables,
    "experiments.paper3.report": paper3_report,
    "experiments.paper3.toy_report": paper3_toy_report,
    "experiments.atlas.report": atlas_matrix,
    "probes.command.svm_rfe": svm_rfe,
    "experiments.paper2.figures": paper2_figures,
    "experiments.paper4.report": paper4_figures,
}


@pytest.mark.parametrize("module", list(DRAWERS))
def test_every_text_of_the_figure_is_at_least_8_pt(module, tmp_path, monkeypatch):
    """Each figure `module` draws has every non-empty text (legends, ticks, titles, labels,
    annotations) at `SMALLEST_POINTS` or more, laid out as `save_figure` lays it out."""
    import importlib

    drawn = []
    monkeypatch.setattr(importlib.import_module(module), "save_figure",
                        lambda figure, path, **_: drawn.append(figure) or path)  # fmt: skip
    DRAWERS[module](tmp_path)
    assert drawn, f"{module} drew no figure"
    small = []
    for figure in drawn:
        figure.tight_layout()
        figure.canvas.draw()  # makes every tick label
        small += [f"{text.get_text()!r} at {text.get_fontsize():g} pt"
                  for text in figure.findobj(matplotlib.text.Text)
                  if text.get_text().strip() and text.get_visible()
                  and text.get_fontsize() < SMALLEST_POINTS]  # fmt: skip
        matplotlib.pyplot.close(figure)
    assert not small, f"{module}: {len(small)} texts below {SMALLEST_POINTS} pt: {small[:5]}"


def overlapping_tick_labels(figure) -> list[str]:
    """The pairs of visible tick labels of one axis of `figure` that overlap, laid out as saved."""
    figure.tight_layout()
    renderer = figure.canvas.get_renderer()
    pairs = []
    for axis in figure.axes:
        for ticks in (axis.get_xticklabels(), axis.get_yticklabels()):
            shown = [(t.get_text(), t.get_window_extent(renderer))
                     for t in ticks if t.get_text().strip() and t.get_visible()]  # fmt: skip
            pairs += [f"{a!r} and {b!r}" for i, (a, box) in enumerate(shown)
                      for b, other in shown[i + 1:] if box.overlaps(other)]  # fmt: skip
    return pairs


@pytest.mark.parametrize(("tokens", "sampled", "every"), [(11, 50, 1), (21, 51, 2)])
def test_paper1_tick_labels_fit_at_8_pt(tokens, sampled, every, tmp_path, monkeypatch):
    """Figure 1 labels every token and Figure 3 every unit, at 8 pt and not overlapping, the
    figure growing with them; beyond `MOST_TOKENS` tokens (`MOST_UNITS` units) one in k is
    labelled and the axis label says so."""
    from experiments.paper1 import analyses

    drawn = []
    monkeypatch.setattr(analyses, "save_figure", lambda figure, path: drawn.append(figure))
    vocabulary = [f"t{index}" for index in range(tokens)]
    quantiles = [[-1.0, -0.5, 0.0, 0.5, 1.0]] * 512
    figures = {"vocabulary": vocabulary, "embedding": [[0.1] * 16] * tokens,
               "quantiles": {"encoder": quantiles, "decoder": quantiles}}  # fmt: skip
    runs = {variant: [{"figures": figures}] * 2 for variant in ("baseline", "guided")}
    analyses.heatmap_figure(runs, [1, 2], tmp_path / "1.png")
    analyses.activation_figure({v: {"figures": figures} for v in runs}, tmp_path / "3.png", sampled)
    heatmap, activation = drawn
    labelled = {"token": [a.get_yticklabels() for a in heatmap.axes if a.get_images()],
                "unit": [a.get_xticklabels() for a in activation.axes]}  # fmt: skip
    assert [len(t) for t in labelled["token"]] == [-(-tokens // every)] * 6
    assert [len(t) for t in labelled["unit"]] == [-(-sampled // every)] * 2
    named = "" if every == 1 else f" (one in {every} labelled)"
    assert {a.get_ylabel() for a in heatmap.axes if a.get_images()} == {f"token{named}"}
    assert {a.get_xlabel() for a in activation.axes} == {f"unit{named}"}
    for figure in drawn:
        assert not overlapping_tick_labels(figure)
        matplotlib.pyplot.close(figure)
