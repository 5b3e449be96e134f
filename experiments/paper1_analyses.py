"""Paper 1's analyses of trained models (Baan et al. 2019, sections 3-4), over recorded runs.

For every baseline and guided run: the decoder embedding (3.1, Figure 1), connectivity graphs of
the gate weights (3.2, Figure 2), activation ranges (4.1, Figure 3), diagnostic classifiers and
functional groups (4.1, Tables 2-3) and gate saturation (4.2, Figure 4). The methods are the
suite's probes; what is paper-specific lives here: which sites, labels and thresholds, and the
paper's sign convention for the update gate.

The paper writes the GRU as `h = (1 - z) h_prev + z h_candidate` (section 2.2), so its update
gate is `1 - z` of torch's (`h = (1 - z) n + z h_prev`), and its `W_z` is minus torch's. Every
update-gate number here is converted to the paper's convention.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from torch import Tensor  # noqa: E402

from datamodules.lookup_tables import TEST_SPLITS
from experiments.report import (  # noqa: E402
    save_figure,
)
from lightning_modules.seq2seq import SOS
from probes.activations import gate_saturation, value_quantiles
from probes.command.base import joined_trace
from probes.traces import (
    PAPER1_GATE_SITES,
    STEP_LABEL,
    site_functional_group,
    site_values,
    valid_steps,
)
from probes.weights import (
    connectivity,
    gate_weights,
    polarity_correlation,
    strongest_units,
    unit_strength,
)
from storage.run_folder import RunFolder

THRESHOLDS = {"encoder": 0.2, "decoder": 0.17}  # section 3.2
# Figure 2's matrices and the layer the paper finds hubs in: encoder W_hz / W_hr rows ("top
# layer"), decoder W_iz / W_ir columns ("bottom layer").
MATRICES = {
    "encoder W_hz": ("encoder", "update_gate", "hh", "to"),
    "encoder W_hr": ("encoder", "reset_gate", "hh", "to"),
    "decoder W_iz": ("decoder", "update_gate", "ih", "from"),
    "decoder W_ir": ("decoder", "reset_gate", "ih", "from"),
}
ATTENDED = "batch.attention_target"
GATES = PAPER1_GATE_SITES
# Tables 2-3: (site, label, alignment). A decoder step's table is the one its target attention
# points at; "time" is the encoder step.
PROBES = {
    "table2.encoder.hidden": ("encoder.hidden", "batch.source_table", None),
    "table2.decoder.update_gate": ("decoder.update_gate", "batch.source_table", ATTENDED),
    "table2.decoder.reset_gate": ("decoder.reset_gate", "batch.source_table", ATTENDED),
    "table3.encoder.hidden": ("encoder.hidden", STEP_LABEL, None),
}
STRING_ROWS = slice(3, None)  # decoder vocabulary: 0 pad, 1 <sos>, 2 <eos>, 3.. the 8 strings


def paper_weights(state: dict[str, Tensor], module: str, gate: str, kind: str) -> Tensor:
    """A gate's weight block in the paper's convention (update gate negated)."""
    return gate_weights(state, module, gate, kind, convention="paper1")


def test_trace(run: RunFolder, tag: str = "best") -> dict[str, Tensor]:
    """The run's traces of the four test sets, concatenated along the batch."""
    return joined_trace(run, TEST_SPLITS, tag)


def analyse_run(path: str | Path) -> dict:
    """Every per-model statistic of sections 3-4 for one run (plain numbers and lists)."""
    run = RunFolder(path)
    state = run.state_dict()
    trace = test_trace(run)
    embedding = state["decoder_embedding.weight"].abs()
    result: dict = {
        "embedding_strings": float(embedding[STRING_ROWS].mean()),
        "embedding_sos": float(embedding[SOS].mean()),
        "connectivity": {},
        "polarity_correlation": {
            "encoder": polarity_correlation(
                paper_weights(state, "encoder", "update_gate", "hh"),
                paper_weights(state, "encoder", "reset_gate", "hh"),
                dim=1,
            ),
            "decoder": polarity_correlation(
                paper_weights(state, "decoder", "update_gate", "ih"),
                paper_weights(state, "decoder", "reset_gate", "ih"),
                dim=0,
            ),
        },
        "ranges": {},
        "saturation": {},
        "probes": {},
    }
    for name, (module, gate, kind, side) in MATRICES.items():
        graph = connectivity(paper_weights(state, module, gate, kind), THRESHOLDS[module])
        result["connectivity"][name] = {
            "edge_share": graph.edge_share,
            "connected": graph.connected(side),
            "hub_share": graph.hub_share(side),
            "polar": graph.polar(side),
        }
    for module in ("encoder", "decoder"):
        site = f"{module}.hidden"
        quantiles = value_quantiles(trace[site], valid_steps(trace, site))
        result["ranges"][module] = (quantiles[:, 4] - quantiles[:, 0]).tolist()
    for site in GATES:
        gate = site_values(trace, site, "paper1")
        saturation = gate_saturation(gate, valid_steps(trace, site))
        result["saturation"][site] = {
            "left": saturation.left.tolist(),
            "right": saturation.right.tolist(),
        }
    strongest = {
        module: set(strongest_units(unit_strength(state, module), 0.05).tolist())
        for module in ("encoder", "decoder")
    }
    for name, (site, label, align) in PROBES.items():
        group = site_functional_group(trace, site, label, align, convention="paper1")
        units = group.units.tolist()
        result["probes"][name] = {
            "accuracy": group.accuracy,
            "accuracy_all": group.accuracy_all,
            "size": group.size,
            "majority": group.majority,
            "units": units,
            "in_top5": sum(u in strongest[site.split(".")[0]] for u in units) / len(units),
        }
    return result


def analyse_runs(paths: Sequence[Path], jobs: int) -> list[dict]:
    """`analyse_run` over `paths`, `jobs` processes at a time, in order."""
    if jobs <= 1:
        return [analyse_run(p) for p in paths]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(analyse_run, paths))


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


def heatmap_figure(runs: dict[str, list[Path]], vocabulary: Sequence[str], path: Path) -> Path:
    """Figure 1: the decoder embedding `[tokens, units]` of each baseline/guided pair (rows =
    seeds) and the mean absolute weight over the seeds (last row)."""
    weights = {
        v: [RunFolder(p).state_dict()["decoder_embedding.weight"] for p in runs[v]] for v in runs
    }
    limit = max(float(w.abs().max()) for ws in weights.values() for w in ws)
    rows = len(runs["guided"]) + 1
    figure, axes = plt.subplots(rows, 2, figsize=(12, 1.3 * rows + 1), squeeze=False)
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
            axis.set_yticks(range(len(vocabulary)), vocabulary, fontsize=5)
            title = (
                "mean |w| over seeds"
                if last
                else f"seed={RunFolder(runs[variant][row]).path.name.split('=')[1]}"
            )
            axis.set_title(f"{variant}: {title}", fontsize=8)
            axis.tick_params(axis="x", labelsize=6)
            if last:
                axis.set_xlabel("decoder input unit (outgoing weights of a token)")
        figure.colorbar(image, ax=axes[-1][column], fraction=0.03)
    return save_figure(figure, path)


def connectivity_figure(runs: dict[str, Path], path: Path) -> Path:
    """Figure 2: strong edges (|w| >= threshold) of encoder W_hz and decoder W_iz (paper's
    sign), sending neurons at the bottom, receiving at the top; red positive, blue negative."""
    figure, axes = plt.subplots(2, 2, figsize=(12, 6))
    for column, variant in enumerate(("baseline", "guided")):
        state = RunFolder(runs[variant]).state_dict()
        for row, matrix in enumerate(("encoder W_hz", "decoder W_iz")):
            module, gate, kind, _ = MATRICES[matrix]
            weight = paper_weights(state, module, gate, kind)
            to_units, from_units = torch.nonzero(weight.abs() >= THRESHOLDS[module], as_tuple=True)
            values = weight[to_units, from_units]
            scale = 1 / weight.shape[1], 1 / weight.shape[0]
            segments = [
                [(f * scale[0], 0), (t * scale[1], 1)]
                for t, f in zip(to_units.tolist(), from_units.tolist(), strict=True)
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
            axis.set_title(
                f"{variant} {matrix}: {len(values)} edges with |w| >= {THRESHOLDS[module]}",
                fontsize=9,
            )
    return save_figure(figure, path)


def activation_figure(runs: dict[str, Path], path: Path, sampled: int = 50) -> Path:
    """Figure 3: value distributions (boxes: quartiles, whiskers: full range) of `sampled`
    randomly chosen units over the test sets, baseline (blue) and guided (orange)."""
    figure, axes = plt.subplots(2, 1, figsize=(14, 6))
    for row, module in enumerate(("encoder", "decoder")):
        for offset, variant in enumerate(("baseline", "guided")):
            trace = test_trace(RunFolder(runs[variant]))
            values = trace[f"{module}.hidden"][valid_steps(trace, f"{module}.hidden")]
            units = torch.randperm(values.shape[1], generator=torch.Generator().manual_seed(0))
            units = units[:sampled]
            boxes = axes[row].boxplot(
                [values[:, u].numpy() for u in units],
                positions=[3 * i + offset for i in range(len(units))],
                whis=(0, 100),
                widths=0.8,
                patch_artist=True,
                showfliers=False,
            )
            for box in boxes["boxes"]:
                box.set_facecolor(COLOURS[variant])
        axes[row].set_xticks([3 * i + 0.5 for i in range(len(units))], units.tolist(), fontsize=6)
        axes[row].set_xlabel("unit")
        axes[row].set_ylabel(f"{module} activation")
        axes[row].set_title(f"{module}: {sampled} random units (baseline blue, guided orange)")
    return save_figure(figure, path)


def saturation_figure(results: dict[str, list[dict]], path: Path) -> Path:
    """Figure 4: per gate unit, the fraction of steps right-saturated (> 0.9, x) against
    left-saturated (< 0.1, y), every unit of every run; update gate in the paper's convention."""
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
    """Tables 2-3 side by side: 'group (all)' accuracy and group size, paper vs ours (mean)."""
    lines = [
        "| table | in | model | paper acc. group (all) | ours | paper #units | ours (per run) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in PROBES:
        table, site = name.split(".", 1)
        for variant in ("baseline", "guided"):
            group, every, size = paper[table][site][variant]
            runs = results[variant]
            ours_group = mean_of(per_run(runs, "probes", name, "accuracy"))
            ours_all = mean_of(per_run(runs, "probes", name, "accuracy_all"))
            sizes = per_run(runs, "probes", name, "size")
            lines.append(
                f"| {table[-1]} | `{site}` | {variant} | {group:.2f} ({every:.2f}) | "
                f"{ours_group:.2f} ({ours_all:.2f}) | {size} | {mean_of(sizes):.1f} "
                f"({', '.join(str(int(s)) for s in sizes)}) |"
            )
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


def convention_table(results: dict[str, list[dict]]) -> str:
    """The update-gate statistics under the paper's stated convention and under torch's (`z`
    keeps the old state), whose left and right saturation swap and whose `W_z` changes sign. The
    verdicts use the paper's; this shows how much they depend on it."""

    def median_left(variant: str, module: str, torch_convention: bool) -> float:
        side = "right" if torch_convention else "left"
        values = [
            x for r in results[variant] for x in r["saturation"][f"{module}.update_gate"][side]
        ]
        return float(torch.tensor(values).median())

    def right_gap(torch_convention: bool) -> float:
        side = "left" if torch_convention else "right"
        means = {
            v: mean_of(
                [x for r in results[v] for x in r["saturation"]["decoder.update_gate"][side]]
            )
            for v in results
        }
        return means["guided"] - means["baseline"]

    rows = [
        ("baseline encoder update gates: median fraction left-saturated",
         *(median_left("baseline", "encoder", t) for t in (False, True))),
        ("baseline decoder update gates: median fraction left-saturated",
         *(median_left("baseline", "decoder", t) for t in (False, True))),
        ("guided encoder update gates: median fraction left-saturated",
         *(median_left("guided", "encoder", t) for t in (False, True))),
        ("decoder update gates right-saturated: guided - baseline mean fraction",
         right_gap(False), right_gap(True)),
    ]  # fmt: skip
    for variant in ("baseline", "guided"):
        for module in ("encoder", "decoder"):
            r = mean_of(per_run(results[variant], "polarity_correlation", module))
            rows.append((f"{variant} {module}: r(update, reset) of mean weights", r, -r))
    lines = ["| statistic | paper's convention (verdicts) | torch's convention |", "|---|---|---|"]
    lines += [f"| {name} | {a:+.3f} | {b:+.3f} |" for name, a, b in rows]
    return "\n".join(lines)
