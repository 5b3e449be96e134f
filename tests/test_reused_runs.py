"""A study measures another study's run of the same command (`measured(..., trained_at=...)`):
the atlas reads the papers' runs instead of training the same models again. Its record goes to
its own folder; the run and that run's own measurements stay where they are."""

import json
from pathlib import Path

import yaml

from experiments.engine.measure import measured
from experiments.engine.sitting import Sitting
from experiments.engine.store import Schema
from storage import RunLayout
from storage.run_folder import RunFolder
from tests.tiny_run import TINY


def arguments(tmp_path: Path) -> list[str]:
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY | {"trainer": TINY["trainer"] | {"max_epochs": 1}}))
    return ["--config", str(config), "--run.root", str(tmp_path / "runs")]


def measure(run: RunFolder) -> dict:
    return {"accuracy": run.test_accuracy("new_compositions")}


def test_a_study_measures_the_run_another_study_trained_and_trains_nothing_again(tmp_path):
    root = tmp_path / "runs"
    sitting = Sitting(root, jobs=1, reuse=True, schema=Schema(1))
    paper = RunLayout.of(root, "paper1", "tiny", 3)
    study = RunLayout.of(root, "atlas", "paper1_tiny", 3)
    command = arguments(tmp_path)

    first = measured(study, command, sitting, measure, trained_at=paper)
    assert not first["kept"]
    assert (paper.path / "checkpoints" / "best.ckpt").is_file()
    assert sorted(p.name for p in study.path.iterdir()) == ["measurements.json"]
    paper.measurements.write_text(json.dumps({"the paper's": "record"}))
    checkpoint = (paper.path / "checkpoints" / "best.ckpt").stat().st_mtime_ns

    study.measurements.unlink()  # measured again from the kept run: nothing trained
    again = measured(study, command, sitting, measure, trained_at=paper)
    assert again["kept"] and again["accuracy"] == first["accuracy"]
    assert (paper.path / "checkpoints" / "best.ckpt").stat().st_mtime_ns == checkpoint
    assert json.loads(paper.measurements.read_text()) == {"the paper's": "record"}
    assert measured(study, command, sitting, measure, trained_at=paper)["kept"]
