"""The probes on a researcher's own model: every `torch.nn.GRU` and `torch.nn.LSTM` inside any
`nn.Module` made traceable and editable, keyed by the module's own path.

    attached = attach(model)              # nothing changes: torch's fused kernels, same outputs
    with attached.trace() as trace:       # filled when the block ends
        model(inputs)
    trace["encoder.rnn.update_gate"]      # [batch, time, units]
    with attached.edit([Intervention("rnn.l1.cell", units=(3,), operation="zero")]):
        model(inputs)                     # every call inside the block is edited
    attached.detach()                     # or: with attach(model) as attached: ...

Sites are `<path>.<site>` for a one-layer module and `<path>.l<k>.<site>` for layer k of a stack
(k from 0; a model that is itself a torch `nn.LSTM` or `nn.GRU` has the path `lstm` or `gru`,
its class name lower-cased), with the cell's sites (`lightning_modules.recurrent.SITES`): GRU
hidden, update_gate, reset_gate, candidate; LSTM hidden, cell, input_gate, forget_gate,
candidate, output_gate. A bidirectional layer's units are the forward direction's then the
backward one's, as in torch's output. Edits are the suite's `Intervention`s; their units and
steps are checked against the layer (every direction) when the block opens.

Calls are sequences. A call of a module whose initial state is the final state its previous call
returned (that tensor, or a view of its memory such as `.detach()`) continues that call's
sequence: a decoder calling its layer one step at a time runs one sequence, its steps counted on.
Any other call starts a new sequence at step 0: the second branch of a siamese model, the next
batch of a loop. A trace keeps every sequence (`trace.sequences[site]`, in the order they started;
`trace[site]` their rows one after the other, zero-padded in time, with `trace.valid` marking the
padding); a step edit applies to every sequence its block runs, or with `edit(..., sequence=k)`
to the module's k-th sequence started in the block (from 0).

Training mode: the dropout between stacked layers is drawn on the tensor torch's kernel draws it
on, and the outputs have torch's layout (contiguous time-first; batch-first a transposed view of
it), so a traced or edited training step equals the untraced one under the same seed (on the
CPU), a dropout after the layer included; on a GPU, whose cuDNN kernel draws its own masks, such a
step is refused. TorchScript: a scripted module is refused (attach the eager one), and so is
`torch.jit.script` of an attached model (script it after `detach()`).

How (written by hand: no library reaches inside torch's recurrent layers, which are single C
calls that no hook can see into): attaching sets an instance `forward` on each recurrent module
(its class, code and weights are untouched) that calls torch's own forward unless a trace or an
edit for it is open. Inside one, it runs the module layer by layer: a layer only traced by
torch's own kernel, its gates then computed from its outputs for all steps at once
(`lightning_modules.recurrent.sites_from_outputs`: outputs and gradients are the untraced ones bit
for bit); a layer edited, a packed call or a one-step call through the suite's core
(`lightning_modules.recurrent.traced_forward`, torch's equations with every gate exposed), with
torch's handling of `batch_first`, bidirectional layers, packed sequences, initial states and
unbatched inputs (`probes.torch_layers`). A copy of an attached model (`copy.deepcopy`) holds an
attachment of its own: `attach(copy)` returns it.
"""

from __future__ import annotations

import contextlib
import warnings
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from lightning_modules.recording import pad_and_concatenate
from lightning_modules.recurrent import (
    SITES,
    Intervention,
    _TracedRecurrent,
    step_mask,
    traced_forward,
)
from probes.torch_layers import (
    Call,
    TorchLayer,
    fused_forward,
    layer_name,
    layer_state,
    same_memory,
)

__all__ = ["Attached", "Trace", "TorchLayer", "attach", "attachment", "layer_name"]

SUPPORTED = (
    "torch.nn.GRU and torch.nn.LSTM (stacked, bidirectional, batch-first or time-first, packed "
    "sequences, initial states, called whole or one step at a time)"
)
UNSUPPORTED = (nn.RNN, nn.RNNCell, nn.GRUCell, nn.LSTMCell)
SCRIPTED = "compiled code, which no probe can reach inside"


def untraceable(module: nn.Module) -> str | None:
    """Why the suite cannot trace `module`, a recurrent module; None if it can or it is none."""
    if isinstance(module, UNSUPPORTED):
        return "cannot be traced"
    if isinstance(module, torch.jit.ScriptModule) and module.original_name in ("GRU", "LSTM"):
        return f"is TorchScript ({SCRIPTED}): attach the eager module before scripting"
    if not isinstance(module, nn.GRU | nn.LSTM) or isinstance(module, _TracedRecurrent):
        return None
    if getattr(module, "proj_size", 0):
        return f"has proj_size={module.proj_size}, and LSTM projections cannot be traced"
    if type(module).forward not in (nn.GRU.forward, nn.LSTM.forward):
        return "defines its own forward, which tracing would bypass"
    return None


def traceable_modules(model: nn.Module) -> dict[str, nn.RNNBase]:
    """Every torch GRU and LSTM in `model` by path (the suite's own traced layers excepted: they
    record and edit through the suite's models). A recurrent module it cannot trace is skipped
    with a warning naming it; a model with none it can trace is one clear error."""
    found, skipped = {}, []
    for path, module in model.named_modules():
        name = f"{path or type(model).__name__} ({type(module).__module__}.{type(module).__name__})"
        reason = untraceable(module)
        if reason is not None:
            skipped.append(f"{name} {reason}")
            continue
        if not isinstance(module, nn.GRU | nn.LSTM) or isinstance(module, _TracedRecurrent):
            continue
        forward = vars(module).get("forward")
        if isinstance(forward, _Forward):
            raise ValueError(f"attach: {name} is already attached, by an attachment of "
                             f"{type(forward.attached.model).__name__}: "
                             "probes.attach.attachment(model) returns it; use it, or detach() it "
                             "first.")  # fmt: skip
        found[path] = module
    if not found:
        reasons = "".join(f"; {reason}" for reason in skipped)
        raise TypeError(f"attach: {type(model).__name__} holds no layer to trace{reasons}. The "
                        f"suite traces {SUPPORTED}.")  # fmt: skip
    if skipped:
        warnings.warn(f"attach: skipped {'; '.join(skipped)}. The suite traces {SUPPORTED}; "
                      f"the other layers of {type(model).__name__} are attached.",
                      stacklevel=3)  # fmt: skip
    return found


@dataclass
class _Sequence:
    """One sequence of a module's calls (module docstring): its number among the module's
    sequences, the steps it has run, the final state its last call returned, and what a trace
    recorded of it (each site's and each layer's valid-step mask's pieces in time)."""

    index: int
    steps: int = 0
    final: Tensor | tuple[Tensor, ...] | None = None
    sites: dict[str, list[Tensor]] = field(default_factory=lambda: defaultdict(list))
    valid: dict[str, list[Tensor]] = field(default_factory=lambda: defaultdict(list))

    def record(self, layer: str, sites: dict[str, Tensor], valid: Tensor) -> None:
        for site, value in sites.items():
            self.sites[f"{layer}.{site}"].append(value.detach())
        self.valid[layer].append(valid)


@dataclass(frozen=True)
class _BlockEdit:
    """An edit of an open `edit` block on module `path`: on its `sequence`-th sequence started in
    the block (None: on all), the module having started `first` sequences before it opened."""

    edit: Intervention
    path: str
    sequence: int | None
    first: int

    def applies(self, sequence: int) -> bool:
        return self.sequence is None or sequence - self.first == self.sequence

    def reaches(self, first: int, time: int) -> bool:
        """Whether the edit names a step of a call running steps `first` to `first + time - 1`
        (a call it cannot reach runs torch's kernel, as in a trace without edits)."""
        steps = self.edit.steps
        return steps is None or any(first <= step < first + time for step in steps)


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
        self.__dict__.update(self._closed())
        for path, module in self.modules.items():
            module.forward = _Forward(self, path, module)
            module.__prepare_scriptable__ = module.forward.refuse_scripting

    @staticmethod
    def _closed() -> dict:
        """The state of an attachment with no block open (a copy starts from it)."""
        return {"_tracing": False, "_sequences": {}, "_edits": (), "_open": 0}

    def __getstate__(self) -> dict:
        return {**self.__dict__, **self._closed()}

    @property
    def sites(self) -> list[str]:
        """Every site this attachment traces and edits."""
        return [f"{name}.{site}" for name, (_, layer) in self.layers.items()
                for site in SITES[layer.cell_type]]  # fmt: skip

    @contextlib.contextmanager
    def trace(self) -> Iterator[Trace]:
        """Record every site of every call inside the block; the `Trace` it yields holds them,
        `[batch, time, units]`, when the block ends (also on an error)."""
        if self._tracing:
            raise RuntimeError("attach: a trace is already open on this model; end it first.")
        trace = Trace()
        with self._scope():
            self._tracing = True
            try:
                yield trace
            finally:
                self._tracing = False
                trace.keep(self._sequences.values())

    @contextlib.contextmanager
    def edit(
        self, edits: Sequence[Intervention], sequence: int | None = None
    ) -> Iterator[Attached]:
        """Apply `edits` to every call inside the block (with `sequence`, only to each edited
        module's `sequence`-th sequence started in the block); removed on exit, even on an
        error. Warns of a step edit that no sequence of its module reached."""
        for edit in edits:
            self._check(edit)
        if sequence is not None and sequence < 0:
            raise ValueError(f"edit: sequence={sequence}; sequences count from 0 in each block.")
        previous = self._edits
        with self._scope():
            scoped = tuple(self._block_edit(edit, sequence) for edit in edits)
            self._edits = previous + scoped
            try:
                yield self
            finally:
                self._edits = previous
            self._warn_unreached(scoped)

    def detach(self) -> None:
        """Give every module its own forward back."""
        for module in self.modules.values():
            if isinstance(vars(module).get("forward"), _Forward):
                del module.forward
                vars(module).pop("__prepare_scriptable__", None)

    def __enter__(self) -> Attached:
        return self

    def __exit__(self, *exc) -> None:
        self.detach()

    @contextlib.contextmanager
    def _scope(self) -> Iterator[None]:
        """Sequences are counted from when the outermost trace or edit opens."""
        if not self._open:
            self._sequences = {}
        self._open += 1
        try:
            yield
        finally:
            self._open -= 1

    def _check(self, edit: Intervention) -> None:
        if edit.module not in self.layers:
            raise ValueError(f"edit site {edit.site!r} names no attached layer; the layers are "
                             f"{', '.join(self.layers)}.")  # fmt: skip
        layer = self.layers[edit.module][1]
        sites = SITES[layer.cell_type]
        if edit.site_name not in sites:
            raise ValueError(f"edit site {edit.site!r}: {edit.module} has the sites "
                             f"{', '.join(sites)}.")  # fmt: skip
        _check_units_and_steps(edit, layer)

    def _block_edit(self, edit: Intervention, sequence: int | None) -> _BlockEdit:
        path = self.layers[edit.module][0]
        return _BlockEdit(edit, path, sequence, len(self._sequences.get(path, [])))

    def _warn_unreached(self, scoped: Sequence[_BlockEdit]) -> None:
        for block_edit in scoped:
            edit = block_edit.edit
            ran = [s.steps for s in self._sequences.get(block_edit.path, [])[block_edit.first :]
                   if block_edit.applies(s.index)]  # fmt: skip
            unreached = [step for step in edit.steps or () if ran and step >= max(ran)]
            if unreached:
                warnings.warn(f"attach: the edit of {edit.site} at step(s) "
                              f"{', '.join(map(str, unreached))} changed nothing: the longest "
                              f"sequence of {edit.module} in its block has {max(ran)} steps "
                              "(steps count from 0 in each sequence).", stacklevel=4)  # fmt: skip

    def _active(self, path: str) -> bool:
        return self._tracing or any(e.path == path for e in self._edits)

    def _sequence_of(self, path: str, state) -> _Sequence:
        """The sequence a call from `state` belongs to (module docstring): one it continues, or
        a new one."""
        sequences = self._sequences.setdefault(path, [])
        for sequence in reversed(sequences):
            if same_memory(state, sequence.final):
                return sequence
        sequences.append(_Sequence(len(sequences)))
        return sequences[-1]

    def run(self, path: str, module: nn.RNNBase, inputs, state=None):
        """Module `path`'s forward through the core: torch's outputs, sites recorded and edits
        applied, on the sequence the call continues or starts."""
        call = Call.of(module, inputs)
        _refuse_unreproducible_dropout(path, module, call.padded)
        sequence = self._sequence_of(path, state)
        state = call.batched_state(state)
        directions = 2 if module.bidirectional else 1
        values, finals, time = call.padded, [], call.padded.shape[1]
        for index in range(module.num_layers):
            name = layer_name(path, module, index)
            edits = [e.edit for e in self._edits if e.edit.module == name
                     and e.applies(sequence.index) and e.reaches(sequence.steps, time)]  # fmt: skip
            layer, part = self.layers[name][1], layer_state(state, index, directions)
            if edits or call.lengths is not None or time == 1:
                sites, final = traced_forward(layer, values, part, call.lengths, edits,
                                              sequence.steps, time_major=True)  # fmt: skip
            else:  # only recorded: torch's kernel runs it, the gates computed from its outputs
                # (a call of one step runs the core's step: the same products, done once)
                sites, final = fused_forward(layer, values, part)
            last = index == module.num_layers - 1
            if self._tracing:
                sequence.record(name, _recorded(sites, last), step_mask(call.lengths,
                                *values.shape[:2], values.device))  # fmt: skip
            values = sites["hidden"] if last else call.between_layers(sites["hidden"])
            finals.append(final)
        sequence.steps += call.padded.shape[1]
        final = tuple(torch.cat([f[part] for f in finals]) for part in range(len(finals[0])))
        outputs, final = call.restore(values, final if isinstance(module, nn.LSTM) else final[0])
        sequence.final = tuple(f.detach() for f in final) if isinstance(final, tuple) else (
            final.detach())  # fmt: skip
        return outputs, final


def _recorded(sites: dict[str, Tensor], returned: bool) -> dict[str, Tensor]:
    """What a trace keeps of a layer's `sites`: the top layer's hidden state, the module's output,
    copied, as what the model does next may change it in place (`nn.Dropout(inplace=True)`)."""
    if not returned:
        return sites
    return {
        **sites,
        "hidden": sites["hidden"].detach().clone(memory_format=torch.contiguous_format),
    }


def _check_units_and_steps(edit: Intervention, layer: TorchLayer) -> None:
    """One clear error for a unit outside every direction of `layer`, or a negative step."""
    width = layer.hidden_size * layer.directions
    directions = ""
    if layer.directions == 2:
        directions = f" ({layer.hidden_size} per direction: the forward one's, then the backward's)"
    for unit in edit.units or ():
        if not 0 <= unit < width:
            raise ValueError(f"edit {edit.site!r} names unit {unit}; {edit.module} has units "
                             f"0-{width - 1}{directions}.")  # fmt: skip
    for step in edit.steps or ():
        if step < 0:
            raise ValueError(f"edit {edit.site!r} names step {step}; steps count from 0 at each "
                             "sequence's first step.")  # fmt: skip


def _refuse_unreproducible_dropout(path: str, module: nn.RNNBase, inputs: Tensor) -> None:
    """A training step with dropout between layers on a GPU cannot equal the untraced one."""
    if (
        module.training
        and module.dropout
        and module.num_layers > 1
        and (inputs.device.type != "cpu")
    ):
        raise RuntimeError(f"attach: {path} runs in training mode with dropout={module.dropout} "
                           f"between its layers on {inputs.device}, whose fused kernel (cuDNN) "
                           "draws dropout masks no traced step can draw; trace or edit it in "
                           "evaluation mode (model.eval()), or on the CPU.")  # fmt: skip


class Trace(dict):
    """Sites by name, `[batch, time, units]`: the rows of every sequence the block ran, one
    sequence after the other, zero-padded in time. `valid` holds each layer's `[batch, time]`
    mask of the steps inside its sequences (False in padding and past a packed sequence's
    length); `sequences` each site's sequences apart, in the order they started."""

    def __init__(self):
        super().__init__()
        self.valid: dict[str, Tensor] = {}
        self.sequences: dict[str, list[Tensor]] = {}

    def keep(self, sequences_by_module) -> None:
        """Take what `sequences_by_module` (each module's `_Sequence`s) recorded, emptying them."""
        valid = defaultdict(list)
        for sequences in sequences_by_module:
            for sequence in sequences:
                for site, parts in sequence.sites.items():
                    self.sequences.setdefault(site, []).append(_joined(parts))
                for layer, parts in sequence.valid.items():
                    valid[layer].append(_joined(parts).to(torch.uint8))
                sequence.sites, sequence.valid = defaultdict(list), defaultdict(list)
        self.update({site: _joined(parts, pad_and_concatenate)
                     for site, parts in self.sequences.items()})  # fmt: skip
        self.valid.update({layer: _joined(parts, pad_and_concatenate).bool()
                           for layer, parts in valid.items()})  # fmt: skip


def _joined(parts: list[Tensor], join=lambda parts: torch.cat(parts, 1)) -> Tensor:
    """`parts` joined (in time, by default), as one contiguous tensor: a single part is copied
    once, and only where it is a view of other memory (the core's time-major sites)."""
    return parts[0].contiguous() if len(parts) == 1 else join(parts)


class _Forward:
    """The `forward` an attached module gets: torch's own unless a trace or an edit is open."""

    def __init__(self, attached: Attached, path: str, module: nn.RNNBase):
        self.attached, self.path, self.original = attached, path, type(module).forward
        self.module = module

    def refuse_scripting(self):
        """`torch.jit.script` calls this on each module before compiling it (as its
        `__prepare_scriptable__`): TorchScript cannot compile an attached forward."""
        name = self.path or type(self.module).__name__.lower()
        raise RuntimeError(f"torch.jit.script: {name} is attached (probes.attach), whose forward "
                           "TorchScript cannot compile: probe the eager model, then script it "
                           "after attached.detach().")  # fmt: skip

    def __call__(self, inputs, hx=None):
        if not self.attached._active(self.path):
            return self.original(self.module, inputs, hx)
        return self.attached.run(self.path, self.module, inputs, hx)


def attachment(model: nn.Module) -> Attached | None:
    """The attachment holding `model`'s layers (also a copy's, `copy.deepcopy` of an attached
    model), or None."""
    for module in model.modules():
        forward = vars(module).get("forward")
        if isinstance(forward, _Forward):
            return forward.attached
    return None


def attach(model: nn.Module) -> Attached:
    """Make every torch GRU and LSTM inside `model` traceable and editable (module docstring);
    a model attached already (or a copy of one) gets its attachment back."""
    if isinstance(model, torch.jit.ScriptModule):
        raise TypeError(f"attach: {type(model).__name__} {model.original_name} is TorchScript "
                        f"({SCRIPTED}): attach the eager module (the nn.Module before "
                        "torch.jit.script) and script it after probing.")  # fmt: skip
    existing = attachment(model)
    if existing is not None and existing.model is model:
        return existing
    return Attached(model)
