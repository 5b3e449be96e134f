"""The probes on a researcher's own model: every `torch.nn.GRU` and `torch.nn.LSTM` inside any
`nn.Module` made traceable and editable, keyed by the module's own path.

    attached = attach(model)              # nothing changes: torch's fused kernels, same outputs
    with attached.trace() as trace:       # filled when the block ends
        model(inputs)
    trace["encoder.rnn.update_gate"]      # [batch, time, units]
    with attached.edit([Intervention("rnn.l1.cell", units=(3,), operation="zero")]):
        model(inputs)
    attached.detach()                     # or: with attach(model) as attached: ...

Sites are `<path>.<site>` for a one-layer module and `<path>.l<k>.<site>` for layer k of a stack
(k from 0), with the cell's sites (`lightning_modules.recurrent.SITES`): GRU hidden, update_gate,
reset_gate, candidate; LSTM hidden, cell, input_gate, forget_gate, candidate, output_gate. A
bidirectional layer's units are the forward direction's then the backward one's, as in torch's
output. Edits are the suite's `Intervention`s; their steps count from the first step the module
ran inside the open scopes.

How (written by hand: no library reaches inside torch's recurrent layers, which are single C
calls that no hook can see into): attaching sets an instance `forward` on each recurrent module
(its class, code and weights are untouched) that calls torch's own forward unless a trace or an
edit for it is open. Inside one, it runs the module layer by layer through the suite's core
(`lightning_modules.recurrent.traced_forward`, torch's equations with every gate exposed), with
torch's handling of `batch_first`, bidirectional layers, packed sequences, initial states,
unbatched inputs and dropout between layers in training. Successive calls of a module inside
one scope (a decoder that calls its layer one step at a time) continue its time axis.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from lightning_modules.recurrent import (
    SITES,
    Intervention,
    _TracedRecurrent,
    step_mask,
    traced_forward,
)

SUPPORTED = (
    "torch.nn.GRU and torch.nn.LSTM (stacked, bidirectional, batch-first or time-first, packed "
    "sequences, initial states, called whole or one step at a time)"
)
UNSUPPORTED = (nn.RNN, nn.RNNCell, nn.GRUCell, nn.LSTMCell)


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


def layer_name(path: str, module: nn.RNNBase, index: int) -> str:
    """The name a layer's sites start with: the module's path, plus `.l<index>` in a stack."""
    return path if module.num_layers == 1 else f"{path}.l{index}"


def traceable_modules(model: nn.Module) -> dict[str, nn.RNNBase]:
    """Every torch GRU and LSTM in `model` by path (the suite's own traced layers excepted: they
    record and edit through the suite's models); one clear error for anything it cannot trace."""
    found = {}
    for path, module in model.named_modules():
        name = f"{path or type(model).__name__} ({type(module).__module__}.{type(module).__name__})"
        if isinstance(module, UNSUPPORTED):
            raise TypeError(f"attach: {name} cannot be traced; the suite traces {SUPPORTED}.")
        if not isinstance(module, nn.GRU | nn.LSTM) or isinstance(module, _TracedRecurrent):
            continue
        if getattr(module, "proj_size", 0):
            raise TypeError(f"attach: {name} has proj_size={module.proj_size}; LSTM projections "
                            f"cannot be traced. The suite traces {SUPPORTED}.")  # fmt: skip
        if type(module).forward not in (nn.GRU.forward, nn.LSTM.forward):
            raise TypeError(f"attach: {name} defines its own forward, which tracing would bypass; "
                            f"the suite traces {SUPPORTED}.")  # fmt: skip
        if "forward" in vars(module):
            raise ValueError(f"attach: {name} is already attached: detach() the first attachment.")
        found[path] = module
    if not found:
        raise TypeError(f"attach: {type(model).__name__} holds no layer to trace; the suite traces "
                        f"{SUPPORTED}.")  # fmt: skip
    return found


class Attached:
    """A model whose recurrent layers can be traced (`trace`) and edited (`edit`); see the module
    docstring. `modules`: path -> layer; `layers`: layer name -> (path, `TorchLayer`)."""

    def __init__(self, model: nn.Module):
        self.model = model
        self.modules = traceable_modules(model)
        self.layers = {
            layer_name(path, module, index): (path, TorchLayer(module, index))
            for path, module in self.modules.items()
            for index in range(module.num_layers)
        }
        self._recording: dict[str, list[Tensor]] | None = None
        self._valid: dict[str, list[Tensor]] = {}
        self._edits: tuple[Intervention, ...] = ()
        self._next_step: dict[str, int] = {}
        self._open = 0
        for path, module in self.modules.items():
            module.forward = _Forward(self, path, module)

    @property
    def sites(self) -> list[str]:
        """Every site this attachment traces and edits."""
        return [f"{name}.{site}" for name, (_, layer) in self.layers.items()
                for site in SITES[layer.cell_type]]  # fmt: skip

    @contextlib.contextmanager
    def trace(self) -> Iterator[Trace]:
        """Record every site of every forward inside the block; the `Trace` it yields holds them,
        `[batch, time, units]`, when the block ends (also on an error)."""
        if self._recording is not None:
            raise RuntimeError("attach: a trace is already open on this model; end it first.")
        trace = Trace()
        self._recording, self._valid = defaultdict(list), defaultdict(list)
        try:
            with self._scope():
                yield trace
        finally:
            recorded, self._recording = self._recording, None
            trace.update({site: torch.cat(parts, 1) for site, parts in recorded.items()})
            trace.valid.update({name: torch.cat(parts, 1) for name, parts in self._valid.items()})

    @contextlib.contextmanager
    def edit(self, edits: Sequence[Intervention]) -> Iterator[Attached]:
        """Apply `edits` to every forward inside the block; removed on exit, even on an error."""
        for edit in edits:
            self._check(edit)
        previous = self._edits
        self._edits = previous + tuple(edits)
        try:
            with self._scope():
                yield self
        finally:
            self._edits = previous

    def detach(self) -> None:
        """Give every module its own forward back."""
        for module in self.modules.values():
            if isinstance(vars(module).get("forward"), _Forward):
                del module.forward

    def __enter__(self) -> Attached:
        return self

    def __exit__(self, *exc) -> None:
        self.detach()

    @contextlib.contextmanager
    def _scope(self) -> Iterator[None]:
        """The time axis starts at 0 when the outermost trace or edit opens."""
        if not self._open:
            self._next_step = {}
        self._open += 1
        try:
            yield
        finally:
            self._open -= 1

    def _check(self, edit: Intervention) -> None:
        if edit.module not in self.layers:
            raise ValueError(f"edit site {edit.site!r} names no attached layer; the layers are "
                             f"{', '.join(self.layers)}.")  # fmt: skip
        sites = SITES[self.layers[edit.module][1].cell_type]
        if edit.site_name not in sites:
            raise ValueError(f"edit site {edit.site!r}: {edit.module} has the sites "
                             f"{', '.join(sites)}.")  # fmt: skip

    def _active(self, path: str) -> bool:
        return self._recording is not None or any(
            self.layers[e.module][0] == path for e in self._edits
        )

    def run(self, path: str, module: nn.RNNBase, inputs, state=None):
        """Module `path`'s forward through the core: torch's outputs, sites recorded and edits
        applied."""
        padded, lengths, restore = _batch_first(module, inputs)
        if state is not None and restore.unbatched:
            state = tuple(s.unsqueeze(1) for s in state) if isinstance(state, tuple) else (
                state.unsqueeze(1))  # fmt: skip
        first = self._next_step.get(path, 0)
        directions = 2 if module.bidirectional else 1
        values, finals = padded, []
        for index in range(module.num_layers):
            name = layer_name(path, module, index)
            layer_state = _layer_state(state, index, directions)
            edits = [e for e in self._edits if e.module == name]
            sites, final = traced_forward(self.layers[name][1], values, layer_state, lengths,
                                          edits, first)  # fmt: skip
            if self._recording is not None:
                for site, value in sites.items():
                    self._recording[f"{name}.{site}"].append(value)
                self._valid[name].append(step_mask(lengths, *padded.shape[:2], padded.device))
            values = sites["hidden"]
            if index < module.num_layers - 1 and module.dropout and module.training:
                values = nn.functional.dropout(values, module.dropout, training=True)
            finals.append(final)
        self._next_step[path] = first + padded.shape[1]
        final = tuple(torch.cat([f[part] for f in finals]) for part in range(len(finals[0])))
        return restore(values, final if isinstance(module, nn.LSTM) else final[0])


class Trace(dict):
    """Sites by name, `[batch, time, units]`; `valid` holds each layer's `[batch, time]` mask of
    the steps inside its sequences (False past a packed sequence's length)."""

    def __init__(self):
        super().__init__()
        self.valid: dict[str, Tensor] = {}


class _Forward:
    """The `forward` an attached module gets: torch's own unless a trace or an edit is open."""

    def __init__(self, attached: Attached, path: str, module: nn.RNNBase):
        self.attached, self.path, self.original = attached, path, type(module).forward
        self.module = module

    def __call__(self, inputs, hx=None):
        if not self.attached._active(self.path):
            return self.original(self.module, inputs, hx)
        return self.attached.run(self.path, self.module, inputs, hx)


@dataclass(frozen=True)
class _Restore:
    """How to give outputs back in the form the module was called with."""

    module: nn.RNNBase
    packed: PackedSequence | None
    lengths: Tensor | None
    unbatched: bool

    def __call__(self, outputs: Tensor, final):
        if self.packed is not None:
            order = self.packed.sorted_indices
            ordered = outputs if order is None else outputs.index_select(0, order)
            lengths = self.lengths if order is None else self.lengths[order.cpu()]
            data = pack_padded_sequence(ordered, lengths, batch_first=True).data
            packed = self.packed
            return PackedSequence(data, packed.batch_sizes, packed.sorted_indices,
                                  packed.unsorted_indices), final  # fmt: skip
        if self.unbatched:
            final = tuple(f.squeeze(1) for f in final) if isinstance(final, tuple) else (
                final.squeeze(1))  # fmt: skip
            return outputs.squeeze(0), final
        return (outputs if self.module.batch_first else outputs.transpose(0, 1)), final


def _batch_first(module: nn.RNNBase, inputs) -> tuple[Tensor, Tensor | None, _Restore]:
    """`inputs` as `[batch, time, features]`, the lengths of a packed batch, and the way back."""
    if isinstance(inputs, PackedSequence):
        padded, lengths = pad_packed_sequence(inputs, batch_first=True)
        return padded, lengths, _Restore(module, inputs, lengths, False)
    if inputs.dim() == 2:
        return inputs.unsqueeze(0), None, _Restore(module, None, None, True)
    padded = inputs if module.batch_first else inputs.transpose(0, 1)
    return padded, None, _Restore(module, None, None, False)


def _layer_state(state, index: int, directions: int):
    """Layer `index`'s part of torch's `[layers * directions, batch, hidden]` state."""
    if state is None:
        return None
    rows = slice(index * directions, (index + 1) * directions)
    return tuple(s[rows] for s in state) if isinstance(state, tuple) else state[rows]


def attach(model: nn.Module) -> Attached:
    """Make every torch GRU and LSTM inside `model` traceable and editable (module docstring)."""
    return Attached(model)
