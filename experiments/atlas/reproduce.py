"""`make atlas`: every model of the scale trained by its paper's fit and measured by every wired
method, trained and untrained (`runs`), then the report built from the measurements alone (the
matrix and the questions: `claims`, `report`), written to `reports/atlas/{report.md,
results.json, figures/, runs/}` (another scale: under the run root) and logged to W&B."""

from __future__ import annotations

import argparse
import dataclasses

from experiments.atlas.claims import claims_of
from experiments.atlas.questions import DATE
from experiments.atlas.report import (
    answers_frame,
    matrix,
    matrix_figure,
    matrix_frame,
    report_text,
)
from experiments.atlas.runs import SCHEMA, STUDY, measure_all
from experiments.atlas.scales import SCALES, Scale, command_line
from experiments.engine.reproduce import Built, Request, Study, reproduction_main
from experiments.engine.sitting import SittingError
from experiments.engine.store import REPOSITORY
from experiments.paper1.runs import data_name
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
    tables = {"answers": answers_frame(claims), "claims": claims_frame(claims),
              "matrix": matrix_frame(cells)}  # fmt: skip
    return Built(claims, markdown, figures, tables, list(records.values()), list(records))


COMMITTED = REPOSITORY / "reports" / "atlas"
"""Where the atlas's own report goes (never a report of part of its scale)."""


def scale_of(args: argparse.Namespace, scale: Scale) -> Scale:
    """The scale of `--models`: its models but those named left out; one error naming the fix
    where a name is not a model of the scale or the report would go where the atlas's does."""
    if not args.models:
        return scale
    unknown = [model for model in args.models if model not in scale.models]
    if unknown:
        raise SittingError(
            f"--models: {', '.join(unknown)} not among the models of scale {args.scale}: name "
            f"some of {', '.join(scale.models)}"
        )
    if args.out.resolve() == COMMITTED.resolve():
        raise SittingError(
            f"--models measures part of the scale, whose report is not the atlas's {COMMITTED}: "
            "give it a place of its own with --out DIR"
        )
    kept = {model: seeds for model, seeds in scale.models.items() if model in args.models}
    left_out = tuple(model for model in scale.models if model not in kept)
    return dataclasses.replace(scale, models=kept, left_out=left_out)


def data_of(args: argparse.Namespace) -> str | None:
    """The data paper 1's models read (`experiments.paper1.runs.data_name`), which the report's
    `build.json` records: a report on other data does not take the committed one's place. None
    with `--models`, whose report of part of the atlas needs a place of its own (`scale_of`)."""
    return None if args.models else data_name(args, f"{STUDY}/paper1_*")


STUDY_PLUGIN = Study(STUDY, SCALES, command_line, measure, report, scale_of, schema=SCHEMA,
                     registered=lambda claim_id: DATE, data_of=data_of)  # fmt: skip


def main(argv: list[str] | None = None) -> list[Claim] | None:
    return reproduction_main(STUDY_PLUGIN, argv)
