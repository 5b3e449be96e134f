"""A hand-built GRU seq2seq whose units are known, for the tests of the three-stage neuron
identification of `probes.neuron_functions` (tests/test_neuron_functions.py).

The network reads `[x]*f + [token, <pos=T>]` (f = 0..3 filler words, token A or B) and outputs
the filler x at every step except position T, where it outputs the token. Its units, by the
paper's time t (t = -1 the encoder reading the token, t = 0 the encoder's last state, t >= 1 the
decoder's steps):

- storing s_A, s_B: +-1 for the requested token from t = -1 on, held in the decoder;
- counting u_1..u_P: a one-hot (+-1) shift register, u_k(t) = +1 iff k = T - t;
- triggering g: +1 iff t = T - 1 (g(t) = tanh(GAIN * u_2(t - 1)), so g duplicates u_1 but only
  g is read by the outputting units);
- outputting o_A, o_B: o_A(t) = +1 iff g(t - 1) > 0 and s_A(t - 1) = +1; the output layer
  reads only them;
- distractors: d_par (parity of the filler count), d_cnt (1 - 2^-f), d_osc (+-1, alternating
  in the decoder: +1 iff t is even), none of which the output depends on; d_cnt (weight 1) and
  d_osc (weight -2) add the same amount to the logits of x, A and B, so they contribute to the
  token's logit without changing which token wins (nor, but for the tokens held at -C, its
  probability).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from lightning_modules.seq2seq import Seq2Seq
from probes.neuron_functions import TokenNeurons

# ---- the vocabulary (source and target share it) -------------------------------------------------
PAD, SOS, EOS, X, A, B = 0, 1, 2, 3, 4, 5
P = 8
"""Positions 1..P; <pos=T> has id POS + T."""
POS = 5
V = POS + P + 1

# ---- the hidden units ----------------------------------------------------------------------------
ORDER = [
    "d_par", "s_A", "u1", "u2", "u3", "d_cnt", "u4", "u5",
    "u6", "u7", "u8", "s_B", "g", "d_osc", "o_A", "o_B",
]  # fmt: skip
UNIT = {name: i for i, name in enumerate(ORDER)}
H = len(ORDER)
S_A, S_B, G, O_A, O_B = (UNIT[n] for n in ("s_A", "s_B", "g", "o_A", "o_B"))
REGISTER = [UNIT[f"u{k}"] for k in range(1, P + 1)]  # REGISTER[k - 1] is u_k
D_PAR, D_CNT, D_OSC = (UNIT[n] for n in ("d_par", "d_cnt", "d_osc"))
DISTRACTORS = [D_PAR, D_CNT, D_OSC]
STORING = sorted([S_A, S_B])
OUTPUTTING = sorted([O_A, O_B])
COUNTING = sorted(REGISTER + [G])
"""The counting units: the one-hot register and g, the unit it fires a step later."""

BETA = 15.0
"""Gain of every saturating gate and candidate."""
GAIN = 3.0
"""Gain of g's candidate: g(t) = tanh(GAIN * u_2(t - 1)) = +-0.995, unsaturated enough that the
register's u_2 at t = T - 2 gets a visible share of the integrated gradients."""
C = 20.0
"""Output scale: logit(A) = C * o_A - C / 2, logit(x) = 0, other tokens -C."""
STEPS = P + 4
R, Z, N = 0, 1, 2  # torch's gate order in the GRU's stacked weights


def _set_gru(layer, w_i: torch.Tensor, w_h: torch.Tensor, b_i: torch.Tensor) -> None:
    """Write gate-indexed `[3, H, in]`, `[3, H, H]`, `[3, H]` into torch's stacked layout."""
    layer.weight_ih_l0.copy_(w_i.reshape(3 * H, -1))
    layer.weight_hh_l0.copy_(w_h.reshape(3 * H, H))
    layer.bias_ih_l0.copy_(b_i.reshape(3 * H))
    layer.bias_hh_l0.zero_()


@torch.no_grad()
def build_model() -> Seq2Seq:
    model = Seq2Seq(V, V, cell="gru", embedding_size=V, hidden_size=H, attention="none",
                    bridge="last")  # fmt: skip
    model.encoder_embedding.weight.copy_(torch.eye(V))
    model.decoder_embedding.weight.normal_()  # ignored: the decoder's input weights are zero
    positions = [POS + j for j in range(1, P + 1)]

    # Encoder: reset gates open, update gates hold (z ~ 1) unless an input says otherwise.
    w_i, w_h, b_i = torch.zeros(3, H, V), torch.zeros(3, H, H), torch.zeros(3, H)
    b_i[R] = BETA
    b_i[Z] = BETA
    for unit, mine, other in ((S_A, A, B), (S_B, B, A)):  # written on A or B only
        w_i[Z, unit, [A, B]] = -2 * BETA
        w_i[N, unit, mine], w_i[N, unit, other] = BETA, -BETA
    for k, unit in enumerate(REGISTER + [G], start=1):  # written on <pos=T>: u_T = +1, g = u_1
        w_i[Z, unit, positions] = -2 * BETA
        w_i[N, unit, positions] = -BETA
        w_i[N, unit, POS + (k if unit != G else 1)] = BETA
    b_i[Z, OUTPUTTING], b_i[N, OUTPUTTING] = -BETA, -BETA  # -1 throughout
    w_i[Z, D_PAR, X], w_i[N, D_PAR, X], w_h[N, D_PAR, D_PAR] = -2 * BETA, BETA / 2, -BETA
    w_i[Z, D_CNT, X], w_i[N, D_CNT, X] = -BETA, BETA  # z = 1/2 on x: 0, .5, .75, .875
    w_i[Z, D_OSC, positions], w_i[N, D_OSC, positions] = -2 * BETA, BETA  # +1 on <pos>
    _set_gru(model.encoder, w_i, w_h, b_i)

    # Decoder: inputs ignored; storing units and d_par, d_cnt hold, the others are rewritten.
    w_i, w_h, b_i = torch.zeros(3, H, V), torch.zeros(3, H, H), torch.zeros(3, H)
    b_i[R] = BETA
    b_i[Z] = BETA
    b_i[Z, REGISTER + [G, O_A, O_B, D_OSC]] = -BETA
    for k in range(P - 1):  # u_k(t) = u_{k+1}(t - 1); u_P(t) = -1
        w_h[N, REGISTER[k], REGISTER[k + 1]] = BETA
    b_i[N, REGISTER[-1]] = -BETA
    w_h[N, G, REGISTER[1]] = GAIN
    for unit, storing in ((O_A, S_A), (O_B, S_B)):
        w_h[N, unit, G], w_h[N, unit, storing], b_i[N, unit] = BETA, BETA, -1.5 * BETA
    w_h[N, D_OSC, D_OSC] = -BETA
    _set_gru(model.decoder, w_i, w_h, b_i)

    model.output.weight.zero_()
    model.output.weight[A, O_A] = C
    model.output.weight[B, O_B] = C
    model.output.weight[[X, A, B], D_CNT] = 1.0  # the same for the competing logits
    model.output.weight[[X, A, B], D_OSC] = -2.0
    model.output.bias.fill_(-C)
    model.output.bias[X] = 0.0
    model.output.bias[[A, B]] = -C / 2
    return model.eval()


def make_batch(positions, tokens, fillers) -> dict[str, torch.Tensor]:
    """Rows `[x]*f + [token, <pos=T>]`, padded with 0, and the probes' keys."""
    rows = [
        [X] * f + [token, POS + t] for t, token, f in zip(positions, tokens, fillers, strict=True)
    ]
    lengths = torch.tensor([len(r) for r in rows])
    source = torch.zeros(len(rows), int(lengths.max()), dtype=torch.long)
    for i, row in enumerate(rows):
        source[i, : len(row)] = torch.tensor(row)
    token = torch.tensor(tokens)
    position = torch.tensor(positions)
    target = torch.full((len(rows), STEPS), X)
    target[torch.arange(len(rows)), position - 1] = token
    return {
        "source": source,
        "source_lengths": lengths,
        "signal_token": token[:, None],
        "signal_position": position[:, None],
        "target": target,
    }


def every_request(fillers: Iterable[int] = range(4)) -> dict[str, torch.Tensor]:
    """`make_batch` of every position T in 1..P, both tokens (A, B) and each filler count of
    `fillers`, T first: `2 * len(fillers)` rows at each T, half of them of token A."""
    combos = [(t, tok, f) for t in range(1, P + 1) for tok in (A, B) for f in fillers]
    return make_batch(*zip(*combos, strict=True))


def planted_neurons(candidates: dict[str, torch.Tensor] | None = None) -> TokenNeurons:
    """Token A's planted units as stage 3 reports them (s_A, the counting units, g, o_A), with
    `candidates` (the units a control draws from) or none."""
    return TokenNeurons(A, torch.tensor([S_A]), torch.tensor(COUNTING), torch.tensor([G]),
                        torch.tensor([O_A]), {}, candidates or {})  # fmt: skip


def expected_outputs(positions: list[int], tokens: torch.Tensor) -> torch.Tensor:
    """`[batch, STEPS]` x everywhere but `tokens` at each listed 1-based position."""
    expected = torch.full((tokens.shape[0], STEPS), X)
    for position in positions:
        expected[:, position - 1] = tokens
    return expected


def renumbered_model(vocab: list[str], words: dict[int, str]) -> Seq2Seq:
    """`build_model()` with its token ids moved to the ids of `vocab` (a
    `TokenPositioningDataModule`'s): the specials, `<pos=1..P>` and the tokens of `words`
    (A, B and the filler X, each as the word that stands for it). Other entries read as nothing
    and are never output; the behaviour does not change."""
    ids = {word: i for i, word in enumerate(vocab)}
    moved = {PAD: ids["<pad>"], SOS: ids["<sos>"], EOS: ids["<eos>"],
             **{token: ids[word] for token, word in words.items()},
             **{POS + t: ids[f"<pos={t}>"] for t in range(1, P + 1)}}  # fmt: skip
    built, size = build_model(), len(vocab)
    model = Seq2Seq(size, size, cell="gru", embedding_size=V, hidden_size=H, attention="none",
                    bridge="last")  # fmt: skip
    state = {k: v for k, v in built.state_dict().items() if k.startswith(("encoder.", "decoder."))}
    model.load_state_dict(state, strict=False)
    old, new = list(moved), list(moved.values())
    with torch.no_grad():
        for name in ("encoder_embedding", "decoder_embedding"):
            getattr(model, name).weight.zero_()
            getattr(model, name).weight[new] = getattr(built, name).weight[old]
        model.output.weight.zero_()
        model.output.weight[new] = built.output.weight[old]
        model.output.bias.fill_(-C)
        model.output.bias[new] = built.output.bias[old]
    return model.eval()


def token_positioning_checkpoint(model: Seq2Seq, settings: dict) -> dict:
    """What a fit of `model` on `TokenPositioningDataModule(**settings)` checkpoints."""
    return {
        "state_dict": model.state_dict(),
        "hyper_parameters": {"_class_path": "lightning_modules.seq2seq.Seq2Seq",
                             **dict(model.hparams)},
        "datamodule_hyper_parameters": {"_class_path": "datamodules.TokenPositioningDataModule",
                                        **settings},
    }  # fmt: skip
