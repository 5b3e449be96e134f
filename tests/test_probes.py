"""Probes on networks whose answers are known: hand-built GRUs with planted units and weight
matrices with planted neurons (paper 1, sections 3-5)."""

import math

import pytest
import torch

from experiments.paper1.ablations import pruned_units
from lightning_modules.recurrent import GRU
from probes.activations import gate_saturation, value_quantiles
from probes.diagnostic import ablation_functional_group, functional_group, labelled_steps
from probes.weights import (
    connectivity,
    gate_weights,
    polarity_correlation,
    strongest_units,
    unit_strength,
)
from storage.files import RunFileError
from storage.run_folder import RunFolder

TABLES, NOISE, UNITS = 8, 4, 12


def planted_gru() -> GRU:
    """A GRU reading a one-hot table (inputs 0-7) and noise (inputs 8-11). Every update gate is
    shut (torch's z ~ 0, so h = candidate); units 0 and 1 hold the table as a point on a circle,
    the other units hold noise. Reset gates: unit 3 always closed, unit 4 always open, the rest
    at sigmoid(0) = 0.5."""
    gru = GRU(TABLES + NOISE, UNITS)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in gru.parameters():
            parameter.zero_()
        reset, update, candidate = (slice(i * UNITS, (i + 1) * UNITS) for i in range(3))
        gru.bias_ih_l0[update] = -20.0
        gru.bias_ih_l0[reset.start + 3] = -20.0
        gru.bias_ih_l0[reset.start + 4] = 20.0
        angles = torch.arange(TABLES) * 2 * math.pi / TABLES
        weight = gru.weight_ih_l0[candidate]
        weight[0, :TABLES] = 0.5 * torch.cos(angles)
        weight[1, :TABLES] = 0.5 * torch.sin(angles)
        weight[2:, TABLES:] = torch.randn(UNITS - 2, NOISE, generator=generator)
    return gru


def planted_inputs(batch: int = 150, time: int = 4):
    generator = torch.Generator().manual_seed(1)
    tables = torch.randint(0, TABLES, (batch, time), generator=generator)
    noise = torch.randn(batch, time, NOISE, generator=generator)
    return torch.cat([torch.nn.functional.one_hot(tables, TABLES).float(), noise], -1), tables


def test_functional_group_of_planted_pair_is_exactly_that_pair():
    inputs, tables = planted_inputs()
    record = {}
    planted_gru()(inputs, record=record)
    features, labels = labelled_steps(record["hidden"], tables)
    group = functional_group(features, labels)
    assert set(group.units.tolist()) == {0, 1}
    assert group.accuracy_all == 1.0 and group.accuracy == 1.0
    assert group.majority < 0.2


def test_labelled_steps_skips_unlabelled_steps():
    values = torch.arange(12.0).view(2, 3, 2)
    labels = torch.tensor([[-100, 1, 2], [3, -100, -100]])
    features, kept = labelled_steps(values, labels)
    assert kept.tolist() == [1, 2, 3]
    assert features.tolist() == [[2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]


def test_gate_planted_closed_counts_as_left_saturated_and_open_as_right():
    inputs, _ = planted_inputs()
    record = {}
    planted_gru()(inputs, record=record)
    mask = torch.ones(inputs.shape[:2], dtype=torch.bool)
    reset = gate_saturation(record["reset_gate"], mask)
    assert reset.left[3] == 1.0 and reset.right[3] == 0.0
    assert reset.right[4] == 1.0 and reset.left[4] == 0.0
    assert reset.left[0] == 0.0 and reset.right[0] == 0.0  # sigmoid(0) = 0.5: neither side
    assert not reset.off_axes().any()  # each unit is saturated on one side at most
    assert (gate_saturation(record["update_gate"], mask).left == 1.0).all()


def test_saturation_and_quantiles_count_only_valid_steps():
    values = torch.tensor([[[0.05], [0.95], [0.5]], [[0.0], [0.99], [0.99]]], dtype=torch.float64)
    mask = torch.tensor([[True, True, True], [True, False, False]])
    saturation = gate_saturation(values, mask)
    assert saturation.left.tolist() == [0.5] and saturation.right.tolist() == [0.25]
    assert saturation.off_axes(0.25).tolist() == [True]
    assert saturation.off_axes(0.3).tolist() == [False]
    assert value_quantiles(values, mask)[0, [0, 4]].tolist() == [0.0, 0.95]


def test_gate_weights_are_the_blocks_the_gates_use():
    gru = GRU(3, 5)
    inputs = torch.randn(2, 1, 3)
    record = {}
    gru(inputs, record=record)
    state = {f"layer.{name}": value for name, value in gru.state_dict().items()}
    units = slice(5, 10)  # torch's order: reset, update, candidate
    expected = torch.sigmoid(
        inputs[:, 0] @ gate_weights(state, "layer", "update_gate", "ih").T
        + gru.bias_ih_l0[units]
        + gru.bias_hh_l0[units]
    )
    torch.testing.assert_close(record["update_gate"][:, 0], expected)


def test_planted_strong_neuron_is_the_graph_hub():
    weight = torch.empty(16, 16).uniform_(-0.1, 0.1, generator=torch.Generator().manual_seed(0))
    weight[5] = 0.5
    graph = connectivity(weight, threshold=0.2)
    assert graph.edges == 16 and graph.edge_share == 16 / 256
    assert graph.degree_to.tolist() == [16 if i == 5 else 0 for i in range(16)]
    assert graph.connected("to") == 1 and graph.connected("from") == 16
    assert graph.hub_share("to") == 1.0
    assert graph.polar("to") == 1 and graph.polarity_to[5] == 1.0
    assert graph.polar("from") == 0  # one edge each: too few to call polar


def test_planted_strong_neuron_survives_pruning():
    generator = torch.Generator().manual_seed(0)
    state = {}
    for module, planted in (("encoder", 3), ("decoder", 17)):
        weight_ih = torch.empty(3 * 40, 6).uniform_(-0.1, 0.1, generator=generator)
        weight_hh = torch.empty(3 * 40, 40).uniform_(-0.1, 0.1, generator=generator)
        weight_ih[planted::40] = 1.0  # the unit's rows in all three gates
        state[f"{module}.weight_ih_l0"], state[f"{module}.weight_hh_l0"] = weight_ih, weight_hh
    assert strongest_units(unit_strength(state, "encoder"), 0.05)[0] == 3
    kept, removed = pruned_units(state)
    assert len(kept["encoder.hidden"]) == 2 == len(kept["decoder.hidden"])  # ceil(5% of 40)
    assert 3 in kept["encoder.hidden"] and 17 in kept["decoder.hidden"]
    assert 3 not in removed["encoder.hidden"] and len(removed["decoder.hidden"]) == 38


def test_pruning_by_strong_edges_keeps_the_units_with_most_edges_over_the_threshold():
    """Ranked by strong-edge count (`edge_thresholds`), a unit with one weight over the threshold
    beats one whose weights sum higher but stay under it; ties go to the larger summed |w|, then
    to the lower index."""
    from probes.weights import strong_edge_count

    units, inputs = 20, 4
    state = {"encoder.weight_ih_l0": torch.zeros(3 * units, inputs),
             "encoder.weight_hh_l0": torch.zeros(3 * units, units)}  # fmt: skip
    state["encoder.weight_ih_l0"][5, :3] = 0.21  # unit 5's reset row: 3 strong edges, sum 0.63
    state["encoder.weight_ih_l0"][units + 9, :] = 0.19  # unit 9's update row: none, sum 0.76
    state["encoder.weight_hh_l0"][units + 12, :2] = 0.3  # unit 12: 2 (0.6); units 0, 1 one each
    state["encoder.weight_hh_l0"][13, 0] = 0.5  # unit 13: 1 strong edge (0.5); unit 0 another
    state["encoder.weight_hh_l0"][14, 0] = 0.5  # unit 14: the same as 13; unit 0 a third (1.3)
    counts = strong_edge_count(state, "encoder", 0.2)
    assert counts[[0, 1, 5, 9, 12, 13, 14]].tolist() == [3, 1, 3, 0, 2, 1, 1]
    by_edges, _ = pruned_units(state, 0.2, ("encoder",), {"encoder": 0.2})  # keep 4 of 20
    assert by_edges["encoder.hidden"] == [0, 5, 12, 13]  # 13 before 14: the tie by index
    by_strength, _ = pruned_units(state, 0.2, ("encoder",))
    assert by_strength["encoder.hidden"] == [0, 5, 9, 12]


def test_polarity_correlation_of_opposite_and_equal_matrices():
    weight = torch.randn(10, 7, generator=torch.Generator().manual_seed(0))
    assert polarity_correlation(weight, -weight) == pytest.approx(-1.0)
    assert polarity_correlation(weight, 2 * weight, dim=0) == pytest.approx(1.0)


def test_run_folder_errors_name_the_file_and_the_fix(tmp_path):
    with pytest.raises(RunFileError, match="does not exist: train it first"):
        RunFolder(tmp_path / "nowhere")
    trace = tmp_path / "traces" / "validation" / "best.safetensors"
    trace.parent.mkdir(parents=True)
    trace.write_bytes(b"not a safetensors file")
    with pytest.raises(RunFileError, match="best.safetensors is corrupt"):
        RunFolder(tmp_path).trace("validation")
    with pytest.raises(RunFileError, match="record it with the TraceRecorder"):
        RunFolder(tmp_path).trace("new_compositions")


@pytest.mark.parametrize("penalty_c", [1.0, math.inf])
def test_the_coauthors_ablation_on_the_planted_pair(penalty_c):
    """machine-analysis's procedure (saga, repeated 90/10 splits, |mean coefficient| ranking) on
    the planted GRU, whose table lives in units 0 and 1 only, regularised (their code) or not
    (the paper's footnote 4). Ranked by every class's coefficients the group is that pair. Ranked
    by the first class's only (their code), unit 1 comes last: table 0 lies at angle 0 of the
    circle, so its class needs unit 0 alone and gives unit 1 no weight, and every noise unit is
    tried before it; the group grows to hold them."""
    inputs, tables = planted_inputs()
    record = {}
    planted_gru()(inputs, record=record)
    features, labels = labelled_steps(record["hidden"], tables)
    both = ablation_functional_group(features, labels, ranking="all_classes", penalty_c=penalty_c)
    assert set(both.units.tolist()) == {0, 1}
    assert both.accuracy >= 0.95 * both.accuracy_all and both.accuracy_all > 0.95
    first = ablation_functional_group(features, labels, ranking="first_class", penalty_c=penalty_c)
    assert first.units[0] == 0 and first.units[-1] == 1 and first.size > 2
    assert first.majority == pytest.approx(torch.bincount(labels).max().item() / len(labels))
    again = ablation_functional_group(features, labels, ranking="first_class", penalty_c=penalty_c)
    assert torch.equal(again.units, first.units) and again.accuracy == first.accuracy  # seeded
    with pytest.raises(ValueError, match="ranking must be"):
        ablation_functional_group(features, labels, ranking="largest")


def test_rankings_that_share_their_first_units_fit_those_prefixes_once(monkeypatch):
    """`ablation_functional_groups` with several rankings (footnote 5's sample seeds) fits the
    classifier of each ordered prefix of units once: a ranking given twice costs no fit more, and
    each gets the group the ranking alone gets."""
    from probes import diagnostic

    inputs, tables = planted_inputs()
    record = {}
    planted_gru()(inputs, record=record)
    features, labels = labelled_steps(record["hidden"], tables)
    order = diagnostic.coefficient_order("first_class")
    fits = []
    scored = diagnostic._mean_split_score
    monkeypatch.setattr(diagnostic, "_mean_split_score", lambda *a: fits.append(1) or scored(*a))
    alone = diagnostic.ablation_functional_groups(features, labels, [order])[0]
    count = len(fits)
    twice = diagnostic.ablation_functional_groups(features, labels, [order, order])
    assert len(fits) == 2 * count  # not 3 * count - 1
    assert all(torch.equal(g.units, alone.units) and g.accuracy == alone.accuracy for g in twice)


def test_the_coauthors_ablation_when_a_split_trains_without_a_class():
    """A label held by one sample (paper 4's counting hypothesis on few rows: the one row of a
    long T) lies in the held-out part of some of the co-authors' random splits, whose classifier
    then knows one class less: its coefficients count that class as weight 0, and the group is
    still found (the splits' coefficients had to have one shape)."""
    from sklearn.model_selection import ShuffleSplit

    inputs, tables = planted_inputs()
    record = {}
    planted_gru()(inputs, record=record)
    features, labels = labelled_steps(record["hidden"], tables)
    held_out = next(ShuffleSplit(5, test_size=0.1, random_state=0).split(features))[1][0]
    labels = labels.clone()
    labels[held_out] = TABLES  # a ninth class, in the first split's held-out part only
    group = ablation_functional_group(features, labels, ranking="all_classes")
    assert set(group.units.tolist()) == {0, 1} and group.accuracy_all > 0.9


def blas_threads() -> set[int]:
    """The thread counts of the BLAS libraries loaded (threadpoolctl)."""
    from threadpoolctl import threadpool_info

    return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


def test_classifiers_fit_on_one_blas_thread_and_leave_the_count_as_it_was(monkeypatch):
    """The diagnostic classifiers' fits see one BLAS thread (the same sums in every process),
    whatever the process has, and the process gets its own count back afterwards."""
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    seen, fit = [], LogisticRegression.fit

    def watched_fit(self, *arguments, **options):
        seen.append(blas_threads())
        return fit(self, *arguments, **options)

    monkeypatch.setattr(LogisticRegression, "fit", watched_fit)
    inputs, tables = planted_inputs(batch=40)
    record = {}
    planted_gru()(inputs, record=record)
    features, labels = labelled_steps(record["hidden"], tables)
    with threadpool_limits(limits=2, user_api="blas"):
        ablation_functional_group(features, labels, runs=2)
        functional_group(features, labels)
        assert blas_threads() == {2}
    assert len(seen) > 2 and all(threads == {1} for threads in seen)


def test_one_fit_at_a_time_on_one_blas_thread_across_threads():
    """Two threads fitting at once (a reproduction measures two runs at a time): the second
    waits for the first to leave, each fits on one BLAS thread, and the process's count is back
    afterwards."""
    import threading
    import time

    from probes.diagnostic import one_blas_thread

    before, events, seen = blas_threads(), [], {}
    second_waiting = threading.Event()

    def first():
        with one_blas_thread():
            events.append("first in")
            seen["first"] = blas_threads()
            second_waiting.wait()
            time.sleep(0.3)  # the second would be inside by now if it did not wait
            events.append("first out")

    def second():
        second_waiting.set()
        with one_blas_thread():
            events.append("second in")
            seen["second"] = blas_threads()

    worker = threading.Thread(target=first)
    worker.start()
    while not events:
        time.sleep(0.01)
    other = threading.Thread(target=second)
    other.start()
    worker.join()
    other.join()
    assert events == ["first in", "first out", "second in"]
    assert seen == {"first": {1}, "second": {1}} and blas_threads() == before
