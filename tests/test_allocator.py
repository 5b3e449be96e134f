"""Fits keep freed memory in the process (`experiments.allocator`): a batch-1 training step of a
seq2seq GRU of paper 1's width (the suite's recurrent layers, 512 units, fused Adam, clipped
gradients; without Lightning, whose import would cost each of the six processes seconds) stops
page-faulting on its fresh weight-sized gradients."""

import statistics
import subprocess
import sys

import pytest

STEPS = """
import resource, sys, torch
from experiments.allocator import keep_freed_memory
from lightning_modules.recurrent import GRU
if sys.argv[1] == "kept":
    assert keep_freed_memory()
torch.manual_seed(0)
torch.set_num_threads(1)
embedding, output = torch.nn.Embedding(8, 512), torch.nn.Linear(512, 8)
encoder, decoder = GRU(512, 512), GRU(512, 512)
parameters = [p for m in (embedding, encoder, decoder, output) for p in m.parameters()]
optimizer = torch.optim.Adam(parameters, fused=True)
def faults(steps):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(steps):
        source, target = torch.randint(3, 8, (3, 1)), torch.randint(3, 8, (3, 1))
        _, state = encoder(embedding(source))
        states, _ = decoder(embedding(target), state)
        loss = torch.nn.functional.cross_entropy(output(states).flatten(0, 1), target.flatten())
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(parameters, 5.0)
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
    setting. The count varies from process to process with its heap layout: over 30 processes,
    304-1,670 faults a step with glibc's defaults (most 1,050-1,440) and 0-154 with the setting
    (mostly below 0.2), so each side is the median of 3 processes. The floor on the defaults' side
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
