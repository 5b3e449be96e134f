"""Paper 1's ablations (section 5): component substitution through `LoadWeights`, pruning
through `removed_units`, and the reproduction's reuse of finished runs."""

import json
from pathlib import Path

import pytest
import torch

from experiments.cli import main as cli_main
from experiments.engine import fit as fitting
from experiments.paper1.ablations import COMPONENTS, load_weights
from lightning_modules.callbacks import LoadWeights
from lightning_modules.recording import record_split
from lightning_modules.recurrent import Intervention, removal_edits
from lightning_modules.seq2seq import Seq2Seq
from probes.interventions import sequence_accuracy
from tests.fake_fit import ended_fit
from tests.tiny_run import fit, weights

SIZES = {"source_vocab_size": 18, "target_vocab_size": 11, "embedding_size": 4,
         "hidden_size": 8, "decoder_embedding_size": 8, "full_focus": True}  # fmt: skip


def tiny_model(seed: int, **kwargs) -> Seq2Seq:
    torch.manual_seed(seed)
    return Seq2Seq(**SIZES, **kwargs).eval()


def tiny_batches():
    generator = torch.Generator().manual_seed(0)
    source = torch.randint(2, 18, (16, 3), generator=generator)
    target = torch.randint(3, 11, (16, 3), generator=generator)
    lengths = torch.full((16,), 3)
    return [{"source": source, "source_lengths": lengths, "target": target}]


def save(model: Seq2Seq, path: Path) -> Path:
    torch.save({"state_dict": model.state_dict()}, path)
    return path


def test_substituting_a_component_by_itself_leaves_the_model_unchanged(tmp_path):
    trained = tiny_model(0)
    checkpoint = save(trained, tmp_path / "trained.ckpt")
    before = record_split(trained, tiny_batches())["prediction"]
    for component, parameters in COMPONENTS.items():
        receiver = tiny_model(1)
        LoadWeights(str(checkpoint)).setup(None, receiver, "fit")
        LoadWeights(str(checkpoint), parameters, freeze=True).setup(None, receiver, "fit")
        assert torch.equal(record_split(receiver, tiny_batches())["prediction"], before), component
        assert sequence_accuracy(receiver, tiny_batches()) == sequence_accuracy(
            trained, tiny_batches()
        )
        frozen = {n for n, p in receiver.named_parameters() if not p.requires_grad}
        assert frozen and all(any(n == p or n.startswith(p + ".") for p in parameters)
                              for n in frozen), component  # fmt: skip


def test_substitution_takes_exactly_the_component_from_the_donor(tmp_path):
    own, donor = tiny_model(0), tiny_model(2)
    receiver = tiny_model(1)
    LoadWeights(str(save(own, tmp_path / "own.ckpt"))).setup(None, receiver, "fit")
    parameters = COMPONENTS["Decoder W_ih"]
    LoadWeights(str(save(donor, tmp_path / "donor.ckpt")), parameters, True).setup(
        None, receiver, "fit"
    )
    for name, value in receiver.state_dict().items():
        source = donor if name in parameters else own
        assert torch.equal(value, source.state_dict()[name]), name
    optimised = {id(p) for group in receiver.configure_optimizers().param_groups
                 for p in group["params"]}  # fmt: skip
    assert id(receiver.decoder.weight_ih_l0) not in optimised
    assert id(receiver.decoder.weight_hh_l0) in optimised


def test_load_weights_bad_input_is_one_clear_error(tmp_path):
    checkpoint = save(tiny_model(0), tmp_path / "model.ckpt")
    with pytest.raises(ValueError, match="'encoder.nothing' names no parameter"):
        LoadWeights(str(checkpoint), ["encoder.nothing"]).setup(None, tiny_model(1), "fit")
    wider = Seq2Seq(**{**SIZES, "hidden_size": 16, "decoder_embedding_size": 16})
    with pytest.raises(ValueError, match="use a checkpoint of the same architecture"):
        LoadWeights(str(checkpoint), ["encoder"]).setup(None, wider, "fit")
    no_attention = Seq2Seq(**{**SIZES, "attention": "none", "full_focus": False})
    torch.save({"state_dict": no_attention.state_dict()}, tmp_path / "other.ckpt")
    with pytest.raises(ValueError, match="checkpoint of another model"):
        LoadWeights(str(tmp_path / "other.ckpt")).setup(None, tiny_model(1), "fit")


def test_frozen_component_stays_the_donors_through_a_fit(tmp_path):
    donor = fit(tmp_path, "donor")
    best = donor / "checkpoints" / "best.ckpt"
    run = fit(tmp_path, "receiver", load_weights(best, ["encoder"], freeze=True),
              "--trainer.max_epochs", "1")  # fmt: skip
    trained, given = weights(run), weights(donor, "best.ckpt")
    for name in trained:
        same = torch.equal(trained[name], given[name])
        assert same == name.startswith("encoder."), name


def test_removed_units_are_zero_everywhere_and_equal_a_zeroing_intervention():
    removed = {"encoder.hidden": [1, 5], "decoder.hidden": [0, 7]}
    pruned = tiny_model(0, removed_units=removed)
    full = tiny_model(0)
    traced = record_split(pruned, tiny_batches())
    assert traced["encoder.hidden"][..., [1, 5]].abs().max() == 0
    assert traced["decoder.hidden"][..., [0, 7]].abs().max() == 0
    assert traced["decoder.hidden"][..., 1].abs().max() > 0
    with full.intervene(removal_edits(removed)):
        edited = record_split(full, tiny_batches())
    for key in traced:
        assert torch.equal(traced[key], edited[key]), key
    assert sequence_accuracy(full, tiny_batches(), removal_edits(removed)) == sequence_accuracy(
        pruned, tiny_batches()
    )
    assert full._edits == ()  # the block's edits are gone afterwards
    assert pruned._edits == (Intervention("encoder.hidden", (1, 5), None, "zero"),
                             Intervention("decoder.hidden", (0, 7), None, "zero"))  # fmt: skip


def test_zeroed_units_act_as_removed_until_training_reaches_them_through_the_bridge():
    """Zeroing a unit's every weight (`ZeroUnits`) gives the masked model's outputs: a zeroed
    encoder unit stays at 0, a zeroed decoder unit starts from the encoder's last state and halves
    at every step, read by no layer. The decoder's start state is the encoder's (the bridge, which
    has no weight to zero), so training reaches a zeroed unit whose twin of the same index is
    kept: encoder unit 1 (decoder unit 1 kept) gets a gradient in its candidate rows, the output
    layer's column of decoder unit 0 (encoder unit 0 kept) gets one; encoder unit 5 and decoder
    unit 5, both zeroed, get none."""
    from lightning_modules.callbacks import ZeroUnits

    removed = {"encoder.hidden": [1, 5], "decoder.hidden": [0, 5]}
    zeroed, masked = tiny_model(0), tiny_model(0, removed_units=removed)
    ZeroUnits(removed).setup(None, zeroed, "fit")
    traced = record_split(zeroed, tiny_batches())
    assert traced["encoder.hidden"][..., [1, 5]].abs().max() == 0
    start = traced["encoder.hidden"][:, -1, [0, 5]]  # every source is 3 tokens long
    steps = traced["decoder.hidden"].shape[1]
    halving = 0.5 ** torch.arange(1, steps + 1, dtype=torch.float32)
    torch.testing.assert_close(traced["decoder.hidden"][..., [0, 5]],
                               start[:, None, :] * halving[None, :, None])  # fmt: skip
    assert start[:, 0].abs().min() > 0 and start[:, 1].abs().max() == 0
    assert torch.equal(traced["prediction"], record_split(masked, tiny_batches())["prediction"])
    batch = tiny_batches()[0]
    logits, _ = zeroed(batch["source"], batch["source_lengths"], steps=batch["target"].shape[1])
    torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch["target"].flatten()).backward()
    rows = zeroed.encoder.weight_ih_l0.grad.view(3, 8, -1).abs().amax(-1)  # [gate, unit]
    assert rows[:, 5].max() == 0 and rows[:2, 1].max() == 0 and rows[2, 1] > 0
    assert zeroed.attention.key_projection.weight.grad[:, [1, 5]].abs().max() == 0
    output = zeroed.output.weight.grad.abs().amax(0)
    assert output[0] > 0 and output[5] == 0
    with pytest.raises(ValueError, match="outside 0..7"):
        ZeroUnits({"decoder.hidden": [8]}).setup(None, tiny_model(0), "fit")
    with pytest.raises(ValueError, match="paper 1's model only"):
        plain = Seq2Seq(**{**SIZES, "full_focus": False}, attention="none")
        ZeroUnits(removed).setup(None, plain, "fit")


def test_bad_removed_units_is_one_clear_cli_error(tmp_path, capsys):
    config = Path(__file__).parent.parent / "experiments" / "configs" / "paper1" / "baseline.yaml"
    for value, message in (({"encoder.bogus": [1]}, "unknown site 'encoder.bogus'"),
                           ({"decoder.hidden": [512]}, "units [512] outside 0..511")):  # fmt: skip
        with pytest.raises(SystemExit) as stop:
            cli_main(["fit", "--config", str(config), "--run.root", str(tmp_path),
                      "--data.init_args.data_dir", "null",
                      "--model.removed_units", json.dumps(value)])  # fmt: skip
        assert stop.value.code == 2
        assert message in capsys.readouterr().err


def test_runner_reuses_only_a_finished_run_of_the_same_command(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(fitting, "WarmPopen", ended_fit(0, calls))
    run = tmp_path / "seed=1"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "best.ckpt").write_bytes(b"")
    (run / "metrics.csv").write_text("epoch,test/new_compositions/seq_acc\n0,0.5\n")
    (run / "command.txt").write_text("\n".join(["-m", "experiments", "fit", "--a", "1"]))
    assert fitting.fit(run, ["--a", "1"], reuse=True) is False and calls == []
    assert fitting.fit(run, ["--a", "2"], reuse=True) is True and len(calls) == 1
    assert not (run / "metrics.csv").exists()  # trained again from an empty folder
    assert (run / "command.txt").read_text().endswith("--a\n2")
    assert fitting.fit(run, ["--a", "2"], reuse=True) is True  # no test metrics: not finished
