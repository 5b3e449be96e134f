r"""A researcher's own model recorded once into the suite's run-folder format, so that
`python -m probes` runs on it like on any run:

    attached = attach(model)                       # probes.attach
    record_run("runs/mine/seed=0", attached, batches, lambda batch: model(batch["tokens"]))
    # python -m probes functional-group --runs runs/mine/seed=0 --splits data \
    #     --targets rnn.l1.hidden:batch.label --out probes-out/functional-group
    # python -m probes gate-saturation --runs runs/mine/seed=0 --splits data \
    #     --gates rnn.l0.forget_gate rnn.l1.forget_gate --out probes-out/gate-saturation
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import torch
from torch import Tensor

from lightning_modules.recording import evaluating, pad_and_concatenate, savable_state
from probes.attach import Attached
from probes.command.base import RECORDED
from storage import RunLayout
from storage.files import save_tensors_atomic, write_text_atomic


@torch.no_grad()
def record_run(
    folder: str | Path,
    attached: Attached,
    batches: Iterable[dict[str, Tensor]],
    forward: Callable[[dict[str, Tensor]], object],
    split: str = "data",
    tag: str = "best",
    time_first: bool | None = None,
) -> RunLayout:
    """Run `forward(batch)` (the model in evaluation mode) over `batches` inside a trace and
    write the run folder `folder`: `traces/<split>/<tag>.safetensors` with every site `[batch,
    time, units]`, each layer's valid steps as `valid.<layer>`, and each batch tensor with an
    axis of the batch's rows as `batch.<key>`, batch first: `[batch]`, `[batch, time, ...]` kept,
    `[time, batch, ...]` (a time-first model's tokens or labels) transposed; where both of its
    first axes have the batch's size, `time_first` (default: whether every attached module is
    time-first) decides. `recorded.txt` says which axis each was taken to have as time, and a
    warning names those left out. `weights/<tag>.safetensors` holds the model's state dict
    (tied weights under each name, the metadata's `aliases` naming them). Batches may differ in
    length: they are zero-padded in time, padding marked invalid. The files appear together or
    not at all: written into a temporary sibling folder, then moved into `folder`."""
    layout = RunLayout(Path(folder))
    model = attached.model
    if time_first is None:
        time_first = not any(module.batch_first for module in attached.modules.values())
    tensors, axes = recorded_tensors(attached, batches, forward, time_first)
    left_out = sorted(key for key in axes if key not in tensors)
    if left_out:
        warnings.warn(f"record_run: {', '.join(left_out)} left out: no axis of theirs has the "
                      "rows the trace has.", stacklevel=2)  # fmt: skip
    weights, aliases = savable_state(model.state_dict())
    layouts = "".join(f"{key}: {axes[key]}\n" for key in sorted(axes))
    with staged_folder(layout.path) as staged:
        staged = RunLayout(staged)
        save_tensors_atomic(tensors, staged.trace(split, tag), {"split": split, "tag": tag})
        save_tensors_atomic(weights, staged.weight_snapshot(tag), aliases)
        write_text_atomic(
            staged.path / RECORDED,
            f"Recorded by probes.command.record.record_run from a {type(model).__name__}: "
            f"split {split}, tag {tag}, {len(tensors)} entries.\n{layouts}",
        )
    return layout


def recorded_tensors(attached: Attached, batches, forward, time_first: bool):
    """`record_run`'s traces and batch tensors over every batch, concatenated, and the line on
    each batch tensor's axes."""
    chunks: dict[str, list[Tensor]] = {}
    axes: dict[str, str] = {}
    with evaluating(attached.model):
        for batch in batches:
            with attached.trace() as trace:
                forward(batch)
            recorded = {**trace, **{f"valid.{name}": mask for name, mask in trace.valid.items()}}
            rows = next(iter(trace.values())).shape[0]
            for key, value in batch.items():
                if isinstance(value, Tensor):
                    recorded_value, axes[f"batch.{key}"] = batch_major(value, rows, time_first)
                    if recorded_value is not None:
                        recorded[f"batch.{key}"] = recorded_value
            for key, value in recorded.items():
                chunks.setdefault(key, []).append(value)
    return {key: pad_and_concatenate(values) for key, values in chunks.items()}, axes


@contextlib.contextmanager
def staged_folder(path: Path) -> Iterator[Path]:
    """A new temporary sibling folder of `path` to write into. When the block ends, its files
    move into `path`: the whole folder renamed into place if `path` does not exist yet, else file
    by file (another split or tag joining a run folder). On an error it is removed, with the
    parent folders made for it, and `path` is as it was."""
    made = [parent for parent in (path.parent, *path.parent.parents) if not parent.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    staging.mkdir()  # as the user's umask allows, like the folder it becomes
    try:
        yield staging
        if not os.path.lexists(path):
            staging.rename(path)
            return
        for file in sorted(p for p in staging.rglob("*") if not p.is_dir()):
            target = path / file.relative_to(staging)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(file, target)
        shutil.rmtree(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for parent in made:  # the deepest first
            with contextlib.suppress(OSError):
                parent.rmdir()
        raise


def batch_major(value: Tensor, rows: int, time_first: bool) -> tuple[Tensor | None, str]:
    """`value` with its axis of the batch's `rows` first (None if it has none), and a line on the
    axis it was taken to have as time."""
    first = value.dim() >= 1 and value.shape[0] == rows
    second = value.dim() >= 2 and value.shape[1] == rows
    shape = list(value.shape)
    if second and (time_first or not first):
        return value.transpose(0, 1), f"time on axis 0 of {shape}, stored [batch, time, ...]"
    if first:
        time = "time on axis 1" if value.dim() >= 2 else "no time axis"
        return value, f"{time} of {shape}, stored as given"
    return None, f"left out: no axis of {shape} has the batch's {rows} rows"
