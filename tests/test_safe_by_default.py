"""A reproduction leaves what is committed as it was: a report of another scale goes elsewhere,
a committed run folder is never emptied, kept measurements are never silently replaced, and
paper 1's committed report rebuilds offline with nothing trained."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from experiments.engine.committed import (
    CommittedFileError,
    check_out,
    default_out,
    report_build,
    write_build,
)
from experiments.engine.fit import fit
from experiments.engine.sitting import SittingError
from experiments.engine.store import kept_measurements
from storage import RunLayout

REPOSITORY = Path(__file__).parents[1]


def committed_report(reports: Path, paper: str, scale: str, data: str | None = None) -> Path:
    out = reports / paper
    out.mkdir(parents=True)
    (out / "results.json").write_text("[]\n")
    write_build(out, paper, scale, data)
    return out


def test_a_report_of_another_scale_goes_under_the_run_root(tmp_path):
    reports, root = tmp_path / "reports", tmp_path / "runs"
    committed_report(reports, "paper9", "default")
    assert default_out("paper9", "default", root, reports) == reports / "paper9"
    assert default_out("paper9", "quick", root, reports) == root / "reports/paper9/quick"
    # none committed yet: the default scale (the one a study commits) writes there, no other
    assert default_out("paper8", "default", root, reports) == reports / "paper8"
    assert default_out("paper8", "quick", root, reports) == root / "reports/paper8/quick"


def test_writing_over_a_report_of_another_scale_needs_replace_report(tmp_path):
    out = committed_report(tmp_path / "reports", "paper9", "default")
    with pytest.raises(
        CommittedFileError, match="holds a report of scale 'default'.*--replace-report"
    ):
        check_out(out, "paper9", "quick", replace=False)
    check_out(out, "paper9", "quick", replace=True)
    check_out(out, "paper9", "default", replace=False)
    (out / "build.json").unlink()  # a report that does not say its scale is not replaced either
    assert report_build(out) == {"scale": "unknown", "data": None}
    with pytest.raises(CommittedFileError):
        check_out(out, "paper9", "default", replace=False)


def test_a_report_on_other_data_goes_under_the_run_root_and_replaces_none_unasked(tmp_path):
    reports, root = tmp_path / "reports", tmp_path / "runs"
    out = committed_report(reports, "paper9", "default", data="sample1")
    assert default_out("paper9", "default", root, reports, "sample1") == out
    assert default_out("paper9", "default", root, reports, "generated tables") == (
        root / "reports/paper9/default"
    )
    assert default_out("paper9", "default", root, reports) == out  # a study naming no data
    with pytest.raises(
        CommittedFileError,
        match="holds a report on sample1; this reproduction on generated tables .*--replace-report",
    ):
        check_out(out, "paper9", "default", replace=False, data="generated tables")
    check_out(out, "paper9", "default", replace=True, data="generated tables")
    check_out(out, "paper9", "default", replace=False, data="sample1")


def test_paper1_where_sample1_cannot_be_had_leaves_the_committed_report(
    tmp_path, monkeypatch, capsys
):
    """`make reproduce-paper1` (and `make atlas`, which trains paper 1's models) where sample1
    cannot be had trains on generated tables: its report goes under the run root, saying so first,
    and the committed report on sample1 stays; a rebuild from the committed runs, which record
    sample1, still goes to the committed folder."""
    import experiments.engine.reproduce as engine
    from experiments.atlas.reproduce import STUDY_PLUGIN
    from experiments.paper1.reproduce import STUDY

    monkeypatch.setenv("RECURRENT_PROBES_OFFLINE", "1")
    monkeypatch.setenv("RECURRENT_PROBES_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("RECURRENT_PROBES_SAMPLE1", raising=False)
    asked = []
    monkeypatch.setattr(engine, "reproduce", lambda study, request: asked.append(request.out))
    runs = tmp_path / "runs"
    engine.reproduction_main(STUDY, ["--runs", str(runs)])
    assert asked == [runs / "reports/paper1/default"]
    assert "reports/paper1 keeps its own (scale default, on sample1)" in capsys.readouterr().out
    engine.reproduction_main(STUDY_PLUGIN, ["--runs", str(runs)])  # the atlas trains paper 1's
    assert asked[-1] == runs / "reports/atlas/default"
    assert "reports/atlas keeps its own (scale default, on sample1)" in capsys.readouterr().out

    shutil.copytree(REPOSITORY / "reports/paper1/runs", runs / "kept")
    engine.reproduction_main(STUDY, ["--runs", str(runs / "kept"), "--reuse-runs"])
    assert asked[-1] == REPOSITORY / "reports/paper1"


def test_a_sample1_folder_that_is_not_sample1_stops_paper1_in_one_line(
    tmp_path, monkeypatch, capsys
):
    from experiments.paper1.reproduce import main

    monkeypatch.setenv("RECURRENT_PROBES_SAMPLE1", str(tmp_path))
    with pytest.raises(SystemExit) as stopped:
        main(["--scale", "quick", "--runs", str(tmp_path / "runs")])
    assert stopped.value.code == 2
    error = capsys.readouterr().err.strip()
    assert f"$RECURRENT_PROBES_SAMPLE1={tmp_path}: train.tsv" in error
    assert len(error.splitlines()) == 1
    assert not (tmp_path / "runs").exists()  # stopped before anything was trained


def test_the_committed_reports_say_their_scale():
    for paper in ("paper1", "paper2", "paper3", "paper4"):
        assert report_build(REPOSITORY / "reports" / paper)["scale"] == "default"
    assert report_build(REPOSITORY / "reports/paper1")["data"] == "sample1"


def test_measurements_of_another_command_stop_the_sitting_naming_both(tmp_path):
    layout = RunLayout(tmp_path / "run")
    layout.path.mkdir()
    layout.measurements.write_text(json.dumps({"command": ["--seed_everything", "1"]}) + "\n")
    assert kept_measurements(layout, ["--seed_everything", "1"])["kept"] is True
    with pytest.raises(SittingError, match="kept --seed_everything 1.*asked --seed_everything 2"):
        kept_measurements(layout, ["--seed_everything", "2"])
    assert layout.measurements.is_file()


def test_a_torn_measurements_file_is_one_line_naming_it(tmp_path):
    layout = RunLayout(tmp_path / "run")
    layout.path.mkdir()
    whole = json.dumps({"command": ["--seed_everything", "1"], "curve": [1.0, 2.0]})
    layout.measurements.write_text(whole[: len(whole) // 2])
    with pytest.raises(SittingError, match=r"measurements.json is not valid JSON .*cut short") as e:
        kept_measurements(layout, ["--seed_everything", "1"])
    assert "\n" not in str(e.value)
    layout.measurements.write_text("[1, 2]\n")
    with pytest.raises(SittingError, match="not a run's measurements"):
        kept_measurements(layout, ["--seed_everything", "1"])


def test_a_run_folder_with_committed_files_is_never_emptied(tmp_path):
    run = tmp_path / "runs/paper9/baseline/seed=1"
    run.mkdir(parents=True)
    (run / "measurements.json").write_text('{"command": []}\n')
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "runs"], check=True)
    with pytest.raises(CommittedFileError, match="committed file.*nothing committed is deleted"):
        fit(run, ["--config", "no-such.yaml"])
    assert sorted(p.name for p in run.iterdir()) == ["measurements.json"]


def test_paper1_rebuilds_offline_from_its_committed_runs_training_nothing(tmp_path, monkeypatch):
    """The committed runs read machine-tasks' sample1, which is not to be had offline: they are
    matched on the data they record, nothing is trained, the report equals the committed one;
    a run without measurements stops the rebuild in one line instead of training."""
    from experiments.paper1.reproduce import main

    monkeypatch.setenv("RECURRENT_PROBES_OFFLINE", "1")
    monkeypatch.setenv("RECURRENT_PROBES_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("RECURRENT_PROBES_SAMPLE1", raising=False)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    runs = tmp_path / "runs"
    shutil.copytree(REPOSITORY / "reports/paper1/runs", runs)
    main(["--runs", str(runs), "--reuse-runs", "--out", str(tmp_path / "report")])
    rebuilt = json.loads((tmp_path / "report/results.json").read_text())
    committed = json.loads((REPOSITORY / "reports/paper1/results.json").read_text())
    assert [c["verdict"] for c in rebuilt] == [c["verdict"] for c in committed]
    assert [c["measured"] for c in rebuilt] == [c["measured"] for c in committed]

    (runs / "paper1/baseline/seed=2/measurements.json").unlink()
    with pytest.raises(SystemExit) as stopped:
        main(["--runs", str(runs), "--reuse-runs", "--out", str(tmp_path / "again")])
    assert stopped.value.code == 2
    assert not (runs / "paper1/baseline/seed=2/started.txt").exists()  # nothing was trained
