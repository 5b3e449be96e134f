"""A fresh fit that replaces the run in its folder (`fit --run.replace true`), as one transaction:
the folder ends holding the new run whole if the fit finishes, else the old run as it was.

The old run's entries are renamed into a holding folder inside the run folder (one filesystem, so
each rename is atomic, and a renamed link is moved, never followed); the new fit writes beside it.
The holding folder's name says how far a replacement got, so a folder that a killed process left
is brought back to one whole run without guessing whose each entry is:

- `.old-run.moving`: the old run is on its way aside (or back), and every other entry but the lock
  is the old run's too: restored by moving the held entries back.
- `.old-run`: the old run is held whole, and every other entry but the lock is the new fit's:
  restored by deleting those, then moving the old run back (as `.old-run.moving`).
- `.old-run.deleting`: the new fit finished: what is left of the old run is deleted.

The fit holds the run folder's lock throughout (`RunFolderLock`); `settle_replacement` takes it to
restore a folder a killed process left. Written by hand: Lightning and the standard library have no
transactional replacement of a folder's contents.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from storage.files import RunFileError, RunFolderLock, delete_entry, link_error
from storage.layout import RunLayout


def _holding_folders(layout: RunLayout) -> list[Path]:
    return [layout.old_run_moving, layout.old_run, layout.old_run_deleting]


def _holding_folder(layout: RunLayout) -> Path | None:
    """The holding folder of a replacement under way in `layout`'s run folder, if there is one."""
    found = [p for p in _holding_folders(layout) if os.path.lexists(p)]
    for path in found:
        if path.is_symlink():
            raise link_error(path)
    if len(found) > 1 or (found and not found[0].is_dir()):
        names = ", ".join(p.name for p in found)
        raise RunFileError(
            f"{layout.path} holds {names}, which no replacement leaves: move them out of the run "
            "folder and keep by hand the run you want (python -m experiments fit writes neither)."
        )
    return found[0] if found else None


def _entries(layout: RunLayout) -> list[Path]:
    """The entries of the run folder but its lock and a holding folder."""
    skipped = {p.name for p in (layout.lock, *_holding_folders(layout))}
    return sorted(p for p in layout.path.iterdir() if p.name not in skipped)


def hold_old_run(run_dir: str | os.PathLike) -> None:
    """Move the run in `run_dir` (every entry but the lock) aside into `.old-run`, before a fresh
    fit writes the folder; the caller holds the lock, and ends with `drop_old_run` once the fit
    finished, else `restore_old_run`. A move that fails halfway is undone."""
    layout = RunLayout(run_dir)
    if _holding_folder(layout) is not None:
        raise RunFileError(
            f"{layout.path} was left mid-replacement by a killed fit --run.replace: run the "
            "command again, which restores the old run first."
        )
    os.mkdir(layout.old_run_moving)
    try:
        for entry in _entries(layout):
            os.rename(entry, layout.old_run_moving / entry.name)
    except BaseException:
        restore_old_run(run_dir)
        raise
    os.rename(layout.old_run_moving, layout.old_run)


def drop_old_run(run_dir: str | os.PathLike) -> None:
    """The replacing fit finished: delete the old run it replaced."""
    layout = RunLayout(run_dir)
    os.rename(layout.old_run, layout.old_run_deleting)
    shutil.rmtree(layout.old_run_deleting)


def restore_old_run(run_dir: str | os.PathLike) -> str | None:
    """Bring `run_dir`, left mid-replacement, back to one whole run (the caller holds its lock):
    the old run as it was, unless the new fit had finished. Returns what was done, None when the
    folder was not mid-replacement."""
    layout = RunLayout(run_dir)
    holding = _holding_folder(layout)
    if holding is None:
        return None
    if holding == layout.old_run_deleting:
        shutil.rmtree(holding)
        return "deleted what was left of the run that a finished fit --run.replace replaced"
    if holding == layout.old_run:
        for entry in _entries(layout):
            delete_entry(entry)
        os.rename(layout.old_run, layout.old_run_moving)
    for entry in sorted(layout.old_run_moving.iterdir()):
        os.rename(entry, layout.path / entry.name)
    os.rmdir(layout.old_run_moving)
    return (
        "restored the run that an unfinished fit --run.replace was replacing (the replacing "
        "fit's files are deleted)"
    )


def settle_replacement(run_dir: str | os.PathLike, purpose: str = "use it") -> None:
    """If a killed `fit --run.replace` left `run_dir` mid-replacement, restore it under the run
    folder's lock (`restore_old_run`) and say so on stderr, before the command reads it. A
    replacement still running holds the lock: refused, as any second writer (`purpose` ends its
    advice). A process Lightning started for another rank of a multi-process fit leaves it to
    rank zero."""
    layout = RunLayout(run_dir)
    if not any(map(os.path.lexists, _holding_folders(layout))):
        return  # the common case, decided without importing Lightning
    from pytorch_lightning.utilities import rank_zero_only

    if rank_zero_only.rank != 0:
        return
    lock = RunFolderLock(layout.path, purpose=purpose)
    try:
        done = restore_old_run(layout.path)
    finally:
        lock.release()
    if done:
        print(f"note: {layout.path}: {done}.", file=sys.stderr)
