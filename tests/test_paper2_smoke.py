"""`python -m experiments.paper2 --scale quick`: the whole paper-2 pipeline on tiny sizes.

Tiny models for two epochs: the numbers mean nothing, the files and claims must all be there.
"""

import json
import shutil

import pytest
import yaml

from experiments.engine.sitting import Sitting
from experiments.paper2 import runs
from experiments.paper2.claims import REGISTERED, REVIEWED, SEED_PAIRED
from experiments.paper2.reproduce import EARLIER_REASON
from experiments.paper2.runs import run_layout
from experiments.paper2.scales import SCALES, training_order
from experiments.report import RULE_VERDICTS
from tests.smoke import assert_quick_report, assert_shards_merge, quick_reproduction, rebuilt_alone

QUICK_RUNS = [  # the quick scale's training order: Figure 3, Figure 2's cell, the rest of Figure
    # 1, Figure 3 by the authors' generator (a second reading), then Figure 2's cell
    # with momentum and with weight decay, the first reading of their values, then the
    # second
    "pooled_k=2_unpredictable", "pooled_k=2_predictable_m=2", "k=3_n=20", "k=2_n=10", "k=2_n=20",
    "k=3_n=10", "pooled_k=2_unpredictable_authors_generator",
    "pooled_k=2_predictable_m=2_authors_generator", "k=3_n=20_momentum", "k=3_n=20_weight_decay",
    "k=3_n=20_momentum_at_lr_0.1", "k=3_n=20_weight_decay_1.2e-6",
]  # fmt: skip
PRIMARY = {
    "fig1.longer_k_needs_more_rules", "fig1.open_falls_with_k", "fig1.conduit_very_low",
    "fig1.rare_open_steady", "fig1.rare_conduit_declines", "fig2.conduit_interacts",
    "fig2.conduit_interacts_over_training", "fig3.predictable_early", "fig3.predictable_late",
    "training.momentum_slows_rules", "training.weight_decay_slows_rules",
    "training.momentum_at_lr_0.1_slows_rules", "training.weight_decay_1.2e-6_slows_rules",
}  # fmt: skip
FIGURE3 = {"fig3.predictable_early", "fig3.predictable_late"}


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One quick reproduction shared by the tests: its folder, output and claims."""
    folder = tmp_path_factory.mktemp("paper2_quick")
    output, claims = quick_reproduction(2, folder)
    return folder, output, claims


def test_quick_reproduction_writes_report_claims_and_figures(quick):
    tmp_path, output, claims = quick
    assert output.count("] k=") == 8  # 2 conduit lengths x 2 rule counts, 4 optimizers
    assert output.count("] pooled_k=2_") == 4  # unpredictable and predictable, both generators
    second = {f"{reading}.{claim}" for reading in ("authors", "authors_at_close")
              for claim in PRIMARY}  # fmt: skip
    figure3_readings = ("authors_domain", "authors_generator.text", "authors_generator.authors",
                        "authors_generator.authors_domain")  # fmt: skip
    second |= {f"{reading}.{claim}" for claim in FIGURE3 for reading in figure3_readings}
    assert set(claims) == PRIMARY | {"cd.approximation_error"} | second
    # every claim of a trained model is also judged on the untrained weights; CD's error bound is
    # a bound on the arithmetic, judged on its own by the pre-registered rule, the untrained
    # models' largest error printed beside it and the verdict against them kept as its earlier one
    error = claims["cd.approximation_error"]
    assert all(c["null"] in RULE_VERDICTS for id, c in claims.items() if c is not error)
    assert error["null"] is None and error["verdict"] in RULE_VERDICTS
    assert "not judged against the untrained models, whose largest error = " in error["rule"]
    assert REGISTERED in error["earlier"][0]["reason"]
    assert error["earlier"][0]["verdict"] == "uninformative"
    report = (tmp_path / "report" / "report.md").read_text()
    assert "### Settings and their sources" in report and "`main.py` line 37" in report
    assert "## Second readings: the authors' analysis and generator" in report
    # the committed report's verdicts before the second readings stay beside those they differ
    # from, after the verdicts of the rules a review replaced (the same runs): the optimizer
    # claims' newest is the seed-by-seed rule
    earlier = [c for c in claims.values() if c["earlier"]]
    reasons = (EARLIER_REASON, REVIEWED, SEED_PAIRED, REGISTERED)
    assert all(any(r in c["earlier"][0]["reason"] for r in reasons) for c in earlier)
    assert {id for id, c in claims.items() if c["earlier"][:1]
            and c["earlier"][0]["reason"] == SEED_PAIRED} == {
        f"{reading}{id}" for reading in ("", "authors.", "authors_at_close.")
        for id in PRIMARY if id.startswith("training.")}  # fmt: skip
    reviewed = {id for id, c in claims.items() if c["earlier"][:1]
                and REVIEWED in c["earlier"][0]["reason"]}  # fmt: skip
    assert {id for id in reviewed if id in PRIMARY} == {
        "fig1.longer_k_needs_more_rules", "fig1.open_falls_with_k", "fig2.conduit_interacts",
        "fig2.conduit_interacts_over_training"}  # fmt: skip
    figures = ("fig1_rule_frequency", "fig2_conduit_prefixes", "fig2_training",
               "fig3_predictability", "fig3_authors")  # fmt: skip
    for figure in figures:
        assert (tmp_path / "report" / "figures" / f"{figure}.png").stat().st_size > 1000
        assert f"figures/{figure}.png" in report
    assert "m = 2 copies" in report
    assert_quick_report(report)


def test_every_run_keeps_its_measurements_beside_the_report(quick):
    """One `measurements.json` per run beside the report, with the portable command and the
    snapshots the report reads; the report's CD errors are the records' (in training order)."""
    tmp_path, _, claims = quick
    kept = tmp_path / "report" / "runs"
    measurements = sorted(p.relative_to(kept).as_posix() for p in kept.rglob("measurements.json"))
    assert measurements == sorted(f"paper2/{run}/seed=0/measurements.json" for run in QUICK_RUNS)
    records = {run: json.loads((kept / "paper2" / run / "seed=0" / "measurements.json").read_text())
               for run in QUICK_RUNS}  # fmt: skip
    cell = records["k=3_n=20"]
    assert "--run.root" not in cell["command"] and str(tmp_path) not in json.dumps(cell)
    assert cell["command"][:2] == ["--config", "experiments/configs/paper2/language_model.yaml"]
    assert cell["setting"] == {"conduit_length": 3, "rules": 20, "pool": None, "copies": 0,
                               "generator": "text", "optimizer": "sgd"}  # fmt: skip
    assert list(cell["readings"]) == ["text", "authors", "authors_at_close"]
    # Figure 2's cell untrained and after every epoch (Figure 1 after 1, Figure 2 after 2): every
    # phrase; the untrained weights (the null model) give omega about 1 / vocabulary
    assert list(cell["readings"]["text"]) == ["epoch=init", "epoch=0", "epoch=1"]
    assert list(cell["readings"]["authors"]) == ["epoch=init", "epoch=0", "epoch=1"]
    untrained = cell["readings"]["text"]["epoch=init"]["full"]["mean"]
    assert untrained < 3 / 1000  # the config's vocabulary
    assert list(cell["readings"]["text"]["epoch=1"]["phrase"]) == [
        "open", "conduit", "prefix=0", "prefix=1", "prefix=2", "prefix=3",
    ]  # fmt: skip
    pooled = records["pooled_k=2_predictable_m=2"]["readings"]
    assert list(pooled) == ["text", "authors", "authors_at_close", "authors_domain"]
    assert list(pooled["text"]) == ["epoch=init", "epoch=0", "epoch=1"]  # Figure 3: alpha alone
    assert all(list(snapshot["phrase"]) == ["open"] for snapshot in pooled["text"].values())
    estimate = pooled["authors"]["epoch=1"]["phrase"]["open"]
    assert set(estimate) == {"mean", "standard_error", "log_mean", "log_standard_error"}
    momentum = records["k=3_n=20_momentum"]  # the learning curve alone, alpha with the conduit
    arguments = momentum["command"]
    at = arguments.index("--model.momentum")
    assert arguments[at + 1] == "0.9" and "--model.weight_decay" not in arguments
    assert list(momentum["readings"]["text"]) == ["epoch=init", "epoch=0", "epoch=1"]
    assert list(momentum["readings"]["text"]["epoch=1"]["phrase"]) == ["prefix=0", "prefix=3"]
    # the second reading of the optimizer values reaches the model the fit trained
    for run, expected in (("k=3_n=20_momentum_at_lr_0.1", {"momentum": 0.9, "learning_rate": 0.1}),
                          ("k=3_n=20_weight_decay_1.2e-6", {"weight_decay": 1.2e-6,
                                                            "momentum": 0.0})):  # fmt: skip
        config = yaml.safe_load((tmp_path / "runs" / "paper2" / run / "seed=0" / "config.yaml")
                                .read_text())  # fmt: skip
        assert {k: config["model"]["init_args"][k] for k in expected} == expected
    command = records["pooled_k=2_unpredictable_authors_generator"]["command"]
    assert command[command.index("--data.generator") + 1] == "authors"
    readings = ("text", "authors", "authors_at_close", "authors_domain")
    errors = sorted(snapshot["error"] for reading in readings for run in QUICK_RUNS
                    for snapshot in records[run]["readings"].get(reading, {}).values())  # fmt: skip
    assert sorted(claims["cd.approximation_error"]["measured"]["values"]) == errors
    assert max(path.stat().st_size for path in kept.rglob("measurements.json")) < 20_000


def test_before_fix_reads_the_registered_runs_again_from_their_folders(quick, tmp_path):
    """`--before-fix --reuse-runs` reads Figure 3's runs (the text's generator) and Figure 2's
    cell again from their run folders by the authors' CD before their fix, in float64 (its error
    far below float32's), trains nothing, and adds its claims beside the others, which stay as
    they were. (Before the runs' folders are deleted by the rebuild test below.)"""
    first, _, claims = quick
    shutil.copytree(first / "runs", tmp_path / "runs")
    checkpoints = {p: p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("*.ckpt")}
    output, again = quick_reproduction(2, tmp_path, options=("--reuse-runs", "--before-fix"))
    registered = ["pooled_k=2_unpredictable", "pooled_k=2_predictable_m=2", "k=3_n=20"]
    assert f"{len(QUICK_RUNS) - 3} done before, 3 to run: " in output
    assert {p: p.stat().st_mtime_ns for p in checkpoints} == checkpoints  # nothing trained
    for run in QUICK_RUNS:
        folder = tmp_path / "runs" / "paper2" / run / "seed=0"
        readings = json.loads((folder / "measurements.json").read_text())["readings"]
        read = [name for name in ("before_fix", "authors_before_fix") if name in readings]
        assert read == (["before_fix", "authors_before_fix"] if run in registered else []), run
        for name in read:
            assert readings[name].keys() == readings["text"].keys()
    figures = FIGURE3 | {"fig2.conduit_interacts", "fig2.conduit_interacts_over_training"}
    new = {f"{reading}.{id}" for reading in ("before_fix", "authors_before_fix") for id in figures}
    assert set(again) == set(claims) | new | {"cd.approximation_error.float64"}
    float64 = again["cd.approximation_error.float64"]
    assert (
        max(float64["measured"]["values"])
        < 1e-12
        < max(again["cd.approximation_error"]["measured"]["values"])
    )
    assert float64["verdict"] == "reproduced" and float64["null"] is None
    assert all(again[id]["null"] is not None for id in new)
    for id, claim in claims.items():
        assert (again[id]["measured"], again[id]["verdict"]) == (
            claim["measured"], claim["verdict"],
        ), id  # fmt: skip
    report = (tmp_path / "report" / "report.md").read_text()
    assert "before_fix: " in report and "float64, before the fix: reproduced" in report


def test_a_measurement_cut_short_goes_on_from_its_last_part(quick, tmp_path, monkeypatch):
    """A run's readings killed after the text's are taken (each group of readings is kept as a
    measurement part) go on from there: the text's reading is not read again, and the
    measurements written equal the uninterrupted ones. (Before the runs' folders are deleted by
    the rebuild test below.)"""
    shutil.copytree(quick[0] / "runs", tmp_path / "runs")
    scale = SCALES["quick"]
    setting, seed = training_order(scale)[0]
    layout = run_layout(tmp_path / "runs", setting, seed)
    uninterrupted = json.loads(layout.measurements.read_text())
    layout.measurements.unlink()
    sitting = Sitting(tmp_path / "runs", jobs=1, reuse=True)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runs, "stream_snapshots", killed)
    with pytest.raises(KeyboardInterrupt):
        runs.measure(setting, seed, scale, sitting)
    assert list(json.loads(layout.measurement_parts.read_text())["parts"]) == ["0/text"]
    monkeypatch.undo()
    monkeypatch.setattr(runs, "close_probabilities", killed)  # the text's: read back
    again = runs.measure(setting, seed, scale, sitting)
    assert again["readings"] == uninterrupted["readings"]
    assert not layout.measurement_parts.exists()


def test_quick_report_is_rebuilt_from_the_measurement_files_alone(quick, tmp_path):
    """With the runs deleted, `--reuse-runs` over a run root holding only the measurement files
    rebuilds the same `results.json`, trains nothing and loads none of the training libraries
    (`rebuilt_alone`)."""
    first, _, _ = quick
    shutil.rmtree(first / "runs")  # no checkpoint, no weight snapshot: the measurements only
    shutil.copytree(first / "report", tmp_path / "report")
    runs = tmp_path / "report" / "runs"
    assert {p.name for p in runs.rglob("*") if p.is_file()} == {"measurements.json"}
    rebuilt_alone(2, tmp_path, len(QUICK_RUNS))
    trained = [p for p in tmp_path.rglob("*") if p.suffix in (".ckpt", ".safetensors")]
    assert not trained and not list(runs.rglob("command.txt"))


def test_shards_split_paper2_by_run(monkeypatch, tmp_path):
    """`--shard i/n` of paper 2: each run of `training_order` in exactly one shard, the same
    split every time; a shard writes no report."""
    from experiments.engine.reproduce import Request, reproduce
    from experiments.engine.shard import Shard
    from experiments.engine.sitting import Sitting
    from experiments.paper2 import runs
    from experiments.paper2.reproduce import STUDY
    from experiments.paper2.scales import SCALES

    def planned(tasks, jobs, describe, done_before, label=None, left=None):
        assert not any(done_before(key) for key in tasks)  # an empty run root keeps nothing
        return {key: {} for key in tasks}  # no task is run

    monkeypatch.setattr(runs, "run_all", planned)

    def plan(scale_name, shard):
        keys = runs.measure_all(SCALES[scale_name], Sitting(tmp_path, shard=shard))
        return [(setting.variant, seed) for setting, seed in keys]

    whole = plan("quick", Shard())
    assert whole == [(run, 0) for run in QUICK_RUNS]
    halves = [plan("quick", Shard(index, 2)) for index in (1, 2)]
    assert halves == [whole[0::2], whole[1::2]]
    assert halves == [plan("quick", Shard(index, 2)) for index in (1, 2)]  # stable
    everything = plan("paper", Shard())
    # 24 settings, 6 by the authors' generator and 4 with momentum or weight decay, x 3 seeds
    assert len(everything) == len(set(everything)) == 96
    for count in (2, 3, 7):
        parts = [plan("paper", Shard(index, count)) for index in range(1, count + 1)]
        assert sum(len(part) for part in parts) == len(everything)
        assert set().union(*map(set, parts)) == set(everything)
    sitting = Sitting(tmp_path, shard=Shard(2, 2))
    assert reproduce(STUDY, Request("quick", SCALES["quick"], tmp_path / "report", sitting)) is None
    assert not (tmp_path / "report").exists()


def test_shards_measurements_merge_into_the_one_machine_report(quick, tmp_path):
    """The quick runs' measurements laid out as the two shards of `--shard i/2` measure them:
    `--merge` of both writes the one-machine `results.json`, training nothing; without the
    second it stops with one line naming a missing run, before writing a report."""
    first, _, _ = quick
    kept = first / "report" / "runs" / "paper2"
    for index, shard in enumerate((QUICK_RUNS[0::2], QUICK_RUNS[1::2]), start=1):
        for run in shard:
            shutil.copytree(kept / run, tmp_path / f"shard{index}" / "paper2" / run)
    assert_shards_merge(
        2, tmp_path, first, "paper2/pooled_k=2_predictable_m=2/seed=0", len(QUICK_RUNS)
    )


def test_rare_rule_claims_read_only_a_cell_as_rare_as_the_papers():
    """`fig1.rare_*` read the rarest n of the scale; where that n is not the paper's
    (n = 10: an earlier default grid's rarest was 300) they are not judged, and the
    note says so."""
    from dataclasses import replace

    from experiments.paper2.claims import figure1_claims, rare_cells_note
    from experiments.paper2.readings import Estimate, Snapshot
    from experiments.paper2.scales import SCALES

    def cells(scale):
        value = Snapshot({"open": Estimate(0.3, 0.01), "conduit": Estimate(0.001, 0.0001)},
                         Estimate(0.3, 0.01), 0.0)  # fmt: skip
        return {(k, n): value for k in scale.conduit_lengths for n in scale.rule_counts}

    without_rare = replace(SCALES["default"], rule_counts=(300, 1000))
    ids = {claim.id for claim in figure1_claims(cells(without_rare), without_rare)}
    assert not any(id.startswith("fig1.rare_") for id in ids) and "fig1.open_falls_with_k" in ids
    note = rare_cells_note(without_rare)
    assert "not judged at this scale" in note and "n = 300" in note
    for name in ("default", "small"):
        scale = SCALES[name]
        claims = {claim.id: claim for claim in figure1_claims(cells(scale), scale)}
        assert "at the rarest rule (n = 10)" in claims["fig1.rare_open_steady"].claim
        assert "read the cells n = 10" in rare_cells_note(scale)


def test_every_paper_has_a_quick_scale_whose_report_says_its_verdicts_mean_nothing():
    """Each reproduction's `quick` scale (the smoke tests': the whole pipeline on tiny sizes);
    a report's first line says so at that scale only, and no scale is called `smoke`."""
    from experiments.paper1.scales import SCALES as PAPER1
    from experiments.paper2.scales import SCALES as PAPER2
    from experiments.paper3.scales import SCALES as PAPER3
    from experiments.paper4.scales import SCALES as PAPER4
    from experiments.report import QUICK, report_title

    for scales in (PAPER1, PAPER2, PAPER3, PAPER4):
        assert QUICK in scales and "default" in scales and "smoke" not in scales
    assert report_title("Paper 9: A Title", "default") == "# Paper 9: A Title"
    assert report_title("Paper 9: A Title", QUICK) == (
        "# Paper 9: A Title (quick scale: a check of the pipeline on tiny sizes; its verdicts "
        "mean nothing)"
    )
