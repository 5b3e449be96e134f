"""`python -m experiments.paper2 --cells ... --seeds ...`: some settings trained alone at new
seeds (the pre-registration's three more seeds of Figure 3's k = 8 cells), the very runs the whole
scale trains at those seeds, no other, and no report; a wrong cell or seed list refused in one
line before anything is trained. The runner is replaced, so nothing is trained here."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from experiments.engine.sitting import Sitting
from experiments.engine.store import portable
from experiments.paper2 import runs
from experiments.paper2.reproduce import main
from experiments.paper2.scales import SCALES, training_order

K8 = ["pooled_k=8_unpredictable", "pooled_k=8_predictable_m=1000", "pooled_k=8_predictable_m=100"]
COMMITTED = Path(__file__).parents[1] / "reports" / "paper2" / "runs"


@pytest.fixture
def planned(monkeypatch):
    """The runs `measure_all` hands its runner, by (variant, seed), with their fit arguments
    (under the run root `root`); none is run."""
    handed = {}

    def run_all(tasks, jobs, describe, done_before, label=None, left=None):
        for (setting, seed), task in tasks.items():
            scale, sitting = task.args[2:]
            arguments = runs.arguments_of(setting, seed, scale, sitting.root)
            handed[(setting.variant, seed)] = portable(arguments, sitting.root)
        return {key: {} for key in tasks}

    monkeypatch.setattr(runs, "run_all", run_all)
    return handed


def test_the_k8_cells_alone_at_seeds_3_to_5_are_the_whole_scales_runs(planned, tmp_path):
    """The three cells at seeds 3, 4, 5 are 9 runs, each with the fit arguments (and so the run
    folder and command `--reuse-runs` compares) of the default scale's own list at seeds 0-5;
    at seeds 0-2 they are the committed report's runs, command for command."""
    six = replace(SCALES["default"], seeds=(0, 1, 2, 3, 4, 5))
    runs.measure_all(six, Sitting(tmp_path))
    everything = dict(planned)
    assert len(everything) == 84 * 2
    planned.clear()
    alone = replace(SCALES["default"], seeds=(3, 4, 5))
    runs.measure_all(alone, Sitting(tmp_path, variants=tuple(K8)))
    assert sorted(planned) == sorted((cell, seed) for cell in K8 for seed in (3, 4, 5))
    assert planned == {key: everything[key] for key in planned}
    assert planned[(K8[2], 4)][2:4] == ["--seed_everything", "4"]
    alone = dict(planned)
    planned.clear()
    runs.measure_all(SCALES["default"], Sitting(tmp_path, variants=tuple(K8)))
    assert len(planned) == 18  # the default scale trains them at seeds 0-5 (item 5)
    assert {key: planned[key] for key in alone} == alone
    for (cell, seed), command in planned.items():
        path = COMMITTED / "paper2" / cell / f"seed={seed}" / "measurements.json"
        if seed < 3:
            assert json.loads(path.read_text())["command"] == command


def test_the_more_seeds_come_last_so_every_committed_run_keeps_its_index_and_shard():
    """The default scale's 93 runs are the committed report's (each folder's command); the first
    84 keep the order they had before the more seeds; the last 9 are Figure 3's k = 8 cells at
    seeds 3-5."""
    order = training_order(SCALES["default"])
    assert len(order) == 93 and len(set(order)) == 93
    committed = {(p.parent.parent.name, int(p.parent.name.split("=")[1]))
                 for p in (COMMITTED / "paper2").glob("*/seed=*/measurements.json")}  # fmt: skip
    assert {(s.variant, seed) for s, seed in order} == committed
    assert order[:84] == training_order(replace(SCALES["default"], more_seeds=()))
    assert sorted((s.variant, seed) for s, seed in order[84:]) == sorted(
        (cell, seed) for cell in K8 for seed in (3, 4, 5)
    )


def test_cells_alone_train_nothing_else_and_write_no_report(planned, tmp_path, capsys):
    """`--cells` with `--seeds 3,4,5` hands the runner those 9 runs and no other, writes no report
    and says what it trained and how to build the report; the cells' order on the command line
    does not change the runs."""
    out = tmp_path / "report"
    argv = ["--scale", "default", "--runs", str(tmp_path / "root"), "--out", str(out)]
    assert main([*argv, "--cells", ",".join(K8), "--seeds", "3,4,5"]) is None
    expected = {(cell, seed) for cell in K8 for seed in (3, 4, 5)}
    assert set(planned) == expected and len(planned) == 9
    assert not out.exists()
    said = capsys.readouterr().out.strip().splitlines()[-1]
    assert said.startswith("paper2: trained and measured the runs of pooled_k=8_unpredictable, ")
    assert " at seeds 3 4 5 under " in said and "no report was written" in said
    assert f"--runs {tmp_path / 'root'} --reuse-runs" in said
    planned.clear()
    assert main([*argv, "--cells", *reversed(K8), "--seeds", "3", "4", "5"]) is None
    assert set(planned) == expected and not out.exists()


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (["--cells", "pooled_k=9_unpredictable", "--seeds", "3,4,5"],
         "--cells: no cell pooled_k=9_unpredictable in this scale; its cells are "),
        (["--cells", "pooled_k=8_unpredictable,k=8_n=7"],
         "--cells: no cell k=8_n=7 in this scale; its cells are "),
        (["--cells", ","], "--cells: no cell named for this scale; its cells are "),
        (["--cells", K8[0], "--seeds", "3,x"], "--seeds 3,x: seeds are distinct whole numbers"),
        (["--cells", K8[0], "--seeds", "3", "3"], "--seeds 3 3: seeds are distinct"),
        (["--cells", K8[0], "--seeds", "-1"], "--seeds -1: seeds are distinct"),
        (["--cells", K8[0], "--merge", "elsewhere"], "leave out --merge and --slurm-array"),
    ],
)  # fmt: skip
def test_a_wrong_cell_or_seed_list_is_one_line_before_anything_is_trained(
    planned, tmp_path, capsys, options, problem
):
    """An unknown cell, an empty cell list, seeds that are not distinct whole numbers from 0, or
    cells alone with --merge: exit status 2, one line naming the problem (and the scale's cells),
    nothing trained or written."""
    argv = ["--scale", "default", "--runs", str(tmp_path / "root"), "--out", str(tmp_path / "r")]
    with pytest.raises(SystemExit) as stopped:
        main([*argv, *options])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("python -m experiments.paper2: error: ")
    assert problem in error
    if problem.startswith("--cells"):
        assert "pooled_k=8_predictable_m=100, " in error and "k=2_n=10, " in error
    assert planned == {} and not (tmp_path / "root").exists() and not (tmp_path / "r").exists()
