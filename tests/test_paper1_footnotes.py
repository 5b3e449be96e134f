"""Paper 1's footnotes 1 and 5 beyond accuracies: their claims' rules and the LSTMs' gate names,
with known answers."""

import pytest

from experiments.paper1.analyses import (
    GATES,
    MATRICES,
    PROBES,
    gate_sites,
    gru_named,
    matrices_of,
    probes_of,
)
from experiments.paper1.lstm import footnote1_analysis_claims
from experiments.paper1.shapley import footnote5_claims, sample_agreement
from experiments.report import Claim, Measured
from probes.traces import PAPER1_GATE_SITES


def records(weight_units: list[list[int]], shap_units: list[list[int]], again=None):
    """One model type's analyses and footnote-5 records, one classifier, a run per entry."""
    again = again or shap_units
    analysed = [{"probes": {"table2.encoder.hidden": {"units": units}}} for units in weight_units]
    shap = [{"groups": {"table2.encoder.hidden": {"units": units, "units_by_seed": [units, other]}}}
            for units, other in zip(shap_units, again, strict=True)]  # fmt: skip
    return analysed, shap


def verdicts(weight_units, shap_units, again=None) -> dict[str, str]:
    analysed, shap = records(weight_units, shap_units, again)
    claims = footnote5_claims({"guided": analysed}, {"guided": shap})
    return {claim.id.split(".")[1]: claim.verdict for claim in claims}


SAME = [[1, 2], [3, 4], [5, 6, 7], [1, 2], [8, 9]]


def test_identical_groups_confirm_the_units_but_are_neither_more_nor_less_consistent():
    """A tie is not "more" and not "less consistent": the same groups fail both directions."""
    assert verdicts(SAME, SAME) == {
        "shap_confirms_units": "reproduced",
        "shap_selects_more": "not reproduced",
        "shap_less_consistent": "not reproduced",
    }


def test_larger_shap_groups_are_more_and_their_spread_is_less_consistent():
    larger = [units + [40, 41] for units in SAME]  # +2 units each: sizes 4,4,5,4,4
    found = verdicts(SAME, larger)
    assert found["shap_selects_more"] == "reproduced"  # mean 4.2 / 2.2 - 1 = 0.91
    assert found["shap_confirms_units"] == "reproduced"
    # CV of sizes 4,4,5,4,4 (0.106) is below CV of 2,2,3,2,2 (0.203): more consistent, not less
    assert found["shap_less_consistent"] == "not reproduced"
    spread = [[1], [3, 4, 30, 31, 32, 33], [5], [1, 2, 20], [8, 9, 50, 51]]
    found = verdicts(SAME, spread)
    assert found["shap_less_consistent"] == "reproduced"
    smaller = [units[:1] for units in SAME]  # half of each pair, a third of the triple: 0.467
    found = verdicts(SAME, smaller)
    assert found["shap_selects_more"] == "not reproduced"
    assert found["shap_confirms_units"] == "not reproduced"
    smaller[2] = [5, 6]  # two thirds of the triple: 0.533
    assert verdicts(SAME, smaller)["shap_confirms_units"] == "partially reproduced"


def test_disjoint_groups_do_not_confirm_the_units():
    other = [[u + 100 for u in units] for units in SAME]
    assert verdicts(SAME, other)["shap_confirms_units"] == "not reproduced"


def test_the_sample_seeds_agreement_is_their_jaccard_index():
    _, shap = records(SAME, SAME, [units[:1] for units in SAME])
    # Jaccard of {a, b} and {a}: 1/2; of {5, 6, 7} and {5}: 1/3
    assert sample_agreement({"guided": shap}) == pytest.approx((4 * 0.5 + 1 / 3) / 5)
    one_seed = [{"groups": {"x": {"units_by_seed": [[1]]}}}]
    assert sample_agreement({"guided": one_seed}) is None


def claim(id: str, verdict: str) -> Claim:
    if verdict == "uninformative":
        return Claim(id, "", 0.0, Measured.of([0.0]), "", verdict,
                     rule_verdict="reproduced", uninformative_because="untrained")  # fmt: skip
    return Claim(id, "", 0.0, Measured.of([0.0]), "", verdict)


def test_footnote1_counts_the_gru_verdicts_the_lstms_repeat():
    """Five GRU claims, four with an LSTM counterpart: two keep their verdict; of the three
    reproduced on the GRUs, one is reproduced on the LSTMs and one is uninformative there (its
    untrained LSTMs pass it), which does not count as holding."""
    gru = [claim("a", "reproduced"), claim("b", "reproduced"), claim("c", "not reproduced"),
           claim("d", "reproduced"), claim("e", "reproduced")]  # fmt: skip
    lstm = [claim("a", "reproduced"), claim("b", "uninformative"), claim("c", "not reproduced"),
            claim("d", "partially reproduced")]  # fmt: skip
    same, held = footnote1_analysis_claims(gru, lstm)
    assert same.measured.mean == pytest.approx(2 / 4) and same.verdict == "not reproduced"
    assert held.measured.mean == pytest.approx(1 / 3) and held.verdict == "not reproduced"
    same, held = footnote1_analysis_claims(gru[:1], lstm[:1])
    assert same.verdict == held.verdict == "reproduced"


def test_the_gru_names_are_the_ones_the_claims_always_read():
    assert gate_sites("gru") == PAPER1_GATE_SITES == GATES
    assert list(MATRICES) == ["encoder W_hz", "encoder W_hr", "decoder W_iz", "decoder W_ir"]
    assert list(PROBES) == ["table2.encoder.hidden", "table2.decoder.update_gate",
                            "table2.decoder.reset_gate", "table3.encoder.hidden"]  # fmt: skip


def test_an_lstms_forget_and_output_gates_are_read_as_update_and_reset_gates():
    """`gru_named` gives the GRU claims an LSTM's forget gate as the update gate and its output
    gate as the reset gate, in every statistic; the input gate keeps its name; a GRU's analysis
    (with or without `cell`) is unchanged."""
    sites = gate_sites("lstm")
    lstm = {
        "cell": "lstm",
        "saturation": {site: site for site in sites},
        "connectivity": {name: name for name in matrices_of("lstm")},
        "probes": {name: name for name in probes_of("lstm")},
        "probes_text": {name: name for name in probes_of("lstm")},
        "figures": {"edges": {"encoder W_hf": "encoder W_hf", "decoder W_if": "decoder W_if"}},
    }
    named = gru_named(lstm)
    assert named["saturation"]["encoder.update_gate"] == "encoder.forget_gate"
    assert named["saturation"]["decoder.reset_gate"] == "decoder.output_gate"
    assert named["saturation"]["decoder.input_gate"] == "decoder.input_gate"
    assert set(GATES) < set(named["saturation"])
    assert named["connectivity"]["encoder W_hz"] == "encoder W_hf"
    assert named["connectivity"]["decoder W_ir"] == "decoder W_io"
    assert set(MATRICES) < set(named["connectivity"]) and "encoder W_hi" in named["connectivity"]
    for key in ("probes", "probes_text"):
        assert named[key]["table2.decoder.update_gate"] == "table2.decoder.forget_gate"
        assert named[key]["table2.decoder.reset_gate"] == "table2.decoder.output_gate"
        assert set(PROBES) < set(named[key])
    assert named["figures"]["edges"] == {"encoder W_hz": "encoder W_hf",
                                         "decoder W_iz": "decoder W_if"}  # fmt: skip
    gru = {**{k: v for k, v in lstm.items() if k != "cell"},
           "saturation": {site: site for site in GATES}}  # fmt: skip
    assert gru_named(gru) == gru
