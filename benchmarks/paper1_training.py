"""`make bench`: costs of the suite's machinery on paper 1's model, as ratios measured in one run.

1. Lightning fit vs a bare PyTorch loop of the same model, data, optimizer and clipping
   (target at most 1.15x); the sides alternate 3 times and the fastest of each counts.
2. Recording callbacks (`TraceRecorder` and `WeightSnapshot` as the paper 1 configs set them:
   every 10 epochs and at the best checkpoint) on vs off, over 10 epochs (target at most 1.10x).
3. The traced core (every gate recorded) vs the fused `torch.nn.GRU`, forward and backward.
4. The allocator setting every fit makes (`experiments.allocator.keep_freed_memory`, glibc's
   `mallopt`) vs glibc's defaults: the bare loop's steps in two fresh processes, one with it and
   one without (a process's allocator setting cannot be undone). Without it, a batch-1 step
   page-faults on its fresh weight-sized gradients (about 2,400 faults a step).
5. Two ways tried to shorten paper 1's 5,900 model-epochs, against today's training
   step (forward, backward, clipping, fused Adam): a vectorised ensemble (`torch.func.vmap` over
   the stacked parameters of K members, each with its own example) vs K single-model steps, and
   `torch.compile` of the forward vs eager. At batch 1 a step reads every weight, gradient and
   Adam moment (3.45M parameters, about 265 MB of traffic a step); K members with their own
   weights read K times as much, so batching them saves only per-operation overhead.

Every comparison runs its two sides in the same process, one after the other, so the ratio is
independent of how fast this machine is. Threads: `torch.get_num_threads()` as set by
`OMP_NUM_THREADS`.
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("WANDB_MODE", "disabled")

import pytorch_lightning as pl  # noqa: E402
import torch  # noqa: E402
from pytorch_lightning.callbacks import ModelCheckpoint  # noqa: E402

from datamodules import LookupTableDataModule  # noqa: E402
from experiments.allocator import keep_freed_memory  # noqa: E402
from lightning_modules.callbacks import SelectionScore, TraceRecorder, WeightSnapshot  # noqa: E402
from lightning_modules.recurrent import GRU  # noqa: E402
from lightning_modules.seq2seq import Seq2Seq, sequence_losses  # noqa: E402

PAPER1_MODEL = dict(
    embedding_size=16, decoder_embedding_size=512, hidden_size=512, attention="mlp",
    full_focus=True, attention_guidance_weight=1.0, teacher_forcing_ratio=0.0, init_range=0.08,
)  # fmt: skip
SPLITS = ["validation", "heldout_inputs", "heldout_compositions", "heldout_tables",
          "new_compositions"]  # fmt: skip


def data() -> LookupTableDataModule:
    module = LookupTableDataModule(batch_size=1, source_eos=False, target_eos=False)
    module.setup()
    return module


def model(datamodule: LookupTableDataModule) -> Seq2Seq:
    pl.seed_everything(0, verbose=False)
    return Seq2Seq(datamodule.source_vocab_size, datamodule.target_vocab_size, **PAPER1_MODEL)


def bare_loop(steps: int) -> float:
    """The same training steps without Lightning: forward, loss, backward, clip, Adam."""
    datamodule = data()
    network = model(datamodule)
    optimizer = network.configure_optimizers()
    loader = datamodule.train_dataloader()
    loader.sampler.set_epoch(0)
    start = time.perf_counter()
    for step, batch in enumerate(loader):
        if step == steps:
            break
        logits, attention = network(batch["source"], batch["source_lengths"], batch["target"])
        losses = sequence_losses(logits, attention, batch)
        weight = network.hparams.attention_guidance_weight
        loss = losses["token_loss"] + weight * losses["attention_loss"]
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(network.parameters(), 5.0)
        optimizer.step()
    return time.perf_counter() - start


def lightning_fit(epochs: int, steps: int | None, callbacks: list, folder: str) -> float:
    datamodule = data()
    network = model(datamodule)
    trainer = pl.Trainer(
        max_epochs=epochs, limit_train_batches=steps, limit_val_batches=None if epochs > 1 else 0,
        num_sanity_val_steps=0, gradient_clip_val=5.0, logger=False, enable_progress_bar=False,
        enable_model_summary=False, enable_checkpointing=any(
            isinstance(c, ModelCheckpoint) for c in callbacks
        ), callbacks=callbacks, default_root_dir=folder,
    )  # fmt: skip
    start = time.perf_counter()
    trainer.fit(network, datamodule)
    return time.perf_counter() - start


def checkpoint(folder: str) -> ModelCheckpoint:
    return ModelCheckpoint(dirpath=folder, monitor="val/selection", mode="max", save_last=True)


def traced_vs_fused(repeats: int) -> tuple[float, float]:
    """Forward+backward of a 512-unit GRU over [64, 20, 16] inputs, fused vs every gate traced."""
    torch.manual_seed(0)
    layer = GRU(16, 512)
    inputs = torch.randn(64, 20, 16)

    def run(record: dict | None) -> float:
        start = time.perf_counter()
        for _ in range(repeats):
            layer.zero_grad()
            outputs, _ = layer(inputs, record=record)
            outputs.sum().backward()
        return time.perf_counter() - start

    run(None), run({})  # warm up
    return run(None), run({})


def training_steps(network: Seq2Seq, batches: list, loss_of) -> float:
    """Seconds for today's training step over `batches` (`loss_of(batch)` gives the loss)."""
    optimizer = network.configure_optimizers()
    start = time.perf_counter()
    for batch in batches:
        loss = loss_of(batch)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(network.parameters(), 5.0)
        optimizer.step()
    return time.perf_counter() - start


def paper1_loss(network: Seq2Seq, batch: dict, **forward) -> torch.Tensor:
    logits, attention = network(batch["source"], batch["source_lengths"], batch["target"],
                                **forward)  # fmt: skip
    losses = sequence_losses(logits, attention, batch)
    return (
        losses["token_loss"] + network.hparams.attention_guidance_weight * losses["attention_loss"]
    )


def ensemble_vs_single(members: int, steps: int) -> tuple[float, float]:
    """Seconds for `steps` steps of `members` models trained as one vmapped ensemble (each member
    its own example of the same length; the encoder runs its traced path, which vmap can batch)
    vs `members` times `steps` single-model steps."""
    datamodule = data()
    loader = datamodule.train_dataloader()
    loader.sampler.set_epoch(0)
    shape = next(iter(loader))["source"].shape  # members of a step need equal lengths to stack
    matching = [batch for batch in loader if batch["source"].shape == shape]
    batches = (matching * (steps * members // len(matching) + 1))[: steps * members]
    single = model(datamodule)
    baseline = training_steps(single, batches, lambda b: paper1_loss(single, b))
    networks = [model(datamodule) for _ in range(members)]
    parameters, buffers = torch.func.stack_module_state(networks)
    skeleton = model(datamodule).to("meta")
    parameters = {k: torch.nn.Parameter(v) for k, v in parameters.items()}
    optimizer = torch.optim.Adam(parameters.values(), lr=1e-3, fused=True)

    def member_loss(member_parameters, member_buffers, batch):
        logits, attention = torch.func.functional_call(
            skeleton, (member_parameters, member_buffers),
            (batch["source"], batch["source_lengths"], batch["target"]), {"record": {}},
        )  # fmt: skip
        losses = sequence_losses(logits, attention, batch)
        return losses["token_loss"] + losses["attention_loss"]

    losses = torch.func.vmap(member_loss)
    start = time.perf_counter()
    for step in range(steps):
        group = batches[step * members : (step + 1) * members]
        stacked = {
            k: torch.stack([b[k] for b in group]) for k in group[0] if torch.is_tensor(group[0][k])
        }
        loss = losses(parameters, buffers, stacked).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()  # per-member clipping left out: it only adds to the ensemble's time
    return time.perf_counter() - start, baseline


def compiled_vs_eager(steps: int) -> tuple[float, float]:
    """Seconds for `steps` training steps with the forward `torch.compile`d (after 20 warm-up
    steps that include compilation) vs eager."""
    datamodule = data()
    loader = datamodule.train_dataloader()
    loader.sampler.set_epoch(0)
    batches = [batch for _, batch in zip(range(steps + 20), loader, strict=False)]
    eager = model(datamodule)
    baseline = training_steps(eager, batches[20:], lambda b: paper1_loss(eager, b))
    network = model(datamodule)
    compiled = torch.compile(functools.partial(paper1_loss, network), dynamic=False)
    training_steps(network, batches[:20], compiled)
    return training_steps(network, batches[20:], compiled), baseline


ALLOCATOR_CHILD = """
import sys
from benchmarks.paper1_training import bare_loop
from experiments.allocator import keep_freed_memory
if sys.argv[1] == "kept":
    assert keep_freed_memory(), "glibc's mallopt is not available here"
bare_loop(20)
print(bare_loop(int(sys.argv[2])))
"""


def allocator_kept_vs_default(steps: int, repeats: int) -> tuple[float, float]:
    """Seconds for `steps` bare-loop steps in a fresh process with `keep_freed_memory()` vs one
    with glibc's defaults (after 20 warm-up steps each); the sides alternate, fastest counts."""

    def child(setting: str) -> float:
        command = [sys.executable, "-c", ALLOCATOR_CHILD, setting, str(steps)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        return float(done.stdout.strip().splitlines()[-1])

    pairs = [(child("kept"), child("default")) for _ in range(repeats)]
    return min(p[0] for p in pairs), min(p[1] for p in pairs)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="steps for fit vs bare loop")
    parser.add_argument("--repeats-fit", type=int, default=3, help="repeats of fit vs bare")
    parser.add_argument("--epochs", type=int, default=10, help="epochs for recording on/off")
    parser.add_argument("--repeats", type=int, default=20, help="repeats for traced vs fused")
    parser.add_argument("--members", type=int, default=5, help="models in the vmapped ensemble")
    parser.add_argument("--ensemble-steps", type=int, default=40,
                        help="steps for ensemble vs singles and compiled vs eager")  # fmt: skip
    args = parser.parse_args(argv)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    rows = []
    kept, default = allocator_kept_vs_default(args.steps, args.repeats_fit)
    what = f"{args.steps} bare steps in fresh processes, fastest of {args.repeats_fit}"
    rows.append(("freed memory kept / glibc default", kept, default, None, what))
    keep_freed_memory()  # the rows below measure today's path, which fits with it
    with tempfile.TemporaryDirectory() as folder:
        bare_loop(20), lightning_fit(1, 20, [], folder)  # warm up
        pairs = [(bare_loop(args.steps), lightning_fit(1, args.steps, [], folder))
                 for _ in range(args.repeats_fit)]  # fmt: skip
        bare, fitted = min(p[0] for p in pairs), min(p[1] for p in pairs)
        what = f"{args.steps} steps, fastest of {args.repeats_fit}"
        rows.append(("Lightning fit / bare loop", fitted, bare, 1.15, what))
        off = lightning_fit(args.epochs, None, [SelectionScore(), checkpoint(folder + "/off")],
                            folder + "/off")  # fmt: skip
        on = lightning_fit(
            args.epochs, None,
            [SelectionScore(), checkpoint(folder + "/on"), TraceRecorder(SPLITS, every_n_epochs=10),
             WeightSnapshot(every_n_epochs=10)],
            folder + "/on",
        )  # fmt: skip
        rows.append(("recording on / off", on, off, 1.10, f"{args.epochs} epochs"))
    fused, traced = traced_vs_fused(args.repeats)
    rows.append(("traced core / fused nn.GRU", traced, fused, None, f"{args.repeats} fwd+bwd"))
    ensemble, singles = ensemble_vs_single(args.members, args.ensemble_steps)
    rows.append((f"vmap ensemble of {args.members} / singles", ensemble, singles, None,
                 f"{args.ensemble_steps} steps of {args.members} models"))  # fmt: skip
    compiled, eager = compiled_vs_eager(args.ensemble_steps)
    rows.append(("torch.compile / eager step", compiled, eager, None,
                 f"{args.ensemble_steps} steps after compiling"))  # fmt: skip
    print(f"{'comparison':32} {'measured s':>11} {'baseline s':>11} {'ratio':>7}  target")
    for name, measured, baseline, target, what in rows:
        ratio = measured / baseline
        verdict = "" if target is None else f"<= {target}: {'met' if ratio <= target else 'MISSED'}"
        print(f"{name:32} {measured:11.2f} {baseline:11.2f} {ratio:7.2f}  {verdict} ({what})")


if __name__ == "__main__":
    main()
