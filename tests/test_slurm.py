"""`--slurm-array N`: one command writes a reproduction's sbatch scripts under `<run root>/slurm/`
and submits its array of shards and the merge that waits for it.

Without SLURM, `sbatch` is a stand-in on PATH that records what it was given; where `sbatch` is
installed and a controller answers (`../shared/tools/slurm-one-node.sh` starts one), paper 4's
quick reproduction runs as a 2-task array and its merge, and its report is the one machine's."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time

import pytest

from experiments.engine.launch import SHARED_SERVER
from experiments.paper4.reproduce import main
from tests.fake_sbatch import calls, stand_in
from tests.smoke import HANG_GUARD, quick_command, quick_reproduction


def refused(capsys, *arguments) -> str:
    """The one error line of a reproduction that must stop with status 2."""
    with pytest.raises(SystemExit) as stopped:
        main(["--scale", "quick", *map(str, arguments)])
    assert stopped.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    return line


def test_one_command_writes_and_submits_the_array_and_its_merge(tmp_path, monkeypatch, capsys):
    record = stand_in(tmp_path, monkeypatch)
    root = tmp_path / "root"
    main(["--scale", "quick", "--slurm-array", "2", "--runs", str(root), "--jobs", "1",
          "--slurm-options", "--time=01:00:00 --cpus-per-task=1"])  # fmt: skip
    printed = capsys.readouterr().out
    out = root / "reports" / "paper4" / "quick"
    assert "array job 100 (2 tasks" in printed and "merge job 101" in printed
    assert printed.rstrip().endswith(f"the report will be in {out}")
    slurm = root / "slurm"
    shards, merge = slurm / "paper4-quick-shards.sbatch", slurm / "paper4-quick-merge.sbatch"
    assert calls(record) == [["--parsable", "--time=01:00:00", "--cpus-per-task=1", str(shards)],
                     ["--parsable", "--dependency=afterok:100", "--time=01:00:00",
                      "--cpus-per-task=1", str(merge)]]  # fmt: skip
    assert (record / "0.sbatch").read_text() == shards.read_text()
    assert (record / "1.sbatch").read_text() == merge.read_text()
    assert sorted(p.name for p in root.iterdir()) == ["slurm"]  # nothing trained here
    array_lines, merge_lines = shards.read_text().splitlines(), merge.read_text().splitlines()
    for lines, log in ((array_lines, "paper4-quick-shard-%A_%a.out"),
                       (merge_lines, "paper4-quick-merge-%j.out")):  # fmt: skip
        assert f"#SBATCH --output={slurm / log}" in lines and "#SBATCH --requeue" in lines
        assert any(line.startswith(f"unset {SHARED_SERVER} ") for line in lines)  # own node's
        runs = [line for line in lines if "-m experiments.paper4" in line]
        assert len(runs) == 1 and "--scale quick" in runs[0]
    assert "#SBATCH --array=0-1" in array_lines
    assert f"--merge {root}/shard1 {root}/shard2 --runs {root}/merged --out {out} --jobs 1" in (
        merge_lines[-1])  # fmt: skip
    for task, shard in ((0, "1/2"), (1, "2/2")):  # each task's command, as bash expands it
        echoed = shards.read_text().replace(f"exec {shlex.quote(sys.executable)}",
                                            "exec /usr/bin/printf '%s\\n'")  # fmt: skip
        ran = subprocess.run(["bash", "-c", echoed], capture_output=True, text=True, check=True,
                             env={**os.environ, "SLURM_ARRAY_TASK_ID": str(task)})  # fmt: skip
        assert ran.stdout.split() == [
            "-m", "experiments.paper4", "--scale", "quick", "--shard", shard, "--runs",
            f"{root}/shard{task + 1}", "--reuse-runs", "--out", str(out), "--jobs", "1",
        ]  # fmt: skip


def test_a_submission_that_cannot_be_made_is_one_line(tmp_path, monkeypatch, capsys):
    root = ("--runs", tmp_path / "root")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert "sbatch is not installed here" in refused(capsys, "--slurm-array", "2", *root)
    assert not (tmp_path / "root").exists()  # no script written
    record = stand_in(tmp_path, monkeypatch)
    line = refused(capsys, "--slurm-array", "2", "--shard", "1/2", *root)
    assert line.endswith("leave out --shard and --merge")
    line = refused(capsys, "--slurm-array", "2", "--slurm-options", "--array=0-9 -o x", *root)
    assert "--slurm-options may not give --array, -o: --slurm-array sets" in line
    line = refused(capsys, "--slurm-options=--time=1:00:00", *root)
    assert "--slurm-options goes with --slurm-array N" in line
    assert list(record.iterdir()) == []  # none of them submitted anything
    (tmp_path / "bin" / "sbatch").write_text('#!/bin/sh\necho "sbatch: error: invalid partition '
                                             'specified: gpu" >&2\nexit 1\n')  # fmt: skip
    line = refused(capsys, "--slurm-array", "2", *root)
    assert line.endswith("paper4-quick-shards.sbatch: sbatch: error: invalid partition "
                         "specified: gpu")  # fmt: skip


def controller_answers() -> bool:
    try:
        return subprocess.run(["sinfo", "-h"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def job_state(job: str) -> str:
    """SLURM's state of `job` (`PENDING`, `RUNNING`, `COMPLETED`, ...)."""
    shown = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True,
                           check=True).stdout  # fmt: skip
    return shown.split("JobState=", 1)[1].split()[0]


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="no SLURM here: sbatch is missing")
def test_a_slurm_array_and_its_merge_write_the_one_machine_report(tmp_path):
    """Paper 4's quick scale submitted as 2 tasks and their merge on a real cluster: the merged
    report's claims are the one machine's, claim by claim; the jobs' logs are under the run
    root. Where sbatch is installed but no controller answers, the submission is refused in
    one line naming sbatch's own error, and nothing is trained or reported."""
    if not controller_answers():
        root = tmp_path / "root"
        refused = quick_command(4, "--slurm-array", "2", "--runs", root)
        last = refused.stderr.strip().splitlines()[-1]
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert last.startswith("python -m experiments.paper4: error: sbatch refused "), last
        assert "slurm controller" in last.lower(), last
        assert not (root / "paper4").exists() and not (root / "reports").exists()
        return
    _, single = quick_reproduction(4, tmp_path / "single")
    root = tmp_path / "root"
    done = quick_command(4, "--slurm-array", "2", "--runs", root, "--slurm-options",
                         "--cpus-per-task=1 --time=01:00:00")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    merge = done.stdout.split("merge job ", 1)[1].split()[0]
    deadline = time.monotonic() + HANG_GUARD
    while job_state(merge) in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED"):
        assert time.monotonic() < deadline, f"the merge job {merge} is still waiting or running"
        time.sleep(5)
    logs = sorted(p.name for p in (root / "slurm").glob("*.out"))
    assert job_state(merge) == "COMPLETED", [(root / "slurm" / n).read_text() for n in logs]
    assert len(logs) == 3  # the two tasks' and the merge's
    merged = json.loads((root / "reports" / "paper4" / "quick" / "results.json").read_text())
    assert {claim["id"]: claim for claim in merged} == single
