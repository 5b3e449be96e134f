"""What `python -m probes view` opens of an atlas cell: the rows a model's cells read, written into
the model's own run folder as the page's trace of split `atlas` (`traces/atlas/<tag>.safetensors`),
one file for the checkpoint the cells measure and one for its untrained weights (`epoch=init`,
the null) on the same rows, so the page's Side by side shows a model beside its null.

A trace holds up to `ROWS_PER_TOKEN` rows of each analysed token (the first in the rows' order:
by token, then T), as traced for the cells: every recorded site `[rows, time, units]`, the rows'
tokens (`batch.source` or a language model's `batch.input`), and for a seq2seq model its target
(`batch.target`) and greedy outputs (`prediction`) over the decoded steps. The steps shown
(`valid.<layer>`) are those the cells read: the encoder's source steps, the decoder's steps 0 ..
T - 1 (up to the one that outputs the analysed token), a language model's whole window. The
rows are the trained model's (at the default scale those it answers correctly at T), which its
untrained weights' cells read too. The trained model's measurement writes both files: about 0.1
MB a row at paper 4's default sizes, so at most 50 MB a file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from lightning_modules.sequences import PAD
from probes.neuron_functions import Traced, trace_rows
from storage import RunLayout
from storage.files import save_tensors_atomic, write_text_atomic
from storage.layout import UNTRAINED

if TYPE_CHECKING:  # the rows' module imports the tasks' DataModules: only where one is measured
    from experiments.atlas.targets import Rows

SPLIT = "atlas"
"""The split name of the atlas's traces in a run folder (beside the paper's own splits)."""
ROWS_PER_TOKEN = 10
"""The rows of each analysed token a trace keeps: enough to look at, a bounded file."""
MODULES = ("encoder", "decoder")
"""A seq2seq model's layers whose gates' saturation the cells record."""
SITES = {
    "functional_groups": "`decoder.update_gate` (an LSTM's `decoder.forget_gate`; paper 2's "
    "language model's `lstm.forget_gate`), over the steps whose table index the classifier reads",
    "gate_saturation": "`encoder.update_gate` (an LSTM's `encoder.forget_gate`, the language "
    "model's `lstm.forget_gate`)",
    "connectivity": "the encoder's recurrent update-gate weights, which the page does not show "
    "(it shows the gate they drive, `encoder.update_gate`)",
    "contextual_decomposition": "the page's Contextual decomposition of the analysed token's logit "
    "at the last decoder step shown (T - 1; the language model's last conduit token) into each "
    "source token's part; the cell takes the determining phrase's tokens as one phrase",
    "integrated_gradients": "`decoder.hidden` at the last step shown (T - 1; the language "
    "model's `lstm.hidden` at its last conduit token)",
    "neuron_functions": "`decoder.hidden` over the steps shown (paper 4's time 0 .. T - 1)",
    "redundant_input": "the examples' input: token positioning's line before its signal pair "
    "(SCAN's cell reads whole splits, not these rows)",
}
"""Where in the page each method's cell is read (`questions.METHODS`)."""


def shown(rows: Rows) -> Traced:
    """The rows a trace keeps: the first `ROWS_PER_TOKEN` of each analysed token."""
    token = rows.traced.token
    kept = [torch.nonzero(token == t).flatten()[:ROWS_PER_TOKEN] for t in rows.tokens]
    return rows.traced.rows(torch.cat(kept) if kept else torch.zeros(0, dtype=torch.long))


def traced_again(model, traced: Traced, task: str) -> Traced:
    """`model` (the same run's untrained weights) on the rows of `traced`, decoded as they were."""
    from experiments.atlas.targets import RULE_CORPUS, trace_language_model

    with torch.no_grad():
        if task == RULE_CORPUS:
            return trace_language_model(model, traced.batch)
        steps = traced.record["decoder.hidden"].shape[1]
        return trace_rows(model, traced.batch, steps, timed_only=False)


def to_steps(values: Tensor, steps: int) -> Tensor:
    """`values` `[rows, time]` cut or padded (`PAD`) to `steps` steps."""
    if values.shape[1] >= steps:
        return values[:, :steps]
    return torch.nn.functional.pad(values, (0, steps - values.shape[1]), value=PAD)


def view_trace(traced: Traced, task: str) -> dict[str, Tensor]:
    """The trace the page reads of `traced`'s rows: sites, tokens and the steps shown."""
    from experiments.atlas.targets import RULE_CORPUS, decoder_steps, encoder_steps

    entries = dict(traced.record)
    if task == RULE_CORPUS:
        tokens = traced.batch["input"]
        return {**entries, "batch.input": tokens,
                "valid.lstm": torch.ones(tokens.shape, dtype=torch.bool)}  # fmt: skip
    steps = traced.record["decoder.hidden"].shape[1]
    return {
        **entries,
        "batch.source": traced.batch["source"],
        "batch.source_lengths": traced.batch["source_lengths"],
        "batch.target": to_steps(traced.batch["target"], steps),
        "prediction": to_steps(traced.outputs, steps),
        "valid.encoder": encoder_steps(traced),
        "valid.decoder": decoder_steps(traced),
    }


def unit_analysis(record: dict, task: str, cell: str) -> dict:
    """What the page orders a trace's units by (`{"analysis": ...}`, keyed by site as its unit
    orders read them) from the cells `record` of a model of `cell` (`cells.measure_model`): the
    functional group of the update gate (an LSTM's forget gate) first, the gates by saturation,
    and the units paper 4's stages found for each function and analysed token, first in
    `decoder.hidden` (named `neuron_functions.counting units of 'the'`, and so on)."""
    from experiments.atlas.cells import FUNCTIONS, LAYER, update_gate
    from experiments.atlas.targets import RULE_CORPUS

    gate = update_gate(cell)
    grouped, saturated = (LAYER, (LAYER,)) if task == RULE_CORPUS else ("decoder", MODULES)
    group = (record.get("functional_groups") or {}).get("units")
    saturation = record.get("gate_saturation") or {}
    analysis = {
        "functional_groups": {f"{grouped}.{gate}": {"units": group}} if group else {},
        "gate_saturation": {f"{module}.{gate}": saturation[module] for module in saturated
                            if module in saturation},
        "neuron_functions": {
            f"{function} units of '{token}'": {"decoder.hidden": {"units": found[function]}}
            for function in FUNCTIONS for token, found in record.get("tokens", {}).items()
            if found.get(function)
        },
    }  # fmt: skip
    return {"analysis": analysis}


def write_unit_analysis(run: Path, tag: str, record: dict, task: str, cell: str) -> Path:
    """`unit_analysis` of `record` beside the run's trace of split `SPLIT` at `tag`."""
    path = RunLayout(run).trace_analysis(SPLIT, tag)
    return write_text_atomic(path, json.dumps(unit_analysis(record, task, cell), indent=1))


def write_view_traces(run: Path, tag: str, rows: Rows, task: str, untrained) -> list[Path]:
    """The run's traces of split `SPLIT`: `shown(rows)` as measured at `tag`, and the same rows
    read by the run's `untrained` weights (`UNTRAINED`), each written atomically."""
    kept = shown(rows)
    layout = RunLayout(run)
    return [
        save_tensors_atomic(view_trace(traced, task), layout.trace(SPLIT, name),
                            {"split": SPLIT, "tag": name})
        for name, traced in ((tag, kept), (UNTRAINED, traced_again(untrained, kept, task)))
    ]  # fmt: skip
