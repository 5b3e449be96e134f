"""`python -m probes <probe> --runs GLOB ... --out DIR`: one probe over every matching recorded
run and checkpoint, on CPU or several devices, cached and resumable.

- Work: one task per (run, checkpoint tag). Each result is stored once in
  `<cache>/<probe>/<key>.json`, written atomically; the key is a hash of the probe, its options
  and the contents of the files the result reads. A rerun skips what is stored, so a command that
  was killed finishes, when started again, with the table of an uninterrupted one; a stored
  result that is not whole (cut short, say) is discarded with a warning and computed again.
- Devices: `--devices N` spreads the tasks over N processes through Lightning Fabric
  (`ddp_spawn`, one device each with `--accelerator gpu`). The processes take tasks from a shared
  list one at a time (claim files) and write results only to the cache, so the table does not
  depend on how many there were.
- Output: `<out>/<probe>.csv` (one tidy row per run, checkpoint and probed thing; `--format
  parquet` with pyarrow), `<out>/<probe>.summary.md` (means per run group), figures in
  `<out>/figures/`, and with `--wandb` the same as a W&B run (offline unless `WANDB_MODE=online`).
- Bad input (no matching run, a missing or corrupt checkpoint or trace, a run of another model,
  an unknown option, an `--out` or `--cache` folder that cannot be written) is one line naming
  the file and the fix; the folders are checked before any work. `--keep-going` carries on past
  failed tasks and lists them at the end; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import MISSING, fields
from pathlib import Path

from probes.command.registry import PROBES
from probes.command.registry import probe as registered
from probes.command.view import command as view_command

CHECKPOINT = re.compile(r"best|last|all|epoch=(\d+|init)|step=\d+")


# ---- the command line --------------------------------------------------------------------------
def parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The command line; only the probe that `argv` names (its first argument) is imported and
    given its options, so `python -m probes --help` imports no probe."""
    argv = sys.argv[1:] if argv is None else argv
    chosen = argv[0] if argv and argv[0] in PROBES else None
    top = argparse.ArgumentParser(
        prog="python -m probes",
        description="Run one probe of the suite over recorded runs and checkpoints, or browse "
        "them (`view`).",
        epilog="`python -m probes <probe> --help` lists the probe's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = top.add_subparsers(dest="probe", metavar="<probe>", required=True)
    for card in PROBES.values():
        sub = commands.add_parser(card.name, help=f"{card.paper}: {card.purpose}",
                                  formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
        if card.name == chosen:
            add_probe_options(sub, registered(card.name))
    view_command.add_view_parser(commands)
    return top


def add_probe_options(sub: argparse.ArgumentParser, probe) -> None:
    """The options every probe takes, and `probe`'s own (its options dataclass)."""
    sub.description = f"{probe.purpose} ({probe.paper}).\n\n{probe.details}"
    common = sub.add_argument_group("runs and devices")
    common.add_argument("--runs", nargs="+", required=True, metavar="GLOB",
                        help="run folders (`python -m experiments fit`), as shell globs, "
                        "e.g. 'runs/paper1/*/seed=*' (quoted)")  # fmt: skip
    common.add_argument("--checkpoint", default="best", type=checkpoint_spec,
                        help="best | last | epoch=N | step=N | all (default: best); for "
                        "traces, `last` is the latest epoch=N recorded")  # fmt: skip
    common.add_argument("--out", required=True, type=Path, help="folder for the table, "
                        "summary and figures")  # fmt: skip
    common.add_argument("--cache", type=Path, default=None,
                        help="folder of stored results (default: <out>/cache)")  # fmt: skip
    common.add_argument("--devices", type=int, default=1,
                        help="processes (one device each) to spread the work over")  # fmt: skip
    common.add_argument("--accelerator", default="cpu", choices=("cpu", "gpu", "auto"))
    common.add_argument("--format", default="csv", choices=("csv", "parquet"))
    common.add_argument("--keep-going", action="store_true",
                        help="carry on past failed runs and list them at the end")  # fmt: skip
    common.add_argument("--wandb", action="store_true", help="log the table and figures "
                        "to a W&B run (offline unless WANDB_MODE=online)")  # fmt: skip
    common.add_argument("--trust-class", action="append", default=[], metavar="CLASS",
                        help="a class (package.module.Class) that checkpoints may name "
                        "besides the suite's own, e.g. your model's; no other class a "
                        "checkpoint names is imported (repeat for several)")  # fmt: skip
    own = sub.add_argument_group(f"{probe.name} options")
    for field in fields(probe.options):
        flag = "--" + field.name.replace("_", "-")
        default = field.default if field.default is not MISSING else field.default_factory()
        shown = " ".join(map(str, default)) if isinstance(default, list) else default
        spec = field.metadata
        if isinstance(default, bool):
            own.add_argument(flag, action=argparse.BooleanOptionalAction, default=default,
                             help=f"{spec['help']} (default: {shown})")  # fmt: skip
        elif isinstance(default, list):
            own.add_argument(flag, nargs="+", type=spec.get("type", str), default=default,
                             help=f"{spec['help']} (default: {shown})")  # fmt: skip
        else:
            own.add_argument(flag, type=type(default), default=default,
                             choices=spec.get("choices"),
                             help=f"{spec['help']} (default: {shown})")  # fmt: skip


def checkpoint_spec(text: str) -> str:
    if not CHECKPOINT.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not best, last, epoch=N, step=N or all")
    return text


def main(argv: list[str] | None = None) -> int:
    arguments = parser(argv).parse_args(argv)
    if arguments.probe == view_command.NAME:
        return view_command.main(arguments)
    from probes.command import run  # the work: torch, Lightning and the probe's libraries

    probe = registered(arguments.probe)
    options = probe.options(**{f.name: getattr(arguments, f.name) for f in fields(probe.options)})
    try:
        probe.validate(options)
        return run.run_command(probe, options, arguments)
    except (run.ProbeInputError, run.RunFileError, ValueError) as error:
        print(f"python -m probes {probe.name}: error: {error}", file=sys.stderr)
        return 2
