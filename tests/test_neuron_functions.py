"""Tests of the three-stage neuron identification of `probes.neuron_functions` (Lee et al.,
"Exposing the Functionalities of Neurons for GRU Seq2Seq", sections 3-4) on a hand-built GRU
seq2seq whose units are known (`tests/planted_counter_gru.py` describes it)."""

from __future__ import annotations

import pytest
import torch

from lightning_modules.seq2seq import Seq2Seq
from probes.neuron_functions import (
    attribution_filter,
    complement,
    counting_delay,
    decoder_step,
    greedy_outputs,
    output_contributions,
    outputting_units,
    paper_time_states,
    position_hits,
    state_attributions,
    storing_previous,
    storing_zero,
    svm_rfe_candidates,
    triggering_advance,
    zero_at_output,
)
from tests.planted_counter_gru import (
    BETA,
    D_CNT,
    D_OSC,
    DISTRACTORS,
    GAIN,
    O_A,
    O_B,
    OUTPUTTING,
    REGISTER,
    S_A,
    S_B,
    STEPS,
    STORING,
    A,
    B,
    C,
    G,
    H,
    P,
    build_model,
    every_request,
    expected_outputs,
    make_batch,
)


@pytest.fixture(scope="module")
def model() -> Seq2Seq:
    return build_model()


@pytest.fixture(scope="module")
def everything(model):
    """Every T in 1..P, token and filler count 0..3: 64 rows, their trace and states."""
    batch = every_request()
    record = model.trace(batch)
    return batch, record, paper_time_states(record, batch["source_lengths"])


T = 6


@pytest.fixture(scope="module")
def at_t(model):
    """16 rows that request their token at T = 6, tokens and filler counts seeded."""
    generator = torch.Generator().manual_seed(0)
    tokens = [A, B] * 8
    fillers = torch.randint(0, 4, (16,), generator=generator).tolist()
    batch = make_batch([T] * 16, tokens, fillers)
    batch["decoder_inputs"] = greedy_outputs(model, batch, STEPS)
    states = paper_time_states(model.trace(batch), batch["source_lengths"])
    return batch, states


def pooled(states: torch.Tensor, batch, times) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """h_t of every row for t in `times(T)`, T the row's position: features `[samples, H]`, the
    row and t of each."""
    features, rows, ts = [], [], []
    for row, position in enumerate(batch["signal_position"][:, 0].tolist()):
        for t in times(position):
            features.append(states[row, t + 1])
            rows.append(row)
            ts.append(t)
    return torch.stack(features), torch.tensor(rows), torch.tensor(ts)


# ---- the network ---------------------------------------------------------------------------------
def test_network_outputs_the_token_exactly_at_its_position(model, everything):
    batch, record, _ = everything
    position = batch["signal_position"][:, 0]
    token = batch["signal_token"][:, 0]
    outputs = greedy_outputs(model, batch, STEPS)
    assert torch.equal(outputs, batch["target"])
    assert torch.equal(record["prediction"], batch["target"])
    for p in range(1, STEPS + 1):
        assert torch.equal(position_hits(outputs, token, p), position == p)
    assert not position_hits(outputs, token, STEPS + 1).any()
    assert not position_hits(outputs, token, 0).any()


def test_paper_time_states_indexing(everything):
    batch, record, states = everything
    lengths = batch["source_lengths"]
    rows = torch.arange(lengths.shape[0])
    assert states.shape == (rows.shape[0], 2 + STEPS, H)
    encoder = record["encoder.hidden"]
    assert torch.equal(states[:, 0], encoder[rows, lengths - 2])  # t = -1: reading the token
    assert torch.equal(states[:, 1], encoder[rows, lengths - 1])  # t = 0: the encoder's last
    assert torch.equal(states[:, 2:], record["decoder.hidden"])  # t >= 1: decoder step t - 1
    assert [decoder_step(t) for t in (1, 2, 5)] == [0, 1, 4]
    with pytest.raises(ValueError):
        decoder_step(0)

    # The planted values, by the paper's time.
    is_a = (batch["signal_token"][:, 0] == A).float() * 2 - 1
    position = batch["signal_position"][:, 0]
    for t in range(-1, STEPS + 1):
        h = states[:, t + 1]
        torch.testing.assert_close(h[:, S_A], is_a, atol=1e-4, rtol=0)
        torch.testing.assert_close(h[:, S_B], -is_a, atol=1e-4, rtol=0)
        if t == -1:  # the encoder has not read <pos> yet
            assert h[:, REGISTER + [G, D_OSC]].abs().max() < 1e-4
            continue
        for k in range(1, P + 1):
            torch.testing.assert_close(h[:, REGISTER[k - 1]].sign(), (k == position - t) * 2.0 - 1)
        assert torch.equal(h[:, G] > 0, position - 1 == t)
        assert torch.equal(h[:, O_A] > 0, (position == t) & (is_a > 0))
        assert torch.equal(h[:, O_B] > 0, (position == t) & (is_a < 0))
        assert torch.equal(h[:, D_OSC] > 0, torch.full_like(position, t % 2 == 0, dtype=bool))


# ---- stage 1: SVM and recursive feature elimination ----------------------------------------------
def test_storing_candidates(everything):
    batch, _, states = everything
    features, rows, _ = pooled(states, batch, lambda p: range(0, p))  # h_0 .. h_{T-1}
    labels = (batch["signal_token"][rows, 0] == A).long()
    found = svm_rfe_candidates(features, labels, keep=2 / H)
    assert found.accuracy == 1.0 and found.plausible
    assert found.units.tolist() == STORING
    assert found.ranking.shape == (H,)
    assert sorted(torch.nonzero(found.ranking == 1).flatten().tolist()) == STORING
    wide = svm_rfe_candidates(features, labels, keep=0.5)  # the paper's generous share
    assert set(STORING) <= set(wide.units.tolist()) and len(wide.units) == H // 2


def test_counting_candidates(everything):
    batch, _, states = everything
    features, rows, ts = pooled(states, batch, lambda p: range(0, p))
    labels = batch["signal_position"][rows, 0] - ts  # T - t, 1..P
    found = svm_rfe_candidates(features, labels, keep=(P + 1) / H)
    assert found.plausible and found.accuracy == 1.0
    # u_1..u_P are one-hot in T - t and g duplicates u_1: nothing else is kept.
    assert found.units.tolist() == sorted(REGISTER + [G])


def test_triggering_candidates(everything):
    batch, _, states = everything
    features, rows, ts = pooled(states, batch, lambda p: range(0, p))
    labels = (batch["signal_position"][rows, 0] - 1 == ts).long()  # h_{T-1} vs h_{t<T-1}
    found = svm_rfe_candidates(features, labels, keep=2 / H)
    assert found.plausible and found.accuracy == 1.0
    assert found.units.tolist() == sorted([G, REGISTER[0]])  # g and its duplicate u_1


def test_a_distractor_is_found_for_its_own_property(everything):
    """d_osc is +1 iff t is even: a linear property of the states like any other."""
    batch, _, states = everything
    features, _, ts = pooled(states, batch, lambda p: range(0, p + 3))
    found = svm_rfe_candidates(features, (ts % 2 == 0).long(), keep=1 / H)
    assert found.plausible and found.units.tolist() == [D_OSC]


def test_labels_independent_of_the_states_are_not_plausible(everything):
    """Every state appears once with each label: no classifier is right on more than half."""
    batch, _, states = everything
    features, _, _ = pooled(states, batch, lambda p: range(0, p))
    doubled = torch.cat([features, features])
    labels = torch.cat([torch.zeros(len(features)), torch.ones(len(features))]).long()
    found = svm_rfe_candidates(doubled, labels, keep=2 / H)
    assert found.accuracy == 0.5 and not found.plausible
    with pytest.raises(ValueError):
        svm_rfe_candidates(features, torch.zeros(len(features)).long())


def test_plausible_means_above_95_percent():
    """Two classes of 10, one sample of class 1 among class 0's: plain and balanced accuracy
    are both exactly 0.95, which does not exceed 95%."""
    features = torch.tensor([[0.0, 1.0]] * 9 + [[0.0, -1.0]] * 11)  # RFE needs two units
    labels = torch.tensor([1] * 10 + [0] * 10)
    found = svm_rfe_candidates(features, labels, keep=0.5)
    assert found.accuracy == 0.95 and not found.plausible
    assert found.units.tolist() == [1] and found.ranking.tolist() == [2, 1]
    consistent = torch.arange(20) != 9  # without the sample of class 1 at -1
    assert svm_rfe_candidates(features[consistent], labels[consistent], keep=0.5).plausible


# ---- stage 2: integrated gradients and the filter ------------------------------------------------
IG_STEPS = 256
"""The saturated network's P(token) jumps from ~0 to ~1 within a few hundredths of the path from
the zero baseline: 256 Gauss-Legendre points integrate it to within 1e-3 (see
`test_the_default_ig_steps_underestimate_but_rank_alike` for the default 32)."""


@pytest.fixture(scope="module")
def attributions(model, at_t):
    batch, states = at_t
    return {
        (t, n): state_attributions(model, batch, states[:, t + 1], t=t, position=T, n_steps=n)
        for t in (T - 1, T - 2)
        for n in (IG_STEPS, 32)
    }


def test_attributions_at_t_minus_1(at_t, attributions):
    batch, _ = at_t
    found = attributions[T - 1, IG_STEPS]
    assert found.shape == (16, H)
    is_a = batch["signal_token"][:, 0] == A
    # Completeness: P(token at T) goes from ~0 (zero state) to ~1, shared by g and s_token.
    torch.testing.assert_close(found.sum(1), torch.ones(16), atol=0.02, rtol=0)
    own = torch.where(is_a, found[:, S_A], found[:, S_B])
    assert (own > 0.2).all() and (found[:, G] > 0.2).all()
    others = complement(torch.tensor([G, S_A, S_B]), H)
    assert found[:, others].abs().max() < 1e-3
    assert torch.where(is_a, found[:, S_B], found[:, S_A]).abs().max() < 1e-3

    importance = found.abs().mean(0)
    candidates = torch.tensor(STORING + DISTRACTORS)
    assert attribution_filter(candidates, found).tolist() == STORING
    # Stage 1's triggering candidates: u_1 duplicates g but is not read, so it goes.
    assert attribution_filter(torch.tensor([REGISTER[0], G]), found).tolist() == [G]
    assert attribution_filter(torch.arange(H), found).tolist() == sorted([G, S_A, S_B])
    assert importance[G] > importance.mean()


def test_attributions_at_t_minus_2_reach_the_register(at_t, attributions):
    found = attributions[T - 2, IG_STEPS]
    # T - t = 2: u_2 drives g(T - 1); g(T - 2) itself has no effect.
    assert (found[:, REGISTER[1]] > 0.05).all()
    others = complement(torch.tensor([REGISTER[1], S_A, S_B]), H)
    assert found[:, others].abs().max() < 1e-3
    counting = torch.tensor(sorted(REGISTER + [G] + DISTRACTORS))
    assert attribution_filter(counting, found).tolist() == [REGISTER[1]]
    torch.testing.assert_close(found.sum(1), torch.ones(16), atol=0.02, rtol=0)


def test_captums_convergence_delta_measures_completeness(model, at_t):
    """captum's completeness error (the attributions' sum minus F(h_t) - F(0)) is below 0.01
    with IG_STEPS points (measured 0.008) and near the whole change with 32, where the integral
    misses the jump."""
    batch, states = at_t
    _, fine = state_attributions(model, batch, states[:, T], t=T - 1, position=T,
                                 n_steps=IG_STEPS, convergence_delta=True)  # fmt: skip
    _, coarse = state_attributions(model, batch, states[:, T], t=T - 1, position=T, n_steps=32,
                                   convergence_delta=True)  # fmt: skip
    assert fine.shape == (16,) and fine.abs().max() < 0.01
    assert coarse.abs().min() > 0.5  # the sum ~0.01 against a change of ~1


def test_the_default_ig_steps_underestimate_but_rank_alike(attributions):
    """With captum's 32 points the integral misses the jump (the attributions sum to ~0.01 and
    ~0.03, not 1) but the units that carry it, and so the filter, are the same."""
    for t in (T - 1, T - 2):
        fine, coarse = attributions[t, IG_STEPS], attributions[t, 32]
        assert coarse.sum(1).max() < 0.1
        everything = torch.arange(H)
        assert attribution_filter(everything, coarse).tolist() == (
            attribution_filter(everything, fine).tolist()
        )


# ---- stage 3: verification by manipulation -------------------------------------------------------
def run(model, batch, *edits):
    return greedy_outputs(model, batch, STEPS, edits=list(edits))


def test_unedited_rows_at_t(model, at_t):
    batch, _ = at_t
    token = batch["signal_token"][:, 0]
    assert torch.equal(batch["decoder_inputs"], expected_outputs([T], token))
    assert position_hits(run(model, batch), token, T).all()


def test_storing_manipulations(model, at_t):
    batch, states = at_t
    token = batch["signal_token"][:, 0]
    storing = torch.tensor(STORING)
    zeroed = run(model, batch, storing_zero(storing, T))
    assert not position_hits(zeroed, token, T).any()
    assert torch.equal(zeroed, expected_outputs([], token))  # the token is lost for good
    kept = run(model, batch, storing_previous(storing, T, states))
    assert position_hits(kept, token, T).all()
    assert torch.equal(kept, expected_outputs([T], token))
    # The counting units replaced by their previous values lag one step behind: a delay of 1
    # (a check of storing_previous's values, h_{t-1} at t).
    lagged = run(model, batch, storing_previous(torch.tensor(sorted(REGISTER + [G])), T, states))
    assert torch.equal(lagged, expected_outputs([T + 1], token))
    # Zeroing distractors instead changes nothing.
    assert torch.equal(run(model, batch, storing_zero(torch.tensor(DISTRACTORS), T)), kept)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_counting_delay(model, at_t, k):
    batch, states = at_t
    token = batch["signal_token"][:, 0]
    counting = torch.tensor(sorted(REGISTER + [G]))
    delayed = run(model, batch, counting_delay(counting, T, k, states))
    assert position_hits(delayed, token, T + k).all()
    assert not position_hits(delayed, token, T).any()
    assert torch.equal(delayed, expected_outputs([T + k], token))
    # Without g, g(T - 1) = +1 still fires at T, and the register fires again at T + k.
    register_only = run(model, batch, counting_delay(torch.tensor(REGISTER), T, k, states))
    assert torch.equal(register_only, expected_outputs([T, T + k], token))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_counting_delay_before_the_trigger_needs_only_the_register(model, at_t, k):
    """Edited at t = T - 2, before g fires, the register alone delays the token by exactly k."""
    batch, states = at_t
    token = batch["signal_token"][:, 0]
    edit = counting_delay(torch.tensor(REGISTER), T, k, states, before=2)
    assert edit.steps == (decoder_step(T - 2),)
    assert torch.equal(run(model, batch, edit), expected_outputs([T + k], token))
    with pytest.raises(ValueError):
        counting_delay(torch.tensor(REGISTER), T, T - 1, states, before=2)


def test_counting_delay_needs_an_earlier_state(at_t):
    _, states = at_t
    counting_delay(torch.tensor(REGISTER), T, T - 1, states)  # t = T - 1 - k = 0: the encoder's
    with pytest.raises(ValueError):
        counting_delay(torch.tensor(REGISTER), T, T, states)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_triggering_advance(model, at_t, k):
    batch, states = at_t
    token = batch["signal_token"][:, 0]
    advanced = run(model, batch, triggering_advance(torch.tensor([G]), T, k, states))
    assert position_hits(advanced, token, T - k).all()
    # The register is untouched: g fires again at T - 1, and the token comes again at T.
    assert torch.equal(advanced, expected_outputs([T - k, T], token))
    # u_1, g's duplicate that nothing reads, advances nothing.
    unread = run(model, batch, triggering_advance(torch.tensor([REGISTER[0]]), T, k, states))
    assert torch.equal(unread, expected_outputs([T], token))


def test_triggering_advance_stays_in_the_decoder(at_t):
    _, states = at_t
    with pytest.raises(ValueError):  # t = T - 1 - k = 0 is the encoder's state
        triggering_advance(torch.tensor([G]), T, T - 1, states)


def test_outputting_units(model, at_t):
    batch, states = at_t
    token = batch["signal_token"][:, 0]
    h_t = states[:, T + 1]
    is_a = token == A
    weight = model.output.weight.detach()
    contributions = output_contributions(h_t, weight, token)
    assert contributions.shape == (16, H)
    torch.testing.assert_close(contributions[is_a, O_A], torch.full((8,), C), atol=1e-3, rtol=0)
    assert outputting_units(contributions[is_a]).tolist() == [O_A]
    assert outputting_units(contributions[~is_a]).tolist() == [O_B]
    assert outputting_units(contributions).tolist() == OUTPUTTING
    # d_cnt's contribution is positive on average but below the mean absolute contribution;
    # d_osc's (+1 at the even T) is above it but negative.
    assert contributions[:, D_CNT].mean() > 0.1
    assert contributions[:, D_OSC].abs().mean() > contributions.abs().mean()
    torch.testing.assert_close(contributions[:, D_OSC], torch.full((16,), -2.0), atol=1e-4, rtol=0)

    silenced = run(model, batch, zero_at_output(torch.tensor(OUTPUTTING), T))
    assert not position_hits(silenced, token, T).any()
    assert torch.equal(silenced, expected_outputs([], token))
    rest = complement(torch.tensor(OUTPUTTING), H)
    assert rest.tolist() == sorted(set(range(H)) - set(OUTPUTTING))
    kept = run(model, batch, zero_at_output(rest, T))
    assert position_hits(kept, token, T).all()


# ---- the whole method (`identify_neurons`, `verify_neurons`) -------------------------------------
@pytest.fixture(scope="module")
def traced(model, everything):
    from probes.neuron_functions import trace_rows

    batch, _, _ = everything
    found = trace_rows(model, batch, STEPS)
    assert torch.equal(found.outputs, batch["target"])
    return found


def test_trace_rows_decodes_at_most_traced_rows_at_once(model, everything, monkeypatch):
    """Without edits the rows are decoded `TRACED_ROWS` at a time (a decode's logits are `[rows,
    steps, vocabulary]`: section 4's rows at once outgrow memory at the paper's vocabulary), and
    the trace is the whole batch's, site by site; an edited batch is decoded at once."""
    import probes.neuron_functions as functions
    from lightning_modules.recurrent import Intervention

    batch, _, states = everything
    sizes = []
    forward = model.forward

    def counted(source, *args, **kwargs):
        sizes.append(len(source))
        return forward(source, *args, **kwargs)

    monkeypatch.setattr(model, "forward", counted)
    whole = functions.trace_rows(model, batch, STEPS)
    assert sizes == [64]
    sizes.clear()
    monkeypatch.setattr(functions, "TRACED_ROWS", 5)
    found = functions.trace_rows(model, batch, STEPS)
    assert sizes == [5] * 12 + [4]
    assert torch.equal(found.outputs, batch["target"])
    assert found.record.keys() == whole.record.keys()
    # The same rows, decoded in other batch sizes: equal up to float32 round-off, since BLAS may
    # sum a matrix product in another order for another number of rows (it does on some CPUs).
    for site, values in whole.record.items():
        torch.testing.assert_close(found.record[site], values, msg=site)
    torch.testing.assert_close(found.states, states)
    sizes.clear()
    functions.trace_rows(model, batch, STEPS, [Intervention("decoder.hidden", (0,), (1,), "zero")])
    assert sizes == [64]


def test_verify_neurons_with_the_planted_units(model, traced):
    """Rows of token A with T = 2..8 (4 filler counts each): counting k needs T >= k + 1,
    triggering k needs T >= k + 2; every manipulation does what the design says on every row."""
    from probes.neuron_functions import TokenNeurons
    from probes.neuron_manipulation import verify_neurons

    planted = TokenNeurons(
        A, torch.tensor([S_A]), torch.tensor(sorted(REGISTER + [G])), torch.tensor([G]),
        torch.tensor([O_A]), {}, {},
    )  # fmt: skip
    rows = {k: 4 * (P + 1 - k) for k in range(2, P + 1)}  # rows with T >= k
    assert verify_neurons(model, traced, planted) == {
        "storing_zero": [0, rows[2]],
        "storing_previous": [rows[2], rows[2]],
        **{f"counting_k{k}": [rows[k + 1], rows[k + 1]] for k in (1, 2, 3)},
        **{f"counting_before_trigger_k{k}": [rows[k + 2], rows[k + 2]] for k in (1, 2, 3)},
        **{f"triggering_k{k}": [rows[k + 2], rows[k + 2]] for k in (1, 2, 3, 4)},
        "outputting_zero": [0, rows[2]],
        "others_zero": [rows[2], rows[2]],
        **{f"storing_zero.T={t}": [0, 4] for t in range(2, P + 1)},  # the one group serves all T
    }


def test_controls_are_size_matched_random_non_candidates(model, traced):
    """The control of each manipulation edits as many random units that are not the function's
    candidates. In the planted network only o_A carries token A to the output: zeroing any one
    other unit at T keeps the token (every row a hit), keeping only one other unit loses it."""
    from probes.neuron_functions import TokenNeurons
    from probes.neuron_manipulation import control_units, verify_neurons

    candidates = {"storing": torch.tensor(STORING), "counting": torch.tensor(REGISTER + [G]),
                  "triggering": torch.tensor(sorted([G, REGISTER[0]]))}  # fmt: skip
    planted = TokenNeurons(
        A, torch.tensor([S_A]), torch.tensor(sorted(REGISTER + [G])), torch.tensor([G]),
        torch.tensor([O_A]), {}, candidates,
    )  # fmt: skip
    draws = [control_units(planted, H, torch.Generator().manual_seed(s)) for s in range(20)]
    for drawn in draws:
        # counting names 9 of the 16 units: fewer non-candidates are left, and all are taken
        sizes = {"storing": 1, "counting": H - 9, "triggering": 1, "outputting": 1}
        assert {f: len(units) for f, units in drawn.items()} == sizes
        assert not set(drawn["storing"].tolist()) & set(STORING)
        assert not set(drawn["triggering"].tolist()) & {G, REGISTER[0]}
        assert drawn["outputting"].tolist() != [O_A]
    assert len({tuple(d["storing"].tolist()) for d in draws}) > 1  # random
    again = control_units(planted, H, torch.Generator().manual_seed(3))
    assert all(torch.equal(again[f], draws[3][f]) for f in again)  # seeded
    counts = verify_neurons(model, traced, planted, control_draws=3, seed=1)
    rows = 4 * (P + 1 - 2)
    assert counts["control.outputting_zero"] == [3 * rows, 3 * rows]
    assert counts["control.others_zero"] == [0, 3 * rows]
    assert counts["control.storing_zero"][1] == 3 * rows
    assert "control.counting_before_trigger_k1" not in counts


def test_identify_neurons_on_the_planted_network(model, traced):
    """With RFE keeping 2 of 16 units, stage 1 keeps s_A, s_B (storing) and g, u_1
    (triggering); the filter (IG w.r.t. h_{T-1} of token A's rows) keeps s_A and g. The
    register acts on the output only through g a step later, so it has no attribution at
    h_{T-1}: counting candidates are also kept on their attribution at h_{T-2}, where u_2 (the
    unit that becomes g) carries the timing."""
    from probes.neuron_functions import identify_neurons

    found = identify_neurons(model, traced, A, keep=2 / H)
    assert found.accuracy == {"storing": 1.0, "counting": 1.0, "triggering": 1.0}
    assert found.candidates["storing"].tolist() == STORING
    assert found.candidates["triggering"].tolist() == sorted([G, REGISTER[0]])
    assert set(found.candidates["counting"].tolist()) <= set(REGISTER + [G])
    assert found.storing.tolist() == [S_A]
    assert found.triggering.tolist() == [G]
    assert REGISTER[1] in found.counting.tolist()
    assert set(found.counting.tolist()) <= set(REGISTER + [G])
    assert found.outputting.tolist() == [O_A]


def test_gate_interaction_reads_the_gates_the_triggering_unit_drives():
    """Section 5 on a variant of the network whose g also drives gates: U_z[o_A, g] = -BETA with
    update bias +BETA/2 (o_A updates only when g fires) and U_r[s_A, g] = +BETA with no reset
    bias. At t = T (g(T-1) = tanh(GAIN)): z[o_A] = sigmoid(BETA/2 - BETA g), r[s_A] =
    sigmoid(BETA g); with g masked at T - 1 both gates see only their bias."""
    from probes.neuron_functions import TokenNeurons, trace_rows
    from probes.neuron_manipulation import gate_interaction

    model = build_model()
    size = H
    with torch.no_grad():
        model.decoder.bias_ih_l0[size + O_A] = BETA / 2  # update-gate rows are size..2*size-1
        model.decoder.weight_hh_l0[size + O_A, G] = -BETA
        model.decoder.bias_ih_l0[S_A] = 0.0  # reset-gate rows are 0..size-1
        model.decoder.weight_hh_l0[S_A, G] = BETA
    batch = make_batch([T] * 4, [A] * 4, [0, 1, 2, 3])
    traced = trace_rows(model, batch, STEPS)
    assert (traced.outputs[:, T - 1] == A).all()  # still outputs A at T
    neurons = TokenNeurons(A, torch.tensor([S_A]), torch.tensor([], dtype=torch.long),
                           torch.tensor([G]), torch.tensor([O_A]), {}, {})  # fmt: skip
    gates = gate_interaction(model, traced, neurons)
    g = torch.tanh(torch.tensor(GAIN))
    expected = {
        "update_output": torch.sigmoid(BETA / 2 - BETA * g),
        "update_output_masked": torch.sigmoid(torch.tensor(BETA / 2)),
        "reset_store": torch.sigmoid(BETA * g),
        "reset_store_masked": torch.tensor(0.5),
        "update_drive_from_triggering": -BETA * g,
        "reset_drive_from_triggering": BETA * g,
    }
    assert set(gates) == set(expected)
    for key, value in expected.items():
        assert gates[key] == pytest.approx(float(value), abs=1e-4), key
