"""Models written the way researchers write them, for the tests of `probes.attach` (and the
docs/own_model.md example): none of them knows about the suite.

- `WordLanguageModel`: PyTorch's word-language-model example (`nn.LSTM`, two layers, dropout
  between them, time-first tensors, the hidden state carried between calls).
- `TutorialSeq2Seq`: PyTorch's seq2seq tutorial (an `nn.GRU` encoder; a decoder that calls its
  `nn.GRU` one step at a time in a Python loop, feeding back its greedy prediction).
- `PackedEncoder`: an OpenNMT-style encoder: a two-layer bidirectional `nn.GRU` over a packed
  batch of sequences of different lengths, from a given initial state.
- `LSTMClassifier`: a batch-first three-layer `nn.LSTM` classifier with dropout (on the
  embeddings and between layers) and an explicit zero initial state built in `forward`.
- `AttentionSeq2Seq`: the seq2seq tutorial's attention model: a GRU encoder and a decoder with
  Bahdanau attention that calls its `nn.GRU` one step at a time.
- `SiameseLSTM`: one `nn.LSTM` called on two inputs, their final states compared.
- `ContainerGRUs`: GRUs held in an `nn.ModuleList`, an `nn.Sequential` and an `nn.ModuleDict`.
- `EncoderDecoderGRUs`: top-level `nn.GRU`s named `encoder` (over a packed batch) and `decoder`.
- `ExampleRNNModel`: PyTorch's examples/word_language_model `RNNModel` as written there (LSTM,
  `--tied` ties the decoder's weight to the embedding), time-first, its output flattened with
  `output.view(-1, H)` as the example's older versions did; or, for the tests, batch-first,
  the decoded logits flattened as the example does now (torch's batch-first output is a
  transposed view, which `.view` refuses).
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
    decoder_class: type[nn.Module] = DecoderRNN

    def __init__(self, vocabulary: int = 20, hidden: int = 16, steps: int = 6):
        super().__init__()
        self.encoder = EncoderRNN(vocabulary, hidden)
        self.decoder = self.decoder_class(hidden, vocabulary, steps)

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


class LSTMClassifier(nn.Module):
    def __init__(self, vocabulary: int = 30, embedding: int = 8, hidden: int = 10,
                 layers: int = 3, classes: int = 4, dropout: float = 0.4):  # fmt: skip
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, embedding)
        self.dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(embedding, hidden, layers, batch_first=True, dropout=dropout)
        self.classify = nn.Linear(hidden, classes)

    def forward(self, tokens):
        """`tokens` `[batch, time]` -> class scores `[batch, classes]` from the last step."""
        embedded = self.dropout(self.embedding(tokens))
        shape = (self.lstm.num_layers, tokens.shape[0], self.lstm.hidden_size)
        initial = (embedded.new_zeros(shape), embedded.new_zeros(shape))
        outputs, _ = self.lstm(embedded, initial)
        return self.classify(self.dropout(outputs[:, -1]))


class BahdanauAttention(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.Wa = nn.Linear(hidden, hidden)
        self.Ua = nn.Linear(hidden, hidden)
        self.Va = nn.Linear(hidden, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys))).squeeze(2).unsqueeze(1)
        weights = torch.softmax(scores, dim=-1)
        return torch.bmm(weights, keys), weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden: int, vocabulary: int, steps: int, dropout: float = 0.1):
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, hidden)
        self.attention = BahdanauAttention(hidden)
        self.gru = nn.GRU(2 * hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocabulary)
        self.dropout = nn.Dropout(dropout)
        self.steps = steps

    def forward(self, encoder_outputs, encoder_hidden):
        token = torch.zeros(encoder_outputs.shape[0], 1, dtype=torch.long)  # SOS
        hidden, outputs = encoder_hidden, []
        for _ in range(self.steps):
            output, hidden = self.forward_step(token, hidden, encoder_outputs)
            outputs.append(output)
            token = output.argmax(-1).detach()
        return torch.log_softmax(torch.cat(outputs, 1), -1), hidden

    def forward_step(self, token, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(token))
        context, _ = self.attention(hidden.permute(1, 0, 2), encoder_outputs)
        output, hidden = self.gru(torch.cat((embedded, context), dim=2), hidden)
        return self.out(output), hidden


class AttentionSeq2Seq(TutorialSeq2Seq):
    decoder_class = AttnDecoderRNN

    def __init__(self, vocabulary: int = 20, hidden: int = 12, steps: int = 5):
        super().__init__(vocabulary, hidden, steps)

    def forward(self, tokens):
        encoder_outputs, encoder_hidden = self.encoder(tokens)
        return self.decoder(encoder_outputs, encoder_hidden)


class SiameseLSTM(nn.Module):
    def __init__(self, features: int = 5, hidden: int = 6):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, batch_first=True)
        self.compare = nn.Linear(hidden, 1)

    def encode(self, inputs):
        return self.lstm(inputs)[1][0][-1]

    def forward(self, first, second):
        """Two batches `[batch, time, features]` (times may differ) -> a score `[batch, 1]`."""
        return self.compare((self.encode(first) - self.encode(second)).abs())


class ContainerGRUs(nn.Module):
    def __init__(self, features: int = 4, hidden: int = 5):
        super().__init__()
        self.layers = nn.ModuleList([nn.GRU(features, hidden, batch_first=True),
                                     nn.GRU(hidden, hidden, batch_first=True)])  # fmt: skip
        self.stack = nn.Sequential(nn.Linear(hidden, hidden), nn.GRU(hidden, hidden, 2))
        self.heads = nn.ModuleDict({"left": nn.GRU(hidden, hidden, batch_first=True,
                                                   bidirectional=True)})  # fmt: skip

    def forward(self, inputs):
        for layer in self.layers:
            inputs = layer(inputs)[0]
        stacked, _ = self.stack[1](self.stack[0](inputs).transpose(0, 1))
        return self.heads["left"](stacked.transpose(0, 1))[0]


class EncoderDecoderGRUs(nn.Module):
    def __init__(self, vocabulary: int = 12, hidden: int = 6):
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, hidden)
        self.encoder = nn.GRU(hidden, hidden, batch_first=True)
        self.decoder = nn.GRU(hidden, hidden, batch_first=True)

    def forward(self, source, source_lengths, target):
        """Padded `source` with its lengths and a `target` to read (token 0 is a word here)."""
        packed = pack_padded_sequence(self.embedding(source), source_lengths, batch_first=True,
                                      enforce_sorted=False)  # fmt: skip
        _, final = self.encoder(packed)
        return self.decoder(self.embedding(target), final)[0]


class ExampleRNNModel(nn.Module):
    def __init__(self, ntoken: int = 40, ninp: int = 10, nhid: int = 10, nlayers: int = 2,
                 dropout: float = 0.5, tie_weights: bool = False,
                 batch_first: bool = False):  # fmt: skip
        super().__init__()
        self.ntoken, self.nhid, self.nlayers = ntoken, nhid, nlayers
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout, batch_first=batch_first)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, tokens: torch.Tensor, hidden):
        """`tokens` `[time, batch]` (`[batch, time]` batch-first) -> log-probabilities `[time *
        batch, ntoken]` and the new state."""
        emb = self.drop(self.encoder(tokens))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        if self.rnn.batch_first:
            decoded = self.decoder(output).view(-1, self.ntoken)
        else:
            decoded = self.decoder(output.view(-1, self.nhid))
        return torch.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz: int):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))  # fmt: skip


def seeded_double(model_class: type[nn.Module], seed: int) -> nn.Module:
    """`model_class()` built right after seeding torch with `seed`, in double precision and eval
    mode: a client model whose traced and untraced outputs compare exactly (what is drawn next
    follows from `seed` too)."""
    torch.manual_seed(seed)
    return model_class().double().eval()
