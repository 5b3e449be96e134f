"""`make bench`: the probe command's speed and memory, each as a ratio measured in one run.

1. `python -m probes functional-group` over the recorded paper 1 runs (default
   `runs/paper1/*/seed=*`, the 10 runs `make reproduce-paper1` trains) with `--devices 1` and
   `--devices 2` on CPU, each from an empty cache, wall time of the whole command (process start
   included): the speed-up, and whether both tables are identical.
2. Integrated gradients (paper 4, section 3.2; `probes.neuron_functions.state_attributions`):
   one captum call over a batch of rows vs one captum call per row, on a randomly initialised GRU
   seq2seq of paper 4's sizes (the weights do not change the cost): rows per second.
3. Peak memory of reading a run's traces for the functional-group probe: only the entries it
   needs, memory-mapped from the safetensors files (`RunFolder.trace(..., keys=...)`) vs every
   entry loaded whole (`safetensors.torch.load_file`). Each in a fresh process; the peak resident
   memory (VmHWM) above the process's memory after its imports.
"""

from __future__ import annotations

import argparse
import glob
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

MEMORY = """
import sys
from probes.command.base import joined_trace
from probes.command.functional_group import FunctionalGroupOptions, FunctionalGroupProbe
from storage import RunFolder

def resident(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024

options, probe = FunctionalGroupOptions(), FunctionalGroupProbe()
run = RunFolder(sys.argv[1])
keys = probe.keys(options) if sys.argv[2] == "mapped" else None
before = resident("VmRSS")
for tag in run.trace_tags(options.splits[0]):
    trace = joined_trace(run, options.splits, tag, keys)
    del trace
print(resident("VmHWM") - before)
"""


def command_time(runs: str, devices: int, out: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "probes", "functional-group", "--runs", runs, "--out", str(out),
         "--devices", str(devices)],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return time.perf_counter() - started


def integrated_gradients(rows: int, steps: int) -> tuple[float, float, float]:
    """Rows per second batched and per row, and the largest difference of their attributions."""
    from lightning_modules.seq2seq import Seq2Seq
    from probes.neuron_functions import state_attributions

    torch.manual_seed(0)
    vocabulary, length, position = 2000, 12, 6
    model = Seq2Seq(vocabulary, vocabulary, cell="gru", embedding_size=128, hidden_size=256,
                    attention="none", bridge="last").eval()  # fmt: skip
    batch = {
        "source": torch.randint(4, vocabulary, (rows, length)),
        "source_lengths": torch.full((rows,), length),
        "decoder_inputs": torch.randint(4, vocabulary, (rows, position)),
        "signal_token": torch.randint(4, vocabulary, (rows, 2)),
    }
    states = torch.randn(rows, 256)
    t = position - 1
    started = time.perf_counter()
    batched = state_attributions(model, batch, states, t, position, steps)
    batched_time = time.perf_counter() - started
    started = time.perf_counter()
    single = torch.cat([
        state_attributions(model, {k: v[i : i + 1] for k, v in batch.items()}, states[i : i + 1],
                           t, position, steps)
        for i in range(rows)
    ])  # fmt: skip
    single_time = time.perf_counter() - started
    return rows / batched_time, rows / single_time, float((batched - single).abs().max())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", default="runs/paper1/*/seed=*")
    parser.add_argument("--ig-rows", type=int, default=64)
    parser.add_argument("--ig-steps", type=int, default=32)
    arguments = parser.parse_args(argv)
    runs = sorted(p for p in glob.glob(arguments.runs) if Path(p).is_dir())
    if not runs:
        sys.exit(
            f"benchmarks.probes: --runs {arguments.runs!r} matches no run folder: run "
            "`make reproduce-paper1` first (or give recorded paper 1 runs with --runs)."
        )

    print(f"1. python -m probes functional-group over {len(runs)} runs ({arguments.runs})")
    with tempfile.TemporaryDirectory() as scratch:
        one = command_time(arguments.runs, 1, Path(scratch) / "1")
        two = command_time(arguments.runs, 2, Path(scratch) / "2")
        same = (Path(scratch) / "1" / "functional-group.csv").read_text() == (
            Path(scratch) / "2" / "functional-group.csv"
        ).read_text()
    print(f"   1 process {one:.1f} s, 2 processes {two:.1f} s: speed-up {one / two:.2f}x "
          f"(target >= 1.6x); tables identical: {same}")  # fmt: skip

    batched, single, difference = integrated_gradients(arguments.ig_rows, arguments.ig_steps)
    print(f"2. integrated gradients, {arguments.ig_rows} rows x {arguments.ig_steps} steps: "
          f"batched {batched:.1f} rows/s, one captum call per row {single:.1f} rows/s: "
          f"{batched / single:.1f}x; largest attribution difference {difference:.2e}")  # fmt: skip

    peaks = {}
    for mode in ("mapped", "whole"):
        done = subprocess.run([sys.executable, "-c", MEMORY, runs[0], mode], check=True,
                              capture_output=True, text=True)  # fmt: skip
        peaks[mode] = int(done.stdout.split()[-1])
    print(
        f"3. peak memory reading {runs[0]}'s traces (every tag) for functional-group: "
        f"memory-mapped, needed entries {peaks['mapped'] / 2**20:.1f} MiB, loaded whole "
        f"{peaks['whole'] / 2**20:.1f} MiB: {peaks['whole'] / max(peaks['mapped'], 1):.1f}x less"
    )


if __name__ == "__main__":
    main()
