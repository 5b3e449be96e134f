"""The probes on a model written without the suite (`tests/client_models.py`): its traces
recorded into a run folder that `python -m probes` reads, planted units found there, and
integrated gradients at a site with a known answer."""

import pandas as pd
import pytest
import torch

from probes.attach import attach
from probes.command.cli import main
from probes.command.record import record_run
from probes.diagnostic import labelled_steps
from probes.neuron_functions import svm_rfe_candidates
from probes.own_model import site_integrated_gradients
from storage.run_folder import RunFolder
from tests.client_models import WordLanguageModel

HIDDEN = 16


@pytest.fixture(scope="module")
def planted():
    """The word-language-model LSTM with planted units in layer 0: the forget gate of unit 2 is
    always open and that of unit 5 always shut; unit 0 alone reads embedding feature 0, which
    tells tokens < 25 (+3) from the rest (-3), and forgets everything else (no recurrent
    weights, forget gate shut), so "is the current token < 25" lives in unit 0 alone."""
    torch.manual_seed(0)
    model = WordLanguageModel(hidden=HIDDEN, dropout=0.0).eval()
    with torch.no_grad():
        model.encoder.weight[:, 1:] *= 0.1
        model.encoder.weight[:, 0] = torch.where(torch.arange(50) < 25, 3.0, -3.0)
        rnn = model.rnn
        rnn.weight_hh_l0.zero_()
        rnn.weight_ih_l0[:, 0] = 0.0  # feature 0 reaches no unit ...
        for gate in range(4):  # ... but unit 0, in every gate
            rnn.weight_ih_l0[gate * HIDDEN, 0] = 2.0
        forget = rnn.bias_ih_l0[HIDDEN : 2 * HIDDEN]
        forget[0], forget[2], forget[5] = -50.0, 50.0, -50.0
    generator = torch.Generator().manual_seed(1)
    batches = []
    for length in (9, 7, 9):  # batches of different lengths are padded in the run folder
        tokens = torch.randint(50, (length, 8), generator=generator)
        batches.append({"tokens": tokens, "small": (tokens.T < 25).long()})
    return model, batches


def test_recorded_runs_are_probed_by_the_command(planted, tmp_path):
    model, batches = planted
    with attach(model) as attached:
        record_run(tmp_path / "mine" / "seed=0", attached, batches, lambda b: model(b["tokens"]))
    run = f"{tmp_path}/mine/seed=0"
    assert main(["gate-saturation", "--runs", run, "--splits", "data", "--out", str(tmp_path / "g"),
                 "--gates", "rnn.l0.forget_gate"]) == 0  # fmt: skip
    saturation = pd.read_csv(tmp_path / "g" / "gate-saturation.csv").set_index("unit")
    assert saturation.loc[2, "right"] == 1.0 and saturation.loc[5, "left"] == 1.0
    assert len(saturation) == HIDDEN
    for procedure in ("text", "coauthors"):  # both classifiers find the planted unit
        out = tmp_path / procedure
        target = "rnn.l0.hidden:batch.small"
        assert main(["functional-group", "--runs", run, "--splits", "data", "--out", str(out),
                     "--targets", target, "--procedure", procedure]) == 0  # fmt: skip
        group = pd.read_csv(out / "functional-group.csv").loc[0]
        assert str(group["units"]) == "0", procedure
        assert group["accuracy"] == 1.0


def test_padding_of_shorter_batches_is_not_a_step(planted, tmp_path):
    model, batches = planted
    with attach(model) as attached:
        layout = record_run(tmp_path / "run", attached, batches, lambda b: model(b["tokens"]))
    trace = RunFolder(layout.path).trace("data")
    assert trace["rnn.l1.hidden"].shape == (24, 9, HIDDEN)
    assert trace["valid.rnn.l1"].sum() == 8 * (9 + 7 + 9)
    assert not trace["valid.rnn.l1"][8:16, 7:].any()


def test_integrated_gradients_at_a_site_inside_the_lstm(planted):
    """The logits at the last step are linear in the top layer's last hidden state, so from a
    zero baseline each unit's attribution is exactly its value times its output weight."""
    model, batches = planted
    tokens = batches[0]["tokens"]
    target = 7
    with attach(model) as attached:
        attributions, delta = site_integrated_gradients(
            attached, lambda: model(tokens)[0][-1], "rnn.l1.hidden", steps=(8,), target=target
        )
        with attached.trace() as trace:
            model(tokens)
    expected = trace["rnn.l1.hidden"][:, 8] * model.decoder.weight[target]
    torch.testing.assert_close(attributions[:, 0], expected, rtol=1e-5, atol=1e-6)
    assert delta.abs().max() < 1e-5
    with attach(model) as attached, pytest.raises(ValueError, match="was not traced"):
        site_integrated_gradients(attached, lambda: model(tokens)[0][-1], "rnn.hidden", (8,), 7)


def test_svm_with_rfe_on_a_traced_model_keeps_the_planted_unit(planted):
    """The Python API on a trace: SVM + RFE (paper 4's stage 1) over every valid step."""
    model, batches = planted
    with attach(model) as attached, attached.trace() as trace:
        model(batches[0]["tokens"])
    features, labels = labelled_steps(trace["rnn.l0.hidden"], batches[0]["small"])
    found = svm_rfe_candidates(features, labels, keep=1 / HIDDEN)
    assert found.units.tolist() == [0] and found.accuracy == 1.0


def test_a_recorded_run_gives_its_weights_to_connectivity_and_a_model_probe_one_line(
    planted, tmp_path, capsys
):
    """Connectivity reads the weights `record_run` wrote, any layer of a stack, LSTM gates too;
    a probe that runs a model the suite trained says in one line which probes can run."""
    model, batches = planted
    run = tmp_path / "mine" / "seed=0"
    with attach(model) as attached:
        record_run(run, attached, batches[:1], lambda b: model(b["tokens"]))
    out = tmp_path / "connectivity"
    assert main(["connectivity", "--runs", str(run), "--out", str(out), "--matrices",
                 "rnn.l1.forget_gate.hh:to:0.2", "rnn.l0.input_gate.ih:from:0.3"]) == 0  # fmt: skip
    table = pd.read_csv(out / "connectivity.csv").set_index("matrix")
    forget = model.rnn.weight_hh_l1[HIDDEN : 2 * HIDDEN]
    assert table.loc["rnn.l1.forget_gate.hh:to:0.2", "edges"] == (forget.abs() >= 0.2).sum()
    inputs = model.rnn.weight_ih_l0[:HIDDEN]
    assert table.loc["rnn.l0.input_gate.ih:from:0.3", "edges"] == (inputs.abs() >= 0.3).sum()
    capsys.readouterr()
    assert main(["connectivity", "--runs", str(run), "--out", str(out), "--matrices",
                 "rnn.l0.update_gate.hh:to:0.2"]) == 2  # fmt: skip
    assert "is an LSTM, which has no update_gate: its gates are input_gate, forget_gate" in (
        capsys.readouterr().err
    )
    assert main(["pruning", "--runs", str(run), "--out", str(tmp_path / "pruning")]) == 2
    error = capsys.readouterr().err
    assert "was recorded from a model of your own" in error and "gate-saturation" in error
