"""What a run folder's writers keep through kills, resumes, a second writer and the umask.

- A fit killed inside training, validation and test and resumed each time from `last.ckpt` ends
  with the `metrics.csv` of an uninterrupted fit, byte for byte (every epoch once), and one W&B
  run id across all its processes.
- `metrics.csv` is never left truncated: a header change is an atomic replacement, an append
  that fails is undone.
- A reproduction (`experiments.engine.fit.fit` with `reuse`) resumes an interrupted run from its
  `last.ckpt`, ending with an uninterrupted run's `metrics.csv`.
- A step-based fit (paper 3's toy model) killed and resumed equals an uninterrupted one.
- A fit killed inside an epoch (or stopped there by SIGTERM) resumes from the `last.ckpt` written
  there to an uninterrupted fit's files, for each way the suite orders a training epoch.
- A fit on two processes (DDP on CPU) writes one run: one lock, one metrics.csv, one W&B run.
- A second fit into a run folder being written is refused before it writes anything.
- Written files follow the umask (not `mkstemp`'s 0600).

What a sitting records and how the report sums it: `test_sittings.py`.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file

from experiments.cli import main
from experiments.engine import fit as fitting
from experiments.engine import sittings
from experiments.engine.launch import WarmPopen, fit_environment
from lightning_modules.metrics_csv import RunMetricsCSV
from storage import RunLayout
from storage.files import (
    RunFileError,
    RunFolderLock,
    load_checkpoint,
    recorded_entries,
    save_tensors_atomic,
    write_text_atomic,
)
from tests.fake_fit import ended_fit, fit_pids
from tests.smoke import HANG_GUARD
from tests.tiny_run import TINY, fit

ROOT = Path(__file__).parents[1]
EPOCHS = 3


def config_file(tmp_path: Path, phase_file: Path, seconds: float) -> Path:
    config = {**TINY, "trainer": {**TINY["trainer"], "max_epochs": EPOCHS,
                                  "limit_val_batches": 4, "limit_test_batches": 4}}  # fmt: skip
    config["trainer"]["callbacks"] = [
        *TINY["trainer"]["callbacks"],
        {"class_path": "tests.phase_marker.PhaseMarker",
         "init_args": {"path": str(phase_file), "seconds": seconds}},
    ]  # fmt: skip
    path = tmp_path / f"config-{seconds}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def start_fit(config: Path, root: Path, *extra: str) -> subprocess.Popen:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "WANDB_MODE": "offline",
                   "WANDB_SILENT": "true"}  # fmt: skip
    environment.pop("WANDB_SERVICE", None)  # each fit its own W&B service, as from a shell
    return subprocess.Popen(
        [sys.executable, "-m", "experiments", "fit", "--config", str(config),
         "--run.root", str(root), *extra],
        env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip


def start_warm_fit(config: Path, root: Path, log: Path, *extra: str,
                   environment: dict[str, str] | None = None) -> WarmPopen:  # fmt: skip
    """`start_fit`'s command started as a reproduction starts its fits (forked from the warm
    server, `experiments.engine.launch`), its output in `log`, with `environment` added to this
    process's: the kills below cost no imports."""
    environment = fit_environment({**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true",
                                   **(environment or {})})  # fmt: skip
    with open(log, "a") as output:
        return WarmPopen(["-m", "experiments", "fit", "--config", str(config), "--run.root",
                          str(root), *extra], output.fileno(), environment)  # fmt: skip


def descendants(pid: int) -> list[int]:
    """The processes below `pid` (its W&B service), read from /proc."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [p for child in map(int, children) for p in (child, *descendants(child))]


def kill_inside(process: WarmPopen, phase_file: Path, phase: str, epoch: int | None,
                batch: int, log: Path) -> str:  # fmt: skip
    """SIGKILL `process` and its children once it reports `phase` (at `epoch`, any epoch if
    None) at batch `batch` or later; the phase it was killed in."""
    deadline = time.time() + HANG_GUARD
    while time.time() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the fit ended before the kill: {log.read_text()}")
        try:
            seen_phase, seen_epoch, seen_batch = phase_file.read_text().split()
        except (OSError, ValueError):
            seen_phase, seen_epoch, seen_batch = "", "-1", "-1"
        if seen_phase == phase and epoch in (None, int(seen_epoch)) and int(seen_batch) >= batch:
            below = descendants(process.pid)
            process.kill()
            for pid in below:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            process.wait()
            return f"{seen_phase} {seen_epoch} {seen_batch}"
        time.sleep(0.01)
    raise AssertionError(f"the fit never reached {phase} {epoch} {batch}")


def test_fit_killed_in_every_phase_and_resumed_keeps_every_epoch_once(tmp_path):
    run = Path("paper1") / "tiny" / "seed=3"
    log = tmp_path / "fits.log"
    whole = start_warm_fit(config_file(tmp_path, tmp_path / "phase-whole", 0.0),
                           tmp_path / "whole", log)  # fmt: skip
    assert whole.wait(timeout=HANG_GUARD) == 0, log.read_text()

    phase_file = tmp_path / "phase"
    config = config_file(tmp_path, phase_file, 0.1)
    root = tmp_path / "parts"
    last = root / run / "checkpoints" / "last.ckpt"
    draw = random.Random(16)
    kills = [("train", 1, draw.randrange(6)), ("validation", 2, draw.randrange(4)),
             ("test", None, draw.randrange(4))]  # fmt: skip
    killed = []
    for phase, epoch, batch in kills:
        resume = ["--ckpt_path", str(last)] if last.is_file() else []
        process = start_warm_fit(config, root, log, *resume)
        killed.append(kill_inside(process, phase_file, phase, epoch, batch, log))
    final = start_warm_fit(config, root, log, "--ckpt_path", str(last))
    assert final.wait(timeout=HANG_GUARD) == 0, log.read_text()

    resumed_csv = (root / run / "metrics.csv").read_text()
    assert resumed_csv == (tmp_path / "whole" / run / "metrics.csv").read_text(), killed
    with open(root / run / "metrics.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    validated = [int(r["epoch"]) for r in rows if r["val/seq_acc"]]
    tested = [r for r in rows if r["test/new_compositions/seq_acc"]]
    assert validated == list(range(EPOCHS)) and len(tested) == 1, killed
    run_id = RunLayout(root / run).wandb_run_id.read_text()
    offline_runs = sorted(p.name for p in (root / run / "wandb").glob("offline-run-*"))
    assert len(offline_runs) == len(kills) + 1
    assert all(name.endswith(f"-{run_id}") for name in offline_runs), offline_runs


def test_a_reproduction_resumes_an_interrupted_run_from_its_last_checkpoint(tmp_path, monkeypatch):
    """Stopped by SIGTERM in its second epoch (the fit fails: Lightning's own exit status would
    be 0, as if it had ended) and fitted again, the run resumes to the uninterrupted one's
    metrics; `sittings.json` records both sittings (written while the fit runs and when it ends),
    and the run's training time is their sum."""
    monkeypatch.setattr(sittings, "SITTING_CLOCK", 0.05)
    run = Path("paper1") / "tiny" / "seed=3"
    whole_root, parts_root = tmp_path / "whole", tmp_path / "parts"
    quick = config_file(tmp_path, tmp_path / "phase-whole", 0.0)
    assert fitting.fit(whole_root / run, ["--config", str(quick), "--run.root", str(whole_root)])
    (whole,) = sittings.read_sittings(RunLayout(whole_root / run).sittings)

    phase_file = tmp_path / "phase"
    arguments = ["--config", str(config_file(tmp_path, phase_file, 0.1)),
                 "--run.root", str(parts_root)]  # fmt: skip
    failures = []

    def interrupted():
        try:
            fitting.fit(parts_root / run, arguments, reuse=True)
        except RuntimeError as error:
            failures.append(error)

    thread = threading.Thread(target=interrupted)
    thread.start()
    deadline = time.time() + HANG_GUARD
    while not phase_file.is_file() or phase_file.read_text().split()[:2] != ["train", "1"]:
        assert time.time() < deadline and thread.is_alive(), "the fit never reached epoch 1"
        time.sleep(0.01)
    layout = RunLayout(parts_root / run)
    (running,) = sittings.read_sittings(layout.sittings)  # recorded while it runs
    for pid in fit_pids(str(parts_root), "experiments"):
        os.kill(pid, signal.SIGTERM)  # as `kill`, a time limit (SIGKILL: kill_inside)
    thread.join(timeout=HANG_GUARD)
    assert failures and not layout.command.exists()  # stopped: not a finished run
    assert "stopped by SIGTERM before the fit ended" in layout.train_log.read_text()
    assert layout.started.is_file() and layout.checkpoint("last").is_file()
    (killed,) = sittings.read_sittings(layout.sittings)
    assert killed["started"] == running["started"] < running["until"] <= killed["until"]

    left = "its fit resumes from its last checkpoint"  # what the progress line says of it
    assert fitting.left_to_compute(parts_root / run, arguments, reuse=True) == left
    assert fitting.fit(parts_root / run, arguments, reuse=True)  # resumed, not restarted
    assert layout.metrics.read_text() == RunLayout(whole_root / run).metrics.read_text()
    left = "trained before: measured only"
    assert fitting.left_to_compute(parts_root / run, arguments, reuse=True) == left
    first, second = sittings.read_sittings(layout.sittings)
    assert first == killed and killed["until"] <= second["started"] < second["until"]
    seconds = (first["until"] - first["started"]) + (second["until"] - second["started"])
    assert sittings.fit_time(layout) == {"started": first["started"], "finished": second["until"],
                                         "seconds": seconds,
                                         "devices": [sittings.this_machine()],
                                         "cpu_seconds": first["cpu_seconds"]
                                         + second["cpu_seconds"]}  # fmt: skip
    assert 0 < first["cpu_seconds"] <= first["until"] - first["started"] + 1
    assert whole["until"] > whole["started"]
    restored = f"Restoring states from the checkpoint path at {layout.checkpoint('last')}"
    log = layout.train_log.read_text()
    assert log.count(restored) == 1 and log.count("Seed set to 3") == 2  # both parts' output
    assert not fitting.fit(parts_root / run, arguments, reuse=True)  # finished: kept


def test_a_run_trained_again_from_scratch_keeps_only_its_measurements_when_asked(
    tmp_path, monkeypatch
):
    """`fit` from scratch empties the run folder; with `keep_measurements` (a kept run trained
    again) its `measurements.json` stays, through a failed fit and a finished one, the CLI taking
    the folder as empty; a bad `sittings.json` is one error naming the file."""
    layout = RunLayout(tmp_path / "paper1" / "tiny" / "seed=3")
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    arguments = ["--config", str(config), "--run.root", str(tmp_path)]

    def old_run():
        (layout.path / "traces").mkdir(parents=True, exist_ok=True)
        layout.config.write_text("old: run\n")
        layout.measurements.write_text('{"kept": "as measured"}\n')

    def outside_fit() -> set[str]:
        return {p.name for p in layout.path.iterdir()} - {"started.txt", "sittings.json",
                                                          "train.log", ".lock"}  # fmt: skip

    for keep in (False, True):
        old_run()
        with monkeypatch.context() as patch, pytest.raises(RuntimeError, match="failed: see"):
            patch.setattr(fitting, "WarmPopen", ended_fit(1, []))  # a fit that failed
            fitting.fit(layout.path, arguments, keep_measurements=keep)
        assert outside_fit() == ({"measurements.json"} if keep else set()), keep
    old_run()
    assert fitting.fit(layout.path, arguments, keep_measurements=True)
    assert layout.command.is_file() and "config.yaml" in outside_fit()
    assert layout.measurements.read_text() == '{"kept": "as measured"}\n'
    for bad in ('[{"started": 1}]', '{"started": 1, "until": 2}', "[1, 2]", "not json"):
        layout.sittings.write_text(bad)
        with pytest.raises(ValueError, match=r"sittings.json is not a list of sittings .* delete"):
            sittings.fit_time(layout)


def test_what_a_reproduction_writes_before_a_fit_is_not_a_recorded_run(tmp_path):
    """A folder holding only a reproduction's files (and their temporary files mid-write) is
    empty to a fresh fit; a measurements file counts as a run unless that reproduction started
    the folder (`started.txt`: the kept measurements of a run it trains again)."""
    names = [".lock", "train.log", "sittings.json", ".sittings.json.0123456789ab.tmp",
             "measurements.json"]  # fmt: skip
    for name in names:
        (tmp_path / name).write_text("")
    assert [p.name for p in recorded_entries(tmp_path)] == ["measurements.json"]
    (tmp_path / "started.txt").write_text("-m experiments fit")
    assert recorded_entries(tmp_path) == []
    for name in (".config.yaml.0123456789ab.tmp", ".sittings.json.tmp", "sittings.json.old"):
        (tmp_path / name).write_text("")
    assert sorted(p.name for p in recorded_entries(tmp_path)) == [
        ".config.yaml.0123456789ab.tmp",
        ".sittings.json.tmp",
        "sittings.json.old",
    ]


def rows(path: Path) -> list[dict]:
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def test_metrics_csv_survives_a_kill_during_a_header_rewrite(tmp_path, monkeypatch):
    logger = RunMetricsCSV(tmp_path)
    logger.log_metrics({"train/loss": 1.5}, step=0)
    logger.save()
    before = (tmp_path / "metrics.csv").read_text()

    def killed(self, rows):
        raise KeyboardInterrupt  # as if killed while the rows are written

    logger.log_metrics({"val/seq_acc": 0.25}, step=1)  # a new column: the header changes
    with monkeypatch.context() as patch:
        patch.setattr(csv.DictWriter, "writerows", killed)
        with pytest.raises(KeyboardInterrupt):
            logger.save()
    assert (tmp_path / "metrics.csv").read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.csv"]  # no temporary file left


def test_metrics_csv_append_that_fails_is_undone(tmp_path, monkeypatch):
    logger = RunMetricsCSV(tmp_path)
    logger.log_metrics({"train/loss": 1.5}, step=0)
    logger.save()
    before = (tmp_path / "metrics.csv").read_text()
    real_write = os.write

    def half_then_full_disk(handle, data):
        real_write(handle, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    logger.log_metrics({"train/loss": 1.25}, step=1)
    monkeypatch.setattr(os, "write", half_then_full_disk)
    with pytest.raises(OSError, match="No space"):
        logger.save()
    monkeypatch.undo()
    assert (tmp_path / "metrics.csv").read_text() == before


def test_metrics_csv_keeps_the_rows_before_the_resumed_step(tmp_path):
    first = RunMetricsCSV(tmp_path)
    for step in range(4):
        first.log_metrics({"train/loss": float(step)}, step=step)
    first.save()
    assert RunMetricsCSV(tmp_path, keep_before_step=2).experiment  # a fit resumed at step 2
    assert [r["step"] for r in rows(tmp_path / "metrics.csv")] == ["0", "1"]
    assert RunMetricsCSV(tmp_path, keep_before_step=float("inf")).experiment  # a test of it
    assert [r["step"] for r in rows(tmp_path / "metrics.csv")] == ["0", "1"]
    assert RunMetricsCSV(tmp_path).experiment  # a fresh fit
    assert not (tmp_path / "metrics.csv").exists()


def test_second_fit_into_a_run_being_written_is_refused_and_leaves_it_untouched(tmp_path, capsys):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    run = tmp_path / "runs" / "paper1" / "tiny" / "seed=3"
    main(["fit", "--config", str(config), "--run.root", str(tmp_path / "runs"),
          "--trainer.max_epochs", "1"])  # fmt: skip
    writing = RunFolderLock(run)  # the first writer, still at work
    before = sorted((p, p.stat().st_mtime_ns, p.stat().st_size) for p in run.rglob("*"))
    try:
        with pytest.raises(SystemExit) as stopped:
            main(["fit", "--config", str(config), "--run.root", str(tmp_path / "runs")])
        assert stopped.value.code == 2
        error = capsys.readouterr().err
        assert f"{run} is in use by another process (pid {os.getpid()}" in error
        from experiments.engine.fit import fit

        with pytest.raises(RunFileError, match="in use"):
            fit(run, ["--config", str(config)])
    finally:
        writing.release()
    assert sorted((p, p.stat().st_mtime_ns, p.stat().st_size) for p in run.rglob("*")) == before


def test_unwritable_run_root_is_one_clear_error(tmp_path, capsys):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # a run root under a file cannot be made, even by root
    with pytest.raises(SystemExit) as stopped:
        main(["fit", "--config", str(config), "--run.root", str(blocker / "runs")])
    assert stopped.value.code == 2
    assert "Cannot write the run folder" in capsys.readouterr().err


@pytest.mark.parametrize(("setting", "named"), [
    (["--trainer.max_epochs", "-5"], ["max_epochs"]),
    (["--run.checkpoint_minutes", "-1"], ["run.checkpoint_minutes", "v>=0"]),
])  # fmt: skip
def test_a_bad_fit_setting_is_one_clear_error(tmp_path, capsys, setting, named):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    with pytest.raises(SystemExit) as stopped:
        main(["fit", "--config", str(config), "--run.root", str(tmp_path / "runs"), *setting])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert all(name in error for name in named) and "Traceback" not in error
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_written_files_follow_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        written = [write_text_atomic(tmp_path / "report.md", "text"),
                   save_tensors_atomic({}, tmp_path / "weights.safetensors")]  # fmt: skip
    finally:
        os.umask(old)
    for path in written:
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask, path


@pytest.mark.parametrize("replacing", [False, True])
def test_a_fit_on_two_cpu_processes_writes_one_run(tmp_path, replacing):
    """`--trainer.devices 2 --trainer.strategy ddp` on CPU: rank zero alone holds the run's lock
    and writes its files, so the fit ends with one metrics.csv (every epoch validated once, at
    the steps of a one-process fit: 6 batches per process and epoch) and one W&B run; replacing
    a run, rank zero alone moves the old one aside (the other rank, started while it is held,
    leaves the folder alone) and deletes it once the fit finished."""
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    ddp = ("--trainer.accelerator", "cpu", "--trainer.devices", "2", "--trainer.strategy", "ddp")
    if replacing:  # the run replaced: any fit of the same folder, here one in this process
        fit(tmp_path, "runs", "--trainer.max_epochs", "1")
    log = tmp_path / "fit.log"
    process = start_warm_fit(config, tmp_path / "runs", log, *ddp, "--run.replace",
                             str(replacing).lower())  # fmt: skip
    assert process.wait(timeout=HANG_GUARD) == 0, log.read_text()
    layout = RunLayout(tmp_path / "runs" / "paper1" / "tiny" / "seed=3")
    assert not any(p.name.startswith(".old-run") for p in layout.path.iterdir())
    metrics = rows(layout.metrics)
    validated = [(r["epoch"], r["step"]) for r in metrics if r["val/seq_acc"]]
    assert validated == [("0", "5"), ("1", "11")]
    assert len([r for r in metrics if r["test/new_compositions/seq_acc"]]) == 1
    assert layout.lock.read_text().startswith(f"pid {process.pid}:")  # rank zero, the one started
    offline_runs = [p.name for p in (layout.path / "wandb").glob("offline-run-*")]
    assert len(offline_runs) == 1 and offline_runs[0].endswith(layout.wandb_run_id.read_text())


STEP_BASED = {
    "toy_2d": (["--data.init_args.steps_per_epoch", "8", "--data.init_args.eval_size", "50",
                "--trainer.max_steps", "20"], 13, "toy_2d_A"),
    "scan": (["--data.init_args.steps_per_epoch", "10", "--data.init_args.eval_size", "20",
              "--data.init_args.batch_size", "32",
              "--trainer.max_steps", "15", "--trainer.val_check_interval", "5",
              "--trainer.limit_test_batches", "2"], 13, "scan_A"),
}  # fmt: skip
"""Paper 3's step-based configs, shrunk: (overrides, the step the fit is killed before, variant)."""


def killed_and_resumed(tmp_path: Path, config: Path, arguments: list[str], run: Path,
                       kill_step: int, resumed_at: int | None = None,
                       stop: tuple[str, int] = ("KillAtStep", 9)) -> None:  # fmt: skip
    """Fit `config` once uninterrupted and once killed before training step `kill_step` and
    resumed from its last checkpoint (`--ckpt_path last`); both must end with the same
    metrics.csv, weights and weight snapshots. All three fits are forked from one warm server
    (`start_warm_fit`), so they run with one thread count: with another count a reduction sums
    in another order, and the metrics differ in their last digits. `resumed_at`: the step the
    last checkpoint before the kill must hold; `stop`: the callback of `tests.kill_at_step` that
    stops the fit, and the exit status it ends with."""
    arguments = [*arguments, "--trainer.enable_progress_bar", "false"]
    kill = {"class_path": f"tests.kill_at_step.{stop[0]}", "init_args": {"step": kill_step}}
    log = tmp_path / "fits.log"
    whole, parts = RunLayout(tmp_path / "whole" / run), RunLayout(tmp_path / "parts" / run)
    for root, extra, status in [
        (tmp_path / "whole", [], 0),
        (tmp_path / "parts", [f"--trainer.callbacks+={json.dumps(kill)}"], stop[1]),
        (tmp_path / "parts", ["--ckpt_path", "last"], 0),
    ]:
        if resumed_at is not None and extra[:1] == ["--ckpt_path"]:
            assert load_checkpoint(parts.checkpoint("last"))["global_step"] == resumed_at
        process = start_warm_fit(config, root, log, *arguments, *extra)
        assert process.wait(timeout=HANG_GUARD) == status, log.read_text()
    assert parts.metrics.read_text() == whole.metrics.read_text()
    expected = load_checkpoint(whole.checkpoint("last"))["state_dict"]
    resumed = load_checkpoint(parts.checkpoint("last"))["state_dict"]
    assert all(torch.equal(expected[k], resumed[k]) for k in expected)
    snapshots = sorted(p.name for p in whole.weights.iterdir())
    assert snapshots == sorted(p.name for p in parts.weights.iterdir()) and snapshots
    for name in snapshots:
        expected, resumed = load_file(whole.weights / name), load_file(parts.weights / name)
        assert all(torch.equal(expected[k], resumed[k]) for k in expected), name


@pytest.mark.parametrize("config", sorted(STEP_BASED))
def test_a_step_based_fit_killed_and_resumed_equals_an_uninterrupted_one(tmp_path, config):
    """Paper 3's configs count `--trainer.max_steps` (shrunk epochs here; the toy validated after
    every step, SCAN every 5): killed mid-epoch and resumed from its last checkpoint (the end of
    an epoch), a fit ends with the metrics.csv, weights and weight snapshots of an uninterrupted
    one (Lightning's own step-based resumption logged one step off and redrew the epoch)."""
    overrides, kill_step, variant = STEP_BASED[config]
    path = ROOT / "experiments" / "configs" / "paper3" / f"{config}.yaml"
    killed_and_resumed(tmp_path, path, overrides, Path("paper3") / variant / "seed=0", kill_step)


def test_paper2s_language_model_killed_and_resumed_equals_an_uninterrupted_one(tmp_path):
    """Paper 2's epoch-based language model (shrunk: 4,000 tokens, 8 units, 3 epochs of 5
    batches), killed in its second epoch and resumed from the first epoch's last checkpoint,
    ends as an uninterrupted fit: the same metrics.csv, weights and weight snapshots (an exact
    resume for every paper's configs)."""
    overrides = ["--data.corpus_length", "4000", "--data.rules", "10", "--data.conduit_length",
                 "2", "--data.probe_rules", "8", "--model.embedding_size", "8",
                 "--model.hidden_size", "8", "--trainer.max_epochs", "3",
                 "--trainer.limit_train_batches", "5", "--run.variant", "tiny"]  # fmt: skip
    path = ROOT / "experiments" / "configs" / "paper2" / "language_model.yaml"
    killed_and_resumed(tmp_path, path, overrides, Path("paper2") / "tiny" / "seed=0", 7)


EVERY_STEP = ["--run.checkpoint_minutes", "1e-9"]
"""`last.ckpt` written inside the epochs after every training step (a step takes longer than the
interval however busy the machine)."""
INSIDE_AN_EPOCH = {
    "paper 2's language model (states carried between windows)": (
        ROOT / "experiments" / "configs" / "paper2" / "language_model.yaml",
        ["--data.corpus_length", "4000", "--data.rules", "10", "--data.conduit_length", "2",
         "--data.probe_rules", "8", "--model.embedding_size", "8", "--model.hidden_size", "8",
         "--trainer.max_epochs", "3", "--trainer.limit_train_batches", "5",
         "--run.variant", "tiny"], Path("paper2") / "tiny" / "seed=0", 7),
    "paper 3's toy (the playground's ordered passes)": (
        ROOT / "experiments" / "configs" / "paper3" / "toy_2d.yaml",
        [*STEP_BASED["toy_2d"][0], "--data.init_args.training_order", "playground_passes"],
        Path("paper3") / "toy_2d_A" / "seed=0", 13),
    "paper 4's token positioning (signals drawn again each epoch)": (
        ROOT / "experiments" / "configs" / "paper4" / "gru.yaml",
        ["--data.vocab_size", "100", "--data.batch_size", "8", "--data.redraw_signals", "true",
         "--model.init_args.embedding_size", "4", "--model.init_args.hidden_size", "8",
         "--trainer.max_epochs", "2", "--trainer.limit_train_batches", "6",
         "--trainer.limit_val_batches", "2", "--trainer.limit_test_batches", "2"],
        Path("paper4") / "gru" / "seed=0", 9),
    "paper 3's SCAN (batches drawn with replacement)": (
        ROOT / "experiments" / "configs" / "paper3" / "scan.yaml", STEP_BASED["scan"][0],
        Path("paper3") / "scan_A" / "seed=0", 13),
}  # fmt: skip
"""Fits killed inside an epoch, one for each way the suite orders a training epoch but paper 1's
shuffle by seed and epoch, which the SIGTERM test below resumes inside an epoch: (config,
overrides, run, the step the fit is killed before)."""


@pytest.mark.parametrize("case", sorted(INSIDE_AN_EPOCH))
def test_a_fit_killed_inside_an_epoch_resumes_there_to_an_uninterrupted_fit(tmp_path, case):
    """With `--run.checkpoint_minutes`, a fit killed inside an epoch resumes from the `last.ckpt`
    written there (the step before the kill): it skips the batches trained before it and ends
    with the metrics.csv (the epoch's means too), weights and weight snapshots of an
    uninterrupted fit."""
    config, overrides, run, kill_step = INSIDE_AN_EPOCH[case]
    killed_and_resumed(tmp_path, config, [*overrides, *EVERY_STEP], run, kill_step, kill_step)


def test_a_fit_stopped_by_sigterm_inside_an_epoch_resumes_from_the_batch_it_ended(tmp_path):
    """SIGTERM (a cluster's time limit, a reproduction's sitting ending) inside an epoch of paper
    1's lookup tables (6 batches an epoch, shuffled by seed and epoch), long before
    `--run.checkpoint_minutes` elapsed: the fit writes `last.ckpt` after the batch at hand (step
    10), ends with status 143, and resumes from that batch to an uninterrupted fit's files."""
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    killed_and_resumed(tmp_path, config, [], Path("paper1") / "tiny" / "seed=3", 9, 10,
                       stop=("TerminateAtStep", 143))  # fmt: skip
