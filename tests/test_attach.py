"""`probes.attach` on models written as researchers write them (`tests/client_models.py`):
outputs unchanged by attaching, traced gates equal to a hand computation from the weights, an
edit changes exactly what it names, scopes end even on an error, clear errors."""

import pytest
import torch
from torch import nn

from lightning_modules.recurrent import Intervention
from probes.attach import attach
from tests.client_models import PackedEncoder, TutorialSeq2Seq, WordLanguageModel, seeded_double


def lstm_by_hand(module: nn.LSTM, layer: int, inputs: torch.Tensor, h, c):
    """Layer `layer` of `module` over `inputs` `[time, batch, features]` by the textbook
    equations, written out here (not the suite's core): every gate per step."""
    w_ih, w_hh = getattr(module, f"weight_ih_l{layer}"), getattr(module, f"weight_hh_l{layer}")
    b = getattr(module, f"bias_ih_l{layer}") + getattr(module, f"bias_hh_l{layer}")
    gates = {name: [] for name in ("input_gate", "forget_gate", "candidate", "output_gate",
                                   "cell", "hidden")}  # fmt: skip
    for x in inputs:
        i, f, g, o = (x @ w_ih.T + h @ w_hh.T + b).chunk(4, -1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        c = f * c + i * g
        h = o * c.tanh()
        for name, value in zip(gates, (i, f, g, o, c, h), strict=True):
            gates[name].append(value)
    return {name: torch.stack(values, 1) for name, values in gates.items()}


def gru_step_by_hand(module: nn.GRU, suffix: str, x, h):
    w_ih, w_hh = getattr(module, "weight_ih" + suffix), getattr(module, "weight_hh" + suffix)
    b_ih, b_hh = getattr(module, "bias_ih" + suffix), getattr(module, "bias_hh" + suffix)
    x_r, x_z, x_n = (x @ w_ih.T + b_ih).chunk(3, -1)
    h_r, h_z, h_n = (h @ w_hh.T + b_hh).chunk(3, -1)
    r, z = (x_r + h_r).sigmoid(), (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return {"reset_gate": r, "update_gate": z, "candidate": n, "hidden": (1 - z) * n + z * h}


def traced_unchanged(model: nn.Module, *inputs):
    """Attach `model` and trace one call on `inputs`, checking that every output of the traced
    call equals the untraced call's up to rounding: the attachment and the trace."""
    untraced = model(*inputs)
    attached = attach(model)
    with attached.trace() as trace:
        traced = model(*inputs)
    torch.testing.assert_close(traced, untraced, rtol=1e-10, atol=1e-12)
    return attached, trace


@pytest.fixture
def language_model():
    return seeded_double(WordLanguageModel, 0), torch.randint(50, (7, 3))


def test_attaching_changes_no_output_and_tracing_matches_torch(language_model):
    model, tokens = language_model
    logits, (h, c) = model(tokens)
    attached = attach(model)
    untraced, state = model(tokens)
    assert torch.equal(untraced, logits) and torch.equal(state[0], h)  # torch's fused kernel
    with attached.trace() as trace:
        traced, (traced_h, traced_c) = model(tokens)
    torch.testing.assert_close(traced, logits, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(traced_c, c, rtol=1e-10, atol=1e-12)
    assert set(trace) == {f"rnn.l{k}.{site}" for k in (0, 1) for site in
                          ("hidden", "cell", "input_gate", "forget_gate", "candidate",
                           "output_gate")}  # fmt: skip
    assert trace["rnn.l1.hidden"].shape == (3, 7, 16)  # [batch, time, units], time-first model
    assert set(attached.sites) == set(trace)
    attached.detach()
    assert "forward" not in vars(model.rnn)


def test_traced_gates_of_both_layers_equal_a_hand_computation(language_model):
    model, tokens = language_model
    attached = attach(model)
    with attached.trace() as trace:
        model(tokens)
    zeros = torch.zeros(3, 16, dtype=torch.double)
    inputs = model.encoder(tokens)
    for layer in (0, 1):
        expected = lstm_by_hand(model.rnn, layer, inputs, zeros, zeros)
        for site, value in expected.items():
            torch.testing.assert_close(trace[f"rnn.l{layer}.{site}"], value, rtol=1e-10,
                                       atol=1e-12, msg=f"rnn.l{layer}.{site}")  # fmt: skip
        inputs = expected["hidden"].transpose(0, 1)  # eval: no dropout between the layers


def test_an_edit_changes_exactly_what_it_names(language_model):
    model, tokens = language_model
    attached = attach(model)
    fused, _ = model(tokens)
    with attached.trace() as before:
        logits, _ = model(tokens)
    edit = Intervention("rnn.l1.cell", units=(3,), steps=(2,), operation="zero")
    with attached.edit([edit]), attached.trace() as after:
        edited, _ = model(tokens)
    assert (after["rnn.l1.cell"][:, 2, 3] == 0).all() and (
        before["rnn.l1.cell"][:, 2, 3] != 0
    ).all()
    # A trace alone runs torch's kernel, an edited layer the core's step loop: what the edit
    # cannot reach is the same up to rounding (layer 0 is the kernel's in both: bit for bit).
    for site in before:
        same = slice(None) if site.startswith("rnn.l0") else slice(0, 2)  # layer 0; steps < 2
        torch.testing.assert_close(after[site][:, same], before[site][:, same], rtol=1e-10,
                                   atol=1e-12, msg=site)  # fmt: skip
        if site.startswith("rnn.l0"):
            assert torch.equal(after[site], before[site]), site
    torch.testing.assert_close(edited[:2], logits[:2], rtol=1e-10, atol=1e-12)
    assert not torch.allclose(edited[2:], logits[2:])
    assert torch.equal(model(tokens)[0], fused)  # the edit ended with its block: torch's kernel


def test_a_step_by_step_decoder_traces_one_time_axis_and_edits_by_its_steps():
    model = seeded_double(TutorialSeq2Seq, 1)
    source = torch.randint(20, (4, 5))
    attached, trace = traced_unchanged(model, source)
    assert trace["encoder.gru.hidden"].shape == (4, 5, 16)
    assert trace["decoder.gru.hidden"].shape == (4, 6, 16)  # six calls of one step each
    hidden = trace["encoder.gru.hidden"][:, -1]
    token = torch.zeros(4, dtype=torch.long)
    for step in range(6):  # the decoder's gates, step by step, by hand
        x = torch.relu(model.decoder.embedding(token))
        expected = gru_step_by_hand(model.decoder.gru, "_l0", x, hidden)
        for site, value in expected.items():
            torch.testing.assert_close(trace[f"decoder.gru.{site}"][:, step], value, rtol=1e-10,
                                       atol=1e-12, msg=f"{site} at {step}")  # fmt: skip
        hidden = expected["hidden"]
        token = model.decoder.out(hidden).argmax(-1)
    edit = Intervention("decoder.gru.update_gate", steps=(3,), operation="set", value=1.0)
    with attached.edit([edit]), attached.trace() as after:
        model(source)
    gate = after["decoder.gru.update_gate"]
    assert (gate[:, 3] == 1).all() and torch.equal(
        gate[:, :3], trace["decoder.gru.update_gate"][:, :3]
    )
    # z = 1 keeps the old state: the hidden state does not move at step 3
    assert torch.equal(after["decoder.gru.hidden"][:, 3], after["decoder.gru.hidden"][:, 2])


def test_a_bidirectional_packed_encoder_with_an_initial_state():
    model = seeded_double(PackedEncoder, 2)
    tokens = torch.randint(1, 30, (6, 4))
    lengths = torch.tensor([3, 6, 2, 5])
    initial = torch.randn(4, 4, 8, dtype=torch.double)
    _, trace = traced_unchanged(model, tokens, lengths, initial)
    hidden = trace["rnn.l0.hidden"]
    assert hidden.shape == (4, 6, 16)
    for row, length in enumerate(lengths.tolist()):
        assert (hidden[row, length:] == 0).all()  # padding, as torch pads outputs
    # the backward direction (units 8-15) starts at each sequence's last token, from its state
    embedded = model.embeddings(tokens).transpose(0, 1)
    for row, length in enumerate(lengths.tolist()):
        x = embedded[row, length - 1 : length]
        expected = gru_step_by_hand(model.rnn, "_l0_reverse", x, initial[1, row : row + 1])
        for site, value in expected.items():
            torch.testing.assert_close(trace[f"rnn.l0.{site}"][row, length - 1, 8:], value[0])


def test_dropout_between_layers_runs_in_training_only(language_model):
    model, tokens = language_model
    attached = attach(model)
    model.train()
    model.drop.p = 0.0  # only the LSTM's own dropout between its layers is left
    with attached.trace() as trace:
        model(tokens)
    layer_input = trace["rnn.l0.hidden"].transpose(0, 1)
    zeros = torch.zeros(3, 16, dtype=torch.double)
    undropped = lstm_by_hand(model.rnn, 1, layer_input, zeros, zeros)["hidden"]
    assert not torch.allclose(trace["rnn.l1.hidden"], undropped)  # layer 1 saw dropped inputs
    model.eval()
    with attached.trace() as trace:
        model(tokens)
    torch.testing.assert_close(
        trace["rnn.l1.hidden"],
        lstm_by_hand(model.rnn, 1, trace["rnn.l0.hidden"].transpose(0, 1), zeros, zeros)["hidden"],
    )


def test_scopes_end_on_an_error_and_errors_name_the_problem(language_model):
    model, tokens = language_model
    attached = attach(model)
    logits, _ = model(tokens)
    with (
        pytest.raises(RuntimeError, match="boom"),
        attached.edit([Intervention("rnn.l0.hidden", operation="zero")]),
        attached.trace(),
    ):
        raise RuntimeError("boom")
    assert torch.equal(model(tokens)[0], logits)
    with pytest.raises(ValueError, match="names no attached layer; the layers are rnn.l0, rnn.l1"):
        attached.edit([Intervention("rnn.hidden")]).__enter__()
    with pytest.raises(ValueError, match="rnn.l0 has the sites hidden, cell, input_gate"):
        attached.edit([Intervention("rnn.l0.update_gate")]).__enter__()
    assert attach(model) is attached  # attached already: its attachment back
    with pytest.raises(TypeError, match=r"cell \(torch.nn.modules.rnn.GRUCell\) cannot be traced"):
        attach(nn.ModuleDict({"cell": nn.GRUCell(3, 4)}))
    with pytest.raises(TypeError, match="Linear holds no layer to trace"):
        attach(nn.Linear(2, 2))
    with pytest.raises(TypeError, match="proj_size=2"):
        attach(nn.LSTM(3, 4, proj_size=2))


def test_traces_hold_no_autograd_graph(language_model):
    model, tokens = language_model
    with attach(model) as attached, attached.trace() as trace:
        logits, _ = model(tokens)
    assert logits.requires_grad  # the model's outputs keep theirs
    assert not any(value.requires_grad for value in trace.values())


def test_a_module_it_cannot_trace_is_skipped_with_a_warning_naming_it():
    model = nn.ModuleDict({"words": nn.RNN(3, 4), "rnn": nn.GRU(3, 4, batch_first=True)})
    with pytest.warns(UserWarning, match=r"skipped words \(torch.nn.modules.rnn.RNN\) cannot"):
        attached = attach(model)
    inputs = torch.randn(2, 5, 3)
    with attached.trace() as trace:
        outputs, _ = model["rnn"](inputs)
    assert set(attached.modules) == {"rnn"} and torch.equal(trace["rnn.hidden"], outputs.detach())


@pytest.mark.parametrize("layers", [1, 2])
def test_a_bare_torch_lstm_attached_names_its_sites_after_its_class(layers):
    """A researcher's model that is itself an `nn.LSTM` (path ""): sites `lstm.hidden` or
    `lstm.l1.hidden`, never `.hidden`; the trace equals the textbook equations and an edit by
    that name reaches the layer."""
    torch.manual_seed(0)
    module = nn.LSTM(3, 4, num_layers=layers).double()
    inputs = torch.randn(5, 2, 3, dtype=torch.double)
    attached = attach(module)
    layer = "lstm" if layers == 1 else "lstm.l1"
    assert f"{layer}.hidden" in attached.sites
    assert not any(site.startswith(".") for site in attached.sites)
    with attached.trace() as trace:
        module(inputs)
    assert set(trace) == set(attached.sites)
    assert set(trace.valid) == ({"lstm"} if layers == 1 else {"lstm.l0", "lstm.l1"})
    below = inputs if layers == 1 else trace["lstm.l0.hidden"].transpose(0, 1)
    zeros = torch.zeros(2, 4, dtype=torch.double)
    by_hand = lstm_by_hand(module, layers - 1, below, zeros, zeros)
    torch.testing.assert_close(trace[f"{layer}.forget_gate"], by_hand["forget_gate"])
    with attached.edit([Intervention(f"{layer}.hidden", units=(1,), operation="zero")]):
        with attached.trace() as edited:
            module(inputs)
    assert (edited[f"{layer}.hidden"][..., 1] == 0).all()
