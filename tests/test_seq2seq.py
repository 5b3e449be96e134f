"""The seq2seq model: attentive-guidance loss, trace sites, scoped interventions."""

import copy
import math

import pytest
import torch
from torch.utils.data import DataLoader

from datamodules import LookupTableDataModule
from datamodules.sequences import collate_sequences
from lightning_modules.attention import Attention
from lightning_modules.recurrent import SITES, Intervention
from lightning_modules.seq2seq import Seq2Seq, sequence_losses


@pytest.fixture(scope="module")
def data():
    module = LookupTableDataModule(batch_size=8, source_eos=False, target_eos=False)
    module.setup()
    return module


def model_for(data, **kwargs):
    torch.manual_seed(0)
    arguments = dict(embedding_size=4, hidden_size=6, attention="mlp")
    arguments.update(kwargs)
    return Seq2Seq(data.source_vocab_size, data.target_vocab_size, **arguments)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_trace_names_every_site_with_its_shape(data, cell, bidirectional):
    model = model_for(data, cell=cell, bidirectional=bidirectional)
    batch = next(iter(data.split_dataloader("heldout_tables")))
    traced = model.trace(batch)
    batch_size, source_time = batch["source"].shape
    target_time = batch["target"].shape[1]
    width = 6 * (2 if bidirectional else 1)
    for site in SITES[cell]:
        assert traced[f"encoder.{site}"].shape == (batch_size, source_time, width)
        assert traced[f"decoder.{site}"].shape == (batch_size, target_time, width)
    assert traced["attention"].shape == (batch_size, target_time, source_time)
    torch.testing.assert_close(traced["attention"].sum(-1), torch.ones(batch_size, target_time))
    assert traced["prediction"].shape == (batch_size, target_time)


def test_attentive_guidance_loss_is_the_papers_cross_entropy(data):
    """Baan et al. 2.3: L_AG = 1/T sum_t -log a_hat[t, target_t], added with its weight."""
    model = model_for(data, attention_guidance_weight=0.5)
    batch = next(iter(data.split_dataloader("train")))
    model.log = lambda *args, **kwargs: None  # outside a Trainer; values are read back below
    loss = model._shared_step(batch, "train", "train")["loss"]
    _, attention = model(batch["source"], batch["source_lengths"], batch["target"])
    target = batch["attention_target"]
    valid = target != -100
    picked = attention.gather(-1, target.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    expected_attention_loss = -(picked.log() * valid).sum() / valid.sum()
    attention_loss = model.train_loss_parts["attention_loss"].compute()
    token_loss = model.train_loss_parts["token_loss"].compute()
    torch.testing.assert_close(attention_loss, expected_attention_loss)
    torch.testing.assert_close(loss, token_loss + 0.5 * expected_attention_loss)


def test_summed_losses_add_each_steps_batch_mean_as_machine_does(data):
    """loss_over_steps="sum": per decoder step, the mean over the rows that have the step, then
    the sum over steps (i-machine-think's loss.py), for rows of 2 and 3 outputs together."""
    rows = [data.datasets["train"][i] for i in (0, 100, 1, 200)]
    assert sorted(len(r["target"]) for r in rows) == [2, 2, 3, 3]
    batch = collate_sequences(rows)
    model = model_for(data, attention_guidance_weight=1.0, loss_over_steps="sum")
    logits, attention = model(batch["source"], batch["source_lengths"], batch["target"])
    token, guided = 0.0, 0.0
    for step in range(batch["target"].shape[1]):
        token += torch.nn.functional.cross_entropy(
            logits[:, step], batch["target"][:, step], ignore_index=0
        )
        guided += torch.nn.functional.nll_loss(
            attention[:, step].log(), batch["attention_target"][:, step], ignore_index=-100
        )
    summed = sequence_losses(logits, attention, batch, "sum")
    torch.testing.assert_close(summed["token_loss"], token)
    torch.testing.assert_close(summed["attention_loss"], guided)
    mean = sequence_losses(logits, attention, batch)
    assert summed["token_loss"] > 2 * mean["token_loss"]
    with pytest.raises(ValueError, match="loss_over_steps 'max'"):
        model_for(data, loss_over_steps="max")


def test_full_focus_and_bridge_choices_run(data):
    model = model_for(data, full_focus=True, decoder_embedding_size=6, bridge="zeros")
    batch = next(iter(data.split_dataloader("validation")))
    logits, attention = model(batch["source"], batch["source_lengths"], batch["target"])
    assert logits.shape[:2] == batch["target"].shape


def test_bad_arguments_are_one_clear_error(data):
    with pytest.raises(ValueError, match="needs an attention"):
        model_for(data, attention="none", attention_guidance_weight=1.0)
    with pytest.raises(ValueError, match="full_focus"):
        model_for(data, full_focus=True)
    with pytest.raises(ValueError, match="dot attention"):
        Attention("dot", query_size=6, key_size=12)


def test_intervene_is_scoped_and_changes_only_later_decoder_steps(data):
    model = model_for(data).double()
    batch = next(iter(data.split_dataloader("heldout_tables")))
    clean = model.trace(batch)
    edit = Intervention("decoder.update_gate", (0, 1, 2), (1,), "set", 1.0)
    with pytest.raises(RuntimeError), model.intervene([edit]):
        edited = model.trace(batch)
        raise RuntimeError("leaving the block by an error still removes the edit")
    assert torch.equal(clean["decoder.hidden"][:, :1], edited["decoder.hidden"][:, :1])
    assert torch.all(edited["decoder.update_gate"][:, 1, :3] == 1.0)
    # update gate 1 keeps the previous state: h_1 = h_0 on the edited units
    torch.testing.assert_close(
        edited["decoder.hidden"][:, 1, :3], edited["decoder.hidden"][:, 0, :3]
    )
    assert torch.equal(model.trace(batch)["decoder.hidden"], clean["decoder.hidden"])
    assert torch.equal(clean["encoder.hidden"], edited["encoder.hidden"])


def test_first_last_bridge_starts_the_decoder_from_the_first_and_last_encoder_states(data):
    """Paper 3, Appendix B: the decoder's initial state is the encoder's states at the first and
    the last source position (of each sequence), concatenated; hidden and cell for an LSTM."""
    model = model_for(
        data, cell="lstm", bidirectional=True, bridge="first_last", attention_placement="post_rnn"
    )
    assert model.decoder.hidden_size == 2 * 2 * 6
    batch = next(iter(data.split_dataloader("heldout_tables")))
    batch["source_lengths"][0] -= 1  # one shorter row: its last position is not the padded end
    batch["source"][0, batch["source_lengths"][0] :] = 0
    record = {}
    model(batch["source"], batch["source_lengths"], steps=1, record=record)
    rows = torch.arange(len(batch["source_lengths"]))
    last = batch["source_lengths"] - 1
    encoder_hidden, encoder_cell = record["encoder.hidden"], record["encoder.cell"]
    expected_hidden = torch.cat([encoder_hidden[:, 0], encoder_hidden[rows, last]], -1)
    expected_cell = torch.cat([encoder_cell[:, 0], encoder_cell[rows, last]], -1)
    # Step 0 of the decoder from that state, computed with torch's own LSTM cell.
    cell = torch.nn.LSTMCell(model.decoder.input_size, model.decoder.hidden_size)
    cell.load_state_dict({k[:-3]: v for k, v in model.decoder.state_dict().items()})
    step_input = model.decoder_embedding(torch.full_like(rows, 1))  # <sos>, post-rnn attention
    hidden, _ = cell(step_input, (expected_hidden, expected_cell))
    torch.testing.assert_close(record["decoder.hidden"][:, 0], hidden)


def test_learning_rate_decays_by_the_factor_every_decay_steps(data):
    """Paper 3, Appendix B: 0.01, decayed by 0.96 every 100 steps (continuously)."""
    model = model_for(data, learning_rate=0.01, learning_rate_decay=0.96)
    configured = model.configure_optimizers()
    optimizer, schedule = configured["optimizer"], configured["lr_scheduler"]
    assert schedule["interval"] == "step"
    for _ in range(100):
        optimizer.step()
        schedule["scheduler"].step()
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.01 * 0.96)
    assert isinstance(model_for(data).configure_optimizers(), torch.optim.Adam)  # no decay


def test_metrics_are_named_by_stage_and_split(data):
    """`val` keeps paper 1's names; other validation splits and every test split are named."""
    model = model_for(data, val_splits=("train_sample", "test_sample"), test_splits=("train",))
    logged = {}
    model.log = lambda name, value, **kwargs: logged.setdefault(name, value)
    batch = next(iter(data.split_dataloader("train")))
    model.validation_step(batch, 0, dataloader_idx=1)
    model.test_step(batch, 0, dataloader_idx=0)
    model.training_step(batch, 0)
    model.on_validation_epoch_end()
    model.on_test_epoch_end()
    assert {"val/test_sample/seq_acc", "val/test_sample/loss", "test/train/seq_acc",
            "test/train/token_loss", "train/loss"} <= set(logged)  # fmt: skip
    assert "train/batch_seq_acc" in logged and "val/seq_acc" not in logged


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("bridge", ["last", "zeros", "first_last"])
def test_fused_teacher_forced_decoder_equals_the_step_loop(cell, bridge):
    """Under full teacher forcing without attention the decoder runs torch's fused layer over the
    whole target; its logits and gradients equal the step loop's (which recording forces)."""
    torch.manual_seed(0)
    model = Seq2Seq(11, 13, cell=cell, embedding_size=5, hidden_size=7, attention="none",
                    bridge=bridge).double()  # fmt: skip
    source = torch.randint(3, 11, (6, 5))
    lengths = torch.tensor([5, 4, 2, 5, 3, 1])
    source[torch.arange(5)[None] >= lengths[:, None]] = 0
    target = torch.randint(3, 13, (6, 4))
    target[4:, 3:] = 0  # padding after a short target, fed to the decoder like any token
    fused, _ = model(source, lengths, target, teacher_forcing_ratio=1.0)
    fused.sum().backward()
    fused_grads = {n: p.grad for n, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    stepped, _ = model(source, lengths, target, teacher_forcing_ratio=1.0, record={})
    stepped.sum().backward()
    torch.testing.assert_close(fused, stepped, rtol=1e-12, atol=1e-12)
    for name, parameter in model.named_parameters():  # the encoder has none with zeros
        if fused_grads[name] is None:
            assert parameter.grad is None, name
        else:
            torch.testing.assert_close(fused_grads[name], parameter.grad, rtol=1e-10, atol=1e-12)
    shorter, _ = model(source, lengths, target, steps=2, teacher_forcing_ratio=1.0)
    torch.testing.assert_close(shorter, stepped[:, :2], rtol=1e-12, atol=1e-12)
    assert model._fusable(target, 4, 1.0, None, (), None)
    assert not model._fusable(target, 4, 0.5, None, (), None)
    assert not model._fusable(target, 4, 1.0, {}, (), None)


def tiny_pairs(source_vocab: int, target_vocab: int):
    """Six padded source rows and their targets (token ids above the reserved ones)."""
    torch.manual_seed(1)
    source = torch.randint(3, source_vocab, (6, 5))
    lengths = torch.tensor([5, 4, 2, 5, 3, 1])
    source[torch.arange(5)[None] >= lengths[:, None]] = 0
    return source, lengths, torch.randint(3, target_vocab, (6, 4))


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_own_output_decoder_equals_a_hand_loop_over_torch_layers(cell):
    """Paper 4's objective (teacher_forcing_ratio 0): each decoder step embeds the previous
    step's argmax (the first `<sos>`). A hand loop over plain `torch.nn.GRU`/`LSTM` layers with
    the same weights, called one step at a time with its own argmax fed back, gives the same
    logits and the same gradients, and its inputs are never the gold tokens."""
    from torch import nn
    from torch.nn.utils.rnn import pack_padded_sequence

    from lightning_modules.sequences import SOS

    torch.manual_seed(0)
    model = Seq2Seq(11, 13, cell=cell, embedding_size=5, hidden_size=7, attention="none",
                    bridge="last").double()  # fmt: skip
    source, lengths, target = tiny_pairs(11, 13)
    layer = {"gru": nn.GRU, "lstm": nn.LSTM}[cell]
    encoder, decoder = layer(5, 7, batch_first=True), layer(5, 7, batch_first=True)
    encoder.load_state_dict(model.encoder.state_dict())
    decoder.load_state_dict(model.decoder.state_dict())
    encoder, decoder = encoder.double(), decoder.double()
    packed = pack_padded_sequence(model.encoder_embedding(source), lengths, batch_first=True,
                                  enforce_sorted=False)  # fmt: skip
    _, state = encoder(packed)
    token, by_hand, fed = torch.full((6,), SOS), [], []
    for _ in range(target.shape[1]):
        fed.append(token)
        output, state = decoder(model.decoder_embedding(token)[:, None], state)
        by_hand.append(model.output(output[:, 0]))
        token = by_hand[-1].argmax(-1)
    by_hand = torch.stack(by_hand, 1)

    seen = []
    hook = model.decoder_embedding.register_forward_hook(lambda m, i, o: seen.append(i[0]))
    logits, _ = model(source, lengths, target, teacher_forcing_ratio=0.0)
    hook.remove()
    torch.testing.assert_close(logits, by_hand, rtol=1e-12, atol=1e-12)
    assert torch.equal(torch.stack(seen, 1), torch.stack(fed, 1))
    assert torch.equal(seen[0], torch.full((6,), SOS))
    for step in range(1, target.shape[1]):
        assert torch.equal(seen[step], logits[:, step - 1].argmax(-1))
    assert not torch.equal(torch.stack(seen[1:], 1), target[:, :-1])  # not the gold tokens

    parameters = dict(model.named_parameters())
    ours = torch.autograd.grad(logits.square().sum(), list(parameters.values()), allow_unused=True)
    hand = torch.autograd.grad(by_hand.square().sum(), list(parameters.values()),
                               allow_unused=True)  # fmt: skip
    for name, mine, theirs in zip(parameters, ours, hand, strict=True):
        if name.startswith(("encoder.", "decoder.")):  # the hand loop has its own layers
            continue
        if theirs is None:
            assert mine is None or not mine.any(), name
        else:
            torch.testing.assert_close(mine, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("validation_loss", ["own_outputs", "teacher_forced"])
def test_validation_loss_is_the_cross_entropy_of_the_named_decoder_inputs(validation_loss):
    """`validation_loss own_outputs` logs the cross-entropy of the greedy decoder's logits (paper
    4's objective, which its early stopping watches); `teacher_forced` that of the logits under
    teacher forcing. Accuracy is greedy either way."""
    import torch.nn.functional as F

    torch.manual_seed(0)
    model = Seq2Seq(11, 13, attention="none", embedding_size=5, hidden_size=7,
                    teacher_forcing_ratio=0.0, validation_loss=validation_loss)  # fmt: skip
    source, lengths, target = tiny_pairs(11, 13)
    batch = {"source": source, "source_lengths": lengths, "target": target}
    logged = {}
    model.log = lambda name, value, **kwargs: logged.setdefault(name, value)
    with torch.no_grad():
        model.validation_step(batch, 0)
        model.on_validation_epoch_end()
        ratio = 0.0 if validation_loss == "own_outputs" else 1.0
        logits, _ = model(source, lengths, target, teacher_forcing_ratio=ratio)
    expected = F.cross_entropy(logits.flatten(0, 1), target.flatten(), ignore_index=0)
    torch.testing.assert_close(logged["val/loss"].compute(), expected)
    with pytest.raises(ValueError, match="Unknown validation_loss 'greedy'"):
        Seq2Seq(11, 13, attention="none", validation_loss="greedy")


def test_a_validation_logs_each_splits_losses_and_accuracies_weighted_by_batch_size(tmp_path):
    """Through Lightning, batches of 4 and 2 rows: each split's `loss` is the mean over the
    split's rows (each batch's mean weighted by its rows) and `seq_acc` the share of its rows
    right, once per validation; a second validation logs the same (nothing carried over)."""
    import pytorch_lightning as pl

    torch.manual_seed(0)
    model = Seq2Seq(11, 13, attention="none", embedding_size=5, hidden_size=7,
                    val_splits=("val", "other"))  # fmt: skip
    source, lengths, target = tiny_pairs(11, 13)
    rows = [{"source": source[i:j], "source_lengths": lengths[i:j], "target": target[i:j]}
            for i, j in ((0, 4), (4, 6))]  # fmt: skip
    other = [{key: value.flip(0) for key, value in batch.items()} for batch in rows]
    trainer = pl.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, default_root_dir=tmp_path)  # fmt: skip
    with torch.no_grad():
        expected, apart = {}, copy.deepcopy(model)  # its metrics not those validate reads
        for split, batches in (("val", rows), ("val/other", other)):
            losses = [apart._shared_step(batch, "val", "val")["loss"] for batch in batches]
            expected[f"{split}/loss"] = (losses[0] * 4 + losses[1] * 2) / 6
        logits, _ = model(source, lengths, target, teacher_forcing_ratio=0.0)
        right = ((logits.argmax(-1) == target) | (target == 0)).all(-1).float().mean()
    for _ in range(2):
        loaders = [DataLoader(batches, batch_size=None) for batches in (rows, other)]
        logged = {k: v for done in trainer.validate(model, loaders, verbose=False)
                  for k, v in done.items()}  # fmt: skip
        for name, value in expected.items():
            assert logged[name] == pytest.approx(float(value), rel=1e-6), name
        assert logged["val/seq_acc"] == pytest.approx(float(right))
        assert logged["val/other/seq_acc"] == pytest.approx(float(right))


# ---- paper 3's authors' code: Luong attention, input feeding, TensorFlow's defaults ----------
def test_general_attention_scores_a_hand_example():
    """score_i = q . (W k_i) with W = diag(1, 2): q = (1, 1) over k = (1, 0), (0, 1) and a padded
    key gives scores 1, 2, -inf, so weights 1 / (1 + e), e / (1 + e), 0."""
    attention = Attention("general", query_size=2, key_size=2)
    with torch.no_grad():
        attention.key_projection.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))
    assert attention.key_projection.bias is None
    keys = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]]])
    weights = attention(torch.tensor([[1.0, 1.0]]), attention.prepare_keys(keys),
                        torch.tensor([[True, True, False]]))  # fmt: skip
    e = torch.e
    torch.testing.assert_close(weights, torch.tensor([[1 / (1 + e), e / (1 + e), 0.0]]))


def luong_by_hand(model, source, lengths, target):
    """The decoder of `attention general, attention_placement input_feeding` written out with
    torch's own LSTM cell: a_0 = 0; x_t = [embedding(y_(t-1)); a_(t-1)]; h_t = LSTM(x_t);
    alpha_t = softmax(h_t . W k_s over the source); a_t = W_c [h_t; sum_s alpha_ts k_s]; logits
    = output(a_t). The encoder's final states (both directions) start the decoder."""
    from torch.nn.utils.rnn import pack_padded_sequence

    from lightning_modules.sequences import SOS

    encoder = torch.nn.LSTM(model.encoder.input_size, model.encoder.hidden_size, batch_first=True,
                            bidirectional=True).double()  # fmt: skip
    encoder.load_state_dict(model.encoder.state_dict())
    packed = pack_padded_sequence(model.encoder_embedding(source), lengths, batch_first=True,
                                  enforce_sorted=False)  # fmt: skip
    outputs, (h, c) = encoder(packed)
    keys, _ = torch.nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True)
    state = (torch.cat([h[0], h[1]], -1), torch.cat([c[0], c[1]], -1))
    cell = torch.nn.LSTMCell(model.decoder.input_size, model.decoder.hidden_size).double()
    cell.load_state_dict({k[:-3]: v for k, v in model.decoder.state_dict().items()})
    projected = keys @ model.attention.key_projection.weight.T
    fed, token, logits = torch.zeros_like(state[0]), torch.full_like(lengths, SOS), []
    for step in range(target.shape[1]):
        state = cell(torch.cat([model.decoder_embedding(token), fed], -1), state)
        scores = torch.einsum("bu,bsu->bs", state[0], projected)
        scores = scores.masked_fill(torch.arange(keys.shape[1]) >= lengths[:, None], -torch.inf)
        context = torch.einsum("bs,bsu->bu", scores.softmax(-1), keys)
        fed = torch.cat([state[0], context], -1) @ model.attention_layer.weight.T
        logits.append(model.output(fed))
        token = target[:, step]
    return torch.stack(logits, 1)


def test_luong_input_feeding_decoder_equals_a_hand_loop():
    """Paper 3's code (TensorFlow's LuongAttention in an AttentionWrapper with an attention layer
    of the decoder's size): the decoder's input widens by the attentional vector, the output
    layer reads that vector, and the logits equal `luong_by_hand`'s."""
    torch.manual_seed(0)
    model = Seq2Seq(11, 13, cell="lstm", embedding_size=5, decoder_embedding_size=3,
                    hidden_size=4, bidirectional=True, bridge="last", attention="general",
                    attention_placement="input_feeding").double()  # fmt: skip
    assert model.decoder.input_size == 3 + 8 and model.decoder.hidden_size == 8
    assert model.attention_layer.in_features == 8 + 8 and model.attention_layer.bias is None
    assert model.output.in_features == 8
    source, lengths, target = tiny_pairs(11, 13)
    logits, attention = model(source, lengths, target, teacher_forcing_ratio=1.0)
    torch.testing.assert_close(logits, luong_by_hand(model, source, lengths, target),
                               rtol=1e-10, atol=1e-12)  # fmt: skip
    assert (attention[lengths == 1][..., 1:] == 0).all()  # padding never attended
    post = Seq2Seq(11, 13, cell="lstm", embedding_size=5, decoder_embedding_size=3,
                   hidden_size=4, bidirectional=True, attention="general",
                   attention_placement="post_rnn")  # fmt: skip
    assert post.decoder.input_size == 3 and post.attention_layer is None
    with pytest.raises(ValueError, match="'input_feeding' needs an attention"):
        Seq2Seq(11, 13, attention="none", attention_placement="input_feeding")


def test_teacher_forced_and_greedy_sentence_accuracy_agree_with_input_feeding():
    """A sentence is right under teacher forcing exactly when greedy decoding gets it right: gold
    = the greedy output for rows 0-2 (right under both), one token changed at step 2 for rows
    3-5 (wrong under both), though the fed attentional vector carries the past."""
    from lightning_modules.sequences import sequence_correct

    torch.manual_seed(0)
    model = Seq2Seq(11, 13, cell="lstm", embedding_size=5, hidden_size=4, bidirectional=True,
                    bridge="last", attention="general", attention_placement="input_feeding",
                    init="tensorflow").double()  # fmt: skip
    source, lengths, _ = tiny_pairs(11, 13)
    greedy, _ = model(source, lengths, steps=4)
    gold = greedy.argmax(-1)
    gold[3:, 2] = (gold[3:, 2] + 1 - 3) % 10 + 3  # another real token
    forced, _ = model(source, lengths, gold, teacher_forcing_ratio=1.0)
    greedy_right = sequence_correct(greedy.argmax(-1), gold)
    assert greedy_right.tolist() == [True] * 3 + [False] * 3
    assert torch.equal(sequence_correct(forced.argmax(-1), gold), greedy_right)


def test_per_sequence_loss_sums_each_rows_steps_and_averages_the_rows():
    """Paper 3's code: reduce_sum(CE * mask / batch). Uniform logits over V classes cost log V a
    token: rows of 2 and 3 tokens give (2 + 3) log V / 2; the token mean is log V."""
    logits = torch.zeros(2, 3, 7)
    batch = {"target": torch.tensor([[4, 5, 0], [4, 5, 6]])}
    per_sequence = sequence_losses(logits, None, batch, "per_sequence")["token_loss"]
    torch.testing.assert_close(per_sequence, torch.tensor(2.5 * math.log(7)))
    mean = sequence_losses(logits, None, batch, "mean")["token_loss"]
    torch.testing.assert_close(mean, torch.tensor(math.log(7)))


def test_staircase_decay_multiplies_by_the_factor_after_every_decay_steps():
    """exponential_decay(0.01, step, 100, 0.96, staircase=True): 0.01 through step 99, 0.0096
    from step 100 to 199, 0.01 * 0.96^2 at step 200."""
    model = Seq2Seq(11, 13, learning_rate=0.01, learning_rate_decay=0.96,
                    learning_rate_staircase=True)  # fmt: skip
    configured = model.configure_optimizers()
    optimizer, scheduler = configured["optimizer"], configured["lr_scheduler"]["scheduler"]
    rates = []
    for _ in range(201):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert rates[99] == pytest.approx(0.01) and rates[100] == pytest.approx(0.0096)
    assert rates[199] == pytest.approx(0.0096) and rates[200] == pytest.approx(0.01 * 0.96**2)


def test_tensorflow_initialisation():
    """TensorFlow 1's defaults: embeddings U(-1, 1) (padding row 0), each LSTM direction Glorot-
    uniform over its joint kernel [input + hidden, 4 hidden] with zero biases and the forget
    bias 1, dense kernels Glorot-uniform with zero biases."""
    from lightning_modules.recurrent import gate_blocks

    torch.manual_seed(0)
    model = Seq2Seq(11, 13, cell="lstm", embedding_size=32, decoder_embedding_size=8,
                    hidden_size=32, bidirectional=True, attention="general",
                    attention_placement="input_feeding", init="tensorflow")  # fmt: skip
    embedding = model.encoder_embedding.weight
    assert not embedding[0].any() and embedding.abs().max() <= 1 and embedding.abs().max() > 0.9
    for layer, inputs in ((model.encoder, 32), (model.decoder, 8 + 64)):
        hidden = layer.hidden_size
        bound = math.sqrt(6 / (inputs + hidden + 4 * hidden))
        for name, parameter in layer.named_parameters():
            if name.startswith("weight"):
                assert bound * 0.95 < parameter.abs().max() <= bound, name
            elif name.startswith("bias_hh"):
                assert not parameter.any(), name
            else:
                blocks = gate_blocks(parameter, "lstm")
                assert (blocks.pop("forget_gate") == 1).all(), name
                assert not any(block.any() for block in blocks.values()), name
    for linear in (model.attention.key_projection, model.attention_layer, model.output):
        fan_out, fan_in = linear.weight.shape
        bound = math.sqrt(6 / (fan_in + fan_out))
        assert bound * 0.9 < linear.weight.abs().max() <= bound
    assert not model.output.bias.any()
    with pytest.raises(ValueError, match="init 'tensorflow' is for LSTMs"):
        Seq2Seq(11, 13, cell="gru", init="tensorflow")
    with pytest.raises(ValueError, match="replaces init_range"):
        Seq2Seq(11, 13, cell="lstm", init="tensorflow", init_range=0.08)
    with pytest.raises(ValueError, match="Unknown init 'keras'"):
        Seq2Seq(11, 13, cell="lstm", init="keras")


def test_trainer_clips_the_global_gradient_norm_at_one(tmp_path):
    """Paper 3's code clips the global gradient norm at 1.0 (tf.clip_by_global_norm); the suite
    uses Lightning's `gradient_clip_val` with `gradient_clip_algorithm: norm`, as both SCAN
    configs do: the update sees gradients of global norm 1 where the summed loss's were larger."""
    import pytorch_lightning as pl
    import yaml

    from datamodules import ScanDataModule
    from experiments.paper3.scales import CONFIGS

    for config in ("scan.yaml", "scan_authors.yaml"):
        trainer = yaml.safe_load((CONFIGS / config).read_text())["trainer"]
        assert (trainer["gradient_clip_val"], trainer["gradient_clip_algorithm"]) == (1.0, "norm")
    data = ScanDataModule(batch_size=16, steps_per_epoch=1, eval_size=8)
    torch.manual_seed(0)
    model = Seq2Seq(data.source_vocab_size, data.target_vocab_size, cell="lstm", hidden_size=8,
                    bidirectional=True, attention="general", attention_placement="input_feeding",
                    loss_over_steps="per_sequence", val_splits=data.val_splits,
                    test_splits=data.test_splits)  # fmt: skip
    norms = {}

    def global_norm():
        grads = [p.grad.flatten() for p in model.parameters() if p.grad is not None]
        return torch.cat(grads).norm()

    class Recording(torch.optim.SGD):
        """Notes the gradients' norm after Lightning's closure (backward, then clipping)."""

        def step(self, closure=None):
            loss = closure()
            norms["clipped"] = global_norm()
            super().step()
            return loss

    model.on_before_optimizer_step = lambda optimizer: norms.setdefault("before", global_norm())
    model.configure_optimizers = lambda: Recording(model.parameters(), lr=0.0)
    trainer = pl.Trainer(max_steps=1, gradient_clip_val=1.0, gradient_clip_algorithm="norm",
                         limit_val_batches=0, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         default_root_dir=tmp_path)  # fmt: skip
    trainer.fit(model, datamodule=data)
    assert norms["before"] > 1.5
    assert norms["clipped"].item() == pytest.approx(1.0, abs=1e-5)
