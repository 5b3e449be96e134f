"""`make bench`: how long the command lines take to answer `--help`, each against a yardstick
measured in the same run, pair by pair (A then B, repeated), so that the ratio holds on a busy
machine: `python -m probes --help`, `python -m experiments.paperN --help` and `python -m
experiments.atlas --help` against `python -c "import torch"` (target: at most 1.5x), and
`python -m experiments fit --help` against
a bare `LightningCLI` of the same base classes (target: at most 1.2x). Figures are CPU seconds
(user + system) of the finished process, the median over `--runs` pairs; wall seconds beside."""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time

PYTHON = sys.executable
IMPORT_TORCH = [PYTHON, "-c", "import torch"]
BARE_CLI = [PYTHON, "-c", "from pytorch_lightning import LightningDataModule, LightningModule\n"
            "from pytorch_lightning.cli import LightningCLI\n"
            "LightningCLI(LightningModule, LightningDataModule, subclass_mode_model=True, "
            "subclass_mode_data=True, args=['fit', '--help'])"]  # fmt: skip
PAIRS = [
    ("python -m probes --help", [PYTHON, "-m", "probes", "--help"], "import torch",
     IMPORT_TORCH, 1.5),
    *((f"python -m experiments.{study} --help", [PYTHON, "-m", f"experiments.{study}",
       "--help"], "import torch", IMPORT_TORCH, 1.5)
      for study in ("paper1", "paper2", "paper3", "paper4", "atlas")),
    ("python -m experiments fit --help", [PYTHON, "-m", "experiments", "fit", "--help"],
     "a bare LightningCLI --help", BARE_CLI, 1.2),
]  # fmt: skip


def timed(command: list[str]) -> tuple[float, float]:
    """CPU seconds (user + system) and wall seconds of one run of `command`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="pairs per command (median)")
    runs = parser.parse_args().runs
    print("| command | CPU s | yardstick | CPU s | ratio (median of pairs) | wall ratio | target |")
    print("|---|---|---|---|---|---|---|")
    for name, command, yardstick_name, yardstick, target in PAIRS:
        timed(command), timed(yardstick)  # warm the page cache
        pairs = [(timed(command), timed(yardstick)) for _ in range(runs)]
        ratio = statistics.median(a[0] / b[0] for a, b in pairs)
        wall = statistics.median(a[1] / b[1] for a, b in pairs)
        cpu_a = statistics.median(a[0] for a, _ in pairs)
        cpu_b = statistics.median(b[0] for _, b in pairs)
        verdict = "met" if ratio <= target else "MISSED"
        print(f"| `{name}` | {cpu_a:.2f} | {yardstick_name} | {cpu_b:.2f} | {ratio:.2f}x | "
              f"{wall:.2f}x | <= {target}x: {verdict} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
