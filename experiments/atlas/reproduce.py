"""`make atlas`: every model of the scale trained by its paper's fit and measured by every wired
method, trained and untrained (`runs`), then the report built from the measurements alone (the
matrix and the questions: `claims`, `report`), written to `reports/atlas/{report.md,
results.json, figures/, runs/}` (another scale: under the run root) and logged to W&B."""

from __future__ import annotations

from experiments.atlas.claims import claims_of
from experiments.atlas.report import matrix, matrix_figure, matrix_frame, report_text
from experiments.atlas.runs import SCHEMA, STUDY, measure_all
from experiments.atlas.scales import SCALES, command_line
from experiments.engine.reproduce import Built, Request, Study, reproduction_main
from experiments.report import Claim, claims_frame


def measure(request: Request) -> dict[tuple[str, int], dict]:
    """Train and measure every wired run of the scale (those of the sitting's shard)."""
    with request.clock.stage("training and analyses"):
        return measure_all(request.scale, request.sitting)


def report(request: Request, records: dict[tuple[str, int], dict]) -> Built:
    """The atlas's report from its runs' measurements alone."""
    claims = claims_of(records)
    cells = matrix(records)
    figures = {"matrix": matrix_figure(cells, request.out / "figures" / "matrix.png")}
    markdown = report_text(request.scale_name, request.scale, records, claims, request.clock)
    tables = {"claims": claims_frame(claims), "matrix": matrix_frame(cells)}
    return Built(claims, markdown, figures, tables, list(records.values()), list(records))


STUDY_PLUGIN = Study(STUDY, SCALES, command_line, measure, report, schema=SCHEMA)


def main(argv: list[str] | None = None) -> list[Claim] | None:
    return reproduction_main(STUDY_PLUGIN, argv)
