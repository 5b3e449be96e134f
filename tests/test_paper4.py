"""Paper 4's token-positioning metric, random decoder inputs, analysis rows, and the whole
pipeline at smoke scale (`python -m experiments.paper4 --scale smoke`)."""

import json
import shutil
import subprocess
import sys

import pytest
import torch

from datamodules.token_positioning import EOS, TokenPositioningDataModule
from experiments.report import VERDICTS
from lightning_modules.callbacks import TokenPositioningAccuracy
from lightning_modules.seq2seq import Seq2Seq
from tests.smoke import assert_shards_merge, smoke_command, smoke_reproduction


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
def smoke(tmp_path_factory):
    """One smoke reproduction on one machine, shared by the tests: its folder, output, claims."""
    folder = tmp_path_factory.mktemp("paper4_smoke")
    output, claims = smoke_reproduction(4, folder)
    return folder, output, claims


def test_smoke_reproduction_writes_report_claims_and_figures(smoke):
    tmp_path, output, claims = smoke
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
    assert "`smoke`" in report and "Shakespeare" in report
    # both readings of section 2's objective, each as its run's config.yaml records it
    assert "| gru | own outputs | 2 |" in report
    assert "| gru_teacher_forced | teacher forcing | 1 |" in report
    assert "### What differs from the paper's setting" in report
    analysis = json.loads((tmp_path / "runs" / "paper4" / "gru" / "seed=0" / "analysis.json")
                          .read_text())  # fmt: skip
    assert len(analysis["tokens"]) == 8
    # every run's measurements beside the report, and the report rebuilt from them alone
    kept = tmp_path / "report" / "runs"
    measurements = sorted(p.relative_to(kept).as_posix() for p in kept.rglob("measurements.json"))
    assert measurements == [f"paper4/{v}/seed={s}/measurements.json" for v, s in
                            [("gru", 0), ("gru", 1), ("gru_teacher_forced", 0), ("lstm", 0),
                             ("two_signals", 0)]]  # fmt: skip
    record = json.loads((kept / measurements[0]).read_text())
    assert record["analysis"] == analysis and "--run.root" not in record["command"]
    shutil.rmtree(tmp_path / "runs")  # no checkpoint, no metrics.csv: the measurements only
    done = subprocess.run(
        [sys.executable, "-m", "experiments.paper4", "--scale", "smoke", "--runs", str(kept),
         "--reuse-runs", "--out", str(tmp_path / "rebuilt")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rebuilt = (tmp_path / "rebuilt" / "results.json").read_text()
    assert rebuilt == (tmp_path / "report" / "results.json").read_text()
    assert (
        "5 of the 5 were kept from an earlier invocation"
        in (tmp_path / "rebuilt" / "report.md").read_text()
    )


def reproduction(*options: str) -> subprocess.CompletedProcess:
    return smoke_command(4, *options)


def test_shards_trained_apart_merge_into_the_one_machine_report(smoke, tmp_path):
    """`--shard 1/2` and `--shard 2/2` in two run roots (two machines) train each run once and
    write no report; `--merge` of both writes the report of one machine, and without one of them
    stops with one line naming a missing run, before writing a report."""
    single, _, _ = smoke
    outputs = []
    for index in (1, 2):
        done = reproduction("--shard", f"{index}/2", "--runs", tmp_path / f"shard{index}",
                            "--out", tmp_path / f"report{index}")  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert not (tmp_path / f"report{index}").exists()
        assert "--merge <each shard's run root>" in done.stdout
        outputs.append(done.stdout)
    trained = [
        sorted(p.parent.relative_to(tmp_path / f"shard{i}").as_posix()
               for p in (tmp_path / f"shard{i}").rglob("measurements.json"))
        for i in (1, 2)
    ]  # fmt: skip
    assert trained == [["paper4/gru/seed=0", "paper4/gru_teacher_forced/seed=0",
                        "paper4/lstm/seed=0"],
                       ["paper4/gru/seed=1", "paper4/two_signals/seed=0"]]  # fmt: skip
    assert "5 tasks" not in outputs[0] and "3 tasks, 2 at a time; 0 done before" in outputs[0]
    assert_shards_merge(4, tmp_path, single, "paper4/gru/seed=1", 5)


def test_the_chance_that_random_function_groups_share_a_unit():
    """Four groups of one unit among four: disjoint with probability 1 * 3/4 * 2/4 * 1/4; groups
    of a quarter of 128 units share one almost surely, so `functions.several_at_once` cannot
    fail there (issue 29)."""
    from experiments.paper4.claims import _chance_of_a_shared_unit

    one_each = {"storing": [0], "counting": [1], "triggering": [2], "outputting": [3]}
    assert _chance_of_a_shared_unit(one_each, 4) == pytest.approx(1 - 3 / 32)
    quarter = {name: list(range(32)) for name in one_each}
    assert _chance_of_a_shared_unit(quarter, 128) > 0.999
    assert _chance_of_a_shared_unit({name: [] for name in one_each}, 128) == 0.0
