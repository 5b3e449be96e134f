r"""A researcher's own model recorded once into the suite's run-folder format, so that
`python -m probes` runs on it like on any run:

    attached = attach(model)                       # probes.attach
    record_run("runs/mine/seed=0", attached, batches, lambda batch: model(batch["tokens"]))
    # python -m probes functional-group --runs runs/mine/seed=0 --splits data \
    #     --targets rnn.l1.hidden:batch.label
    # python -m probes gate-saturation --runs runs/mine/seed=0 --splits data \
    #     --gates rnn.l0.forget_gate rnn.l1.forget_gate
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

import torch
from torch import Tensor

from lightning_modules.callbacks import pad_and_concatenate
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
    warning names those left out. `weights/<tag>.safetensors` holds the model's state dict.
    Batches may differ in length: they are zero-padded in time, padding marked invalid."""
    layout = RunLayout(Path(folder))
    model = attached.model
    if time_first is None:
        time_first = not any(module.batch_first for module in attached.modules.values())
    was_training = model.training
    model.eval()
    chunks: dict[str, list[Tensor]] = {}
    axes: dict[str, str] = {}
    try:
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
    finally:
        model.train(was_training)
    tensors = {key: pad_and_concatenate(values) for key, values in chunks.items()}
    left_out = sorted(key for key in axes if key not in tensors)
    if left_out:
        warnings.warn(f"record_run: {', '.join(left_out)} left out: no axis of theirs has the "
                      "rows the trace has.", stacklevel=2)  # fmt: skip
    save_tensors_atomic(tensors, layout.trace(split, tag), {"split": split, "tag": tag})
    save_tensors_atomic(model.state_dict(), layout.weight_snapshot(tag))
    layouts = "".join(f"{key}: {axes[key]}\n" for key in sorted(axes))
    write_text_atomic(
        layout.path / RECORDED,
        f"Recorded by probes.command.record.record_run from a {type(model).__name__}: "
        f"split {split}, tag {tag}, {len(tensors)} entries.\n{layouts}",
    )
    return layout


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
