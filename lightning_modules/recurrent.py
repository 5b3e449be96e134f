"""One recurrent core for the whole suite: GRU and LSTM layers that can be traced and edited.

`GRU` and `LSTM` subclass `torch.nn.GRU` / `torch.nn.LSTM` (one layer, batch first), so their
parameters have torch's names and shapes and state dicts load both ways. With nothing recorded
and nothing edited, `forward` is torch's fused kernel. Otherwise it runs a step function written
by hand (torch has no way to expose or edit gates inside its fused kernel) that computes
exactly torch's equations:

GRU (Cho et al. 2014, as in torch; Baan et al. 2019 section 2.2 writes the same cell with biases
omitted and the update gate mirrored, z_paper = 1 - update_gate)::

    reset_gate  r_t = sigmoid(W_ir x_t + b_ir + W_hr h_{t-1} + b_hr)
    update_gate z_t = sigmoid(W_iz x_t + b_iz + W_hz h_{t-1} + b_hz)
    candidate   n_t = tanh(W_in x_t + b_in + r_t * (W_hn h_{t-1} + b_hn))
    hidden      h_t = (1 - z_t) * n_t + z_t * h_{t-1}

LSTM (Hochreiter & Schmidhuber 1997, as in torch)::

    input_gate i_t, forget_gate f_t, output_gate o_t = sigmoid(...), candidate g_t = tanh(...)
    cell c_t = f_t * c_{t-1} + i_t * g_t;  hidden h_t = o_t * tanh(c_t)

Every site is `[batch, time, units]` with `units = hidden_size * directions`; in a bidirectional
layer units `0..hidden_size-1` are the forward direction and the rest the backward one, as in
torch's output. Positions past a sequence's length are 0 at every site (torch pads outputs with 0).

Edits are `Intervention`s (site, units, steps, operation, value): set, zero, scale, add or replace
chosen units at chosen steps, applied where the value is computed so that the edited value is
what flows on. They are passed to `forward` explicitly; nothing stays attached to a layer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

GRU_SITES = ("hidden", "update_gate", "reset_gate", "candidate")
LSTM_SITES = ("hidden", "cell", "input_gate", "forget_gate", "candidate", "output_gate")
SITES = {"gru": GRU_SITES, "lstm": LSTM_SITES}
"""The sites of each cell. Each is `hidden_size * directions` units wide."""

GATE_BLOCKS = {
    "gru": ("reset_gate", "update_gate", "candidate"),
    "lstm": ("input_gate", "forget_gate", "candidate", "output_gate"),
}
"""torch's layout of a recurrent layer's `weight_ih`, `weight_hh`, `bias_ih` and `bias_hh`: one
block of `hidden_size` rows per gate, in this order (the only place the suite spells it)."""


def gate_blocks(stacked: Tensor, cell_type: str, dim: int = 0) -> dict[str, Tensor]:
    """`stacked` (a torch weight or bias, or anything projected by one, along `dim`) split into
    its gates' blocks by name, in torch's order (:data:`GATE_BLOCKS`)."""
    names = GATE_BLOCKS[cell_type]
    return dict(zip(names, stacked.chunk(len(names), dim=dim), strict=True))


Operation = Literal["set", "zero", "scale", "add", "replace"]


@dataclass(frozen=True)
class Intervention:
    """Edit `units` of `site` at `steps` (None: all units / all steps).

    `site` is `"<module>.<site>"`, e.g. `"decoder.update_gate"` or `"encoder.hidden"`.
    `operation`:
      - `set`: units = value;  `zero`: units = 0;  `scale`: units *= value;  `add`: units += value
      - `replace`: units = value taken from another recording; `value` is `[batch, steps, units]`
        (one row per entry of `steps`, or per time step when `steps` is None), e.g. the same
        site recorded on another input, or at other steps
        (``recorded[:, source_steps][:, :, units]``).
    `value` for set/scale/add is a float or a tensor broadcastable to `[batch, len(units)]`; a
    3-d tensor `[batch, steps, units]` gives one value per edited step, as for `replace`.
    `rows` (a `(start, stop)` range of the batch; None: every row) restricts the edit to those
    rows, its `value`'s batch dimension then theirs: many edits, each on its own copy of a batch,
    run in one forward pass.
    """

    site: str
    units: tuple[int, ...] | None = None
    steps: tuple[int, ...] | None = None
    operation: Operation = "set"
    value: float | Tensor = 0.0
    rows: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.operation not in ("set", "zero", "scale", "add", "replace"):
            raise ValueError(
                f"Unknown intervention operation {self.operation!r}: "
                "use one of set, zero, scale, add, replace."
            )
        if "." not in self.site:
            raise ValueError(
                f"Intervention site {self.site!r} must be '<module>.<site>', "
                "e.g. 'decoder.update_gate'."
            )
        if self.operation == "replace" and not (
            isinstance(self.value, Tensor) and self.value.dim() == 3
        ):
            raise ValueError("A 'replace' intervention needs a [batch, steps, units] value tensor.")
        for name in ("units", "steps"):
            given = getattr(self, name)
            if given is not None:
                object.__setattr__(self, name, tuple(int(i) for i in given))

    @property
    def module(self) -> str:
        return self.site.rsplit(".", 1)[0]

    @property
    def site_name(self) -> str:
        return self.site.rsplit(".", 1)[1]

    def value_at(self, step: int) -> Tensor | float:
        """The value written at `step`: a per-step row of a 3-d value, else the value itself."""
        if isinstance(self.value, Tensor) and self.value.dim() == 3:
            row = step if self.steps is None else self.steps.index(step)
            return self.value[:, row]
        return self.value

    def apply(self, activation: Tensor, step: int) -> Tensor:
        """Return `activation` `[batch, units]` with this edit applied at `step` (not in place)."""
        if self.steps is not None and step not in self.steps:
            return activation
        units = slice(None) if self.units is None else list(self.units)
        rows = slice(None) if self.rows is None else slice(*self.rows)
        current = activation[rows, units]
        value = self.value_at(step)
        if isinstance(value, Tensor):
            value = value.to(dtype=activation.dtype, device=activation.device)
        if self.operation == "zero":
            new = torch.zeros_like(current)
        elif self.operation == "scale":
            new = current * value
        elif self.operation == "add":
            new = current + value
        else:  # set, replace
            new = torch.as_tensor(value, dtype=activation.dtype, device=activation.device)
            new = new.expand_as(current)
        edited = activation.clone()
        edited[rows, units] = new
        return edited

    def for_direction(self, direction: int, hidden_size: int, directions: int):
        """This edit restricted to one direction's units, re-indexed from 0 (None if none)."""
        if directions == 1:
            return self
        low, high = direction * hidden_size, (direction + 1) * hidden_size
        units = range(hidden_size * directions) if self.units is None else self.units
        positions = [i for i, unit in enumerate(units) if low <= unit < high]
        if not positions:
            return None
        value = self.value
        if isinstance(value, Tensor) and value.dim() > 0 and value.shape[-1] > 1:
            value = value[..., positions]
        local_units = tuple(units[i] - low for i in positions)
        return Intervention(self.site, local_units, self.steps, self.operation, value, self.rows)


def removal_edits(removed: dict[str, Sequence[int]]) -> tuple[Intervention, ...]:
    """Units held at zero at every step, by site (`{"encoder.hidden": units, ...}`): the units
    are removed from the network (paper 1's pruning, section 5.2)."""
    return tuple(
        Intervention(site, units=tuple(units), operation="zero") for site, units in removed.items()
    )


class LayerWeights(Protocol):
    """What the traced forward needs of a recurrent layer: its cell type, width, directions and
    each direction's `(weight_ih, weight_hh, bias_ih, bias_hh)` in torch's layout (a bias may be
    None). The suite's layers are one; `probes.attach` views a layer of a user's torch.nn.GRU or
    torch.nn.LSTM as one."""

    cell_type: str
    hidden_size: int
    directions: int

    def weights(self, direction: int) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]: ...


def traced_forward(
    layer: LayerWeights,
    inputs: Tensor,
    state: Tensor | tuple[Tensor, Tensor] | None = None,
    lengths: Tensor | None = None,
    edits: Sequence[Intervention] = (),
    first_step: int = 0,
    time_major: bool = False,
) -> tuple[dict[str, Tensor], tuple[Tensor, ...]]:
    """Run `layer` over `inputs` `[batch, time, features]` one step at a time by torch's equations
    (module docstring), applying `edits` to its sites.

    `state`: torch's `[directions, batch, hidden]` (a pair for LSTM) or None for zeros; `lengths`
    `[batch]` marks padding; `first_step` is the time index of the first step (edits name steps
    by it: a decoder called one step at a time passes its running count). Returns every site
    `[batch, time, units]` (0 past a sequence's length) and the final state as a tuple of
    `[directions, batch, hidden]` (hidden, and cell for LSTM), each sequence's at its length.
    The sites are contiguous, or with `time_major` views of contiguous `[time, batch, units]`
    memory: the layout of torch's own outputs (its batch-first output is such a view).
    """
    batch, time, _ = inputs.shape
    keep = None if lengths is None else step_mask(lengths, batch, time, inputs.device)
    names = SITES[layer.cell_type]
    direction_sites, finals = [], []
    for direction, carried in enumerate(_split_state(layer, state, batch, inputs)):
        local_edits = [e for e in (edit.for_direction(direction, layer.hidden_size,
                                                      layer.directions) for edit in edits)
                       if e is not None and e.site_name in names]  # fmt: skip
        per_step, carried = _run_direction(layer, direction, inputs, carried, keep, local_edits,
                                           first_step)  # fmt: skip
        axis = 0 if time_major else 1
        direction_sites.append([torch.stack(per_step[name], dim=axis) for name in names])
        finals.append(carried)
    joined = [parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)
              for parts in zip(*direction_sites, strict=True)]  # fmt: skip
    sites = {name: value.transpose(0, 1) if time_major else value
             for name, value in zip(names, joined, strict=True)}  # fmt: skip
    final = tuple(torch.stack([f[i] for f in finals]) for i in range(len(finals[0])))
    return sites, final


def _run_direction(layer, direction, inputs, carried, keep, edits, first_step):
    """One direction of `traced_forward`: every site's value at each step (in time order) and
    the final state. `keep` `[batch, time]` (None: no padding) holds a sequence's state past
    its length and zeroes its sites there."""
    step_function = STEPS[layer.cell_type]
    weight_ih, weight_hh, bias_ih, bias_hh = layer.weights(direction)
    projected = _linear(inputs, weight_ih, bias_ih)
    time = inputs.shape[1]
    per_step: dict[str, list[Tensor]] = {name: [None] * time for name in SITES[layer.cell_type]}
    for step in range(time) if direction == 0 else range(time - 1, -1, -1):
        new, sites = step_function(
            projected[:, step], carried, weight_hh, bias_hh, first_step + step, edits
        )
        if keep is None:  # every step inside its sequence: nothing to hold or zero
            # an alias, not the tensor itself: gradients then sum in the order they always
            # did (through a mask's `where`), so a fit's gradients keep every bit
            carried = tuple(n.view_as(n) for n in new)
        else:
            kept = keep[:, step].unsqueeze(-1)
            carried = tuple(torch.where(kept, n, c) for n, c in zip(new, carried, strict=True))
            sites = {name: value * kept for name, value in sites.items()}
        for name, value in sites.items():
            per_step[name][step] = value
    return per_step, carried


def _linear(inputs: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    projected = inputs @ weight.T
    return projected if bias is None else projected + bias


def _split_state(layer: LayerWeights, state, batch: int, like: Tensor) -> list[tuple[Tensor, ...]]:
    """torch's `[directions, batch, hidden]` initial state as one tuple per direction."""
    parts = 1 if layer.cell_type == "gru" else 2
    if state is None:
        zeros = like.new_zeros(layer.directions, batch, layer.hidden_size)
        state = zeros if parts == 1 else (zeros, zeros)
    if parts == 1:
        state = (state,)
    return [tuple(s[d] for s in state) for d in range(layer.directions)]


def gru_step(projected, carried, weight_hh, bias_hh, step, edits):
    """One GRU step from its input projection `W_i x_t + b_i` `[batch, 3 hidden]`: the new state
    `(hidden,)` and every site `[batch, hidden]`, `edits` applied where each is computed."""
    (hidden,) = carried
    recurrent = _linear(hidden, weight_hh, bias_hh)
    input_reset, input_update, input_candidate = gate_blocks(projected, "gru", -1).values()
    hidden_reset, hidden_update, hidden_candidate = gate_blocks(recurrent, "gru", -1).values()
    reset_gate = _edited("reset_gate", torch.sigmoid(input_reset + hidden_reset), step, edits)
    update_gate = _edited("update_gate", torch.sigmoid(input_update + hidden_update), step, edits)
    candidate = _edited(
        "candidate", torch.tanh(input_candidate + reset_gate * hidden_candidate), step, edits
    )
    new_hidden = _edited(
        "hidden", (1 - update_gate) * candidate + update_gate * hidden, step, edits
    )
    sites = {
        "hidden": new_hidden,
        "update_gate": update_gate,
        "reset_gate": reset_gate,
        "candidate": candidate,
    }
    return (new_hidden,), sites


def lstm_step(projected, carried, weight_hh, bias_hh, step, edits):
    """One LSTM step from its input projection `[batch, 4 hidden]`: the new `(hidden, cell)` and
    every site `[batch, hidden]`, `edits` applied where each is computed."""
    hidden, cell = carried
    pre = projected + hidden @ weight_hh.T  # the sums in the order the suite always used
    pre = pre if bias_hh is None else pre + bias_hh
    input_gate, forget_gate, candidate, output_gate = lstm_gates(pre, step, edits)
    new_cell = _edited("cell", forget_gate * cell + input_gate * candidate, step, edits)
    new_hidden = _edited("hidden", output_gate * torch.tanh(new_cell), step, edits)
    sites = {
        "hidden": new_hidden,
        "cell": new_cell,
        "input_gate": input_gate,
        "forget_gate": forget_gate,
        "candidate": candidate,
        "output_gate": output_gate,
    }
    return (new_hidden, new_cell), sites


def lstm_gates(pre: Tensor, step: int, edits: Sequence[Intervention]) -> tuple[Tensor, ...]:
    """An LSTM's input gate, forget gate, candidate and output gate from their pre-activations
    `W_i x_t + b_i + W_h h_{t-1} + b_h` `[..., 4 hidden]` (any leading axes: one step's
    `[batch]`, or every step's `[batch, time]` at once), `edits` applied."""
    pre_input, pre_forget, pre_candidate, pre_output = gate_blocks(pre, "lstm", -1).values()
    return (
        _edited("input_gate", torch.sigmoid(pre_input), step, edits),
        _edited("forget_gate", torch.sigmoid(pre_forget), step, edits),
        _edited("candidate", torch.tanh(pre_candidate), step, edits),
        _edited("output_gate", torch.sigmoid(pre_output), step, edits),
    )


STEPS = {"gru": gru_step, "lstm": lstm_step}


def sites_from_outputs(
    layer: LayerWeights, inputs: Tensor, outputs: Tensor, state: Tensor | tuple[Tensor, Tensor]
) -> dict[str, Tensor]:
    """Every site of `layer` after torch's fused kernel ran it, computed for all steps at once:
    by the equations (module docstring) the gates at step t are a function of x_t and h_{t-1},
    and `outputs` holds every h_t, so no step loop is needed (the LSTM cell, c_t = f_t c_{t-1} +
    i_t g_t, takes one elementwise product and sum per step). `inputs` `[time, batch, features]`,
    `outputs` the kernel's `[time, batch, units]`, `state` the initial `[directions, batch,
    hidden]` (a pair for LSTM); no padding and no edits (`traced_forward` runs those). Returns
    every site `[batch, time, units]`, contiguous, but `hidden`: a view of `outputs` itself."""
    hidden = outputs.transpose(0, 1)
    states = state if isinstance(state, tuple) else (state,)
    size = layer.hidden_size
    directions = []
    for direction in range(layer.directions):
        own = hidden[..., direction * size : (direction + 1) * size]
        first = states[0][direction].unsqueeze(1)
        previous = torch.cat([first, own[:, :-1]] if direction == 0 else [own[:, 1:], first], 1)
        weights = layer.weights(direction)
        if layer.cell_type == "gru":
            projected = _linear(inputs.transpose(0, 1), weights[0], weights[2])
            directions.append(gru_step(projected, (previous,), weights[1], weights[3], 0, ())[1])
            continue
        gates = lstm_gates(_pre_activations(inputs, previous, weights), 0, ())
        cell = _cells(*gates[:3], states[1][direction], reverse=direction == 1)
        directions.append(dict(zip(LSTM_SITES[1:], (cell, *gates), strict=True)))
    sites = {name: directions[0][name] if len(directions) == 1 else
             torch.cat([sites[name] for sites in directions], -1)
             for name in SITES[layer.cell_type][1:]}  # fmt: skip
    return {"hidden": hidden, **sites}


def _pre_activations(inputs: Tensor, previous: Tensor, weights) -> Tensor:
    """An LSTM's `W_i x_t + W_h h_{t-1} + b_i + b_h` at every step, `[batch, time, 4 hidden]`,
    from `inputs` `[time, batch, features]` and `previous` `[batch, time, hidden]` (h_{t-1}): one
    matrix product, the other added into it in place."""
    weight_ih, weight_hh, bias_ih, bias_hh = weights
    batch, time, _ = previous.shape
    flat = inputs.transpose(0, 1).reshape(batch * time, -1)
    if bias_ih is None:  # torch's bias=False drops both biases
        pre = flat @ weight_ih.T
    else:
        pre = torch.addmm(bias_ih + bias_hh, flat, weight_ih.T)
    return pre.addmm_(previous.reshape(batch * time, -1), weight_hh.T).view(batch, time, -1)


def _cells(input_gate, forget_gate, candidate, cell, reverse: bool) -> Tensor:
    """An LSTM's cell state at every step, `[batch, time, hidden]`, from its gates and initial
    cell `[batch, hidden]`, in time order (`reverse`: from the last step back)."""
    time = input_gate.shape[1]
    written = input_gate * candidate
    cells = [None] * time
    for step in range(time - 1, -1, -1) if reverse else range(time):
        cell = forget_gate[:, step] * cell + written[:, step]
        cells[step] = cell
    return torch.stack(cells, 1)


class _TracedRecurrent:
    """Shared forward of the traced GRU and LSTM (mixed into the torch classes below)."""

    cell_type: str
    hidden_size: int
    bidirectional: bool

    def __init__(self, input_size: int, hidden_size: int, bidirectional: bool = False, **kw):
        super().__init__(
            input_size, hidden_size, batch_first=True, bidirectional=bidirectional, **kw
        )
        if self.num_layers != 1:
            raise ValueError(
                "The traced recurrent layers have one layer: pass num_layers=1 "
                "(stack layers in the model instead)."
            )

    @property
    def directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def sites(self) -> tuple[str, ...]:
        return SITES[self.cell_type]

    def weights(self, direction: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        suffix = "_l0_reverse" if direction else "_l0"
        return tuple(getattr(self, name + suffix)
                     for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))  # fmt: skip

    def forward(  # type: ignore[override]
        self,
        inputs: Tensor,
        state: Tensor | tuple[Tensor, Tensor] | None = None,
        *,
        lengths: Tensor | None = None,
        record: dict[str, Tensor] | None = None,
        edits: Sequence[Intervention] = (),
    ):
        """Run over `inputs` `[batch, time, features]` like the torch layer.

        `lengths` `[batch]` marks padding (as `pack_padded_sequence` would). When `record` is a
        dict, every site is written into it as `[batch, time, units]`; `edits` are applied where
        they name this layer's sites. Returns `(outputs [batch, time, units], final_state)` with
        the final state shaped as torch's (`[directions, batch, hidden]`, a pair for LSTM).
        """
        if record is None and not edits:
            return self._fused(inputs, state, lengths)
        sites, final = traced_forward(self, inputs, state, lengths, edits)
        if record is not None:
            record.update(sites)
        return sites["hidden"], final[0] if self.cell_type == "gru" else final

    def step(
        self,
        inputs: Tensor,
        state: Tensor | tuple[Tensor, Tensor],
        step: int,
        edits: Sequence[Intervention] = (),
    ) -> tuple[Tensor | tuple[Tensor, Tensor], dict[str, Tensor]]:
        """One step of the forward direction, for decoders that feed back their own output.

        `inputs` `[batch, features]`, `state` `[batch, hidden]` (LSTM: a pair); `step` is the
        time index that `edits` refer to. Returns the new state and every site `[batch, units]`.
        """
        carried = (state,) if self.cell_type == "gru" else tuple(state)
        local = [e for e in edits if e.site_name in self.sites]
        weight_ih, weight_hh, bias_ih, bias_hh = self.weights(0)
        projected = _linear(inputs, weight_ih, bias_ih)
        new, sites = STEPS[self.cell_type](projected, carried, weight_hh, bias_hh, step, local)
        return (new[0] if self.cell_type == "gru" else new), sites

    def _fused(self, inputs: Tensor, state, lengths: Tensor | None):
        if lengths is None:
            return super().forward(inputs, state)
        packed = pack_padded_sequence(inputs, lengths.cpu(), batch_first=True, enforce_sorted=False)
        outputs, final = super().forward(packed, state)
        outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=inputs.shape[1])
        return outputs, final


def step_mask(lengths: Tensor | None, batch: int, time: int, device) -> Tensor:
    """`[batch, time]` True where a step is inside its sequence."""
    if lengths is None:
        return torch.ones(batch, time, dtype=torch.bool, device=device)
    return torch.arange(time, device=device)[None, :] < lengths.to(device)[:, None]


class Intervenable:
    """Scoped edits for a model: `with model.intervene(edits): ...` applies `edits` to every
    forward pass inside the block, on top of the model's own (`_edits`, e.g. removed units),
    and removes them on exit, even on an error. Every model of the suite has it."""

    _edits: tuple[Intervention, ...] = ()

    @contextlib.contextmanager
    def intervene(self, edits: Sequence[Intervention]) -> Iterator:
        previous = self._edits
        self._edits = previous + tuple(edits)
        try:
            yield self
        finally:
            self._edits = previous


def _edited(name: str, value: Tensor, step: int, edits: Sequence[Intervention]) -> Tensor:
    for edit in edits:
        if edit.site_name == name:
            value = edit.apply(value, step)
    return value


class GRU(_TracedRecurrent, nn.GRU):
    """`torch.nn.GRU` (one layer, batch first) that can record and edit its gates."""

    cell_type = "gru"


class LSTM(_TracedRecurrent, nn.LSTM):
    """`torch.nn.LSTM` (one layer, batch first) that can record and edit its gates and cell."""

    cell_type = "lstm"


def recurrent_layer(
    cell: Literal["gru", "lstm"], input_size: int, hidden_size: int, bidirectional: bool = False
) -> GRU | LSTM:
    """The suite's recurrent layer of the given cell type."""
    layers = {"gru": GRU, "lstm": LSTM}
    if cell not in layers:
        raise ValueError(f"Unknown cell {cell!r}: use 'gru' or 'lstm'.")
    return layers[cell](input_size, hidden_size, bidirectional=bidirectional)
