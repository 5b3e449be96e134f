"""`make bench`: paper 4's training step against a bare PyTorch loop of the same model, in one run.

The suite's side is a Lightning fit of `Seq2Seq` at the default scale of `make reproduce-paper4`
(GRU, embedding 64, hidden 128, vocabulary 2,000, batches of 128) under the paper's objective:
every decoder step fed the model's own previous greedy output (`teacher_forcing_ratio` 0), over
the first training batches of the token-positioning data; its training epoch is timed by a
callback (the steps with Lightning's per-step work, not the fit's setup and teardown). The bare
side is the same network written plainly: embeddings, `torch.nn.GRU` over the packed source, then
`torch.nn.GRU` called one step at a time from the encoder's last state with its own argmax fed
back, one output projection, cross-entropy, Adam, on the same batches. Both alternate 5 times and
the fastest of each counts, so the ratio does not depend on how fast or busy this machine is
(target: at most 1.15x).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("WANDB_MODE", "disabled")

import pytorch_lightning as pl  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from datamodules import TokenPositioningDataModule  # noqa: E402
from lightning_modules.seq2seq import Seq2Seq  # noqa: E402

SIZES = dict(vocab_size=2000, embedding_size=64, hidden_size=128, batch_size=128)
"""The default scale of `experiments/paper4/scales.py`."""


def batches(
    count: int, vocab_size: int = SIZES["vocab_size"], batch_size: int = SIZES["batch_size"]
) -> list[dict[str, torch.Tensor]]:
    """The first `count` training batches of the token-positioning data (epoch 0's order)."""
    data = TokenPositioningDataModule(vocab_size=vocab_size, batch_size=batch_size)
    loader = data.split_dataloader("train", shuffle=True)
    loader.sampler.set_epoch(0)
    chosen = []
    for batch in loader:
        chosen.append(batch)
        if len(chosen) == count:
            return chosen
    return chosen


class BareSeq2Seq(nn.Module):
    """Paper 4's vanilla GRU seq2seq without the suite: torch's layers, the decoder a step loop."""

    def __init__(self, vocab: int):
        super().__init__()
        embedding, hidden = SIZES["embedding_size"], SIZES["hidden_size"]
        self.source_embedding = nn.Embedding(vocab, embedding, padding_idx=0)
        self.target_embedding = nn.Embedding(vocab, embedding, padding_idx=0)
        self.encoder = nn.GRU(embedding, hidden, batch_first=True)
        self.decoder = nn.GRU(embedding, hidden, batch_first=True)
        self.output = nn.Linear(hidden, vocab)

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        packed = pack_padded_sequence(self.source_embedding(batch["source"]),
                                      batch["source_lengths"], batch_first=True,
                                      enforce_sorted=False)  # fmt: skip
        _, state = self.encoder(packed)
        target = batch["target"]
        token, logits = torch.ones_like(target[:, 0]), []
        for _ in range(target.shape[1]):  # the paper's objective: own previous output fed back
            output, state = self.decoder(self.target_embedding(token).unsqueeze(1), state)
            logits.append(self.output(output[:, 0]))
            token = logits[-1].argmax(-1)
        logits = torch.stack(logits, 1)
        return F.cross_entropy(logits.flatten(0, 1), target.flatten(), ignore_index=0)


def bare_seconds(chosen: list[dict], vocab: int) -> float:
    torch.manual_seed(0)
    model = BareSeq2Seq(vocab)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.002, fused=True)
    start = time.perf_counter()
    for batch in chosen:
        optimizer.zero_grad()
        model(batch).backward()
        optimizer.step()
    return time.perf_counter() - start


class Batches(pl.LightningDataModule):
    def __init__(self, chosen: list[dict]):
        super().__init__()
        self.chosen = chosen

    def train_dataloader(self):
        return DataLoader(self.chosen, batch_size=None)  # the stored batches, as they are


class EpochClock(pl.Callback):
    """The time of the training epoch alone: the steps with Lightning's per-step work (hooks,
    logging, metrics), not the fit's setup and teardown."""

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self.start = time.perf_counter()

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.seconds = time.perf_counter() - self.start


def suite_seconds(chosen: list[dict], vocab: int) -> float:
    pl.seed_everything(0, verbose=False)
    model = Seq2Seq(vocab, vocab, cell="gru", embedding_size=SIZES["embedding_size"],
                    hidden_size=SIZES["hidden_size"], attention="none", bridge="last",
                    learning_rate=0.002, teacher_forcing_ratio=0.0)  # fmt: skip
    clock = EpochClock()
    trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         limit_val_batches=0, num_sanity_val_steps=0,
                         callbacks=[clock])  # fmt: skip
    trainer.fit(model, datamodule=Batches(chosen))
    return clock.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)
    chosen = batches(arguments.batches)
    vocab = SIZES["vocab_size"]
    bare_seconds(chosen[:3], vocab), suite_seconds(chosen[:3], vocab)  # warm-up
    bare, suite = [], []
    for _ in range(arguments.rounds):
        bare.append(bare_seconds(chosen, vocab))
        suite.append(suite_seconds(chosen, vocab))
    per_batch = {name: 1000 * min(times) / len(chosen) for name, times in
                 (("bare", bare), ("suite", suite))}  # fmt: skip
    ratio = per_batch["suite"] / per_batch["bare"]
    print(
        f"paper 4 training step ({len(chosen)} batches of {SIZES['batch_size']}, "
        f"{arguments.threads} threads, own outputs fed back): suite "
        f"{per_batch['suite']:.1f} ms, bare {per_batch['bare']:.1f} ms per batch, "
        f"ratio {ratio:.2f}x (target at most 1.15x)"
    )


if __name__ == "__main__":
    main()
