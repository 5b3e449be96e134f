"""Every text of the figures drawn for pruning, contextual decomposition, gate saturation,
functional groups and the neuron manipulations (the probes' and the reproductions') is readable:
no legend entry, tick label, title, annotation or axis label below `SMALLEST_POINTS` (8 pt).
Each figure is drawn on small hand-made measurements of the shape its caller passes."""

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


def paper1_saturation(tmp_path):
    from experiments.paper1.analyses import GATES, saturation_figure

    run = {"saturation": {site: {"right": [0.1, 0.9], "left": [0.8, 0.05]} for site in GATES}}
    saturation_figure({"baseline": [run], "guided": [run]}, tmp_path / "saturation.png")


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
    "experiments.paper1.analyses": paper1_saturation,
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
