"""One model's cells of the matrix: every wired method of `questions.METHODS` measured on the
model's analysed rows (`targets.Rows`) by the suite's probes, as plain numbers and lists.

The methods are the probes' own (`probes.diagnostic.functional_group_of`,
`probes.activations.gate_saturation`, `probes.weights.connectivity`,
`probes.neuron_functions.identify_neurons` with `probes.neuron_manipulation.verify_neurons`,
`probes.neuron_functions.attributions_before_output`, `decomposition.py`'s contextual
decomposition and `redundant.py`'s swap of the redundant input); what is the atlas's is which
site, label and rows each reads (the pre-registration's counterparts) and the one number each cell
reports.
The same function measures a trained model and its untrained weights (the null). A language model
(paper 2's, on the rule corpus) has one layer where a seq2seq model has an encoder and a decoder:
its cells read that layer (`language_model_cells`).
"""

from __future__ import annotations

import functools
import math

import torch
from captum.attr import IntegratedGradients
from torch import Tensor

from experiments.atlas.decomposition import decomposition_cell
from experiments.atlas.redundant import redundant_cell
from experiments.atlas.targets import (
    NO_LABEL,
    RULE_CORPUS,
    Rows,
    decoder_steps,
    encoder_steps,
    omega_steps,
    table_index,
)
from experiments.engine.store import kept_step
from experiments.paper1.analyses import GRU_ROLES, THRESHOLDS
from lightning_modules.recurrent import Intervention
from probes.activations import gate_saturation
from probes.diagnostic import ablation_functional_group, functional_group_of
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
from probes.traces import site_samples
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


def update_gate(cell: str) -> str:
    """The gate read as the update gate: a GRU's, an LSTM's forget gate (paper 1's footnote 1)."""
    return GRU_ROLES[cell]["update_gate"]


def functional_group_cell(traced: Traced, labels: Tensor, gate: str, module: str = "decoder"
                          ) -> dict:  # fmt: skip
    """Paper 1's diagnostic classifier and functional group (the co-authors' procedure) of the
    `module`'s `gate` (a seq2seq model's decoder, a language model's `lstm`) for the table-index
    `labels` `[rows, time]`; the cell is the all-unit classifier's held-out accuracy (None with
    fewer than two labels)."""
    site = f"{module}.{gate}"
    trace = {site: traced.record[site], "label.table": labels,
             f"valid.{module}": labels != NO_LABEL}  # fmt: skip
    if len(torch.unique(labels[labels != NO_LABEL])) < 2:
        return {"value": None, "why": "fewer than two table indices among the analysed rows"}
    group = functional_group_of(*site_samples(trace, site, "label.table"))
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


def connectivity_cell(state: dict[str, Tensor], gate: str, module: str = "encoder") -> dict:
    """Paper 1's connectivity of the `module`'s recurrent `gate` matrix (a seq2seq model's
    encoder, a language model's `lstm`) at paper 1's encoder threshold; the cell is the hub share
    of the receiving units."""
    graph = connectivity(gate_weights(state, module, gate, "hh"), THRESHOLDS["encoder"])
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
    4's time the cells of `PAPER4_TIME` say why they do not apply (`does_not_apply`). A language
    model's rows (the rule corpus) are measured by `language_model_cells`."""
    if task == RULE_CORPUS:
        return language_model_cells(model, rows, cell, state)
    traced, gate = rows.traced, update_gate(cell)
    units = traced.record["decoder.hidden"].shape[-1]
    torch.manual_seed(0)
    why = untimed(traced.record)
    tokens = {} if why else {
        rows.names[token]: kept_step(f"token {rows.names[token]}", functools.partial(
            token_cells, model, traced, token, control_draws))
        for token in rows.tokens if identifiable(traced, token)
    }  # fmt: skip
    statistics = token_statistics(tokens, units)
    untimed_parts = {name: {"value": None, "does_not_apply": f"paper 4's time: {why}"}
                     for name in PAPER4_TIME} if why else {}  # fmt: skip
    parts = {
        "functional_groups": kept_step(
            "functional_groups",
            lambda: functional_group_cell(traced, table_index(traced, task), gate),
        ),
        "gate_saturation": saturation_cell(traced, gate),
        "connectivity": connectivity_cell(state, gate),
        "contextual_decomposition": kept_step(
            "contextual_decomposition", lambda: decomposition_cell(model, rows, task)
        ),
        "redundant_input": kept_step(
            "redundant_input", lambda: redundant_cell(model, rows, task, datamodule)
        ),
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


# ---- a language model's cells: paper 2's LSTM on the rule corpus ---------------------------------
LAYER = "lstm"
"""A language model's one recurrent layer (`lightning_modules.language_model.LanguageModel`):
what a seq2seq model's encoder and decoder are to its cells."""
ONE_RULE = (
    "the rule corpus has one rule (one alpha, one omega: paper 2, section 4.1), so its table "
    "index, alpha's identity, takes one value on every labelled step, and a diagnostic "
    "classifier needs two"
)
NO_PAPER4_STAGES = (
    "paper 4's stages do not follow a language model on the rule corpus: their first stage "
    "separates the analysed token's states from other analysed tokens' (storing), and the rule "
    "corpus has one analysed token, omega; their manipulations read the token from the model's "
    "own greedy outputs a step later, where a language model reads its corpus"
)
"""Why the `neuron_functions` cell does not apply to paper2_lm (`questions.AMENDMENTS`)."""


def next_token_probability(state: Tensor, tokens: Tensor, token: Tensor, model, step: int
                           ) -> Tensor:  # fmt: skip
    """P(`token` `[rows]` next) `[rows]` at the time `step` of `tokens` `[rows, time]` (the rows'
    own inputs) when the language model's hidden state there is `state` `[rows, units]`."""
    edit = Intervention(f"{LAYER}.hidden", steps=(step,), operation="replace",
                        value=state[:, None])  # fmt: skip
    logits, _ = model(tokens[:, : step + 1], edits=[edit])
    return logits[:, step].softmax(-1).gather(1, token[:, None])[:, 0]


def omega_attributions(model, traced: Traced, n_steps: int = 32) -> Tensor:
    """`[rows, units]`: integrated gradients (zero baseline, `n_steps`) of P(omega at T) with
    respect to h_(T-1), paper 4's time with alpha at t = 0 (`targets.steps_until_omega`): the
    state after the last conduit token, from which the language model predicts omega (it has no
    decoder step between reading its request and its first output), its inputs the rows' own."""
    steps = omega_steps(traced)
    hidden, tokens = traced.record[f"{LAYER}.hidden"], traced.batch["input"]
    maps = torch.zeros(hidden.shape[0], hidden.shape[-1])
    for step in torch.unique(steps).tolist():
        rows = torch.nonzero(steps == step).flatten()
        state = hidden[rows, step]
        with torch.enable_grad():
            maps[rows] = IntegratedGradients(next_token_probability).attribute(
                state.clone(), baselines=torch.zeros_like(state), n_steps=n_steps,
                additional_forward_args=(tokens[rows], traced.token[rows], model, step),
            ).detach()  # fmt: skip
    return maps


def layer_saturation_cell(traced: Traced, gate: str) -> dict:
    """Paper 1's gate saturation of a language model's `gate` per unit over every step of its
    rows; the cell is the median fraction left-saturated."""
    values = traced.record[f"{LAYER}.{gate}"]
    saturation = gate_saturation(values, torch.ones(values.shape[:2], dtype=torch.bool))
    left = saturation.left
    return {"value": float(left.median()),
            LAYER: {"left": left.tolist(), "right": saturation.right.tolist()}}  # fmt: skip


def language_model_cells(model, rows: Rows, cell: str, state: dict[str, Tensor]) -> dict:
    """Every cell of a language model (trained or untrained) on its rule rows
    (`targets.rule_corpus_rows`), in `measure_model`'s form: functional groups of its layer's
    update gate for alpha's identity (does not apply where that takes one value, `ONE_RULE`),
    gate saturation, connectivity, paper 2's contextual decomposition of omega's logit by alpha,
    the integrated gradients' concentration at h_(T-1) (`omega_attributions`); the redundant
    input and paper 4's stages (`NO_PAPER4_STAGES`) do not apply."""
    traced, gate = rows.traced, update_gate(cell)
    units = traced.record[f"{LAYER}.hidden"].shape[-1]
    labels = table_index(traced, RULE_CORPUS)
    empty = {"value": None, "why": "no analysed rows"}
    if not len(traced.token):
        groups = saturation = ig = empty
    else:
        one = len(torch.unique(labels[labels != NO_LABEL])) < 2
        groups = ({"value": None, "does_not_apply": ONE_RULE} if one
                  else functional_group_cell(traced, labels, gate, LAYER))  # fmt: skip
        saturation = layer_saturation_cell(traced, gate)
        ig = {"value": top_share(omega_attributions(model, traced)), "rows": len(traced.token)}
    parts = {
        "functional_groups": groups,
        "gate_saturation": saturation,
        "connectivity": connectivity_cell(state, gate, LAYER),
        "contextual_decomposition": decomposition_cell(model, rows, RULE_CORPUS),
        "integrated_gradients": ig,
        "neuron_functions": {"value": None, "does_not_apply": NO_PAPER4_STAGES},
        "redundant_input": redundant_cell(model, rows, RULE_CORPUS),
    }
    statistics = token_statistics({}, units) | {"ig_top_share": ig["value"]}
    return {
        "rows": len(traced.token),
        "requested": len(rows.correct),
        "answered": float(rows.correct.float().mean()),
        "units": units,
        "cells": {name: part["value"] for name, part in parts.items()},
        "statistics": statistics,
        **parts,
        "tokens": {},
    }
