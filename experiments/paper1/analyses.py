"""Paper 1's analyses of trained models (Baan et al. 2019, sections 3-4), over recorded runs.

For every baseline and guided run: the decoder embedding (3.1, Figure 1), connectivity graphs of
the gate weights (3.2, Figure 2), activation ranges (4.1, Figure 3), diagnostic classifiers and
functional groups (4.1, Tables 2-3) and gate saturation (4.2, Figure 4). The methods are the
suite's probes; what is paper-specific lives here: which sites, labels and thresholds, and the
two readings of the update gate.

The update gate is read as torch's `z` (`h = (1 - z) n + z h_prev`), as the authors' analysis
code does (`mitjanikolaus/machine-analysis`: `models/analysable_cells.py` computes torch's gates
and calls `z` the "input gate"; `inspect_gate_activations.py` counts its saturation). The
paper's equation (section 2.2, `h = (1 - z) h_prev + z h_candidate`) makes its gate `1 - z` and
its `W_z` minus torch's; `paper_equation` gives that second reading of a run's statistics
exactly (saturation sides swapped, polarity correlations negated; the connectivity counts and
the functional groups do not depend on the sign).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from torch import Tensor  # noqa: E402

from datamodules.machine_tasks import SPLITS, TEST_SPLITS
from experiments.report import (  # noqa: E402
    save_figure,
)
from lightning_modules.recording import record_traces
from lightning_modules.sequences import SOS
from probes.activations import gate_saturation, value_quantiles
from probes.command.base import joined_trace
from probes.command.outputs import SMALLEST_POINTS
from probes.diagnostic import functional_group_of
from probes.traces import (
    PAPER1_GATE_SITES,
    STEP_LABEL,
    site_samples,
    site_values,
    valid_steps,
)
from probes.weights import (
    connectivity,
    gate_weights,
    polarity_correlation,
    recurrent_cell,
    strongest_units,
    unit_strength,
)
from storage.run_folder import RunFolder

THRESHOLDS = {"encoder": 0.2, "decoder": 0.17}  # section 3.2
MODULES = ("encoder", "decoder")
CELL_GATES = {"gru": ("update_gate", "reset_gate"),
              "lstm": ("input_gate", "forget_gate", "output_gate")}  # fmt: skip
"""The gates analysed per cell (an LSTM's candidate, like a GRU's, is no gate)."""
SYMBOLS = {"update_gate": "z", "reset_gate": "r", "input_gate": "i", "forget_gate": "f",
           "output_gate": "o"}  # fmt: skip
GRU_ROLES = {"gru": {"update_gate": "update_gate", "reset_gate": "reset_gate"},
             "lstm": {"update_gate": "forget_gate", "reset_gate": "output_gate"}}  # fmt: skip
"""Which gate of a cell the GRU claims read as the update and as the reset gate (footnote 1's
LSTMs). Torch's update gate `z` keeps the old state (`h = (1 - z) n + z h_prev`), as an LSTM's
forget gate keeps the old cell (`c = f c_prev + i g`); the reset gate decides how much of the
previous state reaches the next computation (`n = tanh(W_in x + r (W_hn h_prev))`), as the output
gate decides how much of the cell reaches the hidden state that the next step's gates and
candidate read (`h = o tanh(c)`). The input gate, the paper's reading of `z` as new information
let in (`1 - z`), is reported beside them."""


def matrices_of(cell: str) -> dict[str, tuple[str, str, str, str]]:
    """Figure 2's matrices of each gate of `cell` and the layer the paper finds hubs in: encoder
    W_h<gate> rows ("top layer"), decoder W_i<gate> columns ("bottom layer")."""
    return {
        **{f"encoder W_h{SYMBOLS[g]}": ("encoder", g, "hh", "to") for g in CELL_GATES[cell]},
        **{f"decoder W_i{SYMBOLS[g]}": ("decoder", g, "ih", "from") for g in CELL_GATES[cell]},
    }


def gate_sites(cell: str) -> tuple[str, ...]:
    """The gate sites of both modules of a `cell` seq2seq."""
    return tuple(f"{module}.{gate}" for module in MODULES for gate in CELL_GATES[cell])


ATTENDED = "batch.attention_target"


def probes_of(cell: str) -> dict[str, tuple[str, str, str | None]]:
    """Tables 2-3's diagnostic classifiers of a `cell` seq2seq: (site, label, alignment). A
    decoder step's table is the one its target attention points at; "time" is the encoder
    step."""
    return {
        "table2.encoder.hidden": ("encoder.hidden", "batch.source_table", None),
        **{f"table2.decoder.{gate}": (f"decoder.{gate}", "batch.source_table", ATTENDED)
           for gate in CELL_GATES[cell]},
        "table3.encoder.hidden": ("encoder.hidden", STEP_LABEL, None),
    }  # fmt: skip


MATRICES = matrices_of("gru")
GATES = PAPER1_GATE_SITES  # gate_sites("gru")
PROBES = probes_of("gru")
READINGS = (("probes", "coauthors", "every split"), ("probes_text", "text", "test sets"))
"""Tables 2-3's two readings: (result key, `functional_group_of` procedure, data). The
co-authors' code (`functional_groups.py`) decides, on the activations of all the data (its
`*_all.pt`: here every split's); the text's reading stays beside it on the four test sets, its
verdicts kept as the earlier ones."""
STRING_ROWS = slice(3, None)  # decoder vocabulary: 0 pad, 1 <sos>, 2 <eos>, 3.. the 8 strings


def paper_equation(result: dict) -> dict:
    """`analyse_run`'s statistics of one run read by the paper's equation of section 2.2 (its
    update gate is one minus torch's, its `W_z` minus torch's)."""
    swapped = {site: {"left": sides["right"], "right": sides["left"]}
               if site.endswith("update_gate") else sides
               for site, sides in result["saturation"].items()}  # fmt: skip
    negated = {module: -r for module, r in result["polarity_correlation"].items()}
    return {**result, "saturation": swapped, "polarity_correlation": negated}


def test_trace(run: RunFolder, tag: str = "best") -> dict[str, Tensor]:
    """The run's traces of the four test sets, concatenated along the batch."""
    return joined_trace(run, TEST_SPLITS, tag)


def ensure_traces(run: RunFolder, tag: str) -> None:
    """Record every split's trace of the checkpoint or weight snapshot `tag` (`epoch=init`: the
    untrained model; `RunFolder.model`) as `TraceRecorder` does for `best`, unless the run has
    them."""
    if not all(run.trace_path(split, tag).is_file() for split in SPLITS):
        with torch.no_grad():
            record_traces(run.model(tag), run.datamodule(tag), SPLITS, run.path, tag)


def rounded(values: Tensor, decimals: int = 4) -> list:
    """A tensor as nested lists of floats rounded to `decimals` (figure data in a record)."""
    return torch.round(values.double(), decimals=decimals).tolist()


FIGURE2_MATRICES = ("encoder W_hz", "decoder W_iz")


def figure2_matrices(cell: str) -> tuple[str, ...]:
    """Figure 2's matrices of `cell`: those of the gate read as the update gate (`GRU_ROLES`)."""
    symbol = SYMBOLS[GRU_ROLES[cell]["update_gate"]]
    return (f"encoder W_h{symbol}", f"decoder W_i{symbol}")


def strong_edges(state: dict[str, Tensor], matrix: str, cell: str = "gru") -> dict:
    """Figure 2's edges of `matrix` (of `matrices_of(cell)`): the weights with |w| >= the paper's
    threshold, by position (`to` row, `from` column) and value, and the matrix's shape."""
    module, gate, kind, _ = matrices_of(cell)[matrix]
    weight = gate_weights(state, module, gate, kind)
    to_units, from_units = torch.nonzero(weight.abs() >= THRESHOLDS[module], as_tuple=True)
    return {"shape": list(weight.shape), "to": to_units.tolist(), "from": from_units.tolist(),
            "value": rounded(weight[to_units, from_units])}  # fmt: skip


def weight_statistics(state: dict[str, Tensor], cell: str) -> dict:
    """Sections 3.1-3.2 of one model: the decoder embedding, the connectivity of every gate
    matrix of `cell` and the polarity correlation of the gates read as update and reset gate
    (`GRU_ROLES`)."""
    embedding = state["decoder_embedding.weight"].abs()
    update, reset = GRU_ROLES[cell]["update_gate"], GRU_ROLES[cell]["reset_gate"]
    result: dict = {
        "cell": cell,
        "embedding_strings": float(embedding[STRING_ROWS].mean()),
        "embedding_sos": float(embedding[SOS].mean()),
        "connectivity": {},
        "polarity_correlation": {
            module: polarity_correlation(gate_weights(state, module, update, kind),
                                         gate_weights(state, module, reset, kind), dim=dim)
            for module, kind, dim in (("encoder", "hh", 1), ("decoder", "ih", 0))
        },
    }  # fmt: skip
    for name, (module, gate, kind, side) in matrices_of(cell).items():
        graph = connectivity(gate_weights(state, module, gate, kind), THRESHOLDS[module])
        result["connectivity"][name] = {
            "edge_share": graph.edge_share,
            "connected": graph.connected(side),
            "hub_share": graph.hub_share(side),
            "polar": graph.polar(side),
        }
    return result


def analyse_run(path: str | Path, tag: str = "best", splits: int = 5) -> dict:
    """Every per-model statistic of sections 3-4 for the run's checkpoint or weight snapshot `tag`
    (plain numbers and lists), from its traces at `tag` (recorded first where the fit did not:
    `ensure_traces`). A GRU's or an LSTM's (`cell`): an LSTM's every gate under its own name
    (`gru_named` reads it as the GRU claims do). `splits`: the co-authors' reading's random
    splits (`Scale.probe_splits`)."""
    run = RunFolder(path)
    ensure_traces(run, tag)
    state = run.state_dict(tag)
    cell = recurrent_cell(state, "encoder")
    trace = test_trace(run, tag)
    result = weight_statistics(state, cell)
    result |= {"ranges": {}, "saturation": {}}
    result["figures"] = {
        "vocabulary": run.datamodule(tag).target_vocab,
        "embedding": rounded(state["decoder_embedding.weight"]),
        "edges": {name: strong_edges(state, name, cell) for name in figure2_matrices(cell)},
        "quantiles": {},
    }
    for module in MODULES:
        site = f"{module}.hidden"
        quantiles = value_quantiles(trace[site], valid_steps(trace, site))
        result["ranges"][module] = (quantiles[:, 4] - quantiles[:, 0]).tolist()
        result["figures"]["quantiles"][module] = rounded(quantiles)
    for site in gate_sites(cell):
        gate = site_values(trace, site)
        saturation = gate_saturation(gate, valid_steps(trace, site))
        result["saturation"][site] = {
            "left": saturation.left.tolist(),
            "right": saturation.right.tolist(),
        }
    strongest = {
        module: set(strongest_units(unit_strength(state, module), 0.05).tolist())
        for module in MODULES
    }
    every_split = joined_trace(run, SPLITS, tag)
    for key, procedure, data in READINGS:
        result[key] = {}
        for name, (site, label, align) in probes_of(cell).items():
            samples = site_samples(every_split if data == "every split" else trace, site, label,
                                   align)  # fmt: skip
            group = functional_group_of(*samples, procedure, splits)
            units = group.units.tolist()
            result[key][name] = {
                "accuracy": group.accuracy,
                "accuracy_all": group.accuracy_all,
                "size": group.size,
                "majority": group.majority,
                "units": units,
                "in_top5": sum(u in strongest[site.split(".")[0]] for u in units) / len(units),
            }
    return result


def gru_named(result: dict) -> dict:
    """A model's analysis as the GRU claims read it: an LSTM's gates of `GRU_ROLES` (forget,
    output) under the GRU's names (update, reset) in every statistic, its input gate under its
    own; a GRU's (measurements without `cell` are a GRU's) as it is."""
    cell = result.get("cell", "gru")
    names = {}
    for gru_gate, gate in GRU_ROLES[cell].items():
        for module in MODULES:
            names[f"{module}.{gate}"] = f"{module}.{gru_gate}"
        names[f"table2.decoder.{gate}"] = f"table2.decoder.{gru_gate}"
        names[f"encoder W_h{SYMBOLS[gate]}"] = f"encoder W_h{SYMBOLS[gru_gate]}"
        names[f"decoder W_i{SYMBOLS[gate]}"] = f"decoder W_i{SYMBOLS[gru_gate]}"

    def renamed(entries: dict) -> dict:
        return {names.get(key, key): value for key, value in entries.items()}

    edges = renamed(result["figures"].get("edges", {}))
    named = {**result, "figures": {**result["figures"], "edges": edges}}
    for key in ("connectivity", "saturation", *(key for key, _, _ in READINGS)):
        named[key] = renamed(result[key])
    return named


def mean_of(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def per_run(results: list[dict], *keys) -> list[float]:
    """One number per run from `results[i][keys[0]][keys[1]]...`."""
    values = []
    for result in results:
        for key in keys:
            result = result[key]
        values.append(float(result))
    return values


# ---- figures and tables ------------------------------------------------------------------------
COLOURS = {"baseline": "tab:blue", "guided": "tab:orange"}
LABEL_HEIGHT = 1.6 * SMALLEST_POINTS / 72
"""The inches of axis one tick label of a line takes, at `SMALLEST_POINTS` 1.6 label heights
apart; a figure grows with its labels rather than its text shrinking."""
MOST_TOKENS = 20
"""Token labels a heat map row of Figure 1 shows at most: beyond, one token in k is labelled."""
MOST_UNITS = 50
"""Unit labels an axis of Figure 3 shows at most: beyond, one unit in k is labelled."""


def one_in(count: int, most: int) -> int:
    """k such that labelling one tick in k labels at most `most` of `count` ticks."""
    return max(1, math.ceil(count / most))


def heatmap_figure(results: dict[str, list[dict]], seeds: Sequence[int], path: Path) -> Path:
    """Figure 1: the decoder embedding `[tokens, units]` of each baseline/guided pair (rows =
    seeds) and the mean absolute weight over the seeds (last row), from the runs' analyses.
    Each token is labelled at `SMALLEST_POINTS` (one in k beyond `MOST_TOKENS`); the rows grow
    with the labels."""
    weights = {v: [torch.tensor(r["figures"]["embedding"]) for r in runs]
               for v, runs in results.items()}  # fmt: skip
    vocabulary = results["guided"][0]["figures"]["vocabulary"]
    limit = max(float(w.abs().max()) for ws in weights.values() for w in ws)
    rows = len(results["guided"]) + 1
    every = one_in(len(vocabulary), MOST_TOKENS)
    height = max(0.8, LABEL_HEIGHT * math.ceil(len(vocabulary) / every))  # one panel's axes
    figure, axes = plt.subplots(rows, 2, figsize=(12, (height + 0.8) * rows + 0.4), squeeze=False)
    for column, variant in enumerate(("baseline", "guided")):
        panels = [*weights[variant], torch.stack([w.abs() for w in weights[variant]]).mean(0)]
        for row, panel in enumerate(panels):
            axis = axes[row][column]
            last = row == rows - 1
            image = axis.imshow(
                panel,
                aspect="auto",
                cmap="viridis" if last else "RdBu_r",
                vmin=0 if last else -limit,
                vmax=limit,
                interpolation="nearest",
            )
            axis.set_yticks(range(0, len(vocabulary), every), vocabulary[::every],
                            fontsize=SMALLEST_POINTS)  # fmt: skip
            axis.set_ylabel("token" if every == 1 else f"token (one in {every} labelled)",
                            fontsize=SMALLEST_POINTS)  # fmt: skip
            title = "mean |w| over seeds" if last else f"seed={seeds[row]}"
            axis.set_title(f"{variant}: {title}", fontsize=SMALLEST_POINTS)
            axis.tick_params(axis="x", labelsize=SMALLEST_POINTS)
            if last:
                axis.set_xlabel("decoder input unit (outgoing weights of a token)")
        figure.colorbar(image, ax=axes[-1][column], fraction=0.03)
    return save_figure(figure, path)


def connectivity_figure(first: dict[str, dict], path: Path) -> Path:
    """Figure 2: strong edges (|w| >= threshold) of encoder W_hz and decoder W_iz (torch's
    sign), sending neurons at the bottom, receiving at the top; red positive, blue negative;
    from the analysis of each variant's first run."""
    figure, axes = plt.subplots(2, 2, figsize=(12, 6))
    for column, variant in enumerate(("baseline", "guided")):
        for row, matrix in enumerate(FIGURE2_MATRICES):
            edges = first[variant]["figures"]["edges"][matrix]
            values = torch.tensor(edges["value"], dtype=torch.float64)
            scale = 1 / edges["shape"][1], 1 / edges["shape"][0]
            segments = [
                [(f * scale[0], 0), (t * scale[1], 1)]
                for t, f in zip(edges["to"], edges["from"], strict=True)
            ]
            colours = ["tab:red" if v > 0 else "tab:blue" for v in values.tolist()]
            widths = (0.6 * values.abs() / values.abs().max()).tolist() if len(values) else []
            axis = axes[row][column]
            axis.add_collection(
                LineCollection(segments, colors=colours, linewidths=widths, alpha=0.25)
            )
            axis.set_xlim(0, 1)
            axis.set_ylim(-0.05, 1.05)
            axis.set_yticks([0, 1], ["from", "to"])
            axis.set_xticks([])
            module = MATRICES[matrix][0]
            axis.set_title(
                f"{variant} {matrix}: {len(values)} edges with |w| >= {THRESHOLDS[module]}",
                fontsize=9,
            )
    return save_figure(figure, path)


def activation_figure(first: dict[str, dict], path: Path, sampled: int = 50) -> Path:
    """Figure 3: value distributions (boxes: quartiles, whiskers: full range) of `sampled`
    randomly chosen units over the test sets, baseline (blue) and guided (orange), from the
    quantiles in the analysis of each variant's first run. Each unit is labelled at
    `SMALLEST_POINTS` (one in k beyond `MOST_UNITS`); the figure widens with the labels."""
    count = max(len(first["baseline"]["figures"]["quantiles"][m]) for m in ("encoder", "decoder"))
    every = one_in(min(sampled, count), MOST_UNITS)
    label = (0.65 * len(str(count - 1)) + 0.6) * SMALLEST_POINTS / 72  # digits and a gap, inches
    width = 1.5 + label * math.ceil(min(sampled, count) / every)
    figure, axes = plt.subplots(2, 1, figsize=(max(14.0, width), 6))
    for row, module in enumerate(("encoder", "decoder")):
        for offset, variant in enumerate(("baseline", "guided")):
            quantiles = first[variant]["figures"]["quantiles"][module]
            units = torch.randperm(len(quantiles), generator=torch.Generator().manual_seed(0))
            units = units[:sampled]
            stats = [dict(zip(("whislo", "q1", "med", "q3", "whishi"), quantiles[u], strict=True))
                     for u in units.tolist()]  # fmt: skip
            boxes = axes[row].bxp(
                stats,
                positions=[3 * i + offset for i in range(len(units))],
                widths=0.8,
                patch_artist=True,
                showfliers=False,
            )
            for box in boxes["boxes"]:
                box.set_facecolor(COLOURS[variant])
        axes[row].set_xticks([3 * i + 0.5 for i in range(0, len(units), every)],
                             units.tolist()[::every], fontsize=SMALLEST_POINTS)  # fmt: skip
        axes[row].set_xlabel("unit" if every == 1 else f"unit (one in {every} labelled)")
        axes[row].set_ylabel(f"{module} activation")
        axes[row].set_title(f"{module}: {len(units)} random units (baseline blue, guided orange)")
    return save_figure(figure, path)


def saturation_figure(results: dict[str, list[dict]], path: Path) -> Path:
    """Figure 4: per gate unit, the fraction of steps right-saturated (> 0.9, x) against
    left-saturated (< 0.1, y), every unit of every run; update gate as torch's `z`."""
    figure, axes = plt.subplots(2, 2, figsize=(9, 9))
    for axis, site in zip(axes.flatten(), GATES, strict=True):
        for variant, runs in results.items():
            right = [x for r in runs for x in r["saturation"][site]["right"]]
            left = [y for r in runs for y in r["saturation"][site]["left"]]
            axis.scatter(right, left, s=3, alpha=0.3, color=COLOURS[variant], label=variant)
        axis.plot([0, 1], [1, 0], color="grey", linewidth=0.5)
        axis.set_xlim(-0.02, 1.02)
        axis.set_ylim(-0.02, 1.02)
        axis.set_xlabel("fraction right-saturated")
        axis.set_ylabel("fraction left-saturated")
        axis.set_title(site)
        axis.legend(markerscale=4, fontsize=8)
    return save_figure(figure, path)


def probe_table(results: dict[str, list[dict]], paper: dict) -> str:
    """Tables 2-3 side by side: 'group (all)' accuracy and group size, paper vs ours (mean), by
    the co-authors' procedure and by the text's (`READINGS`)."""
    lines = [
        "| table | in | model | paper acc. group (all) | paper #units | co-authors' code: acc. "
        "| #units (per run) | text: acc. | #units (per run) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in PROBES:
        table, site = name.split(".", 1)
        for variant in ("baseline", "guided"):
            group, every, size = paper[table][site][variant]
            cells = []
            for key, _, _ in READINGS:
                runs = results[variant]
                accuracy = mean_of(per_run(runs, key, name, "accuracy"))
                accuracy_all = mean_of(per_run(runs, key, name, "accuracy_all"))
                sizes = per_run(runs, key, name, "size")
                listed = ", ".join(str(int(size)) for size in sizes)
                cells += [
                    f"{accuracy:.2f} ({accuracy_all:.2f})",
                    f"{mean_of(sizes):.1f} ({listed})",
                ]
            lines.append(f"| {table[-1]} | `{site}` | {variant} | {group:.2f} ({every:.2f}) | "
                         f"{size} | {' | '.join(cells)} |")  # fmt: skip
    return "\n".join(lines)


def connectivity_table(results: dict[str, list[dict]]) -> str:
    """Per matrix and model type, means over runs of the connectivity statistics."""
    lines = [
        "| matrix | model | weights kept | connected neurons | hub share (top 5%) | polar "
        "neurons | r(update, reset) |",
        "|---|---|---|---|---|---|---|",
    ]
    for matrix in MATRICES:
        module = matrix.split()[0]
        for variant, runs in results.items():
            stats = {
                k: mean_of(per_run(runs, "connectivity", matrix, k))
                for k in ("edge_share", "connected", "hub_share", "polar")
            }
            correlation = mean_of(per_run(runs, "polarity_correlation", module))
            lines.append(
                f"| {matrix} | {variant} | {stats['edge_share']:.2%} | {stats['connected']:.0f} "
                f"| {stats['hub_share']:.2f} | {stats['polar']:.1f} | {correlation:+.2f} |"
            )
    return "\n".join(lines)


def paper_equation_results(results: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Every run's statistics read by the paper's equation (`paper_equation`)."""
    return {variant: [paper_equation(run) for run in runs] for variant, runs in results.items()}


def update_gate_statistics(results: dict[str, list[dict]]) -> dict[str, float]:
    """The statistics of section 4.2 and the polarity finding of 3.2 that depend on which way
    the update gate is read."""

    def median(variant: str, module: str, side: str) -> float:
        values = [
            x for r in results[variant] for x in r["saturation"][f"{module}.update_gate"][side]
        ]
        return float(torch.tensor(values).median())

    def right_mean(runs: list[dict]) -> float:
        return mean_of([x for r in runs for x in r["saturation"]["decoder.update_gate"]["right"]])

    right = {variant: right_mean(runs) for variant, runs in results.items()}
    statistics = {
        f"{variant} {module} update gates: median fraction left-saturated": median(
            variant, module, "left"
        )
        for variant, module in (("baseline", "encoder"), ("baseline", "decoder"),
                                ("guided", "encoder"))
    }  # fmt: skip
    statistics["decoder update gates right-saturated: guided - baseline mean fraction"] = (
        right["guided"] - right["baseline"]
    )
    for variant in ("baseline", "guided"):
        for module in ("encoder", "decoder"):
            statistics[f"{variant} {module}: r(update, reset) of mean weights"] = mean_of(
                per_run(results[variant], "polarity_correlation", module)
            )
    return statistics


def convention_table(results: dict[str, list[dict]]) -> str:
    """The update-gate statistics as the verdicts read them (torch's `z`, as the authors' code)
    beside the same under the paper's equation of section 2.2."""
    primary = update_gate_statistics(results)
    secondary = update_gate_statistics(paper_equation_results(results))
    lines = ["| statistic | torch's `z`, the authors' code (verdicts) | paper's equation (2.2) |",
             "|---|---|---|"]  # fmt: skip
    lines += [
        f"| {name} | {value:+.3f} | {secondary[name]:+.3f} |" for name, value in primary.items()
    ]
    return "\n".join(lines)
