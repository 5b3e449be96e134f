"""`python -m experiments.paper1 --scale quick`: the whole reproduction pipeline on tiny sizes.

Tiny models for one short epoch: the numbers mean nothing, the files must all be there.
"""

import dataclasses
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from experiments.report import RULE_VERDICTS, UNINFORMATIVE, VERDICTS
from probes.command.cli import main
from storage import RunLayout
from storage.run_folder import RunFolder
from tests.smoke import assert_initial_weights_rebuilt, assert_quick_report, quick_reproduction

PRIMARY_ANALYSIS_CLAIMS = ("fig1.", "fig2.", "fig3.", "fig4.", "sec3_2.", "table2.", "table3.",
                           "sec4_1.", "footnote5.")  # fmt: skip
"""Sections 3-4's and footnote 5's claims, decided on the analyses: also on the untrained GRUs,
and repeated on the LSTMs (footnote 1)."""
ANALYSIS_CLAIMS = (*PRIMARY_ANALYSIS_CLAIMS, "all_weights.", "mean_sign.", "cloud.",
                   "authors_gates.")  # fmt: skip
"""Those and their pre-registered readings of Figures 2 and 4 (measured on the baseline and
guided GRUs only, as registered)."""
FOOTNOTE_FIELDS = {"footnote5": None, "untrained_footnote5": None}
"""The fields of `OPTIONAL` every analysed model has; the LSTMs also `analysis` and
`untrained_analysis`."""
ACCURACY_CLAIMS = ("table5.", "table6.", "selection_text.", "pattern.", "footnote1.", "table4.",
                   "sec5_1.", "sec5_2.", "pool3.sec5_2.")  # fmt: skip
"""Tables 5-6, their patterns, footnote 1 and section 5 (also on the paper's pool of three): not
measured untrained."""


def offline_env(folder: Path) -> dict[str, str]:
    """No sample1 and no download: the generated tables, with the report's notice."""
    return {"RECURRENT_PROBES_OFFLINE": "1", "RECURRENT_PROBES_CACHE": str(folder / "cache"),
            "RECURRENT_PROBES_SAMPLE1": ""}  # fmt: skip


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One offline quick reproduction shared by the tests: its folder, output and claims."""
    folder = tmp_path_factory.mktemp("paper1_quick")
    output, claims = quick_reproduction(1, folder, env=offline_env(folder))
    return folder, output, claims


def test_quick_reproduction_writes_report_claims_and_figures(quick):
    tmp_path, output, claims = quick
    # two models of each variant (the quick scale's seeds 1 and 2)
    assert output.count("] baseline seed=") == 2
    assert output.count("] guided seed=") == 2
    assert output.count("] substitution/") == 4  # 2 components, both ways, 1 pair
    assert output.count("] pruned/guided seed=") == 2
    ids = set(claims)
    for split in ("heldout_compositions", "heldout_inputs", "heldout_tables", "new_compositions"):
        assert f"table5.{split}" in ids and f"table6.{split}" in ids
    for site in ("encoder.hidden", "decoder.update_gate", "decoder.reset_gate"):
        for variant in ("baseline", "guided"):
            for number in ("accuracy_group", "accuracy_all", "group_size"):
                assert f"table2.{site}.{variant}.{number}" in ids
    for claim in (
        "table3.encoder.hidden.guided.group_size",
        "table4.guided.encoder",
        "table4.baseline.encoder",
        "sec5_2.pruned_accuracy",
        "fig1.sos_row_equal",
        "sec5_2.pruned_retrained_accuracy",
        "fig4.baseline_gates_between_axes",
        "fig2.hub_neurons.encoder_W_hz",
        "sec4_1.group_units_in_top5pct",
    ):
        assert claim in ids, claim
    assert all(c["verdict"] in VERDICTS
               for c in claims.values())  # fmt: skip
    report = (tmp_path / "report" / "report.md").read_text()
    assert_quick_report(report)
    # offline, without sample1: the generated tables, and the report's data line says so
    assert "- **Data:** **Not the paper's data.**" in report
    assert "RECURRENT_PROBES_SAMPLE1" in report and "How much the data matters" in report
    assert "Tables 5-6 under both selections" in report
    assert output.count("] guided_summed seed=") == 2  # the first 3 of the scale's 2 seeds
    assert output.count("] baseline_lstm seed=") == output.count("] guided_lstm seed=") == 2
    assert "- **Models:** 2 baseline and 2 guided GRU seq2seq (seeds 1, 2)," in report
    assert "footnote1.guided_lstm.new_compositions" in ids
    assert "largest gap 0.53 (guided NC)" in claims["footnote1.lstm_similar_to_gru"]["paper"]
    assert "## Footnote 1: LSTM models" in report
    for figure in (
        "tables5_6",
        "fig1_decoder_embedding",
        "fig2_connectivity",
        "fig3_activations",
        "fig4_gate_saturation",
        "table4_pruning",
    ):
        assert (tmp_path / "report" / "figures" / f"{figure}.png").stat().st_size > 10_000, figure
        assert f"figures/{figure}.png" in report
    # The probe command gives the report's functional-group table.
    attended = "batch.source_table@batch.attention_target"
    table_of = {
        "encoder.hidden:batch.source_table": "table2.encoder.hidden",
        f"decoder.update_gate:{attended}": "table2.decoder.update_gate",
        f"decoder.reset_gate:{attended}": "table2.decoder.reset_gate",
        "encoder.hidden:time": "table3.encoder.hidden",
    }
    runs = tmp_path / "runs" / "paper1"
    gru_runs = f"{runs}/*[ed]/seed=*"  # baseline, guided, guided_summed: not the LSTMs
    assert main(["functional-group", "--runs", gru_runs, "--repeats", "2",  # probe_splits
                 "--out", str(tmp_path / "probes")]) == 0  # fmt: skip
    table = pd.read_csv(tmp_path / "probes" / "functional-group.csv")
    measured = {c["id"]: c["measured"]["values"] for c in claims.values()}
    for (group, target), rows in table.groupby(["group", "target"]):
        if Path(group).name not in ("baseline", "guided"):  # the rest: Tables 5-6 only
            continue
        claim = f"{table_of[target]}.{Path(group).name}"
        assert rows["size"].tolist() == measured[f"{claim}.group_size"], claim
        assert rows["accuracy"].tolist() == measured[f"{claim}.accuracy_group"], claim
        assert rows["accuracy_all"].tolist() == measured[f"{claim}.accuracy_all"], claim


def test_quick_report_is_rebuilt_from_the_measurement_files_alone(quick, tmp_path):
    """Every run's measurements beside the report; in a run root holding nothing else,
    `--reuse-runs` over them rebuilds the same claims (no run is trained again, and neither
    Lightning, sklearn nor captum is loaded)."""
    first, _, claims = quick
    kept = first / "report" / "runs"
    records = sorted(kept.rglob("measurements.json"))
    assert len(records) == 6 + 4 + 4 + 2  # GRUs, LSTMs, substitutions, pruned
    guided = json.loads((kept / "paper1" / "guided" / "seed=1" / "measurements.json").read_text())
    assert "--run.root" not in guided["command"] and guided["data_dir"] is None
    assert set(guided["selections"]) == {"best", "lowest_loss"}
    assert len(guided["analysis"]["figures"]["embedding"]) == len(
        guided["analysis"]["figures"]["vocabulary"]
    )
    rebuilt = tmp_path / "rebuilt"
    rebuilt.mkdir()
    shutil.copytree(kept, rebuilt / "runs")
    _, again = quick_reproduction(1, rebuilt, env=offline_env(tmp_path),
                                  options=("--reuse-runs",), trains_nothing=True)  # fmt: skip
    assert [json.dumps(c) for c in again.values()] == [json.dumps(c) for c in claims.values()]
    assert not list((rebuilt / "runs").rglob("*.ckpt"))  # nothing was trained again
    report = (rebuilt / "report" / "report.md").read_text()
    assert "16 of the 16 were kept from an earlier invocation" in report
    # measurements from before the footnotes' and the null model: those claims are not measured
    for record in (rebuilt / "runs").rglob("measurements.json"):
        kept = json.loads(record.read_text())
        if kept["variant"].endswith("lstm"):
            kept = {**kept, "analysis": None, "untrained_analysis": None}
        record.write_text(json.dumps({k: v for k, v in kept.items() if k not in FOOTNOTE_FIELDS}))
    _, older = quick_reproduction(1, rebuilt, env=offline_env(tmp_path),
                                  options=("--reuse-runs",))  # fmt: skip
    footnotes = ("footnote5.", "footnote1.analyses_", "footnote1.findings_")
    assert list(older) == [i for i in claims if not i.startswith(footnotes)]
    assert all(older[i] == claims[i] for i in older)
    report = (rebuilt / "report" / "report.md").read_text()
    assert report.count("**Not measured:**") == 2 and "--add-measurements footnote1" in report
    assert not list((rebuilt / "runs").rglob("*.ckpt"))  # nothing was trained again


def test_analysis_claims_are_judged_on_the_untrained_models(quick):
    """Every analysis claim carries the rule's verdict on the same GRUs untrained
    (`null`), and one it passes while the trained models reproduce it at least partly is
    uninformative; the accuracy and ablation claims have no untrained counterpart (None)."""
    folder, _, claims = quick
    analysis = [c for i, c in claims.items() if i.startswith(ANALYSIS_CLAIMS)]
    accuracy = [c for i, c in claims.items() if i.startswith(ACCURACY_CLAIMS)]
    assert len(analysis) + len(accuracy) == len(claims) and len(analysis) > 50
    assert all(c["null"] in RULE_VERDICTS for c in analysis)
    assert all(c["null"] is None for c in accuracy)
    for claim in analysis:
        rule = claim["rule_verdict"] or claim["verdict"]
        passed_untrained = claim["null"] == "reproduced" and rule != "not reproduced"
        assert (claim["verdict"] == UNINFORMATIVE) == (
            passed_untrained or claim["id"] == "sec4_1.majority_baseline"
        ), claim["id"]
    # a majority classifier reads the labels alone: untrained, the same number and verdict
    majority = claims["sec4_1.majority_baseline"]
    assert majority["null"] == majority["rule_verdict"]
    report = (folder / "report" / "report.md").read_text()
    assert "| verdict | untrained |" in report and "**untrained**" in report
    guided = json.loads(
        (folder / "runs" / "paper1" / "guided" / "seed=1" / "measurements.json").read_text()
    )
    assert set(guided["untrained_analysis"]) == set(guided["analysis"])
    assert guided["untrained_analysis"]["embedding_sos"] != guided["analysis"]["embedding_sos"]


def test_kept_measurements_without_the_untrained_analysis_are_measured_not_retrained(
    quick, monkeypatch
):
    """Measurements from before the null model (no `untrained_analysis`) of a finished run get the
    untrained analysis from the run folder (its `epoch=init` weights), the run kept and every
    other field as it was; merging (nothing measured), one error names the run."""
    from experiments.engine.sitting import Sitting, SittingError
    from experiments.paper1.runs import measure_model
    from experiments.paper1.scales import SCALES
    from storage.layout import UNTRAINED

    folder, _, _ = quick
    for name, value in offline_env(folder).items():
        monkeypatch.setenv(name, value)
    root = folder / "runs"
    layout = RunLayout.of(root, "paper1", "guided", 1)
    run = RunFolder(layout.path)
    model = run.model(UNTRAINED)  # a snapshot's weights in the checkpoint's model
    assert all(model.state_dict()[k].equal(v) for k, v in run.state_dict(UNTRAINED).items())
    written = layout.measurements.read_text()
    before = json.loads(written)
    files = [*layout.checkpoints.glob("*.ckpt"), layout.train_log, layout.command]
    stamps = {path: path.stat().st_mtime_ns for path in files}
    scale = dataclasses.replace(SCALES["quick"], data=("--data.init_args.data_dir", "null"))
    try:
        layout.measurements.write_text(
            json.dumps({k: v for k, v in before.items() if k != "untrained_analysis"})
        )
        with pytest.raises(SittingError, match="guided/seed=1 was measured without untrained_"):
            measure_model("guided", 1, scale, Sitting(root, 1, True, merged=(root,)))
        again = measure_model("guided", 1, scale, Sitting(root, 1, reuse=True))
        assert again["kept"] and {path: path.stat().st_mtime_ns for path in files} == stamps
        again = json.loads(json.dumps(again))
        assert again["untrained_analysis"] == before["untrained_analysis"]
        assert again["measured"] > before["measured"]
        assert {k: v for k, v in again.items() if k not in ("kept", "measured")} == {
            k: v for k, v in before.items() if k != "measured"
        }
    finally:
        layout.measurements.write_text(written)


def assert_control_claims_read_the_controls(retrains, models, scale):
    """Section 5's control claims, seed 1's: the gains over the retrained baseline and the
    pruned models' accuracy against the retrained full one."""
    from experiments.paper1.ablations import PRUNED_BY_EDGES, PRUNING_CONTROL, control_claims
    from experiments.paper1.reproduce import PAPER, ablation_of
    from experiments.paper1.scales import ANALYSED

    ablation = ablation_of(retrains, scale)
    nc = {key[0]: record.get("new_compositions", record.get("after"))
          for key, record in retrains.items() if key[1] == 1}  # fmt: skip
    original = {v: [models[(v, 1)]["selections"][ANALYSED]["new_compositions"]]
                for v in ("guided", "baseline")}  # fmt: skip
    claims = {c.id: c for c in control_claims(ablation, original, PAPER)}
    assert set(claims) == {
        "control.sec5_1.guided_with_encoder", "control.sec5_1.guided_with_decoder_w_hh",
        "control.sec5_1.baseline_not_helped", "pool3.sec5_2.pruned_accuracy",
        "pool3.sec5_2.pruned_retrained_accuracy", "pool3.sec5_2.retrained_beats_full",
        "pool3.sec5_2.restored_against_control", *(f"{reading}.sec5_2.{id}" for id in (
            "pruned_accuracy", "pruned_retrained_accuracy", "retrained_beats_full",
            "restored_against_control") for reading in ("edges", "zeroed", "edges_zeroed")),
    }  # fmt: skip
    gain = nc["substitution/baseline_with_guided_encoder"] - nc["control/baseline_retrained"]
    gains = [gain, nc["substitution/baseline_with_guided_decoder_w_hh"]
             - nc["control/baseline_retrained"]]  # fmt: skip
    assert list(claims["control.sec5_1.baseline_not_helped"].measured.values) == pytest.approx(
        gains
    )
    restored = list(claims["pool3.sec5_2.restored_against_control"].measured.values)
    assert restored == pytest.approx([nc["pruned/guided"] - nc[PRUNING_CONTROL]])
    restored = list(claims["edges.sec5_2.restored_against_control"].measured.values)
    assert restored == pytest.approx([nc[PRUNED_BY_EDGES] - nc[PRUNING_CONTROL]])


def test_section5_controls_retrain_with_nothing_frozen_or_removed(quick, monkeypatch, tmp_path):
    """`--section5-controls` (`Scale.controls`) adds, on the pairs' seeds, each model retrained
    as the substitutions are with nothing frozen and each guided one retrained as the pruned ones
    are with nothing removed, the guided ones pruned to the units with the most strong edges,
    and both prunings with the units' weights zeroed instead of masked; the kept retrains stay
    kept. Their claims read the controls in
    place of the unretrained originals: the gains over the retrained baseline, and the pruned
    models' accuracy against the retrained full one, seed by seed."""
    from experiments.engine.sitting import Sitting
    from experiments.paper1.ablations import PRUNED_BY_EDGES, PRUNING_CONTROL
    from experiments.paper1.runs import ablations
    from experiments.paper1.scales import SCALES

    folder, _, _ = quick
    for name, value in offline_env(folder).items():
        monkeypatch.setenv(name, value)
    shutil.copytree(folder / "runs", tmp_path / "runs")
    root = tmp_path / "runs"
    scale = dataclasses.replace(SCALES["quick"], data=("--data.init_args.data_dir", "null"),
                                controls=True)  # fmt: skip
    models = {(v, s): json.loads(RunLayout.of(root, "paper1", v, s).measurements.read_text())
              for v in ("guided", "baseline") for s in scale.seeds}  # fmt: skip
    retrains = ablations(scale, models, Sitting(root, 1, reuse=True))
    zeroed = ["pruned_zeroed/guided", "pruned_by_edges_zeroed/guided"]
    controls = ["control/guided_retrained", "control/baseline_retrained", PRUNING_CONTROL,
                PRUNED_BY_EDGES, *zeroed]  # fmt: skip
    assert sorted(key for key, record in retrains.items() if not record["kept"]) == sorted(
        (variant, 1) for variant in controls
    )
    commands = {v: RunLayout.of(root, "paper1", v, 1).command.read_text() for v in controls}
    for variant in controls[:2]:
        assert commands[variant].count("LoadWeights") == 1
        assert '"freeze": false' in commands[variant] and '"freeze": true' not in commands[variant]
    # the pruned model's fit (trained in the shared folder) but for its variant and removed units
    control = commands[PRUNING_CONTROL].splitlines()
    at = control.index("--model.removed_units")
    pruned = RunLayout.of(root, "paper1", "pruned/guided", 1).command.read_text()
    pruned = pruned.replace(str(folder / "runs"), str(root)).splitlines()
    assert control[at + 1] == "{}" and pruned[at + 1].startswith('{"encoder.hidden": [')
    assert [line.replace(PRUNING_CONTROL, "pruned/guided") for line in control[:at]] == pruned[:at]
    assert control[at + 2 :] == pruned[at + 2 :]
    assert "before" not in retrains[(PRUNING_CONTROL, 1)]  # nothing was pruned
    edges = models[("guided", 1)]["pruning_by_edges"]  # the units with the most strong edges
    edged = RunLayout.of(root, "paper1", PRUNED_BY_EDGES, 1).command.read_text().splitlines()
    assert json.loads(edged[at + 1]) == edges["removed"]
    assert retrains[(PRUNED_BY_EDGES, 1)]["kept_units"] == edges["kept"]
    # zeroed, not masked: the units' weights set to 0 at the start, the same units removed, and
    # before retraining the masked model's accuracy (measured on the retrain's first weights)
    for variant, masked in zip(zeroed, ("pruned/guided", PRUNED_BY_EDGES), strict=True):
        lines = RunLayout.of(root, "paper1", variant, 1).command.read_text().splitlines()
        assert lines[at + 1] == "{}" and "lightning_modules.callbacks.ZeroUnits" in lines[-1]
        units = json.loads(lines[-1].split("=", 1)[1])["init_args"]["units"]
        record, masked_record = retrains[(variant, 1)], retrains[(masked, 1)]
        assert units == json.loads(
            RunLayout.of(root, "paper1", masked, 1).command.read_text().splitlines()[at + 1]
            .replace(str(folder / "runs"), str(root))
        )  # fmt: skip
        assert record["kept_units"] == masked_record["kept_units"]
        assert record["before"] == masked_record["before"]
    assert_control_claims_read_the_controls(retrains, models, scale)


def test_kept_measurements_whose_run_folder_is_gone_get_the_untrained_analysis_untrained(
    quick, monkeypatch
):
    """A run root rebuilt from committed measurement files alone (its run folders lost): the
    untrained analysis is measured on the weights the same command starts from, rebuilt by a
    one-batch fit in a scratch folder, and equals the one measured on the real run's `epoch=init`
    snapshot; nothing is trained into the run's folder and no scratch folder is left."""
    from experiments.engine.sitting import Sitting
    from experiments.paper1.runs import measure_model, model_arguments
    from experiments.paper1.scales import SCALES

    folder, _, _ = quick
    for name, value in offline_env(folder).items():
        monkeypatch.setenv(name, value)
    root = folder / "runs"
    layout = RunLayout.of(root, "paper1", "baseline", 1)
    scale = dataclasses.replace(SCALES["quick"], data=("--data.init_args.data_dir", "null"))
    assert_initial_weights_rebuilt(layout, model_arguments("baseline", 1, scale, root), root)
    before = json.loads(layout.measurements.read_text())
    aside = folder / "aside"
    layout.path.rename(aside)
    try:
        layout.path.mkdir()
        layout.measurements.write_text(
            json.dumps({k: v for k, v in before.items() if k != "untrained_analysis"})
        )
        again = json.loads(json.dumps(measure_model("baseline", 1, scale, Sitting(root, 1, True))))
        assert again["kept"] and [p.name for p in layout.path.iterdir()] == ["measurements.json"]
        assert again["untrained_analysis"] == before["untrained_analysis"]
        assert again["trained"] == before["trained"] and again["selections"] == before["selections"]
        assert not list(root.glob(".initial-weights-*"))
    finally:
        shutil.rmtree(layout.path)
        aside.rename(layout.path)


def test_a_retrain_whose_models_folders_are_gone_trains_them_again_checked(
    quick, monkeypatch, tmp_path
):
    """A run root rebuilt from measurement files alone, with a section-5 retrain still to run:
    the models it starts from (their folders hold no weights) are trained again from their
    commands first, checked to be the models their measurements were taken from, and the retrain
    then gives the record the uninterrupted reproduction gave. A model that trains into another
    one stops the reproduction in one line naming it, before any retrain starts."""
    from experiments.engine.sitting import Sitting, SittingError
    from experiments.paper1.runs import ablations
    from experiments.paper1.scales import SCALES

    folder, _, _ = quick
    for name, value in offline_env(folder).items():
        monkeypatch.setenv(name, value)
    root = tmp_path / "runs"
    for record in (folder / "runs").rglob("measurements.json"):  # the files alone
        (root / record.parent.relative_to(folder / "runs")).mkdir(parents=True)
        shutil.copy(record, root / record.relative_to(folder / "runs"))
    substitution = RunLayout.of(root, "paper1", "substitution/baseline_with_guided_encoder", 1)
    expected = json.loads(substitution.measurements.read_text())
    shutil.rmtree(substitution.path)
    scale = dataclasses.replace(SCALES["quick"], data=("--data.init_args.data_dir", "null"))
    models = {(v, s): json.loads(RunLayout.of(root, "paper1", v, s).measurements.read_text())
              for v in ("guided", "baseline") for s in scale.seeds}  # fmt: skip
    sources = [RunLayout.of(root, "paper1", v, 1) for v in ("baseline", "guided")]
    kept = {layout: layout.measurements.read_text() for layout in sources}

    tampered = json.loads(kept[sources[0]])
    tampered["selections"]["lowest_loss"]["new_compositions"] += 0.5
    sources[0].measurements.write_text(json.dumps(tampered))
    for _ in range(2):  # the model trained here is not taken for the measured one later either
        with pytest.raises(
            SittingError,
            match="baseline/seed=1 trained again is not the model "
            r"its measurements were taken from \(selections.lowest_loss",
        ):
            ablations(scale, models, Sitting(root, 1, reuse=True))
    written = json.loads(sources[0].measurements.read_text())  # as it was, but when written
    assert {**written, "measured": None} == {**tampered, "measured": None}
    assert not substitution.path.exists()  # no retrain started

    sources[0].measurements.write_text(kept[sources[0]])
    retrains = ablations(scale, models, Sitting(root, 1, reuse=True))
    for layout in sources:  # trained again, the same models: their measurements as kept
        assert layout.checkpoint("lowest_loss").is_file()
        again = json.loads(layout.measurements.read_text())
        assert again == json.loads(kept[layout])
    record = retrains[("substitution/baseline_with_guided_encoder", 1)]
    assert not record["kept"]
    assert {k: record[k] for k in expected if k not in ("trained", "measured")} == {
        k: v for k, v in expected.items() if k not in ("trained", "measured")
    }
    assert sorted(key for key, record in retrains.items() if not record["kept"]) == [
        ("substitution/baseline_with_guided_encoder", 1)
    ]


def test_shards_split_paper1_by_seed_so_each_retrain_finds_its_models(monkeypatch, tmp_path):
    """`--shard i/n` of paper 1: every model and retrain in exactly one shard, and each retrain
    (substitution, pruning or their registered controls, which the paper's scale retrains) in the
    shard of the models of its seed, whose checkpoints it starts from."""
    from experiments.engine.shard import Shard
    from experiments.engine.sitting import Sitting
    from experiments.paper1 import runs
    from experiments.paper1.scales import SCALES

    def planned(tasks, jobs, describe, done_before, label=None, left=None):
        pruning = {"removed": {}}
        return {key: {"pruning": pruning, "pruning_by_edges": pruning} for key in tasks}  # none run

    monkeypatch.setattr(runs, "run_all", planned)
    scale = SCALES["paper"]

    def plan(shard):
        sitting = Sitting(tmp_path, shard=shard)
        models = runs.measure_all(scale, sitting)
        return set(models), set(runs.ablations(scale, models, sitting))

    whole_models, whole_retrains = plan(Shard())
    assert SCALES["paper"].controls and len(whole_models) == 5 * 4 + 3
    # 8 components and the control into each of 2 receivers, and 5 prunings, on seeds 1-3;
    # the other 4 of pruning's registered variants on seeds 1-3 only; pruned/guided on 4-5 too
    assert len(whole_retrains) == 2 * (8 + 1) * 3 + 5 * 3 + 2
    for count in (2, 3, 5):
        parts = [plan(Shard(index, count)) for index in range(1, count + 1)]
        for kind, whole in ((0, whole_models), (1, whole_retrains)):
            assert sum(len(part[kind]) for part in parts) == len(whole)
            assert set().union(*(part[kind] for part in parts)) == whole
        for part_models, part_retrains in parts:
            seeds = {seed for _, seed in part_models}
            assert {seed for _, seed in part_retrains} <= seeds
            assert {("baseline", s) for s in seeds} | {("guided", s) for s in seeds} <= part_models


def test_a_scale_trains_the_first_of_the_papers_seeds():
    """The quick scale trains seeds 1 and 2 of every variant (the summed loss's first three of
    them: both); the paper's scale the five, the summed loss three; a scale whose seeds are not
    the first 2 to 5 of the paper's is refused in one line."""
    from experiments.paper1.scales import SCALES

    assert SCALES["quick"].model_seeds == {
        "baseline": (1, 2), "guided": (1, 2), "baseline_lstm": (1, 2), "guided_lstm": (1, 2),
        "guided_summed": (1, 2),
    }  # fmt: skip
    paper = SCALES["paper"].model_seeds
    assert paper.pop("guided_summed") == (1, 2, 3) and set(paper.values()) == {(1, 2, 3, 4, 5)}
    for seeds in ((2, 3), (1,), (1, 2, 3, 4, 5, 6), (1, 3)):
        with pytest.raises(ValueError, match=r"the first 2 to 5 of \(1, 2, 3, 4, 5\)"):
            dataclasses.replace(SCALES["quick"], seeds=seeds)


def test_the_lstms_are_analysed_as_the_grus_and_footnote1_counts_their_verdicts(quick):
    """Footnote 1: every LSTM has sections 3-4's analysis with every LSTM gate, trained and
    untrained, and footnote 5's groups; the GRU claims are judged on them and the footnote-1
    claims count the verdicts kept. Footnote 5's claims are judged beside the untrained GRUs."""
    from experiments.paper1.analyses import gate_sites, matrices_of, probes_of

    folder, _, claims = quick
    runs = folder / "runs" / "paper1"
    for variant in ("baseline_lstm", "guided_lstm"):
        record = json.loads((runs / variant / "seed=2" / "measurements.json").read_text())
        for field in ("analysis", "untrained_analysis"):
            analysis = record[field]
            assert analysis["cell"] == "lstm", field
            assert list(analysis["saturation"]) == list(gate_sites("lstm"))
            assert list(analysis["connectivity"]) == list(matrices_of("lstm"))
            assert list(analysis["probes"]) == list(probes_of("lstm"))
        assert record["analysis"]["embedding_sos"] != record["untrained_analysis"]["embedding_sos"]
        assert list(record["footnote5"]["groups"]) == list(probes_of("lstm"))
        assert [len(g["units_by_seed"]) for g in record["footnote5"]["groups"].values()] == [2] * 5
        assert record["untrained_footnote5"]["seeds"] == [0]
    gru = json.loads((runs / "guided" / "seed=1" / "measurements.json").read_text())
    group = gru["footnote5"]["groups"]["table2.encoder.hidden"]
    assert group["accuracy_all"] == gru["analysis"]["probes"]["table2.encoder.hidden"][
        "accuracy_all"]  # fmt: skip
    for id in ("footnote5.shap_confirms_units", "footnote5.shap_selects_more",
               "footnote5.shap_less_consistent"):  # fmt: skip
        assert claims[id]["null"] in RULE_VERDICTS, id
    same = claims["footnote1.analyses_same_verdict"]
    assert same["null"] is None and same["measured"]["n"] == len(
        [i for i in claims if i.startswith(PRIMARY_ANALYSIS_CLAIMS)]
    )  # every primary analysis claim of the GRUs has its LSTM counterpart
    report = (folder / "report" / "report.md").read_text()
    assert "## Footnote 1: the analyses on the LSTMs" in report
    assert "| baseline_lstm | `decoder.input_gate` |" in report
    assert "## Footnote 5: functional groups ranked by Shapley values" in report


def test_kept_measurements_get_the_footnotes_only_when_asked(quick, monkeypatch):
    """A kept LSTM run measured before the footnotes' fields: without `--add-measurements` it is
    returned as kept (its claims not measured); asked, with its run folder gone, it is trained
    again from its command (bit for bit: its test accuracies as kept) and gets the fields the
    first run gave."""
    from experiments.engine.sitting import Sitting, SittingError
    from experiments.paper1.runs import measure_model
    from experiments.paper1.scales import SCALES

    folder, _, _ = quick
    for name, value in offline_env(folder).items():
        monkeypatch.setenv(name, value)
    root = folder / "runs"
    layout = RunLayout.of(root, "paper1", "guided_lstm", 2)
    before = json.loads(layout.measurements.read_text())
    older = {k: v for k, v in before.items() if k not in FOOTNOTE_FIELDS}
    older |= {"analysis": None}
    older.pop("untrained_analysis")
    scale = dataclasses.replace(SCALES["quick"], data=("--data.init_args.data_dir", "null"))
    aside = folder / "aside_lstm"
    layout.path.rename(aside)
    try:
        layout.path.mkdir()
        layout.measurements.write_text(json.dumps(older))
        kept = measure_model("guided_lstm", 2, scale, Sitting(root, 1, reuse=True))
        assert kept["kept"] and kept["analysis"] is None and "footnote5" not in kept
        assert [p.name for p in layout.path.iterdir()] == ["measurements.json"]
        asked = dataclasses.replace(scale, added=("footnote1", "footnote5"))
        with pytest.raises(SittingError, match="seed=2 was measured without footnote5, untrained_"):
            measure_model("guided_lstm", 2, asked, Sitting(root, 1, True, merged=(root,)))
        again = json.loads(json.dumps(
            measure_model("guided_lstm", 2, asked, Sitting(root, 1, reuse=True))))  # fmt: skip
        assert not again["kept"] and layout.checkpoint("lowest_loss").is_file()
        assert again["trained"] == before["trained"]
        for field in ("analysis", "untrained_analysis", "selections", "curve"):
            assert again[field] == before[field], field
        for field in FOOTNOTE_FIELDS:
            for name, group in before[field]["groups"].items():
                assert again[field]["groups"][name]["units_by_seed"] == group["units_by_seed"]
        # kept measurements of another model beside a finished run: checked before adding to them
        other = {**older, "selections": {**older["selections"], "best": {}}}
        layout.measurements.write_text(json.dumps(other))
        with pytest.raises(SittingError, match="is not the model its measurements were taken"):
            measure_model("guided_lstm", 2, asked, Sitting(root, 1, reuse=True))
        assert json.loads(layout.measurements.read_text())["selections"]["best"] == {}
    finally:
        shutil.rmtree(layout.path)
        aside.rename(layout.path)
