"""A run folder is data: received from anyone, copied, moved or misused, it runs no code, writes
nothing through a link, and a refused command leaves it as it was.

Every fit here is the tiny lookup-table run of `tests.tiny_run.TINY` (seed 3, 6 batches an
epoch); a resumed run is compared with an uninterrupted one of the same config, `metrics.csv`
byte for byte and the last weights exactly.
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
from pathlib import Path

import pytest
import torch
import yaml

from experiments.cli import main, wandb_run_id
from experiments.engine import fit as fitting
from storage import RunFolder, RunLayout
from storage.files import RunFileError, load_checkpoint, read_saved_config
from storage.replacement import settle_replacement
from tests.smoke import HANG_GUARD
from tests.test_run_writers import start_warm_fit
from tests.tiny_run import TINY

RUN = Path("paper1") / "tiny" / "seed=3"


def write_config(folder: Path) -> Path:
    config = folder / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    return config


def fit(config: Path, root: Path, *extra: str) -> Path:
    main(["fit", "--config", str(config), "--run.root", str(root), *extra])
    return root / RUN


def state(run: Path) -> list[tuple]:
    """Every file of `run` (links too) with its size, time and bytes: equal before and after a
    command that must leave the run as it was."""
    return sorted(
        (str(p), p.is_symlink(), p.lstat().st_size, p.lstat().st_mtime_ns,
         p.read_bytes() if p.is_file() and not p.is_symlink() else b"")
        for p in run.rglob("*")
    )  # fmt: skip


def refused(capsys, *arguments: str) -> str:
    """The one error line of a command that must stop with status 2."""
    with pytest.raises(SystemExit) as stopped:
        main(list(arguments))
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert "Traceback" not in error and error.splitlines()[-1].startswith("error: "), error
    return error.splitlines()[-1]


def last_weights(run: Path) -> dict[str, torch.Tensor]:
    return load_checkpoint(RunLayout(run).checkpoint("last"))["state_dict"]


def assert_same_run(run: Path, uninterrupted: Path) -> None:
    assert RunLayout(run).metrics.read_text() == RunLayout(uninterrupted).metrics.read_text()
    expected = last_weights(uninterrupted)
    resumed = last_weights(run)
    assert resumed.keys() == expected.keys()
    assert all(torch.equal(resumed[name], expected[name]) for name in expected)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The config, an uninterrupted 3-epoch run and a finished 2-epoch run (copied per test)."""
    folder = tmp_path_factory.mktemp("received")
    config = write_config(folder)
    return {
        "config": config,
        "whole": fit(config, folder / "whole", "--trainer.max_epochs", "3"),
        "two": fit(config, folder / "two", "--trainer.max_epochs", "2"),
    }


@pytest.fixture()
def finished(runs, tmp_path) -> Path:
    """A copy of the finished 2-epoch run under `tmp_path/runs`."""
    run = tmp_path / "runs" / RUN
    shutil.copytree(runs["two"], run, symlinks=True)
    return run


# Row 1: a run folder's config.yaml names a class defined beside the run.
@pytest.fixture()
def foreign_callback(tmp_path, monkeypatch):
    """(a callback class path importable from `tmp_path`, the marker its import creates)."""
    marker = tmp_path / "marker"
    (tmp_path / "beside_the_run.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).touch()\n"
        "from pytorch_lightning.callbacks import Callback\nclass Evil(Callback):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "beside_the_run.Evil", marker
    sys.modules.pop("beside_the_run", None)


@pytest.mark.parametrize("foreign", ["beside_the_run.Evil", "this.Zen"])
def test_a_received_config_naming_a_foreign_class_imports_nothing(
    finished, foreign_callback, capsys, foreign
):
    _, marker = foreign_callback
    layout = RunLayout(finished)
    config = yaml.safe_load(layout.config.read_text())
    config["trainer"]["callbacks"].append({"class_path": foreign})
    layout.config.write_text(yaml.safe_dump(config))
    before = state(finished)
    as_the_hint_said = ["fit", "--config", str(layout.config), "--trainer.max_epochs", "3",
                        "--ckpt_path", str(layout.checkpoint("last"))]  # fmt: skip
    for command in (as_the_hint_said, ["fit", "--resume", str(finished)]):
        error = refused(capsys, *command)
        assert foreign in error and str(layout.config) in error and "--trust-class" in error
    assert not marker.exists() and "this" not in sys.modules
    assert state(finished) == before


def test_the_resume_hint_names_resume_and_resume_needs_no_config(runs, finished, capsys):
    error = refused(capsys, "fit", "--config", str(runs["config"]), "--run.root",
                    str(finished.parents[2]), "--model.hidden_size", "16",
                    "--ckpt_path", str(RunLayout(finished).checkpoint("last")))  # fmt: skip
    assert f"python -m experiments fit --resume {finished}" in error
    main(["fit", "--resume", str(finished), "--trainer.max_epochs", "3"])
    assert_same_run(finished, runs["whole"])


def test_a_run_resumed_twice_equals_an_uninterrupted_one(runs, tmp_path):
    run = fit(runs["config"], tmp_path / "runs", "--trainer.max_epochs", "1")
    main(["fit", "--resume", str(run), "--trainer.max_epochs", "2"])
    main(["fit", "--resume", str(run), "--trainer.max_epochs", "3"])
    assert_same_run(run, runs["whole"])


def test_a_config_naming_its_checkpoint_says_to_set_it_to_null_and_then_resumes(
    runs, finished, capsys
):
    """A config.yaml saved by a resumed fit of an older version names the checkpoint it resumed
    from: one line says so and how to mend it; mended, the run resumes as an uninterrupted one."""
    layout = RunLayout(finished)
    config = yaml.safe_load(layout.config.read_text())
    config["ckpt_path"] = str(layout.checkpoint("last"))
    layout.config.write_text(yaml.safe_dump(config))
    before = state(finished)
    error = refused(capsys, "fit", "--resume", str(finished), "--trainer.max_epochs", "3")
    assert "(ckpt_path)" in error and "set ckpt_path to null" in error, error
    assert state(finished) == before
    layout.config.write_text(yaml.safe_dump({**config, "ckpt_path": None}))
    main(["fit", "--resume", str(finished), "--trainer.max_epochs", "3"])
    assert_same_run(finished, runs["whole"])


# Row 2: files of the run folder that are links to files outside it.
def test_a_linked_lock_is_refused_and_its_target_untouched(runs, finished, tmp_path, capsys):
    outside = tmp_path / "outside.txt"
    outside.write_text("a file of the user's")
    layout = RunLayout(finished)
    layout.lock.unlink()
    layout.lock.symlink_to(outside)
    before = state(finished)
    error = refused(capsys, "validate", "--config", str(runs["config"]), "--run.root",
                    str(finished.parents[2]), "--ckpt_path", "best")  # fmt: skip
    assert "symbolic link" in error and str(layout.lock) in error
    assert outside.read_text() == "a file of the user's" and state(finished) == before


def test_a_linked_or_malformed_wandb_run_id_is_refused(tmp_path):
    outside = tmp_path / "token"
    outside.write_text("secret-token")
    run = tmp_path / "run"
    run.mkdir()
    RunLayout(run).wandb_run_id.symlink_to(outside)
    with pytest.raises(RunFileError, match="symbolic link"):
        wandb_run_id(run, fresh=False)
    RunLayout(run).wandb_run_id.unlink()
    RunLayout(run).wandb_run_id.write_text("../../etc/x\n")
    with pytest.raises(RunFileError, match="does not hold a W&B run id"):
        wandb_run_id(run, fresh=False)
    RunLayout(run).wandb_run_id.write_text("a1b2c3d4\n")
    assert wandb_run_id(run, fresh=False) == "a1b2c3d4"


def test_a_saved_config_is_read_as_data_never_through_a_link(tmp_path):
    layout = RunLayout(tmp_path / "run")
    layout.path.mkdir()
    assert read_saved_config(layout) is None  # not trained yet
    layout.config.write_text(yaml.safe_dump({"trainer": {"limit_test_batches": 2}}))
    assert read_saved_config(layout) == {"trainer": {"limit_test_batches": 2}}
    layout.config.write_text("!!python/object/apply:os.system ['true']\n")
    with pytest.raises(RunFileError, match="config.yaml is not a readable config"):
        read_saved_config(layout)
    layout.config.write_text("just a string\n")
    with pytest.raises(RunFileError, match="holds no settings"):
        read_saved_config(layout)
    outside = tmp_path / "settings.yaml"
    outside.write_text(yaml.safe_dump({"trainer": {}}))
    layout.config.unlink()
    layout.config.symlink_to(outside)
    with pytest.raises(RunFileError, match="symbolic link"):
        read_saved_config(layout)
    layout.config.unlink()
    layout.config.symlink_to(tmp_path / "nowhere.yaml")  # a dangling link is refused too
    with pytest.raises(RunFileError, match="symbolic link"):
        read_saved_config(layout)


def test_a_reproduction_appends_to_no_linked_train_log(runs, tmp_path):
    root = tmp_path / "runs"
    arguments = ["--config", str(runs["config"]), "--run.root", str(root),
                 "--trainer.max_epochs", "1"]  # fmt: skip
    assert fitting.fit(root / RUN, arguments)
    layout = RunLayout(root / RUN)
    layout.command.unlink()  # as if killed: resumed from its last.ckpt with --reuse-runs
    outside = tmp_path / "outside.log"
    outside.write_text("a file of the user's")
    layout.train_log.unlink()
    layout.train_log.symlink_to(outside)
    with pytest.raises(RunFileError, match="symbolic link"):
        fitting.fit(root / RUN, arguments, reuse=True)
    assert outside.read_text() == "a file of the user's"


# Rows 3-4: `--ckpt_path last`, and checkpoints a fit cannot resume from.
def test_ckpt_path_last_resumes_as_an_explicit_last_ckpt(runs, finished):
    fit(runs["config"], finished.parents[2], "--trainer.max_epochs", "3", "--ckpt_path", "last")
    assert_same_run(finished, runs["whole"])


def weights_only(run: Path, folder: Path) -> Path:
    checkpoint = load_checkpoint(RunLayout(run).checkpoint("last"))
    path = folder / "no-optimizer.ckpt"
    torch.save({k: v for k, v in checkpoint.items() if k != "optimizer_states"}, path)
    return path


def plain_state_dict(run: Path, folder: Path) -> Path:
    path = folder / "state_dict.pt"
    torch.save(load_checkpoint(RunLayout(run).checkpoint("last"))["state_dict"], path)
    return path


def other_shapes(run: Path, folder: Path) -> Path:
    checkpoint = load_checkpoint(RunLayout(run).checkpoint("last"))
    name = next(iter(checkpoint["state_dict"]))
    checkpoint["state_dict"][name] = torch.zeros(1)
    path = folder / "other-shapes.ckpt"
    torch.save(checkpoint, path)
    return path


def damaged(run: Path, folder: Path, **changes) -> Path:
    checkpoint = load_checkpoint(RunLayout(run).checkpoint("last"))
    path = folder / "damaged.ckpt"
    torch.save({**checkpoint, **changes}, path)
    return path


def foreign_metrics(run: Path, folder: Path) -> Path:
    """A checkpoint whose epoch in progress holds a metric the model lacks."""
    foreign = {"metrics": {"no_such_metric": {"states": {}, "updates": 1}}, "logged": {}}
    return damaged(run, folder, epoch_in_progress=foreign)


def as_a_list(run: Path, folder: Path) -> Path:
    path = folder / "list.ckpt"
    torch.save([1, 2], path)
    return path


@pytest.mark.parametrize(
    "make,extra,message",
    [
        (None, ("--model.hidden_size", "16"), "hidden_size=8 (config: 16)"),
        (weights_only, (), "lacks the training state"),
        (plain_state_dict, (), "is not a Lightning checkpoint"),
        (other_shapes, (), "holds weights of another model"),
        (lambda run, folder: damaged(run, folder, global_step="12"), (), "global_step"),
        (as_a_list, (), "holds a list"),
        (foreign_metrics, (), "does not match the model's metrics"),
    ],
)
def test_a_checkpoint_a_fit_cannot_resume_from_leaves_the_run_as_it_was(
    runs, finished, tmp_path, capsys, make, extra, message
):
    checkpoint = "last" if make is None else str(make(finished, tmp_path))
    before = state(finished)
    error = refused(capsys, "fit", "--config", str(runs["config"]), "--run.root",
                    str(finished.parents[2]), "--trainer.max_epochs", "3", *extra,
                    "--ckpt_path", checkpoint)  # fmt: skip
    assert message in error
    assert state(finished) == before


# Rows 5-6: a fresh fit into a folder that holds a run.
def test_a_fresh_fit_into_a_run_is_refused_and_leaves_it_as_it_was(runs, finished, capsys):
    before = state(finished)
    for extra in (("--data.init_args.batch_size", "0"), ("--model.hidden_size", "16")):
        error = refused(capsys, "fit", "--config", str(runs["config"]), "--run.root",
                        str(finished.parents[2]), *extra)  # fmt: skip
        assert "already holds a run" in error and "--run.replace true" in error
        assert f"python -m experiments fit --resume {finished}" in error
    assert state(finished) == before


def test_replace_leaves_no_file_of_the_old_run(runs, finished, tmp_path):
    other = ("--model.hidden_size", "16", "--trainer.max_epochs", "1")
    fresh = fit(runs["config"], tmp_path / "fresh", *other)
    fit(runs["config"], finished.parents[2], *other, "--run.replace", "true")

    def files(run):
        return sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.name != ".lock")

    assert files(finished) == files(fresh)  # no best-v1.ckpt, no epoch=1 snapshot or trace
    assert_same_run(finished, fresh)
    assert RunFolder(finished).model().hparams.hidden_size == 16
    assert yaml.safe_load(RunLayout(finished).config.read_text())["run"]["replace"] is False


def contents(run: Path) -> dict[str, bytes]:
    """Every file of `run` but its lock (which names its last holder), by relative path: its
    bytes, or a link's target."""
    return {
        str(p.relative_to(run)): str(p.readlink()).encode() if p.is_symlink() else p.read_bytes()
        for p in run.rglob("*")
        if p.name != ".lock" and (p.is_file() or p.is_symlink())
    }


def holding_folders(run: Path) -> list[str]:
    return [p.name for p in run.iterdir() if p.name.startswith(".old-run")]


def test_a_replacing_fit_that_fails_leaves_the_old_run_as_it_was(
    runs, finished, capsys, monkeypatch
):
    """The batch size is only refused by the DataLoader, after the new fit wrote its config and
    started its W&B run (offline here, whose files must not come back into the restored run)."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    before = contents(finished)
    error = refused(capsys, "fit", "--config", str(runs["config"]), "--run.root",
                    str(finished.parents[2]), "--run.replace", "true",
                    "--data.init_args.batch_size", "0")  # fmt: skip
    assert "batch_size should be a positive integer" in error
    assert contents(finished) == before and not holding_folders(finished)


def test_a_replacing_fit_interrupted_by_ctrl_c_leaves_the_old_run_as_it_was(runs, finished):
    """Lightning ends a fit interrupted in training with SystemExit(1), its checkpoints written."""
    before = contents(finished)
    interrupt = {"class_path": "tests.kill_at_step.InterruptAtStep", "init_args": {"step": 8}}
    handler = signal.getsignal(signal.SIGINT)  # Lightning ignores a second Ctrl-C from then on
    try:
        with pytest.raises(SystemExit) as stopped:
            fit(runs["config"], finished.parents[2], "--run.replace", "true",
                f"--trainer.callbacks+={json.dumps(interrupt)}")  # fmt: skip
    finally:
        signal.signal(signal.SIGINT, handler)
    assert stopped.value.code == 1
    assert contents(finished) == before and not holding_folders(finished)


def test_a_replacing_fit_that_finishes_leaves_no_old_file_and_no_holding_folder(runs, finished):
    old_checkpoint = RunLayout(finished).checkpoint("last").read_bytes()
    fit(runs["config"], finished.parents[2], "--trainer.max_epochs", "1", "--run.replace", "true")
    assert not holding_folders(finished)
    assert RunLayout(finished).checkpoint("last").read_bytes() != old_checkpoint
    assert load_checkpoint(RunLayout(finished).checkpoint("last"))["epoch"] == 0


def test_a_replacing_fit_killed_midway_is_restored_by_the_next_command(runs, finished, capsys):
    """SIGKILLed (as by `kill -9`) in its third step, a replacing fit leaves the new run's first
    files beside the held old run; the next command restores the old run and says so."""
    before = contents(finished)
    kill = {"class_path": "tests.kill_at_step.KillAtStep", "init_args": {"step": 2}}
    log = finished.parents[3] / "killed.log"
    killed = start_warm_fit(runs["config"], finished.parents[2], log, "--run.replace", "true",
                            f"--trainer.callbacks+={json.dumps(kill)}")  # fmt: skip
    assert killed.wait(timeout=HANG_GUARD) == 9, log.read_text()
    assert holding_folders(finished) == [".old-run"]
    assert RunLayout(finished).config.is_file() and contents(finished) != before  # the new run's
    with pytest.raises(SystemExit):  # a fresh fit, refused: the restored old run is a run
        main(["fit", "--config", str(runs["config"]), "--run.root", str(finished.parents[2])])
    note, error = capsys.readouterr().err.splitlines()
    assert note == (
        f"note: {finished}: restored the run that an unfinished fit --run.replace was replacing "
        "(the replacing fit's files are deleted)."
    )
    assert error.startswith("error: ") and "already holds a run" in error
    assert contents(finished) == before and not holding_folders(finished)


def test_a_folder_left_on_each_step_of_a_replacement_is_settled_whole(tmp_path, capsys):
    """A kill while the old run is moved aside, while the new fit writes, or while the finished
    fit deletes the old run: the folder ends with one whole run, the old one unless the new one
    finished. Links inside are moved or deleted as links, never followed."""
    outside = tmp_path / "outside.txt"
    outside.write_text("a file of the user's")
    old = {"config.yaml": b"old config", "checkpoints/last.ckpt": b"old weights"}
    new = {"config.yaml": b"new config", "metrics.csv": b"new metrics"}

    def folder(name, outside_entries, held, holding):
        run = tmp_path / name
        for files, under in ((outside_entries, run), (held, run / holding)):
            for path, data in files.items():
                (under / path).parent.mkdir(parents=True, exist_ok=True)
                (under / path).write_bytes(data)
        (run / holding / "link").symlink_to(outside)
        return run

    moving = folder("moving", {"config.yaml": b"old config"},
                    {"checkpoints/last.ckpt": b"old weights"}, ".old-run.moving")  # fmt: skip
    held = folder("held", new, old, ".old-run")
    deleting = folder("deleting", new, old, ".old-run.deleting")
    for run in (moving, held):
        settle_replacement(run)
        assert contents(run) == {**old, "link": str(outside).encode()}
        assert not holding_folders(run) and "restored the run" in capsys.readouterr().err
    settle_replacement(deleting)
    assert contents(deleting) == new and not holding_folders(deleting)
    assert "deleted what was left" in capsys.readouterr().err
    assert outside.read_text() == "a file of the user's"
    (held / ".old-run").symlink_to(outside)
    with pytest.raises(RunFileError, match="symbolic link"):
        settle_replacement(held)
    assert outside.read_text() == "a file of the user's"


# Row 7: a copied or moved run resumes with its own files.
def test_a_moved_run_resumes_with_its_own_checkpoints(runs, finished, tmp_path):
    moved = tmp_path / "elsewhere" / "my-run"
    shutil.move(finished, moved)
    main(["fit", "--resume", str(moved), "--trainer.max_epochs", "3"])
    assert_same_run(moved, runs["whole"])
    states = load_checkpoint(RunLayout(moved).checkpoint("last"))["callbacks"]
    paths = [s["best_model_path"] for s in states.values() if s.get("best_model_path")]
    assert paths and all(p.startswith("checkpoints/") for p in paths), paths
    assert str(finished) not in RunLayout(moved).config.read_text()


# Row 11: a metrics.csv a spreadsheet saved.
def test_a_metrics_csv_saved_with_a_bom_and_crlf_resumes_as_plain(runs, finished):
    metrics = RunLayout(finished).metrics
    metrics.write_bytes(b"\xef\xbb\xbf" + metrics.read_bytes().replace(b"\n", b"\r\n"))
    last = str(RunLayout(finished).checkpoint("last"))
    fit(runs["config"], finished.parents[2], "--trainer.max_epochs", "3", "--ckpt_path", last)
    assert_same_run(finished, runs["whole"])


# Row 12: a full disk.
def test_a_full_disk_is_one_line_and_the_run_resumes_after(runs, tmp_path, capsys, monkeypatch):
    saved = []
    real_save = torch.save

    def full_after_first_epoch(checkpoint, path, *args, **kwargs):
        if checkpoint.get("epoch", 0) >= 1:
            raise OSError(28, "No space left on device", str(path))
        saved.append(path)
        return real_save(checkpoint, path, *args, **kwargs)

    monkeypatch.setattr(torch, "save", full_after_first_epoch)
    error = refused(capsys, "fit", "--config", str(runs["config"]), "--run.root",
                    str(tmp_path / "runs"), "--trainer.max_epochs", "3")  # fmt: skip
    assert "no space left on the disk" in error and "--resume" in error and saved
    monkeypatch.undo()
    main(["fit", "--resume", str(tmp_path / "runs" / RUN), "--trainer.max_epochs", "3"])
    assert_same_run(tmp_path / "runs" / RUN, runs["whole"])
