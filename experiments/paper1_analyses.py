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

from experiments.report import (  # noqa: E402
    Claim,
    compare_means,
    ratio_claim,
    save_figure,
    threshold_claim,
)
from lightning_modules.seq2seq import SOS
from probes.activations import Saturation, gate_saturation, value_quantiles
from probes.command.base import joined_trace
from probes.traces import STEP_LABEL, site_functional_group, site_values, valid_steps
from probes.weights import (
    connectivity,
    gate_weights,
    polarity_correlation,
    strongest_units,
    unit_strength,
)
from storage.run_folder import RunFolder

TEST_SPLITS = ("heldout_inputs", "heldout_compositions", "heldout_tables", "new_compositions")
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
GATES = ("encoder.update_gate", "encoder.reset_gate", "decoder.update_gate", "decoder.reset_gate")
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
    weight = gate_weights(state, module, gate, kind)
    return -weight if gate == "update_gate" else weight


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


# ---- claims ------------------------------------------------------------------------------------
def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _per_run(results: list[dict], *keys) -> list[float]:
    """One number per run from `results[i][keys[0]][keys[1]]...`."""
    values = []
    for result in results:
        for key in keys:
            result = result[key]
        values.append(float(result))
    return values


def _share(values: Sequence[float], predicate) -> float:
    return sum(1 for v in values if predicate(v)) / len(values)


def weight_claims(results: dict[str, list[dict]]) -> list[Claim]:
    """Sections 3.1-3.2: the decoder embedding (Figure 1) and the connectivity graphs (Figure 2)."""
    baseline, guided = results["baseline"], results["guided"]
    strings = _mean(_per_run(guided, "embedding_strings")) / _mean(
        _per_run(baseline, "embedding_strings")
    )
    sos = _mean(_per_run(guided, "embedding_sos")) / _mean(_per_run(baseline, "embedding_sos"))
    claims = [
        threshold_claim(
            "fig1.guided_embedding_stronger",
            "Decoder embedding: the guided model has bigger weights than the baseline in the rows "
            "of the output strings (mean |w|, guided / baseline)",
            "bigger in rows 2-10",
            _per_run(guided, "embedding_strings"),
            strings,
            "guided / baseline mean |w| over the 8 string rows",
            reproduced_at=1.5,
            partially_at=1.1,
        ),
        threshold_claim(
            "fig1.sos_row_equal",
            "Decoder embedding: the <sos> row is equally strong in both models",
            "equal",
            _per_run(guided, "embedding_sos"),
            min(sos, 1 / sos),
            "min(ratio, 1/ratio) of guided and baseline mean |w| of the <sos> row",
            reproduced_at=0.8,
            partially_at=0.67,
        ),
    ]
    for module, matrix in (("encoder", "encoder W_hz"), ("decoder", "decoder W_iz")):
        shares = _per_run(baseline + guided, "connectivity", matrix, "edge_share")
        claims.append(
            ratio_claim(
                f"fig2.threshold_is_top1pct.{module}",
                f"The {module} threshold ±{THRESHOLDS[module]} keeps about the strongest 1% of "
                f"{matrix} (share of weights kept, both model types)",
                0.01,
                shares,
            )
        )
    for matrix, (_, _, _, side) in MATRICES.items():
        layer = "top (receiving)" if side == "to" else "bottom (sending)"
        connected = {
            v: _mean(_per_run(results[v], "connectivity", matrix, "connected")) for v in results
        }
        hubs = {
            v: _mean(_per_run(results[v], "connectivity", matrix, "hub_share")) for v in results
        }
        claims += [
            threshold_claim(
                f"fig2.fewer_connected_neurons.{matrix.replace(' ', '_')}",
                f"{matrix}: guided models have fewer neurons with strong connections in the "
                f"{layer} layer than the baseline (baseline is 'more cluttered')",
                "fewer in guided",
                _per_run(guided, "connectivity", matrix, "connected"),
                connected["baseline"] / max(connected["guided"], 1e-9),
                "baseline / guided mean number of connected neurons",
                reproduced_at=1.2,
                partially_at=1.0,
            ),
            threshold_claim(
                f"fig2.hub_neurons.{matrix.replace(' ', '_')}",
                f"{matrix}: strong connections are concentrated on a few neurons of the {layer} "
                "layer in guided models (share of strong edges on the best-connected 5% of "
                "neurons)",
                "a few strongly connected neurons",
                _per_run(guided, "connectivity", matrix, "hub_share"),
                hubs["guided"] / max(hubs["baseline"], 1e-9),
                "guided / baseline mean hub share",
                reproduced_at=1.2,
                partially_at=1.0,
            ),
        ]
    for matrix in ("encoder W_hz", "decoder W_iz"):
        polar = {v: _mean(_per_run(results[v], "connectivity", matrix, "polar")) for v in results}
        claims.append(
            threshold_claim(
                f"fig2.polar_neurons.{matrix.replace(' ', '_')}",
                f"{matrix}: guided models show more strongly polar neurons (>= 3 strong edges, "
                ">= 90% of one sign) than the baseline",
                "a few distinct, strongly polar neurons in guided",
                _per_run(guided, "connectivity", matrix, "polar"),
                polar["guided"] - polar["baseline"],
                "guided - baseline mean count of polar neurons",
                reproduced_at=1.0,
                partially_at=0.2,
            )
        )
    for variant, runs in results.items():
        for module, what in (
            ("encoder", "rows of W_hz, W_hr"),
            ("decoder", "columns of W_iz, W_ir"),
        ):
            correlation = _per_run(runs, "polarity_correlation", module)
            claims.append(
                threshold_claim(
                    f"sec3_2.inverse_gate_polarity.{variant}.{module}",
                    f"{variant} {module}: the polarities of update and reset gates are inversely "
                    f"related (Pearson r over neurons of the mean weight, {what}; paper's z)",
                    "inverse (r < 0)",
                    correlation,
                    -_mean(correlation),
                    "-(mean r)",
                    reproduced_at=0.3,
                    partially_at=0.05,
                )
            )
    return claims


def activation_claims(results: dict[str, list[dict]]) -> list[Claim]:
    """Section 4.1 (Figure 3) and 4.2 (Figure 4)."""
    baseline, guided = results["baseline"], results["guided"]

    def pooled(runs, *keys):
        values = []
        for run in runs:
            for key in keys:
                run = run[key]
            values += run
        return values

    narrow = {
        v: [_share(r["ranges"]["encoder"], lambda x: x < 0.5) for r in results[v]] for v in results
    }
    decoder_ranges = pooled(guided, "ranges", "decoder")
    claims = [
        threshold_claim(
            "fig3.guided_encoder_units_specific_ranges",
            "Encoder: some guided units take values only in a narrow range, unlike the baseline "
            "(share of units whose full range over the test set is < 0.5)",
            "some guided units",
            narrow["guided"],
            _mean(narrow["guided"]) - _mean(narrow["baseline"]),
            "guided - baseline share of narrow units",
            reproduced_at=0.05,
            partially_at=0.01,
        ),
        threshold_claim(
            "fig3.guided_decoder_units_cover_range",
            "Decoder: most guided units cover the whole value range",
            "most",
            [torch.tensor(r["ranges"]["decoder"]).median().item() for r in guided],
            float(torch.tensor(decoder_ranges).median()),
            "median full range of guided decoder units (tanh spans 2)",
            reproduced_at=1.0,
            partially_at=0.5,
        ),
    ]
    for module in ("encoder", "decoder"):
        left = pooled(baseline, "saturation", f"{module}.update_gate", "left")
        claims.append(
            threshold_claim(
                f"fig4.baseline_update_left_saturated.{module}",
                f"Baseline {module} update gates are mostly left-saturated (closed: new "
                "information rarely taken in)",
                "mostly left-saturated",
                [
                    torch.tensor(r["saturation"][f"{module}.update_gate"]["left"]).median().item()
                    for r in baseline
                ],
                float(torch.tensor(left).median()),
                "median over units of the fraction of steps below 0.1",
                reproduced_at=0.5,
                partially_at=0.3,
            )
        )
    guided_left = pooled(guided, "saturation", "encoder.update_gate", "left")
    claims.append(
        threshold_claim(
            "fig4.guided_encoder_update_left_saturated",
            "Guided encoder update gates are also mostly only left-saturated",
            "mostly left-saturated",
            [
                torch.tensor(r["saturation"]["encoder.update_gate"]["left"]).median().item()
                for r in guided
            ],
            float(torch.tensor(guided_left).median()),
            "median over units of the fraction of steps below 0.1",
            reproduced_at=0.5,
            partially_at=0.3,
        )
    )
    outliers = {
        v: _share(
            pooled(results[v], "saturation", "encoder.update_gate", "right"), lambda x: x >= 0.1
        )
        for v in results
    }
    claims.append(
        threshold_claim(
            "fig4.guided_encoder_update_outliers",
            "Guided encoder update gates have a considerable number of outliers off the "
            "left-saturation axis (units right-saturated at >= 10% of the steps), more than the "
            "baseline",
            "considerable outliers",
            [
                _share(r["saturation"]["encoder.update_gate"]["right"], lambda x: x >= 0.1)
                for r in guided
            ],
            outliers["guided"] - outliers["baseline"],
            "guided - baseline share of outlier units",
            reproduced_at=0.02,
            partially_at=0.005,
        )
    )
    right = {
        v: _mean(pooled(results[v], "saturation", "decoder.update_gate", "right")) for v in results
    }
    claims.append(
        threshold_claim(
            "fig4.guided_decoder_update_right_saturated",
            "Guided decoder update gates are right-saturated (open) more often than the baseline's",
            "more often right-saturated",
            [_mean(r["saturation"]["decoder.update_gate"]["right"]) for r in guided],
            right["guided"] - right["baseline"],
            "guided - baseline mean fraction of steps above 0.9",
            reproduced_at=0.05,
            partially_at=0.005,
        )
    )

    def between_axes(runs) -> float:
        counts = []
        for run in runs:
            for site in GATES:
                saturation = Saturation(
                    torch.tensor(run["saturation"][site]["left"]),
                    torch.tensor(run["saturation"][site]["right"]),
                )
                counts += saturation.off_axes(0.01).tolist()
        return _mean(counts)

    claims.append(
        threshold_claim(
            "fig4.baseline_gates_between_axes",
            "Guided gate activations 'stick to the axes'; baseline gates lie between them more "
            "often (saturated on both sides, each at >= 1% of the steps; all four gate sets)",
            "more in baseline",
            [between_axes([r]) for r in baseline],
            between_axes(baseline) - between_axes(guided),
            "baseline - guided share of gates between the axes",
            reproduced_at=0.05,
            partially_at=0.005,
        )
    )
    return claims


def probe_claims(results: dict[str, list[dict]], paper: dict) -> list[Claim]:
    """Tables 2-3: diagnostic-classifier accuracy with the functional group and with all units,
    and the group size; the patterns of section 4.1."""
    claims = []
    names = {"table2": "Table 2", "table3": "Table 3"}
    for name in PROBES:
        table, site = name.split(".", 1)
        target = "the current input table" if table == "table2" else "the encoder time step"
        for variant in ("baseline", "guided"):
            group, every, size = paper[table][site][variant]
            what = f"{names[table]}, {site} -> {target}, {variant}"
            claims += [
                compare_means(
                    f"{name}.{variant}.accuracy_group",
                    f"{what}: accuracy with the functional group",
                    [group],
                    _per_run(results[variant], "probes", name, "accuracy"),
                ),
                compare_means(
                    f"{name}.{variant}.accuracy_all",
                    f"{what}: accuracy with all units",
                    [every],
                    _per_run(results[variant], "probes", name, "accuracy_all"),
                ),
                ratio_claim(
                    f"{name}.{variant}.group_size",
                    f"{what}: units in the functional group",
                    size,
                    _per_run(results[variant], "probes", name, "size"),
                ),
            ]
        sizes = {v: _mean(_per_run(results[v], "probes", name, "size")) for v in results}
        paper_ratio = paper[table][site]["baseline"][2] / paper[table][site]["guided"][2]
        claims.append(
            threshold_claim(
                f"{name}.guided_group_smaller",
                f"{names[table]}, {site} -> {target}: guided functional groups are smaller than "
                "the baseline's (information more concentrated)",
                round(paper_ratio, 2),
                _per_run(results["guided"], "probes", name, "size"),
                sizes["baseline"] / sizes["guided"],
                "baseline / guided mean group size",
                reproduced_at=2.0,
                partially_at=1.2,
            )
        )
    guided = results["guided"]
    encoder_size = _mean(_per_run(guided, "probes", "table2.encoder.hidden", "size"))
    gate_sizes = [
        _mean(_per_run(guided, "probes", f"table2.decoder.{gate}", "size"))
        for gate in ("update_gate", "reset_gate")
    ]
    claims += [
        threshold_claim(
            "table2.guided_gate_groups_larger",
            "Guided: the functional groups in the decoder gates are remarkably larger than in "
            "the encoder hidden state (information more distributed over the gates)",
            round(
                _mean(
                    [
                        paper["table2"][f"decoder.{gate}"]["guided"][2]
                        for gate in ("update_gate", "reset_gate")
                    ]
                )
                / paper["table2"]["encoder.hidden"]["guided"][2],
                2,
            ),
            gate_sizes,
            _mean(gate_sizes) / encoder_size,
            "mean guided gate group size / guided encoder group size",
            reproduced_at=2.0,
            partially_at=1.2,
        ),
        compare_means(
            "sec4_1.group_units_in_top5pct",
            "Share of the guided encoder functional group's units that are among the 5% of "
            "units with the strongest absolute weights",
            [paper["group_in_top5_share"]],
            _per_run(guided, "probes", "table2.encoder.hidden", "in_top5"),
        ),
        compare_means(
            "sec4_1.majority_baseline",
            "Accuracy of a majority classifier for the current table (held-out samples)",
            [paper["majority_accuracy"]],
            _per_run(guided, "probes", "table2.encoder.hidden", "majority"),
        ),
    ]
    return claims


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
            ours_group = _mean(_per_run(runs, "probes", name, "accuracy"))
            ours_all = _mean(_per_run(runs, "probes", name, "accuracy_all"))
            sizes = _per_run(runs, "probes", name, "size")
            lines.append(
                f"| {table[-1]} | `{site}` | {variant} | {group:.2f} ({every:.2f}) | "
                f"{ours_group:.2f} ({ours_all:.2f}) | {size} | {_mean(sizes):.1f} "
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
                k: _mean(_per_run(runs, "connectivity", matrix, k))
                for k in ("edge_share", "connected", "hub_share", "polar")
            }
            correlation = _mean(_per_run(runs, "polarity_correlation", module))
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
            v: _mean([x for r in results[v] for x in r["saturation"]["decoder.update_gate"][side]])
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
            r = _mean(_per_run(results[variant], "polarity_correlation", module))
            rows.append((f"{variant} {module}: r(update, reset) of mean weights", r, -r))
    lines = ["| statistic | paper's convention (verdicts) | torch's convention |", "|---|---|---|"]
    lines += [f"| {name} | {a:+.3f} | {b:+.3f} |" for name, a, b in rows]
    return "\n".join(lines)
