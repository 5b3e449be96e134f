"""A run's measurements file carries its study's schema version; older files are migrated on
reading, newer ones refused in one line."""

import json

import pytest

from experiments.engine.store import (
    SCHEMA,
    Schema,
    SittingError,
    kept_measurements,
    read_measurements,
    write_measurements,
)
from storage import RunLayout

TRAINED = {"started": 1.0, "finished": 2.0}


def renamed(record: dict) -> dict:
    """Version 1 -> 2: `acc` became `accuracy`."""
    return {("accuracy" if k == "acc" else k): v for k, v in record.items()}


def test_a_file_is_written_at_the_schemas_version_and_read_back_through_its_migrations(tmp_path):
    layout = RunLayout(tmp_path / "run")
    layout.path.mkdir()
    old = Schema(1)
    written = write_measurements(layout, {"command": ["--a"], "acc": 0.5}, old, TRAINED)
    assert written[SCHEMA] == 1 and json.loads(layout.measurements.read_text())[SCHEMA] == 1
    new = Schema(2, migrations={1: renamed})
    record = read_measurements(layout, new)
    assert record["accuracy"] == 0.5 and "acc" not in record and record[SCHEMA] == 2
    assert read_measurements(layout, old)["acc"] == 0.5  # the file itself is left as it was
    kept = kept_measurements(layout, ["--a"], new)
    assert kept["kept"] and kept["accuracy"] == 0.5


def test_a_file_without_a_version_is_read_at_the_version_its_study_infers(tmp_path):
    layout = RunLayout(tmp_path / "run")
    layout.path.mkdir()
    layout.measurements.write_text(json.dumps({"command": [], "acc": 0.25}) + "\n")
    schema = Schema(2, migrations={1: renamed}, unstamped=lambda r: 1 if "acc" in r else 2)
    assert read_measurements(layout, schema) == {"command": [], "accuracy": 0.25, SCHEMA: 2}
    assert read_measurements(layout, Schema(2))["acc"] == 0.25  # no migration: as it is


def test_a_file_of_a_newer_version_stops_in_one_line_naming_it(tmp_path):
    layout = RunLayout(tmp_path / "run")
    layout.path.mkdir()
    write_measurements(layout, {"command": []}, Schema(3), TRAINED)
    with pytest.raises(SittingError) as stopped:
        read_measurements(layout, Schema(2))
    message = str(stopped.value)
    assert "\n" not in message and str(layout.measurements) in message
    assert "schema version 3, newer than this code's 2: update the suite" in message
