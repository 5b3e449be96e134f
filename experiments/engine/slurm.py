"""A reproduction submitted to SLURM in one command: `python -m experiments.paperN --scale S
--slurm-array N [--slurm-options "..."]`.

Two sbatch scripts are written under `<run root>/slurm/` and submitted with `sbatch --parsable`:
an array of N tasks, task i running the same reproduction as `--shard i+1/N --runs
<root>/shard<i+1> --reuse-runs`, and the merge, held until every task has succeeded
(`--dependency=afterok:<array>`), running `--merge <root>/shard1 ... <root>/shardN --runs
<root>/merged`, which writes the report. Every job runs at the scale asked for, from this
checkout with this interpreter, with the reproduction's other options as given; its log goes to
`<run root>/slurm/`; it is requeued when preempted (`--requeue`), and a requeued or resubmitted
task continues its shard where it stopped. `--slurm-options` are sbatch's own options for every
job: the resources each task gets (`--time`, `--cpus-per-task`, `--mem`, `--gres`) and where it
runs (`--partition`, `--account`).
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from experiments.engine.launch import SHARED_SERVER
from experiments.engine.store import REPOSITORY
from storage.files import write_text_atomic

SET_HERE = {"scale", "runs", "shard", "merge", "reuse_runs", "slurm_array", "slurm_options"}
"""The options every job gets from the submission itself, not as given."""
REFUSED = {"-a", "--array", "-d", "--dependency", "--parsable", "-o", "--output"}
"""sbatch options the submission sets itself (the array, the merge's wait, the logs)."""
NO_SBATCH = ("sbatch is not installed here: submit from a machine of the SLURM cluster, or run "
             "the shards yourself (--shard I/N, then --merge)")  # fmt: skip


class SlurmError(RuntimeError):
    """A submission that cannot be made as asked: one line to the user."""


def passed_on(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The reproduction's options as given (those not set by the submission itself, `SET_HERE`),
    as the words of a command line, paths made absolute (the jobs run in the checkout)."""
    words: list[str] = []
    for action in parser._actions:  # argparse lists a parser's options nowhere else
        value = getattr(args, action.dest, action.default)
        if action.dest in SET_HERE or not action.option_strings or value == action.default:
            continue
        option = action.option_strings[-1]
        if action.nargs == 0:  # a flag
            words.append(option)
        else:
            values = value if isinstance(value, list | tuple) else [value]
            words += [option, *(str(v.absolute() if isinstance(v, Path) else v) for v in values)]
    return words


def checked_options(options: str) -> list[str]:
    """`--slurm-options` as sbatch's words; one that the submission sets itself is refused."""
    try:
        words = shlex.split(options)
    except ValueError as error:
        raise SlurmError(f"--slurm-options {options!r} cannot be read ({error})") from None
    taken = sorted({w.split("=")[0] for w in words} & REFUSED)
    if taken:
        raise SlurmError(
            f"--slurm-options may not give {', '.join(taken)}: --slurm-array sets the array, the "
            "merge's wait and the logs (<run root>/slurm/)"
        )
    return words


def script(job: str, log: Path, command: str, array: str = "") -> str:
    """An sbatch script running `command` (the reproduction) from the checkout, requeued when
    preempted, its log `log`; `array`: the array's `--array` (none for one job)."""
    lines = [
        "#!/usr/bin/env bash",
        "# Written and submitted by a reproduction's --slurm-array; submitted again (with the same",
        "# --slurm-options), its jobs continue where they stopped.",
        f"#SBATCH --job-name={job}",
        *([f"#SBATCH --array={array}"] if array else []),
        "#SBATCH --requeue",
        "#SBATCH --open-mode=append",
        f"#SBATCH --output={log}",
        "set -eu",
        f"cd {shlex.quote(str(REPOSITORY))}",
        "export WANDB_MODE=${WANDB_MODE:-offline}",
        f"unset {SHARED_SERVER}  # a job's fits are forked on its own node",
        command,
    ]
    return "\n".join(lines) + "\n"


def scripts(paper: str, args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    """The array's and the merge's sbatch scripts, by name."""
    count, root = args.slurm_array, args.runs.absolute()
    logs, job = root / "slurm", f"{paper}-{args.scale}"
    reproduction = [sys.executable, "-m", f"experiments.{paper}", "--scale", args.scale]
    given = passed_on(parser, args)
    shard = (f"shard=$((SLURM_ARRAY_TASK_ID + 1))\nexec {shlex.join(reproduction)} --shard "
             f"\"$shard/{count}\" --runs {shlex.quote(str(root))}/shard\"$shard\" --reuse-runs "
             f"{shlex.join(given)}").rstrip()  # fmt: skip
    shards = [str(root / f"shard{index}") for index in range(1, count + 1)]
    merge = shlex.join([*reproduction, "--merge", *shards, "--runs", str(root / "merged"), *given])
    return {
        f"{job}-shards.sbatch": script(f"{job}-shards", logs / f"{job}-shard-%A_%a.out",
                                       shard, f"0-{count - 1}"),
        f"{job}-merge.sbatch": script(f"{job}-merge", logs / f"{job}-merge-%j.out",
                                      f"exec {merge}"),
    }  # fmt: skip


def sbatch(words: list[str], path: Path) -> str:
    """Submit the script `path` with `sbatch --parsable <words>`; its job id."""
    try:
        done = subprocess.run(["sbatch", "--parsable", *words, str(path)], capture_output=True,
                              text=True, timeout=300)  # fmt: skip
    except FileNotFoundError:
        raise SlurmError(NO_SBATCH) from None
    said = (done.stderr.strip() or done.stdout.strip()).splitlines()
    if done.returncode:
        raise SlurmError(f"sbatch refused {path}: {said[-1] if said else done.returncode}")
    return done.stdout.strip().split(";")[0]


def submit(paper: str, args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Write the array's and the merge's scripts under `<run root>/slurm/`, submit the array and
    the merge that waits for it, and print both job ids and where the report will be."""
    if not args.slurm_array or args.slurm_array < 1:
        raise SlurmError("--slurm-options goes with --slurm-array N (N tasks, 1 or more)")
    if args.merge or not args.shard.whole:
        raise SlurmError("--slurm-array submits every shard and the merge: leave out --shard and "
                         "--merge")  # fmt: skip
    options = checked_options(args.slurm_options or "")
    if shutil.which("sbatch") is None:
        raise SlurmError(NO_SBATCH)
    logs = args.runs.absolute() / "slurm"
    logs.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in scripts(paper, args, parser).items():
        write_text_atomic(logs / name, text)
        paths.append(logs / name)
    array = sbatch(options, paths[0])
    try:
        merge = sbatch([f"--dependency=afterok:{array}", *options], paths[1])
    except SlurmError as error:
        raise SlurmError(f"{error}; the array is job {array}: submit the merge once it is fixed: "
                         f"sbatch --dependency=afterok:{array} {shlex.join(options)} "
                         f"{paths[1]}") from None  # fmt: skip
    print(f"submitted {paper} at scale {args.scale} to SLURM: array job {array} ({args.slurm_array}"
          f" tasks, run roots {args.runs.absolute()}/shard1..{args.slurm_array}) and merge job "
          f"{merge} (once every task has succeeded); logs and scripts in {logs}; the report will "
          f"be in {args.out.absolute()}", flush=True)  # fmt: skip
