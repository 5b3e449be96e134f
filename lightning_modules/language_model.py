"""LSTM language model of paper 2 ("Do LSTMs Learn Compositionally?", section 3).

An embedding layer, one LSTM layer and a softmax output layer, all 200 wide in the paper,
trained by plain SGD (learning rate 1 throughout, no momentum or weight decay, which the paper
found to slow rule learning; both can be set to test that) with gradient
norms clipped at 0.25 (the trainer's `gradient_clip_val`). Training reads the corpus in BPTT
windows and carries the LSTM state from one window to the next, detached (truncated
backpropagation through time, as the PyTorch word-language-model example the paper's settings
come from); the state is reset at each epoch's first window. Dropout on the embeddings and on
the LSTM output follows that example and is 0 unless configured.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lightning_modules.recurrent import Intervenable, Intervention, recurrent_layer


class LanguageModel(Intervenable, pl.LightningModule):
    """Embedding -> LSTM -> linear output over the vocabulary.

    Args:
        vocab_size: output and input vocabulary (linked from the DataModule).
        embedding_size, hidden_size: 200 in paper 2.
        dropout: on the embeddings and the LSTM output, in training only.
        learning_rate: SGD's learning rate (paper 2: 1, constant).
        init_range: embedding and output weights start uniform in [-init_range, init_range],
            the output bias at 0 (the word-language-model example's 0.1).
        momentum, weight_decay: SGD's (paper 2: 0, "they slow rule learning").
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int = 200,
        hidden_size: int = 200,
        dropout: float = 0.0,
        learning_rate: float = 1.0,
        init_range: float = 0.1,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
    ):
        super().__init__()
        self.save_hyperparameters()
        self.embedding = nn.Embedding(vocab_size, embedding_size)
        self.lstm = recurrent_layer("lstm", embedding_size, hidden_size)
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(hidden_size, vocab_size)
        nn.init.uniform_(self.embedding.weight, -init_range, init_range)
        nn.init.uniform_(self.output.weight, -init_range, init_range)
        nn.init.zeros_(self.output.bias)
        self._carried: dict[str, tuple[Tensor, Tensor] | None] = {}

    def forward(
        self,
        tokens: Tensor,
        state: tuple[Tensor, Tensor] | None = None,
        record: dict[str, Tensor] | None = None,
        edits: Sequence[Intervention] = (),
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """`tokens` `[batch, time]` -> logits `[batch, time, vocab]` and the final LSTM state
        (torch's `([1, batch, hidden], [1, batch, hidden])`). With `record`, every LSTM site
        is stored as `lstm.<site>` `[batch, time, units]`; `edits` name sites `lstm.<site>`
        (applied with those of `intervene`)."""
        inner = {} if record is not None else None
        hidden, state = self.lstm(
            self.dropout(self.embedding(tokens)), state, record=inner,
            edits=tuple(edits) + self._edits,
        )  # fmt: skip
        if record is not None:
            record.update({f"lstm.{site}": value for site, value in inner.items()})
        return self.output(self.dropout(hidden)), state

    @torch.no_grad()
    def trace(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        """The LSTM's hidden state and cell from a zero state, `lstm.hidden`/`lstm.cell`
        `[batch, time, units]`, and the greedy next-token `prediction` `[batch, time]`."""
        record: dict[str, Tensor] = {}
        logits, _ = self(batch["input"], record=record)
        kept = {key: record[key] for key in ("lstm.hidden", "lstm.cell")}
        kept["prediction"] = logits.argmax(-1)
        return kept

    def _window_loss(self, batch: dict[str, Tensor], stream: str) -> Tensor:
        """Cross-entropy of one BPTT window, continuing the `stream`'s carried state."""
        state = None if int(batch["window"]) == 0 else self._carried.get(stream)
        if state is not None:  # a checkpoint's states are read onto the CPU
            state = tuple(s.to(batch["input"].device) for s in state)
        logits, state = self(batch["input"], state)
        self._carried[stream] = tuple(s.detach() for s in state)
        return F.cross_entropy(logits.flatten(0, 1), batch["target"].flatten())

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """Keep the carried states in the checkpoint, so that a fit resumed from one written
        inside an epoch continues its windows from the state an uninterrupted fit had."""
        checkpoint["carried_states"] = {
            stream: list(state) for stream, state in self._carried.items() if state is not None
        }

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        carried = checkpoint.get("carried_states", {})
        self._carried = {stream: tuple(state) for stream, state in carried.items()}

    def training_step(self, batch, batch_idx):
        loss = self._window_loss(batch, "train")
        self.log("train/loss", loss, on_step=True, on_epoch=True,
                 batch_size=batch["target"].numel())  # fmt: skip
        return loss

    def validation_step(self, batch, batch_idx):
        loss = self._window_loss(batch, "val")
        self.log("val/loss", loss, on_epoch=True, batch_size=batch["target"].numel())

    def _log_perplexity(self, prefix: str) -> None:
        """`<prefix>/perplexity` = exp of the epoch's `<prefix>/loss`."""
        loss = self.trainer.callback_metrics.get(f"{prefix}/loss")
        if loss is not None:
            self.log(f"{prefix}/perplexity", loss.exp())

    def on_validation_epoch_end(self) -> None:
        self._log_perplexity("val")

    def test_step(self, batch, batch_idx, dataloader_idx: int = 0):
        loss = self._window_loss(batch, "test")
        self.log("test/test/loss", loss, on_epoch=True, batch_size=batch["target"].numel(),
                 add_dataloader_idx=False)  # fmt: skip

    def on_test_epoch_end(self) -> None:
        self._log_perplexity("test/test")

    def configure_optimizers(self):
        """SGD with a constant learning rate, plain by default (paper 2, section 3)."""
        return torch.optim.SGD(
            [p for p in self.parameters() if p.requires_grad], lr=self.hparams.learning_rate,
            momentum=self.hparams.momentum, weight_decay=self.hparams.weight_decay,
        )  # fmt: skip
