"""The three-stage identification of neurons of Lee et al., "Exposing the Functionalities of
Neurons for GRU Seq2Seq", section 3, for any seq2seq model of the suite.

1. **Candidates** (3.1): a linear SVM separates hidden states that have a property from those
   that do not; the hypothesis is plausible when its training accuracy exceeds 95%, and then
   recursive feature elimination keeps a generous share of units (sklearn's `LinearSVC` and
   `RFE`).
2. **Filtering** (3.2): integrated gradients (captum's `IntegratedGradients`) of the probability
   of the requested token at t = T with respect to a hidden state; candidates whose mean
   absolute attribution is below the mean over all units are dropped.
3. **Verification** (3.3): unit values are set through the recurrent core's interventions and
   the model's greedy output is checked (`position_hits`; the manipulations themselves are
   `probes.neuron_manipulation`).

Time follows the paper: t = -1 is the encoder reading the requested token, t = 0 the encoder's
last step (the decoder's initial state, the bridge being the identity), t >= 1 the decoder's
steps, so the paper's h_t for t >= 1 is the decoder's step t - 1 (`decoder_step`), and the token
requested at position T is the output of step T - 1.

sklearn, captum and the token-positioning task are imported by the functions that use them, so a
report that reads only this module's names (`HYPOTHESES`, `MANIPULATIONS`) loads neither.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

from lightning_modules.recording import pad_and_concatenate
from lightning_modules.recurrent import Intervention

if TYPE_CHECKING:
    from lightning_modules.seq2seq import Seq2Seq

PLAUSIBLE = 0.95
"""Section 3.1: a hypothesis is plausible when the classifier's accuracy exceeds this."""


def decoder_step(t: int) -> int:
    """The decoder step (0-based) that computes the paper's h_t, t >= 1."""
    if t < 1:
        raise ValueError(f"h_{t} is not a decoder state: the decoder computes h_1, h_2, ...")
    return t - 1


def untimed(record: dict[str, Tensor], site: str = "hidden") -> str | None:
    """Why the paper's time does not exist for the model `record` is a `trace` of (its encoder's
    and decoder's `site` of other widths), or None where it does."""
    units = (record[f"encoder.{site}"].shape[-1], record[f"decoder.{site}"].shape[-1])
    if units[0] == units[1]:
        return None
    return (
        f"the model's encoder's states have {units[0]} units and its decoder's {units[1]}: "
        "the paper's time puts the encoder's last state at t = 0 in the decoder's units, "
        "which does not exist for it (e.g. a bidirectional encoder handing the decoder its "
        "first and last states)"
    )


def paper_time_states(record: dict[str, Tensor], source_lengths: Tensor, site: str = "hidden"):
    """`[batch, 2 + decoder_time, units]` states by the paper's time: index `t + 1` holds h_t,
    from t = -1 (the encoder reading the last requested token, one before the source's end) and
    t = 0 (the encoder's last step) to the decoder's steps. `record` is a `trace` of the
    model; a model without the paper's time (`untimed`) is refused in one line."""
    if (source_lengths < 2).any():
        raise ValueError("paper_time_states needs sources of at least 2 tokens (token, position).")
    rows = torch.arange(source_lengths.shape[0])
    encoder = record[f"encoder.{site}"]
    why = untimed(record, site)
    if why is not None:
        raise ValueError(f"{why}; analyse a model whose decoder starts from its encoder's last "
                         "state")  # fmt: skip
    last = source_lengths.to(torch.long) - 1
    return torch.cat(
        [encoder[rows, last - 1, None], encoder[rows, last, None], record[f"decoder.{site}"]], 1
    )


@dataclass(frozen=True)
class Candidates:
    """Stage 1: the linear SVM's training `accuracy` with every unit, and the `units` (ascending)
    that recursive feature elimination keeps; `ranking` `[units]` is RFE's (1 = kept);
    `samples`: how many it was fitted on."""

    accuracy: float
    units: Tensor
    ranking: Tensor
    samples: int

    @property
    def plausible(self) -> bool:
        return self.accuracy > PLAUSIBLE


def _linear_svm(seed: int):
    from sklearn.svm import LinearSVC

    return LinearSVC(C=1.0, dual=False, max_iter=5000, class_weight="balanced", random_state=seed)


def svm_rfe_candidates(
    features: Tensor, labels: Tensor, keep: float = 0.5, step: float = 0.1, seed: int = 0
) -> Candidates:
    """Section 3.1: fit a linear SVM on `features` `[samples, units]` against `labels`
    `[samples]` (two or more classes) and keep `keep` of the units by recursive feature
    elimination, removing `step` of them per round. The paper asks for a "less-rigorous
    selection" here: the filtering stage removes false positives.

    The paper's "training accuracy" is measured here as balanced accuracy, with classes weighted
    by their inverse frequency in training: the triggering hypothesis (h_{T-1} against every
    earlier step) has one positive per row, so plain accuracy would pass 95% by always
    answering "earlier" once T exceeds 20."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.feature_selection import RFE
    from sklearn.metrics import balanced_accuracy_score

    x = features.detach().double().numpy()
    y = labels.numpy()
    if len(np.unique(y)) < 2:
        raise ValueError("svm_rfe_candidates needs samples of at least two labels.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        accuracy = float(balanced_accuracy_score(y, _linear_svm(seed).fit(x, y).predict(x)))
        selector = RFE(
            _linear_svm(seed), n_features_to_select=max(1, round(keep * x.shape[1])), step=step
        ).fit(x, y)
    return Candidates(
        accuracy,
        torch.from_numpy(np.flatnonzero(selector.support_)),
        torch.from_numpy(selector.ranking_),
        len(y),
    )


def token_probability(
    state: Tensor,
    source: Tensor,
    source_lengths: Tensor,
    decoder_inputs: Tensor,
    token: Tensor,
    model: Seq2Seq,
    t: int,
    position: int,
) -> Tensor:
    """Section 3.2's F: P(`token` at the paper's position `position`) `[batch]` when the decoder
    state h_t is `state` `[batch, units]`, the decoder fed `decoder_inputs` `[batch, time]`
    (e.g. the model's own greedy outputs, so that only the state varies)."""
    edit = Intervention("decoder.hidden", steps=(decoder_step(t),), operation="replace",
                        value=state[:, None])  # fmt: skip
    logits, _ = model(
        source, source_lengths, decoder_inputs, steps=position, teacher_forcing_ratio=1.0,
        edits=[edit],
    )  # fmt: skip
    probabilities = logits[:, position - 1].softmax(-1)
    return probabilities.gather(1, token[:, None]).squeeze(1)


def state_attributions(
    model: Seq2Seq,
    batch: dict[str, Tensor],
    states: Tensor,
    t: int,
    position: int,
    n_steps: int = 32,
    convergence_delta: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """Section 3.2: integrated gradients `[batch, units]` of P(requested token at `position`)
    with respect to h_t (`states` `[batch, units]`, from a zero baseline), for rows that all
    request their token (`batch["signal_token"][:, -1]`) at `position`. The decoder's inputs are
    held at `batch["decoder_inputs"]` (the greedy outputs of the unedited model). With
    `convergence_delta`, also captum's completeness error per row `[batch]`: the attributions'
    sum minus F(h_t) - F(0), which shrinks as `n_steps` grows."""
    from captum.attr import IntegratedGradients

    arguments = (
        batch["source"], batch["source_lengths"], batch["decoder_inputs"],
        batch["signal_token"][:, -1], model, t, position,
    )  # fmt: skip
    with torch.enable_grad():
        result = IntegratedGradients(token_probability).attribute(
            states.detach().clone(), baselines=torch.zeros_like(states),
            additional_forward_args=arguments, n_steps=n_steps,
            return_convergence_delta=convergence_delta,
        )  # fmt: skip
    if convergence_delta:
        return result[0].detach(), result[1].detach()
    return result.detach()


def attribution_filter(candidates: Tensor, attributions: Tensor, *more: Tensor) -> Tensor:
    """Section 3.2: the `candidates` whose mean absolute attribution over rows (`attributions`
    `[samples, units]`) is at least the mean over all units, ascending. With `more` maps (e.g.
    at other steps) a candidate stays when it passes under any of them."""
    passed = torch.zeros_like(candidates, dtype=torch.bool)
    for attribution in (attributions, *more):
        importance = attribution.abs().mean(0)
        passed |= importance[candidates] >= importance.mean()
    return candidates[passed].sort().values


def output_contributions(hidden: Tensor, output_weight: Tensor, token: Tensor) -> Tensor:
    """Finding 4: each unit's term h_T[i] * W[token, i] of the token's logit, `[batch, units]`,
    from the states `hidden` `[batch, units]` at t = T and the output layer's weight
    `[vocab, units]`."""
    return hidden * output_weight[token]


def outputting_units(contributions: Tensor) -> Tensor:
    """Finding 4: the units whose mean contribution to the token's logit (`contributions`
    `[samples, units]`) is positive and at least the mean absolute contribution, ascending."""
    mean = contributions.mean(0)
    return torch.nonzero((mean > 0) & (mean >= contributions.abs().mean())).flatten()


@torch.no_grad()
def greedy_outputs(
    model: Seq2Seq, batch: dict[str, Tensor], steps: int, edits: list[Intervention] = ()
) -> Tensor:
    """The model's greedy outputs `[batch, steps]` with `edits` applied."""
    logits, _ = model(batch["source"], batch["source_lengths"], steps=steps, edits=edits)
    return logits.argmax(-1)


def position_hits(outputs: Tensor, token: Tensor, position: int | Tensor) -> Tensor:
    """`[batch]` booleans: `outputs` `[batch, steps]` hold `token` `[batch]` at the 1-based
    `position` (one for all rows, or `[batch]`; False where the output is shorter)."""
    position = torch.as_tensor(position).expand(outputs.shape[0])
    inside = (position >= 1) & (position <= outputs.shape[1])
    index = (position - 1).clamp(0, outputs.shape[1] - 1)
    return inside & (outputs.gather(1, index[:, None])[:, 0] == token)


# ---- stage 3: the manipulations of section 4 (Table 1), for rows that share T --------------------
def _values(states: Tensor, units: Tensor, t: int) -> Tensor:
    """`[batch, units]` values of `units` at the paper's time t in `paper_time_states`."""
    return states[:, t + 1][:, units]


def storing_zero(units: Tensor, position: int) -> Intervention:
    """Finding 1: storing units at t = T - 1 set to zero (the token should be lost)."""
    return Intervention("decoder.hidden", units.tolist(), (decoder_step(position - 1),), "zero")


def storing_previous(units: Tensor, position: int, states: Tensor) -> Intervention:
    """Finding 1: storing units at every t = 1 .. T - 1 replaced by their value at t - 1 in the
    unedited run (the token should survive)."""
    steps = [decoder_step(t) for t in range(1, position)]
    value = states[:, 1:position][:, :, units]  # h_0 .. h_{T-2}
    return Intervention("decoder.hidden", units.tolist(), steps, "replace", value)


def counting_delay(
    units: Tensor, position: int, k: int, states: Tensor, before: int = 1
) -> Intervention:
    """Finding 2: counting units at t = T - `before` set to their values at t = T - `before` - k
    (the token should come at T + k). The paper does not say at which t; `before` = 1 edits the
    last state before the output (where the triggering units have already fired), `before` = 2
    the state before the trigger. Needs T - before - k >= 0 and T - before >= 1."""
    edited = position - before
    if edited - k < 0 or edited < 1:
        raise ValueError(
            f"counting_delay needs T - {before} - k >= 0 and T - {before} >= 1, got T={position},"
            f" k={k}"
        )
    return Intervention(
        "decoder.hidden", units.tolist(), (decoder_step(edited),), "set",
        _values(states, units, edited - k),
    )  # fmt: skip


def triggering_advance(units: Tensor, position: int, k: int, states: Tensor) -> Intervention:
    """Finding 3: triggering units at t = T - 1 - k set to their values at t = T - 1 (the token
    should come at T - k). Needs T - 1 - k >= 1."""
    return Intervention(
        "decoder.hidden", units.tolist(), (decoder_step(position - 1 - k),), "set",
        _values(states, units, position - 1),
    )  # fmt: skip


def zero_at_output(units: Tensor, position: int) -> Intervention:
    """Finding 4: `units` of h_T set to zero before the output layer reads them."""
    return Intervention("decoder.hidden", units.tolist(), (decoder_step(position),), "zero")


def complement(units: Tensor, size: int) -> Tensor:
    """The units 0..size-1 not in `units`, ascending."""
    keep = torch.ones(size, dtype=torch.bool)
    keep[units] = False
    return torch.nonzero(keep).flatten()


# ---- the whole method for one requested token ----------------------------------------------------
HYPOTHESES = ("storing", "counting", "triggering")
MANIPULATIONS = (
    "storing_zero", "storing_previous", "counting_k1", "counting_k2", "counting_k3",
    "triggering_k1", "triggering_k2", "triggering_k3", "triggering_k4",
    "outputting_zero", "others_zero",
)  # fmt: skip
"""Table 1's columns and finding 4's two checks, as keys of `verify_neurons`'s result."""
DIAGNOSTICS = ("counting_before_trigger_k1", "counting_before_trigger_k2",
               "counting_before_trigger_k3")  # fmt: skip
"""Also in `verify_neurons`'s result: counting edited at t = T - 2 (see `counting_delay`)."""


@dataclass
class Traced:
    """Rows with one (token, position) signal each, decoded greedily by an unedited model:
    the batch (`source`, `source_lengths`, `signal_token`, `signal_position`), its `record`
    (sites `[rows, time, units]`), the greedy `outputs` `[rows, steps]` and `states` =
    `paper_time_states` of the hidden state (None for a model without the paper's time, traced
    with `trace_rows(..., timed_only=False)`)."""

    batch: dict[str, Tensor]
    record: dict[str, Tensor]
    outputs: Tensor
    states: Tensor | None

    @property
    def token(self) -> Tensor:
        return self.batch["signal_token"][:, -1]

    @property
    def position(self) -> Tensor:
        return self.batch["signal_position"][:, -1]

    @property
    def answered(self) -> Tensor:
        """`[rows]` booleans: the greedy output holds the requested token at its position."""
        return position_hits(self.outputs, self.token, self.position)

    def states_at(self, offset: int = 0) -> Tensor:
        """`[rows, units]`: each row's h_t at the paper's t = T + `offset` (h_T by default;
        `states` index j holds t = j - 1)."""
        return self.states[torch.arange(len(self.token)), self.position + 1 + offset]

    def rows(self, keep: Tensor) -> Traced:
        """The rows where `keep` `[rows]` is True (or at the given indices)."""
        return Traced(
            {k: v[keep] for k, v in self.batch.items()},
            {k: v[keep] for k, v in self.record.items()},
            self.outputs[keep],
            None if self.states is None else self.states[keep],
        )

    def model_batch(self) -> dict[str, Tensor]:
        """The inputs `state_attributions` needs: the batch plus `decoder_inputs`."""
        return {**self.batch, "decoder_inputs": self.outputs}


TRACED_ROWS = 1024
"""The most rows `trace_rows` decodes at once without edits. The logits of a decode are `[rows,
steps, vocabulary]`: section 4's 25,000 rows over 16 steps at the paper's 20,000 words hold 32 GB
at once, 1.3 GB per 1,024 rows; the greedy outputs and the record kept of each chunk are a
vocabulary-free fraction of that."""


@torch.no_grad()
def trace_rows(
    model: Seq2Seq,
    batch: dict[str, Tensor],
    steps: int,
    edits: list[Intervention] = (),
    timed_only: bool = True,
) -> Traced:
    """Decode `steps` tokens greedily with `edits`, recording every site. A model without the
    paper's time (`untimed`) is refused, or with `timed_only` False traced with `states` None
    (its sites recorded for the methods that do not read the paper's time). Without edits the
    rows are decoded `TRACED_ROWS` at a time (the same record, in bounded memory); an edit may
    hold a value per row (`Intervention.value`, `rows`), so an edited batch is decoded at once."""
    rows = len(batch["source"])
    chunk = max(rows, 1) if edits else TRACED_ROWS
    records, outputs = [], []
    for start in range(0, max(rows, 1), chunk):
        record: dict[str, Tensor] = {}
        logits, _ = model(
            batch["source"][start : start + chunk],
            batch["source_lengths"][start : start + chunk],
            steps=steps, record=record, edits=edits,
        )  # fmt: skip
        records.append(record)
        outputs.append(logits.argmax(-1))
        del logits
    record = {site: pad_and_concatenate([r[site] for r in records]) for site in records[0]}
    timed = timed_only or untimed(record) is None
    states = paper_time_states(record, batch["source_lengths"]) if timed else None
    return Traced(batch, record, torch.cat(outputs), states)


# ---- the analysed rows of section 4 -------------------------------------------------------------
ANALYSED_TOKENS = 50
"""Section 4: the 50 most common tokens."""
ANALYSED_POSITIONS = tuple(range(1, 14))
"""Section 4: the common positions 1-13."""
ANALYSED_SPLITS = ("validation", "test")
"""Held-out line pairs (the paper does not say which; never the training split here)."""


def analysed_tokens(datamodule, count: int = ANALYSED_TOKENS) -> list[int]:
    """Section 4: ids of the `count` most frequent words of a `TokenPositioningDataModule` (the
    vocabulary lists them by training frequency after the special and position tokens)."""
    from datamodules.token_positioning import SPECIALS

    first = len(SPECIALS) + datamodule.max_tokens
    return list(range(first, first + count))


def analysed_rows(
    model: Seq2Seq,
    datamodule,
    tokens: list[int],
    positions=ANALYSED_POSITIONS,
    per_token: int = 500,
    splits=ANALYSED_SPLITS,
    correct_only: bool = True,
    seed: int = 0,
) -> tuple[Traced, Tensor]:
    """Section 4's rows: held-out pairs of `splits` re-requested with each of `tokens` at each
    of `positions` where it occurs (at most `per_token` rows per token, drawn with `seed`,
    `TokenPositioningDataModule.requested_rows`), decoded greedily for max(positions) + 3 steps;
    with `correct_only` only the rows the model answers correctly. Returns them and `[rows]`
    booleans over every requested row: answered correctly."""
    requested = datamodule.requested_rows(splits, tokens, positions, per_token, seed)
    traced = trace_rows(model, requested, max(positions) + 3)
    correct = traced.answered
    return (traced.rows(correct) if correct_only else traced), correct


def analysable(traced: Traced, token: int) -> bool:
    """Whether stage 1 can classify `token`: at least 2 of its rows and rows of another token."""
    return bool((traced.token == token).sum() >= 2) and len(set(traced.token.tolist())) >= 2


def _time_mask(traced: Traced, first: int, last_offset: int) -> Tensor:
    """`[rows, time]` True at the paper's t = first .. T + last_offset of each row."""
    time = torch.arange(traced.states.shape[1])[None] - 1  # index j holds t = j - 1
    return (time >= first) & (time <= traced.position[:, None] + last_offset)


@dataclass(frozen=True)
class TokenNeurons:
    """The units of each function for one token, and stage 1's classifier accuracies."""

    token: int
    storing: Tensor
    counting: Tensor
    triggering: Tensor
    outputting: Tensor
    accuracy: dict[str, float]
    candidates: dict[str, Tensor]

    def units(self, function: str) -> Tensor:
        return getattr(self, function)


def hypothesis_samples(
    traced: Traced, token: int, seed: int = 0
) -> dict[str, tuple[Tensor, Tensor]]:
    """Section 3.1 / section 4's three hypotheses for one token: `{hypothesis: (features
    [samples, units], labels [samples])}` from `traced` (rows the model answers correctly, of
    every analysed token):
    - storing (finding 1): h_t, t = -1 .. T-1, of this token's rows (label 1) against as many
      of other tokens' rows (label 0, drawn with `seed`);
    - counting (finding 2): h_t, t = 0 .. T-1, of this token's rows labelled by T - t;
    - triggering (finding 3): h_{T-1} (label 1) against h_t, t = 0 .. T-2, of this token's
      rows."""
    mine = traced.token == token
    own = traced.rows(mine)
    generator = torch.Generator().manual_seed(seed)
    other_rows = torch.nonzero(~mine).flatten()  # drawn before their record is copied
    drawn = torch.randperm(len(other_rows), generator=generator)[: len(own.token)]
    others = traced.rows(other_rows[drawn])
    storing_mask_own, storing_mask_other = _time_mask(own, -1, -1), _time_mask(others, -1, -1)
    features = {
        "storing": (
            torch.cat([own.states[storing_mask_own], others.states[storing_mask_other]]),
            torch.cat(
                [
                    torch.ones(int(storing_mask_own.sum())),
                    torch.zeros(int(storing_mask_other.sum())),
                ]
            ).long(),
        ),  # fmt: skip
    }
    counting_mask = _time_mask(own, 0, -1)
    time = torch.arange(own.states.shape[1])[None] - 1
    remaining = own.position[:, None] - time
    features["counting"] = (own.states[counting_mask], remaining[counting_mask])
    features["triggering"] = (own.states[counting_mask], (remaining[counting_mask] == 1).long())
    return features


def candidate_units(
    traced: Traced, token: int, keep: float = 0.5, seed: int = 0
) -> dict[str, Candidates]:
    """Stage 1 (section 3.1) for one token: a linear SVM and RFE per hypothesis
    (`hypothesis_samples`, `svm_rfe_candidates`)."""
    samples = hypothesis_samples(traced, token, seed)
    return {name: svm_rfe_candidates(*samples[name], keep, seed=seed) for name in HYPOTHESES}


def attributions_before_output(
    model: Seq2Seq, traced: Traced, token: int, n_steps: int = 32
) -> dict[int, Tensor]:
    """Stage 2's maps (section 3.2) for one token: `{k: [rows, units]}`, the integrated
    gradients of P(token at T) with respect to h_{T-k} (`state_attributions`) of this token's
    rows, k = 1 over the rows with T >= 2 and k = 2 over the rows with T >= 3 (h_{T-k} must be a
    decoder state; k = 2 is absent when no row has T >= 3), rows ordered by T."""
    own = traced.rows(traced.token == token)
    found: dict[int, list[Tensor]] = {1: [], 2: []}
    for position in sorted(set(own.position.tolist()) - {1}):
        group = own.rows(own.position == position)
        for before in (1, 2):
            t = position - before
            if t >= 1:
                found[before].append(state_attributions(
                    model, group.model_batch(), group.states[:, t + 1], t, position, n_steps
                ))  # fmt: skip
    if not found[1]:
        raise ValueError(
            f"token {token} has no rows with T >= 2: the filter needs h_(T-1) in the decoder."
        )
    return {before: torch.cat(maps) for before, maps in found.items() if maps}


def identify_neurons(
    model: Seq2Seq, traced: Traced, token: int, keep: float = 0.5, seed: int = 0, n_steps: int = 32
) -> TokenNeurons:
    """Sections 3-4 for one token: candidates by SVM + RFE for three hypotheses
    (`candidate_units`), filtered by integrated gradients of P(token at T) w.r.t. h_{T-1}
    (counting units: w.r.t. h_{T-1} or h_{T-2}, since a counter may reach the output only
    through the triggering units a step later; `attributions_before_output`); outputting units
    from h_T W_token.

    `traced` holds rows the model answers correctly (the token at T), of every analysed token
    (see `hypothesis_samples`). Filtering uses this token's rows with T >= 2 (h_{T-1} must be a
    decoder state).
    """
    own = traced.rows(traced.token == token)
    candidates = candidate_units(traced, token, keep, seed)
    maps = attributions_before_output(model, traced, token, n_steps)
    attributions = maps[1]
    units = {name: attribution_filter(candidates[name].units, attributions) for name in HYPOTHESES}
    if 2 in maps:  # counting units may act on the output only through later steps (via triggering)
        units["counting"] = attribution_filter(candidates["counting"].units, attributions, maps[2])
    contributions = output_contributions(own.states_at(), model.output.weight.detach(), own.token)
    return TokenNeurons(
        token, units["storing"], units["counting"], units["triggering"],
        outputting_units(contributions),
        {name: candidates[name].accuracy for name in HYPOTHESES},
        {name: candidates[name].units for name in HYPOTHESES},
    )  # fmt: skip
