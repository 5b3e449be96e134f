"""The skeleton every reproduction (`python -m experiments.paperN`) is built on.

- Training runs, each one `python -m experiments fit ...` in a subprocess (`fit`, `run_all`):
  a reproduction trains exactly what a user gets by hand from the same command; the command is
  kept in `<run>/command.txt` and its output in `<run>/train.log`. With `reuse=True` a run whose
  folder holds the same command and a finished test is kept instead of trained again
  (`kept_note` says so in the report). Each fit's sittings are recorded, and a stopped
  reproduction ends its fits, by `experiments.sittings`.
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
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from experiments.allocator import keep_freed_memory
from experiments.committed import (
    CommittedFileError,
    check_out,
    default_out,
    refuse_deleting_committed,
    write_build,
)
from experiments.engine.cli import reproduction_parser
from experiments.engine.shard import Shard
from experiments.report import Claim, log_to_wandb, verdict_line, write_report
from experiments.rule_dates import ReportHistory, dated, dates_section
from experiments.sittings import (
    STOPPING,
    fit_time,
    read_sittings,
    stopping_gently,
    timed_sitting,
)
from storage import RunLayout
from storage.files import RunFolderLock, delete_entry, open_own, write_text_atomic

PATH_OPTIONS = ("--config", "--run.root", "--data.data_dir", "--data.init_args.data_dir")
"""Options whose value is a path: compared by the file or folder it names, not its spelling."""
SIGNAL_CHECK = 0.25
"""Seconds the main thread waits at most at a time while tasks run (`run_in_threads`): how late a
stopping signal that the kernel hands to another thread is handled."""


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


def fit_command(arguments: Sequence[str]) -> list[str]:
    """The interpreter's arguments of the fit `arguments` (`python -m experiments fit ...`), as
    `command.txt` and `started.txt` record them (what `finished` compares)."""
    return ["-m", "experiments", "fit", *arguments]


def fit(run: Path, arguments: Sequence[str], reuse: bool = False,
        keep_measurements: bool = False) -> bool:  # fmt: skip
    """Train `run` with `python -m experiments fit <arguments>`, from an empty folder (but its
    `measurements.json` with `keep_measurements`: the kept measurements of a run trained again,
    which a kill during the fit must not lose, `experiments.measured`).

    With `reuse`, a finished run of the same command is kept (returns False), and an interrupted
    one (started by the same command, `started.txt`, with a `checkpoints/last.ckpt`) is resumed
    from that checkpoint (`--ckpt_path`), so its metrics and W&B run continue; it ends as an
    uninterrupted run would. Anything else is trained from scratch. Each sitting's time is
    recorded in `sittings.json` (`timed_sitting`).
    """
    command = fit_command(arguments)
    if reuse and finished(run, command):
        return False
    if STOPPING.is_set():
        raise RuntimeError(f"{run} was not started: its reproduction is stopping")
    layout = RunLayout(run)
    resume = reuse and same_command(layout.started, command) and layout.checkpoint("last").is_file()
    if not resume:
        refuse_deleting_committed(run, "train it from scratch")
    RunFolderLock(run, purpose="train it again").release()  # a run being written is not deleted
    if not resume:  # from scratch: no files of old runs
        kept = (layout.measurements,) if keep_measurements else ()
        for entry in sorted(run.iterdir()) if run.is_dir() else ():
            if entry not in kept:
                delete_entry(entry)
        run.mkdir(parents=True, exist_ok=True)
        write_text_atomic(layout.started, "\n".join(command))
    resumed = ("--ckpt_path", str(layout.checkpoint("last"))) if resume else ()
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    # Each fit starts its own W&B service, as from a shell: one inherited from this process
    # would keep a killed fit's run open and refuse its resumption ("run ID is in use").
    environment.pop("WANDB_SERVICE", None)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if resume else os.O_TRUNC)
    earlier = read_sittings(layout.sittings) if resume else []  # a bad file: before the fit
    with (
        os.fdopen(open_own(layout.train_log, flags), "w") as log,
        subprocess.Popen([sys.executable, *command, *resumed], stdout=log,
                         stderr=subprocess.STDOUT, env=environment) as process,
    ):  # fmt: skip
        returncode = timed_sitting(process, layout.sittings, earlier)  # ends the fit if stopped
    if returncode:
        raise RuntimeError(f"{run} failed{last_error(layout)}: see {layout.train_log}")
    write_text_atomic(layout.command, "\n".join(command))
    return True


def last_error(layout: RunLayout) -> str:
    """`: <the fit's last line of output>` (its one-line error), or nothing where it has none."""
    try:
        lines = layout.train_log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return f" ({lines[-1].strip()})" if lines else ""


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


def read_measurements(layout: RunLayout) -> dict | None:
    """The run's measurements file (`<run>/measurements.json`), None where there is none; a file
    that is not a measurements record (cut short, edited) stops the reproduction in one line."""
    try:
        text = layout.measurements.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise SittingError(
            f"{layout.measurements} cannot be read ({error}): fix or delete it"
        ) from None
    try:
        record = json.loads(text)
    except ValueError as error:
        raise SittingError(
            f"{layout.measurements} is not valid JSON ({error.args[0]}; cut short?): restore it "
            "(git checkout, or a shard's copy), or delete it to measure the run again"
        ) from None
    if not isinstance(record, dict) or not isinstance(record.get("command"), list):
        raise SittingError(
            f"{layout.measurements} is not a run's measurements (no command list): restore it, "
            "or delete it to measure the run again"
        )
    return record


def kept_measurements(layout: RunLayout, command: list[str]) -> dict | None:
    """The run's measurements (`read_measurements`) marked `kept` (neither trained nor measured
    now); None where it has none. Measurements from another command stop the reproduction naming
    both commands: they are never replaced by a retrain that deletes them."""
    kept = read_measurements(layout)
    if kept is None:
        return None
    if kept["command"] != command:
        raise SittingError(different_command(layout, kept["command"], command))
    return {**kept, "kept": True}


def different_command(layout: RunLayout, recorded: list[str], command: list[str]) -> str:
    """One line naming a kept run's command and the one asked for, by their first difference."""
    at = next((i for i, (a, b) in enumerate(zip(recorded, command, strict=False)) if a != b),
              min(len(recorded), len(command)))  # fmt: skip
    if at and command[at - 1].startswith("--"):  # from the option whose value differs
        at -= 1
    return (
        f"{layout.measurements} was measured from another command than this reproduction's "
        f"(from argument {at}: kept {' '.join(recorded[at : at + 4]) or '(end)'} ..., asked "
        f"{' '.join(command[at : at + 4]) or '(end)'} ...): rebuild with the settings it records "
        "(scale, data), or train into another --runs, or delete its folder to train it again"
    )


def write_measurements(layout: RunLayout, record: dict, trained: dict | None = None) -> dict:
    """Write a run's measurements file (atomically) with when it was trained (`trained`, else
    `fit_time` from its own files) and the time measured; returns the record as written."""
    trained = trained or fit_time(layout)
    record = {**record, "trained": trained, "measured": time.time()}
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


def fit_seconds(trained: dict[str, float]) -> float:
    """A run's training time (`fit_time`): summed over its sittings where they were recorded,
    else its start to its end."""
    return trained.get("seconds", trained["finished"] - trained["started"])


def kept_note(records: Sequence[dict]) -> str:
    """A report's sentence on when the runs were trained (from their own files: the first run's
    start to the last run's end, the fits' time summed over every sitting, and their CPU time
    where recorded), on those kept from an earlier invocation (`--reuse-runs`: a finished run,
    or its measurements) and on the devices they trained on (`devices_note`)."""
    span = max(r["trained"]["finished"] for r in records) - min(
        r["trained"]["started"] for r in records
    )
    summed = sum(fit_seconds(r["trained"]) for r in records)
    kept = sum(bool(r.get("kept")) for r in records)
    unrecorded = sum("seconds" not in r["trained"] for r in records)
    text = (f" The runs were trained within {span / 60:.1f} min (the first run's start to the "
            f"last run's end; {summed / 3600:.1f} h of fits summed over the runs and their "
            "sittings")  # fmt: skip
    if unrecorded:
        text += (f"; {unrecorded} of them were trained before sittings were recorded, so a "
                 "resumed one counts from its last sitting's start")  # fmt: skip
    cpu = [r["trained"]["cpu_seconds"] for r in records if "cpu_seconds" in r["trained"]]
    if cpu:  # leaves out pauses and waits for a core, which the span counts
        text += (f"; the fits' CPU time, recorded for {len(cpu)} of the runs: "
                 f"{sum(cpu) / 3600:.1f} h")  # fmt: skip
    text += ")"
    if kept:
        text += (f"; {kept} of the {len(records)} were kept from an earlier invocation "
                 "(`--reuse-runs`), so this invocation's time above does not include "
                 "them")  # fmt: skip
    return text + "." + devices_note(records)


def devices_note(records: Sequence[dict]) -> str:
    """Where the runs were trained (their sittings' `devices`, `sittings.fit_time`): how many on
    each device, those trained on several and those trained before devices were recorded; empty
    where no run recorded one."""
    named = [r["trained"]["devices"] for r in records if r["trained"].get("devices")]
    if not named:
        return ""
    counts = Counter(devices[0] for devices in named if len(devices) == 1)
    parts = [f"{count} on {device}" for device, count in sorted(counts.items())]
    mixed = sum(len(devices) > 1 for devices in named)
    if mixed:
        parts.append(f"{mixed} resumed on another device than they started on")
    if len(named) < len(records):
        parts.append(f"{len(records) - len(named)} before devices were recorded")
    return " Trained: " + ", ".join(parts) + "."


def recorded_seconds(result: object) -> float | None:
    """A task's result's own record of its fit's time (`fit_seconds` of a measurements record's
    `trained`: summed over its sittings), or None where it has none."""
    trained = result.get("trained") if isinstance(result, dict) else None
    return fit_seconds(trained) if isinstance(trained, dict) else None


def run_all(
    tasks: dict[Hashable, Callable[[], object]],
    jobs: int,
    describe: Callable[[Hashable, object], str] = lambda key, result: str(key),
    done_before: Callable[[Hashable], bool] = lambda key: False,
    label: Callable[[Hashable], str] | None = None,
) -> dict[Hashable, object]:
    """Run `tasks` `jobs` at a time; returns their results in the tasks' order.

    The tasks `done_before` says an earlier invocation finished are read back first (taking no
    time); then it prints how many tasks there are, how many were done before, which remain and
    an estimate of the time they take, and after each task how many remain and the estimate
    again. The estimate is a task's mean time, times the tasks left to compute, over `jobs`. A
    task's time is its wall time here, or its fit's recorded time over every sitting
    (`recorded_seconds`) where that is longer (a run resumed here); until one is computed here,
    the mean of the recorded times of those done before; with neither, unknown. After a task
    fails, no other one starts; those running finish, then its exception is raised.
    Tasks are named by `label` (default: keys `(variant, seed)`).
    """
    if label is None:
        label = lambda key: f"{key[0]} seed={key[1]}" if isinstance(key, tuple) else str(key)  # noqa: E731
    kept = {key: tasks[key]() for key in tasks if done_before(key)}
    pending = [key for key in tasks if key not in kept]
    results: dict[Hashable, object] = {}
    computed: list[float] = []
    before = [s for s in map(recorded_seconds, kept.values()) if s is not None]
    start = time.time()

    def estimate() -> str:
        """The time the tasks left to compute take, or why it is not known."""
        to_compute = len(pending) - len(computed)
        times = computed or before
        if not times:
            return "time unknown until one is computed here"
        minutes = sum(times) / len(times) * to_compute / min(jobs, to_compute) / 60
        return f"about {minutes:.1f} min" + ("" if computed else ", from the recorded fit "
                                             "times of those done before")  # fmt: skip

    print(f"{len(tasks)} tasks, {jobs} at a time; {len(kept)} done before, {len(pending)} to run"
          + (": " + ", ".join(map(label, pending)) + "; " + estimate() if pending else ""),
          flush=True)  # fmt: skip
    for key, result in kept.items():  # in the tasks' order
        results[key] = result
        print(f"[{len(results)}/{len(tasks)}] {describe(key, result)} (done before)", flush=True)

    def one(key):
        began = time.time()
        results[key] = tasks[key]()
        wall = time.time() - began
        computed.append(max(wall, recorded_seconds(results[key]) or 0.0))
        left = len(tasks) - len(results)
        more = f"; {left} left, {estimate()} more" if left else ""
        print(f"[{len(results)}/{len(tasks)}] {describe(key, results[key])} ({wall / 60:.1f} min; "
              f"{(time.time() - start) / 60:.1f} min in all{more})", flush=True)  # fmt: skip

    run_in_threads(one, pending, jobs)
    return {key: results[key] for key in tasks}


def run_in_threads(task: Callable[[Hashable], None], keys: list[Hashable], jobs: int) -> None:
    """`task(key)` for every key, `jobs` threads at a time. Once a task fails or an exception stops
    this thread (a signal's, from `experiments.sittings.stopping_gently`), no other task begins,
    and the exception is raised only after the tasks begun have ended.

    Around `ThreadPoolExecutor` by hand, for two of its ways with signals: its `submit` records a
    worker thread only after starting it, so a signal handled while a worker started left
    `shutdown` not waiting for that worker's task (the reproduction left `stopping_gently`, its
    handlers restored and `STOPPING` cleared, with the task running); and its waits have no
    timeout, so a signal the kernel hands to a worker thread was not handled until the main
    thread woke. Every wait here is timed (`SIGNAL_CHECK` seconds)."""
    workers: list[threading.Thread] = []
    abandoned = threading.Event()  # a task failed or this thread stopped waiting: none begins after

    def begin(key: Hashable) -> None:
        if abandoned.is_set():
            return
        try:
            task(key)
        except BaseException:
            abandoned.set()
            raise

    # Each worker records itself before it takes its first task.
    pool = ThreadPoolExecutor(jobs, initializer=lambda: workers.append(threading.current_thread()))
    try:
        futures = [pool.submit(begin, key) for key in keys]
        while True:
            done, running = wait(futures, SIGNAL_CHECK, return_when=FIRST_EXCEPTION)
            if not running or any(future.exception() for future in done):
                break
        for future in futures:
            if future.done():
                future.result()  # the first exception, in the tasks' order
    finally:
        abandoned.set()
        pool.shutdown(wait=False, cancel_futures=True)
        for worker in list(workers):
            while worker.is_alive():
                worker.join(SIGNAL_CHECK)


class SittingError(RuntimeError):
    """A sitting asked for what it cannot do (a run missing from the merged run roots, a
    split of a reproduction without per-run measurements): one line to the user."""


@dataclass(frozen=True)
class Sitting:
    """One invocation of a reproduction: the run root, how many runs at a time, whether runs and
    measurements of an earlier invocation are kept (`--reuse-runs`), which shard of the runs it
    trains, and the run roots merged into `root` (then nothing is trained: every run must have
    its measurements)."""

    root: Path
    jobs: int = 2
    reuse: bool = False
    shard: Shard = Shard()
    merged: tuple[Path, ...] = ()
    cannot_train: str = ""
    """Why no run can be trained in this sitting (paper 1 offline, its data only recorded by its
    runs); empty where runs can be."""

    def kept(self, layout: RunLayout, arguments: Sequence[str]) -> dict | None:
        """The run's measurements from an earlier invocation of the same command (`reuse`);
        merging, a run without them stops the reproduction naming it."""
        kept = kept_measurements(layout, portable(arguments, self.root)) if self.reuse else None
        if kept is None and self.merged:
            roots = " ".join(map(str, self.merged))
            raise SittingError(
                f"{layout.path.relative_to(self.root)} has no measurements from its command in "
                f"any merged run root ({roots}): run the shard that holds it to the end (with "
                "--reuse-runs) and merge again"
            )
        return kept


def gather_measurements(paper: str, roots: Sequence[Path], target: Path) -> int:
    """Copy every run's measurements file of `paper` from the run `roots` (shards run elsewhere)
    into the run root `target`, laid out as there; returns how many. A run measured differently
    in two roots stops it, naming both files."""
    copied: dict[Path, Path] = {}
    for root in roots:
        if not (root / paper).is_dir():
            raise SittingError(f"{root} holds no runs of {paper} (no folder {root / paper})")
        for source in sorted((root / paper).rglob(RunLayout.MEASUREMENTS)):
            relative = source.relative_to(root)
            if relative in copied and copied[relative].read_text() != source.read_text():
                raise SittingError(
                    f"{copied[relative]} and {source} are measurements of one run that differ: "
                    "keep one of them"
                )
            copied.setdefault(relative, source)
    for relative, source in copied.items():
        if source.resolve() != (target / relative).resolve():
            write_text_atomic(target / relative, source.read_text())
    return len(copied)


def sitting_of(args: argparse.Namespace, paper: str) -> Sitting:
    """The `Sitting` a reproduction's parsed command line asks for; with `--merge`, after
    gathering the shards' measurements into `--runs`."""
    if args.merge and not args.shard.whole:
        raise SittingError("--merge writes the report from every shard: leave out --shard")
    if args.merge:
        count = gather_measurements(paper, args.merge, args.runs)
        print(f"merged {count} runs' measurements from {len(args.merge)} run roots into "
              f"{args.runs}", flush=True)  # fmt: skip
    return Sitting(args.runs, args.jobs, args.reuse_runs or bool(args.merge), args.shard,
                   tuple(args.merge))  # fmt: skip


def reproduction_main(
    description: str,
    scales: Sequence[str],
    out: str,
    reproduce: Callable[[str, Path, Sitting], list[Claim] | None],
    argv: list[str] | None = None,
    parser: argparse.ArgumentParser | None = None,
) -> list[Claim] | None:
    """Parse a reproduction's command line (`reproduction_parser`, or `parser` built on it), run
    `reproduce(scale, out, sitting)` and print the verdict line of the report it wrote; a shard
    writes no report (`reproduce` returns None) and says how to merge."""
    parser = parser or reproduction_parser(description, scales, out)
    args = parser.parse_args(argv)
    paper = Path(out).name
    keep_freed_memory()  # for the analyses run in this process; each fit sets its own
    reports = REPOSITORY / Path(out).parent
    args.out = args.out or default_out(paper, args.scale, args.runs, reports)
    try:
        check_out(args.out, paper, args.scale, args.replace_report)
        sitting = sitting_of(args, paper)
        with stopping_gently():
            claims = reproduce(args.scale, args.out, sitting)
    except (SittingError, CommittedFileError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    if claims is None:
        print(f"shard {sitting.shard} of {paper}: its runs are measured under {sitting.root}. "
              f"When every shard is done, write the report from all of them: python -m "
              f"experiments.{paper} --scale {args.scale} --merge <each shard's run root> "
              f"--runs <merged root>", flush=True)  # fmt: skip
        return None
    write_build(args.out, paper, args.scale)
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
    records: Sequence[dict] = (),
) -> Path:
    """The end of every reproduction: `report.md` and `results.json` in `out`, each claim dated
    (`rule_dates`: against the committed report's history and the runs' `records`), and the
    figures and tables as the W&B run `<paper>/report`. Returns the report's path."""
    history = ReportHistory.of(REPOSITORY, f"reports/{paper}/results.json")
    claims = dated(claims, history)
    finished = max((r["trained"]["finished"] for r in records), default=None)
    dates = "" if finished is None else dates_section(claims, history, finished)
    report = write_report(out, claims, markdown, dates)
    log_to_wandb(root, paper, figures, tables)
    return report
