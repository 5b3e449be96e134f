"""A stand-in for the fit process `experiments.engine.fit.fit` starts, for tests of its bookkeeping,
and the processes of a real fit (`fit_pids`)."""

import subprocess
from pathlib import Path


def ended_fit(returncode: int, calls: list) -> type[subprocess.Popen]:
    """A stand-in for `experiments.engine.launch.WarmPopen` (as `subprocess.Popen` is used) whose
    process has ended at once with `returncode` without running anything; each command it is
    given is appended to `calls`."""

    class EndedFit(subprocess.Popen):
        def __init__(self, command, *args, **kwargs):
            calls.append(command)
            self.returncode = returncode
            self.pid = -1  # no process: no CPU time to read (`sittings.cpu_seconds`)

        def __exit__(self, *exception):
            return False

        def wait(self, timeout=None):
            return returncode

    return EndedFit


def fit_pids(*markers: str) -> list[int]:
    """Processes whose command line names every one of `markers` (a fit's run root, say)."""
    pids = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            command = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if all(marker in command for marker in markers):
            pids.append(int(entry.name))
    return pids
