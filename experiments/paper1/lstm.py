"""Paper 1's footnote 1 beyond Tables 5-6: sections 3-4's analyses and footnote 5 on the LSTMs.

"We also trained models with Long-Short Term Memory units ... but found the results to be very
similar." The LSTMs (`FOOTNOTE1`) are analysed as the GRUs (`analyses.analyse_run`: embeddings,
connectivity and the strongest 5% of units, activation ranges, diagnostic classifiers and
functional groups on the encoder hidden states and every decoder gate, gate saturation of every
gate), trained and untrained, and every GRU claim of sections 3-4 and footnote 5 is judged on
them by the same rule, the forget gate read as the update gate and the output gate as the reset
gate (`analyses.GRU_ROLES`, which says why). The `footnote1.*` claims here say how many of the
GRUs' verdicts the LSTMs repeat. Section 5's ablations (substitution, pruning) are not run on the
LSTMs: they are retrains of their own (Table 4's components name GRU weights), not analyses.
"""

from __future__ import annotations

import torch

from experiments.paper1.analyses import CELL_GATES, MODULES, gru_named, mean_of, probes_of
from experiments.paper1.claims import primary_claims
from experiments.paper1.registered import judged_against_nulls
from experiments.paper1.scales import FOOTNOTE1
from experiments.paper1.shapley import footnote5_claims, not_measured
from experiments.report import Claim, threshold_claim

SAME_AT, SAME_PARTIALLY_AT = 0.8, 0.6
HOLD_AT, HOLD_PARTIALLY_AT = 0.8, 0.5


def as_gru_variants(by_variant: dict[str, list]) -> dict[str, list]:
    """The LSTM variants' records under the GRU variants' names (`FOOTNOTE1`), as the claims
    read them."""
    return {FOOTNOTE1[variant]: records for variant, records in by_variant.items()}


def lstm_claims(
    analysed: dict[str, list[dict]],
    untrained: dict[str, list[dict]],
    shap: dict | None = None,
    untrained_shap: dict | None = None,
) -> list[Claim]:
    """The GRU claims of sections 3-4 (torch's update gate, the co-authors' functional groups:
    the verdicts' readings) and, where measured, footnote 5's, judged on the LSTMs (`analysed`,
    by LSTM variant) beside the same on the untrained LSTMs, the guided-against-baseline
    comparisons beside the seed split of the LSTMs (`registered.judged_against_nulls`)."""

    def results_of(records: dict[str, list[dict]]) -> dict[str, list[dict]]:
        return as_gru_variants({v: [gru_named(r) for r in rs] for v, rs in records.items()})

    def claims(records: dict[str, list[dict]], groups: dict | None) -> list[Claim]:
        found = primary_claims(results_of(records))
        if groups is not None:
            found += footnote5_claims(as_gru_variants(records), as_gru_variants(groups))
        return found

    return judged_against_nulls(claims(analysed, shap), claims(untrained, untrained_shap),
                                results_of(analysed), primary_claims)  # fmt: skip


def footnote1_analysis_claims(gru: list[Claim], lstm: list[Claim]) -> list[Claim]:
    """Footnote 1's "very similar results" on the analyses: how many of the GRU claims (`gru`,
    final verdicts) keep their verdict on the LSTMs (`lstm`, by id; each judged beside its
    untrained LSTMs, so an LSTM claim the untrained LSTMs pass is uninformative, not
    reproduced)."""
    lstm_by_id = {claim.id: claim for claim in lstm}
    pairs = [(claim, lstm_by_id[claim.id]) for claim in gru if claim.id in lstm_by_id]
    same = [float(g.verdict == s.verdict) for g, s in pairs]
    held = [float(s.verdict == "reproduced") for g, s in pairs if g.verdict == "reproduced"]
    return [
        threshold_claim(
            "footnote1.analyses_same_verdict",
            "Footnote 1: the LSTMs give very similar results to the GRUs in the analyses of "
            "sections 3-4 and footnote 5 (the same verdict, claim by claim)",
            "very similar",
            same,
            mean_of(same),
            f"share of the {len(pairs)} analysis claims whose verdict on the LSTMs is the GRUs' "
            "(forget gate read as update gate, output gate as reset gate)",
            reproduced_at=SAME_AT,
            partially_at=SAME_PARTIALLY_AT,
        ),
        threshold_claim(
            "footnote1.findings_hold_on_lstms",
            "Footnote 1: the findings reproduced on the GRUs hold on the LSTMs",
            "very similar",
            held,
            mean_of(held) if held else 0.0,
            f"share of the {len(held)} analysis claims reproduced on the GRUs that the LSTMs "
            "reproduce too (uninformative on the LSTMs, passed by their untrained weights, does "
            "not count)",
            reproduced_at=HOLD_AT,
            partially_at=HOLD_PARTIALLY_AT,
        ),
    ]


def verdicts_table(gru: list[Claim], lstm: list[Claim]) -> str:
    """Every analysis claim's verdict on the GRUs beside the LSTMs' and the untrained LSTMs'."""
    lstm_by_id = {claim.id: claim for claim in lstm}
    lines = ["| claim | GRUs | LSTMs | untrained LSTMs | same |", "|---|---|---|---|---|"]
    for claim in gru:
        if claim.id in lstm_by_id:
            other = lstm_by_id[claim.id]
            lines.append(f"| `{claim.id}` | {claim.verdict} | {other.verdict} | {other.null} | "
                         f"{'yes' if other.verdict == claim.verdict else '**no**'} |")  # fmt: skip
    return "\n".join(lines)


def gates_table(analysed: dict[str, list[dict]]) -> str:
    """Every LSTM gate (`CELL_GATES`), by variant: the median over units of the fraction of
    steps left- (< 0.1) and right-saturated (> 0.9), and for the decoder gates the co-authors'
    functional group for the current table (mean size, accuracy with all units), means over
    runs."""
    lines = ["| model | gate | median left-saturated | median right-saturated | "
             "table DC: #units | table DC: acc. all |", "|---|---|---|---|---|---|"]  # fmt: skip
    probes = probes_of("lstm")
    for variant, runs in analysed.items():
        for module in MODULES:
            for gate in CELL_GATES["lstm"]:
                site = f"{module}.{gate}"
                left, right = (mean_of([torch.tensor(r["saturation"][site][side]).median().item()
                                        for r in runs]) for side in ("left", "right"))  # fmt: skip
                name = f"table2.{site}"
                group = "- | -"
                if name in probes:
                    size = mean_of([r["probes"][name]["size"] for r in runs])
                    every = mean_of([r["probes"][name]["accuracy_all"] for r in runs])
                    group = f"{size:.1f} | {every:.2f}"
                lines.append(f"| {variant} | `{site}` | {left:.2f} | {right:.2f} | {group} |")
    return "\n".join(lines)


def footnote1_analyses_text(gru: list[Claim], lstm: list[Claim],
                            analysed: dict[str, list[dict]] | None) -> str:  # fmt: skip
    """The report's section on the LSTMs' analyses: the gate mapping, every LSTM gate, and each
    GRU claim's verdict beside the LSTMs'; or which claims are not measured."""
    heading = "## Footnote 1: the analyses on the LSTMs\n"
    if analysed is None:
        return heading + "\n" + not_measured(
            "`analysis` of the LSTMs", "`footnote1.analyses_same_verdict` and "
            "`footnote1.findings_hold_on_lstms`",
        ) + "\n\n"  # fmt: skip
    shap = ("" if any(c.id.startswith("footnote5.") for c in lstm) else
            " Footnote 5's claims are not measured on them (no `footnote5`).")  # fmt: skip
    runs = len(next(iter(analysed.values())))
    lstms = f"{runs} + {runs} LSTMs"
    return f"""{heading}
Sections 3-4's analyses run on the {lstms} as on the GRUs (lowest-loss checkpoint, the same
data, thresholds and procedures; the untrained LSTMs beside them), and every GRU claim is judged
on them by its own rule.{shap} The GRU claims name a GRU's gates; an LSTM's stand in for them as
follows. Torch's update gate `z` keeps the old state (`h = (1 - z) n + z h_prev`), as the LSTM's
**forget gate** keeps the old cell (`c = f c_prev + i g`): `z` is read as `f`. The reset gate
decides how much of the previous state reaches the next computation (`n = tanh(W_in x + r (W_hn
h_prev))`), as the **output gate** decides how much of the cell reaches the hidden state that
the next step's gates and candidate read (`h = o tanh(c)`): `r` is read as `o`. The **input
gate** (`i`, new information let in: the paper's equation's reading of `z`, `1 - z`) has no GRU
claim of its own; every gate is shown below. Section 5's ablations (component substitution,
pruning) are not run on the LSTMs: they are retrains of their own, not analyses of the trained
models.

Every LSTM gate (means over the {runs} runs):

{gates_table(analysed)}

Each analysis claim's verdict on the GRUs beside the LSTMs' (the LSTMs' own untrained verdict
decides whether theirs is informative):

{verdicts_table(gru, lstm)}

"""
