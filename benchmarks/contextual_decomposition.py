"""`make bench`: batched contextual decomposition vs a per-example loop, measured in one run.

The loop is written in the style of the reference implementation of Murdoch et al. (2018)
(`cd.py` of their ContextualDecomposition repository, as paper 2's analyses would run it): one
sequence and one phrase at a time, NumPy matrix-vector products per gate and time step, the
scores read at the sequence's last position. The batched side is
`probes.contextual_decomposition.decompose_language_model` over every (sequence, phrase) row at
once. Both decompose the same model (paper 2's sizes: |V| = 1002, 200 embedding and hidden
units) on the same paper-2 probe windows, each side run `--repeats` times alternately with the
fastest run counting; the target is at least 50x faster with the relevant and irrelevant logits
equal to 1e-5 (relative to the largest logit). Threads: `OMP_NUM_THREADS` (torch's default: all
cores); the loop's small NumPy products gain nothing from more threads.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from lightning_modules.language_model import LanguageModel
from probes.contextual_decomposition import decompose_language_model


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _decompose_three(a, b, c, activation):
    a_part = 0.5 * (activation(a + c) - activation(c) + activation(a + b + c) - activation(b + c))
    b_part = 0.5 * (activation(b + c) - activation(c) + activation(a + b + c) - activation(a + c))
    return a_part, b_part, activation(c)


def _decompose_tanh_two(a, b):
    a_part = 0.5 * (np.tanh(a) + (np.tanh(a + b) - np.tanh(b)))
    b_part = 0.5 * (np.tanh(b) + (np.tanh(a + b) - np.tanh(a)))
    return a_part, b_part


def reference_cd(
    weights: dict[str, np.ndarray], vectors: np.ndarray, start: int, stop: int
) -> tuple[np.ndarray, np.ndarray]:
    """CD of one sequence `vectors` `[time, features]` for the phrase `start..stop` (inclusive),
    one step at a time; returns the (relevant, irrelevant) logits at the last position."""
    W_ii, W_if, W_ig, W_io = np.split(weights["weight_ih"], 4, 0)
    W_hi, W_hf, W_hg, W_ho = np.split(weights["weight_hh"], 4, 0)
    b_i, b_f, b_g, b_o = np.split(weights["bias"], 4)
    time_steps, units = len(vectors), W_hi.shape[1]
    relevant, irrelevant = np.zeros((time_steps, units)), np.zeros((time_steps, units))
    relevant_h, irrelevant_h = np.zeros((time_steps, units)), np.zeros((time_steps, units))
    for i in range(time_steps):
        previous_relevant = relevant_h[i - 1] if i > 0 else np.zeros(units)
        previous_irrelevant = irrelevant_h[i - 1] if i > 0 else np.zeros(units)
        rel_i, rel_g, rel_f, rel_o = (W @ previous_relevant for W in (W_hi, W_hg, W_hf, W_ho))
        irrel_i, irrel_g, irrel_f, irrel_o = (
            W @ previous_irrelevant for W in (W_hi, W_hg, W_hf, W_ho)
        )
        inside = start <= i <= stop
        from_input = [W @ vectors[i] for W in (W_ii, W_ig, W_if, W_io)]
        if inside:
            rel_i, rel_g, rel_f, rel_o = (
                a + b for a, b in zip((rel_i, rel_g, rel_f, rel_o), from_input, strict=True)
            )
        else:
            irrel_i, irrel_g, irrel_f, irrel_o = (
                a + b for a, b in zip((irrel_i, irrel_g, irrel_f, irrel_o), from_input, strict=True)
            )
        rel_ci, irrel_ci, bias_ci = _decompose_three(rel_i, irrel_i, b_i, _sigmoid)
        rel_cg, irrel_cg, bias_cg = _decompose_three(rel_g, irrel_g, b_g, np.tanh)
        relevant[i] = rel_ci * (rel_cg + bias_cg) + bias_ci * rel_cg
        irrelevant[i] = irrel_ci * (rel_cg + irrel_cg + bias_cg) + (rel_ci + bias_ci) * irrel_cg
        if inside:
            relevant[i] += bias_ci * bias_cg
        else:
            irrelevant[i] += bias_ci * bias_cg
        if i > 0:
            rel_cf, irrel_cf, bias_cf = _decompose_three(rel_f, irrel_f, b_f, _sigmoid)
            relevant[i] += (rel_cf + bias_cf) * relevant[i - 1]
            irrelevant[i] += (rel_cf + irrel_cf + bias_cf) * irrelevant[i - 1]
            irrelevant[i] += irrel_cf * relevant[i - 1]
        output_gate = _sigmoid(rel_o + irrel_o + b_o)
        new_relevant, new_irrelevant = _decompose_tanh_two(relevant[i], irrelevant[i])
        relevant_h[i] = output_gate * new_relevant
        irrelevant_h[i] = output_gate * new_irrelevant
    scores = weights["output"] @ relevant_h[-1]
    irrelevant_scores = weights["output"] @ irrelevant_h[-1] + weights["output_bias"]
    return scores, irrelevant_scores


def reference_weights(model: LanguageModel) -> dict[str, np.ndarray]:
    lstm = model.lstm
    return {
        "weight_ih": lstm.weight_ih_l0.detach().numpy(),
        "weight_hh": lstm.weight_hh_l0.detach().numpy(),
        "bias": (lstm.bias_ih_l0 + lstm.bias_hh_l0).detach().numpy(),
        "output": model.output.weight.detach().numpy(),
        "output_bias": model.output.bias.detach().numpy(),
    }


def probe_rows(sequences: int, conduit_length: int, context: int = 20, vocabulary: int = 1000):
    """Paper 2's probe windows (random context, alpha, conduit), each decomposed for the open
    symbol and for every prefix of the conduit: `(tokens [rows, time], spans [(start, stop)])`."""
    generator = torch.Generator().manual_seed(0)
    time_steps = context + conduit_length + 1
    windows = torch.randint(vocabulary, (sequences, time_steps), generator=generator)
    windows[:, context] = vocabulary  # alpha
    spans = [(context, context + i) for i in range(conduit_length + 1)]
    tokens = windows.repeat_interleave(len(spans), 0)
    return tokens, spans * sequences


def compare(sequences: int, conduit_length: int, repeats: int = 3) -> dict[str, float]:
    torch.manual_seed(0)
    model = LanguageModel(vocab_size=1002).eval()
    tokens, spans = probe_rows(sequences, conduit_length)
    relevant = torch.zeros(tokens.shape, dtype=torch.bool)
    for row, (start, stop) in enumerate(spans):
        relevant[row, start : stop + 1] = True
    last = tokens.shape[1] - 1
    weights = reference_weights(model)
    vectors = model.embedding(tokens).detach().numpy()
    decompose_language_model(model, tokens[:2], relevant[:2], steps=[last])  # warm-up
    batched_seconds, loop_seconds = float("inf"), float("inf")
    for _ in range(repeats):  # the fastest of `repeats` alternating runs of each side
        began = time.perf_counter()
        batched = decompose_language_model(model, tokens, relevant, steps=[last])
        batched_seconds = min(batched_seconds, time.perf_counter() - began)
        began = time.perf_counter()
        looped = [reference_cd(weights, vectors[row], *spans[row]) for row in range(len(tokens))]
        loop_seconds = min(loop_seconds, time.perf_counter() - began)

    reference_relevant = torch.from_numpy(np.stack([r for r, _ in looped]))
    reference_irrelevant = torch.from_numpy(np.stack([i for _, i in looped]))
    scale = batched.full[:, 0].abs().max()
    difference = max(
        (batched.relevant[:, 0] - reference_relevant).abs().max(),
        (batched.irrelevant[:, 0] - reference_irrelevant).abs().max(),
    )
    return {
        "rows": len(tokens),
        "batched_seconds": batched_seconds,
        "loop_seconds": loop_seconds,
        "speedup": loop_seconds / batched_seconds,
        "relative_difference": float(difference / scale),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sequences", type=int, default=50, help="probe windows")
    parser.add_argument("--conduit-length", type=int, default=8)
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs of each side; the fastest counts"
    )
    args = parser.parse_args(argv)
    result = compare(args.sequences, args.conduit_length, args.repeats)
    print(
        f"CD of {result['rows']} (sequence, phrase) rows, float32, {torch.get_num_threads()} "
        f"threads, fastest of {args.repeats}: per-example loop {result['loop_seconds']:.2f} s, "
        f"batched {result['batched_seconds']:.3f} s -> {result['speedup']:.0f}x faster "
        f"(target >= 50x); largest difference {result['relative_difference']:.1e} of the "
        "largest logit (target <= 1e-5)"
    )


if __name__ == "__main__":
    main()
