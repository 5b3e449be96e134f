"""A fit started warm (`experiments.engine.launch.WarmPopen`) is what `python <command>` gives: the
same output, exit status, `sys.argv`, `sys.path[0]`, `__main__`, environment and thread count,
with torch already imported (its standard error apart where asked); it is signalled and waited
for as a `subprocess.Popen`; the server it is forked from holds one thread; another process
forks its fits from a server it is named (`SHARED_SERVER`), and one that no longer answers is one
error; `experiments.engine.fit.fit` starts its fits this way."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from multiprocessing import forkserver
from pathlib import Path

import pytest

from experiments.engine import fit as fitting
from experiments.engine.launch import (
    SHARED_SERVER,
    WarmPopen,
    fit_environment,
    shared_server_address,
)
from storage import RunLayout

ROOT = Path(__file__).parents[1]

SHOW = """
import json, os, sys, __main__
import torch
print(json.dumps({"argv": sys.argv, "path0": sys.path[0], "cwd": os.getcwd(),
                  "main": getattr(__main__.__spec__, "name", None),
                  "threads": torch.get_num_threads(), "mark": os.environ.get("WARM_TEST_MARK"),
                  "service": os.environ.get("WANDB_SERVICE")}))
"""

ENDINGS = {
    "done": "print('done')",
    "status": "import sys; print('out'); sys.exit(3)",
    "message": "import sys; sys.exit('error: one line naming the problem')",
    "exception": "raise ValueError('the last line')",
    "interrupted": "raise KeyboardInterrupt",
}


def warm(tmp_path: Path, arguments: list[str], environment: dict[str, str]) -> tuple[int, str]:
    """Run `python <arguments>` warm; its exit status and its output (stdout and stderr)."""
    log = tmp_path / "warm.log"
    with open(log, "w") as out, WarmPopen(arguments, out.fileno(), environment) as process:
        status = process.wait(timeout=600)
    return status, log.read_text()


def fresh(arguments: list[str], environment: dict[str, str]) -> tuple[int, str]:
    """Run `python <arguments>` in a new interpreter; its exit status and output."""
    done = subprocess.run([sys.executable, *arguments], env=environment, timeout=600,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    return done.returncode, done.stdout


def test_a_warm_start_runs_the_command_as_a_new_interpreter_would(tmp_path, monkeypatch):
    """`-m` and `-c`: the same argv, path, `__main__`, environment (the fit's: one thread, no
    inherited W&B service) and output; the warm one finds torch imported before it runs."""
    module = tmp_path / "warm_probe"
    module.mkdir()
    (module / "__main__.py").write_text(SHOW)
    monkeypatch.chdir(tmp_path)
    environment = fit_environment({**os.environ, "WARM_TEST_MARK": "fit", "WANDB_SERVICE": "x"})
    for arguments in (["-m", "warm_probe", "a", "b"], ["-c", SHOW, "a"]):
        status, shown = warm(tmp_path, arguments, environment)
        assert (status, json.loads(shown)) == (0, json.loads(fresh(arguments, environment)[1]))
    assert json.loads(shown)["threads"] == 1 and json.loads(shown)["mark"] == "fit"
    status, shown = warm(tmp_path, ["-c", "import sys; print('torch' in sys.modules)"], environment)
    assert (status, shown) == (0, "True\n")  # warm: imported by the server, not by the command


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_a_warm_start_ends_with_the_commands_exit_status_and_last_line(tmp_path, ending):
    """Exit status 0, 3, 1 with the message, 1 with the traceback's last line, and an uncaught
    Ctrl-C ending the process by SIGINT, as `python -c` ends."""
    arguments = ["-c", ENDINGS[ending]]
    status, shown = warm(tmp_path, arguments, dict(os.environ))
    expected_status, expected = fresh(arguments, dict(os.environ))
    assert status == expected_status
    assert shown.strip().splitlines()[-1:] == expected.strip().splitlines()[-1:]
    assert shown.startswith("Traceback") == expected.startswith("Traceback")


def test_a_warm_start_writes_its_standard_error_apart_where_asked(tmp_path):
    """With `errors`, standard output and standard error go to their own files, as
    `subprocess.run(capture_output=True)` keeps them."""
    arguments = ["-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"]
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        status = WarmPopen(arguments, out.fileno(), dict(os.environ), err.fileno()).wait(600)
    fresh = subprocess.run([sys.executable, *arguments], capture_output=True, text=True)
    assert status == fresh.returncode == 3
    assert (tmp_path / "out").read_text() == fresh.stdout == "out\n"
    assert (tmp_path / "err").read_text() == fresh.stderr == "err\n"


def test_a_warm_fit_is_signalled_and_waited_for_as_a_popen(tmp_path):
    """A running fit: `poll` None, a timed `wait` raises `TimeoutExpired`, its command line reads
    as its command; SIGTERM ends it with -15, and signalling an ended one does nothing."""
    arguments = ["-c", "import time; print('started', flush=True); time.sleep(600)", str(tmp_path)]
    log = tmp_path / "warm.log"
    with open(log, "w") as out:
        process = WarmPopen(arguments, out.fileno(), dict(os.environ))
    while "started" not in log.read_text():
        assert process.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(timeout=0.1)
    cmdline = Path(f"/proc/{process.pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    assert [part.decode() for part in cmdline] == [sys.executable, *arguments]
    process.terminate()
    assert process.wait() == -signal.SIGTERM and process.poll() == -signal.SIGTERM
    process.kill()  # ended: nothing to signal


def test_the_warm_server_holds_one_thread_and_no_gpu(tmp_path):
    """Forking is safe only from a process of one thread; the server has imported torch and
    Lightning (its fits find them) without starting a thread pool or loading the CUDA driver."""
    warm(tmp_path, ["-c", "pass"], dict(os.environ))
    server = forkserver._forkserver._forkserver_pid
    assert len(os.listdir(f"/proc/{server}/task")) == 1
    assert "libcuda" not in Path(f"/proc/{server}/maps").read_text()


def test_a_process_given_a_shared_server_forks_its_fits_from_it():
    """With `SHARED_SERVER` naming this process's server, another process's fit is forked from
    it (its parent), with its exit status read back, and that process starts no server."""
    address = shared_server_address()
    started = (
        "import os; from multiprocessing import forkserver\n"
        "from experiments.engine.launch import WarmPopen\n"
        "fit = WarmPopen(['-c', 'import os; print(os.getppid())'], 1, dict(os.environ))\n"
        "status = fit.wait()\n"
        "print(forkserver._forkserver._forkserver_pid, status)"
    )
    environment = {**os.environ, SHARED_SERVER: address}
    done = subprocess.run([sys.executable, "-c", started], env=environment, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    fit_parent, own_server_and_status = done.stdout.splitlines()
    assert int(fit_parent) == forkserver._forkserver._forkserver_pid
    assert own_server_and_status == "None 0"


def test_a_reproductions_fit_is_started_warm(tmp_path, monkeypatch):
    """`fit` starts its command warm: the fit finds Lightning imported, writes its output to the
    run's train.log, and its exit status decides: a failed fit is one error with its last line."""
    probe = "import sys; print('lightning warm:', 'pytorch_lightning' in sys.modules, flush=True)"
    monkeypatch.setattr(fitting, "fit_command", lambda args: ["-c", probe + args[0]])
    run = tmp_path / "run"
    assert fitting.fit(run, [""])
    assert RunLayout(run).train_log.read_text() == "lightning warm: True\n"
    with pytest.raises(RuntimeError, match=r"failed \(ValueError: bad input\): see .*train.log"):
        fitting.fit(run, ["; raise ValueError('bad input')"])


def test_a_shared_server_that_no_longer_answers_is_one_error(tmp_path, monkeypatch, capsys):
    """`SHARED_SERVER` naming a server that has ended (no socket there): the reproduction's first
    fit stops it with one line naming the variable and what to do, exit status 2."""
    from experiments.paper4.reproduce import main

    monkeypatch.setenv(SHARED_SERVER, str(tmp_path / "ended-server"))
    with pytest.raises(SystemExit) as ended:
        main(["--scale", "quick", "--runs", str(tmp_path / "runs"), "--out",
              str(tmp_path / "report"), "--jobs", "1"])  # fmt: skip
    error = capsys.readouterr().err.strip().splitlines()
    assert ended.value.code == 2 and len(error) == 1, error
    assert error[0].startswith("python -m experiments.paper4: error: $RECURRENT_PROBES_WARM_SERVER")
    assert "unset it" in error[0] and not (tmp_path / "report").exists()
