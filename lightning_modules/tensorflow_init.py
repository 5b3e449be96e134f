"""TensorFlow 1's default initialisation of a seq2seq model, as paper 3's authors' code got it
(yuanpeng16/BCDLSG efb6c20, `s2s_model.py`; TensorFlow 1's defaults for what it leaves unset):

- embeddings U(-1, 1) (`tf.random_uniform([V, size], -1.0, 1.0)`, lines 126-127 and 156-158);
  the suite's padding row stays 0 (it is never a decoder or encoder input that counts);
- `BasicLSTMCell` (lines 132-133, 190): one kernel `[input + hidden, 4 hidden]`, Glorot-uniform
  over that shape (`tf.get_variable`'s default), biases 0, and `forget_bias=1.0` added to the
  forget gate's pre-activation. A constant added to a trainable bias trains exactly as that bias
  started at 1, so here the forget block of `bias_ih` starts at 1;
- dense layers (`tf.layers.dense` line 201; `LuongAttention`'s `memory_layer`,
  `AttentionWrapper`'s `attention_layer`): Glorot-uniform kernels, biases 0.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from lightning_modules.recurrent import gate_blocks

FORGET_BIAS = 1.0
"""`tf.nn.rnn_cell.BasicLSTMCell`'s default `forget_bias`."""


@torch.no_grad()
def tensorflow_initialise(model: nn.Module) -> None:
    """Re-initialise `model`'s embeddings, LSTM layers and linear layers as TensorFlow 1 would
    (module docstring). Only LSTM layers are handled: a GRU is one clear error."""
    for module in model.modules():
        if isinstance(module, nn.Embedding):
            nn.init.uniform_(module.weight, -1.0, 1.0)
            if module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                module.bias.zero_()
        elif isinstance(module, nn.LSTM):
            _basic_lstm_cell(module)
        elif isinstance(module, nn.RNNBase):
            name = type(module).__name__
            raise ValueError(f"TensorFlow's initialisation is written for LSTMs only, not {name}.")


def _basic_lstm_cell(layer: nn.LSTM) -> None:
    """Each direction of `layer` as a fresh `BasicLSTMCell`: Glorot-uniform over the joint
    kernel `[input + hidden, 4 hidden]`, biases 0, the forget bias 1."""
    hidden = layer.hidden_size
    bound = math.sqrt(6 / (layer.input_size + hidden + 4 * hidden))
    for name, parameter in layer.named_parameters():
        if name.startswith("weight"):
            nn.init.uniform_(parameter, -bound, bound)
        else:
            parameter.zero_()
            if name.startswith("bias_ih"):
                gate_blocks(parameter, "lstm")["forget_gate"].fill_(FORGET_BIAS)
