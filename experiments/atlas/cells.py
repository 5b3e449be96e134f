"""One model's cells of the matrix: every wired method of `questions.METHODS` measured on the
model's analysed rows (`targets.Rows`) by the suite's probes, as plain numbers and lists.

The methods are the probes' own (`probes.traces.site_functional_group`,
`probes.activations.gate_saturation`, `probes.weights.connectivity`,
`probes.neuron_functions.identify_neurons` with `probes.neuron_manipulation.verify_neurons`,
`probes.neuron_functions.attributions_before_output`, `decomposition.py`'s contextual
decomposition and `redundant.py`'s swap of the redundant input); what is the atlas's is which
site, label and rows each reads (the pre-registration's counterparts) and the one number each cell
reports.
The same function measures a trained model and its untrained weights (the null).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from experiments.atlas.decomposition import decomposition_cell
from experiments.atlas.redundant import redundant_cell
from experiments.atlas.targets import NO_LABEL, Rows, decoder_steps, encoder_steps, table_index
from experiments.paper1.analyses import GRU_ROLES, THRESHOLDS
from probes.activations import gate_saturation
from probes.diagnostic import ablation_functional_group
from probes.neuron_functions import (
    HYPOTHESES,
    Traced,
    analysable,
    attributions_before_output,
    hypothesis_samples,
    identify_neurons,
    untimed,
)
from probes.neuron_manipulation import verify_neurons
from probes.traces import site_functional_group
from probes.weights import connectivity, gate_weights

FUNCTIONS = (*HYPOTHESES, "outputting")
KEPT_COUNTS = ("counting_k1", "control.counting_k1", "storing_zero", "control.storing_zero")
"""The manipulations a token's record keeps (hits, rows): what the cells and questions read."""
TOP_SHARE = 0.1
"""The integrated-gradients cell: the share of the attribution held by this share of units."""
PAPER4_TIME = ("neuron_functions", "integrated_gradients")
"""The cells that read paper 4's time (`probes.neuron_functions.paper_time_states`): on a model
without it (`untimed`: paper 3's encoder hands its decoder its first and last states, twice its
own units) they do not apply, found when measured, and question 4's overlap is not judged."""
WIRED = ("functional_groups", "gate_saturation", "connectivity", "contextual_decomposition",
         "integrated_gradients", "neuron_functions", "redundant_input")  # fmt: skip
"""The methods measured so far; the others' cells are listed as not yet measured."""


def update_gate(cell: str) -> str:
    """The gate read as the update gate: a GRU's, an LSTM's forget gate (paper 1's footnote 1)."""
    return GRU_ROLES[cell]["update_gate"]


def functional_group_cell(traced: Traced, labels: Tensor, gate: str) -> dict:
    """Paper 1's diagnostic classifier and functional group (the co-authors' procedure) of the
    decoder's `gate` for the table-index `labels` `[rows, decoder time]`; the cell is the
    all-unit classifier's held-out accuracy (None with fewer than two labels)."""
    site = f"decoder.{gate}"
    trace = {site: traced.record[site], "label.table": labels, "valid.decoder": labels != NO_LABEL}
    if len(torch.unique(labels[labels != NO_LABEL])) < 2:
        return {"value": None, "why": "fewer than two table indices among the analysed rows"}
    group = site_functional_group(trace, site, "label.table", procedure="coauthors")
    return {"value": group.accuracy_all, "accuracy": group.accuracy, "size": group.size,
            "majority": group.majority, "units": group.units.tolist()}  # fmt: skip


def saturation_cell(traced: Traced, gate: str) -> dict:
    """Paper 1's gate saturation of `gate` per unit, the encoder over its source steps and the
    decoder over steps 0 .. T - 1; the cell is the encoder's median fraction left-saturated."""
    result = {}
    for module, mask in (("encoder", encoder_steps(traced)), ("decoder", decoder_steps(traced))):
        saturation = gate_saturation(traced.record[f"{module}.{gate}"], mask)
        result[module] = {"left": saturation.left.tolist(), "right": saturation.right.tolist()}
    return {"value": float(torch.tensor(result["encoder"]["left"]).median()), **result}


def connectivity_cell(state: dict[str, Tensor], gate: str) -> dict:
    """Paper 1's connectivity of the encoder's recurrent `gate` matrix at its threshold; the cell
    is the hub share of the receiving units."""
    graph = connectivity(gate_weights(state, "encoder", gate, "hh"), THRESHOLDS["encoder"])
    return {"value": graph.hub_share("to"), "edge_share": graph.edge_share, "edges": graph.edges}


def top_share(attributions: Tensor, share: float = TOP_SHARE) -> float:
    """The share of the mean absolute attribution `[rows, units]` held by the top `share` of units
    (at least one); 0 where every attribution is 0."""
    importance = attributions.abs().mean(0)
    count = max(1, math.ceil(share * len(importance)))
    top = torch.sort(importance, descending=True).values[:count]
    total = float(importance.sum())
    return float(top.sum()) / total if total > 0 else 0.0


def beyond_chance(first: set[int], second: set[int], units: int) -> float:
    """`questions.OVERLAP`: how far two unit sets out of `units` overlap beyond what random sets of
    their sizes do (1: the smaller inside the larger, 0: chance; 0 where either is empty)."""
    if not first or not second:
        return 0.0
    expected = len(first) * len(second) / units
    room = min(len(first), len(second)) - expected
    return (len(first & second) - expected) / room if room > 0 else 0.0


def identifiable(traced: Traced, token: int) -> bool:
    """Paper 4's stages can run on `token`: rows of it and of another token, some with T >= 2."""
    own = traced.token == token
    return analysable(traced, token) and bool((traced.position[own] >= 2).any())


def token_cells(model, traced: Traced, token: int, control_draws: int) -> dict:
    """Paper 4's three stages for one analysed token, the manipulations' hits, the integrated
    gradients' concentration, and question 4's functional group for steps remaining fitted on
    the counting hypothesis's own samples."""
    neurons = identify_neurons(model, traced, token)
    counts = verify_neurons(model, traced, neurons, control_draws)
    attributions = attributions_before_output(model, traced, token)[1]
    features, remaining = hypothesis_samples(traced, token)["counting"]
    group = ablation_functional_group(features, remaining)
    units = traced.states.shape[-1]
    return {
        **{function: neurons.units(function).tolist() for function in FUNCTIONS},
        "accuracy": neurons.accuracy,
        "counts": {name: counts[name] for name in KEPT_COUNTS if name in counts},
        "ig_top_share": top_share(attributions),
        "remaining_group": group.units.tolist(),
        "overlap": beyond_chance(set(neurons.counting.tolist()), set(group.units.tolist()), units),
    }


def pooled_rate(tokens: dict[str, dict], name: str) -> float:
    """Hits over rows of the manipulation `name`, pooled over the tokens (0 with no rows)."""
    hits = sum(t["counts"].get(name, [0, 0])[0] for t in tokens.values())
    rows = sum(t["counts"].get(name, [0, 0])[1] for t in tokens.values())
    return hits / rows if rows else 0.0


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def token_statistics(tokens: dict[str, dict], units: int) -> dict:
    """What the cells and questions read of the tokens' records: the counting manipulation's
    excess over its control (the `neuron_functions` cell), the storing manipulation's effect,
    the share of units found counting or storing, the integrated gradients' concentration and
    question 4's overlap, each pooled or averaged over the tokens (None with no token)."""
    if not tokens:
        return dict.fromkeys(("counting_excess", "storing_effect", "function_share",
                              "ig_top_share", "overlap"))  # fmt: skip
    return {
        "counting_excess": pooled_rate(tokens, "counting_k1")
        - pooled_rate(tokens, "control.counting_k1"),
        "storing_effect": pooled_rate(tokens, "control.storing_zero")
        - pooled_rate(tokens, "storing_zero"),
        "function_share": mean([len(set(t["counting"]) | set(t["storing"])) / units
                                for t in tokens.values()]),
        "ig_top_share": mean([t["ig_top_share"] for t in tokens.values()]),
        "overlap": mean([t["overlap"] for t in tokens.values()]),
    }  # fmt: skip


def measure_model(model, rows: Rows, task: str, cell: str, state: dict[str, Tensor],
                  control_draws: int, datamodule=None) -> dict:  # fmt: skip
    """Every wired cell of one model (trained or untrained) on its analysed `rows` (and, for a
    cell that reads whole splits, SCAN's redundant input, its run's `datamodule`): the cells'
    values under `cells`, what each was computed from beside them; for a model without paper
    4's time the cells of `PAPER4_TIME` say why they do not apply (`does_not_apply`)."""
    traced, gate = rows.traced, update_gate(cell)
    units = traced.record["decoder.hidden"].shape[-1]
    torch.manual_seed(0)
    why = untimed(traced.record)
    tokens = {} if why else {rows.names[token]: token_cells(model, traced, token, control_draws)
                             for token in rows.tokens if identifiable(traced, token)}  # fmt: skip
    statistics = token_statistics(tokens, units)
    untimed_parts = {name: {"value": None, "does_not_apply": f"paper 4's time: {why}"}
                     for name in PAPER4_TIME} if why else {}  # fmt: skip
    parts = {
        "functional_groups": functional_group_cell(traced, table_index(traced, task), gate),
        "gate_saturation": saturation_cell(traced, gate),
        "connectivity": connectivity_cell(state, gate),
        "contextual_decomposition": decomposition_cell(model, rows, task),
        "redundant_input": redundant_cell(model, rows, task, datamodule),
        **untimed_parts,
    }
    cells = {name: part["value"] for name, part in parts.items()}
    cells |= {"integrated_gradients": statistics["ig_top_share"],
              "neuron_functions": statistics["counting_excess"]}  # fmt: skip
    return {
        "rows": len(traced.token),
        "requested": len(rows.correct),
        "answered": float(rows.correct.float().mean()),
        "units": units,
        "cells": cells,
        "statistics": statistics,
        **parts,
        "tokens": tokens,
    }
