"""`make reproduce-paper4`: every run of paper 4 trained and measured, with its untrained weights
(`runs`), then the report built from the measurements alone (`claims`, `report`), every claim
also judged on the untrained weights (`untrained`), written to
`reports/paperN/{report.md, results.json, figures/, runs/}` and logged to W&B."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd

from experiments.paper4.analysis import FIGURE2_TOKENS
from experiments.paper4.claims import claims_of
from experiments.paper4.report import (
    accuracy_table,
    figure2,
    figure3,
    figure5,
    report_text,
    setting_table,
    shares_table,
    table1,
    token_table,
    training_figure,
    training_table,
)
from experiments.paper4.runs import measure_all
from experiments.paper4.scales import SCALES, VARIANTS, command_line
from experiments.paper4.untrained import judged_claims, null_text
from experiments.report import Claim, claims_frame, with_earlier
from experiments.runner import (
    Sitting,
    Stopwatch,
    keep_beside_report,
    publish,
    reproduction_main,
)

EARLIER_VERDICTS = (
    Path(__file__).parents[2] / "reports" / "paper4" / "earlier" / "teacher_forced.json"
)
"""The default scale's claims before issue 27 (`results.json` of commit 95923f1's report), kept
beside the verdicts of the models trained on the paper's objective."""
MODELS_CHANGED = (
    "the models: until issue 27 the default scale's GRUs were trained under teacher forcing and "
    "selected on the validation token-positioning accuracy (test accuracy 0.534 over 3 seeds; "
    "report of commit 95923f1, its claims kept in reports/paper4/earlier/teacher_forced.json); "
    "now on the paper's objective, each decoder step fed the model's own previous output, and "
    "stopped on the validation loss. For the claims compared with a paper's value the rule "
    "changed too, before these runs: since commit 3769518 means are compared at the paper's "
    "printed precision, and the earlier verdicts were computed by the rule before it"
)


RULES_BEFORE_ISSUE29 = EARLIER_VERDICTS.with_name("before_issue29.json")
"""The default scale's claims of commit 64a7695's report: the same runs, the rules before issue
29."""
RULES_REVISED = (
    "issue 29 (verdicts a skeptic accepts) revised these rules after their results existed "
    "(claims of commit 64a7695's report, reports/paper4/earlier/before_issue29.json): a rule "
    "that cannot fail is uninformative, with its reason (the function shares, the storing and "
    "triggering SVMs' training accuracy, outputting units chosen on the output, four groups that "
    "share a unit by chance); a direction is tested first and a tie is not a change (section 5's "
    "masked gates, the controls, from a 2-point gap)"
)


def earlier_verdicts(claims: list[Claim]) -> list[Claim]:
    """The default scale's `claims` beside their verdicts before issue 29 and before issue 27."""
    for path, reason, unless_recorded in ((RULES_BEFORE_ISSUE29, RULES_REVISED, True),
                                          (EARLIER_VERDICTS, MODELS_CHANGED, False)):  # fmt: skip
        earlier = [Claim.from_json(r) for r in json.loads(path.read_text())]
        claims = with_earlier(claims, earlier, reason, unless_recorded)
    return claims


def reproduce(scale_name: str, out: Path, sitting: Sitting) -> list[Claim] | None:
    """Train and measure every variant, analyse every GRU (sections 3-5), report; a shard only
    trains and measures its runs (None)."""
    scale = SCALES[scale_name]
    clock = Stopwatch()
    with clock.stage("training and analyses"):
        records = measure_all(scale, sitting)
    if not sitting.shard.whole:
        return None
    root = sitting.root
    with clock.stage("report"):
        gru_seeds = list(scale.seeds["gru"])
        analyses = [records[("gru", seed)]["analysis"] for seed in gru_seeds]
        by_variant = {name: [records[(name, s)] for s in scale.seeds[name]] for name in VARIANTS}
        accuracies = {name: [r["test_position_acc"] for r in runs]
                      for name, runs in by_variant.items()}  # fmt: skip
        claims = claims_of(analyses, accuracies)
        if scale_name == "default":
            claims = earlier_verdicts(claims)
        claims = judged_claims(claims, records, scale)
        figures_folder = out / "figures"
        figures = {
            "training": training_figure(records, figures_folder / "training.png"),
            "fig2_storing_pca": figure2(pd.DataFrame(analyses[0]["figure2"]),
                                        figures_folder / "fig2_storing_pca.png"),
            "fig3_counting": figure3(analyses[0]["counting_curves"],
                                     figures_folder / "fig3_counting.png"),
            "fig5_gates": figure5(analyses, gru_seeds, figures_folder / "fig5_gates.png"),
        }  # fmt: skip
    tables = {
        "accuracy": accuracy_table(by_variant),
        "table1": table1(analyses),
        "shares": shares_table(analyses),
        "tokens": token_table(analyses[0], FIGURE2_TOKENS),
        "training": training_table(records),
        "settings": setting_table(scale, SCALES["paper"]),
    }
    markdown = report_text(scale_name, scale, tables, clock, records) + null_text(
        records, scale_name, scale
    )
    publish(out, "paper4", claims, markdown, root, figures,
            {"claims": claims_frame(claims), **tables}, list(records.values()))  # fmt: skip
    keep_beside_report("paper4", list(records), root, out)
    return claims


def main(argv: list[str] | None = None) -> list[Claim]:
    parser = command_line()
    args = parser.parse_args(argv)
    if args.measure_untrained:
        SCALES[args.scale] = replace(SCALES[args.scale], untrained_of_kept_runs=True)
    return reproduction_main(parser.description, SCALES, "reports/paper4", reproduce, argv,
                             parser)  # fmt: skip
