"""Fits keep freed memory in the process (`experiments.allocator`): a batch-1 training step of a
seq2seq GRU of paper 1's width (the suite's recurrent layers, 512 units, fused Adam, clipped
gradients; without Lightning, whose import would cost seconds) stops page-faulting on its fresh
weight-sized gradients."""

import json
import subprocess
import sys

import pytest

STEPS = """
import json, os, resource, sys, traceback, torch
from experiments.allocator import keep_freed_memory
from lightning_modules.recurrent import GRU
torch.optim.Adam([torch.zeros(1, requires_grad=True)], fused=True)  # imports torch._dynamo once

def faults_per_step(setting):
    if setting == "kept":
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
    faults(40)
    return faults(30)

counts = []
for pair in range(0, len(sys.argv) - 1, 2):  # two processes side by side
    started = []
    for setting in sys.argv[1 + pair : 3 + pair]:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                os.write(write, json.dumps(faults_per_step(setting)).encode())
                os._exit(0)
            except BaseException:
                traceback.print_exc()
                sys.stderr.flush()
                os._exit(1)
        os.close(write)
        started.append((pid, read))
    for pid, read in started:
        with os.fdopen(read, "rb") as child:
            written = child.read()
        assert os.waitpid(pid, 0)[1] == 0 and written, "a measuring process failed"
        counts.append(json.loads(written))
print(json.dumps(counts))
"""


def faults_per_step(settings: list[str]) -> list[float]:
    """Faults a step of one process per setting, each forked (after torch's imports) from one
    interpreter as a fit's process starts, two side by side; each counts its own faults."""
    done = subprocess.run(
        [sys.executable, "-c", STEPS, *settings], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_kept_memory_stops_page_faults_of_a_training_step():
    """On glibc (the suite's platform and CI's), the same steps page-fault far less with the
    setting. Faults come in blocks: a weight-sized gradient (3 MiB) on fresh pages is 768
    faults. With glibc's defaults the heap's top is trimmed and grown again step after step; with
    the setting the heap only grows while it has not reached its peak, which after 40 steps is
    rare. Measured over the 30 steps after 40 (3 processes a side, forked from one interpreter, in
    5 sets): 177-1,259 faults a step with the defaults, 1-27 with the setting, the sums 35 to
    1,100 times apart. (With 10 steps after 10, single processes with the setting faulted 77 or
    155 times a step, one or two blocks, and the defaults as few as 150.) The floor on the
    defaults' side only checks that the steps fault enough for the comparison to mean
    something."""
    counts = faults_per_step(["default", "kept"] * 3)
    default, kept = sum(counts[0::2]), sum(counts[1::2])
    assert default > 250, f"glibc's defaults gave {default:.0f} faults a step in 3 processes"
    assert kept < default / 3, f"with the setting {kept:.0f} faults a step, without {default:.0f}"


def test_a_fit_keeps_freed_memory(monkeypatch):
    """`python -m experiments fit` (the CLI every run goes through) sets it before anything."""
    import experiments.cli as cli

    calls = []
    monkeypatch.setattr(cli, "keep_freed_memory", lambda: calls.append(True))
    with pytest.raises(SystemExit):
        cli.main(["fit", "--config", "no-such-config.yaml"])
    assert calls == [True]
