"""A measurement cut short (a kill, the end of a session) goes on from its last finished part
(`experiments.engine.store.MeasurementParts`): the parts taken are not taken again, and the
measurements written equal those of an uninterrupted measurement."""

import functools
import json

import pytest
import torch
import yaml

from experiments.engine.measure import BOOKKEEPING, measured
from experiments.engine.sitting import Sitting
from experiments.engine.store import MeasurementParts, Schema, kept_step
from storage import RunLayout
from storage.run_folder import RunFolder
from tests.tiny_run import TINY


class Killed(Exception):
    """Stands for the kill that cuts a measurement short."""


def test_parts_are_read_back_only_for_the_same_command_and_weights(tmp_path):
    layout = RunLayout(tmp_path / "run")
    (layout.weights).mkdir(parents=True)
    (layout.weights / "epoch=0.safetensors").write_bytes(b"weights")
    parts = MeasurementParts(layout, ["fit", "a"], layout)
    assert parts.take("first", lambda: {"value": (1, 2)}) == {"value": [1, 2]}  # as JSON reads it

    assert MeasurementParts(layout, ["fit", "a"], layout).take("first", pytest.fail) == {
        "value": [1, 2]
    }
    assert "first" not in MeasurementParts(layout, ["fit", "b"], layout)  # another command
    assert "first" not in MeasurementParts(layout, ["fit", "a"], layout, {"rows": 5})  # settings
    (layout.weights / "epoch=0.safetensors").write_bytes(b"trained again")
    assert "first" not in MeasurementParts(layout, ["fit", "a"], layout)  # other weights
    layout.measurement_parts.write_text('{"key": ')  # cut short: measured anew
    assert "first" not in MeasurementParts(layout, ["fit", "a"], layout)
    parts.done()
    assert not layout.measurement_parts.exists()


def test_a_measurement_cut_short_goes_on_from_its_last_part(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY | {"trainer": TINY["trainer"] | {"max_epochs": 1}}))
    root = tmp_path / "runs"
    command = ["--config", str(config), "--run.root", str(root)]
    layout = RunLayout.of(root, "paper1", "tiny", 3)
    sitting = Sitting(root, jobs=1, reuse=True, schema=Schema(1))
    taken: list[str] = []

    def field(name: str, kill: bool = False):
        def read(run: RunFolder):
            taken.append(name)
            if kill:
                raise Killed
            return {"accuracy": run.test_accuracy("new_compositions"), "of": name}

        return read

    def measure(kill: str = ""):
        return measured(
            layout, command, sitting, field("measure"),
            needed={"untrained": field("untrained", kill == "untrained")},
            optional={"later": field("later", kill == "later")},
        )  # fmt: skip

    uninterrupted = measure()
    assert taken == ["measure", "untrained", "later"]
    assert not layout.measurement_parts.exists()

    layout.measurements.unlink()  # measured again from the kept run, killed in its last part
    taken.clear()
    with pytest.raises(Killed):
        measure(kill="later")
    kept = json.loads(layout.measurement_parts.read_text())["parts"]
    assert list(kept) == ["measure", "untrained"]

    taken.clear()
    again = measure()
    assert taken == ["later"]  # the parts taken before are read back
    assert not layout.measurement_parts.exists()
    assert {k: v for k, v in again.items() if k not in BOOKKEEPING} == {
        k: v for k, v in uninterrupted.items() if k not in BOOKKEEPING
    }


def test_a_part_cut_short_goes_on_from_its_last_kept_step(tmp_path):
    """A part's steps (`kept_step`) are kept as they finish: killed in its third step, the part
    taken again computes only that step and the ones after it, from torch's random state after
    the last kept step, and equals the part taken without a kill."""
    layout = RunLayout(tmp_path / "run")
    computed: list[str] = []

    def part(kill_at: str = ""):
        def step(name: str):
            computed.append(name)
            if name == kill_at:
                raise Killed
            return {"draw": torch.rand(2).tolist()}  # reads the random state left by the last

        torch.manual_seed(0)
        return {name: kept_step(name, functools.partial(step, name)) for name in "abcd"}

    uninterrupted = MeasurementParts(layout, ["fit"], layout).take("untrained", part)
    layout.measurement_parts.unlink()
    with pytest.raises(Killed):
        MeasurementParts(layout, ["fit"], layout).take("untrained", lambda: part(kill_at="c"))
    kept = json.loads(layout.measurement_parts.read_text())
    assert kept["parts"] == {} and list(kept["steps"]["untrained"]) == ["a", "b"]
    computed.clear()
    parts = MeasurementParts(layout, ["fit"], layout)
    assert parts.take("untrained", part) == uninterrupted
    assert computed == ["c", "d"]
    assert json.loads(layout.measurement_parts.read_text())["steps"] == {}  # the part is kept
    assert kept_step("outside", lambda: (1, 2)) == [1, 2]  # outside a part: computed, as JSON
