"""Orders of a site's units from the probe results a run folder holds, for the view's heat map.

A reproduction keeps its analysis of a run in `<run>/measurements.json` (`analysis`, no
weights). Found there, for a site such as `encoder.hidden` or `decoder.update_gate`, wherever it
is nested: an entry named by the site (`<site>` or `<name>.<site>`, e.g. paper 1's
`analysis.probes.table2.encoder.hidden`) holding `units` (a functional group: its units first,
marked) or `left` and `right` per unit (gate saturation: the most saturated units first).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

INDEX = "index"


@dataclass(frozen=True)
class UnitOrder:
    """Units top to bottom (`units`), the first `marked` of them a group of the probe's."""

    units: list[int]
    marked: int = 0


def read_measurements(path: Path) -> dict:
    """A run's `measurements.json`, or nothing where it has none or it is not readable JSON."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def unit_orders(measurements: dict, site: str, units: int) -> dict[str, UnitOrder]:
    """The orders of `site`'s `units` units that `measurements` offers, by name; `index` first."""
    orders = {INDEX: UnitOrder(list(range(units)))}
    for path, entry in site_entries(measurements.get("analysis", {}), site, ()):
        name = ".".join(path)
        group = entry.get("units")
        if is_unit_list(group, units):
            group = list(dict.fromkeys(group))
            rest = [unit for unit in range(units) if unit not in group]
            orders[f"{name}: group of {len(group)} first"] = UnitOrder(group + rest, len(group))
        left, right = entry.get("left"), entry.get("right")
        if is_share_list(left, units) and is_share_list(right, units):
            saturated = sorted(range(units), key=lambda unit: -(left[unit] + right[unit]))
            orders[f"{name}: most saturated first"] = UnitOrder(saturated)
    return orders


def site_entries(node: dict, site: str, path: tuple[str, ...]):
    """(path, entry) of every dict under `node` whose key is `site` or ends with `.<site>`."""
    for key, value in node.items():
        if not isinstance(value, dict):
            continue
        if key == site or key.endswith(f".{site}"):
            yield (*path, key), value
        else:
            yield from site_entries(value, site, (*path, key))


def is_unit_list(value, units: int) -> bool:
    return (isinstance(value, list) and bool(value)
            and all(isinstance(u, int) and 0 <= u < units for u in value))  # fmt: skip


def is_share_list(value, units: int) -> bool:
    return (
        isinstance(value, list)
        and len(value) == units
        and all(isinstance(share, (int, float)) for share in value)
    )
