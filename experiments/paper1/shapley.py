"""Paper 1's footnote 5: functional groups whose units are ranked by Shapley values.

"Applying the methods develop[ed] by Lundberg and Lee (2017) seems to confirm the responsible
neurons we found, but selects more neurons and gives less consistent results, which we trace back
to the extensive approximations required and some model assumptions (e.g. feature independence)
being violated." The footnote names no method, data or settings. The "extensive approximations"
and the feature-independence assumption are Kernel SHAP's (a model-agnostic regression over
sampled coalitions, a left-out unit set to a baseline value regardless of the others), so this
reproduction runs captum's `KernelShap` on each diagnostic classifier of Tables 2-3 whose
functional group the suite computes, by the co-authors' procedure (the verdicts' reading,
`probes.diagnostic.ablation_functional_group`): the units ranked by mean |SHAP value| instead of
|coefficient|, the group grown the same way from the same all-unit classifier and splits
(`probes.diagnostic.shap_order`). Our choices, not the paper's: the classifier's predicted
probability of each row's own label is explained; the baseline is each unit's mean activation
over all samples; `SHAP_ROWS` rows, as many of each label; as many coalitions per row as the
reference implementation's default (`shap`'s `KernelExplainer`, `nsamples="auto"`: 2 x units +
2048), or the scale's; two sample seeds for the trained models, one for the untrained ones.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from datamodules.machine_tasks import SPLITS
from experiments.paper1.analyses import ensure_traces, mean_of, probes_of
from experiments.report import Claim, direction_claim, threshold_claim
from probes.command.base import joined_trace
from probes.diagnostic import ablation_functional_groups, shap_order
from probes.traces import site_samples
from probes.weights import recurrent_cell
from storage.run_folder import RunFolder

SHAP_ROWS = 16
"""Rows explained per classifier (`probes.diagnostic.shap_order`: as many of each label), each one
Kernel SHAP regression: what keeps 20 models x 4-5 classifiers within the 2-core budget."""
SAMPLE_SEEDS = (0, 1)
"""Kernel SHAP's coalition samples of the trained models; the untrained ones: the first only."""
CLAIMS = ("footnote5.shap_confirms_units", "footnote5.shap_selects_more",
          "footnote5.shap_less_consistent")  # fmt: skip
CONFIRMS_AT, CONFIRMS_PARTIALLY_AT = 0.8, 0.5
MORE_AT = 0.2
LESS_CONSISTENT_AT = 0.1


def reference_samples(units: int) -> int:
    """`shap`'s `KernelExplainer` default number of coalitions (`nsamples="auto"`) for `units`."""
    return 2 * units + 2048


def footnote5_of(
    run: RunFolder, tag: str, rows: int = SHAP_ROWS, samples: int | None = None,
    seeds: Sequence[int] = SAMPLE_SEEDS, splits: int = 5,
) -> dict:  # fmt: skip
    """Footnote 5's SHAP-ranked functional group of every diagnostic classifier of the run's
    checkpoint or snapshot `tag` (the co-authors' procedure on every split's activations, as
    `analyse_run`'s `probes`, over `splits` random splits), once per sample seed of `seeds`: the
    first seed's units, size and accuracies, every seed's units, and the process time it took.
    `samples`: coalitions per row (None: `reference_samples`)."""
    ensure_traces(run, tag)
    every_split = joined_trace(run, SPLITS, tag)
    cell = recurrent_cell(run.state_dict(tag), "encoder")
    groups = {}
    for name, (site, label, align) in probes_of(cell).items():
        features, labels = site_samples(every_split, site, label, align)
        coalitions = samples or reference_samples(features.shape[1])
        began = time.process_time()
        found = ablation_functional_groups(
            features, labels,
            [shap_order(features, labels, rows, coalitions, seed) for seed in seeds], splits,
        )  # fmt: skip
        groups[name] = {
            "units": found[0].units.tolist(),
            "size": found[0].size,
            "accuracy": found[0].accuracy,
            "accuracy_all": found[0].accuracy_all,
            "units_by_seed": [group.units.tolist() for group in found],
            "cpu_seconds": time.process_time() - began,
        }
    return {"rows": rows, "samples": samples or "reference", "seeds": list(seeds),
            "groups": groups}  # fmt: skip


def _cells(analysed: dict[str, list[dict]], shap: dict[str, list[dict]]):
    """Per (variant, classifier): the weight groups' and the SHAP groups' units of every run."""
    for variant, runs in shap.items():
        for name in runs[0]["groups"]:
            weight = [set(a["probes"][name]["units"]) for a in analysed[variant]]
            shapley = [set(r["groups"][name]["units"]) for r in runs]
            yield variant, name, weight, shapley


def _variation(sizes: list[int]) -> float:
    """Coefficient of variation (sample std / mean) of group sizes."""
    mean = mean_of(sizes)
    return math.sqrt(sum((s - mean) ** 2 for s in sizes) / (len(sizes) - 1)) / mean


def jaccard(first: set, second: set) -> float:
    return len(first & second) / len(first | second)


def sample_agreement(shap: dict[str, list[dict]]) -> float | None:
    """Mean Jaccard index of the SHAP groups of the first two sample seeds, over every run and
    classifier (None with one seed)."""
    pairs = [r["groups"][name]["units_by_seed"][:2] for runs in shap.values() for r in runs
             for name in r["groups"]]  # fmt: skip
    if any(len(pair) < 2 for pair in pairs):
        return None
    return mean_of([jaccard(set(a), set(b)) for a, b in pairs])


def footnote5_claims(analysed: dict[str, list[dict]], shap: dict[str, list[dict]]) -> list[Claim]:
    """Footnote 5's three findings, pooled over both model types and every classifier: the SHAP
    groups hold the weight groups' units, are larger, and vary more over the seeds."""
    cells = list(_cells(analysed, shap))
    overlap: dict[tuple[str, int], list[float]] = {}  # by run: one share per classifier
    for variant, _, weight, shapley in cells:
        for index, (w, s) in enumerate(zip(weight, shapley, strict=True)):
            overlap.setdefault((variant, index), []).append(len(w & s) / len(w))
    per_run = [mean_of(shares) for shares in overlap.values()]
    more = [mean_of([len(s) for s in shapley]) / mean_of([len(w) for w in weight]) - 1
            for _, _, weight, shapley in cells]  # fmt: skip
    less = [_variation([len(s) for s in shapley]) - _variation([len(w) for w in weight])
            for _, _, weight, shapley in cells]  # fmt: skip
    agreement = sample_agreement(shap)
    seeds = ("not measured (one sample seed)" if agreement is None else
             f"{agreement:.3f}, the weight groups' 1 by construction")  # fmt: skip
    where = f"{len(cells)} (model type, classifier) cells, the co-authors' procedure"
    return [
        threshold_claim(
            CLAIMS[0],
            "Footnote 5: Shapley values (Kernel SHAP) confirm the responsible neurons: the SHAP "
            "functional group holds the units of the weight-ranked one",
            "seems to confirm the responsible neurons",
            per_run,
            mean_of(per_run),
            f"share of the weight group's units in the SHAP group, mean over runs and the {where}",
            reproduced_at=CONFIRMS_AT,
            partially_at=CONFIRMS_PARTIALLY_AT,
        ),
        direction_claim(
            CLAIMS[1],
            "Footnote 5: the SHAP ranking selects more neurons than the weight ranking (larger "
            "functional groups)",
            "selects more neurons",
            more,
            mean_of(more),
            f"mean SHAP group size / mean weight group size - 1, averaged over the {where}",
            reproduced_at=MORE_AT,
            partially_at=1e-9,
        ),
        direction_claim(
            CLAIMS[2],
            "Footnote 5: the SHAP groups are less consistent than the weight-ranked ones (their "
            "size varies more over the five seeds)",
            "less consistent results",
            less,
            mean_of(less),
            "coefficient of variation of the SHAP group sizes over the seeds - that of the weight "
            f"groups, averaged over the {where} (not in the rule: the mean Jaccard index of the "
            f"SHAP groups of two sample seeds is {seeds})",
            reproduced_at=LESS_CONSISTENT_AT,
            partially_at=1e-9,
        ),
    ]


def footnote5_table(analysed: dict[str, list[dict]], shap: dict[str, list[dict]]) -> str:
    """Per model type and classifier: weight vs SHAP group sizes (per run), the weight group's
    units found in the SHAP group, the sizes' coefficient of variation, the sample seeds'
    agreement and the process time."""
    lines = ["| classifier | model | #units weight (per run) | #units SHAP (per run) | weight "
             "units in SHAP group | CV weight | CV SHAP | Jaccard of 2 sample seeds | CPU s |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for variant, name, weight, shapley in _cells(analysed, shap):
        runs = shap[variant]
        pairs = [r["groups"][name]["units_by_seed"] for r in runs]
        together = ("-" if any(len(p) < 2 for p in pairs) else
                    f"{mean_of([jaccard(set(p[0]), set(p[1])) for p in pairs]):.2f}")  # fmt: skip
        overlap = mean_of([len(w & s) / len(w) for w, s in zip(weight, shapley, strict=True)])
        seconds = mean_of([r["groups"][name]["cpu_seconds"] for r in runs])
        lines.append(
            f"| `{name}` | {variant} | {_sizes(weight)} | {_sizes(shapley)} | {overlap:.2f} | "
            f"{_variation([len(w) for w in weight]):.2f} | "
            f"{_variation([len(s) for s in shapley]):.2f} | {together} | {seconds:.0f} |"
        )
    return "\n".join(lines)


def _sizes(groups: list[set]) -> str:
    sizes = [len(g) for g in groups]
    return f"{mean_of(sizes):.1f} ({', '.join(map(str, sizes))})"


ADD_COMMAND = ("python -m experiments.paper1 --scale default --runs <run root> --reuse-runs "
               "--add-measurements footnote1 footnote5")  # fmt: skip
"""How kept runs get the measurements of `scales.OPTIONAL`."""


def not_measured(field: str, claims: str) -> str:
    """The report's line for claims whose measurements the runs lack."""
    return (
        f"**Not measured:** the runs' measurements hold no {field} (they were taken before it "
        f"existed), so {claims} are not judged and not counted. `{ADD_COMMAND}` adds it to the "
        "kept runs (from their folders, or by training a run again where its folder is gone: the "
        "seed fixes it, and its test accuracies must come out as kept)."
    )


def footnote5_text(analysed: dict[str, list[dict]], shap: dict[str, list[dict]] | None) -> str:
    """Footnote 5's section of the report: the procedure, its sources and the table, or which
    claims are not measured."""
    heading = "## Footnote 5: functional groups ranked by Shapley values\n\n"
    if shap is None:
        return heading + not_measured("`footnote5`", ", ".join(f"`{c}`" for c in CLAIMS)) + "\n\n"
    first = next(iter(shap.values()))[0]
    samples = first["samples"]
    reference = "2 x units + 2048 (3072 for 512 units), `shap`'s `KernelExplainer` default"
    samples = f"{reference} (`nsamples='auto'`)" if samples == "reference" else f"{samples}"
    return f"""{heading}"Applying the methods develop[ed] by Lundberg and Lee (2017) seems to
confirm the responsible neurons we found, but selects more neurons and gives less consistent
results, which we trace back to the extensive approximations required and some model assumptions
(e.g. feature independence) being violated."

- **From the text:** Lundberg and Lee's Shapley values over the units of the diagnostic
  classifiers, compared with the functional groups; "extensive approximations" and "feature
  independence" point to Kernel SHAP, which samples coalitions of units and fits a weighted
  linear regression, a unit left out of a coalition set to a baseline value independently of
  the others. The group is built by the paper's procedure: units added in order until 95% of the
  all-unit accuracy (the co-authors' code, the verdicts' reading: the same all-unit classifier,
  splits and growth as the weight-ranked group, ranked by mean |SHAP value| instead of the
  first class's |mean coefficient|).
- **Our choices** (the footnote gives none): captum's `KernelShap` on the classifier's predicted
  probability of each row's own label; baseline: each unit's mean activation over all samples;
  {first["rows"]} rows per classifier (as many of each label); coalitions per row: {samples};
  sample seeds {first["seeds"]} for the trained models (the first decides, the second measures
  agreement), the first alone for the untrained ones. For a linear score with independent inputs
  exact SHAP is w_i (x_i - E x_i); `tests/test_shapley.py` checks captum's call against it.
- **Measured:** the weight group's units found in the SHAP group ("confirms the responsible
  neurons"), the groups' sizes ("selects more"), and consistency: the coefficient of variation
  of the group sizes over the five seeds (the rule) and the Jaccard index of the SHAP groups from
  two sample seeds (the weight groups are deterministic: 1 by construction).

{footnote5_table(analysed, shap)}

"""
