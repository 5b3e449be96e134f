"""One call of a user's `torch.nn.GRU` / `torch.nn.LSTM` as the suite's core runs it
(`probes.attach`): its layers as the core's `LayerWeights`, its inputs as `[batch, time,
features]` and its outputs given back in the form it was called with, each layer's part of the
initial state, and the dropout between layers drawn exactly as torch's own kernel draws it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from lightning_modules.recurrent import sites_from_outputs


@dataclass(frozen=True)
class TorchLayer:
    """Layer `index` of a torch `nn.GRU` / `nn.LSTM`, as the core's `LayerWeights`: its weights
    are read from the module at every call, so the view follows `load_state_dict` and `.to()`."""

    module: nn.RNNBase
    index: int

    @property
    def cell_type(self) -> str:
        return "gru" if isinstance(self.module, nn.GRU) else "lstm"

    @property
    def hidden_size(self) -> int:
        return self.module.hidden_size

    @property
    def directions(self) -> int:
        return 2 if self.module.bidirectional else 1

    def weights(self, direction: int) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
        suffix = f"_l{self.index}" + ("_reverse" if direction else "")
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        return tuple(getattr(self.module, name + suffix, None) for name in names)


def fused_forward(layer: TorchLayer, inputs: Tensor, state=None):
    """Layer `layer` over `inputs` `[batch, time, features]` (no padding) by torch's own fused
    kernel, as the module runs it (time-first, that layer's part of its weights and state): the
    sites the core's `traced_forward` returns, `hidden` being the kernel's output (a view of
    time-first memory, carrying its gradient) and the others computed from it for all steps at
    once without gradient, and the final state as a tuple of `[directions, batch, hidden]`."""
    time_first = inputs.transpose(0, 1)
    if state is None:
        zeros = inputs.new_zeros(layer.directions, inputs.shape[0], layer.hidden_size)
        state = zeros if layer.cell_type == "gru" else (zeros, zeros)
    module = layer.module
    weights = [w for d in range(layer.directions) for w in layer.weights(d) if w is not None]
    kernel = torch.gru if layer.cell_type == "gru" else torch.lstm
    outputs, *final = kernel(time_first, state, weights, module.bias, 1, 0.0, module.training,
                             module.bidirectional, False)  # fmt: skip
    with torch.no_grad():
        sites = sites_from_outputs(layer, time_first, outputs, state)
    return {**sites, "hidden": outputs.transpose(0, 1)}, tuple(final)


def layer_name(path: str, module: nn.RNNBase, index: int) -> str:
    """The name a layer's sites start with: the module's path, plus `.l<index>` in a stack. The
    model itself (path "", a bare `nn.LSTM` attached) is named after its class, lower-cased
    (`lstm`, `lstm.l1`), so that no site name starts with a dot."""
    path = path or type(module).__name__.lower()
    return path if module.num_layers == 1 else f"{path}.l{index}"


@dataclass(frozen=True)
class Call:
    """One call's inputs as `padded` `[batch, time, features]` with the `lengths` of a packed
    batch, and the way back to the form the module was called with."""

    module: nn.RNNBase
    padded: Tensor
    lengths: Tensor | None
    packed: PackedSequence | None
    unbatched: bool

    @classmethod
    def of(cls, module: nn.RNNBase, inputs) -> Call:
        if isinstance(inputs, PackedSequence):
            padded, lengths = pad_packed_sequence(inputs, batch_first=True)
            return cls(module, padded, lengths, inputs, False)
        if inputs.dim() == 2:
            return cls(module, inputs.unsqueeze(0), None, None, True)
        padded = inputs if module.batch_first else inputs.transpose(0, 1)
        return cls(module, padded, None, None, False)

    def batched_state(self, state):
        """The initial state with a batch axis (an unbatched call's has none)."""
        if state is None or not self.unbatched:
            return state
        return tuple(s.unsqueeze(1) for s in state) if isinstance(state, tuple) else (
            state.unsqueeze(1))  # fmt: skip

    def packed_data(self, values: Tensor) -> Tensor:
        """`values` `[batch, time, units]` as the `.data` of this call's packed sequence."""
        order = self.packed.sorted_indices
        ordered = values if order is None else values.index_select(0, order)
        lengths = self.lengths if order is None else self.lengths[order.cpu()]
        return pack_padded_sequence(ordered, lengths, batch_first=True).data

    def between_layers(self, values: Tensor) -> Tensor:
        """torch's dropout between stacked layers in training, drawn on the tensor torch draws it
        on (a packed sequence's data, else the time-first output), so that the random masks, and
        the model's outputs, are the untraced call's under the same seed (on the CPU)."""
        module = self.module
        if not (module.dropout and module.training):
            return values
        if self.packed is None:
            time_first = values.transpose(0, 1).contiguous()
            return nn.functional.dropout(time_first, module.dropout, True).transpose(0, 1)
        data = nn.functional.dropout(self.packed_data(values), module.dropout, True)
        packed = self.packed
        repacked = PackedSequence(data, packed.batch_sizes, packed.sorted_indices,
                                  packed.unsorted_indices)  # fmt: skip
        return pad_packed_sequence(repacked, batch_first=True, total_length=values.shape[1])[0]

    def restore(self, outputs: Tensor, final):
        """`outputs` `[batch, time, units]` and the final state in the form of the call. The
        outputs have torch's layout when `outputs` is a view of contiguous `[time, batch, units]`
        memory (the core's `time_major` sites): contiguous time-first, a transposed view of it
        batch-first, so that what follows (a dropout's mask, a `.view`) sees torch's tensor."""
        if self.packed is not None:
            packed = self.packed
            data = self.packed_data(outputs)
            return PackedSequence(data, packed.batch_sizes, packed.sorted_indices,
                                  packed.unsorted_indices), final  # fmt: skip
        if self.unbatched:
            final = tuple(f.squeeze(1) for f in final) if isinstance(final, tuple) else (
                final.squeeze(1))  # fmt: skip
            return outputs.squeeze(0), final
        return (outputs if self.module.batch_first else outputs.transpose(0, 1)), final


def layer_state(state, index: int, directions: int):
    """Layer `index`'s part of torch's `[layers * directions, batch, hidden]` state."""
    if state is None:
        return None
    rows = slice(index * directions, (index + 1) * directions)
    return tuple(s[rows] for s in state) if isinstance(state, tuple) else state[rows]


def same_memory(state, final) -> bool:
    """Whether `state` is `final` (the state a call returned) or a view of the same memory, such
    as `final.detach()`: the call continues the sequence `final` ended."""
    if state is None or final is None:
        return False
    state = state if isinstance(state, tuple) else (state,)
    final = final if isinstance(final, tuple) else (final,)
    return len(state) == len(final) and all(
        isinstance(s, Tensor) and s.data_ptr() == f.data_ptr() and s.shape == f.shape
        and s.stride() == f.stride() and s.device == f.device
        for s, f in zip(state, final, strict=True)
    )  # fmt: skip
