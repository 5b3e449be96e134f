"""`python -m probes`: the command over run folders whose answers are known.

The run folders hold traces and checkpoints of the hand-built GRU of `test_probes` (units 0 and 1
hold the table, reset-gate unit 3 is always closed and unit 4 always open), so every probe has a
known answer. Checks: the planted units come out, two processes give the table of one, a rerun
skips what is stored, a killed command finishes with the table of an uninterrupted one, and bad
input is one clear error.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

import probes.command.run
from probes.command.cli import main
from storage.files import save_tensors_atomic
from tests.data_files import write_best_checkpoint
from tests.smoke import HANG_GUARD
from tests.test_probes import TABLES, UNITS, planted_gru

SPLITS = ("first", "second")
TAGS = ("best", "epoch=1", "epoch=3")
TARGETS = ["encoder.hidden:batch.source_table", "encoder.hidden:time"]
# The text's procedure: one fit per unit count, where the co-authors' (the default) makes 5.
OPTIONS = ["--splits", *SPLITS, "--targets", *TARGETS, "--procedure", "text"]


def planted_run(folder: Path, seed: int, noise_units: int = 0, batch: int = 120) -> Path:
    """A run folder of the planted GRU: traces of `SPLITS` at `TAGS` (inputs drawn with `seed`,
    `noise_units` extra units of noise appended to the hidden state) and a checkpoint."""
    gru = planted_gru()
    generator = torch.Generator().manual_seed(seed)
    for split in SPLITS:
        for tag in TAGS:
            time_steps = 4
            tables = torch.randint(0, TABLES, (batch, time_steps), generator=generator)
            inputs = torch.cat(
                [
                    torch.nn.functional.one_hot(tables, TABLES).float(),
                    torch.randn(batch, time_steps, 4, generator=generator),
                ],
                -1,
            )
            record = {}
            with torch.no_grad():
                gru(inputs, record=record)
            hidden = torch.cat(
                [
                    record["hidden"],
                    torch.randn(batch, time_steps, noise_units, generator=generator),
                ],
                -1,
            )
            lengths = torch.randint(2, time_steps + 1, (batch,), generator=generator)
            valid = torch.arange(time_steps)[None] < lengths[:, None]
            save_tensors_atomic({
                "encoder.hidden": hidden,
                "encoder.update_gate": record["update_gate"],
                "encoder.reset_gate": record["reset_gate"],
                "batch.source_lengths": lengths,
                "batch.source_table": torch.where(valid, tables, -100),
            }, folder / "traces" / split / f"{tag}.safetensors")  # fmt: skip
    state = {f"encoder.{name}": value for name, value in gru.state_dict().items()}
    checkpoint = {"state_dict": state, "hyper_parameters": {"_class_path": "tests.PlantedGRU"}}
    return write_best_checkpoint(folder, checkpoint)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    for variant in ("a", "b"):
        for seed in (1, 2):
            planted_run(root / variant / f"seed={seed}", seed + 10 * (variant == "b"))
    return root


def probe(*arguments: str) -> int:
    return main([str(a) for a in arguments])


def test_functional_group_command_finds_the_planted_units(runs, tmp_path, capsys):
    """The text's procedure finds exactly the planted pair; the co-authors' (the default) ranks
    by the first class's coefficients only, which give unit 1 no weight (see
    `test_the_coauthors_ablation_on_the_planted_pair`): it starts at unit 0 and needs unit 1."""
    assert probe("functional-group", "--runs", f"{runs}/a/seed=1", "--out", tmp_path / "code",
                 "--splits", *SPLITS, "--targets", TARGETS[0]) == 0  # fmt: skip
    coauthors = pd.read_csv(tmp_path / "code" / "functional-group.csv").loc[0]
    assert coauthors["units"].split()[0] == "0" and "1" in coauthors["units"].split()
    assert coauthors["accuracy"] >= 0.95 * coauthors["accuracy_all"]
    assert probe("functional-group", "--runs", f"{runs}/*/seed=*", "--out", tmp_path,
                 *OPTIONS) == 0  # fmt: skip
    table = pd.read_csv(tmp_path / "functional-group.csv")
    assert len(table) == 4 * len(TARGETS)
    assert list(table["run"].unique()) == [f"{runs}/{v}/seed={s}" for v in "ab" for s in (1, 2)]
    tables = table[table["label"] == "batch.source_table"]
    assert {frozenset(units.split()) for units in tables["units"]} == {frozenset({"0", "1"})}
    assert (tables["accuracy"] == 1.0).all()
    summary = (tmp_path / "functional-group.summary.md").read_text()
    assert "| a | best | encoder.hidden:batch.source_table | 2 |" in summary  # not {runs}/a
    assert list(table["group"].unique()) == ["a", "b"]  # the figures' legends
    assert (tmp_path / "figures" / "functional_group_sizes.png").stat().st_size > 0
    assert "| group | checkpoint | target | runs |" in capsys.readouterr().out


def test_gate_saturation_and_connectivity_find_the_planted_gates(runs, tmp_path):
    threads = torch.get_num_threads()
    torch.set_num_threads(3)  # neither this process's share of the cores nor one
    try:
        assert probe("gate-saturation", "--runs", f"{runs}/a/seed=1", "--out", tmp_path,
                     "--splits", *SPLITS, "--gates", "encoder.reset_gate",
                     "--update-gate-convention", "torch") == 0  # fmt: skip
        # the command ran here: this process keeps its thread count (a count left changed put
        # later fits here on other sums, failing test_run_writers' killed-and-resumed equality)
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(threads)
    table = pd.read_csv(tmp_path / "gate-saturation.csv").set_index("unit")
    assert table.loc[3, "left"] == 1.0 and table.loc[3, "right"] == 0.0
    assert table.loc[4, "right"] == 1.0 and table.loc[4, "left"] == 0.0
    assert len(table) == UNITS
    # Candidate input weights: units 0 and 1 receive 8 table inputs of |w| <= 0.5; the noise
    # units receive standard-normal weights from the 4 noise inputs.
    assert probe("connectivity", "--runs", f"{runs}/a/seed=1", "--out", tmp_path,
                 "--matrices", "encoder.candidate.ih:to:0.45") == 0  # fmt: skip
    weight = planted_gru().weight_ih_l0[2 * UNITS :]
    expected = int(((weight.abs() >= 0.45).sum(1) > 0).sum())
    assert pd.read_csv(tmp_path / "connectivity.csv")["connected"].tolist() == [expected]
    assert (tmp_path / "figures" / "weight_heatmaps.png").is_file()


def test_checkpoint_all_and_last_pick_the_recorded_tags(runs, tmp_path):
    assert probe("functional-group", "--runs", f"{runs}/a/seed=1", "--out", tmp_path / "all",
                 "--checkpoint", "all", *OPTIONS) == 0  # fmt: skip
    table = pd.read_csv(tmp_path / "all" / "functional-group.csv")
    assert list(table["checkpoint"].unique()) == ["best", "epoch=1", "epoch=3"]
    assert probe("functional-group", "--runs", f"{runs}/a/seed=1", "--out", tmp_path / "last",
                 "--checkpoint", "last", *OPTIONS) == 0  # fmt: skip
    last = pd.read_csv(tmp_path / "last" / "functional-group.csv")
    assert list(last["checkpoint"].unique()) == ["epoch=3"]
    pd.testing.assert_frame_equal(last, table[table["checkpoint"] == "epoch=3"].reset_index(
        drop=True))  # fmt: skip


def test_two_processes_give_the_table_of_one(runs, tmp_path):
    for devices in (1, 2):
        assert (
            probe(
                "functional-group",
                "--runs",
                f"{runs}/*/seed=*",
                "--checkpoint",
                "all",
                "--out",
                tmp_path / str(devices),
                "--devices",
                devices,
                *OPTIONS,
            )
            == 0
        )
    one = (tmp_path / "1" / "functional-group.csv").read_text()
    assert (tmp_path / "2" / "functional-group.csv").read_text() == one
    assert len(pd.read_csv(tmp_path / "2" / "functional-group.csv")) == 12 * len(TARGETS)


def test_rerun_skips_stored_results_and_a_changed_input_is_computed_again(runs, tmp_path,
                                                                          capsys):  # fmt: skip
    arguments = ["functional-group", "--runs", f"{runs}/*/seed=*", "--out", tmp_path, *OPTIONS]
    assert probe(*arguments) == 0
    first = (tmp_path / "functional-group.csv").read_text()
    assert "0 already stored, 4 to compute" in capsys.readouterr().out
    assert probe(*arguments) == 0
    assert "4 already stored, 0 to compute" in capsys.readouterr().out
    assert (tmp_path / "functional-group.csv").read_text() == first
    assert probe(*arguments, "--share", "0.5") == 0  # other options: other results
    assert "0 already stored, 4 to compute" in capsys.readouterr().out
    copy = tmp_path / "copy"
    planted_run(copy / "seed=1", 1)
    planted_run(copy / "seed=2", 2)  # the same contents as a/seed=2 ...
    planted_run(copy / "seed=3", 3)  # ... and new ones
    assert probe("functional-group", "--runs", f"{copy}/*", "--out", tmp_path, *OPTIONS) == 0
    assert "2 already stored, 1 to compute" in capsys.readouterr().out


def test_killed_command_resumes_to_the_table_of_an_uninterrupted_one(tmp_path, capsys):
    """SIGKILL once some results are stored, start again, compare with an uninterrupted run (the
    killed command is a process of its own; the others run in this one)."""
    runs = tmp_path / "runs"
    for seed in range(6):  # 18 tasks, each a few tenths of a second
        planted_run(runs / f"seed={seed}", seed, noise_units=120, batch=200)
    arguments = ["functional-group", "--runs", f"{runs}/*", "--checkpoint", "all", *OPTIONS]
    command = [sys.executable, "-m", "probes", *arguments]
    assert probe(*arguments, "--out", tmp_path / "whole") == 0
    stored = tmp_path / "parts" / "cache" / "functional-group"
    started = subprocess.Popen([*command, "--out", tmp_path / "parts"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + HANG_GUARD
    while not (stored.is_dir() and len(list(stored.glob("*.json"))) >= 2):
        assert started.poll() is None, "finished before the kill"
        assert time.monotonic() < deadline, f"no two results stored in {HANG_GUARD} s"
        time.sleep(0.02)
    os.killpg(started.pid, signal.SIGKILL)
    started.wait()
    kept = len(list(stored.glob("*.json")))
    assert 2 <= kept < 18
    assert not (tmp_path / "parts" / "functional-group.csv").exists()
    capsys.readouterr()
    assert probe(*arguments, "--out", tmp_path / "parts") == 0
    assert f"{kept} already stored, {18 - kept} to compute" in capsys.readouterr().out
    whole = (tmp_path / "whole" / "functional-group.csv").read_text()
    assert (tmp_path / "parts" / "functional-group.csv").read_text() == whole


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("truncated", "not JSON: "),
        ("no rows", "no 'rows'"),
        ("rows of other fields", "its rows lack "),
        ("a row holding a list", "a row holds a value that is neither"),
    ],
)
def test_unreadable_stored_result_is_discarded_and_computed_again(runs, tmp_path, capsys, damage,
                                                                  reason):  # fmt: skip
    arguments = ["functional-group", "--runs", f"{runs}/*/seed=*", "--out", tmp_path, *OPTIONS]
    assert probe(*arguments) == 0
    clean = (tmp_path / "functional-group.csv").read_bytes()
    capsys.readouterr()
    broken = sorted((tmp_path / "cache" / "functional-group").glob("*.json"))[1]
    text = broken.read_text()
    if damage == "truncated":
        broken.write_text(text[: len(text) // 2])
    else:  # valid JSON, but not a whole result of its task
        record = json.loads(text)
        if damage == "no rows":
            del record["rows"]
        elif damage == "rows of other fields":
            record["rows"] = [{"wrong": 1.0}]
        else:
            record["rows"][0]["accuracy"] = [1, 2]
        broken.write_text(json.dumps(record))
    assert probe(*arguments) == 0
    captured = capsys.readouterr()
    assert "3 already stored, 1 to compute" in captured.out
    [warning] = captured.err.strip().splitlines()
    assert warning.startswith(f"discarding unreadable stored result {broken} ({reason}")
    assert warning.endswith("): computing it again")
    assert (tmp_path / "functional-group.csv").read_bytes() == clean
    assert broken.read_text() == text
    assert probe(*arguments) == 0  # whole again: nothing to discard or compute
    captured = capsys.readouterr()
    assert "4 already stored, 0 to compute" in captured.out and not captured.err


@pytest.mark.parametrize("case", ["out under a file", "cache denied", "out on a read-only disk"])
def test_unwritable_out_or_cache_is_one_error_before_any_work(
    runs, tmp_path, capsys, monkeypatch, case
):
    out, cache = tmp_path / "out", tmp_path / "out" / "cache"
    flag, folder, reason = "--cache", cache, "Permission denied"
    if case == "out under a file":
        (tmp_path / "file").write_text("a file, not a folder")
        out = cache = tmp_path / "file" / "out"
        flag, folder, reason = "--out", out, "Not a directory"
    elif case == "cache denied":  # as if --cache were read-only (chmod does not stop root)
        mkstemp = tempfile.mkstemp

        def denied(*args, dir=None, **kwargs):
            if dir is not None and (Path(dir) == cache or cache in Path(dir).parents):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), dir)
            return mkstemp(*args, dir=dir, **kwargs)

        monkeypatch.setattr(tempfile, "mkstemp", denied)
    else:  # a folder on a read-only file system (chmod would not stop root, who runs CI)
        parent = tmp_path / "mounted"
        parent.mkdir()
        out = cache = parent / "out"
        flag, folder, reason = "--out", out, "Read-only file system"
        mkdir = Path.mkdir

        def read_only(self, *args, **kwargs):
            if self == parent or parent in self.parents:
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))
            return mkdir(self, *args, **kwargs)

        monkeypatch.setattr(Path, "mkdir", read_only)
    logged = []
    monkeypatch.setattr(probes.command.run, "log_to_wandb", lambda *a, **k: logged.append(a))
    monkeypatch.setenv("WANDB_MODE", "offline")
    before = sorted(tmp_path.rglob("*"))
    status = probe("functional-group", "--runs", f"{runs}/a/seed=1", "--out", out,
                   "--cache", cache, "--wandb", *OPTIONS)  # fmt: skip
    assert status == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"python -m probes functional-group: error: cannot write to {flag} {folder} ({reason}): "
        "choose a folder you can write to\n"
    )
    assert "results (" not in captured.out  # no work planned or done
    assert not logged  # no W&B run
    assert sorted(tmp_path.rglob("*")) == before  # nothing written, the folders made removed


def test_corrupt_checkpoint_error_names_the_probe_commands_option(tmp_path, capsys):
    run = planted_run(tmp_path / "runs" / "seed=1", 1)
    checkpoint = run / "checkpoints" / "best.ckpt"
    checkpoint.write_bytes(b"not a checkpoint")
    assert probe("connectivity", "--runs", run, "--out", tmp_path / "out") == 2
    error = capsys.readouterr().err
    assert str(checkpoint) in error and len(error.strip().splitlines()) == 1
    assert "--ckpt_path" not in error
    assert "--checkpoint" in error


def broken_runs(root: Path) -> dict[str, Path]:
    """One run folder per kind of bad input."""
    corrupt = planted_run(root / "corrupt", 1)
    (corrupt / "traces" / "second" / "best.safetensors").write_bytes(b"\x00 not safetensors")
    other = root / "language_model"
    save_tensors_atomic({"hidden": torch.zeros(2, 3, 4)},
                        other / "traces" / "validation" / "best.safetensors")  # fmt: skip
    (other / "checkpoints").mkdir()
    torch.save({"state_dict": {}, "hyper_parameters": {
        "_class_path": "lightning_modules.language_model.LanguageModel"}},
        other / "checkpoints" / "best.ckpt")  # fmt: skip
    torn = planted_run(root / "torn", 2)
    checkpoint = torn / "checkpoints" / "best.ckpt"
    checkpoint.write_bytes(checkpoint.read_bytes()[:100])
    return {"corrupt": corrupt, "other": other, "torn": torn, "good": planted_run(root / "good", 3)}


@pytest.mark.parametrize(
    ("probe_name", "run", "extra", "message"),
    [
        ("functional-group", "nowhere", [], "matches no run folder"),
        ("functional-group", "corrupt", [], "second/best.safetensors is corrupt"),
        ("functional-group", "other", [], "a run of lightning_modules.language_model."
         "LanguageModel, has no traces of split 'first'"),
        ("functional-group", "good", ["--checkpoint", "epoch=7"],
         "has no checkpoint 'epoch=7' (it has best, epoch=1, epoch=3)"),
        ("functional-group", "good", ["--targets", "encoder.hidden"], "is not SITE:LABEL"),
        ("functional-group", "good", ["--targets", "decoder.hidden:time"],
         "has no batch.target, decoder.hidden"),
        ("connectivity", "torn", [], "best.ckpt is corrupt or not a checkpoint"),
        ("connectivity", "other", [], "a run of lightning_modules.language_model.LanguageModel, "
         "has no decoder.weight_hh_l0, decoder.weight_ih_l0, encoder.weight_hh_l0"),
    ],
)  # fmt: skip
def test_bad_input_is_one_clear_error_and_writes_no_table(tmp_path, capsys, probe_name, run,
                                                          extra, message):  # fmt: skip
    folders = broken_runs(tmp_path / "runs")
    path = folders.get(run, tmp_path / "runs" / run)
    options = OPTIONS if probe_name == "functional-group" else []
    assert probe(probe_name, "--runs", path, "--out", tmp_path / "out", *options, *extra) == 2
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error
    assert len(error.strip().splitlines()) == 1
    assert not (tmp_path / "out" / f"{probe_name}.csv").exists()


def test_unknown_option_or_probe_is_one_usage_error(tmp_path, capsys):
    for arguments, message in (
        (["functional-group", "--runs", "x", "--out", tmp_path, "--thresold", "3"],
         "unrecognized arguments: --thresold 3"),
        (["functional-groups", "--runs", "x"], "invalid choice: 'functional-groups'"),
    ):  # fmt: skip
        with pytest.raises(SystemExit) as stopped:
            probe(*arguments)
        assert stopped.value.code == 2
        error = capsys.readouterr().err
        assert message in error and "Traceback" not in error


def test_keep_going_reports_failures_at_the_end_and_keeps_the_rest(tmp_path, capsys):
    folders = broken_runs(tmp_path / "runs")
    status = probe(
        "functional-group",
        "--runs",
        folders["corrupt"],
        folders["good"],
        folders["other"],
        "--out",
        tmp_path / "out",
        "--keep-going",
        *OPTIONS,
    )
    assert status == 1
    table = pd.read_csv(tmp_path / "out" / "functional-group.csv")
    assert set(table["run"]) == {str(folders["good"])}
    error = capsys.readouterr().err
    assert "2 failed (--keep-going)" in error
    assert "corrupt" in error and "LanguageModel" in error


def test_wandb_logs_the_table_and_figures_offline(runs, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    assert probe("functional-group", "--runs", f"{runs}/a/seed=1", "--out", tmp_path,
                 "--wandb", *OPTIONS) == 0  # fmt: skip
    [run] = (tmp_path / "wandb" / "wandb").glob("offline-run-*")
    assert list(run.glob("*.wandb"))


def test_parquet_without_pyarrow_is_one_error_before_any_work(runs, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if it were not installed
    assert probe("functional-group", "--runs", f"{runs}/a/seed=1", "--out", tmp_path,
                 "--format", "parquet", *OPTIONS) == 2  # fmt: skip
    assert "--format parquet needs pyarrow" in capsys.readouterr().err
    assert not tmp_path.joinpath("cache").exists()


def test_connectivity_reads_an_lstm_by_its_four_gates_and_refuses_gru_gates(tmp_path, capsys):
    """An LSTM's stacked weights are 4 gate blocks: the GRU gates of the defaults are refused
    with one line naming the LSTM's, and its forget gate is read from the second block."""
    units, inputs = 4, 3
    state = {}
    for module in ("encoder", "decoder"):
        state[f"{module}.weight_ih_l0"] = torch.zeros(4 * units, inputs)
        state[f"{module}.weight_hh_l0"] = torch.zeros(4 * units, units)
    state["encoder.weight_hh_l0"][units + 1] = 1.0  # forget gate: unit 1 receives 4 edges
    run = tmp_path / "runs" / "lstm" / "seed=0"
    (run / "checkpoints").mkdir(parents=True)
    torch.save({"state_dict": state, "hyper_parameters": {
        "_class_path": "lightning_modules.seq2seq.Seq2Seq", "cell": "lstm"}},
        run / "checkpoints" / "best.ckpt")  # fmt: skip
    assert probe("connectivity", "--runs", run, "--out", tmp_path / "out") == 2
    error = capsys.readouterr().err
    assert "is an LSTM, which has no update_gate" in error and "forget_gate" in error
    assert len(error.strip().splitlines()) == 1 and "Traceback" not in error
    matrices = ["--matrices", "encoder.forget_gate.hh:to:0.5", "encoder.input_gate.hh:to:0.5"]
    assert probe("connectivity", "--runs", run, "--out", tmp_path / "out", *matrices) == 0
    table = pd.read_csv(tmp_path / "out" / "connectivity.csv")
    assert table[["matrix", "edges", "connected"]].values.tolist() == [
        ["encoder.forget_gate.hh:to:0.5", 4, 1],
        ["encoder.input_gate.hh:to:0.5", 0, 0],
    ]


def test_a_lone_stored_result_of_other_fields_is_one_clear_error(runs, tmp_path, capsys):
    arguments = ["connectivity", "--runs", f"{runs}/a/seed=1", "--out", tmp_path,
                 "--checkpoint", "best", "--matrices", "encoder.candidate.ih:to:0.45"]  # fmt: skip
    assert probe(*arguments) == 0
    [stored] = (tmp_path / "cache" / "connectivity").glob("*.json")
    record = json.loads(stored.read_text())
    stored.write_text(json.dumps({**record, "rows": [{"wrong": 1.0}]}))
    capsys.readouterr()
    assert probe(*arguments) == 2
    error = capsys.readouterr().err.strip()
    assert "lack the field 'matrix'" in error and "Traceback" not in error
    assert len(error.splitlines()) == 1


def test_runs_are_named_in_figures_without_a_machines_absolute_path(tmp_path, monkeypatch):
    """A figure's legend names each run group relative to the working directory when all lie
    inside it, else relative to their common parent (one folder alone by its own name), else by
    the shortest ends of their paths that tell them apart."""
    from probes.command.outputs import short_names

    runs = "/machine/home/me/runs"
    assert short_names([f"{runs}/paper1/guided", f"{runs}/paper1/baseline"]) == {
        f"{runs}/paper1/guided": "guided", f"{runs}/paper1/baseline": "baseline"}  # fmt: skip
    compared = [f"{runs}/paper1/guided", f"{runs}/paper2/guided", f"{runs}/paper1/guided"]
    assert list(short_names(compared).values()) == ["paper1/guided", "paper2/guided"]
    assert short_names([f"{runs}/paper1/guided"]) == {f"{runs}/paper1/guided": "guided"}
    assert list(short_names([runs, f"{runs}/paper1"]).values()) == ["runs", "runs/paper1"]
    monkeypatch.chdir(tmp_path)
    inside = ["runs/paper1/guided", str(tmp_path / "runs/paper2/guided")]
    assert list(short_names(inside).values()) == ["runs/paper1/guided", "runs/paper2/guided"]
    assert short_names(["."]) == {".": tmp_path.name}
    apart = ["runs/paper1/guided", f"{runs}/paper2/guided"]  # nothing in common but the root
    assert list(short_names(apart).values()) == ["paper1/guided", "paper2/guided"]
