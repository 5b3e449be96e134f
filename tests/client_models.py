"""Models written the way researchers write them, for the tests of `probes.attach` (and the
README's "Your own model"): none of them knows about the suite.

- `WordLanguageModel`: PyTorch's word-language-model example (`nn.LSTM`, two layers, dropout
  between them, time-first tensors, the hidden state carried between calls).
- `TutorialSeq2Seq`: PyTorch's seq2seq tutorial (an `nn.GRU` encoder; a decoder that calls its
  `nn.GRU` one step at a time in a Python loop, feeding back its greedy prediction).
- `PackedEncoder`: an OpenNMT-style encoder: a two-layer bidirectional `nn.GRU` over a packed
  batch of sequences of different lengths, from a given initial state.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class WordLanguageModel(nn.Module):
    def __init__(self, vocabulary: int = 50, embedding: int = 12, hidden: int = 16,
                 layers: int = 2, dropout: float = 0.3):  # fmt: skip
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(vocabulary, embedding)
        self.rnn = nn.LSTM(embedding, hidden, layers, dropout=dropout)
        self.decoder = nn.Linear(hidden, vocabulary)

    def forward(self, tokens: torch.Tensor, hidden=None):
        """`tokens` `[time, batch]` -> logits `[time, batch, vocabulary]` and the new state."""
        output, hidden = self.rnn(self.drop(self.encoder(tokens)), hidden)
        return self.decoder(self.drop(output)), hidden


class EncoderRNN(nn.Module):
    def __init__(self, vocabulary: int, hidden: int):
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)

    def forward(self, tokens):
        return self.gru(self.embedding(tokens))


class DecoderRNN(nn.Module):
    def __init__(self, hidden: int, vocabulary: int, steps: int):
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocabulary)
        self.steps = steps

    def forward(self, encoder_hidden):
        batch = encoder_hidden.shape[1]
        token = torch.zeros(batch, 1, dtype=torch.long)  # SOS
        hidden, outputs = encoder_hidden, []
        for _ in range(self.steps):
            output, hidden = self.gru(torch.relu(self.embedding(token)), hidden)
            output = self.out(output)
            outputs.append(output)
            token = output.argmax(-1).detach()
        return torch.log_softmax(torch.cat(outputs, 1), -1), hidden


class TutorialSeq2Seq(nn.Module):
    def __init__(self, vocabulary: int = 20, hidden: int = 16, steps: int = 6):
        super().__init__()
        self.encoder = EncoderRNN(vocabulary, hidden)
        self.decoder = DecoderRNN(hidden, vocabulary, steps)

    def forward(self, tokens):
        _, encoder_hidden = self.encoder(tokens)
        return self.decoder(encoder_hidden)


class PackedEncoder(nn.Module):
    def __init__(self, vocabulary: int = 30, embedding: int = 10, hidden: int = 8):
        super().__init__()
        self.embeddings = nn.Embedding(vocabulary, embedding, padding_idx=0)
        self.rnn = nn.GRU(embedding, hidden, num_layers=2, bidirectional=True)

    def forward(self, tokens, lengths, initial):
        """`tokens` `[time, batch]` padded, `lengths` `[batch]` (any order), `initial`
        `[4, batch, hidden]` -> the padded outputs `[time, batch, 2 hidden]` and the final
        state."""
        packed = pack_padded_sequence(self.embeddings(tokens), lengths, enforce_sorted=False)
        outputs, final = self.rnn(packed, initial)
        return pad_packed_sequence(outputs)[0], final
