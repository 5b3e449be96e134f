"""One training run: `python -m experiments fit ...` in a process of its own, started warm
(`experiments.engine.launch`: forked from a server that has imported torch and Lightning once per
reproduction, not a new interpreter for each fit), so a reproduction trains exactly what a user
gets by hand from the same command. The command is kept in
`<run>/command.txt` and its output in `<run>/train.log`; with `reuse` a run whose folder holds the
same command and a finished test is kept instead of trained again, and an interrupted one resumes
from its last checkpoint. Each sitting's time is recorded by `experiments.engine.sittings`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from experiments.engine.committed import refuse_deleting_committed
from experiments.engine.launch import WarmPopen, fit_environment
from experiments.engine.sittings import STOPPING, read_sittings, timed_sitting
from experiments.engine.store import portable
from storage import RunLayout
from storage.files import RunFolderLock, delete_entry, open_own, write_text_atomic
from storage.layout import SCALE_ENV

PATH_OPTIONS = ("--config", "--run.root", "--data.data_dir", "--data.init_args.data_dir")
"""Options whose value is a path: compared by the file or folder it names, not its spelling."""


def normalised(command: Sequence[str]) -> list[str]:
    """`command` as two runs' commands are compared: the values of `PATH_OPTIONS` by what they
    name, the run root left out (a run folder copied under another root is the same run) and
    config paths by `store.config_name` (a run trained in another checkout is too)."""
    resolved = [
        str(Path(value).resolve()) if index and command[index - 1] in PATH_OPTIONS else value
        for index, value in enumerate(command)
    ]
    roots = [resolved[i + 1] for i in range(len(resolved) - 1) if resolved[i] == "--run.root"]
    return portable(resolved, Path(roots[-1]) if roots else None)


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


def resumable(layout: RunLayout, command: Sequence[str]) -> bool:
    """The run was started by `command` and has a last checkpoint to resume from."""
    return same_command(layout.started, command) and layout.checkpoint("last").is_file()


def left_to_compute(run: Path, arguments: Sequence[str], reuse: bool) -> str | None:
    """What an earlier invocation left of `run` to compute, as a reproduction's progress line
    names it: its measurement alone (trained by the same command, which `fit` keeps) or the
    rest of its fit (which `fit` resumes); None where it starts from scratch, or without
    `reuse`."""
    if not reuse:
        return None
    command = fit_command(arguments)
    if finished(run, command):
        return "trained before: measured only"
    if resumable(RunLayout(run), command):
        return "its fit resumes from its last checkpoint"
    return None


def fit_command(arguments: Sequence[str]) -> list[str]:
    """The interpreter's arguments of the fit `arguments` (`python -m experiments fit ...`), as
    `command.txt` and `started.txt` record them (what `finished` compares)."""
    return ["-m", "experiments", "fit", *arguments]


@contextmanager
def fits_at_scale(scale: str) -> Iterator[None]:
    """Within it, every fit started is told the scale of its reproduction (`SCALE_ENV`), which
    the fit's W&B run records in its config (`run.scale`)."""
    before = os.environ.get(SCALE_ENV)
    os.environ[SCALE_ENV] = scale
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(SCALE_ENV, None)
        else:
            os.environ[SCALE_ENV] = before


def fit(run: Path, arguments: Sequence[str], reuse: bool = False,
        keep_measurements: bool = False) -> bool:  # fmt: skip
    """Train `run` with `python -m experiments fit <arguments>`, from an empty folder (but its
    `measurements.json` with `keep_measurements`: the kept measurements of a run trained again,
    which a kill during the fit must not lose, `experiments.engine.measure`).

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
    resume = reuse and resumable(layout, command)
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
    environment = fit_environment(os.environ)  # one core, its own W&B service
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if resume else os.O_TRUNC)
    earlier = read_sittings(layout.sittings) if resume else []  # a bad file: before the fit
    with (
        os.fdopen(open_own(layout.train_log, flags), "w") as log,
        WarmPopen([*command, *resumed], log.fileno(), environment) as process,
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
