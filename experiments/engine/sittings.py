"""A fit's sittings, and a reproduction that stops gently.

Each invocation's time on a run (a sitting) is recorded in the run's `sittings.json` while its fit
runs (`timed_sitting`), so a run trained over several invocations sums them (`fit_time`). While
`stopping_gently` holds, Ctrl-C and SIGTERM end the running fits and record their sittings up to
the stop. Written by hand: Lightning and subprocess keep no such record.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from storage import RunLayout
from storage.files import write_text_atomic

SITTING_CLOCK = 60.0
"""Seconds between updates of a running fit's sitting in `sittings.json`: a sitting killed with
its reproduction (`kill -9`) loses at most this much of its recorded time; one stopped by Ctrl-C
or SIGTERM (`stopping_gently`) loses none."""

STOPPING = threading.Event()
"""Set while a reproduction stops (`stopping_gently`): every running fit is ended (`end_fit`)
within a second, its sitting recorded up to then, and no other one starts."""

FIT_GRACE = 30.0
"""Seconds an ended fit has to stop on SIGTERM before it is killed: Lightning stops after the
batch at hand, so a checkpoint it is writing is finished, not cut short."""


def this_machine() -> str:
    """The device this process's fits train on, as a sitting records it: the GPU's name where
    torch sees one (Lightning's `accelerator: auto` then trains there), else the CPU, the vector
    instructions torch's kernels use on it (AVX512, AVX2, ...: two CPUs that differ there sum
    float32 in another order, so the same command can give other last digits) and how many cores
    this process may use. Asking torch whether it sees a GPU starts no CUDA context."""
    import torch  # here, so that reading sittings needs neither torch nor the probe command

    from probes.command.run import core_share

    if torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)} (CUDA)"
    capability = torch.backends.cpu.get_cpu_capability()
    return f"CPU {platform.machine()} {capability}, {core_share(1)} cores"


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user and system, with that of its children it has waited for) that process
    `pid` has used so far, from `/proc/<pid>/stat` (Linux); None elsewhere or once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # from field 3 on: the name may hold spaces
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # fields 14-17


def end_fit(process: subprocess.Popen) -> None:
    """End the fit `process`: SIGTERM, then SIGKILL if it is still running after `FIT_GRACE`."""
    process.terminate()
    try:
        process.wait(timeout=FIT_GRACE)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def timed_sitting(process: subprocess.Popen, path: Path, earlier: list[dict]) -> int:
    """Wait for the fit `process`, its span recorded in `path` (`RunLayout.sittings`: one
    `{"started", "until", "device", "cpu_seconds"}` a sitting, after the `earlier` ones;
    `this_machine`; the fit's CPU time, read every second, where `cpu_seconds` can: unlike the
    span it leaves out time the fit was paused or waited for a core), written every
    `SITTING_CLOCK` seconds and when the wait ends, by the fit's exit or by an exception; its
    exit status. Where `STOPPING` is set, a RuntimeError is raised. A wait ended
    by an exception ends the fit (`end_fit`) before its last record, so a fit never outlives its
    wait. The record is bookkeeping: a write that fails (a full disk) is told on stderr, and the
    fit goes on."""
    started, told, written, device = time.time(), False, 0.0, this_machine()
    used = cpu_seconds(process.pid)

    def record() -> None:
        nonlocal told, written
        written = time.time()
        try:
            sitting = {"started": started, "until": written, "device": device}
            if used is not None:
                sitting["cpu_seconds"] = used
            write_text_atomic(path, json.dumps([*earlier, sitting]) + "\n")
        except OSError as error:
            if not told:
                print(f"warning: the fit's time is not recorded in {path}: {error}",
                      file=sys.stderr, flush=True)  # fmt: skip
            told = True

    try:
        while True:
            try:
                return process.wait(timeout=min(1.0, SITTING_CLOCK))
            except subprocess.TimeoutExpired:
                pass
            used = cpu_seconds(process.pid) or used  # a failed read keeps the last one
            if STOPPING.is_set():
                raise RuntimeError(f"the fit recorded in {path} was stopped with its reproduction")
            if time.time() - written >= SITTING_CLOCK:
                record()
    finally:
        if process.poll() is None:  # stopped, or an exception here: the fit ends with the wait
            end_fit(process)
        record()


@contextmanager
def stopping_gently() -> Iterator[None]:
    """While the block runs, Ctrl-C and SIGTERM (`kill`, a cluster's time limit) stop the
    reproduction by an exception in the main thread (KeyboardInterrupt, SystemExit(143)) and set
    `STOPPING`: its running fits end, their sittings recorded up to then, and no other run starts.
    (By default SIGTERM ends this process at once and leaves its fits running, unrecorded.) A
    task in its analyses finishes them first; a second signal ends the process at once. Outside
    the main thread, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        if STOPPING.is_set():
            os._exit(128 + signum)
        STOPPING.set()
        raise KeyboardInterrupt if signum == signal.SIGINT else SystemExit(128 + signum)

    previous = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        STOPPING.clear()


def read_sittings(path: Path) -> list[dict]:
    """The sittings recorded in `path` (none where it does not exist: a run trained before
    `sittings.json` existed); a ValueError naming the file where it is not such a list. A
    sitting's `device` and `cpu_seconds` are optional: kept where recorded."""
    if not path.is_file():
        return []
    try:
        sittings = json.loads(path.read_text())
        if not isinstance(sittings, list):
            raise TypeError("not a list")
        return [
            {
                "started": float(s["started"]),
                "until": float(s["until"]),
                **({"device": str(s["device"])} if "device" in s else {}),
                **({"cpu_seconds": float(s["cpu_seconds"])} if "cpu_seconds" in s else {}),
            }
            for s in sittings
        ]
    except (ValueError, KeyError, TypeError):
        raise ValueError(
            f"{path} is not a list of sittings ({{'started', 'until'}} in seconds): delete it (the "
            "run's training time is then read from its config.yaml and command.txt times)"
        ) from None


def fit_time(layout: RunLayout) -> dict:
    """When a finished run was trained: its first sitting's start, its last one's end, the
    seconds of all its sittings (`sittings.json`), the devices they ran on (`devices`, in the
    order first used) and their CPU time (`cpu_seconds`, where every sitting recorded it); for
    a run trained before that file existed, its config's and command's times (`started` is then
    its last sitting's start)."""
    sittings = read_sittings(layout.sittings)
    if not sittings:
        return {"started": layout.config.stat().st_mtime,
                "finished": layout.command.stat().st_mtime}  # fmt: skip
    devices = list(dict.fromkeys(s["device"] for s in sittings if "device" in s))
    cpu = [s["cpu_seconds"] for s in sittings if "cpu_seconds" in s]
    return {"started": sittings[0]["started"], "finished": sittings[-1]["until"],
            "seconds": sum(s["until"] - s["started"] for s in sittings),
            **({"devices": devices} if devices else {}),
            **({"cpu_seconds": sum(cpu)} if len(cpu) == len(sittings) else {})}  # fmt: skip


def fit_seconds(trained: dict[str, float]) -> float:
    """A run's training time (`fit_time`): summed over its sittings where they were recorded,
    else its start to its end."""
    return trained.get("seconds", trained["finished"] - trained["started"])
