"""What paper 4's claims and report read off one model's analysis (`analysis.analyse`'s dict):
per-model and per-token means, a manipulation's accuracy, and the statistics the added claims
judge (units that jump up and then fall, the chance that random groups share a unit, ...).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

FUNCTIONS = ("storing", "counting", "triggering", "outputting")


def per_model(analyses: list[dict], read) -> list[float]:
    """`read(analysis)` of every model, as floats."""
    return [float(read(a)) for a in analyses]


def mean_over_tokens(analysis: dict, read) -> float:
    """The mean of `read(token)` over one model's analysed tokens, NaN values left out."""
    values = [read(t) for t in analysis["tokens"].values()]
    values = [v for v in values if v == v]  # drop NaN
    return float(np.mean(values)) if values else float("nan")


def manipulation_accuracy(analysis: dict, name: str) -> float:
    """The accuracy after manipulation `name`, every token's rows pooled (NaN with none)."""
    hits = sum(t["verification"].get(name, [0, 0])[0] for t in analysis["tokens"].values())
    rows = sum(t["verification"].get(name, [0, 0])[1] for t in analysis["tokens"].values())
    return hits / rows if rows else float("nan")


def registered_measured(analyses: Sequence[dict]) -> bool:
    """Whether every analysis records what items 2-4's registered rules read (each token's
    `counting_units` and `others_abs`, the `counting_rises_by_drop`)."""
    return all("counting_rises_by_drop" in a and all(
        "counting_units" in t and "others_abs" in t for t in a["tokens"].values())
        for a in analyses)  # fmt: skip


def up_then_down(analysis: dict) -> tuple[int, float]:
    """Among one model's counting units that jump up at t = 0 (mean h_0 - h_-1 > 0, every
    token's pooled): how many then fall (mean h_(T-1) - h_0 < 0), and their share (NaN with
    none jumping up)."""
    rises = [rise for t in analysis["tokens"].values()
             for jump, rise in zip(t["counting_units"]["jump"], t["counting_units"]["rise"],
                                   strict=True) if jump > 0]  # fmt: skip
    falling = sum(rise < 0 for rise in rises)
    return falling, falling / len(rises) if rises else float("nan")


def chance_of_a_shared_unit(token: dict, units: int) -> float:
    """The probability that the four function groups, drawn as random sets of their sizes among
    `units`, share a unit: 1 - P(pairwise disjoint), the groups drawn one after another."""
    disjoint, taken = 1.0, 0
    for size in sorted(len(token[f]) for f in FUNCTIONS):
        disjoint *= math.comb(units - taken, size) / math.comb(units, size)
        taken += size
    return 1.0 - disjoint


def positions_where_storing_matters(analysis: dict) -> float:
    """Share of the positions T (pooled over tokens) where zeroing the storing group at T - 1
    leaves the token in at most half the rows."""
    hits: dict[str, list[int]] = {}
    for token in analysis["tokens"].values():
        for key, (hit, rows) in token["verification"].items():
            if key.startswith("storing_zero.T="):
                total = hits.setdefault(key, [0, 0])
                total[0] += hit
                total[1] += rows
    lost = [hit / rows <= 0.5 for hit, rows in hits.values() if rows]
    return float(np.mean(lost)) if lost else float("nan")


def opposite_counting_share(analysis: dict) -> float:
    """The share of one model's counting units, every token's pooled, that fall."""
    falling = sum(t["counting_directions"]["falling"] for t in analysis["tokens"].values())
    total = sum(sum(t["counting_directions"].values()) for t in analysis["tokens"].values())
    return falling / total if total else float("nan")


def has_multi_function_unit(token: dict) -> float:
    """1.0 if a unit of `token` is in two or more of the function groups, else 0.0."""
    counts: dict[int, int] = {}
    for function in FUNCTIONS:
        for unit in token[function]:
            counts[unit] = counts.get(unit, 0) + 1
    return float(any(count >= 2 for count in counts.values()))
