"""The atlas's questions judged from records (`experiments.atlas.claims`): `claims.NEEDS`, which
the report reads to say what an unjudged claim waits for, names every cell its claim reads."""

from __future__ import annotations

import random

from experiments.atlas.claims import NEEDS, Records, claims_of
from experiments.atlas.questions import METHODS, MODELS, RULES

STATISTICS = {
    "neuron_functions": ("counting_excess", "storing_effect", "function_share", "overlap"),
    "integrated_gradients": ("ig_top_share",),
}
"""The record's `statistics` each method's cell reports (paper 4's stages, its integrated
gradients)."""


def measured_side(generator: random.Random) -> dict:
    """One model's measurements (trained or untrained) holding every method's cell, part and
    statistic, each a value drawn from `generator`."""
    cells = {method: generator.uniform(-1, 1) for method in METHODS}
    units = [generator.random() for _ in range(6)]
    parts = {method: {"value": value} for method, value in cells.items()}
    parts["gate_saturation"] = {"value": cells["gate_saturation"], "encoder": {"left": units}}
    statistics = {name: generator.uniform(-1, 1) for names in STATISTICS.values() for name in names}
    return {"cells": cells, "statistics": statistics, **parts}


def every_cell() -> Records:
    """Two seeds of every model of the matrix, each trained and untrained, every cell measured."""
    generator = random.Random(0)
    return {(model, seed): {**measured_side(generator), "untrained": measured_side(generator)}
            for model in MODELS for seed in (0, 1)}  # fmt: skip


def only_cells(side: dict, methods: set[str]) -> dict:
    """`side` with every cell but those of `methods` not measured: its value, part and statistics
    None, as a record holds a cell it could not measure."""
    kept = {name for method in methods for name in STATISTICS.get(method, ())}
    return {
        "cells": {m: value if m in methods else None for m, value in side["cells"].items()},
        "statistics": {name: value if name in kept else None
                       for name, value in side["statistics"].items()},
        **{method: side[method] if method in methods else {"value": None} for method in METHODS},
    }  # fmt: skip


def only_needs(records: Records, needs: tuple[tuple[str, str], ...]) -> Records:
    """`records` of the models of `needs` alone, each holding only the cells (model, method) of
    `needs` measured."""
    methods: dict[str, set[str]] = {}
    for model, method in needs:
        methods.setdefault(model, set()).add(method)
    return {(model, seed): {**only_cells(record, methods[model]),
                            "untrained": only_cells(record["untrained"], methods[model])}
            for (model, seed), record in records.items() if model in methods}  # fmt: skip


def test_each_claim_reads_only_the_cells_its_needs_name():
    """Every claim, judged from records where only the cells `NEEDS` names for it are measured, is
    the claim judged from every cell (the same statistic, verdict and null): a claim that read a
    cell `NEEDS` does not list would be missing or differ here."""
    records = every_cell()
    full = {claim.id: claim for claim in claims_of(records)}
    assert set(full) == set(RULES) == set(NEEDS)
    for claim_id, needs in NEEDS.items():
        alone = {claim.id: claim for claim in claims_of(only_needs(records, needs))}
        assert alone.get(claim_id) == full[claim_id], claim_id
