"""Probes of the parameter space: gate weight matrices, connectivity graphs and unit strength.

Baan et al. 2019 (paper 1), section 3: weight heat maps (3.1) and connectivity graphs in which
neurons are nodes and weights above a threshold are edges (3.2); the strength of a unit's
connections ranks units for the functional-group check of 4.1 and for the pruning of 5.2.
Weight matrices follow torch: `[to_units, from_units]`, rows are the receiving neurons (the
"top layer" of the paper's Figure 2), columns the sending ones (the "bottom layer").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from lightning_modules.recurrent import GATE_BLOCKS, gate_blocks


def recurrent_cell(state_dict: dict[str, Tensor], module: str, layer: int = 0) -> str:
    """`gru` or `lstm`: the cell of `module`, from its recurrent weights' shape (`[3 units, units]`
    or `[4 units, units]`); a ValueError for any other shape."""
    rows, units = state_dict[f"{module}.weight_hh_l{layer}"].shape
    cells = {len(gates) * units: cell for cell, gates in GATE_BLOCKS.items()}
    if rows not in cells:
        raise ValueError(
            f"{module}.weight_hh_l{layer} is [{rows}, {units}], neither a GRU's nor an LSTM's "
            "recurrent weights"
        )
    return cells[rows]


def gate_weights(
    state_dict: dict[str, Tensor],
    module: str,
    gate: str,
    kind: Literal["ih", "hh"],
    convention: str = "torch",
    layer: int = 0,
) -> Tensor:
    """The `[units, inputs]` block of `<module>.weight_<kind>_l<layer>` that feeds `gate`: the
    paper's `W_ir`, `W_iz`, `W_ih` (kind `ih`) or `W_hr`, `W_hz`, `W_hh` (kind `hh`) of a GRU,
    or an LSTM's `input_gate`, `forget_gate`, `candidate` or `output_gate` block (the cell read
    from the weights' shape, `recurrent_cell`); a gate the cell lacks is a ValueError.

    Sign convention: torch's update gate `z` keeps the old state (`h = (1 - z) n + z h_prev`),
    paper 1's keeps the new one; with `convention="paper1"` the update gate's block is negated
    (paper 1's `W_z` is minus torch's; `probes.traces.site_values` flips its values alike).
    """
    cell = recurrent_cell(state_dict, module, layer)
    if gate not in GATE_BLOCKS[cell]:
        raise ValueError(
            f"{module} (layer {layer}) is an {cell.upper()}, which has no {gate}: its gates are "
            f"{', '.join(GATE_BLOCKS[cell])}"
        )
    weight = gate_blocks(state_dict[f"{module}.weight_{kind}_l{layer}"], cell)[gate]
    return -weight if convention == "paper1" and gate == "update_gate" else weight


def unit_strength(state_dict: dict[str, Tensor], module: str) -> Tensor:
    """Summed absolute weight of every connection of each unit of a recurrent layer: its
    incoming rows of `weight_ih` and `weight_hh` (all gates) and its outgoing column of
    `weight_hh`. Returns `[units]`. Paper 1 ranks units by this to find "the strongest
    absolute weight values" (4.1) and "the neurons with the biggest weights" (5.2)."""
    return _summed_per_unit(state_dict, module, torch.abs)


def strong_edge_count(state_dict: dict[str, Tensor], module: str, threshold: float) -> Tensor:
    """How many of the connections `unit_strength` sums for each unit of a recurrent layer have
    |w| >= `threshold` (paper 1's strong edges: 0.2 encoder, 0.17 decoder). Returns `[units]`."""
    return _summed_per_unit(state_dict, module, lambda w: (w.abs() >= threshold).long())


def _summed_per_unit(state_dict: dict[str, Tensor], module: str,
                     weigh: Callable[[Tensor], Tensor]) -> Tensor:  # fmt: skip
    """`weigh` of each connection of a recurrent layer's units, summed per unit over its incoming
    rows of `weight_ih` and `weight_hh` (all gates) and its outgoing column of `weight_hh`."""
    weight_ih = weigh(state_dict[f"{module}.weight_ih_l0"])
    weight_hh = weigh(state_dict[f"{module}.weight_hh_l0"])
    units = weight_hh.shape[1]
    gates = len(GATE_BLOCKS[recurrent_cell(state_dict, module)])
    incoming = (weight_ih.sum(1) + weight_hh.sum(1)).view(gates, units).sum(0)
    return incoming + weight_hh.sum(0)


def strongest_units(strength: Tensor, share: float, ties: Tensor | None = None) -> Tensor:
    """Indices of the `ceil(share * units)` strongest units, strongest first; ties by `ties`
    (larger first) where given, then by index."""
    count = math.ceil(share * strength.numel() - 1e-9)
    order = torch.arange(strength.numel())
    for key in (ties, strength):  # stable sorts: the last one decides first
        if key is not None:
            order = order[torch.sort(key[order], descending=True, stable=True).indices]
    return order[:count]


@dataclass(frozen=True)
class Connectivity:
    """The graph of one weight matrix `[to, from]` thresholded at `|w| >= threshold`.

    `degree_to` `[to]` / `degree_from` `[from]`: strong edges per receiving / sending neuron;
    `polarity_to` / `polarity_from`: mean sign of each neuron's strong edges (+1 all positive,
    -1 all negative, 0 with none)."""

    threshold: float
    edges: int
    edge_share: float
    degree_to: Tensor
    degree_from: Tensor
    polarity_to: Tensor
    polarity_from: Tensor

    def connected(self, side: Literal["to", "from"]) -> int:
        """Neurons on `side` with at least one strong edge."""
        return int((getattr(self, f"degree_{side}") > 0).sum())

    def hub_share(self, side: Literal["to", "from"], share: float = 0.05) -> float:
        """Share of the strong edges held by the best-connected `share` of neurons on `side`
        (uniformly spread edges give about `share`; a few hubs give much more)."""
        degree = getattr(self, f"degree_{side}").double()
        if self.edges == 0:
            return 0.0
        top = torch.sort(degree, descending=True).values[: math.ceil(share * degree.numel())]
        return float(top.sum() / degree.sum())

    def polar(self, side: Literal["to", "from"], min_edges: int = 3, purity: float = 0.9) -> int:
        """Neurons on `side` with at least `min_edges` strong edges of which a share of at least
        `purity` have one sign (the paper's "strongly polar neurons, whose weights are on
        average negative or positive")."""
        degree = getattr(self, f"degree_{side}")
        polarity = getattr(self, f"polarity_{side}")
        agreeing = (1 + polarity.abs()) / 2  # share of edges with the majority sign
        return int(((degree >= min_edges) & (agreeing >= purity)).sum())


def connectivity(weight: Tensor, threshold: float) -> Connectivity:
    """Paper 1, section 3.2 (Figure 2): `weight` `[to, from]` as a graph of strong edges."""
    strong = weight.abs() >= threshold
    signs = torch.sign(weight) * strong
    degree_to, degree_from = strong.sum(1), strong.sum(0)
    return Connectivity(
        threshold=threshold,
        edges=int(strong.sum()),
        edge_share=float(strong.float().mean()),
        degree_to=degree_to,
        degree_from=degree_from,
        polarity_to=signs.sum(1) / degree_to.clamp_min(1),
        polarity_from=signs.sum(0) / degree_from.clamp_min(1),
    )


def polarity_correlation(first: Tensor, second: Tensor, dim: int = 1) -> float:
    """Pearson correlation over neurons of the mean weight of each neuron in two matrices of the
    same shape (`dim=1`: per receiving neuron, `dim=0`: per sending neuron). Paper 1, 3.2: the
    polarities of update and reset gates are "inversely related" (a negative correlation).
    `torch.corrcoef`; 0 where a mean is constant (no correlation to speak of)."""
    means = torch.stack([first.double().mean(dim), second.double().mean(dim)])
    return float(torch.corrcoef(means)[0, 1].nan_to_num(0.0))  # a constant mean: 0, not NaN
