"""Paper 4's token-positioning metric, random decoder inputs, analysis rows, and the whole
pipeline at quick scale (`python -m experiments.paper4 --scale quick`)."""

import itertools
import json
import shutil
import subprocess

import pytest
import torch

from datamodules.token_positioning import EOS, TokenPositioningDataModule
from experiments.report import VERDICTS
from lightning_modules.callbacks import TokenPositioningAccuracy
from lightning_modules.seq2seq import Seq2Seq
from tests.smoke import (
    assert_initial_weights_rebuilt,
    assert_quick_report,
    assert_shards_merge,
    copy_kept_measurements,
    quick_command,
    rebuilt_alone,
    shared_quick_reproduction,
)


def test_token_positioning_accuracy_counts_the_token_at_its_position():
    metric = TokenPositioningAccuracy()
    prediction = torch.tensor([[5, 6, 7], [5, 6, 7], [8, 8, 8]])
    tokens = torch.tensor([[6, 7], [5, 5], [8, 9]])
    positions = torch.tensor([[2, 3], [1, 2], [4, 1]])  # position 4 is past the output: wrong
    metric.update(prediction, tokens, positions)
    # hits: (6@2 yes, 7@3 yes), (5@1 yes, 5@2 no), (8@4 no, 9@1 no)
    assert float(metric.compute()) == 3 / 6


def test_random_decoder_inputs_change_only_the_decoder_inputs():
    torch.manual_seed(0)
    model = Seq2Seq(12, 12, embedding_size=4, hidden_size=8, attention="none").eval()
    source = torch.randint(3, 12, (5, 6))
    lengths = torch.full((5,), 6)
    greedy, _ = model(source, lengths, steps=4)
    first, _ = model(source, lengths, steps=4, random_inputs=torch.Generator().manual_seed(1))
    again, _ = model(source, lengths, steps=4, random_inputs=torch.Generator().manual_seed(1))
    torch.testing.assert_close(first, again)  # seeded
    assert not torch.allclose(first[:, 1:], greedy[:, 1:])
    # the inputs are the drawn tokens: the same draws fed as forced inputs give the same logits
    generator = torch.Generator().manual_seed(1)
    drawn = torch.stack([torch.randint(12, (5,), generator=generator) for _ in range(4)], 1)
    record: dict = {}
    model(source, lengths, steps=4, random_inputs=torch.Generator().manual_seed(1), record=record)
    embedded = model.decoder_embedding(drawn[:, 0])
    state = record["encoder.hidden"][:, -1]
    _, sites = model.decoder.step(embedded, state, 0)
    torch.testing.assert_close(sites["hidden"], record["decoder.hidden"][:, 0])


def test_requested_rows_put_the_token_at_its_position(tmp_path):
    (tmp_path / "book.txt").write_text(
        "the cat sat on the mat\nthe dog ran to the cat\na cat and a dog\nthe end of it\n"
    )
    datamodule = TokenPositioningDataModule(
        data_dir=str(tmp_path), vocab_size=60, validation_share=0.0, test_share=0.0
    )
    the, cat = datamodule.vocab.index("the"), datamodule.vocab.index("cat")
    rows = datamodule.requested_rows(("train",), [the, cat], range(1, 7), per_token=2)
    tokens, positions = rows["signal_token"][:, 0], rows["signal_position"][:, 0]
    assert (tokens == the).sum() == 2 and (tokens == cat).sum() == 2  # capped per token
    for row in range(len(tokens)):
        target = rows["target"][row]
        assert target[positions[row] - 1] == tokens[row]
        length = rows["source_lengths"][row]
        assert rows["source"][row, length - 2] == tokens[row]
        assert datamodule.vocab[rows["source"][row, length - 1]] == f"<pos={positions[row]}>"
        assert EOS in target.tolist()


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One quick reproduction on one machine, shared by the tests: its folder, output, claims."""
    return shared_quick_reproduction(tmp_path_factory, 4)


def test_quick_reproduction_writes_report_claims_and_figures(quick):
    tmp_path, output, claims = quick
    expected = {"accuracy.gru", "accuracy.lstm", "accuracy.two_signals", "table1.storing_zero",
                "table1.counting_k3", "table1.triggering_k4", "finding4.others_zero",
                "section5.update_output_when_triggering_masked", "share.outputting"}  # fmt: skip
    assert expected <= set(claims)
    for claim in claims.values():
        assert claim["verdict"] in VERDICTS
    report = (tmp_path / "report" / "report.md").read_text()
    for figure in ("training", "fig2_storing_pca", "fig3_counting", "fig5_gates"):
        assert (tmp_path / "report" / "figures" / f"{figure}.png").stat().st_size > 1000
        assert f"figures/{figure}.png" in report
    assert "Shakespeare" in report
    assert_quick_report(report)
    # both readings of section 2's objective, each as its run's config.yaml records it
    assert "| gru | own outputs | 2 |" in report
    assert "| gru_teacher_forced | teacher forcing | 1 |" in report
    assert "### What differs from the paper's setting" in report
    analysis = json.loads((tmp_path / "runs" / "paper4" / "gru" / "seed=0" / "analysis.json")
                          .read_text())  # fmt: skip
    assert len(analysis["tokens"]) == 4
    # every run's measurements beside the report, and the report rebuilt from them alone
    kept = tmp_path / "report" / "runs"
    measurements = sorted(p.relative_to(kept).as_posix() for p in kept.rglob("measurements.json"))
    assert measurements == [f"paper4/{v}/seed={s}/measurements.json" for v, s in
                            [("gru", 0), ("gru", 1), ("gru_teacher_forced", 0), ("lstm", 0),
                             ("two_signals", 0)]]  # fmt: skip
    record = json.loads((kept / measurements[0]).read_text())
    assert record["analysis"] == analysis and "--run.root" not in record["command"]
    (tmp_path / "runs").rename(tmp_path / "aside")  # no checkpoint, no metrics.csv: only these
    try:
        rebuilt_alone(4, tmp_path, 5)
    finally:
        (tmp_path / "aside").rename(tmp_path / "runs")


def reproduction(*options: str) -> subprocess.CompletedProcess:
    return quick_command(4, *options)


def test_shards_trained_apart_merge_into_the_one_machine_report(quick, tmp_path):
    """`--shard 1/2` trains every other run of the fixed list and writes no report; with the
    other shard's run root (its runs' measurements of the one-machine reproduction, copied, to
    keep the suite short) `--merge` of both writes the report of one machine, and without one of
    them stops with one line naming a missing run, before writing a report. To keep the suite
    short the first shard keeps its GRU and its teacher-forced GRU (measured by the one-machine
    reproduction, with `--reuse-runs`) and trains its LSTM again."""
    single, _, _ = quick
    for run in ("gru/seed=0", "gru_teacher_forced/seed=0"):
        copy_kept_measurements(single, tmp_path, 4, run, 1)
    done = reproduction("--shard", "1/2", "--runs", tmp_path / "shard1", "--reuse-runs", "--out",
                        tmp_path / "report1")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (tmp_path / "report1").exists()
    assert "--merge <each shard's run root>" in done.stdout
    assert "5 tasks" not in done.stdout
    assert "3 tasks, 2 at a time; 2 done before, 1 to run: lstm seed=0" in done.stdout
    trained = sorted(p.parent.relative_to(tmp_path / "shard1").as_posix()
                     for p in (tmp_path / "shard1").rglob("checkpoints"))  # fmt: skip
    assert trained == ["paper4/lstm/seed=0"]
    for run in ("gru/seed=1", "two_signals/seed=0"):  # the second shard's runs
        copy_kept_measurements(single, tmp_path, 4, run, 2)
    assert_shards_merge(4, tmp_path, single, "paper4/gru/seed=1", 5)


def test_the_chance_that_random_function_groups_share_a_unit():
    """Four groups of one unit among four: disjoint with probability 1 * 3/4 * 2/4 * 1/4; groups
    of a quarter of 128 units share one almost surely, so `functions.several_at_once` cannot
    fail there."""
    from experiments.paper4.analysed import chance_of_a_shared_unit

    one_each = {"storing": [0], "counting": [1], "triggering": [2], "outputting": [3]}
    assert chance_of_a_shared_unit(one_each, 4) == pytest.approx(1 - 3 / 32)
    quarter = {name: list(range(32)) for name in one_each}
    assert chance_of_a_shared_unit(quarter, 128) > 0.999
    assert chance_of_a_shared_unit({name: [] for name in one_each}, 128) == 0.0


# ---- the null model: the untrained weights -----------------------------------------------------
def test_the_untrained_weights_are_measured_as_the_trained_ones(quick):
    """Each run's measurements hold its untrained weights' (`epoch=init`): their test accuracy,
    here recomputed by hand from the snapshot (greedy decoding of the test batches the scale
    reads, the token at its position), and for a GRU the same analysis on every requested row;
    the claims carry the rule's verdict on them, but for those without a null model."""
    from safetensors.torch import load_file

    from experiments.paper4.scales import SCALES
    from experiments.paper4.untrained import NO_NULL
    from experiments.report import RULE_VERDICTS
    from storage import RunLayout
    from storage.layout import UNTRAINED
    from storage.run_folder import RunFolder

    folder, _, claims = quick
    layout = RunLayout.of(folder / "runs", "paper4", "gru", 0)
    record = json.loads(layout.measurements.read_text())
    untrained = record["untrained"]
    run = RunFolder(layout.path)
    model, datamodule = run.model(UNTRAINED), run.datamodule(UNTRAINED)
    snapshot = load_file(layout.weight_snapshot(UNTRAINED))
    assert all(model.state_dict()[k].equal(v) for k, v in snapshot.items())
    assert not all(run.state_dict("best")[k].equal(v) for k, v in snapshot.items())
    hits = total = 0
    with torch.no_grad():
        batches = SCALES["quick"].test_batches  # the quick scale reads the first ones
        for batch in itertools.islice(datamodule.split_dataloader("test"), batches):
            logits, _ = model(batch["source"], batch["source_lengths"],
                              steps=batch["target"].shape[1])  # fmt: skip
            outputs = logits.argmax(-1).tolist()
            for row, (tokens, positions) in enumerate(
                zip(batch["signal_token"].tolist(), batch["signal_position"].tolist(), strict=True)
            ):
                for token, position in zip(tokens, positions, strict=True):
                    total += 1
                    hits += position <= len(outputs[row]) and outputs[row][position - 1] == token
    assert total == batches * SCALES["quick"].batch_size  # one signal per pair
    assert untrained["test_position_acc"] == pytest.approx(hits / total, abs=1e-6)
    assert untrained["test_position_acc"] != record["test_position_acc"]
    analysis = untrained["analysis"]
    assert analysis["correct_only"] is False and analysis["rows"] == record["analysis"]["rows"]
    assert analysis["test_position_acc"] == untrained["test_position_acc"]
    assert analysis["tokens"].keys() == record["analysis"]["tokens"].keys()
    assert analysis["tokens"] != record["analysis"]["tokens"]
    lstm = json.loads(RunLayout.of(folder / "runs", "paper4", "lstm", 0).measurements.read_text())
    assert lstm["untrained"]["analysis"] is None and 0 <= lstm["untrained"]["test_position_acc"]
    for claim in claims.values():
        assert (claim["null"] is None) == (claim["id"] in NO_NULL), claim["id"]
        assert claim["null"] is None or claim["null"] in RULE_VERDICTS
    report = (folder / "report" / "report.md").read_text()
    assert "| verdict | untrained |" in report and "Measured for every run." in report


def test_untrained_weights_rebuilt_from_the_seed_are_the_snapshot(quick):
    """A run folder gone, its untrained weights are rebuilt from its command alone (a one-batch
    fit in a scratch folder): bit for bit the run's `epoch=init` snapshot."""
    from experiments.paper4.runs import arguments_of
    from experiments.paper4.scales import SCALES
    from storage import RunLayout

    root = quick[0] / "runs"
    layout = RunLayout.of(root, "paper4", "gru", 1)
    assert_initial_weights_rebuilt(layout, arguments_of("gru", 1, SCALES["quick"], root), root)


def test_measurements_from_before_the_null_model(quick, tmp_path):
    """Measurements without the untrained weights' (from before the null model), their run folders
    gone: `--reuse-runs` rebuilds the report from them alone, saying the null model is not
    measured for those runs; with `--measure-untrained` it is measured on the weights rebuilt
    from each run's seed, nothing trained, and equals what the runs' own snapshots gave."""
    folder, _, _ = quick
    root = tmp_path / "runs"
    shutil.copytree(folder / "report" / "runs", root)
    stripped = {run: root / "paper4" / run / "measurements.json"
                for run in ("gru/seed=1", "lstm/seed=0")}  # fmt: skip
    before = {run: json.loads(path.read_text()) for run, path in stripped.items()}
    for run, path in stripped.items():
        path.write_text(json.dumps({k: v for k, v in before[run].items() if k != "untrained"}))
    old = reproduction("--runs", root, "--reuse-runs", "--out", tmp_path / "old")
    assert old.returncode == 0, old.stdout + old.stderr
    report = (tmp_path / "old" / "report.md").read_text()
    assert "measurements of gru seed=1, lstm seed=0 predate it" in report
    assert "| verdict | untrained |" not in report  # no claim has an untrained verdict
    old_claims = json.loads((tmp_path / "old" / "results.json").read_text())
    assert all(claim["null"] is None for claim in old_claims)
    new = reproduction("--runs", root, "--reuse-runs", "--measure-untrained", "--out",
                       tmp_path / "new")  # fmt: skip
    assert new.returncode == 0, new.stdout + new.stderr
    for run, path in stripped.items():
        again = json.loads(path.read_text())
        assert again["untrained"] == before[run]["untrained"], run
        assert again["trained"] == before[run]["trained"], run
    assert ((tmp_path / "new" / "results.json").read_text()
            == (folder / "report" / "results.json").read_text())  # fmt: skip
    assert not list(root.rglob("*.ckpt")) and not list(root.glob(".initial-weights-*"))


def synthetic_analysis(steady: float, outputting: float, hit: int) -> dict:
    """An analysis as `claims_of` reads it, of one token on 2 units a function: the storing
    units change `steady` times as much as the others, the outputting units' |h_T| is
    `outputting`, every manipulation hits `hit` of 10 rows (its control 1)."""
    from probes.neuron_functions import MANIPULATIONS

    verification = {name: [hit, 10] for name in MANIPULATIONS}
    verification |= {f"control.{name}": [1, 10] for name in MANIPULATIONS}
    verification |= {f"storing_zero.T={t}": [hit, 10] for t in range(2, 14)}
    token = {"storing": [0, 1], "counting": [2, 3], "triggering": [4, 5], "outputting": [6, 7],
             "accuracy": {"storing": 1.0, "counting": 0.5, "triggering": 1.0},
             "verification": verification, "outputting_abs": outputting,
             "counting_directions": {"rising": 3, "falling": 1}, "storing_change_ratio": steady,
             "gates": dict.fromkeys(("update_output", "update_output_masked", "reset_store",
                                     "reset_store_masked", "update_drive_from_triggering",
                                     "reset_drive_from_triggering"), 0.5)}  # fmt: skip
    return {"hidden_size": 128, "coverage": {"tokens": 0.48, "positions": 0.75}, "rows": 10,
            "correct": 10 if hit else 0, "tokens": {"the": token}, "counting_rho": -0.9,
            "counting_rises": 0.95, "random_inputs_accuracy": hit / 10}  # fmt: skip


def test_a_claim_the_untrained_weights_pass_is_uninformative():
    """The null model's verdict logic on paper 4's claims: the storing units are as steady untrained
    as trained (the rule passes both: uninformative, its verdict before kept with the reason);
    the outputting values near +-1 and the accuracies fail untrained (kept, the null beside);
    the data's coverage and the losses from correct rows have no null; measurements without
    the untrained weights' leave every claim as it was."""
    from experiments.paper4.claims import claims_of
    from experiments.paper4.scales import SCALES, VARIANTS
    from experiments.paper4.untrained import NULL_MODEL, judged_claims

    scale = SCALES["quick"]
    trained = synthetic_analysis(steady=0.2, outputting=0.95, hit=10)
    untrained = synthetic_analysis(steady=0.25, outputting=0.1, hit=0)
    records = {(name, seed): {"untrained": {"analysis": untrained, "test_position_acc": 0.0}}
               for name in VARIANTS for seed in scale.seeds[name]}  # fmt: skip
    claims = claims_of([trained] * 2, {name: [0.985] * len(scale.seeds[name]) for name in VARIANTS})
    judged = {claim.id: claim for claim in judged_claims(claims, records, scale)}
    before = {claim.id: claim for claim in claims}
    steady = judged["finding1.storing_steady"]
    assert before["finding1.storing_steady"].verdict == "reproduced"
    assert (steady.verdict, steady.rule_verdict, steady.null) == ("uninformative", "reproduced",
                                                                  "reproduced")  # fmt: skip
    assert "every requested row" in steady.uninformative_because
    assert (steady.earlier[0].verdict, steady.earlier[0].reason) == ("reproduced", NULL_MODEL)
    for kept in ("finding4.outputting_values_near_one", "accuracy.gru", "table1.counting_k1"):
        assert before[kept].verdict != "not reproduced", kept
        assert judged[kept].verdict == before[kept].verdict, kept
        assert judged[kept].null == "not reproduced", kept
        assert judged[kept].earlier == before[kept].earlier, kept
    for none in ("data.coverage_tokens", "direction.storing_zero_drops",
                 "finding1.one_group_for_every_position"):  # fmt: skip
        assert judged[none].null is None and judged[none] == before[none], none
    del records[("lstm", 0)]["untrained"]
    assert judged_claims(claims, records, scale) == claims


def test_a_time_cap_caps_every_variant_and_a_malformed_one_is_refused(tmp_path, capsys):
    """`--time-cap` replaces the scale's caps for every variant (the paper's setting, stopped by
    early stopping, within a lent machine's hours); without it the paper scale has none; a cap
    not written DD:HH:MM:SS stops the command line in one line that shows the form."""
    from experiments.paper4.reproduce import scale_of
    from experiments.paper4.runs import arguments_of
    from experiments.paper4.scales import SCALES, VARIANTS, command_line

    paper = SCALES["paper"]
    args = command_line().parse_args(["--scale", "paper", "--time-cap", "00:02:30:00"])
    capped = scale_of(args, paper)
    assert capped.max_time == dict.fromkeys(VARIANTS, "00:02:30:00")
    fit = arguments_of("lstm", 1, capped, tmp_path)
    assert fit[fit.index("--trainer.max_time") + 1] == "00:02:30:00"
    assert "--trainer.max_time" not in arguments_of("lstm", 1, paper, tmp_path)
    assert scale_of(command_line().parse_args(["--scale", "paper"]), paper) == paper
    for wrong in ("2:30", "00:02:30", "00:00:00:00", "0a:02:30:00"):
        with pytest.raises(SystemExit):
            command_line().parse_args(["--time-cap", wrong])
        assert "is not a time cap: write days, hours, minutes and seconds as DD:HH:MM:SS" in (
            capsys.readouterr().err
        )
