"""Units removed from a seq2seq model by zeroing their weights, left trainable: paper 1's section
5.2 read as "remove all weakly connected neurons" from the weights themselves, beside the
suite's activation mask (`Seq2Seq`'s `removed_units`). Written by hand: torch prunes single
weights (`torch.nn.utils.prune`), not a unit's every connection across layers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from lightning_modules.seq2seq import Seq2Seq

GATES = 3
"""A GRU layer's gate blocks in its weights (reset, update, candidate)."""


def zero_units(model: Seq2Seq, units: Mapping[str, Sequence[int]]) -> None:
    """Set to 0 every parameter of `units` (by site: `encoder.hidden`, `decoder.hidden`; units
    from 0) of a GRU seq2seq with pre-rnn MLP attention and full focus (paper 1's model): the
    unit's rows of its layer's `weight_ih_l0`, `weight_hh_l0`, `bias_ih_l0` and `bias_hh_l0` in
    every gate, its column of `weight_hh_l0`, and its column in every layer that reads its state:
    an encoder unit's in the attention's key projection, in the full-focus layer (the context
    half) and in the decoder's `weight_ih_l0` (full focus gates the context into the decoder's
    input unit by unit); a decoder unit's in the attention's query projection and the output
    layer. A zeroed encoder unit stays at 0 and a zeroed decoder unit starts from the encoder's
    last state and halves at every step, read by no layer: the outputs are the masked model's.
    The decoder starts from the encoder's state (a bridge without weights), so training reaches
    a zeroed unit whose twin of the same index is kept: unlike the mask, it can come back."""
    hparams = model.hparams
    paper1 = (hparams.cell, hparams.attention, hparams.attention_placement) == (
        "gru", "mlp", "pre_rnn"
    ) and hparams.full_focus and not hparams.bidirectional  # fmt: skip
    if not paper1:
        raise ValueError(
            "zero_units knows the layers that read a unit of paper 1's model only (a GRU seq2seq "
            "with pre-rnn mlp attention and full focus, not bidirectional); remove units of "
            "this model with removed_units instead"
        )
    readers = {
        "encoder": (model.attention.key_projection.weight, model.full_focus.weight,
                    model.decoder.weight_ih_l0),
        "decoder": (model.attention.query_projection.weight, model.output.weight),
    }  # fmt: skip
    with torch.no_grad():
        for site, chosen in units.items():
            module, _, name = site.partition(".")
            if module not in readers or name != "hidden":
                raise ValueError(f"zero_units: unknown site {site!r}; known: encoder.hidden, "
                                 "decoder.hidden")  # fmt: skip
            layer = getattr(model, module)
            size = layer.weight_hh_l0.shape[1]
            outside = [u for u in chosen if not 0 <= u < size]
            if outside:
                raise ValueError(f"zero_units[{site!r}]: units {outside} outside 0..{size - 1}")
            index = torch.tensor(list(chosen), dtype=torch.long)
            rows = torch.cat([index + gate * size for gate in range(GATES)])
            for parameter in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
                getattr(layer, parameter)[rows] = 0
            layer.weight_hh_l0[:, index] = 0
            for weight in readers[module]:
                weight[:, index] = 0
