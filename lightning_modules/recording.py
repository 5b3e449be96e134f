"""What a model computes, recorded with torch alone: a split's traces joined into one batch (and
written to the run folder), and a state dict made savable as safetensors.

Lightning's callbacks (`lightning_modules.callbacks`) record through these while a model trains;
the probes and the reports' rebuilds call them on a model already loaded, without importing
Lightning.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from storage import RunLayout
from storage.files import save_tensors_atomic


def pad_and_concatenate(chunks: list[Tensor]) -> Tensor:
    """Concatenate along dim 0, zero-padding every other dim to the largest size."""
    shape = [max(c.shape[d] for c in chunks) for d in range(chunks[0].dim())]
    padded = []
    for chunk in chunks:
        pad = []
        for dim in reversed(range(1, chunk.dim())):
            pad += [0, shape[dim] - chunk.shape[dim]]
        padded.append(F.pad(chunk, pad) if any(pad) else chunk)
    return torch.cat(padded)


@contextlib.contextmanager
def evaluating(model: nn.Module) -> Iterator[None]:
    """`model` in evaluation mode (no dropout) inside the block, in its own mode again after."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


@torch.no_grad()
def record_split(model: nn.Module, loader) -> dict[str, Tensor]:
    """`model.trace` over every batch of `loader`, with the batch itself under `batch.<key>`."""
    chunks: dict[str, list[Tensor]] = {}
    with evaluating(model):
        for batch in loader:
            batch = {k: v.to(model.device) for k, v in batch.items()}
            traced = model.trace(batch)
            traced.update({f"batch.{key}": value for key, value in batch.items()})
            for key, value in traced.items():
                chunks.setdefault(key, []).append(value)
    return {key: pad_and_concatenate(values) for key, values in chunks.items()}


def record_traces(model: nn.Module, datamodule, splits: Sequence[str], run_dir,
                  tag: str, batch_size: int = 256) -> None:  # fmt: skip
    """`record_split` of every split in `splits` to `<run_dir>/traces/<split>/<tag>.safetensors`."""
    for split in splits:
        tensors = record_split(model, datamodule.split_dataloader(split, batch_size=batch_size))
        path = RunLayout(run_dir).trace(split, tag)
        save_tensors_atomic(tensors, path, {"split": split, "tag": tag})


def savable_state(state: dict[str, Tensor]) -> tuple[dict[str, Tensor], dict[str, str] | None]:
    """A state dict as safetensors saves it, and its metadata: a tensor sharing memory with an
    earlier one (tied weights: a decoder's weight that is the embedding) is cloned, so every name
    is kept, and the metadata names each alias (`{"aliases": "decoder.weight=encoder.weight"}`;
    None if there is none)."""
    tensors, seen, aliases = {}, {}, []
    for name, tensor in state.items():
        key = (tensor.device, tensor.untyped_storage().data_ptr())
        first = seen.setdefault(key, name) if key[1] else name
        if first != name:
            view, twin = (tensor.data_ptr(), tensor.shape, tensor.stride()), state[first]
            if view == (twin.data_ptr(), twin.shape, twin.stride()):
                aliases.append(f"{name}={first}")
            tensor = tensor.clone()
        tensors[name] = tensor
    return tensors, ({"aliases": ", ".join(aliases)} if aliases else None)
