"""Paper 4's claims (Lee et al., "Exposing the Functionalities of Neurons for GRU Seq2Seq"):
every number and finding of sections 2, 4 and 5 with the rule that decides it, computed from the
per-model analyses of `experiments/paper4/analysis.py` (`analyse`).

Rules are fixed before the runs. Added later (new ids; the earlier claims keep their
rules): beside each Table 1 / finding 4 manipulation, the same edit on size-matched random
non-candidate units (`probes.neuron_functions.control_units`) and a directional claim against
it; the paper's directional words ("drops significantly", "remains high") as claims of their
own; and the statements of sections 4-5 not covered before (the share of the data the analysed
tokens and positions cover, one storing group for every position, counting in the opposite
direction, outputting values near -1 or +1, units with several functions).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from experiments.paper4.analysed import (
    FUNCTIONS,
    chance_of_a_shared_unit,
    has_multi_function_unit,
    manipulation_accuracy,
    mean_over_tokens,
    opposite_counting_share,
    per_model,
    positions_where_storing_matters,
    registered_measured,
    up_then_down,
)
from experiments.report import (
    CLOSE,
    Claim,
    Measured,
    after_rule_change,
    cannot_fail,
    compare_summaries,
    direction_claim,
    direction_first,
    graded,
    graded_distance,
    margins,
    ratio_claim,
    threshold_claim,
)
from probes.neuron_functions import HYPOTHESES, MANIPULATIONS

PAPER = json.loads((Path(__file__).parents[1] / "paper_values" / "paper4.json").read_text())
FIGURE2_TOKENS = 10
"""The tokens Figure 2 and the report's token table show, most common first."""


def exact(value: float) -> Measured:
    """A value the paper reports once, without spread."""
    return Measured(value, 0.0, 1, (value,))


PRINTED = {"decimals": 3, "previous_decimals": 2}
"""The paper prints its accuracies and gate values with 3 decimals (0.985, 0.833, 0.067); the
rule they replaced compared them at 2."""


HIGHER, LOWER = 1, -1
"""The paper's side of an accuracy (`one_sided`): at or above its value, or at or below it."""
REGISTERED = "Registered on 2026-11-28 before its result (reports/paper4/preregistration.md): "
ONE_SIDED = (
    "the rule: an accuracy above the paper's is no miss; one seed has the GRUs' spread. "
    f"{REGISTERED}an accuracy is compared with the paper's value on the paper's side only (at "
    "or below it for Table 1's zeroed storing units, at or above it for every other), the "
    "paper's value taken as exact (SE = s / sqrt(n), s the spread over seeds or, with one seed, "
    "the GRU seeds'); before, the comparison was two-sided, so beating the paper counted as a "
    "miss, and one seed had SE 0"
)
"""Why the accuracies' verdicts before the one-sided rule are kept (`Earlier`)."""


def one_sided(claim: Claim, side: int, spread: float, spread_of: str = "over seeds") -> Claim:
    """`claim` (`compare_summaries` of an accuracy against the paper's single value) judged on
    the paper's `side` only (`HIGHER`, `LOWER`): with SE = `spread` / sqrt(n), reproduced when
    the measured mean falls short of the paper's value by at most 2 SE + half a unit of its
    last printed decimal, partially by at most 4 SE + `CLOSE`; beyond the paper's value on its
    side is no shortfall. The verdict of the rule it replaced is kept (`ONE_SIDED`)."""
    paper, mean = float(claim.paper), claim.measured.mean
    standard_error = spread / math.sqrt(claim.measured.n)
    allowance, reproduced_within, partially_within = margins(standard_error, PRINTED["decimals"])
    shortfall = side * (paper - mean)
    verdict = graded_distance(shortfall, reproduced_within, partially_within)
    where = "at or above" if side == HIGHER else "at or below"
    rule = (
        f"one-sided, the paper's side {where} its value: shortfall of the measured mean = "
        f"{shortfall:.4f} (negative: beyond the paper's value); reproduced if <= 2 SE + "
        f"{allowance:g} (half a unit of the paper's last decimal) = {reproduced_within:.4f}, "
        f"partially if <= 4 SE + {CLOSE} = {partially_within:.4f} (SE = s / sqrt(n), the paper's "
        f"value exact; s = {spread:.4f}, {spread_of})"
    )
    judged = replace(claim, rule=rule, verdict=verdict)
    return after_rule_change(judged, claim.verdict, claim.rule, ONE_SIDED)


def seeds_spread(measured: Measured, gru: Measured) -> tuple[float, str]:
    """The spread over seeds an accuracy is judged with: its own, or with one seed the GRU
    seeds' at the same scale (the suite's only estimate of seed spread on this task)."""
    if measured.n > 1:
        return measured.std, "the spread over seeds"
    return gru.std, "the GRU seeds' spread (one seed)"


def claims_of(analyses: list[dict], accuracies: dict[str, list[float]],
              other_analyses: Sequence[dict] = ()) -> list[Claim]:  # fmt: skip
    """Every number and finding of sections 2, 4 and 5, each with its rule (fixed before the
    runs), then the size-matched controls and directional claims of Table 1 and the claims added
    later (`control_claims`, `added_claims`). Items 2-4's registered rules judge their claims
    where `analyses` and `other_analyses` (the other side of the null: the untrained analyses
    for the trained claims, the trained for the null's) all record what they read
    (`registered_measured`), so that a claim and its null share one rule."""
    paper = PAPER
    accuracy_claims = [
        compare_summaries("accuracy.gru", "GRU token-positioning accuracy (section 2, Gutenberg)",
                          exact(paper["accuracy"]["gru_gutenberg"]),
                          Measured.of(accuracies["gru"]), **PRINTED),
        compare_summaries("accuracy.lstm", "LSTM token-positioning accuracy (section 2)",
                          exact(paper["accuracy"]["lstm"]), Measured.of(accuracies["lstm"]),
                          **PRINTED),
        compare_summaries("accuracy.two_signals",
                          "Accuracy with several (token, position) signals (section 2; here 2)",
                          exact(paper["accuracy"]["two_signals"]),
                          Measured.of(accuracies["two_signals"]), **PRINTED),
        compare_summaries("accuracy.random_decoder_inputs",
                          "GRU accuracy with every decoder input a random token (section 5)",
                          exact(paper["accuracy"]["random_decoder_inputs"]),
                          Measured.of(per_model(analyses, lambda a: a["random_inputs_accuracy"])),
                          **PRINTED),
    ]  # fmt: skip
    gru = Measured.of(accuracies["gru"])
    claims = [one_sided(c, HIGHER, *seeds_spread(c.measured, gru)) for c in accuracy_claims]
    kept = [r / c if c else float("nan")  # an untrained GRU may position no test token
            for r, c in zip(per_model(analyses, lambda a: a["random_inputs_accuracy"]),
                            accuracies["gru"], strict=True)]  # fmt: skip
    claims.append(threshold_claim(
        "accuracy.random_inputs_barely_matter",
        "Decoder inputs barely matter: random-input accuracy / normal accuracy (section 5; paper "
        "98.0 / 98.5, section 2's Gutenberg accuracy, the data these models learn; earlier "
        "98.1, the lyrics')",
        round(paper["accuracy"]["random_decoder_inputs"] / paper["accuracy"]["gru_gutenberg"], 3),
        kept, float(np.mean(kept)),
        "mean ratio of random-input to normal accuracy", 0.98, 0.9,
    ))  # fmt: skip
    for hypothesis in HYPOTHESES:
        shares = per_model(analyses, lambda a, h=hypothesis: mean_over_tokens(
            a, lambda t: t["accuracy"][h] > paper["plausible_above"]))  # fmt: skip
        claim = threshold_claim(
            f"plausible.{hypothesis}",
            f"The {hypothesis} hypothesis is plausible (SVM accuracy > 95%) for the analysed "
            "tokens (sections 3.1, 4)", "all 50 tokens", shares, float(np.mean(shares)),
            "mean share of tokens whose SVM (balanced) training accuracy > 0.95", 0.9, 0.5,
        )  # fmt: skip
        claims.append(cannot_fail(claim, TRAINING_ACCURACY) if hypothesis in SEPARABLE else claim)
    for function in FUNCTIONS:
        shares = per_model(analyses, lambda a, f=function: mean_over_tokens(
            a, lambda t: len(t[f]) / a["hidden_size"]))  # fmt: skip
        claims.append(cannot_fail(ratio_claim(
            f"share.{function}",
            f"Share of units that are {function} neurons per token (paper: "
            f"{paper['share_text'][function]})", paper["shares"][function], shares, within=1.5,
        ), SHARE_SET_BY_METHOD[function]))  # fmt: skip
    registered = registered_measured([*analyses, *other_analyses])
    return (claims + finding_claims(analyses, registered) + control_claims(analyses)
            + added_claims(analyses, registered))  # fmt: skip


SEPARABLE = ("storing", "triggering")
TRAINING_ACCURACY = (
    "the rule reads the SVM's training accuracy, and a linear SVM on the 128 units separates the "
    "storing and triggering hypotheses' training rows (1.000 for every token of every model), "
    "whether or not the units hold the hypothesis; a held-out accuracy would test it (not "
    "measured yet)"
)
SHARE_SET_BY_METHOD = {
    **{function: "the share is set by the method, not the model: RFE keeps half of the units "
       "and the integrated-gradients filter keeps the candidates at or above the mean importance, "
       "so every model gives about a quarter of the units"
       for function in ("storing", "counting", "triggering")},
    "outputting": "the share is set by the method, not the model: the units whose mean logit "
    "term is positive and at least the mean absolute term are a fixed upper part of any "
    "distribution of terms",
}  # fmt: skip
CHOSEN_ON_THE_OUTPUT = (
    "the outputting units are chosen as the largest terms of the token's logit on rows the model "
    "already answers, so zeroing them (or everything else) decides the answer by construction"
)
CIRCULAR = ("finding4.outputting_zero", "finding4.others_zero", "control.outputting_zero",
            "control.others_zero")  # fmt: skip


def finding_claims(analyses: list[dict], registered: bool | None = None) -> list[Claim]:
    """Findings 1-4 (Table 1 among them) and section 5's gate interaction; with `registered`
    (None: where every analysis records it), the steady rise of finding 2 by item 3's rule."""
    if registered is None:
        registered = registered_measured(analyses)
    paper = PAPER
    claims = []
    steadiness = per_model(analyses, lambda a: 1 / mean_over_tokens(
        a, lambda t: t["storing_change_ratio"]))  # fmt: skip
    claims.append(threshold_claim(
        "finding1.storing_steady",
        "Storing neurons hardly change from t = -1 to T - 1 (finding 1, Figure 2)",
        "hardly change", steadiness, float(np.mean(steadiness)),
        "mean step-to-step change of other units / of storing units (mean over models)", 2.0, 1.0,
    ))  # fmt: skip
    for name in MANIPULATIONS:
        section = "outputting" if name in paper["outputting"] else "table1_gutenberg"
        claim = compare_summaries(
            f"table1.{name}" if section == "table1_gutenberg" else f"finding4.{name}",
            MANIPULATION_TEXT[name], exact(paper[section][name]),
            Measured.of(per_model(analyses, lambda a, n=name: manipulation_accuracy(a, n))),
            **PRINTED, previous_rounding=0.05,
        )  # fmt: skip
        if section == "table1_gutenberg":  # the paper's side: lower only where the token is lost
            side = LOWER if name == "storing_zero" else HIGHER
            claim = one_sided(claim, side, claim.measured.std)
        claims.append(cannot_fail(claim, CHOSEN_ON_THE_OUTPUT) if claim.id in CIRCULAR else claim)
    rho = per_model(analyses, lambda a: -a["counting_rho"])
    claims.append(threshold_claim(
        "finding2.deeper_drop_for_larger_T",
        "Counting neurons drop at t = 0 further the larger T is (finding 2, Figure 3)",
        "drop grows with T", rho, float(np.mean(rho)),
        "mean over models of -Spearman rho(T, aligned counting value at t = 0), T = 2..13",
        0.8, 0.5,
    ))  # fmt: skip
    claims.append(steady_rise_claim(analyses, registered))
    for key, direction, text in (
        ("update_output", 1, "the mean update gate of outputting neurons at T rises"),
        ("reset_store", -1, "the mean reset gate of storing neurons at T falls"),
    ):
        shares = per_model(analyses, lambda a, k=key, d=direction: mean_over_tokens(
            a, lambda t: d * (t["gates"][k + "_masked"] - t["gates"][k]) > 0))  # fmt: skip
        claims.append(direction_claim(
            f"section5.{key}_when_triggering_masked",
            f"With the triggering neurons of h_(T-1) masked, {text} (section 5)",
            f"{paper['section5_token_i'][key]} -> {paper['section5_token_i'][key + '_masked']} "
            "(token 'i')", shares, float(np.mean(shares)) - 0.5,
            "mean share of tokens where it does - 0.5 (as often as not: a tie)",
            0.4, 1e-9,
        ))  # fmt: skip
    for key, sign, text in (
        ("update_drive_from_triggering", -1, "U_z h_(T-1) over the outputting units is negative"),
        ("reset_drive_from_triggering", 1, "U_r h_(T-1) over the storing units is positive"),
    ):
        shares = per_model(analyses, lambda a, k=key, d=sign: mean_over_tokens(
            a, lambda t: d * t["gates"][k] > 0))  # fmt: skip
        claims.append(threshold_claim(
            f"section5.{key}",
            f"With every unit of h_(T-1) but the triggering ones masked, {text} (section 5, "
            "Equation 3, Figure 5a/b)", "negative" if sign < 0 else "positive", shares,
            float(np.mean(shares)), "mean share of tokens where it is", 0.9, 0.5,
        ))  # fmt: skip
    token_i = paper["section5_token_i"]
    for key, value in token_i.items():
        measured = [a["tokens"]["i"]["gates"][key] for a in analyses if "i" in a["tokens"]]
        if not measured:
            continue
        claim = compare_summaries(
            f"section5.token_i.{key}", f"Token 'i': {GATE_TEXT[key]} (section 5)",
            exact(value), Measured.of(measured), **PRINTED, previous_rounding=0.05,
        )  # fmt: skip
        if key.endswith("_masked"):  # the paper's change from the unmasked value, direction first
            unmasked = [a["tokens"]["i"]["gates"][key.removesuffix("_masked")]
                        for a in analyses if "i" in a["tokens"]]  # fmt: skip
            sign = np.sign(value - token_i[key.removesuffix("_masked")])
            change = float(sign * (np.mean(measured) - np.mean(unmasked)))
            claim = direction_first(claim, change, "mean change from the unmasked value")
        claims.append(claim)
    return claims


def steady_rise_claim(analyses: list[dict], registered: bool) -> Claim:
    """Finding 2's steady rise: each counting unit turned to rise from t = 0 to T - 1, or with
    `registered` (item 3) to drop at t = 0, its verdict before kept (`ALIGNED_BY_DROP`)."""
    text = "Counting neurons then rise step by step until T - 1 (finding 2, Figure 3)"
    rises = per_model(analyses, lambda a: a["counting_rises"])
    claim = threshold_claim(
        "finding2.steady_rise", text, "rise every step", rises, float(np.mean(rises)),
        "mean share of steps t -> t+1 (t = 0..T-2) where the mean aligned value rises",
        0.9, 0.7,
    )  # fmt: skip
    if not registered:
        return claim
    by_drop = per_model(analyses, lambda a: a["counting_rises_by_drop"])
    aligned = threshold_claim(
        "finding2.steady_rise", text, "rise every step", by_drop, float(np.mean(by_drop)),
        "mean over models of the share of steps t -> t+1 (t = 0..T-2, T = 2..13) where the "
        "mean counting value rises, each unit turned to drop at t = 0 (multiplied by "
        "-sign(jump h_0 - h_-1), +1 where 0)", 0.9, 0.7,
    )  # fmt: skip
    return after_rule_change(aligned, claim.verdict, claim.rule, ALIGNED_BY_DROP)


ALIGNED_BY_DROP = (
    f"the rule: units aligned by their drop at t = 0. {REGISTERED}each counting unit was turned "
    "by its own rise from t = 0 to T - 1, the window then tested for a rise; now each is turned "
    "by its jump at t = 0, so that a unit that drops there keeps its sign"
)
"""Why finding 2's steady rise keeps its verdict before the registered rule (`Earlier`)."""


MANIPULATION_TEXT = {
    "storing_zero": "Storing neurons zeroed at T - 1: accuracy (Table 1)",
    "storing_previous": "Storing neurons replaced by their previous value: accuracy (Table 1)",
    **{f"counting_k{k}": f"Counting neurons at T - 1 set to their values at T - 1 - {k}: token "
       f"{k} step(s) later (Table 1)" for k in (1, 2, 3)},
    **{f"triggering_k{k}": f"Triggering neurons' T - 1 values written at T - 1 - {k}: token "
       f"{k} step(s) earlier (Table 1)" for k in (1, 2, 3, 4)},
    "outputting_zero": "Outputting neurons zeroed at T: accuracy (finding 4)",
    "others_zero": "Every unit but the outputting neurons zeroed at T: accuracy (finding 4)",
}  # fmt: skip
GATE_TEXT = {
    "update_output": "mean update gate z[output] at T",
    "update_output_masked": "z[output] at T with triggering neurons masked",
    "reset_store": "mean reset gate r[store] at T",
    "reset_store_masked": "r[store] at T with triggering neurons masked",
}


DIRECTIONS = {
    "storing_zero": -1, "storing_previous": 0, "outputting_zero": -1, "others_zero": 1,
    **{f"counting_k{k}": 1 for k in (1, 2, 3)}, **{f"triggering_k{k}": 1 for k in (1, 2, 3, 4)},
}  # fmt: skip
"""How the named units' edit should compare with the same edit on random units: -1 the
accuracy falls more (the token is lost), 1 the intended effect happens more often (the token
moves, or survives with only these units), 0 no direction (replacing units by their previous
values should keep any units' token)."""


CONTROL_GAP = 0.02
"""The smallest accuracy gap over the control called partial evidence: 2 points, the sampling
noise of an accuracy over a few hundred rows."""


def control_claim(id: str, edit: str, effect: str, gaps: list[float], control: float,
                  note: str = "") -> Claim:  # fmt: skip
    """The controls' rule: per model the named units' accuracy minus the same `edit`'s on as
    many random non-candidate units (mean accuracy `control`), signed so that the paper's
    direction (`effect`) is positive; reproduced from 0.1, partially from `CONTROL_GAP`; `note`
    ends the rule's text."""
    return direction_claim(
        id, f"{edit}: the named units {effect} more often than as many random non-candidate "
        f"units (control accuracy {control:.3f})", "named units matter", gaps,
        float(np.mean(gaps)), "mean over models of (named - control accuracy), signed by the "
        f"paper's direction (partially from {CONTROL_GAP}: smaller gaps are within the rows' "
        f"sampling noise{note})", 0.1, CONTROL_GAP,
    )  # fmt: skip


def control_claims(analyses: list[dict]) -> list[Claim]:
    """For every manipulation with a direction: the named units' accuracy minus the control's,
    signed so that the paper's direction is positive; reproduced when the mean over models is at
    least 0.1, partially when above 0. And the paper's two directional words of Table 1."""
    claims = []
    for name, sign in DIRECTIONS.items():
        if not sign or not all(f"control.{name}" in next(iter(a["tokens"].values()))["verification"]
                               for a in analyses if a["tokens"]):  # fmt: skip
            continue
        gaps = per_model(analyses, lambda a, n=name, d=sign: d * (
            manipulation_accuracy(a, n) - manipulation_accuracy(a, f"control.{n}")))  # fmt: skip
        control = per_model(analyses, lambda a, n=name: manipulation_accuracy(a, f"control.{n}"))
        claim = control_claim(
            f"control.{name}", MANIPULATION_TEXT[name].split(":")[0],
            "lose the token" if sign < 0 else "have the effect", gaps, float(np.mean(control)),
            "; earlier, any gap above 0",
        )  # fmt: skip
        claims.append(cannot_fail(claim, CHOSEN_ON_THE_OUTPUT) if claim.id in CIRCULAR else claim)
    claims.append(restraining_claim(analyses))
    drops = per_model(analyses, lambda a: 1 - manipulation_accuracy(a, "storing_zero"))
    claims.append(threshold_claim(
        "direction.storing_zero_drops",
        "Zeroing the storing neurons at T - 1 makes the accuracy drop significantly (section 4.1)",
        "drops significantly (to 20.0 / 10.7%)", drops, float(np.mean(drops)),
        "mean over models of 1 - accuracy (the rows were answered correctly unedited)", 0.5, 0.2,
    ))  # fmt: skip
    kept = per_model(analyses, lambda a: manipulation_accuracy(a, "storing_previous"))
    claims.append(threshold_claim(
        "direction.storing_previous_remains_high",
        "Replacing the storing neurons by their previous values, the accuracy remains high "
        "(section 4.1)", "remains high (83.3 / 87.9%)", kept, float(np.mean(kept)),
        "mean accuracy over models", 0.8, 0.5,
    ))  # fmt: skip
    return claims


def restraining_claim(analyses: list[dict]) -> Claim:
    """Section 4's detail (1), added after the first runs: "the triggering neurons can also be
    regarded as playing a restraining role in the earlier stages". Read from Table 1's triggering
    rows: the token comes out k steps early when the triggering units carry their T - 1 values k
    steps early, far more often than when as many random units do; so before T their own values
    hold it back. The gap over the control, averaged over k = 1..4 (the suite's reading)."""
    ks = [k for k in (1, 2, 3, 4) if all(
        f"control.triggering_k{k}" in t["verification"] for a in analyses
        for t in a["tokens"].values())]  # fmt: skip
    gaps = per_model(analyses, lambda a: np.mean([
        manipulation_accuracy(a, f"triggering_k{k}")
        - manipulation_accuracy(a, f"control.triggering_k{k}") for k in ks]))  # fmt: skip
    return direction_claim(
        "finding3.triggering_restrains_earlier",
        "Triggering neurons restrain the token before T: given their T - 1 values k steps "
        "early, the token comes out k steps early, unlike with as many random units (section 4, "
        "detail (1); read from Table 1's triggering rows, k = 1..4)",
        "a restraining role in the earlier stages", gaps, float(np.mean(gaps)),
        "mean over models and k of (triggering - control accuracy of the token k steps early)",
        0.5, CONTROL_GAP,
    )  # fmt: skip


DATA_FACT = (
    "the share is the corpus's (a signal drawn from each training pair), the same for any "
    "model: a fact about the data, not a finding"
)
DATA_FACT_CHANGE = (
    f"the rule: a fact about the data, not a finding. {REGISTERED}the coverage is measured and "
    "tested as before, then judged uninformative, the corpus's share being no model's doing; "
    "the rule's own verdict stays beside it, and the report's data section keeps the numbers"
)
"""Why the coverage's verdicts before the pre-registered rule are kept (`Earlier`)."""


def added_claims(analyses: list[dict], registered: bool | None = None) -> list[Claim]:
    """The statements of sections 4-5 added later, each with its rule; the data's coverage is a
    fact about the corpus (`DATA_FACT`: uninformative, its rule's verdict beside it); with
    `registered` (None: where every analysis records it), counting the opposite way and the
    outputting values near +-1 by items 2 and 4's rules."""
    if registered is None:
        registered = registered_measured(analyses)
    claims = []
    for key, paper, text in (("tokens", 0.48, "the 50 most common tokens"),
                             ("positions", 0.75, "positions 1-13")):  # fmt: skip
        shares = per_model(analyses, lambda a, k=key: a["coverage"][k])
        checked = threshold_claim(
            f"data.coverage_{key}",
            f"Share of the data's (token, position) signals on {text} (section 4; measured on "
            "the corpus used: a signal drawn uniformly from each training pair)", paper, shares,
            1 - abs(float(np.mean(shares)) - paper), "1 - |mean over models - paper|",
            0.9, 0.8,
        )  # fmt: skip
        fact = cannot_fail(checked, DATA_FACT)
        claims.append(after_rule_change(fact, checked.verdict, checked.rule, DATA_FACT_CHANGE))
    storing_positions = per_model(analyses, positions_where_storing_matters)
    claims.append(threshold_claim(
        "finding1.one_group_for_every_position",
        "One fixed group of storing neurons per token serves every position T (finding 1: "
        "'regardless of its position')", "every position",
        storing_positions, float(np.mean(storing_positions)),
        "mean over models of the share of positions T = 2..13 where zeroing the token's one "
        "storing group loses the token in at least half the rows", 0.9, 0.5,
    ))  # fmt: skip
    opposite = per_model(analyses, opposite_counting_share)
    claim = threshold_claim(
        "finding2.some_count_the_opposite_way",
        "Some counting neurons count the opposite way: they jump up at t = 0 and fall (finding 2)",
        "some", opposite, float(np.mean(opposite) > 0) * float(np.mean(opposite) <= 0.5),
        "1 if the mean over models of the share of counting units that fall from t = 0 to "
        "T - 1 is in (0, 0.5], else 0", 1.0, 1.0,
    )  # fmt: skip
    claims.append(after_rule_change(opposite_way_claim(analyses, claim.claim), claim.verdict,
                                    claim.rule, UP_THEN_DOWN) if registered else claim)  # fmt: skip
    extreme = per_model(analyses, lambda a: mean_over_tokens(a, lambda t: t["outputting_abs"]))
    claim = threshold_claim(
        "finding4.outputting_values_near_one",
        "Outputting neurons' values at T lie close to -1 or +1 (finding 4)", "close to -1 or +1",
        extreme, float(np.mean(extreme)),
        "mean over models and tokens of |h_T| over the outputting units", 0.8, 0.5,
    )  # fmt: skip
    claims.append(after_rule_change(near_one_claim(analyses, claim), claim.verdict, claim.rule,
                                    NEARER_THAN_OTHERS) if registered else claim)  # fmt: skip
    shared = per_model(analyses, lambda a: mean_over_tokens(a, has_multi_function_unit))
    chance = float(np.mean(per_model(analyses, lambda a: mean_over_tokens(
        a, lambda t: chance_of_a_shared_unit(t, a["hidden_size"])))))  # fmt: skip
    claim = threshold_claim(
        "functions.several_at_once",
        "Neurons serve several functions at once (a unit in two or more of the four groups)",
        "some", shared, float(np.mean(shared)),
        "mean over models of the share of tokens with a unit in two or more function groups "
        f"(four random groups of the same sizes share a unit with probability p = {chance:.3f})",
        0.9, 0.5,
    )  # fmt: skip
    if chance >= 0.9:  # random groups would pass the rule too
        claim = cannot_fail(claim, f"four random groups of these sizes among the units share a "
                            f"unit with probability {chance:.3f}")  # fmt: skip
    claims.append(claim)
    return claims


UP_THEN_DOWN = (
    f"the rule: an up-jumping unit must then fall. {REGISTERED}a GRU unit and its negation are "
    "equally learnable, so the share of falling counting units sits near 0.5 by symmetry and "
    "untrained weights pass; now, among the counting units that jump up at t = 0, the share "
    "that then fall"
)
NEARER_THAN_OTHERS = (
    f"the rule: nearer ±1 than the other units. {REGISTERED}the outputting units' mean |h_T| "
    "must also exceed every other unit's on the same rows, by the control margins (0.1 for "
    f"reproduced, {CONTROL_GAP} for partially)"
)
"""Why finding 2's opposite counting and finding 4's values near +-1 keep their verdicts before."""


def opposite_way_claim(analyses: list[dict], text: str) -> Claim:
    """Item 2: some counting units jump up at t = 0 and then fall. Reproduced when every model
    has such a unit and, on average over the models with up-jumping units, at least 0.8 of them
    fall; partially when some model has one and the mean is at least 0.6."""
    counted = [up_then_down(a) for a in analyses]
    shares = [share for _, share in counted]
    defined = [share for share in shares if share == share]
    mean = float(np.mean(defined)) if defined else float("nan")
    having = sum(falling > 0 for falling, _ in counted)
    verdict = graded(having == len(counted) and mean >= 0.8, having > 0 and mean >= 0.6)
    rule = (
        f"per model, among the counting units that jump up at t = 0 (mean h_0 - h_-1 > 0, tokens "
        f"pooled), the share that then fall (mean h_(T-1) - h_0 < 0); mean over the models with "
        f"up-jumping units = {mean:.3f}; models with a unit that jumps up and falls: {having} of "
        f"{len(counted)}; reproduced if every model has one and the mean >= 0.8, partially if "
        "some model has one and the mean >= 0.6"
    )
    return Claim("finding2.some_count_the_opposite_way", text, "some", Measured.of(shares), rule,
                 verdict)  # fmt: skip


def near_one_claim(analyses: list[dict], level_claim: Claim) -> Claim:
    """Item 4: the outputting units' mean |h_T| (`level_claim`'s statistic, L) lies near 1 and
    above every other unit's on the same rows (C, the mean over models and tokens of the
    difference): reproduced when L >= 0.8 and C >= 0.1, partially when L >= 0.5 and C >=
    `CONTROL_GAP`."""
    level = level_claim.measured.mean
    contrast = float(np.mean(per_model(analyses, lambda a: mean_over_tokens(
        a, lambda t: t["outputting_abs"] - t["others_abs"]))))  # fmt: skip
    verdict = graded(level >= 0.8 and contrast >= 0.1,
                     level >= 0.5 and contrast >= CONTROL_GAP)  # fmt: skip
    rule = (
        f"mean over models and tokens of |h_T| over the outputting units L = {level:.3f}, and of "
        f"that minus |h_T| over every other unit on the same rows C = {contrast:.3f}; reproduced "
        f"if L >= 0.8 and C >= 0.1, partially if L >= 0.5 and C >= {CONTROL_GAP} (the control "
        "margins)"
    )
    return replace(level_claim, rule=rule, verdict=verdict, threshold=None)
