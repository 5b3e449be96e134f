"""Paper 1's pre-registered readings measured on one model (`reports/paper1/preregistration.md`,
items 6-7), from its weights alone (inference only):

- item 6, Figure 4 by the authors' gate data and counting: sample1's heldout tables, heldout
  compositions and new compositions and their length-4 versions (`authors_files`), decoded
  greedily, each gate unit's fraction of steps below 0.1 and above 0.9 over every recorded step of
  every file (`authors_saturation`, the authors' `inspect_gate_activations.py`; torch's z);
- item 7, Figure 2's threshold over all of a GRU layer's weights (`all_weight_shares`) and
  polarity as the sign of a neuron's mean weight (`mean_sign`).

`measure_readings` gives a run's record (`runs.optional_fields`, group `readings`); the claims
are `experiments.paper1.reading_claims`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import DataLoader

from datamodules.machine_tasks import SAMPLE1, resolve_longer, resolve_sample1
from datamodules.sequences import collate_sequences, encode_pair
from datamodules.text_files import read_rows
from experiments.paper1.analyses import GATES, MODULES, THRESHOLDS
from lightning_modules.recording import pad_and_concatenate, record_split
from probes.activations import gate_saturation
from probes.traces import site_values, valid_steps
from probes.weights import gate_weights
from storage.run_folder import RunFolder

AUTHORS_TASKS = ("heldout_tables", "heldout_compositions", "new_compositions")
"""The authors' `get_hidden_activations.py` files: the length-2 test sets and their length-4
versions (no heldout inputs)."""
POLAR_MATRICES = {"encoder W_hz": ("encoder", "hh", 1), "decoder W_iz": ("decoder", "ih", 0)}
"""Figure 2's update-gate matrices: module, kind and the dim a neuron's mean is over (encoder:
a row of W_hz, decoder: a column of W_iz); its reset-gate partner is the same block of r."""
OUTLIER_MADS = 3
"""A strongly polar neuron's mean lies more than this many scaled MADs from the median."""
MAD_SCALE = 1.4826
"""The MAD of a normal distribution times this is its standard deviation."""

Rows = list[tuple[str, str]]


def read_pairs(path: Path) -> Rows:
    """A machine-tasks file's rows as (input, outputs): its first two tab-separated columns
    (`read_rows`: UTF-8, non-blank lines)."""
    rows = read_rows(path, "'input<TAB>outputs'", "copy it again from machine-tasks")
    return [tuple(part.strip() for part in line.split("\t")[:2]) for _, line in rows]


def atomic_tables(train: Rows) -> dict[str, dict[str, str]]:
    """Each table's map from sample1's one-table training rows (`bits tN .` -> `bits out`)."""
    tables: dict[str, dict[str, str]] = {}
    for source, target in train:
        tokens, outputs = source.split(), target.split()
        if len(tokens) == 3 and tokens[2] == "." and len(outputs) == 2:
            tables.setdefault(tokens[1], {})[tokens[0]] = outputs[1]
    return tables


def unfollowed_row(rows: Rows, tables: dict[str, dict[str, str]]) -> str | None:
    """The first row whose outputs do not follow from `tables` (the input first, then each table
    applied to the output before), as a reason; None where every row follows."""
    for number, (source, target) in enumerate(rows, 1):
        tokens, outputs = source.split(), target.split()
        bits, names = tokens[0], [t for t in tokens[1:] if t != "."]
        expected = [bits]
        for name in names:
            expected.append(tables.get(name, {}).get(expected[-1], "?"))
        if outputs != expected:
            return (f"row {number} ({source!r} -> {target!r}) does not follow from sample1's "
                    f"atomic tables (train.tsv): expected {' '.join(expected)!r}")  # fmt: skip
    return None


def authors_files() -> tuple[dict[str, Rows], dict[str, str]]:
    """The six files of item 6 by name (`heldout_tables`, ..., `heldout_tables4`, ...), the
    length-4 ones with the `.` ending the input appended as sample1's rows have it, and the files
    left out with why (a length-4 file some row of which does not follow from sample1's atomic
    tables). Either folder missing is one clear error naming the fix."""
    sample1, _ = resolve_sample1()
    longer, _ = resolve_longer()
    tables = atomic_tables(read_pairs(sample1 / "train.tsv"))
    files = {task: read_pairs(sample1 / f"{task}.tsv") for task in AUTHORS_TASKS}
    left_out = {}
    for task in AUTHORS_TASKS:
        rows = [(f"{source} .", target) for source, target in read_pairs(longer / f"{task}4.csv")]
        reason = unfollowed_row(rows, tables)
        if reason is None:
            files[f"{task}4"] = rows
        else:
            left_out[f"{task}4"] = reason
    return files, left_out


def encoded(rows: Rows, source_vocab: list[str], target_vocab: list[str], source_eos: bool,
            target_eos: bool) -> list[dict[str, Tensor]]:  # fmt: skip
    """`rows` as the model's datamodule encodes its own (the keys a trace reads); a token its
    vocabulary lacks is one ValueError."""
    source_ids = {t: i for i, t in enumerate(source_vocab)}
    target_ids = {t: i for i, t in enumerate(target_vocab)}
    items = []
    for index, (source, target) in enumerate(rows):
        unknown = [t for t in source.split() if t not in source_ids]
        unknown += [t for t in target.split() if t not in target_ids]
        if unknown:
            raise ValueError(f"row {source!r} has tokens the model does not know: {unknown}")
        pair = encode_pair(source.split(), target.split(), source_ids, target_ids, source_eos,
                           target_eos)  # fmt: skip
        items.append({**pair, "index": torch.tensor(index)})
    return items


def authors_saturation(traces: list[dict[str, Tensor]]) -> dict[str, dict[str, list[float]]]:
    """Per gate site of `GATES` and unit, the fraction of steps left-saturated (< 0.1) and
    right-saturated (> 0.9) over every recorded step of every trace in `traces` (one per file):
    the authors' counting, steps pooled, not files averaged."""
    joined = {key: pad_and_concatenate([t[key] for t in traces]) for key in traces[0]}
    counted = {}
    for site in GATES:
        saturation = gate_saturation(site_values(joined, site), valid_steps(joined, site))
        counted[site] = {"left": saturation.left.tolist(), "right": saturation.right.tolist()}
    return counted


def authors_gates(run: RunFolder, tag: str) -> dict:
    """Item 6 of one model at `tag`: the files read (`authors_files`), those left out and why, and
    the authors' counting over the greedy traces of the files read; where the model did not train
    on sample1 (the files' vocabulary), `unavailable` says so instead."""
    data = run.datamodule(tag)
    if data.data_dir != SAMPLE1:
        return {"unavailable": f"the model trained on {data.data_dir or 'generated tables'}, "
                               "not machine-tasks' sample1"}  # fmt: skip
    rows, left_out = authors_files()
    model = run.model(tag)
    vocabularies = (data.source_vocab, data.target_vocab, data.source_eos, data.target_eos)
    traces = []
    with torch.no_grad():
        for name in rows:
            loader = DataLoader(encoded(rows[name], *vocabularies), batch_size=256,
                                collate_fn=collate_sequences)  # fmt: skip
            traces.append(record_split(model, loader))
    return {"files": {name: len(r) for name, r in rows.items()}, "left_out": left_out,
            "saturation": authors_saturation(traces)}  # fmt: skip


def all_weight_shares(state: dict[str, Tensor]) -> dict[str, float]:
    """Per module, the share of every weight of its GRU layer (`weight_ih_l0` and
    `weight_hh_l0`, all three blocks) with |w| at least Figure 2's threshold."""
    shares = {}
    for module in MODULES:
        weights = torch.cat(
            [state[f"{module}.weight_{kind}_l0"].flatten() for kind in ("ih", "hh")]
        )
        shares[module] = float((weights.abs() >= THRESHOLDS[module]).double().mean())
    return shares


def strongly_polar(means: Tensor) -> list[int]:
    """The neurons whose mean weight is an outlier of their matrix: |mean - median| > 3 x
    1.4826 x MAD over the matrix's neurons (numpy's median)."""
    values = means.double().numpy()
    median = np.median(values)
    mad = np.median(np.abs(values - median))
    return np.flatnonzero(np.abs(values - median) > OUTLIER_MADS * MAD_SCALE * mad).tolist()


def mean_sign(state: dict[str, Tensor]) -> dict[str, dict[str, list[int]]]:
    """Per update-gate matrix of `POLAR_MATRICES`: its strongly polar neurons (`polar`, by the
    mean of all of a neuron's weights) and those of them whose mean weight in the reset gate's
    matrix has the opposite sign (`opposite`)."""
    found = {}
    for matrix, (module, kind, dim) in POLAR_MATRICES.items():
        update = gate_weights(state, module, "update_gate", kind).mean(dim)
        reset = gate_weights(state, module, "reset_gate", kind).mean(dim)
        polar = strongly_polar(update)
        opposite = [u for u in polar if float(update[u]) * float(reset[u]) < 0]
        found[matrix] = {"polar": polar, "opposite": opposite}
    return found


def measure_readings(run: RunFolder, tag: str) -> dict:
    """Items 6-7 of the baseline or guided GRU in `run` at `tag` (its analysed checkpoint, or
    `UNTRAINED`)."""
    state = run.state_dict(tag)
    return {"all_weights": all_weight_shares(state), "mean_sign": mean_sign(state),
            "authors_gates": authors_gates(run, tag)}  # fmt: skip
