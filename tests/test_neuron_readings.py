"""Paper 4's other readings of the manipulations (`reports/paper4/preregistration.md`, items 7-9)
on the hand-built GRU of `tests/planted_counter_gru.py`, whose units are known: counting edited
at every step before the output and with the lag held, "storing previous" as one step, and every
manipulation also recorded by T (triggering at T = 6 among them)."""

from __future__ import annotations

import pytest
import torch

from probes.neuron_functions import (
    DIAGNOSTICS,
    MANIPULATIONS,
    complement,
    decoder_step,
    greedy_outputs,
    paper_time_states,
    trace_rows,
)
from probes.neuron_manipulation import (
    earlier_values,
    lag_held,
    reading_trials,
    verify_neurons,
)
from tests.planted_counter_gru import (
    COUNTING as COUNTING_UNITS,
)
from tests.planted_counter_gru import (
    D_PAR,
    REGISTER,
    S_A,
    STEPS,
    A,
    B,
    G,
    H,
    P,
    build_model,
    every_request,
    expected_outputs,
    make_batch,
    planted_neurons,
)

T = 6
COUNTING = torch.tensor(COUNTING_UNITS)


@pytest.fixture(scope="module")
def model():
    return build_model()


@pytest.fixture(scope="module")
def at_t(model):
    """8 rows that request their token at T = 6 (tokens A and B, 0..3 fillers) and their
    unedited states by the paper's time."""
    batch = make_batch([T] * 8, [A, B] * 4, [0, 0, 1, 1, 2, 2, 3, 3])
    return batch, paper_time_states(model.trace(batch), batch["source_lengths"])


def run(model, batch, *edits):
    return greedy_outputs(model, batch, STEPS, edits=list(edits))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_counting_edited_at_any_step_before_the_output_delays_by_k(model, at_t, k):
    """The register (with g) at any t = k .. T - 1 set to its values at t - k: the token comes
    exactly k steps late, whichever step was edited."""
    batch, states = at_t
    token = batch["signal_token"][:, 0]
    for t in range(k, T):
        edit = earlier_values(COUNTING, t, k, states)
        assert edit.steps == (decoder_step(t),)
        assert torch.equal(run(model, batch, edit), expected_outputs([T + k], token)), t
    # Without g, an edit before t = T - 1 still delays by k; at T - 1 g has fired already.
    for t in range(k, T - 1):
        edit = earlier_values(torch.tensor(REGISTER), t, k, states)
        assert torch.equal(run(model, batch, edit), expected_outputs([T + k], token)), t
    last = earlier_values(torch.tensor(REGISTER), T - 1, k, states)
    assert torch.equal(run(model, batch, last), expected_outputs([T, T + k], token))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_counting_with_the_lag_held_delays_by_k(model, at_t, k):
    """The counting units held at their values k steps earlier from t on, up to T + k - 1: the
    token comes exactly k steps late, once; the edited values are the unedited ones k back."""
    batch, states = at_t
    token = batch["signal_token"][:, 0]
    for start in range(k, T):
        edit = lag_held(COUNTING, start, T + k - 1, k, states)
        assert edit.steps == tuple(decoder_step(t) for t in range(start, T + k))
        assert torch.equal(run(model, batch, edit), expected_outputs([T + k], token)), start
        edited = trace_rows(model, batch, STEPS, [edit]).states
        for t in range(start, T + k):
            assert torch.equal(edited[:, t + 1, COUNTING], states[:, t - k + 1, COUNTING])


def test_edits_need_an_earlier_state_in_the_decoder(at_t):
    _, states = at_t
    with pytest.raises(ValueError, match="t - lag >= 0"):
        earlier_values(COUNTING, 2, 3, states)
    with pytest.raises(ValueError, match="t >= 1"):
        earlier_values(COUNTING, 0, 0, states)
    with pytest.raises(ValueError, match="recorded"):
        lag_held(COUNTING, 3, states.shape[1] + 1, 1, states)


def test_storing_previous_single_step_changes_one_step_only(model, at_t):
    """One step t replaced by its unedited value at t - 1: the states before t are unedited, at
    t the units hold h_{t-1}. On the register (with g) that is a delay of one, from any t."""
    batch, states = at_t
    token = batch["signal_token"][:, 0]
    trials = reading_trials({"storing": COUNTING, "counting": COUNTING}, T, states)
    single = [(names, edit, expected) for names, edit, expected in trials
              if "single_step.storing_previous" in names]  # fmt: skip
    assert len(single) == T - 1  # t = 1 .. T - 1
    for t, (names, edit, expected) in enumerate(single, start=1):
        assert edit.steps == (decoder_step(t),)
        assert expected == T
        assert ("single_step.storing_previous_before_last" in names) == (t <= T - 2)
        edited = trace_rows(model, batch, STEPS, [edit]).states
        assert torch.equal(edited[:, : t + 1], states[:, : t + 1])  # t' < t: unedited
        assert torch.equal(edited[:, t + 1, COUNTING], states[:, t, COUNTING])
        assert torch.equal(run(model, batch, edit), expected_outputs([T + 1], token))


def test_reading_trials_cover_every_step_that_t_allows(at_t):
    """Counting: one trial per t = max(1, k) .. T - 1 for each reading; storing: t = 1 .. T - 1;
    every trial expects the token at T + k (counting) or T (storing)."""
    _, states = at_t
    trials = reading_trials({"storing": torch.tensor([S_A]), "counting": COUNTING}, T, states)
    by_name: dict[str, list[int]] = {}
    for names, _, expected in trials:
        for name in names:
            by_name.setdefault(name, []).append(expected)
    assert by_name == {
        "single_step.storing_previous": [T] * (T - 1),
        "single_step.storing_previous_before_last": [T] * (T - 2),
        **{f"each_step.counting_k{k}": [T + k] * (T - k) for k in (1, 2, 3)},
        **{f"lag_held.counting_k{k}": [T + k] * (T - k) for k in (1, 2, 3)},
    }


@pytest.fixture(scope="module")
def traced(model):
    """Every T in 1..P, tokens A and B, 0..3 fillers: 4 rows of token A at each T."""
    return trace_rows(model, every_request(), STEPS)


PLANTED = planted_neurons()


def test_verify_neurons_records_the_readings_and_every_manipulation_by_t(model, traced):
    """With `readings`, the planted units pass every reading on every trial, each reading's
    trials being one per row and step; every manipulation is also split by T, so triggering at
    T = 6 counts only the 4 rows of token A with T = 6."""
    counts = verify_neurons(model, traced, PLANTED, readings=True)
    rows = 4  # of token A at each T

    def steps(k):  # trials of a counting reading: t = k .. T - 1 at every T = k + 1 .. P
        return sum(rows * (position - k) for position in range(k + 1, P + 1))

    for k in (1, 2, 3):
        assert counts[f"each_step.counting_k{k}"] == [steps(k), steps(k)]
        assert counts[f"lag_held.counting_k{k}"] == [steps(k), steps(k)]
        assert counts[f"each_step.counting_k{k}.T={T}"] == [rows * (T - k)] * 2
    single = sum(rows * (position - 1) for position in range(2, P + 1))
    assert counts["single_step.storing_previous"] == [single, single]
    before_last = sum(rows * (position - 2) for position in range(2, P + 1))
    assert counts["single_step.storing_previous_before_last"] == [before_last, before_last]
    for k in (1, 2, 3, 4):
        assert counts[f"triggering_k{k}.T=6"] == [rows, rows]
        assert {key for key in counts if key.startswith(f"triggering_k{k}.")} == {
            f"triggering_k{k}.T={position}" for position in range(k + 2, P + 1)
        }
    for name in MANIPULATIONS + DIAGNOSTICS:  # the per-T counts add up to the pooled one
        split = [v for key, v in counts.items() if key.startswith(f"{name}.T=")]
        assert [sum(v[0] for v in split), sum(v[1] for v in split)] == counts[name], name
    assert counts["storing_zero.T=6"] == [0, rows]
    # The primary manipulations read as without the readings.
    primary = verify_neurons(model, traced, PLANTED)
    assert {key: counts[key] for key in primary} == primary
    assert not any(key.startswith(("each_step", "lag_held", "single_step")) for key in primary)


def test_the_readings_have_size_matched_controls_by_t(model, traced):
    """Each reading's control edits random non-candidates: d_par, held through the decoder and
    read by nothing, keeps the token at T on every trial; the 7 units that are not the register
    or g move nothing to T + k."""
    candidates = {
        "storing": complement(torch.tensor([D_PAR]), H),
        "counting": COUNTING,
        "triggering": torch.tensor([G]),
    }  # the storing control can only be d_par
    planted = planted_neurons(candidates)
    counts = verify_neurons(model, traced, planted, control_draws=2, seed=0, readings=True)
    single = counts["control.single_step.storing_previous"]
    assert single[0] == single[1] == 2 * counts["single_step.storing_previous"][1]
    for k in (1, 2, 3):
        for reading in ("each_step", "lag_held"):
            assert counts[f"control.{reading}.counting_k{k}"] == [
                0, 2 * counts[f"{reading}.counting_k{k}"][1]]  # fmt: skip
    assert counts["control.triggering_k1.T=6"][1] == 2 * 4
    assert not any(key.startswith("control.counting_before_trigger") for key in counts)
