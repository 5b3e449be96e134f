"""`probes.attach` and `record_run` on the hard cases (A-G below), on models written
as researchers write them (`tests/client_models.py`), each against a known answer: a forward
written out by hand, the untraced forward under the same seed, or the batch as it was given;
and contextual decomposition through the tutorial's attention decoder, complete."""

import copy

import pandas as pd
import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from lightning_modules.recurrent import Intervention
from probes.activations import gate_saturation
from probes.attach import attach
from probes.command.cli import main
from probes.command.record import record_run
from probes.contextual_decomposition import decompose_attention_decoder, decompose_recurrent
from storage.run_folder import RunFolder
from tests.client_models import (
    AttentionSeq2Seq,
    ContainerGRUs,
    EncoderDecoderGRUs,
    LSTMClassifier,
    SiameseLSTM,
    WordLanguageModel,
    seeded_double,
)

EXACT = {"rtol": 1e-10, "atol": 1e-12}


def lstm_layer_by_hand(module: nn.LSTM, layer: int, inputs, edit=None):
    """Layer `layer` of `module` over batch-first `inputs` from zeros by the textbook equations,
    with `edit = (site, unit, step, value)` setting one unit of `cell` or `hidden` at one step:
    the hidden states `[batch, time, hidden]`."""
    w_ih, w_hh = getattr(module, f"weight_ih_l{layer}"), getattr(module, f"weight_hh_l{layer}")
    bias = getattr(module, f"bias_ih_l{layer}") + getattr(module, f"bias_hh_l{layer}")
    h = c = inputs.new_zeros(inputs.shape[0], module.hidden_size)
    hidden = []
    for step in range(inputs.shape[1]):
        i, f, g, o = (inputs[:, step] @ w_ih.T + h @ w_hh.T + bias).chunk(4, -1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        if edit is not None and edit[0] == "cell" and edit[2] == step:
            c = c.clone()
            c[:, edit[1]] = edit[3]
        h = o.sigmoid() * c.tanh()
        if edit is not None and edit[0] == "hidden" and edit[2] == step:
            h = h.clone()
            h[:, edit[1]] = edit[3]
        hidden.append(h)
    return torch.stack(hidden, 1)


def classifier_by_hand(model: LSTMClassifier, tokens, edit_layer: int, edit):
    """`LSTMClassifier` in evaluation mode, written out, with `edit` in layer `edit_layer`."""
    values = model.embedding(tokens)
    for layer in range(model.lstm.num_layers):
        values = lstm_layer_by_hand(
            model.lstm, layer, values, edit if layer == edit_layer else None
        )
    return model.classify(values[:, -1])


def test_a_step_edit_applies_to_every_batch_of_its_block():  # row A
    model = seeded_double(LSTMClassifier, 3)
    batches = [torch.randint(30, (4, 6)), torch.randint(30, (3, 5)), torch.randint(30, (4, 6))]
    attached = attach(model)
    edit = Intervention("lstm.l1.cell", units=(3,), steps=(2,), operation="zero")
    with attached.edit([edit]):
        edited = [model(tokens) for tokens in batches]
    for tokens, scores in zip(batches, edited, strict=True):
        expected = classifier_by_hand(model, tokens, 1, ("cell", 3, 2, 0.0))
        torch.testing.assert_close(scores, expected, **EXACT)
        assert not torch.allclose(scores, model(tokens))
    with attached.edit([edit], sequence=1):  # one call named: the second batch alone
        named = [model(tokens) for tokens in batches]
    torch.testing.assert_close(named[1], edited[1], **EXACT)
    torch.testing.assert_close(named[0], model(batches[0]), **EXACT)
    torch.testing.assert_close(named[2], model(batches[2]), **EXACT)


def test_modules_named_encoder_and_decoder_are_masked_by_their_own_steps(tmp_path):  # row B
    model = seeded_double(EncoderDecoderGRUs, 4)
    lengths = torch.tensor([5, 2, 4, 3])
    batch = {"source": torch.randint(1, 12, (4, 5)), "lengths": lengths,
             "target": torch.randint(0, 3, (4, 6))}  # fmt: skip
    assert (batch["target"] == 0).any()  # token 0 is a word of this model, not padding
    run = tmp_path / "mine" / "seed=0"
    with attach(model) as attached:
        record_run(run, attached, [batch], lambda b: model(b["source"], b["lengths"], b["target"]))
    gates = ["encoder.update_gate", "decoder.update_gate"]
    out = tmp_path / "saturation"
    assert main(["gate-saturation", "--runs", str(run), "--splits", "data", "--out", str(out),
                 "--low", "0.5", "--high", "0.5", "--gates", *gates]) == 0  # fmt: skip
    table = pd.read_csv(out / "gate-saturation.csv")
    trace = RunFolder(run).trace("data")
    masks = {"encoder.update_gate": torch.arange(5)[None] < lengths[:, None],
             "decoder.update_gate": torch.ones(4, 6, dtype=torch.bool)}  # fmt: skip
    for site, mask in masks.items():
        expected = gate_saturation(trace[site], mask, 0.5, 0.5)
        rows = table[table["site"] == site].sort_values("unit")
        torch.testing.assert_close(torch.tensor(rows["left"].values), expected.left)
        torch.testing.assert_close(torch.tensor(rows["right"].values), expected.right)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_traced_training_step_equals_the_untraced_one(dtype):  # row C
    torch.manual_seed(5)
    model = LSTMClassifier().to(dtype).train()
    tokens = torch.randint(30, (4, 6))
    torch.manual_seed(6)
    reference = model(tokens)
    reference.sum().backward()
    gradients = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad()
    attached = attach(model)
    with attached.trace() as trace:
        torch.manual_seed(6)
        traced = model(tokens)
    traced.sum().backward()
    tolerance = {"rtol": 1e-5, "atol": 1e-6} if dtype == torch.float32 else EXACT
    torch.testing.assert_close(traced, reference, **tolerance)
    for name, parameter in model.named_parameters():
        torch.testing.assert_close(parameter.grad, gradients[name], **tolerance, msg=name)
    assert trace["lstm.l2.hidden"].shape == (4, 6, 10)


@pytest.mark.parametrize(
    "module",
    [nn.LSTM(5, 8, 2, dropout=0.5), nn.LSTM(5, 8, 2, dropout=0.5, batch_first=True),
     nn.GRU(5, 8, 2, dropout=0.5, bidirectional=True)],
)  # fmt: skip
def test_a_trace_leaves_torchs_outputs_and_gradients_bit_for_bit(module):  # row C, float32
    """A trace without edits runs torch's own kernel (the gates computed from its outputs), so
    the traced training step's outputs, final state and gradients are the untraced ones exactly,
    in float32 too, where a step loop of its own would differ in the last bits."""
    torch.manual_seed(5)
    module.train()
    inputs = torch.randn(4, 6, 5)

    def training_step():
        module.zero_grad()
        torch.manual_seed(6)
        outputs, final = module(inputs)
        final = final if isinstance(final, tuple) else (final,)
        (outputs.square().sum() + sum(part.sum() for part in final)).backward()
        return [outputs, *final, *(parameter.grad for parameter in module.parameters())]

    reference = [value.detach().clone() for value in training_step()]
    with attach(module) as attached, attached.trace() as trace:
        traced = training_step()
    for value, expected in zip(traced, reference, strict=True):
        assert torch.equal(value, expected)
    assert trace[f"{type(module).__name__.lower()}.l1.hidden"].shape[-1] == 8 * (
        2 if module.bidirectional else 1
    )


def test_a_traced_packed_training_step_draws_torchs_dropout_masks():  # row C, packed
    torch.manual_seed(7)
    model = nn.ModuleDict({"rnn": nn.GRU(5, 4, 3, dropout=0.5, bidirectional=True)}).double()
    packed = pack_padded_sequence(torch.randn(6, 3, 5, dtype=torch.double),
                                  torch.tensor([6, 2, 4]), enforce_sorted=False)  # fmt: skip
    torch.manual_seed(8)
    reference, final = model["rnn"](packed)
    attached = attach(model)
    with attached.trace():
        torch.manual_seed(8)
        traced, traced_final = model["rnn"](packed)
    torch.testing.assert_close(traced.data, reference.data, **EXACT)
    torch.testing.assert_close(traced_final, final, **EXACT)


def test_a_traced_training_step_with_fused_dropout_off_the_cpu_is_refused_in_one_line():  # C
    """Off the CPU (a GPU's cuDNN) dropout between layers is drawn by a fused kernel no traced
    step can match, so tracing a training step there is refused; the refusal looks only at the
    inputs' device, so torch's `meta` device stands in for a GPU on a machine without one."""
    model = LSTMClassifier().to("meta").train()
    attached = attach(model)
    with pytest.raises(RuntimeError, match=r"lstm .*dropout.*on meta.*model\.eval\(\)"):
        with attached.trace():
            model(torch.randint(30, (4, 6), device="meta"))


def test_every_call_of_a_module_is_a_sequence_of_its_own():  # row D
    model = seeded_double(SiameseLSTM, 9)
    first, second = (torch.randn(3, time, 5, dtype=torch.double) for time in (4, 7))
    reference = model(first, second)
    attached = attach(model)
    with attached.trace() as trace:
        score = model(first, second)
    torch.testing.assert_close(score, reference, **EXACT)
    branches = trace.sequences["lstm.hidden"]
    torch.testing.assert_close(branches[0], lstm_layer_by_hand(model.lstm, 0, first), **EXACT)
    torch.testing.assert_close(branches[1], lstm_layer_by_hand(model.lstm, 0, second), **EXACT)
    assert trace["lstm.hidden"].shape == (6, 7, 6)  # the sequences' rows, padded in time
    assert trace.valid["lstm"].sum() == 3 * 4 + 3 * 7 and not trace.valid["lstm"][:3, 4:].any()
    edit = Intervention("lstm.hidden", units=(1,), steps=(3,), operation="set", value=2.0)
    hand = ("hidden", 1, 3, 2.0)
    with attached.edit([edit]):  # every call of the block
        both = model(first, second)
    expected = [lstm_layer_by_hand(model.lstm, 0, x, hand)[:, -1] for x in (first, second)]
    torch.testing.assert_close(both, model.compare((expected[0] - expected[1]).abs()), **EXACT)
    with attached.edit([edit], sequence=1):  # the second call alone
        one = model(first, second)
    expected[0] = lstm_layer_by_hand(model.lstm, 0, first)[:, -1]
    torch.testing.assert_close(one, model.compare((expected[0] - expected[1]).abs()), **EXACT)


def test_a_step_by_step_attention_decoder_is_one_sequence():  # row D: continued calls
    model = seeded_double(AttentionSeq2Seq, 10)
    tokens = torch.randint(20, (3, 4))
    reference, _ = model(tokens)
    attached = attach(model)
    with attached.trace() as trace:
        traced, _ = model(tokens)
        model(tokens[:2])  # a second batch: new sequences of both modules
    torch.testing.assert_close(traced, reference, **EXACT)
    assert [s.shape for s in trace.sequences["decoder.gru.hidden"]] == [(3, 5, 12), (2, 5, 12)]
    assert [s.shape for s in trace.sequences["encoder.gru.hidden"]] == [(3, 4, 12), (2, 4, 12)]


def test_edits_check_their_units_and_steps_against_every_direction():  # row E
    model = nn.ModuleDict({"rnn": nn.GRU(4, 3, 2, batch_first=True, bidirectional=True)})
    attached = attach(model.double())
    for units, problem in (((6,), "unit 6"), ((-1,), "unit -1")):
        with pytest.raises(ValueError, match=f"{problem}.*rnn.l1 has units 0-5"):
            attached.edit([Intervention("rnn.l1.hidden", units=units)]).__enter__()
    with pytest.raises(ValueError, match="step -2.*steps count from 0"):
        attached.edit([Intervention("rnn.l0.hidden", steps=(-2,))]).__enter__()
    inputs = torch.randn(2, 6, 4, dtype=torch.double)
    with attached.edit([Intervention("rnn.l1.hidden", units=(5,), operation="zero")]):
        outputs, _ = model["rnn"](inputs)  # unit 5: the backward direction's unit 2
    assert (outputs[..., 5] == 0).all() and (outputs[..., :5] != 0).all()
    far = Intervention("rnn.l1.hidden", units=(5,), steps=(6,), operation="zero")
    with pytest.warns(
        UserWarning, match=r"step\(s\) 6 changed nothing.*longest sequence of rnn.l1 .* 6 steps"
    ):
        with attached.edit([far]):
            model["rnn"](inputs)


def test_a_copied_attached_model_has_its_own_attachment():  # row F
    model = seeded_double(ContainerGRUs, 11)
    inputs = torch.randn(2, 5, 4, dtype=torch.double)
    attached = attach(model)
    reference = model(inputs)
    copied_model = copy.deepcopy(model)
    copied = attach(copied_model)  # the copy's attachment, not an error
    assert copied is not attached and copied.model is copied_model and attach(model) is attached
    with copied.trace() as trace:
        torch.testing.assert_close(copied_model(inputs), reference, **EXACT)
    assert set(trace) == set(attached.sites) and "stack.1.l1.update_gate" in trace
    with copied.edit([Intervention("heads.left.hidden", units=(0,), operation="zero")]):
        assert (copied_model(inputs)[..., 0] == 0).all()
    assert torch.equal(model(inputs), reference)
    copied.detach()
    assert not any("forward" in vars(m) for m in copied_model.modules())
    assert all("forward" in vars(m) for m in attached.modules.values())


def test_recording_a_time_first_model_keeps_its_batch_tensors(tmp_path):  # row G
    torch.manual_seed(12)
    model = WordLanguageModel(dropout=0.0).eval()
    tokens = torch.randint(50, (7, 3))  # [time, batch], as docs/own_model.md's example
    batch = {"tokens": tokens, "label": (tokens < 25).long(), "kind": torch.tensor([0, 1, 1])}
    run = tmp_path / "lm" / "seed=0"
    with attach(model) as attached:
        record_run(run, attached, [batch], lambda b: model(b["tokens"]))
    trace = RunFolder(run).trace("data")
    assert torch.equal(trace["batch.tokens"], tokens.T) and torch.equal(trace["batch.kind"],
                                                                         batch["kind"])  # fmt: skip
    assert torch.equal(trace["batch.label"], batch["label"].T)
    assert "batch.label: time on axis 0" in (run / "recorded.txt").read_text()
    out = tmp_path / "groups"
    assert main(["functional-group", "--runs", str(run), "--splits", "data", "--out", str(out),
                 "--targets", "rnn.l1.hidden:batch.label"]) == 0  # fmt: skip


def test_cd_through_an_attention_decoder_sums_to_its_states_and_logits():
    model = seeded_double(AttentionSeq2Seq, 13)
    tokens = torch.randint(20, (3, 4))
    log_probabilities, _ = model(tokens)
    with attach(model) as attached, attached.trace() as trace:
        model(tokens)
    fed_back = torch.cat([torch.zeros(3, 1, dtype=torch.long), log_probabilities.argmax(-1)], 1)
    decoder_inputs = model.decoder.embedding(fed_back[:, :-1])  # SOS, then the greedy tokens

    def decompose(phrase):
        encoder = decompose_recurrent(model.encoder.gru, model.encoder.embedding(tokens), phrase)
        return decompose_attention_decoder(
            model.decoder.gru, decoder_inputs, encoder[0].states,
            lambda query, keys: model.decoder.attention(query, keys)[1], encoder[0].final,
        )  # fmt: skip

    phrase = torch.zeros(3, 4, dtype=torch.bool)
    phrase[:, 1:3] = True
    decoder = decompose(phrase)
    states = decoder.states
    torch.testing.assert_close(states.relevant + states.irrelevant, trace["decoder.gru.hidden"],
                               rtol=1e-10, atol=1e-10)  # fmt: skip
    relevant, irrelevant = states.logits(model.decoder.out)
    torch.testing.assert_close((relevant + irrelevant).log_softmax(-1), log_probabilities,
                               rtol=1e-10, atol=1e-10)  # fmt: skip
    assert relevant.abs().max() > 1e-3  # the phrase reaches the decoder through attention
    nothing = decompose(torch.zeros(3, 4, dtype=torch.bool)).states
    assert (nothing.relevant == 0).all()
    torch.testing.assert_close(nothing.irrelevant, trace["decoder.gru.hidden"], rtol=1e-10,
                               atol=1e-10)  # fmt: skip
