"""Paper 1's claims of sections 3-4 (Figures 1-4, Tables 2-3), each with its written rule, from
the per-run analyses of `experiments.paper1.analyses`."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import torch  # noqa: E402

from experiments.paper1.analyses import GATES, MATRICES, PROBES, THRESHOLDS, mean_of, per_run
from experiments.paper1.scales import PAPER
from experiments.report import (
    CLOSE,
    Claim,
    Measured,
    cannot_fail,
    compare_means,
    direction_claim,  # noqa: E402
    graded,
    graded_distance,
    margins,
    ratio_claim,
    threshold_claim,
)
from probes.activations import Saturation


def _share(values: Sequence[float], predicate) -> float:
    return sum(1 for v in values if predicate(v)) / len(values)


def _ratio(top: float, bottom: float) -> float:
    return top / max(bottom, 1e-9)


def per_seed(first: Sequence[float], second: Sequence[float], compare) -> list[float]:
    """A comparison's measured values: `compare(first[i], second[i])` of the two variants' runs
    paired by seed (a seed's baseline and guided model start from the same weights), so the
    measured column shows what the rule compares, where its statistic compares the groups'
    means. Groups of different sizes (a seed split's 2 and 3, whose statistic alone is read)
    pair the shorter group's runs."""
    return [compare(a, b) for a, b in zip(first, second, strict=False)]


def weight_claims(results: dict[str, list[dict]]) -> list[Claim]:
    """Sections 3.1-3.2: the decoder embedding (Figure 1) and the connectivity graphs (Figure 2)."""
    baseline, guided = results["baseline"], results["guided"]
    strings = mean_of(per_run(guided, "embedding_strings")) / mean_of(
        per_run(baseline, "embedding_strings")
    )
    sos = mean_of(per_run(guided, "embedding_sos")) / mean_of(per_run(baseline, "embedding_sos"))

    def equal(top: float, bottom: float) -> float:
        return min(_ratio(top, bottom), _ratio(bottom, top))

    claims = [
        threshold_claim(
            "fig1.guided_embedding_stronger",
            "Decoder embedding: the guided model has bigger weights than the baseline in the rows "
            "of the output strings (mean |w|, guided / baseline)",
            "bigger in rows 2-10",
            per_seed(
                per_run(guided, "embedding_strings"), per_run(baseline, "embedding_strings"), _ratio
            ),
            strings,
            "guided / baseline mean |w| over the 8 string rows",
            reproduced_at=1.5,
            partially_at=1.1,
        ),
        threshold_claim(
            "fig1.sos_row_equal",
            "Decoder embedding: the <sos> row is equally strong in both models",
            "equal",
            per_seed(per_run(guided, "embedding_sos"), per_run(baseline, "embedding_sos"), equal),
            min(sos, 1 / sos),
            "min(ratio, 1/ratio) of guided and baseline mean |w| of the <sos> row",
            reproduced_at=0.8,
            partially_at=0.67,
        ),
    ]
    return claims + connectivity_claims(results) + polarity_claims(results)


def mean_ratio_claim(
    claim_id: str,
    text: str,
    paper: str,
    results: dict[str, list[dict]],
    matrix: str,
    measure: str,
    ratio: tuple[str, str],
    measured: str,
) -> Claim:
    """A claim that one model type's mean connectivity `measure` of `matrix` exceeds the other's:
    `ratio` = (numerator, denominator) types, reproduced from a ratio of 1.2, partially from 1.0,
    shown per seed (`per_seed`); `measured` names the measure in the claim's reading."""
    values = {v: per_run(results[v], "connectivity", matrix, measure) for v in results}
    top, bottom = ratio
    return threshold_claim(
        claim_id,
        text,
        paper,
        per_seed(values[top], values[bottom], _ratio),
        _ratio(mean_of(values[top]), mean_of(values[bottom])),
        f"{top} / {bottom} mean {measured}",
        reproduced_at=1.2,
        partially_at=1.0,
    )


def connectivity_claims(results: dict[str, list[dict]]) -> list[Claim]:
    """Section 3.2 (Figure 2): thresholds, connected, hub and polar neurons."""
    baseline, guided = results["baseline"], results["guided"]
    claims = []
    for module, matrix in (("encoder", "encoder W_hz"), ("decoder", "decoder W_iz")):
        shares = per_run(baseline + guided, "connectivity", matrix, "edge_share")
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
        claims += [
            mean_ratio_claim(
                f"fig2.fewer_connected_neurons.{matrix.replace(' ', '_')}",
                f"{matrix}: guided models have fewer neurons with strong connections in the "
                f"{layer} layer than the baseline (baseline is 'more cluttered')",
                "fewer in guided",
                results, matrix, "connected", ("baseline", "guided"), "number of connected neurons",
            ),
            mean_ratio_claim(
                f"fig2.hub_neurons.{matrix.replace(' ', '_')}",
                f"{matrix}: strong connections are concentrated on a few neurons of the {layer} "
                "layer in guided models (share of strong edges on the best-connected 5% of "
                "neurons)",
                "a few strongly connected neurons",
                results, matrix, "hub_share", ("guided", "baseline"), "hub share",
            ),
        ]  # fmt: skip
    for matrix in ("encoder W_hz", "decoder W_iz"):
        claims.append(
            polar_neurons_claim(
                f"fig2.polar_neurons.{matrix.replace(' ', '_')}",
                f"{matrix}: guided models show more strongly polar neurons (>= 3 strong edges, "
                ">= 90% of one sign) than the baseline",
                {v: per_run(results[v], "connectivity", matrix, "polar") for v in results},
            )
        )
    return claims


def polar_neurons_claim(id: str, text: str, counts: dict[str, list[float]]) -> Claim:
    """Figure 2's "a few distinct, strongly polar neurons" in guided models: from the counts of
    polar neurons per run by variant, guided - baseline mean count, reproduced from 1, partially
    from 0.2, shown per seed (`per_seed`)."""
    return guided_above_baseline_claim(
        id, text, "a few distinct, strongly polar neurons in guided", counts,
        "guided - baseline mean count of polar neurons", reproduced_at=1.0, partially_at=0.2,
    )  # fmt: skip


def guided_above_baseline_claim(
    id: str,
    text: str,
    paper: str,
    by_variant: dict[str, list[float]],
    difference: str,
    reproduced_at: float,
    partially_at: float,
) -> Claim:
    """A claim that guided models show more of a per-run value than the baseline: from the values
    by variant, the guided - baseline difference of the means (`difference` names it in the rule)
    against `threshold_claim`'s thresholds, shown per seed (`per_seed`)."""
    return threshold_claim(
        id,
        text,
        paper,
        per_seed(by_variant["guided"], by_variant["baseline"], operator.sub),
        mean_of(by_variant["guided"]) - mean_of(by_variant["baseline"]),
        difference,
        reproduced_at=reproduced_at,
        partially_at=partially_at,
    )


def polarity_claims(results: dict[str, list[dict]]) -> list[Claim]:
    """Section 3.2: update- and reset-gate polarities are inversely related, judged by
    `sign_in_every_run`."""
    claims = []
    for variant, runs in results.items():
        for module, what in (
            ("encoder", "rows of W_hz, W_hr"),
            ("decoder", "columns of W_iz, W_ir"),
        ):
            claims.append(
                sign_in_every_run(
                    f"sec3_2.inverse_gate_polarity.{variant}.{module}",
                    f"{variant} {module}: the polarities of update and reset gates are inversely "
                    f"related (Pearson r over neurons of the mean weight, {what}; torch's z)",
                    per_run(runs, "polarity_correlation", module),
                )
            )
    return claims


def sign_in_every_run(id: str, claim: str, correlations: Sequence[float], r: str = "r") -> Claim:
    """The paper's sign, validated on every run ("comparing 5 runs", section 3), and no size it
    does not state: reproduced when r < 0 in every run; partially when the mean r < 0 and r < 0 in
    more than half the runs (3 of 5); else not reproduced. `r` names the per-run value in the
    rule's text."""
    negative = sum(value < 0 for value in correlations)
    runs, mean = len(correlations), mean_of(correlations)
    verdict = graded(negative == runs, mean < 0 and 2 * negative > runs)
    rule = (
        f"runs with {r} < 0: {negative} of {runs}; mean {r} = {mean:.3f}; reproduced if {r} < 0 "
        f"in every run, partially if the mean {r} < 0 and {r} < 0 in more than half the runs (3 "
        "of 5)"
    )
    return Claim(id, claim, f"inverse ({r} < 0)", Measured.of(correlations), rule, verdict)


def at_least_claim(
    id: str, claim: str, paper: float, values: Sequence[float], decimals: int = 2
) -> Claim:
    """A value the paper states where more only strengthens its conclusion (an accuracy, a share
    of units), against the paper's printed value on one side: with SE = std/sqrt(n) over the
    runs, reproduced when the mean is at least the paper's value - (2 SE + half a unit of its
    last decimal), partially when at least the paper's value - (4 SE + `CLOSE`), else not
    reproduced. A mean above the paper's is no miss."""
    measured = Measured.of(values)
    standard_error = measured.std / math.sqrt(measured.n)
    allowance, reproduced_within, partially_within = margins(standard_error, decimals)
    shortfall = paper - measured.mean
    verdict = graded_distance(shortfall, reproduced_within, partially_within)
    rule = (
        f"paper's printed value - measured mean = {shortfall:.{decimals + 1}f} (one-sided: a mean "
        f"above the paper's is no miss); reproduced if <= 2 SE + {allowance:g} (half a unit of "
        f"the paper's last decimal) = {reproduced_within:.{decimals + 1}f}, partially if <= 4 SE "
        f"+ {CLOSE} = {partially_within:.{decimals + 1}f} (SE = std/sqrt(n) over the runs)"
    )
    return Claim(id, claim, round(paper, 4), measured, rule, verdict)


def _pooled(runs: list[dict], *keys) -> list[float]:
    """Every run's list at `run[keys[0]][keys[1]]...`, concatenated."""
    values = []
    for run in runs:
        for key in keys:
            run = run[key]
        values += run
    return values


def activation_claims(results: dict[str, list[dict]]) -> list[Claim]:
    """Section 4.1 (Figure 3) and 4.2 (Figure 4)."""
    return range_claims(results) + saturation_claims(results) + outlier_claims(results)


WHOLE_RANGE = 1.8
"""A unit's range over the test set that counts as tanh's whole range (-1, 1): 90% of it."""


def range_claims(results: dict[str, list[dict]]) -> list[Claim]:
    """Section 4.1 (Figure 3): the ranges of encoder and decoder units."""
    guided = results["guided"]
    narrow = {
        v: [_share(r["ranges"]["encoder"], lambda x: x < 0.5) for r in results[v]] for v in results
    }
    decoder_ranges = _pooled(guided, "ranges", "decoder")
    return [
        guided_above_baseline_claim(
            "fig3.guided_encoder_units_specific_ranges",
            "Encoder: some guided units take values only in a narrow range, unlike the baseline "
            "(share of units whose full range over the test set is < 0.5)",
            "some guided units",
            narrow,
            "guided - baseline share of narrow units",
            reproduced_at=0.05,
            partially_at=0.01,
        ),
        direction_claim(
            "fig3.guided_decoder_units_cover_range",
            "Decoder: most guided units cover the whole value range (a unit covers it when its "
            f"range over the test set is at least {WHOLE_RANGE} of tanh's 2)",
            "most",
            [_share(r["ranges"]["decoder"], lambda x: x >= WHOLE_RANGE) for r in guided],
            _share(decoder_ranges, lambda x: x >= WHOLE_RANGE) - 0.5,
            "share of the guided decoder units (pooled over runs) covering the whole range - 0.5 "
            "(most: more than half; earlier, the median range had to reach 1.0, half of "
            "tanh's span)",
            reproduced_at=1e-9,
            partially_at=1e-9,
        ),
    ]


def saturation_claims(results: dict[str, list[dict]]) -> list[Claim]:
    """Section 4.2 (Figure 4): which way the update gates saturate."""
    baseline, guided = results["baseline"], results["guided"]
    claims = []
    for module in ("encoder", "decoder"):
        left = _pooled(baseline, "saturation", f"{module}.update_gate", "left")
        claims.append(
            threshold_claim(
                f"fig4.baseline_update_left_saturated.{module}",
                f"Baseline {module} update gates are mostly left-saturated (z < 0.1)",
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
    guided_left = _pooled(guided, "saturation", "encoder.update_gate", "left")
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
    return claims


def outlier_claims(results: dict[str, list[dict]]) -> list[Claim]:
    """Section 4.2 (Figure 4): outliers off the axes and gates between them."""
    baseline, guided = results["baseline"], results["guided"]
    claims = []

    def outlier_share(runs: list[dict]) -> float:  # units right-saturated at >= 10% of the steps
        return _share(
            _pooled(runs, "saturation", "encoder.update_gate", "right"), lambda x: x >= 0.1
        )

    outliers = {v: outlier_share(results[v]) for v in results}
    outliers_per_run = {v: [outlier_share([r]) for r in results[v]] for v in results}
    claims.append(
        threshold_claim(
            "fig4.guided_encoder_update_outliers",
            "Guided encoder update gates have a considerable number of outliers off the "
            "left-saturation axis (units right-saturated at >= 10% of the steps), more than the "
            "baseline",
            "considerable outliers",
            per_seed(outliers_per_run["guided"], outliers_per_run["baseline"], operator.sub),
            outliers["guided"] - outliers["baseline"],
            "guided - baseline share of outlier units",
            reproduced_at=0.02,
            partially_at=0.005,
        )
    )
    right = {
        v: mean_of(_pooled(results[v], "saturation", "decoder.update_gate", "right"))
        for v in results
    }
    claims.append(
        threshold_claim(
            "fig4.guided_decoder_update_right_saturated",
            "Guided decoder update gates are right-saturated (open) more often than the baseline's",
            "more often right-saturated",
            per_seed(
                *(
                    [mean_of(r["saturation"]["decoder.update_gate"]["right"]) for r in runs]
                    for runs in (guided, baseline)
                ),
                operator.sub,
            ),
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
        return mean_of(counts)

    claims.append(
        threshold_claim(
            "fig4.baseline_gates_between_axes",
            "Guided gate activations 'stick to the axes'; baseline gates lie between them more "
            "often (saturated on both sides, each at >= 1% of the steps; all four gate sets)",
            "more in baseline",
            per_seed(
                [between_axes([r]) for r in baseline],
                [between_axes([r]) for r in guided],
                operator.sub,
            ),
            between_axes(baseline) - between_axes(guided),
            "baseline - guided share of gates between the axes",
            reproduced_at=0.05,
            partially_at=0.005,
        )
    )
    return claims


def probe_claims(results: dict[str, list[dict]], paper: dict, key: str = "probes") -> list[Claim]:
    """Tables 2-3: diagnostic-classifier accuracy with the functional group and with all units,
    and the group size; the patterns of section 4.1. `key`: the reading
    (`paper1_analyses.READINGS`) the results are taken from."""
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
                    per_run(results[variant], key, name, "accuracy"),
                ),
                (at_least_claim if name == "table3.encoder.hidden" else accuracy_claim)(
                    f"{name}.{variant}.accuracy_all",
                    f"{what}: accuracy with all units",
                    every,
                    per_run(results[variant], key, name, "accuracy_all"),
                ),
                ratio_claim(
                    f"{name}.{variant}.group_size",
                    f"{what}: units in the functional group",
                    size,
                    per_run(results[variant], key, name, "size"),
                ),
            ]
        sizes = {v: mean_of(per_run(results[v], key, name, "size")) for v in results}
        paper_ratio = paper[table][site]["baseline"][2] / paper[table][site]["guided"][2]
        claims.append(
            threshold_claim(
                f"{name}.guided_group_smaller",
                f"{names[table]}, {site} -> {target}: guided functional groups are smaller than "
                "the baseline's (information more concentrated)",
                round(paper_ratio, 2),
                per_seed(
                    per_run(results["baseline"], key, name, "size"),
                    per_run(results["guided"], key, name, "size"),
                    _ratio,
                ),
                sizes["baseline"] / sizes["guided"],
                "baseline / guided mean group size",
                reproduced_at=2.0,
                partially_at=1.2,
            )
        )
    return claims + probe_pattern_claims(results, paper, key)


def probe_pattern_claims(results: dict[str, list[dict]], paper: dict, key: str) -> list[Claim]:
    """Section 4.1's patterns of the guided groups: larger in the gates, among the strongest units;
    and the majority baseline."""
    guided = results["guided"]
    encoder_size = mean_of(per_run(guided, key, "table2.encoder.hidden", "size"))
    gate_sizes = [
        mean_of(per_run(guided, key, f"table2.decoder.{gate}", "size"))
        for gate in ("update_gate", "reset_gate")
    ]
    return [
        threshold_claim(
            "table2.guided_gate_groups_larger",
            "Guided: the functional groups in the decoder gates are remarkably larger than in "
            "the encoder hidden state (information more distributed over the gates)",
            round(
                mean_of(
                    [
                        paper["table2"][f"decoder.{gate}"]["guided"][2]
                        for gate in ("update_gate", "reset_gate")
                    ]
                )
                / paper["table2"]["encoder.hidden"]["guided"][2],
                2,
            ),
            gate_sizes,
            mean_of(gate_sizes) / encoder_size,
            "mean guided gate group size / guided encoder group size",
            reproduced_at=2.0,
            partially_at=1.2,
        ),
        at_least_claim(
            "sec4_1.group_units_in_top5pct",
            "Share of the guided encoder functional group's units that are among the 5% of "
            "units with the strongest absolute weights (a larger share only strengthens the "
            "paper's conclusion)",
            paper["group_in_top5_share"],
            per_run(guided, key, "table2.encoder.hidden", "in_top5"),
        ),
        cannot_fail(
            compare_means(
                "sec4_1.majority_baseline",
                "Accuracy of a majority classifier for the current table (all labels)",
                [paper["majority_accuracy"]],
                per_run(guided, key, "table2.encoder.hidden", "majority"),
                decimals=3,
            ),
            "the eight tables are equally frequent labels, so a majority classifier scores 1/8 "
            "on any model, trained or not: the paper's chance level, not a finding",
        ),
    ]


def accuracy_claim(id: str, claim: str, paper: float, values: Sequence[float]) -> Claim:
    """A diagnostic classifier's accuracy against the paper's (`compare_means`)."""
    return compare_means(id, claim, [paper], values)


def primary_claims(results: dict[str, list[dict]]) -> list[Claim]:
    """Sections 3-4's claims under the report's primary reading (torch's update gate, the
    co-authors' functional groups) from analyses by variant (`baseline`, `guided`)."""
    return weight_claims(results) + activation_claims(results) + probe_claims(results, PAPER)
