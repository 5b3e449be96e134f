"""The attention of the suite's seq2seq models (`lightning_modules.seq2seq.Seq2Seq`): the
weights of a decoder query over the encoder's states, by the scores papers 1 and 3 used."""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn


class Attention(nn.Module):
    """Attention weights of a query over keys.

    `dot`: score_i = q . k_i (Luong et al. 2015).
    `general`: score_i = q . (W k_i), W without bias (Luong et al. 2015's "general"):
    TensorFlow's `LuongAttention` (its `memory_layer`, unscaled), which paper 3's code uses
    (BCDLSG efb6c20 `s2s_model.py` lines 166-168).
    `mlp`: score_i = v . relu(W [k_i; q] + b), the additive attention of Bahdanau et al. (2015)
    as i-machine-think's `machine` implements it (ReLU where Bahdanau has tanh), which is the
    code paper 1's models were trained with.
    """

    def __init__(self, method: Literal["dot", "general", "mlp"], query_size: int, key_size: int):
        super().__init__()
        self.method = method
        if method == "mlp":  # W [k; q] + b split as (W_k k + b) + W_q q: keys projected once
            self.key_projection = nn.Linear(key_size, key_size)
            self.query_projection = nn.Linear(query_size, key_size, bias=False)
            self.score = nn.Linear(key_size, 1, bias=False)
        elif method == "general":
            self.key_projection = nn.Linear(key_size, query_size, bias=False)
        elif method == "dot":
            if query_size != key_size:
                raise ValueError(
                    f"dot attention needs equal decoder ({query_size}) and encoder ({key_size}) "
                    "sizes: use attention 'mlp' or matching sizes."
                )
        else:
            raise ValueError(
                f"Unknown attention {method!r}: use 'none', 'dot', 'general' or 'mlp'."
            )

    def prepare_keys(self, keys: Tensor) -> Tensor:
        """Per-sequence part of the scores, computed once: `[batch, source_time, k]`."""
        return keys if self.method == "dot" else self.key_projection(keys)

    def forward(self, query: Tensor, prepared_keys: Tensor, key_mask: Tensor) -> Tensor:
        """`query` `[batch, q]`, `prepared_keys` from `prepare_keys`, `key_mask`
        `[batch, source_time]` (True where a key exists) -> weights `[batch, source_time]`."""
        if self.method in ("dot", "general"):
            scores = torch.einsum("bq,bsq->bs", query, prepared_keys)
        else:
            hidden = torch.relu(prepared_keys + self.query_projection(query).unsqueeze(1))
            scores = self.score(hidden).squeeze(-1)
        return scores.masked_fill(~key_mask, float("-inf")).softmax(-1)
