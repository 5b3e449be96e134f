"""Paper 4's measurements of one trained model: sections 3-5's neuron analysis of a GRU (the
three-stage identification, Table 1 with its controls, the gate interaction, the figures' data)
and the accuracies section 2 and 5 set beside the test accuracy."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from scipy.stats import spearmanr
from sklearn.decomposition import PCA

from datamodules.token_positioning import SPECIALS
from experiments.paper4.analysed import FUNCTIONS
from experiments.paper4.claims import FIGURE2_TOKENS
from experiments.paper4.scales import Scale
from lightning_modules.callbacks import TokenPositioningAccuracy
from probes.neuron_functions import (
    ANALYSED_POSITIONS,
    ANALYSED_SPLITS,
    HYPOTHESES,
    TokenNeurons,
    analysable,
    analysed_rows,
    analysed_tokens,
    identify_neurons,
)
from probes.neuron_manipulation import gate_interaction, verify_neurons
from storage import RunLayout
from storage.files import write_text_atomic
from storage.layout import UNTRAINED
from storage.run_folder import RunFolder

POSITIONS = ANALYSED_POSITIONS
"""Section 4: positions 1-13."""


@torch.no_grad()
def positioning_accuracy(
    model,
    datamodule,
    split: str,
    batches: int | None = None,
    random_seed: int | None = None,
    words_only: bool = False,
) -> float:
    """Token-positioning accuracy of greedy decoding on the first `batches` batches of `split`
    (all with None); with `random_seed`, every decoder input is a random token instead (section
    5's side finding), drawn from the whole vocabulary, or with `words_only` the first input
    `<sos>` and every later one a word (`random_word_inputs`)."""
    if words_only and random_seed is None:
        raise ValueError("words_only draws the decoder inputs at random: give random_seed too")
    metric = TokenPositioningAccuracy()
    generator = None if random_seed is None else torch.Generator().manual_seed(random_seed)
    for batch in itertools.islice(datamodule.split_dataloader(split), batches):
        steps = batch["target"].shape[1]
        if words_only:  # fed as forced inputs after <sos>
            words = random_word_inputs(datamodule, len(batch["source"]), steps, generator)
            logits, _ = model(batch["source"], batch["source_lengths"], target=words,
                              teacher_forcing_ratio=1.0)  # fmt: skip
        else:
            logits, _ = model(batch["source"], batch["source_lengths"], steps=steps,
                              random_inputs=generator)  # fmt: skip
        metric.update(logits.argmax(-1), batch["signal_token"], batch["signal_position"])
    return float(metric.compute())


def random_word_inputs(
    datamodule, rows: int, steps: int, generator: torch.Generator
) -> torch.Tensor:
    """`[rows, steps]` ids drawn uniformly with `generator` from the words of a
    `TokenPositioningDataModule`'s vocabulary: never `<pad> <sos> <eos> <unk>` nor a position
    token (the vocabulary's fixed entries, before the words). Fed as the decoder's forced inputs
    they follow its first input, `<sos>`."""
    first, end = len(SPECIALS) + datamodule.max_tokens, len(datamodule.vocab)
    if end <= first:
        raise ValueError(
            f"the vocabulary has no words after its {first} special and position tokens to draw "
            "decoder inputs from: train on text with words"
        )
    return torch.randint(first, end, (rows, steps), generator=generator)


def storing_change_ratio(traced, neurons: TokenNeurons) -> float:
    """Finding 1 / Figure 2 as a number: the mean absolute step-to-step change of the storing
    units from t = -1 to T - 1, divided by that of the other units (below 1: they change less)."""
    own = traced.rows(traced.token == neurons.token)
    paper_time = torch.arange(own.states.shape[1])[None] - 1
    steps = (paper_time[:, 1:] >= 0) & (paper_time[:, 1:] <= own.position[:, None] - 1)
    change = (own.states[:, 1:] - own.states[:, :-1]).abs()[steps]  # [samples, units]
    others = torch.ones(change.shape[-1], dtype=torch.bool)
    others[neurons.storing] = False
    if neurons.storing.numel() == 0 or not others.any():
        return float("nan")
    return float(change[:, neurons.storing].mean() / change[:, others].mean())


def output_magnitude(traced, neurons: TokenNeurons, others: bool = False) -> float:
    """Finding 4: the mean |h_T| of the outputting units over this token's rows ("their values
    tend to be close to -1 or +1"); with `others`, of every other unit on the same rows (what
    the outputting units are nearer to ±1 than)."""
    own = traced.rows(traced.token == neurons.token)
    if neurons.outputting.numel() == 0:
        return float("nan")
    chosen = torch.zeros(own.states.shape[-1], dtype=torch.bool)
    chosen[neurons.outputting] = True
    return float(own.states_at()[:, ~chosen if others else chosen].abs().mean())


def counting_rise(own, units: torch.Tensor) -> torch.Tensor:
    """`[units]`: how much each of `units` rises from t = 0 to T - 1, on average over the rows
    of `own` (negative: it counts "in the opposite manner", finding 2)."""
    return (own.states_at(-1) - own.states[:, 1])[:, units].mean(0)


def counting_jump(own, units: torch.Tensor) -> torch.Tensor:
    """`[units]`: each of `units`' mean step h_0 - h_{-1} over the rows of `own`, when the signal
    T reaches the encoder (the paper: counting units "face significant drop" there)."""
    return (own.states[:, 1] - own.states[:, 0])[:, units].mean(0)


def counting_units(traced, neurons: TokenNeurons) -> dict[str, list[float]]:
    """Finding 2's mirrored process, per counting unit of this token: its `jump` at t = 0 and
    its `rise` from t = 0 to T - 1 (a unit jumping up then falling counts "in the opposite
    manner")."""
    own = traced.rows(traced.token == neurons.token)
    return {"jump": counting_jump(own, neurons.counting).tolist(),
            "rise": counting_rise(own, neurons.counting).tolist()}  # fmt: skip


def counting_directions(traced, neurons: TokenNeurons) -> dict[str, int]:
    """Finding 2: how many counting units rise from t = 0 to T - 1 on average over this token's
    rows, and how many fall ("some neurons perform counting in the opposite manner")."""
    rise = counting_rise(traced.rows(traced.token == neurons.token), neurons.counting)
    return {"rising": int((rise > 0).sum()), "falling": int((rise < 0).sum())}


def signal_coverage(datamodule, tokens: list[int], positions) -> dict[str, float]:
    """Section 4: the share of the data on the analysed tokens ("50 most common tokens
    (occupying 48% of the data)") and positions ("1 to 13 (occupying 75% of the data)"), as the
    chance that a signal drawn uniformly from a training pair's output line has one of them."""
    vocab = datamodule.vocab
    analysed, last = {vocab[t] for t in tokens}, max(positions)
    token_share, position_share = [], []
    for _, target in datamodule.datasets["train"].pairs:
        token_share.append(sum(word in analysed for word in target) / len(target))
        position_share.append(min(last, len(target)) / len(target))
    return {"tokens": float(np.mean(token_share)), "positions": float(np.mean(position_share))}


def counting_curves(traced, neurons: list[TokenNeurons], by_drop: bool = False
                    ) -> dict[int, list[float]]:  # fmt: skip
    """Figure 3: by T, the mean over rows (all tokens) of the counting units' average value at
    t = -1 .. T, each unit's sign turned so that it rises from t = 0 to T - 1 ("some neurons
    perform counting in the opposite manner"); with `by_drop`, so that it drops at t = 0 (the
    sign of -jump, +1 where it is 0: the alignment does not look at the rise it tests)."""
    sums: dict[int, np.ndarray] = {}
    counts: dict[int, int] = {}
    for token_neurons in neurons:
        own = traced.rows(traced.token == token_neurons.token)
        units = token_neurons.counting
        if units.numel() == 0:
            continue
        turn = -counting_jump(own, units) if by_drop else counting_rise(own, units)
        aligned = own.states[:, :, units] * turn.sign().where(turn != 0, 1.0)
        for position in sorted(set(own.position.tolist())):
            curve = aligned[own.position == position][:, : position + 2].mean(-1)  # t=-1..T
            sums[position] = sums.get(position, 0) + curve.sum(0).numpy()
            counts[position] = counts.get(position, 0) + curve.shape[0]
    return {p: (sums[p] / counts[p]).tolist() for p in sorted(sums)}


def counting_statistics(curves: dict[int, list[float]]) -> tuple[float, float]:
    """Finding 2 as numbers: Spearman's rho between T and the aligned counting value at t = 0
    (the paper: larger T, deeper drop, so rho < 0), and the share of steps t -> t + 1 within
    t = 0 .. T - 1 where the mean value rises (the paper: it "slowly increases")."""
    positions = [p for p in curves if p >= 2]
    rho = float(spearmanr(positions, [curves[p][1] for p in positions]).statistic)
    rises = [curves[p][t + 2] > curves[p][t + 1] for p in positions for t in range(p - 1)]
    return rho, float(np.mean(rises))


def figure2_points(traced, neurons: list[TokenNeurons], vocab: list[str]) -> pd.DataFrame:
    """Figure 2: PCA (2 components) of the union of the ten most common tokens' storing units,
    over their rows' h_t, t = -1 .. T - 1."""
    chosen = neurons[:FIGURE2_TOKENS]
    units = torch.cat([n.storing for n in chosen] or [torch.zeros(0, dtype=torch.long)]).unique()
    frames = []
    for token_neurons in chosen:
        own = traced.rows(traced.token == token_neurons.token)
        for row in range(len(own.token)):
            position = int(own.position[row])
            for index in range(position + 1):  # t = index - 1 = -1 .. T - 1
                frames.append((vocab[token_neurons.token], index - 1, position,
                               own.states[row, index, units].numpy()))  # fmt: skip
    if units.numel() < 2 or not frames:
        return pd.DataFrame(columns=["token", "t", "T", "pc1", "pc2"])
    points = PCA(2, random_state=0).fit_transform(np.stack([f[3] for f in frames]))
    return pd.DataFrame(
        {
            "token": [f[0] for f in frames],
            "t": [f[1] for f in frames],
            "T": [f[2] for f in frames],
            "pc1": points[:, 0],
            "pc2": points[:, 1],
        }
    )


def analyse(model, datamodule, scale: Scale, correct_only: bool) -> dict:
    """Sections 3-5 on one GRU (`model`, on `datamodule`'s held-out pairs): stage 1-3 for every
    analysed token, Table 1 (with the other readings of `verify_neurons`'s `readings`, every
    manipulation also by T), the gate interaction, the accuracy with random decoder inputs (of the
    whole vocabulary, and of words after `<sos>`) and the figures' data, as a JSON-ready dict;
    with `correct_only`, on the rows the model answers correctly, else on every requested row
    (`correct_only` records which)."""
    torch.manual_seed(0)
    tokens = analysed_tokens(datamodule, scale.tokens)
    traced, correct = analysed_rows(model, datamodule, tokens, POSITIONS, scale.analysis_rows,
                                    ANALYSED_SPLITS, correct_only)  # fmt: skip
    found, per_token = [], {}
    for token in tokens:
        if not analysable(traced, token):
            continue  # too few correctly answered rows to classify
        neurons = identify_neurons(model, traced, token)
        found.append(neurons)
        per_token[datamodule.vocab[token]] = {
            "id": token,
            "rows": int((traced.token == token).sum()),
            **{name: neurons.units(name).tolist() for name in FUNCTIONS},
            "accuracy": neurons.accuracy,
            "candidates": {name: neurons.candidates[name].tolist() for name in HYPOTHESES},
            "verification": verify_neurons(
                model, traced, neurons, scale.control_draws, readings=True
            ),
            "outputting_abs": output_magnitude(traced, neurons),
            "others_abs": output_magnitude(traced, neurons, others=True),
            "counting_directions": counting_directions(traced, neurons),
            "counting_units": counting_units(traced, neurons),
            "gates": gate_interaction(model, traced, neurons),
            "storing_change_ratio": storing_change_ratio(traced, neurons),
        }
    curves = counting_curves(traced, found)
    rho, rises = counting_statistics(curves) if len(curves) > 2 else (float("nan"),) * 2
    by_drop = counting_curves(traced, found, by_drop=True)
    rises_by_drop = counting_statistics(by_drop)[1] if len(by_drop) > 2 else float("nan")
    return {
        "hidden_size": model.hparams.hidden_size,
        "coverage": signal_coverage(datamodule, tokens, POSITIONS),
        "rows": int(correct.numel()),
        "correct": int(correct.sum()),
        "correct_only": correct_only,
        "tokens": per_token,
        "counting_curves": {str(p): c for p, c in curves.items()},
        "counting_rho": rho,
        "counting_rises": rises,
        "counting_curves_by_drop": {str(p): c for p, c in by_drop.items()},
        "counting_rises_by_drop": rises_by_drop,
        "random_inputs_accuracy": positioning_accuracy(
            model, datamodule, "test", scale.test_batches, random_seed=0
        ),
        "random_word_inputs_accuracy": positioning_accuracy(
            model, datamodule, "test", scale.test_batches, random_seed=0, words_only=True
        ),
        "figure2": figure2_points(traced, found, datamodule.vocab).to_dict("list"),
    }


def analysis_of(path: Path, scale: Scale, reuse: bool, tag: str = "best") -> dict:
    """`analyse` of the run's checkpoint or weight snapshot `tag`, cached in
    `RunLayout.analysis_at(tag)` (read back only with `reuse`), with the test accuracy beside
    it. The trained model (`best`) is analysed on the rows it answers correctly (unless the
    scale says otherwise) and its test accuracy is the fit's test; its untrained weights
    (`UNTRAINED`, the null model) answer none, so the same analysis runs on every
    requested row, and their test accuracy is measured here, as the fit's test measures it
    (greedy decoding over the test split)."""
    layout = RunLayout(path)
    cache = layout.analysis_at(tag)
    if reuse and cache.is_file() and cache.stat().st_mtime >= layout.command.stat().st_mtime:
        return json.loads(cache.read_text())
    torch.set_num_threads(1)
    run = RunFolder(path)
    model, datamodule = run.model(tag), run.datamodule(tag)
    untrained = tag == UNTRAINED
    result = analyse(model, datamodule, scale, scale.correct_only and not untrained)
    result["test_position_acc"] = (
        positioning_accuracy(model, datamodule, "test", scale.test_batches)
        if untrained
        else run.test_accuracy("test", "position_acc")
    )
    write_text_atomic(cache, json.dumps(result) + "\n")
    return result
