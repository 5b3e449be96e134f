"""`make bench`: what a training step of paper 4's model costs at the default scale's sizes and on
the way to the paper's (vocabulary 20,000; `gru.yaml`'s hidden 256, embedding 128, batch 64).

Each size trains the suite's `Seq2Seq` on the paper's objective (every decoder step fed the
model's own previous output) over the same first training batches, in one thread as each fit of
`make reproduce-paper4` runs; the fastest of 3 passes counts. Printed per size: the time of a step,
its ratio to the default scale's, and an epoch's training steps in minutes (no validation). This
is why the default scale keeps a vocabulary of 2,000: its GRUs need 13-16 epochs within their
30-minute caps to pass the 0.97 target, and every step toward the paper's vocabulary makes an
epoch several times longer. For the paper's sizes it also times writing the model's checkpoint
(weights and Adam's state, as a fit writes `last.ckpt`), in training steps and as a share of the
interval a fit writes one inside its epochs (`--run.checkpoint_minutes`).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("WANDB_MODE", "disabled")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from benchmarks.paper4_training import batches  # noqa: E402
from experiments.cli import CHECKPOINT_MINUTES  # noqa: E402
from lightning_modules.seq2seq import Seq2Seq  # noqa: E402
from storage.checkpoint_io import AtomicCheckpointIO  # noqa: E402

SIZES = (  # vocabulary, hidden, embedding, batch
    (2000, 128, 64, 128),  # the default scale
    (5000, 128, 64, 128),
    (2000, 256, 128, 64),  # gru.yaml's sizes
    (20000, 128, 64, 128),
    (20000, 256, 128, 64),  # the paper's vocabulary with gru.yaml's sizes (the paper scale)
)
TRAINING_PAIRS = 138_700
"""Training pairs of the default data (90% of 154,112 line pairs)."""


def step_seconds(vocab: int, hidden: int, embedding: int, batch: int,
                 count: int = 12) -> tuple[float, dict]:  # fmt: skip
    """The fastest pass's seconds a step, and the trained model's checkpoint contents."""
    chosen = batches(count, vocab, batch)
    torch.manual_seed(0)
    model = Seq2Seq(vocab, vocab, cell="gru", embedding_size=embedding, hidden_size=hidden,
                    attention="none", bridge="last", teacher_forcing_ratio=0.0)  # fmt: skip
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001, fused=True)

    def one_pass() -> float:
        start = time.perf_counter()
        for rows in chosen:
            optimizer.zero_grad()
            logits, _ = model(rows["source"], rows["source_lengths"], rows["target"],
                              teacher_forcing_ratio=0.0)  # fmt: skip
            target = rows["target"].flatten()
            F.cross_entropy(logits.flatten(0, 1), target, ignore_index=0).backward()
            optimizer.step()
        return (time.perf_counter() - start) / len(chosen)

    one_pass()  # warm-up
    seconds = min(one_pass() for _ in range(3))
    return seconds, {"state_dict": model.state_dict(), "optimizer": optimizer.state_dict()}


def checkpoint_seconds(checkpoint: dict) -> tuple[float, int]:
    """The fastest of 3 writes of `checkpoint` as a fit writes one (`AtomicCheckpointIO`), and
    its size in bytes."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "last.ckpt"
        writer = AtomicCheckpointIO(folder)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            writer.save_checkpoint(checkpoint, path)
            times.append(time.perf_counter() - start)
        return min(times), path.stat().st_size


def main() -> None:
    torch.set_num_threads(1)
    default = None
    for vocab, hidden, embedding, batch in SIZES:
        seconds, checkpoint = step_seconds(vocab, hidden, embedding, batch)
        default = default or seconds
        print(f"paper 4 step at vocabulary {vocab:,}, hidden {hidden}, embedding {embedding}, "
              f"batch {batch} (1 thread): {1000 * seconds:.0f} ms, {seconds / default:.2f}x the "
              f"default scale's; an epoch's steps {TRAINING_PAIRS / batch * seconds / 60:.1f} min",
              flush=True)  # fmt: skip
    written, size = checkpoint_seconds(checkpoint)
    interval = 60 * CHECKPOINT_MINUTES
    print(f"its checkpoint ({size / 1e6:.0f} MB) written in {written:.2f} s, "
          f"{written / seconds:.1f} training steps; once every {CHECKPOINT_MINUTES:g} minutes "
          f"inside an epoch: {100 * written / interval:.3f}% of the fit", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
