"""The skeleton every reproduction (`python -m experiments.paperN`) is built on.

- Training runs, each one `python -m experiments fit ...` in a subprocess (`fit`, `run_all`):
  a reproduction trains exactly what a user gets by hand from the same command; the command is
  kept in `<run>/command.txt` and its output in `<run>/train.log`. With `reuse=True` a run whose
  folder holds the same command and a finished test is kept instead of trained again
  (`reused_note` says so in the report).
- Timed stages (`Stopwatch`), the command line every reproduction takes (`reproduction_parser`,
  `reproduction_main`) and the end of every reproduction: `report.md`, `results.json` and the
  W&B run (`publish`).

A paper's module holds only what is the paper's: its scales, run arguments, analyses, claims,
figures and report text.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from experiments.allocator import keep_freed_memory
from experiments.report import Claim, log_to_wandb, verdict_line, write_report
from storage import RunLayout
from storage.files import RunFolderLock, write_text_atomic

PATH_OPTIONS = ("--config", "--run.root", "--data.data_dir", "--data.init_args.data_dir")
"""Options whose value is a path: compared by the file or folder it names, not its spelling."""


def normalised(command: Sequence[str]) -> list[str]:
    """`command` with the values of `PATH_OPTIONS` made absolute, so that `runs` and
    `/abs/path/runs` (or a moved checkout's config path) name the same run."""
    return [
        str(Path(value).resolve()) if index and command[index - 1] in PATH_OPTIONS else value
        for index, value in enumerate(command)
    ]


def same_command(path: Path, command: Sequence[str]) -> bool:
    """The command recorded in `path` is `command` (paths compared by what they name)."""
    try:
        recorded = path.read_text().split("\n")
    except OSError:
        return False
    return normalised(recorded) == normalised(command)


def finished(run: Path, command: Sequence[str]) -> bool:
    """`run` was trained by `command` (the arguments after the interpreter, paths compared by
    what they name) and tested."""
    try:
        same = same_command(RunLayout(run).command, command)
        metrics = pd.read_csv(RunLayout(run).metrics)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return False
    tested = any(c.startswith("test/") and metrics[c].notna().any() for c in metrics.columns)
    checkpoints = [RunLayout(run).checkpoint(tag) for tag in ("best", "last")]
    return same and tested and any(path.is_file() for path in checkpoints)


def fit(run: Path, arguments: Sequence[str], reuse: bool = False) -> bool:
    """Train `run` with `python -m experiments fit <arguments>`, from an empty folder.

    With `reuse`, a finished run of the same command is kept (returns False), and an interrupted
    one (started by the same command, `started.txt`, with a `checkpoints/last.ckpt`) is resumed
    from that checkpoint (`--ckpt_path`), so its metrics and W&B run continue; it ends as an
    uninterrupted run would. Anything else is trained from scratch.
    """
    command = ["-m", "experiments", "fit", *arguments]
    if reuse and finished(run, command):
        return False
    layout = RunLayout(run)
    RunFolderLock(run, purpose="train it again").release()  # a run being written is not deleted
    resume = reuse and same_command(layout.started, command) and layout.checkpoint("last").is_file()
    if not resume:
        shutil.rmtree(run, ignore_errors=True)  # from scratch: no files of old runs
        run.mkdir(parents=True)
        write_text_atomic(layout.started, "\n".join(command))
    resumed = ("--ckpt_path", str(layout.checkpoint("last"))) if resume else ()
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    # Each fit starts its own W&B service, as from a shell: one inherited from this process
    # would keep a killed fit's run open and refuse its resumption ("run ID is in use").
    environment.pop("WANDB_SERVICE", None)
    with open(layout.train_log, "a" if resume else "w") as log:
        done = subprocess.run(
            [sys.executable, *command, *resumed],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=environment,
        )
    if done.returncode:
        raise RuntimeError(f"{run} failed: see {layout.train_log}")
    write_text_atomic(layout.command, "\n".join(command))
    return True


REPOSITORY = Path(__file__).resolve().parents[1]


def portable(arguments: Sequence[str], root: Path) -> list[str]:
    """`arguments` as a run's measurements record them: without `--run.root`, with config paths
    relative to the repository and the run root inside any other value written `$RUNS`, so that
    the same run kept elsewhere (another run root, another checkout) is recognised."""
    kept = []
    for index, value in enumerate(arguments):
        if value == "--run.root" or (index and arguments[index - 1] == "--run.root"):
            continue
        if index and arguments[index - 1] == "--config":
            value = Path(value).resolve().relative_to(REPOSITORY).as_posix()
        kept.append(value.replace(str(root), "$RUNS"))
    return kept


def kept_measurements(layout: RunLayout, command: list[str]) -> dict | None:
    """The run's measurements (`<run>/measurements.json`) if they were taken from the same
    portable `command`, marked `kept` (neither trained nor measured now); else None."""
    if not layout.measurements.is_file():
        return None
    kept = json.loads(layout.measurements.read_text())
    if kept.get("command") != command:
        return None
    return {**kept, "kept": True}


def write_measurements(layout: RunLayout, record: dict) -> dict:
    """Write a run's measurements file (atomically) with the time its training started and
    ended (from its own files) and the time measured; returns the record as written."""
    record = {
        **record,
        "trained": {"started": layout.config.stat().st_mtime,
                    "finished": layout.command.stat().st_mtime},
        "measured": time.time(),
    }  # fmt: skip
    write_text_atomic(layout.measurements, json.dumps(record) + "\n")
    return record


def keep_beside_report(paper: str, runs: Sequence[tuple[str, int]], root: Path, out: Path) -> None:
    """Copy the measurements file of every `(variant, seed)` run of `paper` to `<out>/runs/`,
    laid out as a run root, so that the report can be rebuilt from the repository alone
    (`--runs <out>/runs --reuse-runs`)."""
    for variant, seed in runs:
        source = RunLayout.of(root, paper, variant, seed).measurements
        target = RunLayout.of(out / "runs", paper, variant, seed).measurements
        if source.resolve() != target.resolve():
            write_text_atomic(target, source.read_text())


def kept_note(records: Sequence[dict]) -> str:
    """A report's sentence on when the runs were trained (from their own files: the first run's
    start to the last run's end, and the fits' time summed over every sitting) and on those kept
    from an earlier invocation (`--reuse-runs`: a finished run, or its measurements)."""
    span = max(r["trained"]["finished"] for r in records) - min(
        r["trained"]["started"] for r in records
    )
    summed = sum(r["trained"]["finished"] - r["trained"]["started"] for r in records)
    kept = sum(bool(r.get("kept")) for r in records)
    text = (f" The runs were trained within {span / 60:.1f} min (the first run's start to the "
            f"last run's end; {summed / 3600:.1f} h of fits summed over the runs)")  # fmt: skip
    if not kept:
        return text + "."
    return (f"{text}; {kept} of the {len(records)} were kept from an earlier invocation "
            "(`--reuse-runs`), so this invocation's time above does not include them.")  # fmt: skip


def reused_note(runs: Sequence[Path], began: float) -> str:
    """A report's sentence on the `runs` kept by `--reuse-runs` (finished before `began`, a
    `time.time()`), with the span they were trained in, from their own files ("" if none)."""
    reused = [run for run in runs if RunLayout(run).command.stat().st_mtime < began]
    if not reused:
        return ""
    span = max(RunLayout(run).train_log.stat().st_mtime for run in reused) - min(
        RunLayout(run).config.stat().st_mtime for run in reused
    )
    return (
        f" {len(reused)} of the {len(runs)} runs were finished runs of the same command kept "
        f"from an earlier invocation (`--reuse-runs`), not included above; they were trained "
        f"within {span / 60:.1f} min (from the first run's start to the last run's end)."
    )


def run_all(
    tasks: dict[Hashable, Callable[[], object]],
    jobs: int,
    describe: Callable[[Hashable, object], str] = lambda key, result: str(key),
) -> dict[Hashable, object]:
    """Run `tasks` `jobs` at a time; print one progress line per finished task, with how many
    remain and a naive estimate of the time left (the time so far per finished task, times the
    tasks left: tasks kept from an earlier invocation finish at once and make it low)."""
    results: dict[Hashable, object] = {}
    start = time.time()
    print(f"{len(tasks)} tasks, {jobs} at a time", flush=True)

    def one(key):
        began = time.time()
        results[key] = tasks[key]()
        done, elapsed = len(results), time.time() - start
        left = len(tasks) - done
        estimate = f"; {left} left, about {elapsed / done * left / 60:.1f} min more" if left else ""
        print(
            f"[{done}/{len(tasks)}] {describe(key, results[key])} "
            f"({(time.time() - began) / 60:.1f} min; {elapsed / 60:.1f} min in all{estimate})",
            flush=True,
        )

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, tasks))
    return {key: results[key] for key in tasks}


def reproduction_parser(
    description: str, scales: Sequence[str], out: str
) -> argparse.ArgumentParser:
    """The options every `python -m experiments.paperN` takes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--scale", choices=sorted(scales), default=os.environ.get("SCALE") or "default"
    )
    parser.add_argument("--runs", type=Path, default=Path("runs"), help="root of run folders")
    parser.add_argument("--out", type=Path, default=Path(out))
    parser.add_argument("--jobs", type=int, default=2, help="runs trained at a time")
    parser.add_argument(
        "--reuse-runs",
        action="store_true",
        help="keep finished runs whose command.txt matches instead of training them again, and "
        "resume interrupted ones of the same command from their last.ckpt",
    )
    return parser


def reproduction_main(
    description: str,
    scales: Sequence[str],
    out: str,
    reproduce: Callable[[str, Path, Path, int, bool], list[Claim]],
    argv: list[str] | None = None,
) -> list[Claim]:
    """Parse a reproduction's command line (`reproduction_parser`), run `reproduce(scale, runs,
    out, jobs, reuse)` and print the verdict line of the report it wrote."""
    args = reproduction_parser(description, scales, out).parse_args(argv)
    keep_freed_memory()  # for the analyses run in this process; each fit sets its own
    claims = reproduce(args.scale, args.runs, args.out, args.jobs, args.reuse_runs)
    print(verdict_line(args.out / "report.md", claims))
    return claims


class Stopwatch:
    """The wall time of a reproduction's stages: `with clock.stage("training"): ...`."""

    def __init__(self) -> None:
        self.began = time.time()
        self.minutes: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.time()
        try:
            yield
        finally:
            self.minutes[name] = (time.time() - start) / 60

    @property
    def total(self) -> float:
        return sum(self.minutes.values())

    def stages(self) -> str:
        """`training 12.3 min, analyses 1.0 min`."""
        return ", ".join(f"{name} {value:.1f} min" for name, value in self.minutes.items())


def publish(
    out: Path,
    paper: str,
    claims: Sequence[Claim],
    markdown: str,
    root: Path,
    figures: dict[str, Path],
    tables: dict[str, pd.DataFrame],
) -> Path:
    """The end of every reproduction: `report.md` and `results.json` in `out`, and the figures and
    tables as the W&B run `<paper>/report`. Returns the report's path."""
    report = write_report(out, claims, markdown)
    log_to_wandb(root, paper, figures, tables)
    return report
