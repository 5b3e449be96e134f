"""The smoke tests' reproductions: `python -m experiments.paperN --scale quick`, the whole pipeline
on tiny sizes."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from experiments.engine.launch import SHARED_SERVER, WarmPopen, shared_server_address

HANG_GUARD = 1800
"""Seconds after which a quick reproduction, or a command of one, is taken to hang: generous, as
on a busy shared machine one has taken 12 minutes (about 3 on 2 free cores)."""


def study_module(paper: int | str) -> str:
    """The module of paper `paper`'s reproduction, or of the study named `paper` (`atlas`)."""
    return f"experiments.{paper}" if isinstance(paper, str) else f"experiments.paper{paper}"


TRAINING_LIBRARIES = {"pytorch_lightning", "sklearn", "captum"}
"""What a report rebuilt from kept measurements does not load (`imported`)."""


def imported(done: subprocess.CompletedProcess) -> set[str]:
    """The modules a command run with `-X importtime` imported (its stderr)."""
    lines = done.stderr.splitlines()
    return {line.split("|")[-1].strip() for line in lines if line.startswith("import time:")}


def quick_reproduction(
    paper: int | str,
    folder: Path,
    timeout: int = HANG_GUARD,
    env: dict[str, str] | None = None,
    options: tuple[str, ...] = (),
    trains_nothing: bool = False,
) -> tuple[str, dict[str, dict]]:
    """Run paper `paper`'s quick reproduction (or the study's named `paper`) with its runs and
    report under `folder` (with `env` added to the environment, and `options`); return its output
    and its claims (`report/results.json`) by id, in their order. With `trains_nothing` (a
    rebuild from kept measurements) it must load none of `TRAINING_LIBRARIES`."""
    done = quick_command(paper, "--runs", folder / "runs", "--out", folder / "report", *options,
                         timeout=timeout, env=env, trains_nothing=trains_nothing)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    claims = json.loads((folder / "report" / "results.json").read_text())
    return done.stdout, {claim["id"]: claim for claim in claims}


def shared_quick_reproduction(
    tmp_path_factory, paper: int | str, env: dict[str, str] | None = None
) -> tuple[Path, str, dict[str, dict]]:
    """What a module's fixture shares among its tests: paper `paper`'s quick reproduction (or the
    study's named `paper`) in a fresh folder `<paper>_quick`, as the folder, the output and the
    claims by id."""
    folder = tmp_path_factory.mktemp(f"{study_module(paper).rsplit('.', 1)[-1]}_quick")
    output, claims = quick_reproduction(paper, folder, env=env)
    return folder, output, claims


def assert_quick_report(report: str, title: str = "# Paper ") -> None:
    """A quick reproduction's `report` (report.md's text, its first line starting with `title`)
    says on its first line that it is the quick scale, a check of the pipeline whose verdicts
    mean nothing, and names the scale."""
    first = report.splitlines()[0]
    assert first.startswith(title) and first.endswith(
        "(quick scale: a check of the pipeline on tiny sizes; its verdicts mean nothing)"
    ), first
    assert "**Scale:** `quick`" in report


def quick_command(paper: int | str, *options, timeout: int = HANG_GUARD,
                  env: dict[str, str] | None = None,
                  trains_nothing: bool = False) -> subprocess.CompletedProcess:  # fmt: skip
    """`python -m <study_module(paper)> --scale quick <options>` (with `env` added to the
    environment), its output captured. It is started warm, from this worker's warm server
    (`launch.WarmPopen`: what `python` gives, with torch, Lightning and W&B already imported),
    and its fits are forked from that server too (`launch.SHARED_SERVER`): the worker's
    reproductions share those imports, about 10 s of CPU a process. The reproductions of
    `test_runs.py` and `test_received_runs.py` start as a user's do, each in a new interpreter
    with a server of its own. With `trains_nothing` (a rebuild from kept measurements) it runs
    in a new interpreter under `-X importtime` and must exit 0 having loaded none of
    `TRAINING_LIBRARIES`."""
    arguments = ["-m", study_module(paper), "--scale", "quick", *map(str, options)]
    if trains_nothing:
        done = subprocess.run([sys.executable, "-X", "importtime", *arguments],
                              capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert not TRAINING_LIBRARIES & imported(done)
        return done
    environment = {**os.environ, SHARED_SERVER: shared_server_address(), **(env or {})}
    return warm_run(arguments, environment, timeout)


def warm_run(
    arguments: list[str], env: dict[str, str], timeout: int
) -> subprocess.CompletedProcess:
    """`python <arguments>` started warm, as `subprocess.run(..., capture_output=True,
    text=True, timeout=timeout)` runs it (killed where it outlives `timeout`)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = WarmPopen(arguments, out.fileno(), env, err.fileno())
        try:
            status = process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        out.seek(0)
        err.seek(0)
        output, errors = out.read().decode(), err.read().decode()
    return subprocess.CompletedProcess([sys.executable, *arguments], status, output, errors)


def rebuilt_alone(paper: int, folder: Path, runs: int) -> subprocess.CompletedProcess:
    """A quick report's measurements (`folder/report/runs`) rebuilt into `folder/rebuilt` with
    `--reuse-runs`: it exits 0, loads none of `TRAINING_LIBRARIES` (a rebuild trains nothing),
    writes the same `results.json` and says all `runs` runs were kept. Returns the command."""
    done = quick_command(paper, "--runs", folder / "report" / "runs", "--reuse-runs", "--out",
                         folder / "rebuilt", trains_nothing=True)  # fmt: skip
    assert ((folder / "rebuilt" / "results.json").read_text()
            == (folder / "report" / "results.json").read_text())  # fmt: skip
    report = (folder / "rebuilt" / "report.md").read_text()
    assert f"{runs} of the {runs} were kept from an earlier invocation" in report
    return done


def copy_kept_measurements(single: Path, folder: Path, paper: int, run: str, shard: int) -> None:
    """Copy the measurements of `run` (`<variant>/seed=<s>`) of the one-machine reproduction in
    `single` into the run root of shard `shard` under `folder` (`folder/shard<N>`), as if that
    shard had measured it."""
    name = f"paper{paper}"
    target = folder / f"shard{shard}" / name / run / "measurements.json"
    target.parent.mkdir(parents=True)
    shutil.copyfile(single / "report" / "runs" / name / run / "measurements.json", target)


def assert_shards_merge(paper: int, folder: Path, single: Path, missing_run: str,
                        runs: int) -> None:  # fmt: skip
    """With the shards' run roots `folder/shard1` and `folder/shard2` filled: `--merge` of the
    first alone stops with one line naming `missing_run` before writing a report; of both, it
    gathers `runs` measurement files and writes the `results.json` of the one-machine
    reproduction in `single`, training nothing."""
    missing = quick_command(paper, "--merge", folder / "shard1", "--runs", folder / "merged1",
                            "--out", folder / "merged1_report")  # fmt: skip
    assert missing.returncode == 2 and not (folder / "merged1_report").exists()
    assert (
        missing.stderr.strip()
        .splitlines()[-1]
        .startswith(f"python -m experiments.paper{paper}: error: {missing_run} has no measurements")
    )
    merged = quick_command(paper, "--merge", folder / "shard1", folder / "shard2", "--runs",
                           folder / "merged", "--out", folder / "merged_report")  # fmt: skip
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert f"merged {runs} runs' measurements from 2 run roots" in merged.stdout
    assert ((folder / "merged_report" / "results.json").read_text()
            == (single / "report" / "results.json").read_text())  # fmt: skip
    assert not list((folder / "merged").rglob("*.ckpt"))  # nothing trained in the merge


def assert_initial_weights_rebuilt(layout, arguments: list[str], root: Path) -> None:
    """`engine.measure.initial_weights` rebuilds the run `layout`'s untrained weights from
    its fit `arguments` alone, in a scratch folder under the run root `root`, by a fit of one
    step: bit for bit its `epoch=init` snapshot; no scratch folder is left."""
    from experiments.engine.measure import initial_weights
    from storage.layout import UNTRAINED
    from storage.run_folder import RunFolder

    with initial_weights(layout, arguments, root) as scratch:
        rebuilt = scratch.state_dict(UNTRAINED)
        steps = scratch.metrics()["step"].max()
    assert steps <= 1, f"the scratch fit took {steps} steps, not one"
    real = RunFolder(layout.path).state_dict(UNTRAINED)
    assert set(rebuilt) == set(real) and all(rebuilt[k].equal(v) for k, v in real.items())
    assert not list(Path(root).glob(".initial-weights-*"))
