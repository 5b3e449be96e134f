"""The atlas's pre-registration: what it measures and how each answer is judged, written before any
atlas run existed (`DATE`).

The atlas puts every paper's method on every paper's models. This module fixes, once:

- `MODELS`: the matrix's rows, each one paper's trained model;
- `METHODS`: its columns, each with the one statistic a cell reports;
- `NOT_APPLICABLE`: the cells a method does not apply to, each with its reason (every other cell
  is measured on the trained model and, as its null, on the same model's untrained weights);
- `COUNTERPARTS`: the paper-specific targets (paper 4's output position and steps remaining,
  paper 1's table index, paper 2's determining phrase) defined for every task;
- `QUESTIONS`: the four cross-paper questions, each with its statistic, its rule (which verdict
  for which value, thresholds in `RULES`) and its null.

`claims.py` reads the thresholds from here, so a report's rules are the pre-registered ones;
`preregistration_text()` renders all of it as `reports/atlas/preregistration.md`
(`python -m experiments.atlas.questions` prints it), which a test keeps equal to this module.
"""

from __future__ import annotations

from dataclasses import dataclass

DATE = "2026-11-28"
"""When these questions, rules and definitions were written: before any atlas run."""


@dataclass(frozen=True)
class Model:
    """A row of the matrix: one paper's trained model (`paper`), its cell, its task."""

    paper: int
    cell: str
    task: str
    what: str


MODELS = {
    "paper1_baseline": Model(1, "gru", "lookup tables",
                             "paper 1's baseline GRU seq2seq with attention"),
    "paper1_guided": Model(1, "gru", "lookup tables",
                           "paper 1's GRU seq2seq trained with attentive guidance"),
    "paper2_lm": Model(2, "lstm", "rule corpus",
                       "paper 2's LSTM language model on the rule corpus of its Figure 2 "
                       "(the longest conduit, the most rules, fresh conduits)"),
    "paper3_scan_A": Model(3, "lstm", "SCAN",
                           "paper 3's LSTM seq2seq with attention on SCAN's jump split, setting A"),
    "paper3_scan_B": Model(3, "lstm", "SCAN",
                           "the same on setting B (action words drawn at random)"),
    "paper4_gru": Model(4, "gru", "token positioning", "paper 4's GRU seq2seq"),
    "paper4_lstm": Model(4, "lstm", "token positioning", "paper 4's LSTM seq2seq"),
}  # fmt: skip
"""The matrix's rows, each trained by its paper's own config and scale (`scales.py`)."""


@dataclass(frozen=True)
class Method:
    """A column of the matrix: one paper's method and the one number a cell reports."""

    paper: int
    name: str
    statistic: str


METHODS = {
    "functional_groups": Method(
        1, "diagnostic classifiers and functional groups",
        "held-out accuracy of the all-unit diagnostic classifier (the co-authors' procedure of "
        "paper 1) for the table index (`COUNTERPARTS`) from the decoder's update gate (an LSTM's "
        "forget gate, paper 1's footnote-1 reading; a language model's one layer)"),
    "gate_saturation": Method(
        1, "gate saturation",
        "median over the encoder's update-gate units (an LSTM's forget gate; a language model's "
        "one layer) of the fraction of valid steps left-saturated (< 0.1, torch's z), paper 1's "
        "Figure 4 statistic"),
    "connectivity": Method(
        1, "weight connectivity",
        "hub share of the encoder's recurrent update-gate matrix (W_hz; an LSTM's W_hf): the share "
        "of the strong edges (|w| >= 0.2, paper 1's threshold) held by the best-connected 5% of "
        "receiving units"),
    "contextual_decomposition": Method(
        2, "contextual decomposition of the output into input phrases",
        "mean over the analysed output words of beta / (|beta| + |gamma|), beta the part of the "
        "word's logit the determining phrase (`COUNTERPARTS`) contributes, gamma the rest (biases "
        "included)"),
    "integrated_gradients": Method(
        4, "integrated gradients",
        "share of the mean absolute integrated gradients (zero baseline, 32 steps) of P(the "
        "analysed token at T) with respect to h_(T-1) held by the top 10% of units (at least "
        "one), mean over the analysed tokens"),
    "neuron_functions": Method(
        4, "neuron-function identification verified by manipulation",
        "the counting manipulation's hit rate (counting units at T-1 set to their values at T-2: "
        "the token should come at T+1) minus that of size-matched random units, pooled over the "
        "analysed tokens (paper 4's three stages: SVM + RFE, the integrated-gradients filter, "
        "Table 1's manipulation)"),
    "redundant_input": Method(
        3, "dependence on redundant input",
        "the accuracy lost on the analysed output when the redundant input is replaced by that "
        "of another held-out row, the rest kept (SCAN: training minus test sentence accuracy, "
        "paper 3's own reading of the redundancy its setting A keeps)"),
}  # fmt: skip
WIRED = ("functional_groups", "gate_saturation", "connectivity", "contextual_decomposition",
         "integrated_gradients", "neuron_functions", "redundant_input")  # fmt: skip
"""The methods measured so far (`cells.measure_model`); the others' cells are listed as not yet
measured."""

NOT_APPLICABLE = {
    ("paper1_baseline", "redundant_input"):
        "every input symbol of a lookup-table row (the bits and each table) is needed for its "
        "output, so no input is redundant",
    ("paper1_guided", "redundant_input"):
        "every input symbol of a lookup-table row (the bits and each table) is needed for its "
        "output, so no input is redundant",
    ("paper2_lm", "redundant_input"):
        "the atlas's corpus draws every conduit afresh, independent of the rule, so no input "
        "carries partial information about omega beside alpha",
}  # fmt: skip
"""The cells a method does not apply to, with the reason; every other cell is measured."""
AMENDMENTS = (
    ("2026-11-29",
     "Before any SCAN run. Paper 4's time puts the encoder's last state at t = 0 in the "
     "decoder's units; paper 3's SCAN models (a bidirectional encoder whose first and last states "
     "start a decoder twice its width) have no such state. Their `neuron_functions` and "
     "`integrated_gradients` cells are therefore reported as not applying, found when measured "
     "(`cells.PAPER4_TIME`), as their `contextual_decomposition` cells already were (CD cannot "
     "follow that encoder), and `q4.overlap.paper3_scan_A` / `_B` and the SCAN claims of q2 are "
     "not judged. Their other cells, and q3, are measured as registered."),
    ("2026-11-29",
     "Before any paper2_lm run. The rule corpus has one rule (one alpha, one omega: paper 2, "
     "section 4.1), so its table index, alpha's identity, takes one value on every labelled "
     "step: paper2_lm's `functional_groups` cell, whose diagnostic classifier needs two, is "
     "reported as not applying, found when measured. Paper 4's time on the language model is "
     "the one the counterparts fix: alpha at t = 0 (steps until omega, from alpha on: T - t = "
     "k + 1 at alpha), so h_(T-1) is the state after the last conduit token, the one that "
     "predicts omega (a language model has no decoder step between reading its request and its "
     "first output): `integrated_gradients` is measured there. `neuron_functions` does not "
     "apply, found when measured (`cells.NO_PAPER4_STAGES`): paper 4's first stage separates "
     "the analysed token's states from other analysed tokens' and the rule corpus has one, "
     "omega; its manipulations read the token from the model's own greedy outputs a step later, "
     "where a language model reads its corpus. paper2_lm's other cells are measured as "
     "registered; no claim reads its cells."),
)  # fmt: skip
"""Changes to this pre-registration, each dated and said to come before the runs it concerns."""


COUNTERPARTS = {
    "output position T": {
        "token positioning": "the requested position (paper 4)",
        "lookup tables": "the position of the final output string (1 + the number of tables)",
        "SCAN": "the position of the last action before <eos>",
        "rule corpus": "the position of omega (conduit length + 1 after alpha)",
    },
    "analysed token (the output at T)": {
        "token positioning": "the requested token (paper 4)",
        "lookup tables": "the final output string (the composition's result)",
        "SCAN": "the last action",
        "rule corpus": "omega",
    },
    "steps remaining": {
        "token positioning": "T - t at the paper's time t = 0 .. T - 1 (paper 4)",
        "lookup tables": "T - t for the final string, t = 0 (the encoder's last state) .. T - 1",
        "SCAN": "T - t for the last action, t = 0 .. T - 1",
        "rule corpus": "steps until omega, from alpha on",
    },
    "table index": {
        "lookup tables": "the table a decoder step applies: the source table its attention "
        "target points at (paper 1, Table 2)",
        "token positioning": "the requested token, at the decoder step that outputs it (the one "
        "input symbol an output of the task is computed from); other steps unlabelled",
        "SCAN": "the command word an output action comes from (its verb, or its direction for a "
        "turn)",
        "rule corpus": "alpha's identity (which rule), at every step from alpha to omega",
    },
    "determining phrase": {
        "rule corpus": "alpha, for omega (paper 2)",
        "lookup tables": "the input bits and the tables applied up to that output",
        "token positioning": "the signal pair (token, <pos=T>), for the token at T",
        "SCAN": "the command word an action comes from (as the table index)",
    },
    "redundant input": {
        "token positioning": "the source line, beside the signal that alone decides the token at T",
        "SCAN": "the correlation of input words with output syntax that setting A keeps and "
        "setting B removes (paper 3)",
    },
}
"""Each paper-specific target, defined once for every task (`COUNTERPARTS_NOTE`: which rows)."""
COUNTERPARTS_NOTE = (
    "Each defined once, for every task, before any run. The analysed rows: paper 4's (its "
    "held-out pairs re-requested for its most common tokens at positions 1-13); for every other "
    "task the rows of every split, each a row of its analysed token at its T. A trained model is "
    "analysed on the rows it answers correctly at T where the scale says so, its untrained "
    "weights on every row. Where T takes few values (lookup tables: 2 or 3), steps remaining is "
    "close to the step index; the untrained null shows how much of a cell that alone gives."
)


@dataclass(frozen=True)
class Rule:
    """A claim's rule: `threshold` (reproduced when the statistic >= `reproduced_at`, partially
    >= `partially_at`, else not: `experiments.report.threshold_claim`) or `direction` (the
    statistic signed so the expected direction is positive; not reproduced at <= 0, a tie
    included: `experiments.report.direction_claim`)."""

    kind: str
    reproduced_at: float
    partially_at: float


@dataclass(frozen=True)
class Question:
    """A cross-paper question: its claims by id (each judged by `RULES[id]` on the trained models
    and on their untrained weights, the null) and what each claim's statistic is."""

    id: str
    question: str
    claims: dict[str, str]
    null: str


OVERLAP = (
    "per analysed token, the counting units A (paper 4's three stages) against the functional "
    "group B (paper 1's co-authors' procedure) for steps remaining fitted on the same samples (the "
    "states t = 0 .. T-1 of the token's rows, labelled T - t), N units: the overlap beyond chance "
    "(|A and B| - |A||B|/N) / (min(|A|, |B|) - |A||B|/N) (1: the smaller set inside the larger, "
    "0: as random sets of those sizes overlap, negative: less; 0 where either set is empty or the "
    "denominator is 0)"
)
"""Question 4's statistic for one token of one model (`cells.beyond_chance`)."""
PROTOCOL = (
    "The verdicts are read at the default scale: each model trained by its paper's own config at "
    "its paper's default scale, through the suite's fit, and analysed at its paper's checkpoint "
    "selection (paper 1: lowest validation loss, the authors' code's; paper 4: lowest validation "
    "loss; papers 2 and 3: the last checkpoint, as their reproductions read). The quick scale "
    "runs the same pipeline on tiny models to check it; its "
    "verdicts mean nothing."
)
UNTRAINED_NULL = (
    "the same statistic on the same models' untrained weights (each run's epoch=init snapshot, "
    "the same rows and analysis); where the untrained models pass the rule too, the answer is "
    "uninformative (`experiments.report.against_null`)"
)
SEQ2SEQ = ("paper1_baseline", "paper1_guided", "paper3_scan_A", "paper3_scan_B", "paper4_gru",
           "paper4_lstm")  # fmt: skip
Q3_MODELS = ("paper1_baseline", "paper1_guided", "paper3_scan_A", "paper3_scan_B", "paper4_gru",
             "paper4_lstm")  # fmt: skip

QUESTIONS = (
    Question(
        "q1",
        "Do paper 1's guided models hold paper 4's neuron types (units that store the token "
        "output at T or count down the steps remaining to it), and more of them than the "
        "baselines?",
        {
            "q1.guided_counting": "paper1_guided's `neuron_functions` cell: the counting "
            "manipulation's hit rate minus its random control's, mean over seeds",
            "q1.guided_storing": "paper1_guided: the storing manipulation's effect, the "
            "control's hit rate minus the storing units' (zeroed at T-1, the token should be "
            "lost), pooled over tokens, mean over seeds",
            "q1.guided_more": "the share of hidden units identified as counting or storing units "
            "(mean over the analysed tokens and seeds), guided minus baseline",
        },
        UNTRAINED_NULL,
    ),
    Question(
        "q2",
        "Does contextual decomposition show paper 2's pattern in seq2seq models: the phrase "
        "that determines an output word carrying most of its logit, more in guided than in "
        "baseline models, and more in setting B than A for SCAN?",
        {
            **{
                f"q2.most.{m}": f"{m}'s `contextual_decomposition` cell, mean over seeds"
                for m in SEQ2SEQ
            },
            "q2.guided_over_baseline": "the `contextual_decomposition` cell, paper1_guided minus "
            "paper1_baseline",
            "q2.b_over_a": "the `contextual_decomposition` cell, paper3_scan_B minus paper3_scan_A",
        },
        UNTRAINED_NULL,
    ),
    Question(
        "q3",
        "Are paper 1's findings on gate saturation (guided encoder update gates left-saturated) "
        "a property of attentive guidance, or do paper 4's and paper 3's models show them too?",
        {
            **{
                f"q3.left_saturated.{m}": f"{m}'s `gate_saturation` cell (pooled over its seeds' "
                "units, as paper 1's claim)"
                for m in Q3_MODELS
            },
            "q3.guidance_only": "paper1_guided's `gate_saturation` cell minus the largest of "
            "the other models' (paper1_baseline, paper3_scan_A, paper3_scan_B, paper4_gru, "
            "paper4_lstm)",
        },
        UNTRAINED_NULL,
    ),
    Question(
        "q4",
        "Do paper 4's counting units, found by SVM + RFE, also come out of paper 1's "
        "functional-group procedure on the same model (overlap beyond chance)?",
        {
            f"q4.overlap.{m}": f"{m}: `OVERLAP` of its counting units and its functional group "
            "for steps remaining, mean over the analysed tokens and seeds"
            for m in SEQ2SEQ
        },
        UNTRAINED_NULL,
    ),
)

RULES = {
    "q1.guided_counting": Rule("threshold", 0.25, 0.10),
    "q1.guided_storing": Rule("threshold", 0.25, 0.10),
    "q1.guided_more": Rule("direction", 0.05, 0.01),
    **{f"q2.most.{m}": Rule("threshold", 0.5, 0.35) for m in SEQ2SEQ},
    "q2.guided_over_baseline": Rule("direction", 0.05, 0.01),
    "q2.b_over_a": Rule("direction", 0.05, 0.01),
    **{f"q3.left_saturated.{m}": Rule("threshold", 0.5, 0.3) for m in Q3_MODELS},
    "q3.guidance_only": Rule("direction", 0.2, 0.05),
    **{f"q4.overlap.{m}": Rule("threshold", 0.5, 0.2) for m in SEQ2SEQ},
}
"""Every claim's rule; "reproduced" reads "yes" (the question's answer holds), "not reproduced"
"no". Paper 1's gate-saturation rule (0.5, 0.3) is kept for q3."""


def cell_status(model: str, method: str) -> str:
    """`measured` (against its untrained null), or the reason the method does not apply."""
    return NOT_APPLICABLE.get((model, method), "measured")


def rule_text(rule: Rule) -> str:
    if rule.kind == "threshold":
        return (f"yes (reproduced) if >= {rule.reproduced_at:g}, partly if >= "
                f"{rule.partially_at:g}, else no")  # fmt: skip
    return (f"no if <= 0 (a tie is not a difference); yes (reproduced) if >= "
            f"{rule.reproduced_at:g}, partly if >= {rule.partially_at:g}")  # fmt: skip


def preregistration_text() -> str:
    """`reports/atlas/preregistration.md`: the matrix, the counterparts and the questions with
    their rules, dated."""
    lines = [
        "# The atlas's pre-registration",
        "",
        f"Written {DATE}, before any atlas run, from `experiments/atlas/questions.py` (the "
        "code that judges the answers reads its rules from there). A rule changed after results "
        "exist keeps its earlier verdict beside the new one, as a paper's claim does.",
        "",
        PROTOCOL,
        "",
        "## The matrix",
        "",
        "Every cell is measured on the trained model and, as its null, on the same model's "
        "untrained weights (its epoch=init snapshot, the same rows and analysis), or says why "
        "the method does not apply.",
        "",
        "| model | " + " | ".join(METHODS) + " |",
        "|---|" + "---|" * len(METHODS),
    ]
    for name, model in MODELS.items():
        cells = ["measured" if cell_status(name, m) == "measured" else "does not apply"
                 for m in METHODS]  # fmt: skip
        lines.append(f"| `{name}`: {model.what} ({model.cell.upper()}) | " + " | ".join(cells)
                     + " |")  # fmt: skip
    lines += ["", f"{len(NOT_APPLICABLE)} cells do not apply:", ""]
    lines += [f"- `{m}` x `{k}`: {why}." for (m, k), why in NOT_APPLICABLE.items()]
    lines += ["", "## What each cell reports", ""]
    lines += [f"- `{key}` (paper {m.paper}, {m.name}): {m.statistic}."
              for key, m in METHODS.items()]  # fmt: skip
    lines += ["", "## The paper-specific targets on every task", "", COUNTERPARTS_NOTE, ""]
    for target, tasks in COUNTERPARTS.items():
        lines.append(
            f"- **{target}**: " + "; ".join(f"{task}: {what}" for task, what in tasks.items()) + "."
        )
    lines += ["", "## The questions", ""]
    for question in QUESTIONS:
        lines += [f"### {question.id}: {question.question}", "",
                  "| claim | statistic | rule |", "|---|---|---|"]  # fmt: skip
        lines += [f"| `{cid}` | {what} | {rule_text(RULES[cid])} |"
                  for cid, what in question.claims.items()]  # fmt: skip
        lines += ["", f"Null: {question.null}.", ""]
    lines += [f"`OVERLAP` (q4): {OVERLAP}.", ""]
    lines += ["## Amendments", ""] + [f"- {date}: {text}" for date, text in AMENDMENTS]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    print(preregistration_text(), end="")
