"""The work of `python -m probes <probe>` once its command line is parsed (`probes.command.cli`):
planning the tasks, computing and caching their results over processes or devices, and writing
the table, summary and figures. The module docstring of `probes.command.cli` says what a user
gets."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from probes.command.base import RECORDED, RunProbe, is_recorded
from probes.command.outputs import (
    log_to_wandb,
    markdown_table,
    require_format,
    save_table,
    short_names,
)
from probes.command.registry import PROBES
from probes.command.registry import probe as registered
from storage.files import RunFileError, write_text_atomic
from storage.run_folder import RunFolder

VERSION = 1  # bump when a probe's results change for the same inputs
RESULT_FIELDS = ("probe", "run", "tag", "options", "rows")  # what `work` stores


class ProbeInputError(RuntimeError):
    """Input the command cannot use; the message names it and the fix."""


class UnreadableResult(RuntimeError):
    """A stored result that is there but not whole; the message says what is wrong with it."""


@dataclass(frozen=True)
class Task:
    """One result to compute: `probe` with `options` on `run` at checkpoint `tag`."""

    run: str
    tag: str
    key: str


# ---- planning: runs, tags, keys ----------------------------------------------------------------
def matching_runs(patterns: list[str]) -> list[str]:
    """Run folders matching the globs, in order, each once; a glob matching none is an error."""
    runs: list[str] = []
    for pattern in patterns:
        found = sorted(p for p in glob.glob(pattern) if Path(p).is_dir())
        if not found:
            raise ProbeInputError(
                f"--runs {pattern!r} matches no run folder: give the folders that "
                "`python -m experiments fit` wrote (e.g. 'runs/paper1/*/seed=*', quoted)."
            )
        runs += [p for p in found if p not in runs]
    return runs


def chosen_tags(spec: str, available: list[str], where: str) -> list[str]:
    """The tags `--checkpoint spec` picks among `available`."""
    if spec == "all" and available:
        return available
    if spec in available:
        return [spec]
    epochs = [t for t in available if re.fullmatch(r"epoch=\d+", t)]
    if spec == "last" and epochs:
        return [epochs[-1]]
    raise RunFileError(
        f"{where} has no checkpoint {spec!r} (it has {', '.join(available) or 'none'}): pick one "
        "of those with --checkpoint, or record it (see the TraceRecorder and WeightSnapshot "
        "callbacks)."
    )


_DIGESTS: dict[tuple, str] = {}


def file_digest(path: Path) -> str:
    """sha256 of a file's contents (remembered by path, size and modification time)."""
    stat = path.stat()
    memo = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if memo not in _DIGESTS:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while block := handle.read(1 << 22):
                digest.update(block)
        _DIGESTS[memo] = digest.hexdigest()
    return _DIGESTS[memo]


def task_key(probe: RunProbe, options, files: list[Path]) -> str:
    """The hash a result is stored under: probe, version, options and input contents."""
    inputs = {
        "probe": probe.name,
        "version": [VERSION, probe.version],
        "options": asdict(options),
        "files": [file_digest(path) for path in files],
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:32]


def refuse_recorded(probe: RunProbe, run: RunFolder) -> None:
    """One line for a probe that cannot run on a run `record_run` wrote, naming those that can."""
    if is_recorded(run) and not probe.reads_recorded:
        can = ", ".join(name for name in PROBES if registered(name).reads_recorded)
        raise RunFileError(
            f"{run.path} was recorded from a model of your own (its {RECORDED}): {probe.name} "
            "runs a model the suite trained, from its checkpoint, which a recorded run has not; "
            f"on a recorded run, run {can} (the probes of its traces and weights), or call the "
            "probe's functions on your model (docs/own_model.md)."
        )


def planned_tasks(probe: RunProbe, options, arguments) -> tuple[list[Task], list[str]]:
    """Every (run, tag) of the command, each checked (files there, readable, the right model);
    a problem stops the command, or with --keep-going becomes a failure listed at the end."""
    tasks, failures = [], []
    for path in matching_runs(arguments.runs):
        try:
            run = RunFolder(path, arguments.trust_class)
            refuse_recorded(probe, run)
            available = probe.tags(run, options)
            for tag in chosen_tags(arguments.checkpoint, available, probe.where(run, options)):
                probe.check(run, tag, options)
                tasks.append(
                    Task(path, tag, task_key(probe, options, probe.reads(run, tag, options)))
                )
        except RunFileError as error:
            if not arguments.keep_going:
                raise
            failures.append(f"{path}: {error}")
    return tasks, failures


# ---- the work, in one or several processes -----------------------------------------------------
def result_path(cache: Path, probe: RunProbe, key: str) -> Path:
    return cache / probe.name / f"{key}.json"


def stored_rows(path: Path, probe: RunProbe) -> list[dict] | None:
    """The rows of `probe`'s result stored at `path` (keyed by content: a copied run shares its
    original's), or None where nothing is stored; a file that does not parse, lacks the fields
    `work` writes, or whose rows hold other than numbers and text raises UnreadableResult."""
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UnreadableResult(error.strerror or str(error)) from None
    except ValueError as error:  # json.JSONDecodeError, UnicodeDecodeError
        raise UnreadableResult(f"not JSON: {error}") from None
    if not isinstance(record, dict):
        raise UnreadableResult(f"a JSON {type(record).__name__}, not an object")
    missing = [name for name in RESULT_FIELDS if name not in record]
    if missing:
        raise UnreadableResult(f"no {', '.join(map(repr, missing))}")
    if record["probe"] != probe.name:
        raise UnreadableResult(f"a result of probe {record['probe']!r}")
    rows = record["rows"]
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise UnreadableResult("'rows' is not a list of objects")
    if not all(isinstance(v, SCALARS) for row in rows for v in row.values()):
        raise UnreadableResult("a row holds a value that is neither a number nor text")
    return rows


SCALARS = (str, int, float, bool, type(None))
"""What a stored row's values may be (JSON's numbers, text, booleans and null)."""


def odd_fields(stored: dict[str, list[dict]]) -> dict[str, str]:
    """The stored results that lack a field every other stored result's rows have (at least two
    others), by key, with the reason; a table whose only result lacks one is refused when it is
    summarised (`summarised`)."""
    fields_of = {key: set().union(*rows) for key, rows in stored.items() if rows}
    odd = {}
    for key, found in fields_of.items():
        others = [fields for other, fields in fields_of.items() if other != key]
        missing = set.intersection(*others) - found if len(others) >= 2 else set()
        if missing:
            odd[key] = f"its rows lack {', '.join(sorted(missing))}, which the others have"
    return odd


def stored_results(probe: RunProbe, cache: Path, tasks: list[Task]) -> dict[str, list[dict]]:
    """The rows of each of `tasks` whose result is stored whole, by key. One that is stored but
    not whole (a truncated file, say) is deleted, with one warning line, to be computed again."""
    stored, unreadable = {}, {}
    for task in tasks:
        try:
            rows = stored_rows(result_path(cache, probe, task.key), probe)
            if rows is not None:
                stored[task.key] = rows
        except UnreadableResult as error:
            unreadable[task.key] = str(error)
    unreadable.update(odd_fields(stored))
    for key, reason in unreadable.items():
        path = result_path(cache, probe, key)
        print(f"discarding unreadable stored result {path} ({reason}): computing it again",
              file=sys.stderr, flush=True)  # fmt: skip
        path.unlink(missing_ok=True)
        stored.pop(key, None)
    return stored


def run_command(probe: RunProbe, options, arguments) -> int:
    started = time.perf_counter()
    out: Path = arguments.out
    cache: Path = arguments.cache or out / "cache"
    require_format(arguments.format)
    require_writable({"--out": out, "--cache": cache})
    tasks, failures = planned_tasks(probe, options, arguments)
    stored = stored_results(probe, cache, tasks)
    pending = [t for t in tasks if t.key not in stored]
    print(
        f"{probe.name}: {len(tasks)} results ({len({t.run for t in tasks})} runs), "
        f"{len(tasks) - len(pending)} already stored, {len(pending)} to compute on "
        f"{arguments.devices} {arguments.accelerator} process(es)",
        flush=True,
    )
    if pending:
        failures += spread(probe, options, pending, cache, arguments)
    if failures and not arguments.keep_going:
        raise ProbeInputError(failures[0])
    table = result_table(probe, cache, tasks, stored)
    written = write_outputs(probe, options, table, out, arguments)
    print(f"wrote {', '.join(str(p) for p in written)} in {time.perf_counter() - started:.1f} s")
    if failures:
        print(f"{len(failures)} failed (--keep-going):", *failures, sep="\n  ", file=sys.stderr)
        return 1
    return 0


def require_writable(folders: dict[str, Path]) -> None:
    """Create each folder (`{flag: folder}`) and write and remove a small file in it, before any
    work: one that cannot be written is one ProbeInputError, and the folders made here are
    removed again, so that nothing is left behind."""
    made: list[Path] = []  # deepest first
    for flag, folder in folders.items():
        new = [p for p in (folder, *folder.parents) if not p.exists()]
        made = new + made
        try:
            folder.mkdir(parents=True, exist_ok=True)
            handle, name = tempfile.mkstemp(dir=folder, prefix=".probes-write-test.")
            try:
                os.write(handle, b"probes\n")
            finally:
                os.close(handle)
                os.unlink(name)
        except OSError as error:
            for path in made:
                try:
                    path.rmdir()
                except OSError:  # not made after all, or no longer empty: leave it
                    pass
            raise ProbeInputError(
                f"cannot write to {flag} {folder} ({error.strerror or error}): choose a folder "
                "you can write to"
            ) from None


def spread(probe: RunProbe, options, tasks: list[Task], cache: Path, arguments) -> list[str]:
    """Compute `tasks` on `--devices` processes through Fabric; the failures' messages."""
    from lightning_fabric import Fabric
    from lightning_fabric.plugins.environments import LightningEnvironment

    session = cache / ".sessions" / uuid.uuid4().hex
    (session / "claims").mkdir(parents=True)
    (session / "failed").mkdir()
    try:
        try:
            # The probe's processes are this machine's own: no cluster to detect (on a machine with
            # SLURM's `srun`, Lightning would otherwise warn that it is not used).
            fabric = Fabric(
                accelerator=arguments.accelerator,
                devices=arguments.devices,
                strategy="ddp_spawn" if arguments.devices > 1 else "auto",
                plugins=[LightningEnvironment()],
            )
        except Exception as error:  # Lightning's MisconfigurationException and friends
            raise ProbeInputError(
                f"--devices {arguments.devices} --accelerator {arguments.accelerator} is not "
                f"available here ({error}): ask for fewer devices or use --accelerator cpu."
            ) from None
        # plain values only: Fabric's launcher rebuilds dataclasses field by field
        plan = [tuple(asdict(t).values()) for t in tasks]
        try:
            fabric.launch(work, probe.name, asdict(options), plan, str(cache), str(session),
                          arguments.keep_going, arguments.trust_class)  # fmt: skip
        except Exception as error:  # torch.multiprocessing's ProcessRaised/ExitedException
            if arguments.devices == 1:
                raise
            raise ProbeInputError(
                f"a probe process stopped ({str(error).strip().splitlines()[-1]}); the results "
                "it stored are kept: run the same command again to finish."
            ) from None
        return [
            json.loads(p.read_text())["message"] for p in sorted((session / "failed").iterdir())
        ]
    finally:
        shutil.rmtree(session, ignore_errors=True)


def work(fabric, probe_name: str, settings: dict, plan: list[tuple], cache: str, session: str,
         keep_going: bool, trusted_classes: list[str]) -> None:  # fmt: skip
    """One process's share: claim the next unclaimed task, compute it, store it; stop claiming
    after a failure unless `keep_going`. `trusted_classes`: `--trust-class`. On a CPU the process
    takes its share of the cores (`core_share`) and BLAS one thread while it works, and gets its
    own torch thread count back after (a process that runs the command in itself, a notebook or
    a test, keeps its count: with another one its later sums run in another order)."""
    import torch
    from threadpoolctl import threadpool_limits

    probe = registered(probe_name)
    options = probe.options(**settings)
    tasks = [Task(*task) for task in plan]
    cache, session = Path(cache), Path(session)
    threads = torch.get_num_threads()
    if fabric.device.type == "cpu":  # share the cores; one BLAS thread keeps results identical
        torch.set_num_threads(core_share(fabric.world_size))
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            for number, task in enumerate(tasks, 1):
                if not keep_going and any((session / "failed").iterdir()):
                    break
                target = result_path(cache, probe, task.key)
                if target.is_file() or not claimed(session / "claims" / task.key):
                    continue
                started = time.perf_counter()
                try:
                    run = RunFolder(task.run, trusted_classes)
                    rows = probe.rows(run, task.tag, options, fabric.device)
                except Exception as error:
                    failure(session, task, error)
                    continue
                record = {"probe": probe.name, "run": task.run, "tag": task.tag,
                          "options": asdict(options), "rows": rows}  # fmt: skip
                write_text_atomic(target, json.dumps(record))
                print(
                    f"[{number}/{len(tasks)}] {task.run} {task.tag}: "
                    f"{time.perf_counter() - started:.1f} s (process {fabric.global_rank})",
                    flush=True,
                )
    finally:
        torch.set_num_threads(threads)
    fabric.barrier()


def core_share(processes: int) -> int:
    """This process's share of the cores it may run on, among `processes` such processes (at
    least one)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 1) // processes)


def claimed(path: Path) -> bool:
    """True for the one process that creates `path` first."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def failure(session: Path, task: Task, error: Exception) -> None:
    if isinstance(error, RunFileError):
        message = f"{task.run} ({task.tag}): {error}"
    else:  # a bug, not bad input: keep the traceback
        message = (
            f"{task.run} ({task.tag}) failed with {type(error).__name__}: {error}\n"
            + "".join(traceback.format_exception(error))
        )
    write_text_atomic(session / "failed" / task.key, json.dumps({"message": message}))


# ---- the table and what is made of it ----------------------------------------------------------
def result_table(
    probe: RunProbe, cache: Path, tasks: list[Task], read: dict[str, list[dict]]
) -> pd.DataFrame:
    """Every stored row of `tasks`, in task order, with its run, run group (the `short_names` of
    the runs' parent folders, as figures label them) and checkpoint; a task with no stored result
    (failed, with --keep-going) has none. `read`: the rows already read by key
    (`stored_results`); the others are read from the cache now."""
    rows = []
    groups = short_names(str(Path(task.run).parent) for task in tasks)  # the figures' labels
    for task in tasks:
        path = result_path(cache, probe, task.key)
        try:
            stored = read[task.key] if task.key in read else stored_rows(path, probe)
        except UnreadableResult as error:
            raise ProbeInputError(
                f"stored result {path} is unreadable ({error}): run the same command again to "
                "compute it again"
            ) from None
        group = groups[str(Path(task.run).parent)]
        rows += [{"run": task.run, "group": group, "checkpoint": task.tag, **row}
                 for row in stored or []]  # fmt: skip
    return pd.DataFrame(rows)


def summarised(probe: RunProbe, table: pd.DataFrame) -> pd.DataFrame:
    """`probe.summary_table(table)`; a table without a field it needs (stored results of other
    fields) is one ProbeInputError."""
    try:
        return probe.summary_table(table)
    except KeyError as error:
        raise ProbeInputError(
            f"the stored results of {probe.name} lack the field {error}: delete the cache "
            f"folder's {probe.name}/ (--cache, default OUT/cache) and run the command again"
        ) from None


def write_outputs(probe: RunProbe, options, table: pd.DataFrame, out: Path, arguments) -> list:
    out.mkdir(parents=True, exist_ok=True)
    written = [save_table(table, out / f"{probe.name}.{arguments.format}")]
    figures: dict[str, Path] = {}
    tables = {probe.name: table}
    if not table.empty:
        summary = summarised(probe, table)
        tables[f"{probe.name}.summary"] = summary
        text = f"# {probe.name} ({probe.paper})\n\n{markdown_table(summary, index=False)}\n"
        written.append(write_text_atomic(out / f"{probe.name}.summary.md", text))
        print(text)
        figures = probe.figures(table, options, out / "figures")
        written += list(figures.values())
    if arguments.wandb:
        log_to_wandb(out / "wandb", f"probes/{probe.name}", "probes", figures, tables,
                     config={"runs": arguments.runs, "checkpoint": arguments.checkpoint,
                             **asdict(options)})  # fmt: skip
    return written
