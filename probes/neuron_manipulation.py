"""Lee et al. (paper 4), stage 3 (section 3.3) and section 5: verifying the identified neurons by
manipulating their values (Table 1, finding 4) beside size-matched random controls, and the
gate interaction of triggering, storing and outputting neurons. The identification itself
(stages 1-2) is `probes.neuron_functions`."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from lightning_modules.recurrent import Intervention, gate_blocks
from probes.neuron_functions import (
    DIAGNOSTICS,
    HYPOTHESES,
    MANIPULATIONS,
    TokenNeurons,
    Traced,
    complement,
    counting_delay,
    decoder_step,
    greedy_outputs,
    position_hits,
    storing_previous,
    storing_zero,
    trace_rows,
    triggering_advance,
    zero_at_output,
)

if TYPE_CHECKING:  # a type only: the Lightning model is not imported to probe it
    from lightning_modules.seq2seq import Seq2Seq


def manipulation_trials(
    units: dict[str, Tensor], position: int, states: Tensor, size: int
) -> dict[str, tuple[Intervention, int]]:
    """Section 4's manipulations of `units` (`{function: units}`) for rows of one T =
    `position`: `{manipulation: (edit, position where the token is expected)}`, for those that
    T allows (counting: T - 1 - k >= 0, or T - 2 - k >= 0 when edited at T - 2; triggering:
    T - 1 - k >= 1)."""
    trials = {
        "storing_zero": (storing_zero(units["storing"], position), position),
        "storing_previous": (storing_previous(units["storing"], position, states), position),
        "outputting_zero": (zero_at_output(units["outputting"], position), position),
        "others_zero": (zero_at_output(complement(units["outputting"], size), position), position),
    }
    for k in (1, 2, 3):
        if position - 1 - k >= 0:
            edit = counting_delay(units["counting"], position, k, states)
            trials[f"counting_k{k}"] = (edit, position + k)
        if position - 2 - k >= 0 and position >= 3:
            edit = counting_delay(units["counting"], position, k, states, before=2)
            trials[f"counting_before_trigger_k{k}"] = (edit, position + k)
    for k in (1, 2, 3, 4):
        if position - 1 - k >= 1:
            edit = triggering_advance(units["triggering"], position, k, states)
            trials[f"triggering_k{k}"] = (edit, position - k)
    return trials


def earlier_values(units: Tensor, t: int, lag: int, states: Tensor) -> Intervention:
    """`units` at the paper's t set to their unedited values at t - `lag` (`states`: the
    unedited `paper_time_states`; h_0 is the encoder's last state). Needs t >= 1 and
    t - lag >= 0."""
    if t < 1 or t - lag < 0:
        raise ValueError(f"an edit at t needs t >= 1 and t - lag >= 0, got t={t}, lag={lag}")
    return Intervention(
        "decoder.hidden",
        units.tolist(),
        (decoder_step(t),),
        "set",
        states[:, t - lag + 1][:, units],
    )


def lag_held(units: Tensor, start: int, last: int, lag: int, states: Tensor) -> Intervention:
    """`units` at every t' = `start` .. `last` set to their unedited values at t' - `lag`: the
    units run `lag` steps behind from `start` on (`states` as for `earlier_values`, recorded up
    to t = `last` - `lag` at least)."""
    if start < 1 or start - lag < 0 or last < start:
        raise ValueError(f"a held lag needs 1 <= start <= last and start - lag >= 0, got "
                         f"start={start}, last={last}, lag={lag}")  # fmt: skip
    if last - lag + 2 > states.shape[1]:
        raise ValueError(f"a held lag up to t={last} needs states recorded up to t={last - lag}; "
                         f"they reach t={states.shape[1] - 2}")  # fmt: skip
    steps = [decoder_step(t) for t in range(start, last + 1)]
    value = states[:, start - lag + 1 : last - lag + 2][:, :, units]
    return Intervention("decoder.hidden", units.tolist(), steps, "replace", value)


READINGS = (
    "single_step.storing_previous", "single_step.storing_previous_before_last",
    *(f"{reading}.counting_k{k}" for reading in ("each_step", "lag_held") for k in (1, 2, 3)),
)  # fmt: skip
"""The other readings of Table 1 (`reading_trials`), as keys of `verify_neurons`'s result with
`readings`."""


def reading_trials(
    units: dict[str, Tensor], position: int, states: Tensor
) -> list[tuple[tuple[str, ...], Intervention, int]]:
    """The other readings of Table 1 for rows of one T = `position`, one trial per step:
    `[(names it counts under, edit, position where the token is expected)]`.

    - `single_step.storing_previous`: the storing units at one t = 1 .. T - 1 set to their
      values at t - 1 (token at T); those with t <= T - 2 (the paper's "before t = T - 1") also
      count under `single_step.storing_previous_before_last`.
    - `each_step.counting_k<k>`: the counting units at one t = max(1, k) .. T - 1 set to their
      values at t - k (token at T + k: "we replace the values of counting neurons at t with
      those of the previous stage (t - k)").
    - `lag_held.counting_k<k>`: from that t on, up to T + k - 1, every step's counting units set
      to their values k steps earlier (token at T + k)."""
    trials = []
    for t in range(1, position):
        names = ("single_step.storing_previous",)
        if t <= position - 2:
            names += ("single_step.storing_previous_before_last",)
        trials.append((names, earlier_values(units["storing"], t, 1, states), position))
    for k in (1, 2, 3):
        for t in range(max(1, k), position):
            edit = earlier_values(units["counting"], t, k, states)
            trials.append(((f"each_step.counting_k{k}",), edit, position + k))
            edit = lag_held(units["counting"], t, position + k - 1, k, states)
            trials.append(((f"lag_held.counting_k{k}",), edit, position + k))
    return trials


def control_units(
    neurons: TokenNeurons, size: int, generator: torch.Generator
) -> dict[str, Tensor]:
    """A size-matched control for every function: as many units as `neurons` names, drawn at
    random among the units that are not its candidates (storing, counting, triggering: not
    among stage 1's candidates of that hypothesis; outputting: not outputting units). Where
    fewer such units exist than are needed, all of them."""
    drawn = {}
    for function in (*HYPOTHESES, "outputting"):
        named = neurons.units(function)
        excluded = neurons.candidates[function] if function in HYPOTHESES else named
        pool = complement(torch.cat([excluded, named]).unique(), size)
        order = torch.randperm(len(pool), generator=generator)
        drawn[function] = pool[order[: len(named)]].sort().values
    return drawn


def verify_neurons(
    model: Seq2Seq,
    traced: Traced,
    neurons: TokenNeurons,
    control_draws: int = 0,
    seed: int = 0,
    readings: bool = False,
) -> dict[str, list[int]]:
    """Section 4's manipulations (Table 1 and finding 4) on this token's rows with T >= 2:
    `{manipulation: [hits, rows]}` for `MANIPULATIONS` and `DIAGNOSTICS`, a hit being the token
    at the expected position (T for the storing and outputting checks, T + k for counting, T - k
    for triggering; see `manipulation_trials`); rows that allow neither counting nor triggering
    are not counted there.

    With `control_draws`, also `control.<manipulation>` for every one of `MANIPULATIONS`: the
    same edit applied to `control_units` (size-matched random non-candidates, drawn
    `control_draws` times with `seed`), hits and rows summed over the draws: whether the named
    units matter more than any as many units. `storing_zero.T=<T>` splits `storing_zero` by T.

    With `readings`, also the other readings of `READINGS` (`reading_trials`: one trial per row
    and edited step, `[hits, trials]`) with their controls, and every manipulation and control
    also split by T (`<name>.T=<T>`, e.g. `triggering_k2.T=6`, `control.lag_held.counting_k1.T=9`).
    """
    others = READINGS if readings else ()
    counts = {name: [0, 0] for name in MANIPULATIONS + DIAGNOSTICS + others}
    if control_draws:
        counts.update({f"control.{name}": [0, 0] for name in MANIPULATIONS + others})
    own = traced.rows(traced.token == neurons.token)
    size = own.states.shape[-1]
    named = {function: neurons.units(function) for function in (*HYPOTHESES, "outputting")}
    generator = torch.Generator().manual_seed(seed)
    controls = [control_units(neurons, size, generator) for _ in range(control_draws)]
    for position in sorted(set(own.position.tolist()) - {1}):
        group = own.rows(own.position == position)
        trials = []
        for prefix, units in [("", named)] + [("control.", c) for c in controls]:
            listed = [
                ((name,), edit, expected)
                for name, (edit, expected) in manipulation_trials(
                    units, position, group.states, size
                ).items()
            ]
            if readings:
                listed += reading_trials(units, position, group.states)
            for names, edit, expected in listed:
                keys = [prefix + name for name in names if prefix + name in counts]
                if keys:  # no control of the diagnostics
                    trials.append((keys, edit, expected))
        hits_of = trial_hits(model, group, position, trials)
        for (keys, _, _), hits in zip(trials, hits_of, strict=True):
            by_t = [key for key in keys if readings or key == "storing_zero"]
            for key in keys + [f"{key}.T={position}" for key in by_t]:
                total = counts.setdefault(key, [0, 0])
                total[0] += hits
                total[1] += len(group.token)
    return counts


DECODED_ROWS = 2048
"""The most rows `trial_hits` decodes at once (its copies of a group's rows)."""


def trial_hits(model: Seq2Seq, group: Traced, position: int,
               trials: list[tuple[object, Intervention, int]]) -> list[int]:  # fmt: skip
    """Each trial's hits on the rows of `group` (one T = `position`): the token at the trial's
    expected position with its edit applied. The group's rows are decoded once per chunk of
    trials, each trial's edit on its own copy of them (`Intervention.rows`), which gives what a
    decode per trial gives in a fraction of the calls."""
    rows = len(group.token)
    per_decode = max(1, DECODED_ROWS // rows)
    hits = []
    for start in range(0, len(trials), per_decode):
        chunk = trials[start : start + per_decode]
        batch = {key: group.batch[key].repeat(len(chunk), *[1] * (group.batch[key].dim() - 1))
                 for key in ("source", "source_lengths")}  # fmt: skip
        edits = [replace(edit, rows=(i * rows, (i + 1) * rows))
                 for i, (_, edit, _) in enumerate(chunk)]  # fmt: skip
        steps = max(max(expected, position) for _, _, expected in chunk)
        outputs = greedy_outputs(model, batch, steps, edits)
        hits += [int(position_hits(outputs[i * rows : (i + 1) * rows], group.token, expected).sum())
                 for i, (_, _, expected) in enumerate(chunk)]  # fmt: skip
    return hits


def gate_interaction(model: Seq2Seq, traced: Traced, neurons: TokenNeurons) -> dict[str, float]:
    """Section 5: at t = T, the mean update gate of the outputting units and the mean reset gate
    of the storing units, unedited and with the triggering units of h_{T-1} set to zero, over
    this token's rows with T >= 2 (keys `update_output`, `update_output_masked`,
    `reset_store`, `reset_store_masked`). Also the paper's GRU' (Equation 3: no input, no bias)
    reading: with every unit of h_{T-1} but the triggering ones masked, the mean of U_z h_{T-1}
    over the outputting units (`update_drive_from_triggering`, the paper: negative) and of
    U_r h_{T-1} over the storing units (`reset_drive_from_triggering`: positive)."""
    own = traced.rows(traced.token == neurons.token)
    sums = dict.fromkeys(
        ("update_output", "update_output_masked", "reset_store", "reset_store_masked",
         "update_drive_from_triggering", "reset_drive_from_triggering"), 0.0,
    )  # fmt: skip
    blocks = gate_blocks(model.decoder.weight_hh_l0.detach(), "gru")
    reset_weight, update_weight = blocks["reset_gate"], blocks["update_gate"]
    rows = 0
    for position in sorted(set(own.position.tolist()) - {1}):
        group = own.rows(own.position == position)
        masked = trace_rows(
            model, group.batch, position,
            [Intervention("decoder.hidden", neurons.triggering.tolist(),
                          (decoder_step(position - 1),), "zero")],
        )  # fmt: skip
        step = decoder_step(position)
        for suffix, record in (("", group.record), ("_masked", masked.record)):
            update = record["decoder.update_gate"][:, step][:, neurons.outputting]
            reset = record["decoder.reset_gate"][:, step][:, neurons.storing]
            sums["update_output" + suffix] += float(update.mean(-1).nan_to_num().sum())
            sums["reset_store" + suffix] += float(reset.mean(-1).nan_to_num().sum())
        triggering_only = torch.zeros_like(group.states[:, position])  # h_{T-1}, masked
        triggering_only[:, neurons.triggering] = group.states[:, position][:, neurons.triggering]
        update_drive = (triggering_only @ update_weight.T)[:, neurons.outputting]
        reset_drive = (triggering_only @ reset_weight.T)[:, neurons.storing]
        sums["update_drive_from_triggering"] += float(update_drive.mean(-1).nan_to_num().sum())
        sums["reset_drive_from_triggering"] += float(reset_drive.mean(-1).nan_to_num().sum())
        rows += len(group.token)
    return {name: value / max(rows, 1) for name, value in sums.items()}
