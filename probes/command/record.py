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

from collections.abc import Callable, Iterable
from pathlib import Path

import torch
from torch import Tensor

from lightning_modules.callbacks import pad_and_concatenate
from probes.attach import Attached
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
) -> RunLayout:
    """Run `forward(batch)` (the model in evaluation mode) over `batches` inside a trace and
    write the run folder `folder`: `traces/<split>/<tag>.safetensors` with every site `[batch,
    time, units]`, each layer's valid steps as `valid.<layer>`, and each batch tensor whose first
    dimension is the batch (labels `[batch, time]` for the diagnostic classifiers, say) as
    `batch.<key>`; `weights/<tag>.safetensors` with the model's state dict. Batches may differ in
    length: they are zero-padded in time, padding marked invalid."""
    layout = RunLayout(Path(folder))
    model = attached.model
    was_training = model.training
    model.eval()
    chunks: dict[str, list[Tensor]] = {}
    try:
        for batch in batches:
            with attached.trace() as trace:
                forward(batch)
            rows = next(iter(trace.values())).shape[0]
            recorded = {**trace, **{f"valid.{name}": mask for name, mask in trace.valid.items()}}
            recorded |= {
                f"batch.{key}": value
                for key, value in batch.items()
                if isinstance(value, Tensor) and value.dim() and len(value) == rows
            }
            for key, value in recorded.items():
                chunks.setdefault(key, []).append(value)
    finally:
        model.train(was_training)
    tensors = {key: pad_and_concatenate(values) for key, values in chunks.items()}
    save_tensors_atomic(tensors, layout.trace(split, tag), {"split": split, "tag": tag})
    save_tensors_atomic(model.state_dict(), layout.weight_snapshot(tag))
    write_text_atomic(
        layout.path / "recorded.txt",
        f"Recorded by probes.own_model.record_run from a {type(model).__name__}: "
        f"split {split}, tag {tag}, {len(tensors)} entries.\n",
    )
    return layout
