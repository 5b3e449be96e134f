"""`make bench`: what `probes.attach` costs a researcher's model, as ratios measured in one run.

Two client models of `tests/client_models.py` at working sizes: the word-language-model LSTM
(vocabulary 10,000, 200 units and the medium size's 650, 2 layers, 35 steps x 20 streams,
time-first) and the tutorial seq2seq GRU (vocabulary 1,000, 256 units, 20 source tokens, a
20-step greedy decoder loop, batch 32). For each, in evaluation mode without gradients, three
sides alternate `--repeats` times and the fastest of each counts: the model's forward before
attaching, after attaching with nothing open (target: at most 1.05x, i.e. nothing but noise),
and inside `trace()` with every site of every layer recorded (target: at most 2x). Threads:
`--threads`, else `torch.get_num_threads()` as set by `OMP_NUM_THREADS`. On a machine whose
cores are busy with other work, threads wait for each other at every parallel operation and for
the core, and the times say more of the other work than of the forward: there measure with
`--threads 1 --clock cpu`, the CPU time of the one thread that runs every operation (time spent
waiting for the core not counted), and compare ratios within one run.
"""

from __future__ import annotations

import argparse
import time

import torch

from probes.attach import attach
from tests.client_models import TutorialSeq2Seq, WordLanguageModel

CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}


def fastest(function, calls: int, clock=time.perf_counter) -> float:
    """Seconds of the fastest of `calls` calls, by `clock`."""
    times = []
    for _ in range(calls):
        start = clock()
        function()
        times.append(clock() - start)
    return min(times)


def costs(
    model: torch.nn.Module, inputs: torch.Tensor, repeats: int, clock=time.perf_counter
) -> dict[str, float]:
    """The fastest forward of `model` before attaching, attached, and traced."""
    model.eval()
    sides: dict[str, list[float]] = {"before": [], "attached": [], "traced": []}

    def traced(attached) -> None:
        with attached.trace():
            model(inputs)

    with torch.no_grad():
        model(inputs)  # warm up
        for _ in range(repeats):
            sides["before"].append(fastest(lambda: model(inputs), 3, clock))
            attached = attach(model)
            sides["attached"].append(fastest(lambda: model(inputs), 3, clock))
            sides["traced"].append(fastest(lambda attached=attached: traced(attached), 3, clock))
            attached.detach()
    return {side: min(values) for side, values in sides.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch's threads (default: as OMP_NUM_THREADS sets them)")  # fmt: skip
    parser.add_argument("--clock", choices=CLOCKS, default="wall",
                        help="wall: elapsed time; cpu: the CPU time of the calling thread, with "
                        "--threads 1 only (default: wall)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args.clock == "cpu" and torch.get_num_threads() != 1:
        parser.error("--clock cpu measures one thread: give --threads 1 with it.")
    torch.manual_seed(0)
    models = {
        "word-language-model LSTM": (WordLanguageModel(10_000, 200, 200),
                                     torch.randint(10_000, (35, 20))),
        # The medium size of PyTorch's word_language_model (650 units, 2 layers), a size
        # researchers trace.
        "word-language-model 650": (WordLanguageModel(10_000, 650, 650),
                                    torch.randint(10_000, (35, 20))),
        "tutorial seq2seq GRU": (TutorialSeq2Seq(1_000, 256, 20), torch.randint(1_000, (32, 20))),
    }  # fmt: skip
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.clock} clock")
    header = f"{'model':26} {'comparison':22} {'measured ms':>12} {'baseline ms':>12} {'ratio':>6}"
    print(f"{header}  target")
    for name, (model, inputs) in models.items():
        measured = costs(model, inputs, args.repeats, CLOCKS[args.clock])
        for comparison, side, target in (("attached / before", "attached", 1.05),
                                         ("traced / before", "traced", 2.0)):  # fmt: skip
            ratio = measured[side] / measured["before"]
            verdict = "met" if ratio <= target else "MISSED"
            print(f"{name:26} {comparison:22} {1000 * measured[side]:12.2f} "
                  f"{1000 * measured['before']:12.2f} {ratio:6.2f}  <= {target}: "
                  f"{verdict}")  # fmt: skip


if __name__ == "__main__":
    main()
