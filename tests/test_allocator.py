"""Fits keep freed memory in the process (`experiments.allocator`): a batch-1 training step of
paper 1's model stops page-faulting on its fresh weight-sized gradients."""

import statistics
import subprocess
import sys

import pytest

STEPS = """
import resource, sys, torch
from experiments.allocator import keep_freed_memory
from lightning_modules.seq2seq import Seq2Seq, sequence_losses
if sys.argv[1] == "kept":
    assert keep_freed_memory()
torch.manual_seed(0)
torch.set_num_threads(1)
model = Seq2Seq(8, 8, hidden_size=512, decoder_embedding_size=512, full_focus=True,
                attention_guidance_weight=1.0, teacher_forcing_ratio=0.0)
optimizer = model.configure_optimizers()
def faults(steps):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(steps):
        source = torch.randint(3, 8, (1, 3))
        batch = {"target": torch.randint(3, 8, (1, 3)),
                 "attention_target": torch.arange(3).unsqueeze(0)}
        logits, attention = model(source, torch.tensor([3]), batch["target"])
        losses = sequence_losses(logits, attention, batch)
        optimizer.zero_grad()
        (losses["token_loss"] + losses["attention_loss"]).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / steps
faults(10)
print(faults(10))
"""


def faults_per_step(settings: list[str]) -> list[float]:
    """Faults a step of one fresh process per setting, the processes run side by side (each
    counts its own faults)."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", STEPS, setting],
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for setting in settings
    ]
    counts = []
    for process in processes:
        output, errors = process.communicate()
        assert process.returncode == 0, errors
        counts.append(float(output.strip().splitlines()[-1]))
    return counts


def test_kept_memory_stops_page_faults_of_a_training_step():
    """On glibc (the suite's platform and CI's), the same steps page-fault far less with the
    setting. The count varies from process to process with its heap layout: over 18 processes,
    378-3,100 faults a step with glibc's defaults (most 1,300-2,600) and 0.2-180 with the setting
    (mostly 0.2-0.4), so each side is the median of 3 processes. The floor on the defaults' side
    only checks that the steps fault enough for the comparison to mean something."""
    counts = faults_per_step(["default", "kept"] * 3)
    default, kept = statistics.median(counts[0::2]), statistics.median(counts[1::2])
    assert default > 200, f"glibc's defaults gave {default:.0f} faults a step"
    assert kept < default / 5, f"with the setting {kept:.0f} faults a step, without {default:.0f}"


def test_a_fit_keeps_freed_memory(monkeypatch):
    """`python -m experiments fit` (the CLI every run goes through) sets it before anything."""
    import experiments.cli as cli

    calls = []
    monkeypatch.setattr(cli, "keep_freed_memory", lambda: calls.append(True))
    with pytest.raises(SystemExit):
        cli.main(["fit", "--config", "no-such-config.yaml"])
    assert calls == [True]
