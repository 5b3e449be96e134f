"""Weights & Biases, offline: a fit's W&B run holds its whole resolved config; a reproduction's
report run is named, tagged and configured by its paper and scale and kept out of the checkout;
`python -m experiments wandb-summary` prints what an offline run recorded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from experiments.engine.committed import wandb_folder
from experiments.report import Claim, Measured, current_commit, log_to_wandb
from experiments.wandb_summary import read_runs
from storage.layout import SCALE_ENV
from tests.smoke import HANG_GUARD
from tests.test_run_writers import start_warm_fit
from tests.tiny_run import TINY

ROOT = Path(__file__).resolve().parents[1]
OFFLINE = {"WANDB_MODE": "offline", "WANDB_SILENT": "true"}


def offline(monkeypatch) -> None:
    """W&B offline in this process; its service's address, which W&B leaves in the environment,
    unset after the test."""
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("WANDB_SERVICE", raising=False)


def flushed() -> None:
    """Stop this process's W&B service, so that the runs it wrote are whole on disk (`finish`
    can return before the service has written a run's log)."""
    import wandb

    wandb.teardown()


def summary_command(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments", "wandb-summary", *map(str, paths)],
                          capture_output=True, text=True, timeout=HANG_GUARD, cwd=ROOT)  # fmt: skip


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> Path:
    """The tiny lookup-table fit (`tests.tiny_run.TINY`, one epoch) run as a reproduction's fit
    at the quick scale, `python -m experiments fit` with W&B offline: its run folder."""
    folder = tmp_path_factory.mktemp("wandb_fit")
    config = folder / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    log = folder / "fit.log"
    done = start_warm_fit(config, folder / "runs", log, "--trainer.max_epochs", "1",
                          environment={SCALE_ENV: "quick"})  # fmt: skip
    assert done.wait(timeout=HANG_GUARD) == 0, log.read_text()[-3000:]
    return folder / "runs" / "paper1" / "tiny" / "seed=3"


def test_a_fits_wandb_config_holds_its_whole_resolved_config(fitted):
    [run] = read_runs(fitted)
    config = run.config
    assert config["seed_everything"] == 3
    assert config["trainer"]["max_epochs"] == 1 and config["trainer"]["deterministic"] is True
    assert config["run"] == {"root": str(fitted.parents[2]), "paper": "paper1", "variant": "tiny",
                             "replace": False, "checkpoint_minutes": 10.0,
                             "scale": "quick"}  # fmt: skip
    assert config["model"]["init_args"]["hidden_size"] == 8
    assert config["data"]["class_path"] == "datamodules.LookupTableDataModule"
    assert config["data"]["init_args"]["batch_size"] == 4
    assert (run.name, run.group) == ("paper1/tiny/seed=3", "paper1/tiny")
    assert 0 <= run.summary["test/new_compositions/seq_acc"] <= 1


def test_wandb_summary_prints_an_offline_runs_config_and_summary(fitted):
    done = summary_command(fitted)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert (
        lines[0].startswith("W&B run ") and " paper1/tiny/seed=3 (group paper1/tiny; " in lines[0]
    )
    config, summary = lines.index("config:"), lines.index("summary:")
    assert {"  seed_everything: 3", "  trainer.max_epochs: 1", '  run.variant: "tiny"',
            '  run.scale: "quick"'} <= set(lines[config:summary])  # fmt: skip
    assert any(line.startswith("  test/new_compositions/seq_acc: ") for line in lines[summary:])
    assert summary_command(fitted / "wandb").stdout == done.stdout  # its wandb/ folder too


def test_wandb_summary_reads_a_log_cut_short_up_to_its_last_whole_record(fitted, tmp_path):
    [log] = fitted.glob("wandb/offline-run-*/run-*.wandb")
    torn = tmp_path / log.parent.name / log.name
    torn.parent.mkdir()
    torn.write_bytes(log.read_bytes()[:-5])
    done = summary_command(torn)
    assert done.returncode == 0, done.stderr
    assert "note: its log ends in a record cut short" in done.stdout
    assert "  seed_everything: 3" in done.stdout.splitlines()


def test_wandb_summary_of_a_folder_without_a_wandb_run_is_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "run-x.wandb").write_text("not a log")
    for path, message in ((tmp_path / "empty", "holds no W&B run"),
                          (tmp_path / "missing", "does not exist"),
                          (tmp_path / "other", "is not a W&B run log")):  # fmt: skip
        done = summary_command(path)
        assert done.returncode == 2 and done.stdout == ""
        [line] = done.stderr.splitlines()
        assert line.startswith(f"error: {path}") and message in line, line


def claims() -> list[Claim]:
    measured = Measured(mean=0.5, std=0.0, n=1, values=(0.5,))
    return [Claim("a", "a claim", 0.5, measured, "a rule", "reproduced"),
            Claim("b", "b claim", 0.5, measured, "a rule", "not reproduced"),
            Claim("c", "c claim", 0.5, measured, "a rule", "reproduced")]  # fmt: skip


def test_a_reports_wandb_run_is_named_tagged_and_configured_by_its_scale(tmp_path, monkeypatch):
    offline(monkeypatch)
    folder = wandb_folder("paper4", "quick", tmp_path / "runs", ROOT / "reports")
    assert folder == tmp_path / "runs" / "wandb-reports" / "paper4-quick"
    seeds = {"gru": (0, 1), "lstm": (0,)}
    log_to_wandb(folder, "paper4", "quick", claims(), {}, {}, seeds)
    flushed()
    [run] = read_runs(folder)
    assert (run.name, run.group, run.tags) == ("paper4-quick", "paper4", ("paper4", "quick"))
    counts = {"total": 3, "reproduced": 2, "partially reproduced": 0, "not reproduced": 1,
              "uninformative": 0}  # fmt: skip
    assert run.config == {"paper": "paper4", "scale": "quick", "commit": current_commit(),
                          "seeds": {"gru": [0, 1], "lstm": [0]}, "claims": counts}  # fmt: skip
    log_to_wandb(folder, "paper2", "default", claims(), {}, {})  # no seeds: none logged
    flushed()
    assert "seeds" not in read_runs(folder)[-1].config


def test_runs_started_in_the_same_second_are_read_in_the_order_they_started(tmp_path, monkeypatch):
    """A folder's name gives a sitting's start only to the second; runs started within one
    second come out in the order they started, as their run records give it to the microsecond."""
    offline(monkeypatch)
    folder = tmp_path / "wandb-reports" / "paper4-quick"
    names = ("paper4-quick", "paper2-default", "paper3-smoke", "paper1-quick")
    for name in names:
        log_to_wandb(folder, name.split("-")[0], name.split("-")[1], claims(), {}, {})
    flushed()
    sittings = sorted((folder / "wandb").glob("offline-run-*"))
    assert len(sittings) == len(names)
    for sitting in sittings:  # one second for all, the ids (random) last as W&B names them
        sitting.rename(sitting.with_name(f"offline-run-20260101_000000-{sitting.name[-8:]}"))
    assert [run.name for run in read_runs(folder)] == list(names)


def test_a_report_run_that_cannot_be_written_is_one_warning(tmp_path, monkeypatch, capsys):
    offline(monkeypatch)
    (tmp_path / "wandb-reports").write_text("a file where the folder would be")
    log_to_wandb(tmp_path / "wandb-reports" / "paper4-quick", "paper4", "quick", claims(), {}, {})
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"warning: the report's W&B run was not written to {tmp_path}")
    assert line.endswith("the report is complete without it")


def test_a_rebuild_from_committed_runs_keeps_its_report_run_under_the_default_run_root(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("RECURRENT_PROBES_RUNS", str(tmp_path / "default"))
    committed = ROOT / "reports" / "paper4" / "runs"
    expected = tmp_path / "default" / "wandb-reports" / "paper4-default"
    assert wandb_folder("paper4", "default", committed, ROOT / "reports") == expected
    assert (
        wandb_folder("paper4", "default", Path("reports/paper4/runs"), Path("reports")) == expected
    )


def entries(folder: Path) -> set[str]:
    """Every file and folder under `folder`, git's ignored ones included."""
    return {str(path.relative_to(ROOT)) for path in folder.rglob("*")}


def test_rebuilding_a_committed_report_writes_nothing_into_the_checkout(tmp_path):
    """Paper 4's committed report rebuilt from its committed measurements, as
    docs/reproductions.md says (`--runs reports/paper4/runs --reuse-runs --out ...`), with W&B
    offline: nothing is written under reports/paper4/, not even a file git ignores (`wandb/`);
    the report's W&B run is under the default run root."""
    before = entries(ROOT / "reports" / "paper4")
    environment = {**os.environ, **OFFLINE, "RECURRENT_PROBES_RUNS": str(tmp_path / "default")}
    environment.pop("WANDB_SERVICE", None)
    done = subprocess.run(
        [sys.executable, "-m", "experiments.paper4", "--runs", "reports/paper4/runs",
         "--reuse-runs", "--out", str(tmp_path / "rebuilt")],
        capture_output=True, text=True, timeout=1800, env=environment, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert entries(ROOT / "reports" / "paper4") - before == set()
    committed = json.loads((ROOT / "reports" / "paper4" / "results.json").read_text())
    rebuilt = json.loads((tmp_path / "rebuilt" / "results.json").read_text())
    assert [c["verdict"] for c in rebuilt] == [c["verdict"] for c in committed]
    [run] = read_runs(tmp_path / "default" / "wandb-reports" / "paper4-default")
    assert run.name == "paper4-default" and run.config["claims"]["total"] == len(committed)
