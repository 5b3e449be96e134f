"""The command line every reproduction takes (`python -m experiments.paperN ...`), built without
importing what a reproduction runs, so that `--help` and a wrong option answer at once: a paper's
`__main__` parses with `parser` and only then imports its reproduction (`run_main`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from pathlib import Path

from experiments.engine.shard import Shard
from storage.layout import RUNS_ENV, default_run_root


def reproduction_parser(
    description: str, scales: Sequence[str], out: str
) -> argparse.ArgumentParser:
    """The options every `python -m experiments.paperN` takes (`out`: reports/paperN)."""
    parser = argparse.ArgumentParser(  # no abbreviations: `--slurm-options "--time=..."` is
        # sbatch's --time, not an abbreviation of one of ours (paper 4's --time-cap)
        prog=f"python -m experiments.{Path(out).name}",
        description=description,
        allow_abbrev=False,
    )
    parser.add_argument(
        "--scale", choices=sorted(scales), default=os.environ.get("SCALE") or "default"
    )
    parser.add_argument(
        "--runs", type=Path, default=Path(default_run_root()),
        help=f"root of run folders (default: ${RUNS_ENV}, else runs)",
    )  # fmt: skip
    parser.add_argument(
        "--out", type=Path, default=None,
        help=f"where the report goes (default: {out} at the committed report's scale, else "
        f"<runs>/reports/{Path(out).name}/<scale>)",
    )  # fmt: skip
    parser.add_argument(
        "--replace-report", action="store_true",
        help="write over a report of another scale in --out (never done otherwise)",
    )  # fmt: skip
    parser.add_argument("--jobs", type=int, default=2, help="runs trained at a time")
    parser.add_argument(
        "--reuse-runs",
        action="store_true",
        help="keep finished runs whose command.txt matches instead of training them again, and "
        "resume interrupted ones of the same command from their last.ckpt",
    )
    parser.add_argument(
        "--shard", type=Shard.parse, default=Shard(), metavar="I/N",
        help="train and measure only the I-th of N disjoint parts of the runs (one machine "
        "each); no report: gather the run roots with --merge",
    )  # fmt: skip
    parser.add_argument(
        "--merge", type=Path, nargs="+", default=(), metavar="ROOT",
        help="gather the measurements of the runs in these run roots (the shards') into --runs "
        "and write the report from them; nothing is trained",
    )  # fmt: skip
    parser.add_argument(
        "--slurm-array", type=int, default=None, metavar="N",
        help="submit this reproduction to SLURM and return: an array of N shards (run roots "
        "<runs>/shard1..N) and the merge that writes the report once they all succeeded; "
        "scripts and logs in <runs>/slurm/",
    )  # fmt: skip
    parser.add_argument(
        "--slurm-options", default="", metavar="OPTIONS",
        help='sbatch options for every job of --slurm-array, e.g. --slurm-options="--time=04:00:00 '
        '--cpus-per-task=2 --mem=8G --partition=cpu"',
    )  # fmt: skip
    return parser


def run_main(parser: Callable[[], argparse.ArgumentParser], module: str) -> None:
    """`python -m experiments.paperN`: parse the command line with the paper's `parser` (help and
    bad options end here), then import `module` (the reproduction) and run its `main`, ending
    without the interpreter's last teardown of modules (`launch.end_as_interpreter`)."""
    parser().parse_args(sys.argv[1:])
    from experiments.engine.launch import end_as_interpreter

    end_as_interpreter(lambda: import_module(module).main(sys.argv[1:]), module.rsplit(".", 1)[0])
