"""Files of a run folder, written atomically: a temporary file in the same folder, then a rename.

An interrupted run therefore never leaves a half-written file that looks whole, and a full disk
is one `OSError(ENOSPC)` naming the file (`as_full_disk`). Arrays go to
safetensors (memory-mappable, no pickle); checkpoints are read with `weights_only=True`. A written
file gets the permissions of the process's umask, like any file the user creates. `RunFolderLock`
keeps a second process from writing into a run folder that one is writing.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import secrets
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import yaml
from safetensors.torch import save_file
from torch import Tensor

from storage.layout import RunLayout


class RunFileError(RuntimeError):
    """A run file is missing or unreadable; the message names the file and the fix."""


def link_error(path: str | os.PathLike) -> RunFileError:
    return RunFileError(
        f"{path} is a symbolic link: a run folder's files are its own, never read or written "
        f"through a link; delete the link (rm {path}) or use another run folder."
    )


def open_own(path: str | os.PathLike, flags: int, mode: int = 0o666) -> int:
    """`os.open(path, flags)` that refuses a symbolic link (`O_NOFOLLOW`) with one
    `RunFileError`: a link in a run folder could point at any file of the user's."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW, mode)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise link_error(path) from None
        raise


def read_own_text(path: str | os.PathLike) -> str:
    """The text of the run file `path`, refused if it is a symbolic link."""
    with os.fdopen(open_own(path, os.O_RDONLY), encoding="utf-8", newline="") as file:
        return file.read()


def read_own_yaml(path: str | os.PathLike, fix: str) -> object:
    """The run file `path` parsed as data (`yaml.safe_load`, not through a link); an unreadable
    one is one `RunFileError`: "<path> is not a readable config (<error>): <fix>"."""
    try:
        return yaml.safe_load(read_own_text(path))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise RunFileError(
            f"{path} is not a readable config ({type(error).__name__}): {fix}"
        ) from None


def read_saved_config(layout: RunLayout) -> dict | None:
    """The settings a run was trained with, as its `config.yaml` (LightningCLI's, every setting
    resolved) holds them, read as data (`read_own_yaml`); None when the run has none. An
    unreadable one is one `RunFileError` naming it and the fix."""
    if not os.path.lexists(layout.config):
        return None
    settings = read_own_yaml(
        layout.config,
        "retrain the run (python -m experiments fit ... --run.replace true) or restore the file.",
    )
    if not isinstance(settings, dict):
        raise RunFileError(
            f"{layout.config} holds no settings: retrain the run (python -m experiments fit ... "
            "--run.replace true) or restore the file."
        )
    return settings


TOKEN_BYTES = 6
"""The random part of `write_atomic`'s temporary name, `.<name>.<hex>.tmp`, in bytes."""


def is_temporary_of(entry: str, name: str) -> bool:
    """`entry` is a temporary file of `write_atomic` writing the file `name`."""
    pattern = rf"\.{re.escape(name)}\.[0-9a-f]{{{2 * TOKEN_BYTES}}}\.tmp"
    return re.fullmatch(pattern, entry) is not None


def write_atomic(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Call `write(temporary_path)`, then rename the temporary file to `path`.

    The temporary file is created with mode 0666 less the umask, as `open` would create `path`
    (`tempfile.mkstemp` makes 0600 files, which a colleague sharing the run folder cannot read).
    """
    path = Path(path)
    temporary = str(path.parent / f".{path.name}.{secrets.token_hex(TOKEN_BYTES)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
    except OSError as error:
        full = as_full_disk(error, path)
        if full is not None:
            raise full from None
        raise
    mode = os.fstat(handle).st_mode & 0o777  # 0666 less the umask
    os.close(handle)
    try:
        write(temporary)
        os.chmod(temporary, mode)  # a writer that recreates the file (safetensors) makes it 0600
        os.replace(temporary, path)
    except BaseException as error:
        full = as_full_disk(error, path)  # read while the temporary file still holds its space
        Path(temporary).unlink(missing_ok=True)
        if full is not None:
            raise full from None
        raise
    return path


FULL_DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
FULL_DISK_TEXTS = ("No space left on device", "Disk quota exceeded")
FULL_BELOW_BYTES = 1 << 20
"""A disk with less free space than this is full for a run (a checkpoint takes more)."""


def as_full_disk(error: BaseException, path: str | os.PathLike) -> OSError | None:
    """`OSError(ENOSPC, ..., path)` if `error`, raised writing `path`, means that its disk is
    full, else None: an OSError of a full disk or exceeded quota, a writer's error that says so
    in words (safetensors'), or any other error of a writer while the disk holding `path` has
    under `FULL_BELOW_BYTES` free (torch's C++ writer raises `basic_ios::clear` or
    `unexpected pos`, without an errno, when the disk fills)."""
    if isinstance(error, OSError):
        full = error.errno in FULL_DISK_ERRNOS
    elif isinstance(error, Exception):
        full = any(text in str(error) for text in FULL_DISK_TEXTS) or _nearly_full(path)
    else:
        full = False  # KeyboardInterrupt, SystemExit
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path)) if full else None


def _nearly_full(path: str | os.PathLike) -> bool:
    try:
        stats = os.statvfs(Path(path).parent)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < FULL_BELOW_BYTES


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    return write_atomic(path, lambda temporary: Path(temporary).write_text(text, encoding="utf-8"))


def save_tensors_atomic(
    tensors: dict[str, Tensor], path: str | os.PathLike, metadata: dict[str, str] | None = None
) -> Path:
    """Save `tensors` (made contiguous, on CPU) to a safetensors file atomically."""
    ready = {name: t.detach().cpu().contiguous() for name, t in tensors.items()}
    return write_atomic(path, lambda temporary: save_file(ready, temporary, metadata=metadata))


def load_checkpoint(path: str | os.PathLike, fix: str = "pass another --ckpt_path") -> dict:
    """A Lightning checkpoint read with `weights_only=True`, or one clear `RunFileError` whose
    advice ends with `fix` (the way to name another checkpoint in the command at hand): a file
    that is missing, damaged, or not a dict with a `state_dict` of tensors (a plain state dict,
    a list) is refused."""
    path = Path(path)
    if not path.is_file():
        raise RunFileError(
            f"Checkpoint {path} does not exist: train the run first "
            f"(python -m experiments fit --config ...) or {fix}."
        )
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises several types for a damaged file
        raise RunFileError(
            f"Checkpoint {path} is corrupt or not a checkpoint ({type(error).__name__}): "
            f"delete it and train again, or {fix}."
        ) from None
    state = checkpoint.get("state_dict") if isinstance(checkpoint, dict) else None
    if not isinstance(state, dict) or not all(isinstance(t, Tensor) for t in state.values()):
        held = type(checkpoint).__name__
        if isinstance(checkpoint, dict):
            held += " with keys " + ", ".join(map(str, list(checkpoint)[:5]))
        raise RunFileError(
            f"{path} is not a Lightning checkpoint (a dict whose state_dict holds the weights; "
            f"this one holds a {held}): {fix}."
        )
    return checkpoint


RUN_OUTSIDE_FIT = (".lock", "started.txt", "sittings.json", "train.log")
"""What a run folder holds before its fit writes anything: its lock, and the command, times and
log of the reproduction that starts the fit (`experiments.engine.fit.fit`); in a folder that
reproduction started (`started.txt`), also `KEPT_BY_REPRODUCTION`."""
KEPT_BY_REPRODUCTION = "measurements.json"
"""The measurements a reproduction kept of a run it trains again (`experiments.engine.measure`)."""


def recorded_entries(run_dir: str | os.PathLike) -> list[Path]:
    """What a fit wrote in `run_dir` (empty for a new folder or one a reproduction just made: its
    `RUN_OUTSIDE_FIT` files, their temporary files of `write_atomic`, and the measurements it
    kept)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return []
    outside = set(RUN_OUTSIDE_FIT)
    if (run_dir / "started.txt").is_file():
        outside.add(KEPT_BY_REPRODUCTION)
    return sorted(p for p in run_dir.iterdir() if p.name not in outside
                  and not any(is_temporary_of(p.name, name) for name in outside))  # fmt: skip


def delete_entry(entry: Path) -> None:
    """Delete a file, link or folder of a run folder; a link is removed, never followed."""
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry)
    else:
        entry.unlink()


class RunFolderLock:
    """An exclusive lock on a run folder (`<run>/.lock`, `fcntl.flock`), held until `release` or
    the process ends: a second process that tries to write the same run is refused at its start,
    before it writes anything. The kernel drops the lock of a killed process, so no stale lock
    outlives a kill. Creating the lock also proves the folder writable: a read-only run root is
    one `RunFileError` here. The lock file names its holder (`claim`), unless `claim=False`: then
    the caller claims it once its own checks pass, and a refusal leaves the file as it was."""

    def __init__(
        self, run_dir: str | os.PathLike, purpose: str = "train this run", claim: bool = True
    ):
        self.path = RunLayout(run_dir).lock
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.handle = open_own(self.path, os.O_CREAT | os.O_RDWR)
        except OSError as error:
            raise RunFileError(
                f"Cannot write the run folder {self.path.parent} ({error.strerror}): choose a "
                "folder you can write to with --run.root."
            ) from None
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self.handle, 4096, 0).decode("utf-8", "replace").strip()
            os.close(self.handle)
            raise RunFileError(
                f"{self.path.parent} is in use by another process ({holder or 'unknown'}): "
                f"wait for it to end before you {purpose}, or write another run (--run.variant "
                "or --seed_everything)."
            ) from None
        if claim:
            self.claim()

    def claim(self) -> None:
        """Write this process into the lock file, for the message of a refused second writer."""
        os.ftruncate(self.handle, 0)
        os.pwrite(self.handle, f"pid {os.getpid()}: {' '.join(sys.argv)}".encode(), 0)

    def release(self) -> None:
        if self.handle is not None:
            os.close(self.handle)
            self.handle = None
