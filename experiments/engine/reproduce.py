"""One engine for every reproduction (`python -m experiments.paperN`); a paper is a `Study` plugged
into it.

A study says what is its own: its scales and command line, how it trains and measures the runs of
a scale (`measure`: every run's measurements file, `experiments.engine.measure`), and how its
report is built from those measurements alone (`report`: claims, markdown, figures, tables). The
engine does the rest, the same for every study: the command line parsed into a `Sitting` (with
`--merge`, the shards' measurements gathered first), where the report goes without touching a
committed one (`experiments.engine.committed`), the stages timed, a shard stopped before its
report, and the end (`publish`, the measurements copied beside the report, `build.json`, the
verdict line). `docs/code_layout.md` shows the template a study follows.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from experiments.allocator import keep_freed_memory
from experiments.engine.committed import (
    CommittedFileError,
    check_out,
    default_out,
    describe_build,
    report_build,
    write_build,
)
from experiments.engine.fit import fits_at_scale
from experiments.engine.launch import WarmServerError
from experiments.engine.publish import Stopwatch, publish
from experiments.engine.sitting import Sitting, SittingError
from experiments.engine.sittings import stopping_gently
from experiments.engine.slurm import SlurmError, submit
from experiments.engine.store import REPOSITORY, Schema, gather_measurements, keep_beside_report
from experiments.findings import Finding
from experiments.report import Claim, verdict_line


def sitting_of(
    args: argparse.Namespace, paper: str, schema: Schema | None = None, variants: tuple = ()
) -> Sitting:
    """The `Sitting` a reproduction's parsed command line asks for (`variants`: those it trains
    alone, `Study.variants_of`); with `--merge`, after gathering the shards' measurements into
    `--runs`."""
    if args.merge and not args.shard.whole:
        raise SittingError("--merge writes the report from every shard: leave out --shard")
    if variants and (args.merge or args.slurm_array is not None or args.slurm_options):
        raise SittingError(f"{', '.join(variants)} alone are trained here and write no report: "
                           "leave out --merge and --slurm-array")  # fmt: skip
    if args.merge:
        count = gather_measurements(paper, args.merge, args.runs)
        print(f"merged {count} runs' measurements from {len(args.merge)} run roots into "
              f"{args.runs}", flush=True)  # fmt: skip
    return Sitting(args.runs, args.jobs, args.reuse_runs or bool(args.merge), args.shard,
                   tuple(args.merge), schema=schema or Schema(), variants=variants)  # fmt: skip


@dataclass(frozen=True)
class Request:
    """What one invocation asks of a study: the scale by name and as configured (`Study.scale_of`),
    where the report goes, the sitting, and the clock that times the stages."""

    scale_name: str
    scale: object
    out: Path
    sitting: Sitting
    clock: Stopwatch = field(default_factory=Stopwatch)


@dataclass(frozen=True)
class Built:
    """A study's report, built from its measurements alone: the claims, the report's markdown (the
    engine adds the rule dates and the claims table), its figures and tables (logged to W&B), the
    runs' measurement records (when they were trained) and their `(variant, seed)` names (copied
    beside the report)."""

    claims: list[Claim]
    markdown: str
    figures: dict[str, Path]
    tables: dict[str, pd.DataFrame]
    records: list[dict]
    runs: list[tuple[str, int]]


@dataclass(frozen=True)
class Study:
    """A reproduction plugged into the engine (one per paper, and the atlas).

    - `name`: its folder under `reports/` and its runs' folder under the run root (`paper4`);
    - `scales`: its scales by name; `command_line()`: its parser (`engine.cli.reproduction_parser`
      with its own options), built without importing what it runs;
    - `scale_of(args, scale)`: the scale its own options make of `scales[args.scale]`;
    - `variants_of(args, scale)`: the variants its own options name to train alone (paper 2's
      `--cells`), a SittingError naming the valid ones for a name `scale` lacks; empty: all;
    - `schema`: the version of its measurements files and how older ones are read;
    - `findings`: the paper's findings, each with the claims that test it (`experiments.findings`),
      for the table its report opens with;
    - `registered(claim_id)`: the day (`2026-11-28`) the claim's rule was pre-registered, else
      None (the atlas: every rule, before any of its runs; a paper: the readings its
      pre-registration names); a rule first judged in a build is dated by it, not by the build;
    - `data_of(args)`: the data its runs will read, where that can differ between machines (paper
      1: sample1, or generated tables where sample1 cannot be had), recorded in `build.json` so
      that a report on other data never takes the committed report's place; None: not named;
    - `measure(request)`: train and measure its runs (those of the sitting's shard), timing its
      stages on `request.clock`; returns what `report` reads;
    - `report(request, measured)`: the `Built` report from the measurements alone."""

    name: str
    scales: Mapping[str, object]
    command_line: Callable[[], argparse.ArgumentParser]
    measure: Callable[[Request], object]
    report: Callable[[Request, object], Built]
    scale_of: Callable[[argparse.Namespace, object], object] = lambda args, scale: scale
    variants_of: Callable[[argparse.Namespace, object], tuple[str, ...]] = lambda a, s: ()
    schema: Schema = Schema()
    findings: Sequence[Finding] = ()
    registered: Callable[[str], str | None] = lambda claim_id: None
    data_of: Callable[[argparse.Namespace], str | None] = lambda args: None


def reproduce(study: Study, request: Request) -> list[Claim] | None:
    """Train and measure the study's runs, then (unless the sitting is a shard or some variants
    alone, `Sitting.whole`: None) build its report from their measurements, publish it and keep
    the measurements beside it."""
    measured = study.measure(request)
    if not request.sitting.whole:  # a shard, or some variants alone
        return None
    with request.clock.stage("report"):
        built = study.report(request, measured)
    root = request.sitting.root
    publish(request.out, study.name, built.claims, built.markdown, root, built.figures,
            built.tables, built.records, scale=request.scale_name,
            seeds=getattr(request.scale, "seeds", None), findings=study.findings,
            registered=study.registered)  # fmt: skip
    keep_beside_report(study.name, built.runs, root, request.out)
    return built.claims


def part_done(name: str, scale_name: str, scale: object, sitting: Sitting) -> str:
    """What a sitting of some variants alone (`Sitting.variants`) trained, and how to build the
    report afterwards."""
    seeds = getattr(scale, "seeds", None)
    at = f" at seeds {' '.join(map(str, seeds))}" if seeds else ""
    shard = "" if sitting.shard.whole else f" (shard {sitting.shard} of them)"
    return (
        f"{name}: trained and measured the runs of {', '.join(sitting.variants)}{at}{shard} under "
        f"{sitting.root}; no report was written. To build the report: python -m "
        f"experiments.{name} --scale {scale_name} --runs {sitting.root} --reuse-runs: it keeps "
        "these runs where the scale lists them (with --seeds, where those seeds do) and trains "
        "the scale's other runs that this root lacks"
    )


def reproduction_main(study: Study, argv: list[str] | None = None) -> list[Claim] | None:
    """`python -m experiments.<study>`: parse the study's command line, run `reproduce` and print
    the verdict line of the report it wrote; a shard writes no report and says how to merge, and
    a sitting of some variants alone (`Study.variants_of`) what it trained and how to report. A
    problem the user can fix (a sitting that cannot do what it asks, a committed file in the way)
    is one line and exit status 2."""
    parser = study.command_line()
    args = parser.parse_args(argv)
    keep_freed_memory()  # for the analyses run in this process; each fit sets its own
    name, reports = study.name, REPOSITORY / "reports"
    try:
        data, committed = study.data_of(args), report_build(reports / name)
        if args.out is None:
            args.out = default_out(name, args.scale, args.runs, reports, data)
            if committed and args.out != reports / name:
                print(f"the report goes to {args.out}: reports/{name} keeps its own "
                      f"({describe_build(committed)})", flush=True)  # fmt: skip
        check_out(args.out, name, args.scale, args.replace_report, data)
        scale = study.scale_of(args, study.scales[args.scale])
        variants = study.variants_of(args, scale)
        if (args.slurm_array is not None or args.slurm_options) and not variants:
            return submit(name, args, parser)  # the jobs train; this process trains nothing
        sitting = sitting_of(args, name, study.schema, variants)
        with stopping_gently(), fits_at_scale(args.scale):
            claims = reproduce(study, Request(args.scale, scale, args.out, sitting))
    except (SittingError, CommittedFileError, SlurmError, WarmServerError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    if claims is None and sitting.variants:
        print(part_done(name, args.scale, scale, sitting), flush=True)
        return None
    if claims is None:
        print(f"shard {sitting.shard} of {name}: its runs are measured under {sitting.root}. "
              f"When every shard is done, write the report from all of them: python -m "
              f"experiments.{name} --scale {args.scale} --merge <each shard's run root> "
              f"--runs <merged root>", flush=True)  # fmt: skip
        return None
    write_build(args.out, name, args.scale, data)
    print(verdict_line(args.out / "report.md", claims))
    return claims
