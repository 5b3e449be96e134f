"""`python -m experiments.paper2 --scale smoke`: the whole paper-2 pipeline in under a minute.

Tiny models for two epochs: the numbers mean nothing, the files and claims must all be there.
"""

import json
import shutil
import subprocess
import sys

import pytest

from tests.smoke import smoke_reproduction

SMOKE_RUNS = [  # the smoke scale's training order: Figure 3, Figure 2's cell, the rest of Figure 1
    "pooled_k=2_unpredictable", "pooled_k=2_predictable_m=2", "k=3_n=20", "k=2_n=10", "k=2_n=20",
    "k=3_n=10",
]  # fmt: skip


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """One smoke reproduction shared by the tests: its folder, output and claims."""
    folder = tmp_path_factory.mktemp("paper2_smoke")
    output, claims = smoke_reproduction(2, folder, timeout=600)
    return folder, output, claims


def test_smoke_reproduction_writes_report_claims_and_figures(smoke):
    tmp_path, output, claims = smoke
    assert output.count("] k=") == 4  # 2 conduit lengths x 2 rule counts
    assert output.count("] pooled_k=2_") == 2  # unpredictable and predictable
    assert set(claims) == {
        "fig1.longer_k_needs_more_rules", "fig1.open_falls_with_k", "fig1.conduit_very_low",
        "fig1.rare_open_steady", "fig1.rare_conduit_declines", "fig2.conduit_interacts",
        "fig3.predictable_early", "fig3.predictable_late", "cd.approximation_error",
    }  # fmt: skip
    assert claims["cd.approximation_error"]["verdict"] == "reproduced"  # exact by construction
    report = (tmp_path / "report" / "report.md").read_text()
    for figure in ("fig1_rule_frequency", "fig2_conduit_prefixes", "fig3_predictability"):
        assert (tmp_path / "report" / "figures" / f"{figure}.png").stat().st_size > 1000
        assert f"figures/{figure}.png" in report
    assert "m = 2 copies" in report and "`smoke`" in report


def test_every_run_keeps_its_measurements_beside_the_report(smoke):
    """One `measurements.json` per run beside the report, with the portable command and the
    snapshots the report reads; the report's CD errors are the records' (in training order)."""
    tmp_path, _, claims = smoke
    kept = tmp_path / "report" / "runs"
    measurements = sorted(p.relative_to(kept).as_posix() for p in kept.rglob("measurements.json"))
    assert measurements == sorted(f"paper2/{run}/seed=0/measurements.json" for run in SMOKE_RUNS)
    records = {run: json.loads((kept / "paper2" / run / "seed=0" / "measurements.json").read_text())
               for run in SMOKE_RUNS}  # fmt: skip
    cell = records["k=3_n=20"]
    assert "--run.root" not in cell["command"] and str(tmp_path) not in json.dumps(cell)
    assert cell["command"][:2] == ["--config", "experiments/configs/paper2/language_model.yaml"]
    assert cell["setting"] == {"conduit_length": 3, "rules": 20, "pool": None, "copies": 0}
    assert list(cell["readings"]) == ["text"]
    # Figure 1 after 1 epoch, Figure 2 after 2: every phrase of a k = 3 rule
    assert list(cell["readings"]["text"]) == ["epoch=0", "epoch=1"]
    assert list(cell["readings"]["text"]["epoch=1"]["phrase"]) == [
        "open", "conduit", "prefix=0", "prefix=1", "prefix=2", "prefix=3",
    ]  # fmt: skip
    pooled = records["pooled_k=2_predictable_m=2"]["readings"]["text"]
    assert list(pooled) == ["epoch=0", "epoch=1"]  # Figure 3: after every epoch, alpha alone
    assert all(list(snapshot["phrase"]) == ["open"] for snapshot in pooled.values())
    errors = [snapshot["error"] for run in SMOKE_RUNS
              for snapshot in records[run]["readings"]["text"].values()]  # fmt: skip
    assert claims["cd.approximation_error"]["measured"]["values"] == errors
    assert max(path.stat().st_size for path in kept.rglob("measurements.json")) < 5_000


def test_smoke_report_is_rebuilt_from_the_measurement_files_alone(smoke, tmp_path):
    """With the runs deleted, `--reuse-runs` over a run root holding only the measurement files
    rebuilds the same `results.json` and trains nothing."""
    first, _, _ = smoke
    shutil.rmtree(first / "runs")  # no checkpoint, no weight snapshot: the measurements only
    rebuilt = tmp_path / "rebuilt"
    shutil.copytree(first / "report" / "runs", rebuilt / "runs")
    assert {p.name for p in (rebuilt / "runs").rglob("*") if p.is_file()} == {"measurements.json"}
    smoke_reproduction(2, rebuilt, timeout=300, options=("--reuse-runs",))
    results = (rebuilt / "report" / "results.json").read_text()
    assert results == (first / "report" / "results.json").read_text()
    trained = [p for p in rebuilt.rglob("*") if p.suffix in (".ckpt", ".safetensors")]
    assert not trained and not list((rebuilt / "runs").rglob("command.txt"))
    report = (rebuilt / "report" / "report.md").read_text()
    assert "6 of the 6 were kept from an earlier invocation" in report


def test_shards_split_paper2_by_run(monkeypatch, tmp_path):
    """`--shard i/n` of paper 2: each run of `training_order` in exactly one shard, the same
    split every time; a shard writes no report."""
    from experiments.paper2 import reproduce, runs
    from experiments.paper2.scales import SCALES
    from experiments.runner import Shard, Sitting

    def planned(tasks, jobs, describe, done_before):
        assert not any(done_before(key) for key in tasks)  # an empty run root keeps nothing
        return {key: {} for key in tasks}  # no task is run

    monkeypatch.setattr(runs, "run_all", planned)

    def plan(scale_name, shard):
        keys = runs.measure_all(SCALES[scale_name], Sitting(tmp_path, shard=shard))
        return [(setting.variant, seed) for setting, seed in keys]

    whole = plan("smoke", Shard())
    assert whole == [(run, 0) for run in SMOKE_RUNS]
    halves = [plan("smoke", Shard(index, 2)) for index in (1, 2)]
    assert halves == [whole[0::2], whole[1::2]]
    assert halves == [plan("smoke", Shard(index, 2)) for index in (1, 2)]  # stable
    everything = plan("paper", Shard())
    assert len(everything) == len(set(everything)) == 66  # 22 settings x 3 seeds
    for count in (2, 3, 7):
        parts = [plan("paper", Shard(index, count)) for index in range(1, count + 1)]
        assert sum(len(part) for part in parts) == len(everything)
        assert set().union(*map(set, parts)) == set(everything)
    sitting = Sitting(tmp_path, shard=Shard(2, 2))
    assert reproduce.reproduce("smoke", tmp_path / "report", sitting) is None
    assert not (tmp_path / "report").exists()


def merge(*options) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments.paper2", "--scale", "smoke",
                           *map(str, options)], capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def test_shards_measurements_merge_into_the_one_machine_report(smoke, tmp_path):
    """The smoke runs' measurements laid out as the two shards of `--shard i/2` measure them:
    `--merge` of both writes the one-machine `results.json`, training nothing; without the
    second it stops with one line naming a missing run, before writing a report."""
    first, _, _ = smoke
    kept = first / "report" / "runs" / "paper2"
    for index, shard in enumerate((SMOKE_RUNS[0::2], SMOKE_RUNS[1::2]), start=1):
        for run in shard:
            shutil.copytree(kept / run, tmp_path / f"shard{index}" / "paper2" / run)
    missing = merge("--merge", tmp_path / "shard1", "--runs", tmp_path / "merged1",
                    "--out", tmp_path / "merged1_report")  # fmt: skip
    assert missing.returncode == 2 and not (tmp_path / "merged1_report").exists()
    assert (
        missing.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "python -m experiments.paper2: error: paper2/pooled_k=2_predictable_m=2/seed=0 has no "
            "measurements"
        )
    )
    merged = merge("--merge", tmp_path / "shard1", tmp_path / "shard2", "--runs",
                   tmp_path / "merged", "--out", tmp_path / "merged_report")  # fmt: skip
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "merged 6 runs' measurements from 2 run roots" in merged.stdout
    assert ((tmp_path / "merged_report" / "results.json").read_text()
            == (first / "report" / "results.json").read_text())  # fmt: skip
    assert not [p for p in (tmp_path / "merged").rglob("*") if p.suffix == ".ckpt"]
