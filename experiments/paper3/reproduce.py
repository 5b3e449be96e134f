"""`make reproduce-paper3`: every run of paper 3 trained and measured (`runs`), then the report
built from the measurements alone (`claims`, `report`), written to
`reports/paper3/{report.md, results.json, figures/, runs/}` and logged to W&B."""

from __future__ import annotations

from pathlib import Path

from experiments.engine.reproduce import Built, Request, Study, reproduction_main
from experiments.paper3.claims import (
    boundary_table,
    by_setting,
    final_table,
    learning_claims,
    toy_table,
)
from experiments.paper3.findings import FINDINGS
from experiments.paper3.images_report import authors_images_section, images_figures, readings_table
from experiments.paper3.report import paper3_figures, report_text
from experiments.paper3.runs import SCHEMA, measure_all
from experiments.paper3.scales import EXPERIMENTS, IMAGES_AUTHORS, SCALES, command_line, variant
from experiments.paper3.scan_authors import authors_measured, authors_tables
from experiments.paper3.scan_report import scan_authors_figures, scan_authors_section
from experiments.paper3.toy import PLAYGROUND, READINGS, TEXT
from experiments.paper3.toy_report import playground_figures, playground_section
from experiments.paper3.untrained import NULL_SECTION, judged_claims
from experiments.report import Claim, claims_frame, claims_in, with_earlier

EARLIER = Path(__file__).parents[2] / "reports/paper3/earlier/default_before_authors_code.json"
"""The claims of the committed default-scale report (commit e5276d9) before the runs were
retrained by the authors' code and judged against their untrained weights."""
EARLIER_REASON = (
    "the runs and the rules: runs retrained as the authors' code trains them, judged against "
    "their untrained weights. The runs were retrained with the authors' code where the text is "
    "silent (images: two dense 64 layers, Keras's categorical hinge, fresh pairs every step; "
    "SCAN: Luong attention with input feeding, global-norm clipping, staircase decay, "
    "per-sequence loss), every claim also judged on the untrained weights, and the toy's rules "
    "compare setting A with its control B seed by seed (the earlier report: commit e5276d9)"
)


def measure(request: Request) -> dict[tuple, dict]:
    """Train and measure both settings of every experiment (their curves, the toy's boundaries
    and their untrained weights; the toy, the images and SCAN under both readings)."""
    with request.clock.stage("training and measuring"):
        return measure_all(request.scale, request.sitting)


def report(request: Request, records: dict[tuple, dict]) -> Built:
    """Paper 3's report from its runs' measurements alone, every claim of a model also judged on
    the untrained weights."""
    scale_name, scale, figures_folder = request.scale_name, request.scale, request.out / "figures"
    claims = judged_claims(records, scale.seeds)
    if scale_name == "default":  # EARLIER is a report of this scale
        earlier = claims_in(EARLIER)
        claims = with_earlier(claims, earlier, EARLIER_REASON)
    measured = by_setting(records, scale.seeds, (*EXPERIMENTS, IMAGES_AUTHORS))
    early_frame = learning_claims(measured)[1]
    toy_frames = {reading: toy_table(records, scale.seeds, reading) for reading in READINGS}
    boundaries = boundary_table(records, scale.seeds)
    figures = paper3_figures(measured, records, scale, figures_folder)
    figures |= playground_figures(records, scale, figures_folder)
    figures |= images_figures(measured, figures_folder)
    scan_authors = authors_measured(records, scale.seeds)
    figures |= scan_authors_figures(records, scale, figures_folder)
    tables = {"final_accuracy": final_table(measured), "early_training": early_frame,
              "toy_2d": toy_frames[TEXT], "toy_2d_playground": toy_frames[PLAYGROUND],
              "toy_boundary_over_training": boundaries,
              "two_digit_images_readings": readings_table(measured)}  # fmt: skip
    tables |= authors_tables(scan_authors)
    markdown = report_text(scale_name, scale, tables, request.clock, records)
    markdown += playground_section(tables, scale)
    markdown += authors_images_section(tables, scale)
    markdown += scan_authors_section(tables, scale)
    markdown += NULL_SECTION
    runs = [(variant(experiment, setting), seed) for experiment, setting, seed in records]
    return Built(claims, markdown, figures, {"claims": claims_frame(claims), **tables},
                 list(records.values()), runs)  # fmt: skip


STUDY = Study("paper3", SCALES, command_line, measure, report, schema=SCHEMA, findings=FINDINGS)


def main(argv: list[str] | None = None) -> list[Claim] | None:
    return reproduction_main(STUDY, argv)
