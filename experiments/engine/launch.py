"""A fit started warm: `python -m experiments fit ...` run in a process forked from one that has
already imported what fits need (`WarmPopen`), instead of a new interpreter each time.

Why: a new interpreter spends about 9 s of CPU importing torch, Lightning and W&B before the fit
builds its command line (and, but for `end_as_interpreter`, about 2 s more unloading them as it
exits); a quick-scale reproduction trains 16 tiny fits, so start-up was most of its time. The
warm server (multiprocessing's forkserver, started at a reproduction's first fit with
`WARM_MODULES` preloaded) forks each fit from those imports: a fit's own CPU before its command
runs is a few milliseconds. Measured on paper 1's quick scale (16 fits, the same metrics byte for
byte): the fits' recorded CPU time went from 279 s to 96 s. What it costs: one more process (the
server, about 450 MB resident, shared copy-on-write with its fits; its imports once, about 10 s of
CPU, and it ends without unloading them), and the resource tracker multiprocessing starts with
it; the reproduction waits for the server to end as it ends itself.

What the fit is, is unchanged: the child takes the fit's environment, working folder, standard
output and error (the run's `train.log`), `sys.argv` and the module's `__main__` as the
interpreter sets them for `python -m` (or `-c`), runs the same code, ends as the interpreter ends
(non-daemon threads joined, `atexit` handlers run, the standard streams flushed, an uncaught
exception's traceback, a `KeyboardInterrupt` ending by SIGINT), and its exit status is the
command's. Only the interpreter's last teardown of its modules is left out, as multiprocessing's
children leave it out (a file is closed by the code that writes it). Its command line
(`/proc/<pid>/cmdline`, what `ps` shows) reads as the command, as far as the server's own command
line leaves room. Where the warm start shows, and why it is safe:

- the server imports with the environment every fit has (`fit_environment`, set by
  `experiments.engine.warm_server` before torch loads: OpenMP and MKL read their thread counts
  then), and starts no thread (torch's thread pools start on first use, in each fit), so forking
  it is safe; it starts no CUDA context either (nothing it imports asks for a GPU);
- the suite's code and libraries are those of the reproduction's first fit: a source file edited
  while a reproduction runs takes effect in its next reproduction, not its next fit; an
  environment variable a library reads when imported (none of the suite's) keeps its first value;
- the global random states of Python and NumPy are drawn anew in each fit, as in a new
  interpreter; the string hash seed is the server's, shared by its fits;
- the server ignores SIGTERM and Ctrl-C (a cluster's time limit signals every process), so that
  it reports each fit's exit status; each fit takes their default handling back.

The fit is not a child of the reproduction but of the server: `WarmPopen` has what the engine uses
of `subprocess.Popen` (`pid`, `poll`, `wait`, `send_signal`, `terminate`, `kill`), its exit status
read from the server. On platforms without forkserver (Windows) the suite does not run at all
(`storage.files` needs `fcntl`).
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import io
import os
import runpy
import signal
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable, Mapping, Sequence
from multiprocessing import forkserver, reduction, resource_tracker
from multiprocessing.connection import wait

from datamodules import TASK_MODULES

WARM_MODULES = [
    "experiments.engine.warm_server",  # first: the environment torch loads under
    "experiments.cli",
    "lightning_modules.seq2seq",
    "lightning_modules.classifier",
    "lightning_modules.language_model",
    *TASK_MODULES,
    "wandb",
    "wandb.sdk.launch.inputs.internal",  # imported as a fit's W&B run ends
]
"""What the warm server imports once, before forking fits: what `python -m experiments fit`
imports (`-X importtime` of a fit: the CLI with torch and Lightning, the models and data modules
configs name, W&B). A module that fails to import there is imported by each fit instead."""

FIT_THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""The thread counts every fit has: fits run a few at a time, one core each."""

LEFT_OUT = ("WANDB_SERVICE",)
"""Variables no fit inherits. Each fit starts its own W&B service, as from a shell: one inherited
from the reproduction would keep a killed fit's run open and refuse its resumption ("run ID is in
use")."""

SHARED_SERVER = "RECURRENT_PROBES_WARM_SERVER"
"""The variable naming the address of a running warm server (`shared_server_address`) to fork
fits from instead of starting one: several reproductions then share one server's imports (the
test suite's reproductions share their worker's). Its fits are the server's children, not the
reproduction's: a signal to the reproduction's process group does not reach them (the
reproduction signals its fits itself as it stops)."""

STATUS_LOST = 1
"""The exit status of a fit whose server ended before it (killed by hand): unknown, so failed."""

_starting = threading.Lock()


def fit_environment(environment: Mapping[str, str]) -> dict[str, str]:
    """`environment` as a fit gets it: `FIT_THREADS` set, `LEFT_OUT` removed."""
    fitted = {**environment, **FIT_THREADS}
    for name in LEFT_OUT:
        fitted.pop(name, None)
    return fitted


class WarmPopen:
    """`python <arguments>` (`-m MODULE ...` or `-c CODE ...`) started warm (module docstring),
    with the environment `env`, its standard output and error written to the file descriptor
    `log` (its standard error to `errors` where given), in this process's working folder. Used
    as `subprocess.Popen` is: `pid`, `returncode`, `poll`, `wait(timeout)`
    (`subprocess.TimeoutExpired`), `send_signal`, `terminate`, `kill`; as a context manager it
    waits for the process on exit."""

    def __init__(self, arguments: Sequence[str], log: int, env: Mapping[str, str],
                 errors: int | None = None):  # fmt: skip
        self.args = [sys.executable, *arguments]
        self.returncode: int | None = None
        started = _Started(list(arguments), dict(env), os.getcwd())
        data = io.BytesIO()
        reduction.dump({}, data)  # the preparation: none of this process's __main__ or sys.path
        reduction.dump(started, data)
        with _starting:
            fds = [log] if errors is None else [log, errors]
            self._status, sending = _server().connect_to_new_process(fds)
        with open(sending, "wb", closefd=True) as to_child:
            to_child.write(data.getbuffer())
        self.pid = forkserver.read_signed(self._status)

    def poll(self) -> int | None:
        """The exit status, or None while the process runs."""
        if self.returncode is None and wait([self._status], 0):
            self._read_status()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the process to end (`subprocess.TimeoutExpired` after `timeout` seconds)."""
        if self.returncode is None:
            if not wait([self._status], timeout):
                raise subprocess.TimeoutExpired(self.args, timeout)
            self._read_status()
        return self.returncode

    def _read_status(self) -> None:
        try:
            self.returncode = forkserver.read_signed(self._status)
        except EOFError:  # the server ended first: wait for the process itself
            while os.path.exists(f"/proc/{self.pid}") and not _zombie(self.pid):
                time.sleep(0.1)
            self.returncode = STATUS_LOST
        os.close(self._status)

    def send_signal(self, signum: int) -> None:
        """Send `signum` to the process, unless it has ended."""
        if self.poll() is None:
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def __enter__(self) -> WarmPopen:
        return self

    def __exit__(self, *exception) -> None:
        self.wait()


def _server() -> forkserver.ForkServer:
    """The server fits are forked from: the one `SHARED_SERVER` names, else this process's own,
    its preload set before it first starts (ended by `_end_server` as this process ends)."""
    address = os.environ.get(SHARED_SERVER)
    if address:
        return _shared_server(address)
    if forkserver._forkserver._forkserver_pid is None:
        forkserver.set_forkserver_preload(WARM_MODULES)
        atexit.register(_end_server)
    return forkserver._forkserver


def shared_server_address() -> str:
    """Start this process's warm server, where it has none yet, and return its address: with
    `SHARED_SERVER` set to it, the processes this one starts fork their fits from it."""
    with _starting:
        server = _server()
        server.ensure_running()
    return server._forkserver_address


@functools.cache
def _shared_server(address: str) -> _SharedServer:
    return _SharedServer(address)


class _SharedServer(forkserver.ForkServer):
    """The warm server another process started and ends, at `address`: multiprocessing's client
    connects to a server only it started, so this one skips the start. Each fit is handed
    /dev/null where a fit of this process's own server gets the pipe that keeps the server
    alive while it runs: the shared server lives as long as the process that started it."""

    def __init__(self, address: str):
        super().__init__()
        self._forkserver_address = address
        self._forkserver_alive_fd = os.open(os.devnull, os.O_RDONLY)

    def ensure_running(self) -> None:
        resource_tracker.ensure_running()

    def connect_to_new_process(self, fds):
        try:
            return super().connect_to_new_process(fds)
        except (FileNotFoundError, ConnectionRefusedError):
            raise WarmServerError(
                f"${SHARED_SERVER} names {self._forkserver_address}, where no warm server "
                "listens (the process that started it has ended): unset it, and the reproduction "
                "starts a server of its own"
            ) from None


class WarmServerError(RuntimeError):
    """`SHARED_SERVER` names a server that does not answer."""


def _end_server(patience: float = 60.0) -> None:
    """As this process ends, end the warm server and wait for it, so that its CPU time and its
    fits' count in this process's (as `time` reports it) and nothing of the reproduction outlives
    it: the server ends once no fit it started runs, in about 2 s of CPU (an interpreter with
    torch unloading); one still running after `patience` seconds is left to end by itself."""
    server = forkserver._forkserver
    with _starting:
        if server._forkserver_pid is None:
            return
        os.close(server._forkserver_alive_fd)
        deadline = time.monotonic() + patience
        try:
            while not os.waitpid(server._forkserver_pid, os.WNOHANG)[0]:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        except ChildProcessError:  # already waited for
            pass
        server._forkserver_pid = server._forkserver_alive_fd = None


def _zombie(pid: int) -> bool:
    """Process `pid` has ended and waits to be reaped (`/proc/<pid>/stat`'s state Z)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in "ZX"
    except (OSError, IndexError):
        return False


class _Started:
    """What the server's child runs (multiprocessing's `spawn._main` calls `_bootstrap`): the
    command, its environment and working folder; its output goes to the one file descriptor sent
    with it."""

    def __init__(self, arguments: list[str], environment: dict[str, str], folder: str):
        self.arguments, self.environment, self.folder = arguments, environment, folder

    def _bootstrap(self, parent_sentinel: int) -> int:
        os.close(parent_sentinel)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        log, *errors = forkserver.get_inherited_fds()
        os.dup2(log, 1)
        os.dup2(errors[0] if errors else log, 2)
        for fd in {log, *errors}:
            os.close(fd)
        sys.stdout = sys.__stdout__ = _stream(1, sys.stdout, line_buffering=False)
        sys.stderr = sys.__stderr__ = _stream(2, sys.stderr, line_buffering=True)
        interpreter_path = sys.path[1 + len(_python_path(os.environ)) :]
        os.environ.clear()
        os.environ.update(self.environment)
        os.chdir(self.folder)
        sys.orig_argv = [sys.executable, *self.arguments]
        _show_command(sys.orig_argv)
        _draw_random_states()
        first = os.getcwd() if self.arguments[0] == "-m" else ""
        sys.path[:] = [first, *_python_path(os.environ), *interpreter_path]
        os._exit(run_as_interpreter(self.arguments))


def _stream(fd: int, like: io.TextIOWrapper, line_buffering: bool) -> io.TextIOWrapper:
    """A text stream on `fd` as the interpreter makes its standard ones (the encoding and errors
    of `like`, the server's), for the file the fit writes to."""
    return io.TextIOWrapper(open(fd, "wb", closefd=False), encoding=like.encoding,
                            errors=like.errors, line_buffering=line_buffering)  # fmt: skip


def _python_path(environment: Mapping[str, str]) -> list[str]:
    """The folders `PYTHONPATH` puts first on `sys.path` (after the script's or working folder)."""
    return [entry for entry in environment.get("PYTHONPATH", "").split(os.pathsep) if entry]


def _draw_random_states() -> None:
    """Python's and NumPy's global random states drawn anew, as a new interpreter draws them
    (Python's is also redrawn by `random` itself after a fork)."""
    import random

    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def _show_command(command: list[str]) -> None:
    """Write `command` over this process's own command line (what `/proc/self/cmdline` and `ps`
    show: the server's until now), as far as its room allows; the room is the memory the kernel
    reads it from (`/proc/self/stat`'s arg_start and arg_end), which Python no longer reads."""
    try:
        with open("/proc/self/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])  # fields 48 and 49 of proc(5)
    except (OSError, IndexError, ValueError):
        return
    if not 0 < start < end:
        return
    text = "\0".join(command).encode(errors="surrogateescape")[: end - start - 1]
    ctypes.memmove(start, text.ljust(end - start, b"\0"), end - start)


def run_as_interpreter(arguments: Sequence[str]) -> int:
    """Run `python <arguments>` (`-m MODULE ...` or `-c CODE ...`) in this process as the
    interpreter does, and end it as the interpreter ends; the exit status."""
    interrupted = False
    try:
        if arguments[0] == "-m":
            sys.argv = [arguments[1], *arguments[2:]]  # runpy sets argv[0] to the module's file
            runpy.run_module(arguments[1], run_name="__main__", alter_sys=True)
        elif arguments[0] == "-c":
            sys.argv = ["-c", *arguments[2:]]
            main = sys.modules["__main__"] = types.ModuleType("__main__")
            exec(compile(arguments[1], "<string>", "exec"), main.__dict__)
        else:
            raise ValueError(f"a warm start runs python -m or -c, not {list(arguments)}")
        status = 0
    except SystemExit as stop:
        status = exit_status(stop.code)
    except BaseException as error:
        interrupted = isinstance(error, KeyboardInterrupt)
        sys.excepthook(type(error), error, error.__traceback__.tb_next)  # from the command on
        status = 1
    status = finalize(status)
    if interrupted:  # as the interpreter: an uncaught Ctrl-C ends the process by SIGINT
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return status


def end_as_interpreter(main: Callable[[], object], module: str) -> None:
    """Run a command's `main`; where this process was started as `python -m <module>` (to run
    this command alone), end it as the interpreter ends (`finalize`: threads joined, `atexit`
    handlers run, streams flushed) leaving out only its last teardown of modules, as a warm fit
    ends: about 2 s of CPU once torch, Lightning and W&B are loaded. Any exception but
    `SystemExit` ends the process as the interpreter ends it; run inside another program (the
    suite's tests run commands in their own process), `main` is a plain call."""
    if sys.orig_argv[1:3] != ["-m", module]:
        main()
        return
    try:
        main()
        status = 0
    except SystemExit as stop:
        status = exit_status(stop.code)
    os._exit(finalize(status))


def exit_status(code: object) -> int:
    """The exit status of `SystemExit(code)`: 0 for None, an integer as it is, else 1 with the
    code printed on stderr."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def finalize(status: int) -> int:
    """What the interpreter does as it ends: wait for non-daemon threads, run `atexit` handlers,
    flush the standard streams (a failed flush of stdout makes the status 120)."""

    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            if stream is sys.stdout and status == 0:
                status = 120
    return status
