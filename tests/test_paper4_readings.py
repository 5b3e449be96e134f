"""Paper 4's pre-registered other readings as the analysis records them and as their claims will
read them (`reports/paper4/preregistration.md`, items 7-10): random decoder inputs drawn from the
words with `<sos>` first (`experiments.paper4.analysis`), and the values of every new claim id
from one model's analysis (`experiments.paper4.readings`)."""

from __future__ import annotations

import math

import pytest
import torch

from datamodules.token_positioning import SOS, SPECIALS, TokenPositioningDataModule
from experiments.paper4.analysis import positioning_accuracy
from experiments.paper4.readings import READING_IDS, reading_values, shown_beside
from lightning_modules.seq2seq import Seq2Seq
from probes.neuron_functions import TokenNeurons, Traced

TEXT = "\n".join(f"{w} cat sat on the mat {w}\nthe dog ran to the cat {w}" for w in
                 "one two three four five six seven eight nine ten".split()) + "\n"  # fmt: skip


@pytest.fixture(scope="module")
def datamodule(tmp_path_factory):
    folder = tmp_path_factory.mktemp("words")
    (folder / "book.txt").write_text(TEXT)
    return TokenPositioningDataModule(data_dir=str(folder), vocab_size=60, max_tokens=10,
                                      validation_share=0.2, test_share=0.3)  # fmt: skip


def fed_inputs(model, datamodule, **options) -> list[torch.Tensor]:
    """Per test batch, `[rows, steps]` the decoder inputs `positioning_accuracy` feeds (embedded
    a step at a time, or every step in one call)."""
    calls: list[list[torch.Tensor]] = []
    hooks = [model.register_forward_pre_hook(lambda *_: calls.append([])),
             model.decoder_embedding.register_forward_hook(
                 lambda _, args, __: calls[-1].append(args[0]))]  # fmt: skip
    try:
        positioning_accuracy(model, datamodule, "test", **options)
    finally:
        for hook in hooks:
            hook.remove()
    return [ids[0] if ids[0].dim() == 2 else torch.stack(ids, 1) for ids in calls]


def test_random_word_inputs_keep_sos_first_and_draw_only_words(datamodule):
    """Words only: the first decoder input is `<sos>`, every later one a word of the vocabulary
    (no special token, no position token), drawn with the seed; today's option draws every
    input, the first included, from the whole vocabulary."""
    torch.manual_seed(0)
    vocab = datamodule.vocab
    model = Seq2Seq(len(vocab), len(vocab), embedding_size=4, hidden_size=8,
                    attention="none").eval()  # fmt: skip
    inputs = fed_inputs(model, datamodule, random_seed=0, words_only=True)
    assert sum(len(batch) for batch in inputs) == len(datamodule.datasets["test"])
    assert all(batch.shape[1] > 2 and (batch[:, 0] == SOS).all() for batch in inputs)
    words = {vocab[i] for batch in inputs for i in batch[:, 1:].flatten().tolist()}
    assert not words & set(SPECIALS) and not any(w.startswith("<pos=") for w in words)
    assert len(words) > 5  # drawn, not one word
    again = fed_inputs(model, datamodule, random_seed=0, words_only=True)
    assert all(torch.equal(a, b) for a, b in zip(inputs, again, strict=True))
    anything = fed_inputs(model, datamodule, random_seed=0)
    assert not all((batch[:, 0] == SOS).all() for batch in anything)
    assert {vocab[i] for batch in anything for i in batch.flatten().tolist()} & set(SPECIALS)


def test_words_only_needs_a_seed(datamodule):
    model = Seq2Seq(len(datamodule.vocab), len(datamodule.vocab), embedding_size=4,
                    hidden_size=8, attention="none").eval()  # fmt: skip
    with pytest.raises(ValueError, match="random_seed"):
        positioning_accuracy(model, datamodule, "test", words_only=True)


# ---- the values the new claim ids read -----------------------------------------------------------
COUNTED = ("triggering_k1", "triggering_k1.T=6", "control.triggering_k1.T=6",
           "each_step.counting_k2", "control.each_step.counting_k2", "lag_held.counting_k3",
           "single_step.storing_previous", "single_step.storing_previous_before_last",
           "control.single_step.storing_previous")  # fmt: skip
"""The verification entries a token of `test_reading_values_read_each_claims_counts` holds."""


def token(*counts: list[int]) -> dict:
    """A token's analysis whose `COUNTED` entries hold `counts` ([hits, rows] each)."""
    return {"verification": dict(zip(COUNTED, counts, strict=True))}


def test_reading_values_read_each_claims_counts():
    """Two tokens: triggering hits every row pooled but only 4 of 8 at T = 6 (its control 1 of
    8); each reading's hits and controls pooled over the tokens; words-only accuracy 0.6 of the
    model's 0.8."""
    first = token([20, 20], [3, 4], [0, 4], [9, 10], [1, 10], [5, 10], [7, 10], [6, 8], [2, 10])
    second = token([20, 20], [1, 4], [1, 4], [7, 10], [3, 10], [0, 10], [1, 10], [0, 8], [4, 10])
    analysis = {"tokens": {"a": first, "b": second}, "random_word_inputs_accuracy": 0.6,
                "test_position_acc": 0.8}  # fmt: skip
    values = reading_values(analysis)
    assert list(values) == list(READING_IDS)
    assert values["t6.table1.triggering_k1"] == 0.5
    assert values["t6.control.triggering_k1"] == 0.5 - 1 / 8
    assert values["each_step.table1.counting_k2"] == 0.8
    assert values["each_step.control.counting_k2"] == pytest.approx(0.8 - 0.2)
    assert values["lag_held.table1.counting_k3"] == 0.25
    assert math.isnan(values["lag_held.control.counting_k3"])  # no control measured
    assert math.isnan(values["t6.table1.triggering_k2"])  # no rows
    assert values["single_step.table1.storing_previous"] == 0.4
    assert values["single_step.direction.storing_previous_remains_high"] == 0.4
    assert values["words_only.accuracy.random_decoder_inputs"] == 0.6
    assert values["words_only.accuracy.random_inputs_barely_matter"] == pytest.approx(0.75)
    assert shown_beside(analysis) == {"single_step.storing_previous_before_last": 0.375,
                                      "control.single_step.storing_previous": 0.3}  # fmt: skip
    analysis["test_position_acc"] = 0.0  # an untrained GRU may position no test token
    assert math.isnan(reading_values(analysis)["words_only.accuracy.random_inputs_barely_matter"])


def test_the_preregistrations_claim_ids():
    ids = {f"t6.{kind}.triggering_k{k}" for kind in ("table1", "control") for k in (1, 2, 3, 4)}
    ids |= {f"{reading}.{kind}.counting_k{k}" for reading in ("each_step", "lag_held")
            for kind in ("table1", "control") for k in (1, 2, 3)}  # fmt: skip
    ids |= {"single_step.table1.storing_previous",
            "single_step.direction.storing_previous_remains_high",
            "words_only.accuracy.random_decoder_inputs",
            "words_only.accuracy.random_inputs_barely_matter"}  # fmt: skip
    assert set(READING_IDS) == ids and len(READING_IDS) == len(ids)


def test_an_analysis_from_before_the_readings_is_one_clear_error():
    before = {"tokens": {"a": {"verification": {"storing_zero": [1, 2]}}},
              "random_inputs_accuracy": 0.5, "test_position_acc": 0.9}  # fmt: skip
    with pytest.raises(ValueError, match="measured before them; analyse the run again"):
        reading_values(before)
    with pytest.raises(ValueError, match="measured before them"):
        shown_beside(before)


def test_the_planted_units_pass_every_reading():
    """`verify_neurons` with the readings on the hand-built GRU (`tests/planted_counter_gru.py`),
    its controls d_par (held, read by nothing) for storing and triggering and the 7 units outside
    the register and g for counting: every reading hits on every trial and its control on none
    (but storing's, whose token stays), so every accuracy is 1 and every gap over the control 1."""
    from probes.neuron_functions import complement, trace_rows
    from probes.neuron_manipulation import verify_neurons
    from tests.planted_counter_gru import (
        COUNTING,
        D_PAR,
        STEPS,
        H,
        build_model,
        every_request,
        planted_neurons,
    )  # fmt: skip

    model = build_model()
    traced = trace_rows(model, every_request(fillers=(0, 2)), STEPS)
    beyond_d_par = complement(torch.tensor([D_PAR]), H)
    planted = planted_neurons({"storing": beyond_d_par, "counting": torch.tensor(COUNTING),
                               "triggering": beyond_d_par})  # fmt: skip
    verification = verify_neurons(model, traced, planted, control_draws=1, readings=True)
    analysis = {"tokens": {"A": {"verification": verification}},
                "random_word_inputs_accuracy": 0.9, "test_position_acc": 1.0}  # fmt: skip
    values = reading_values(analysis)
    assert values == {claim: 0.9 if claim.startswith("words_only") else 1.0
                      for claim in READING_IDS}  # fmt: skip
    assert shown_beside(analysis) == {"single_step.storing_previous_before_last": 1.0,
                                      "control.single_step.storing_previous": 1.0}  # fmt: skip


def planted_states() -> Traced:
    """Two rows of token 7 at T = 3 (states t = -1..4, 4 units): unit 0 drops at t = 0 and then
    rises (the paper's counting), unit 1 jumps up and then falls (counting "in the opposite
    manner"), unit 2 jumps up and rises; unit 3 sits at 0.9 at h_T, the rest at 0.2 there."""
    t = torch.arange(-1, 5, dtype=torch.float)
    counting = torch.stack([torch.where(t < 0, 0.0, -0.8 + 0.2 * t),
                            torch.where(t < 0, 0.0, 0.8 - 0.2 * t),
                            torch.where(t < 0, 0.0, 0.5 + 0.1 * t)], -1)  # fmt: skip
    states = torch.cat([counting, torch.full((6, 1), 0.9)], -1).repeat(2, 1, 1)
    states[:, 4, :3] = 0.2 * torch.tensor([-1.0, 1.0, 1.0])  # h_T: |0.2| beside unit 3's 0.9
    batch = {"signal_token": torch.tensor([[7], [7]]), "signal_position": torch.tensor([[3], [3]])}
    return Traced(batch, {}, torch.zeros(2, 5, dtype=torch.long), states)


def test_counting_units_record_their_jump_and_rise_and_curves_align_by_the_drop():
    from experiments.paper4.analysis import counting_curves, counting_units, output_magnitude

    empty = torch.tensor([], dtype=torch.long)
    neurons = TokenNeurons(7, empty, torch.tensor([0, 1, 2]), empty, torch.tensor([3]), {}, {})
    traced = planted_states()
    units = counting_units(traced, neurons)
    assert units["jump"] == pytest.approx([-0.8, 0.8, 0.5])
    assert units["rise"] == pytest.approx([0.4, -0.4, 0.2])  # t = 0 -> T - 1 = 2
    # by the rise, each unit is turned to rise: the mean curve at t = 0 is (-0.8 - 0.8 + 0.5) / 3;
    # by the drop, units 1 and 2 are turned to drop: (-0.8 - 0.8 - 0.5) / 3
    assert counting_curves(traced, [neurons])[3][1] == pytest.approx(-1.1 / 3)
    assert counting_curves(traced, [neurons], by_drop=True)[3][1] == pytest.approx(-2.1 / 3)
    assert output_magnitude(traced, neurons) == pytest.approx(0.9)
    assert output_magnitude(traced, neurons, others=True) == pytest.approx(0.2)
