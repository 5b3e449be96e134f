"""Contextual decomposition (CD) of LSTMs and GRUs, batched over sequences and phrases.

Murdoch, Liu and Yu (2018), "Beyond Word Importance: Contextual Decomposition to Extract
Interactions from LSTMs", section 3.2, as paper 2 ("Do LSTMs Learn Compositionally?", section
3.1) uses it: every hidden state is split as `h_t = relevant_t + irrelevant_t`, where the relevant
part comes from the chosen phrase alone and the irrelevant part from everything else and its
interactions with the phrase. With the output layer, the logits split the same way
(`v = v_relevant + v_irrelevant`, the output bias going to the irrelevant part), and
`softmax(v_relevant)` is paper 2's `P(x | x_phrase)`.

Each gate's pre-activation `relevant + irrelevant + bias` is linearised by the two-player
Shapley split `decompose_three`, the cell update splits products term by term, and
`tanh(c)` is split by `decompose_tanh_two`; every split sums exactly to the true value, so the
parts sum to the LSTM's output up to rounding (paper 2 reports a relative error below 1e-5).

`rule_phrases` names the phrases of paper 2's rules; the measurement its figures plot, P(omega |
phrase) at the close symbol of held-out rule instances per checkpoint of a run, reads run folders
and so is the command's (`probes.command.contextual_decomposition.rule_close_probabilities`).

Written by hand: captum has no CD, and diagNNose's decomposer works on its own model wrappers
one sentence at a time. Here the phrase is a `[batch, time]` mask, so one pass decomposes many
sequences, or one sequence with many different phrases, at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import Tensor, nn

from lightning_modules.recurrent import LayerWeights, gate_blocks
from probes.attach import TorchLayer


def decompose_three(
    relevant: Tensor, irrelevant: Tensor, bias: Tensor, activation: Callable[[Tensor], Tensor]
) -> tuple[Tensor, Tensor, Tensor]:
    """`activation(relevant + irrelevant + bias)` as (relevant, irrelevant, bias) parts: the
    Shapley values of the two inputs over the bias (Murdoch et al. 2018, eq. 9-10)."""
    both = activation(relevant + irrelevant + bias)
    alone = activation(bias)
    with_relevant = activation(relevant + bias)
    with_irrelevant = activation(irrelevant + bias)
    relevant_part = 0.5 * (with_relevant - alone + both - with_irrelevant)
    irrelevant_part = 0.5 * (with_irrelevant - alone + both - with_relevant)
    return relevant_part, irrelevant_part, alone


def decompose_tanh_two(relevant: Tensor, irrelevant: Tensor) -> tuple[Tensor, Tensor]:
    """`tanh(relevant + irrelevant)` as the two players' Shapley values."""
    both = torch.tanh(relevant + irrelevant)
    relevant_part = 0.5 * (torch.tanh(relevant) + both - torch.tanh(irrelevant))
    irrelevant_part = 0.5 * (torch.tanh(irrelevant) + both - torch.tanh(relevant))
    return relevant_part, irrelevant_part


@dataclass(frozen=True)
class Decomposition:
    """Hidden states `[batch, time, units]` split into the phrase's part and the rest."""

    relevant: Tensor
    irrelevant: Tensor

    def logits(self, output: nn.Linear) -> tuple[Tensor, Tensor]:
        """The logits `[batch, time, vocabulary]` split the same way; the output bias goes to
        the irrelevant part."""
        return self.relevant @ output.weight.T, output(self.irrelevant)


BiasAtPhraseEnd = Literal["relevant", "irrelevant"]
"""Where the bias-only term of the phrase's last step goes: `"relevant"` (with the phrase, as
every earlier phrase step's: Murdoch et al.'s CD as paper 2's authors fixed it) or
`"irrelevant"` (to the rest: their CD before the fix; see `bias_with_phrase`)."""


def bias_with_phrase(in_phrase: Tensor, bias_at_phrase_end: BiasAtPhraseEnd = "relevant") -> Tensor:
    """The steps `[batch, time]` bool whose bias-only term (the LSTM's `i_b * g_b`, the GRU's
    `(1 - z_b) n_b`) goes with the phrase `in_phrase` `[batch, time]`: every phrase step
    (`"relevant"`, the default), or every phrase step but each row's last (`"irrelevant"`).

    `"irrelevant"` is the authors' CD before `nsaphra/acd` commit 820fabd ("fixing a bug in the
    original contextual decomposition code"), `acd/scores/cd.py`, `cd_lstm`: for the inclusive
    phrase `start..stop` the input goes to the relevant part where `i >= start and i <= stop`,
    but the bias product where `i >= start and i < stop`, so at `stop` it goes to the irrelevant
    part; the commit makes that test `i <= stop` too, which is the default here. A one-token
    phrase then keeps no bias product at all. Their code has one contiguous phrase per row; for
    a mask the "last step" is each row's last marked step."""
    in_phrase = in_phrase.bool()
    if bias_at_phrase_end == "relevant":
        return in_phrase
    if bias_at_phrase_end != "irrelevant":
        raise ValueError(
            f"bias_at_phrase_end is {bias_at_phrase_end!r}: pass 'relevant' (the fixed CD) or "
            "'irrelevant' (the authors' CD before their fix)."
        )
    steps = torch.arange(in_phrase.shape[1], device=in_phrase.device)
    last = torch.where(in_phrase, steps, -1).amax(1, keepdim=True)
    return in_phrase & (steps != last)


def lstm_step(
    relevant_pre: Tensor,
    irrelevant_pre: Tensor,
    bias: Tensor,
    in_phrase: Tensor,
    relevant_cell: Tensor,
    irrelevant_cell: Tensor,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """One LSTM step of CD (Murdoch et al. 2018, section 3.2) from the two parts of the gates'
    pre-activations `[batch, 4 units]` (torch's gate order) and their `bias` `[4 units]`;
    `in_phrase` `[batch, 1]` is 1 where the bias product `i_b * g_b` goes with the phrase: every
    step in the phrase by default, every one but the phrase's last before the authors' fix
    (`bias_with_phrase`). Returns the relevant and irrelevant hidden state and cell."""
    rel_i, rel_f, rel_g, rel_o = gate_blocks(relevant_pre, "lstm", -1).values()
    irr_i, irr_f, irr_g, irr_o = gate_blocks(irrelevant_pre, "lstm", -1).values()
    b_i, b_f, b_g, b_o = gate_blocks(bias, "lstm").values()
    input_gate = decompose_three(rel_i, irr_i, b_i, torch.sigmoid)
    candidate = decompose_three(rel_g, irr_g, b_g, torch.tanh)
    forget_gate = decompose_three(rel_f, irr_f, b_f, torch.sigmoid)
    new_relevant = input_gate[0] * (candidate[0] + candidate[2]) + input_gate[2] * candidate[0]
    new_irrelevant = input_gate[1] * sum(candidate) + (input_gate[0] + input_gate[2]) * candidate[1]
    bias_product = input_gate[2] * candidate[2]  # goes with the phrase where in_phrase is 1
    new_relevant = new_relevant + bias_product * in_phrase
    new_irrelevant = new_irrelevant + bias_product * (1 - in_phrase)
    relevant_cell, irrelevant_cell = (
        new_relevant + (forget_gate[0] + forget_gate[2]) * relevant_cell,
        new_irrelevant + sum(forget_gate) * irrelevant_cell + forget_gate[1] * relevant_cell,
    )
    output_gate = torch.sigmoid(rel_o + irr_o + b_o)
    tanh_relevant, tanh_irrelevant = decompose_tanh_two(relevant_cell, irrelevant_cell)
    return (
        output_gate * tanh_relevant,
        output_gate * tanh_irrelevant,
        relevant_cell,
        irrelevant_cell,
    )


def contextual_decomposition(
    lstm: nn.LSTM,
    inputs: Tensor,
    relevant: Tensor,
    sequence_of_row: Tensor | None = None,
    bias_at_phrase_end: BiasAtPhraseEnd = "relevant",
) -> Decomposition:
    """Decompose a one-layer, unidirectional, batch-first LSTM (`torch.nn.LSTM` parameters, as
    the suite's `lightning_modules.recurrent.LSTM`) started from zeros.

    `inputs` `[batch, time, features]`; `relevant` `[batch, time]` bool marks the phrase of each
    row (a row per sequence, or the same sequence repeated with different phrases).
    `sequence_of_row` `[batch]` (optional): rows with the same number have the same `inputs`, so
    the part before the first phrase token is computed once per sequence.
    `bias_at_phrase_end`: where the bias product of the phrase's last step goes
    (`bias_with_phrase`; `"irrelevant"`: the authors' CD before their fix). Runs in the LSTM's
    dtype: for float64, pass `lstm.double()` and float64 `inputs`.
    """
    if lstm.num_layers != 1 or lstm.bidirectional or not lstm.batch_first:
        raise ValueError(
            "contextual_decomposition needs a 1-layer unidirectional batch_first LSTM."
        )
    batch, time, _ = inputs.shape
    zeros = inputs.new_zeros(batch, lstm.hidden_size)
    irrelevant_hidden, irrelevant_cell = zeros, zeros
    relevant_states, irrelevant_states = [], []
    # Before the first phrase token of the batch the relevant part is exactly 0 and the
    # irrelevant part is the LSTM itself: run torch's fused layer there, decompose from there on.
    phrase_steps = relevant.any(0).nonzero()
    first = int(phrase_steps[0]) if len(phrase_steps) else time
    if first:
        rows = torch.arange(batch, device=inputs.device)
        representative, row_of = rows, rows
        if sequence_of_row is not None:
            _, row_of = torch.unique(sequence_of_row, return_inverse=True)
            representative = rows.new_empty(int(row_of.max()) + 1)
            representative[row_of] = rows
        before, (last_hidden, last_cell) = nn.LSTM.forward(lstm, inputs[representative, :first])
        irrelevant_hidden, irrelevant_cell = last_hidden[0, row_of], last_cell[0, row_of]
        relevant_states.append(torch.zeros_like(before[row_of]))
        irrelevant_states.append(before[row_of])
    if first < time:
        phrase = relevant[:, first:]
        in_phrase = phrase.to(inputs.dtype).unsqueeze(-1)
        rest = inputs[:, first:]
        start = ((zeros, irrelevant_hidden), (zeros, irrelevant_cell))
        parts = decompose_layer(TorchLayer(lstm, 0), rest * in_phrase, rest * (1 - in_phrase),
                                phrase, start, bias_at_phrase_end).states  # fmt: skip
        relevant_states.append(parts.relevant)
        irrelevant_states.append(parts.irrelevant)
    return Decomposition(torch.cat(relevant_states, 1), torch.cat(irrelevant_states, 1))


def gru_step(
    relevant_projected: Tensor,
    irrelevant_projected: Tensor,
    bias_ih: Tensor,
    weight_hh: Tensor,
    bias_hh: Tensor,
    in_phrase: Tensor,
    relevant_hidden: Tensor,
    irrelevant_hidden: Tensor,
) -> tuple[Tensor, Tensor]:
    """One GRU step of CD: the relevant part beta and irrelevant part gamma of the new hidden
    state from the parts of the input projection `W_i x` `[batch, 3 units]` (no bias) and of the
    previous state. Written by hand for this suite (no published GRU decomposition); the split,
    in torch's equations with `h = beta + gamma`:

    - `r` and `z`: their pre-activations split into the phrase's part (`W_i x_beta + W_h beta`),
      the rest's (`W_i x_gamma + W_h gamma`) and the biases `b_i + b_h`, linearised by
      `decompose_three` as the LSTM's gates: `r = r_beta + r_gamma + r_b`, same for `z`.
    - `n = tanh(W_in x + b_in + r * (W_hn h + b_hn))`: the product `r * (W_hn beta + W_hn gamma +
      b_hn)` splits term by term as the LSTM's cell update does: terms of relevant and bias
      factors only, `r_beta (W_hn beta + b_hn) + r_b W_hn beta`, to the phrase; every term with
      a gamma factor to the rest; `r_b b_hn` joins the biases. Then `decompose_three` over
      (`W_in x_beta + ...`, `W_in x_gamma + ...`, `b_in + r_b b_hn`) gives `n_beta, n_gamma, n_b`.
    - `h' = (1 - z) n + z h` with `1 - z = (1 - z_b) - z_beta - z_gamma`, term by term again:
      beta' = `(1 - z_b) n_beta - z_beta (n_beta + n_b) + (z_beta + z_b) beta`; every term with
      a gamma factor goes to gamma'; the bias-only term `(1 - z_b) n_b` goes with the phrase
      while the step is inside it (`in_phrase`), else to the rest, as the LSTM's `i_b g_b`.

    Every split sums to the true value, so beta' + gamma' is the GRU's state up to rounding."""
    b_ir, b_iz, b_in = gate_blocks(bias_ih, "gru").values()
    b_hr, b_hz, b_hn = gate_blocks(bias_hh, "gru").values()
    rel_x_r, rel_x_z, rel_x_n = gate_blocks(relevant_projected, "gru", -1).values()
    irr_x_r, irr_x_z, irr_x_n = gate_blocks(irrelevant_projected, "gru", -1).values()
    rel_h_r, rel_h_z, rel_h_n = gate_blocks(relevant_hidden @ weight_hh.T, "gru", -1).values()
    irr_h_r, irr_h_z, irr_h_n = gate_blocks(irrelevant_hidden @ weight_hh.T, "gru", -1).values()
    r_rel, r_irr, r_b = decompose_three(rel_x_r + rel_h_r, irr_x_r + irr_h_r, b_ir + b_hr,
                                        torch.sigmoid)  # fmt: skip
    z_rel, z_irr, z_b = decompose_three(rel_x_z + rel_h_z, irr_x_z + irr_h_z, b_iz + b_hz,
                                        torch.sigmoid)  # fmt: skip
    inner_rel = r_rel * (rel_h_n + b_hn) + r_b * rel_h_n
    inner_irr = r_irr * (rel_h_n + irr_h_n + b_hn) + (r_rel + r_b) * irr_h_n
    n_rel, n_irr, n_b = decompose_three(rel_x_n + inner_rel, irr_x_n + inner_irr,
                                        b_in + r_b * b_hn, torch.tanh)  # fmt: skip
    keep = 1 - z_b
    bias_product = keep * n_b
    relevant = keep * n_rel - z_rel * (n_rel + n_b) + (z_rel + z_b) * relevant_hidden
    irrelevant = (
        keep * n_irr - z_rel * n_irr - z_irr * (n_rel + n_irr + n_b)
        + z_irr * (relevant_hidden + irrelevant_hidden) + (z_rel + z_b) * irrelevant_hidden
    )  # fmt: skip
    return relevant + bias_product * in_phrase, irrelevant + bias_product * (1 - in_phrase)


@dataclass(frozen=True)
class LayerParts:
    """A decomposed recurrent layer: hidden states `[batch, time, units]` split into the
    phrase's part and the rest, and its final state's parts (`(relevant, irrelevant)` of the
    hidden state and, for an LSTM, of the cell, each `[batch, units]`), to start a next run
    (e.g. a decoder from an encoder's phrase)."""

    states: Decomposition
    final: tuple[tuple[Tensor, Tensor], ...]


def decompose_layer(
    layer: LayerWeights,
    relevant_inputs: Tensor,
    irrelevant_inputs: Tensor,
    in_phrase: Tensor,
    initial: tuple[tuple[Tensor, Tensor], ...] | None = None,
    bias_at_phrase_end: BiasAtPhraseEnd = "relevant",
) -> LayerParts:
    """CD of one unidirectional recurrent layer (`lightning_modules.recurrent.LayerWeights`: the
    suite's layers, or `probes.attach.TorchLayer` over any torch GRU or LSTM) whose inputs
    `[batch, time, features]` come split in two parts; `in_phrase` `[batch, time]` marks the
    phrase's steps (where the bias-only terms go with the phrase, but at its last step with
    `bias_at_phrase_end="irrelevant"`: `bias_with_phrase`). `initial`: the parts of the
    starting state (default zeros: all irrelevant and 0)."""
    if layer.directions != 1:
        raise ValueError(
            "contextual decomposition runs forward in time: bidirectional layers are not "
            "supported (unidirectional GRU and LSTM layers are)."
        )
    weight_ih, weight_hh, bias_ih, bias_hh = layer.weights(0)
    batch, time, _ = relevant_inputs.shape
    zeros = relevant_inputs.new_zeros(batch, layer.hidden_size)
    parts = 1 if layer.cell_type == "gru" else 2
    state = [tuple(pair) for pair in initial] if initial is not None else [(zeros, zeros)] * parts
    bias_ih = bias_ih if bias_ih is not None else zeros.new_zeros(weight_ih.shape[0])
    bias_hh = bias_hh if bias_hh is not None else zeros.new_zeros(weight_hh.shape[0])
    relevant_projected = relevant_inputs @ weight_ih.T
    irrelevant_projected = irrelevant_inputs @ weight_ih.T
    phrase = bias_with_phrase(in_phrase, bias_at_phrase_end).to(relevant_inputs.dtype)
    phrase = phrase.unsqueeze(-1)
    relevant_states, irrelevant_states = [], []
    for step in range(time):
        (relevant_hidden, irrelevant_hidden), *cell = state
        if layer.cell_type == "gru":
            state = [gru_step(relevant_projected[:, step], irrelevant_projected[:, step], bias_ih,
                              weight_hh, bias_hh, phrase[:, step], relevant_hidden,
                              irrelevant_hidden)]  # fmt: skip
        else:
            relevant_pre = relevant_projected[:, step] + relevant_hidden @ weight_hh.T
            irrelevant_pre = irrelevant_projected[:, step] + irrelevant_hidden @ weight_hh.T
            hidden_and_cell = lstm_step(relevant_pre, irrelevant_pre, bias_ih + bias_hh,
                                        phrase[:, step], *cell[0])  # fmt: skip
            state = [hidden_and_cell[:2], hidden_and_cell[2:]]
        relevant_states.append(state[0][0])
        irrelevant_states.append(state[0][1])
    states = Decomposition(torch.stack(relevant_states, 1), torch.stack(irrelevant_states, 1))
    return LayerParts(states, tuple(state))


def refuse_undecomposable(function: str, module: nn.Module) -> None:
    """One clear error for a module whose equations CD does not follow: anything but a torch GRU
    or LSTM layer, and an LSTM with a projection (`proj_size`), which tracing refuses too."""
    if isinstance(module, nn.GRU | nn.LSTM) and not getattr(module, "proj_size", 0):
        return
    if isinstance(module, nn.LSTM):
        raise ValueError(f"{function}: the nn.LSTM has proj_size={module.proj_size}, and LSTM "
                         "projections cannot be decomposed (nor traced): decompose an LSTM "
                         "without proj_size, or a GRU.")  # fmt: skip
    raise ValueError(f"{function}: {type(module).__name__} cannot be decomposed: contextual "
                     "decomposition follows torch.nn.GRU and torch.nn.LSTM layers.")  # fmt: skip


def decompose_recurrent(
    module: nn.GRU | nn.LSTM,
    inputs: Tensor,
    relevant: Tensor,
    initial: Sequence[tuple[tuple[Tensor, Tensor], ...]] | None = None,
    bias_at_phrase_end: BiasAtPhraseEnd = "relevant",
) -> list[LayerParts]:
    """CD through every layer of a unidirectional torch `nn.GRU` or `nn.LSTM` (any number of
    layers, the suite's or a user's; evaluation: no dropout between layers). `inputs` `[batch,
    time, features]` batch-first whatever the module's `batch_first`; `relevant` `[batch, time]`
    bool marks the phrase; `initial`: per layer, the parts of its starting state (e.g. an
    encoder's `final`). Layer 0's input splits by the phrase; each next layer's input is the
    previous layer's parts; `bias_at_phrase_end`: where each layer's bias-only term at the
    phrase's last step goes (`bias_with_phrase`). Runs in the module's dtype (float64: pass
    `module.double()` and float64 `inputs`). Returns every layer's parts, the top layer last."""
    refuse_undecomposable("decompose_recurrent", module)
    phrase = relevant.to(inputs.dtype).unsqueeze(-1)
    relevant_inputs, irrelevant_inputs = inputs * phrase, inputs * (1 - phrase)
    layers = []
    for index in range(module.num_layers):
        start = None if initial is None else initial[index]
        parts = decompose_layer(TorchLayer(module, index), relevant_inputs, irrelevant_inputs,
                                relevant, start, bias_at_phrase_end)  # fmt: skip
        layers.append(parts)
        relevant_inputs, irrelevant_inputs = parts.states.relevant, parts.states.irrelevant
    return layers


StepInputs = Callable[[Tensor, Tensor, Tensor], tuple[Tensor, Tensor]]
"""(own inputs, context_beta, context_gamma) -> the (relevant, irrelevant) parts of a decoder
step's input, for `decompose_attention_decoder`."""


def concatenated_inputs(own: Tensor, relevant_context: Tensor, irrelevant_context: Tensor):
    """The tutorial's decoder input `[own; context]` split: `[0; context_beta]` and `[own;
    context_gamma]` (the decoder's own inputs are not the phrase)."""
    relevant = torch.cat([torch.zeros_like(own), relevant_context], -1)
    return relevant, torch.cat([own, irrelevant_context], -1)


def full_focus_inputs(focus: nn.Linear) -> StepInputs:
    """The input parts of a full-focus decoder (i-machine-think's `--full_focus`, paper 1's
    models): its input is `context * relu(focus([context; own]))`. The gate `relu(...)` is
    computed from the full context and held fixed, as the attention weights are; given it the
    input is linear in the context, so it splits exactly: `context_beta * gate` and
    `context_gamma * gate`."""

    def split(own: Tensor, relevant_context: Tensor, irrelevant_context: Tensor):
        context = relevant_context + irrelevant_context
        gate = torch.relu(focus(torch.cat([context, own], -1)))
        return relevant_context * gate, irrelevant_context * gate

    return split


def decompose_attention_decoder(
    module: nn.GRU | nn.LSTM,
    inputs: Tensor,
    keys: Decomposition,
    attention_weights: Callable[[Tensor, Tensor], Tensor],
    initial: tuple[tuple[Tensor, Tensor], ...],
    step_inputs: StepInputs | None = None,
) -> LayerParts:
    """CD through a one-layer decoder that attends over an encoder's states (Bahdanau et al.
    2015, as PyTorch's seq2seq tutorial writes it), one step at a time.

    At step t the decoder reads `x_t = [inputs_t; context_t]` (the tutorial's order): `inputs`
    `[batch, steps, features]` are its own inputs (embedded tokens, batch first), and
    `context_t = sum_j a_tj k_j` with the encoder's states `k` `[batch, source, units]` (`keys`,
    their parts: the encoder's `LayerParts.states`) and the weights `a_t =
    attention_weights(h_{t-1}, k)` `[batch, 1, source]` (the query `[batch, 1, units]`; for the
    tutorial `lambda query, keys: attention(query, keys)[1]`). `initial`: the parts of the
    decoder's starting state (the encoder's `final`).

    Derivation. CD splits every state as `h = beta + gamma` (the phrase's part, the rest's). The
    attention weights are computed from the full states, `a_t = attention(beta_{t-1} + gamma_{t-1},
    k_beta + k_gamma)`: they are the weights the model uses, held fixed. Given them the context is
    linear in the keys, so it splits exactly, with no interaction term:
    `context_t = sum_j a_tj (k_beta_j + k_gamma_j) = sum_j a_tj k_beta_j + sum_j a_tj k_gamma_j
    = context_beta + context_gamma`. The step's input then splits as `x_beta = [0;
    context_beta]` and `x_gamma = [inputs_t; context_gamma]` (the decoder's own inputs are not
    the phrase), and the step is the layer's CD step (`decompose_layer` over one step, from the
    previous step's parts; its bias-only terms go to the rest). Every split sums to its true
    value, so `beta + gamma` is the decoder's state (and `states.logits` its logits) up to
    rounding. What the weights hold fixed is where the phrase decides where to attend: that
    influence is counted in neither part's context but through the parts it weights.

    `step_inputs` (optional) builds the step's input parts another way from (the step's own
    inputs `[batch, 1, features]`, `context_beta`, `context_gamma`, each `[batch, 1, units]`):
    e.g. `full_focus_inputs` for i-machine-think's full-focus decoders (paper 1).
    """
    refuse_undecomposable("decompose_attention_decoder", module)
    if module.num_layers != 1 or module.bidirectional:
        raise ValueError("decompose_attention_decoder: the decoder must be one unidirectional "
                         f"layer (it has {module.num_layers} layers, bidirectional="
                         f"{module.bidirectional}).")  # fmt: skip
    layer = TorchLayer(module, 0)
    full_keys = keys.relevant + keys.irrelevant
    outside_phrase = inputs.new_zeros(inputs.shape[0], 1, dtype=torch.bool)
    state, relevant_states, irrelevant_states = initial, [], []
    for step in range(inputs.shape[1]):
        query = (state[0][0] + state[0][1]).unsqueeze(1)
        weights = attention_weights(query, full_keys)
        own = inputs[:, step : step + 1]
        relevant_inputs, irrelevant_inputs = (step_inputs or concatenated_inputs)(
            own, weights @ keys.relevant, weights @ keys.irrelevant
        )
        parts = decompose_layer(layer, relevant_inputs, irrelevant_inputs, outside_phrase, state)
        state = parts.final
        relevant_states.append(parts.states.relevant)
        irrelevant_states.append(parts.states.irrelevant)
    states = Decomposition(torch.cat(relevant_states, 1), torch.cat(irrelevant_states, 1))
    return LayerParts(states, state)


def refused_seq2seq(settings) -> str | None:
    """Why CD cannot follow a suite `Seq2Seq` (`lightning_modules.seq2seq`) of these
    hyperparameters (its `hparams`), or None."""
    if settings.bidirectional or settings.bridge == "first_last":
        return ("its encoder is bidirectional or hands the decoder its first and last states "
                "(paper 3's models), and CD runs forward in time")  # fmt: skip
    if settings.attention != "none" and settings.attention_placement != "pre_rnn":
        return (f"its attention is {settings.attention_placement}, read after the decoder step "
                "(CD follows pre-rnn attention and decoders without attention)")  # fmt: skip
    if settings.get("removed_units"):
        return "it has units removed (removed_units), which CD of the whole network ignores"
    return None


def decompose_seq2seq(model: nn.Module, source: Tensor, fed: Tensor, relevant: Tensor
                      ) -> Decomposition:  # fmt: skip
    """CD of the suite's `Seq2Seq` (papers 1 and 4; `refused_seq2seq` names the ones it cannot
    follow): `source` `[rows, time]` (rows of one length, no padding: group rows by their source
    length) with the phrase `relevant` `[rows, time]` bool, through the encoder, the bridge (its
    final state, or zeros) and the decoder fed `fed` `[rows, steps]` (`<sos>` then the tokens the
    model was fed: its greedy outputs, as traced), pre-rnn attention weights and full-focus gates
    held fixed (`decompose_attention_decoder`). The decoder's own inputs are never the phrase.
    Returns the decoder's states split `[rows, steps, units]`; `.logits(model.output)` splits
    its logits (the output bias in the rest's part)."""
    why = refused_seq2seq(model.hparams)
    if why:
        raise ValueError(f"decompose_seq2seq: contextual decomposition cannot follow this "
                         f"Seq2Seq: {why}.")  # fmt: skip
    if bool((source == 0).any()):
        raise ValueError("decompose_seq2seq: the sources hold padding (id 0): pass rows of one "
                         "source length, cut to it.")  # fmt: skip
    rows, time = source.shape
    (encoder,) = decompose_recurrent(model.encoder, model.encoder_embedding(source), relevant)
    inputs = model.decoder_embedding(fed)
    initial = encoder.final
    if model.hparams.bridge == "zeros":
        zeros = torch.zeros_like(encoder.final[0][0])
        initial = tuple((zeros, zeros) for _ in encoder.final)
    if model.attention is None:
        no_phrase = torch.zeros(fed.shape, dtype=torch.bool, device=fed.device)
        return decompose_recurrent(model.decoder, inputs, no_phrase, [initial])[0].states
    mask = torch.ones(rows, time, dtype=torch.bool, device=source.device)

    def weights(query: Tensor, keys: Tensor) -> Tensor:
        return model.attention(query[:, 0], model.attention.prepare_keys(keys), mask)[:, None]

    focus = full_focus_inputs(model.full_focus) if model.full_focus is not None else None
    return decompose_attention_decoder(model.decoder, inputs, encoder.states, weights, initial,
                                       focus).states  # fmt: skip


@dataclass(frozen=True)
class DecomposedLogits:
    """Logits `[batch, time, vocabulary]` of a language model, split by CD (paper 2, 3.1)."""

    relevant: Tensor
    irrelevant: Tensor
    full: Tensor
    """The model's own logits, for the approximation error."""

    def relevant_probabilities(self) -> Tensor:
        """Paper 2's `P(x | x_phrase) = softmax(v_relevant)`, `[batch, time, vocabulary]`."""
        return self.relevant.softmax(-1)

    def approximation_error(self) -> Tensor:
        """`||(v_relevant + v_irrelevant) - v|| / ||v||` per position, `[batch, time]` (paper 2,
        section 4: below 1e-5 in all its analyses)."""
        return (self.relevant + self.irrelevant - self.full).norm(dim=-1) / self.full.norm(dim=-1)


@torch.no_grad()
def decompose_language_model(
    model: nn.Module,
    tokens: Tensor,
    relevant: Tensor,
    steps: Sequence[int] | None = None,
    bias_at_phrase_end: BiasAtPhraseEnd = "relevant",
) -> DecomposedLogits:
    """CD of a language model with `embedding`, `lstm` and `output` modules (the suite's
    `LanguageModel`), run from a zero state over `tokens` `[batch, time]`; `relevant`
    `[batch, time]` bool marks the phrase. The logits are `[batch, len(steps), vocabulary]`, at
    the time `steps` only (None: every step). Dropout is not applied (evaluation).
    `bias_at_phrase_end="irrelevant"`: the authors' CD before their fix (`bias_with_phrase`).
    Runs in the model's dtype: `model.double()` decomposes in float64."""
    sequences, sequence_of_row = torch.unique(tokens, dim=0, return_inverse=True)
    embedded = model.embedding(tokens)
    parts = contextual_decomposition(model.lstm, embedded, relevant, sequence_of_row,
                                     bias_at_phrase_end)  # fmt: skip
    hidden = nn.LSTM.forward(model.lstm, model.embedding(sequences))[0][sequence_of_row]
    if steps is not None:
        steps = list(steps)
        parts = Decomposition(parts.relevant[:, steps], parts.irrelevant[:, steps])
        hidden = hidden[:, steps]
    relevant_logits, irrelevant_logits = parts.logits(model.output)
    return DecomposedLogits(relevant_logits, irrelevant_logits, model.output(hidden))


# ---- paper 2's measurement: P(omega | phrase) at the close symbol of the probe rules -----------
def rule_phrases(open_position: int, conduit_length: int) -> dict[str, list[int]]:
    """Paper 2, section 4.1: the phrases whose contribution to P(omega) the paper reads, as input
    positions (from 0): the open symbol (`open`, Figure 1), the whole conduit (`conduit`, Figure
    1), and the open symbol with the first i conduit tokens (`prefix=i`, Figure 2; `prefix=0` is
    the open symbol alone)."""
    conduit = list(range(open_position + 1, open_position + conduit_length + 1))
    named = {"open": [open_position], "conduit": conduit}
    for i in range(conduit_length + 1):
        named[f"prefix={i}"] = [open_position, *conduit[:i]]
    return named


@dataclass(frozen=True)
class CloseProbabilities:
    """Paper 2, section 3.1 (what Figures 1-3 plot), at one set of weights: per phrase name,
    `P(omega | phrase) = softmax(v_phrase)[omega]` at the close position of each probe rule
    `[rules]`; the full model's `P(omega)` `[rules]`; and the largest relative approximation error
    over every position of every decomposed row (section 4: below 1e-5); and where they were
    read: each phrase's input positions and the close position (the step before omega)."""

    phrase: dict[str, Tensor]
    full: Tensor
    error: float
    positions: dict[str, list[int]]
    close_position: int


def mean_and_standard_error(values: Tensor) -> tuple[float, float]:
    """The mean of `values` and its standard error: the sample standard deviation / sqrt(count),
    computed as scipy's `sem` computes it (the same bits), without its per-call overhead (a
    report takes tens of thousands); NaN for fewer than two values."""
    samples = np.atleast_1d(values.numpy())
    if len(samples) < 2:
        return float(values.mean()), math.nan
    return float(values.mean()), float(np.std(samples, ddof=1) / len(samples) ** 0.5)
