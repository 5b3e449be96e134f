"""The atlas's report from its runs' measurements alone: the matrix (each cell's value beside its
untrained null, or why it does not apply, or that it is not yet measured) as a table and a figure,
the questions it can judge, those it never can on this model set (a method they read does not
apply to their models) and those it cannot yet (their models or methods not measured)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from experiments.atlas.claims import NEEDS, Records, not_judged  # noqa: E402
from experiments.atlas.questions import (  # noqa: E402
    METHODS,
    MODELS,
    QUESTIONS,
    RULES,
    WIRED,
    cell_status,
)
from experiments.atlas.runs import TAGS, paper_layout  # noqa: E402
from experiments.atlas.scales import NOT_WIRED, WIRED_TASKS, Scale  # noqa: E402
from experiments.atlas.view import ROWS_PER_TOKEN, SITES, SPLIT  # noqa: E402
from experiments.engine.publish import Stopwatch, kept_note  # noqa: E402
from experiments.findings import verdict_of  # noqa: E402
from experiments.report import (  # noqa: E402
    FLOAT_NOISE,
    UNINFORMATIVE,
    Claim,
    report_title,
    save_figure,
)
from probes.command.outputs import SMALLEST_POINTS  # noqa: E402

NOT_APPLICABLE = "does not apply"
NOT_YET = "not yet measured"
ABOVE, BELOW, EQUAL = "above its null", "below its null", "equal to its null"
COLOURS = {ABOVE: "#4c9a5f", BELOW: "#c0504d", EQUAL: "#d9d9d9", NOT_APPLICABLE: "#8c8c8c",
           NOT_YET: "#ffffff"}  # fmt: skip


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def cell(records: Records, model: str, method: str) -> dict:
    """One cell: `status` (`ABOVE`, `BELOW`, `EQUAL`, `NOT_APPLICABLE`, `NOT_YET`), and where
    measured the mean over seeds of its `value` and of its `null`, and the seeds; where the
    measurement found that the method does not apply to the model (`does_not_apply` in its
    part), `NOT_APPLICABLE` with `why`."""
    if cell_status(model, method) != "measured":
        return {"status": NOT_APPLICABLE}
    runs = [r for (m, _), r in sorted(records.items()) if m == model]
    parts = [side.get(method) or {} for r in runs for side in (r, r["untrained"])]
    reasons = sorted({part["does_not_apply"] for part in parts if "does_not_apply" in part})
    if reasons:  # found when measured: the model is not one the method can follow
        return {"status": NOT_APPLICABLE, "why": "; ".join(reasons)}
    values = [r["cells"].get(method) for r in runs]
    nulls = [r["untrained"]["cells"].get(method) for r in runs]
    if not runs or None in values or None in nulls:
        return {"status": NOT_YET}
    value, null = mean(values), mean(nulls)
    status = EQUAL if abs(value - null) <= FLOAT_NOISE else ABOVE if value > null else BELOW
    return {"status": status, "value": value, "null": null, "seeds": len(runs)}


def matrix(records: Records) -> dict[str, dict[str, dict]]:
    """Every cell of the matrix, by model and method."""
    return {model: {method: cell(records, model, method) for method in METHODS}
            for model in MODELS}  # fmt: skip


def cell_text(entry: dict) -> str:
    if "value" not in entry:
        return entry["status"]
    return f"{entry['value']:.3f} (null {entry['null']:.3f})"


def matrix_table(cells: dict[str, dict[str, dict]]) -> str:
    """The matrix in Markdown: each cell's value (mean over seeds) beside its untrained null."""
    lines = ["| model | " + " | ".join(f"`{m}`" for m in METHODS) + " |",
             "|---|" + "---|" * len(METHODS)]  # fmt: skip
    for model, row in cells.items():
        lines.append(f"| `{model}` | " + " | ".join(cell_text(row[m]) for m in METHODS) + " |")
    return "\n".join(lines)


def matrix_frame(cells: dict[str, dict[str, dict]]) -> pd.DataFrame:
    """The matrix as a table (for W&B): one row per cell."""
    rows = [{"model": model, "method": method, **entry}
            for model, row in cells.items() for method, entry in row.items()]  # fmt: skip
    return pd.DataFrame(rows)


def status_counts(cells: dict[str, dict[str, dict]]) -> dict[str, int]:
    counts = dict.fromkeys(COLOURS, 0)
    for row in cells.values():
        for entry in row.values():
            counts[entry["status"]] += 1
    return counts


def matrix_figure(cells: dict[str, dict[str, dict]], path: Path) -> Path:
    """The matrix as one figure: models by methods, each cell coloured by its value against its
    untrained null (above, below, equal), grey where the method does not apply, white where it is
    not yet measured; the value and the null written in it."""
    figure, axis = plt.subplots(figsize=(2.0 * len(METHODS) + 2, 0.7 * len(MODELS) + 1.5))
    for row, entries in enumerate(cells.values()):
        for column, method in enumerate(METHODS):
            entry = entries[method]
            axis.add_patch(plt.Rectangle((column, row), 1, 1, facecolor=COLOURS[entry["status"]],
                                         edgecolor="black", linewidth=0.5))  # fmt: skip
            text = (f"{entry['value']:.2f}\n(null {entry['null']:.2f})" if "value" in entry
                    else entry["status"].replace(" ", "\n", 1))  # fmt: skip
            axis.text(column + 0.5, row + 0.5, text, ha="center", va="center",
                      fontsize=SMALLEST_POINTS)  # fmt: skip
    axis.set_xlim(0, len(METHODS))
    axis.set_ylim(len(MODELS), 0)
    axis.set_xticks([c + 0.5 for c in range(len(METHODS))], list(METHODS), rotation=30,
                    ha="right", fontsize=SMALLEST_POINTS)  # fmt: skip
    axis.set_yticks([r + 0.5 for r in range(len(MODELS))], list(MODELS), fontsize=SMALLEST_POINTS)
    handles = [plt.Rectangle((0, 0), 1, 1, facecolor=colour, edgecolor="black")
               for colour in COLOURS.values()]  # fmt: skip
    axis.legend(handles, list(COLOURS), loc="upper center", bbox_to_anchor=(0.5, -0.35),
                ncol=len(COLOURS), fontsize=SMALLEST_POINTS)  # fmt: skip
    axis.set_title("The atlas: each cell's value (mean over seeds) against its untrained null")
    return save_figure(figure, path)


def found_not_applicable(cells: dict[str, dict[str, dict]]) -> str:
    """The cells whose measurement found that the method does not apply, each with why."""
    return "".join(f"\n- `{model}` x `{method}`: {entry['why']}." for model, row in cells.items()
                   for method, entry in row.items() if "why" in entry)  # fmt: skip


def unjudged(claims: list[Claim], cells: dict[str, dict[str, dict]]) -> tuple[dict, dict]:
    """The pre-registered claims not judged, in two, each with the cells (model, method) of
    `claims.NEEDS` it is not judged for: `never`, those reading a cell where the method does not
    apply (no run of this model set will judge them), and `not_yet`, the others, reading cells
    not yet measured (their runs will judge them)."""
    never, not_yet = {}, {}
    for claim_id in not_judged(claims):
        status = {need: cells[need[0]][need[1]]["status"] for need in NEEDS[claim_id]}
        inapplicable = [need for need, found in status.items() if found == NOT_APPLICABLE]
        if inapplicable:
            never[claim_id] = inapplicable
        else:
            not_yet[claim_id] = [need for need, found in status.items() if found == NOT_YET]
    return never, not_yet


def unmeasured(model: str, method: str, scale: Scale) -> tuple[str, str]:
    """What the cell of `model` and `method` waits for at `scale`, and why it is not measured."""
    task = MODELS[model].task
    if model in scale.left_out:
        return f"`{model}`", "left out with --models"
    if model not in scale.models:
        return f"`{model}`", "not trained at this scale"
    if task not in WIRED_TASKS:
        return f"`{model}`", f"not trained: {NOT_WIRED[task]}"
    if method not in WIRED:
        return f"`{method}`", "not wired yet"
    return f"`{model}` x `{method}`", "not measured yet"


def waits_text(needs: list[tuple[str, str]], scale: Scale) -> str:
    """`waits for` the models or methods of the cells `needs`, grouped by why each waits."""
    if not needs:
        return "its statistic is missing from the measurements"
    groups: dict[str, list[str]] = {}
    for model, method in needs:
        name, why = unmeasured(model, method, scale)
        groups.setdefault(why, []).append(name)
    return "waits for " + "; ".join(f"{', '.join(dict.fromkeys(names))} ({why})"
                                    for why, names in groups.items())  # fmt: skip


def claims_list(reasons: dict[str, str]) -> str:
    """Each claim of `reasons` with its reason, in the pre-registration's order."""
    lines = [f"- `{claim_id}`: {reasons[claim_id]}" for claim_id in RULES if claim_id in reasons]
    return "\n".join(lines) if lines else "- none."


def pending_text(claims: list[Claim], cells: dict[str, dict[str, dict]], scale: Scale) -> str:
    """The pre-registered claims not judged: how many of each kind, then those never judged on
    this model set and those not yet judged, each with its reason (`unjudged`)."""
    never, not_yet = unjudged(claims, cells)
    never_reasons = {
        claim_id: "reads " + ", ".join(f"`{m}` x `{k}`" for m, k in needs)
        + ", where the method does not apply"
        for claim_id, needs in never.items()
    }  # fmt: skip
    waiting = {claim_id: waits_text(needs, scale) for claim_id, needs in not_yet.items()}
    verb = "is" if len(claims) == 1 else "are"
    return f"""Of the {len(RULES)} pre-registered claims, {len(claims)} {verb} judged below,
{len(never)} never judged on this model set (a method they read does not apply to their models:
no run will judge them) and {len(not_yet)} not yet judged (their models or methods are not
measured at this scale: their runs will judge them).

Never judged on this model set (the matrix and the pre-registration say why each method does not
apply):

{claims_list(never_reasons)}

Not yet judged (each with what it waits for):

{claims_list(waiting)}"""


def not_yet_text(scale: Scale) -> str:
    """Why cells are not yet measured: models the scale does not train, tasks (each with its
    reason, `scales.NOT_WIRED`) and methods not wired yet."""
    absent = [m for m in MODELS if m not in scale.models and m not in scale.left_out]
    unwired = [m for m in scale.models if MODELS[m].task not in WIRED_TASKS]
    parts = []
    if scale.left_out:
        parts.append(f"{', '.join(f'`{m}`' for m in scale.left_out)} left out with --models")
    if absent:
        parts.append(f"this scale trains no {', '.join(f'`{m}`' for m in absent)}")
    for task in dict.fromkeys(MODELS[m].task for m in unwired):
        models = [f"`{m}`" for m in unwired if MODELS[m].task == task]
        verb = "is" if len(models) == 1 else "are"
        parts.append(f"{', '.join(models)} ({task}) {verb} not trained: {NOT_WIRED[task]}")
    methods = [m for m in METHODS if m not in WIRED]
    if methods:
        parts.append(f"the methods {', '.join(f'`{m}`' for m in methods)} are not wired yet")
    return "; ".join(parts)


def view_text(scale: Scale) -> str:
    """How to open the runs behind each cell in `python -m probes view` (`view.py`'s traces)."""
    commands = []
    for model in scale.models:
        runs = paper_layout(model, scale.models[model][0], scale, Path("<runs>")).path
        commands.append(f"- `{model}`: `python -m probes view --runs '{runs.parent}/seed=*'`")
    tags = ", ".join(f"paper {paper}: `{tag}`" for paper, tag in TAGS.items())
    sites = "\n".join(f"- `{method}`: {where}." for method, where in SITES.items())
    return f"""## Opening a cell's runs

A model's runs open in the suite's web page (`<runs>`: the run root, `--runs`; see
`docs/probing.md`):

{chr(10).join(commands)}

Their split `{SPLIT}` holds the rows the model's cells read, up to {ROWS_PER_TOKEN} of each
analysed token: at the tag of the checkpoint the cells measure ({tags}) and at `epoch=init`, the
same rows read by the run's untrained weights (the null); the page's Side by side shows the two
with one colour scale. The measurement writes them into the run folders, so a report rebuilt
from the measurement files alone has no page to open. Each method's cell is read in the page at:

{sites}
"""


ANSWERS = {"reproduced": "yes", "partially reproduced": "partly", "not reproduced": "no",
           UNINFORMATIVE: "uninformative", "-": "not judged"}  # fmt: skip
"""A verdict read as the answer to a question ("reproduced" reads yes)."""


def answers_frame(claims: list[Claim]) -> pd.DataFrame:
    """Each question's answer from its judged claims by the rule of a paper's finding
    (`experiments.findings.verdict_of`: every informative claim yes is yes, every one no is no,
    anything between is partly), beside each claim's answer and the same rule's on the
    untrained weights (the report's table and the W&B run's `answers`)."""
    rows = []
    for question in QUESTIONS:
        judged = [c for c in claims if c.id in question.claims]
        each = "; ".join(f"`{c.id}` {ANSWERS[c.verdict]} ({ANSWERS.get(c.null or '-')})"
                         for c in judged)  # fmt: skip
        rows.append({"question": question.id, "words": question.question,
                     "answer": ANSWERS[verdict_of(judged)], "claims": each or "-"})  # fmt: skip
    return pd.DataFrame(rows)


def answers_table(claims: list[Claim]) -> str:
    """`answers_frame` as the report's table."""
    lines = ["| question | answer | its claims: trained (untrained) |", "|---|---|---|"]
    for row in answers_frame(claims).itertuples():
        lines.append(f"| **{row.question}**: {row.words} | **{row.answer}** | {row.claims} |")
    return "\n".join(lines)


def part_note(scale: Scale) -> str:
    """A report of part of the scale (`--models`) says so where it names the scale."""
    if not scale.left_out:
        return ""
    return (f" Only part of the scale: {', '.join(f'`{m}`' for m in scale.left_out)} left out "
            "with --models, so the questions that read them wait for them.")  # fmt: skip


def report_text(scale_name: str, scale: Scale, records: Records, claims: list[Claim],
                clock: Stopwatch) -> str:  # fmt: skip
    """The report's text above its claims table."""
    cells = matrix(records)
    counts = status_counts(cells)
    measured = counts[ABOVE] + counts[BELOW] + counts[EQUAL]
    title = report_title("The atlas: every paper's method on every paper's models", scale_name)
    runs = ", ".join(f"{model} seed={seed}" for model, seed in sorted(records))
    not_yet = not_yet_text(scale)
    why_not_yet = f" ({not_yet})" if not_yet else ""
    return f"""{title}

Every paper's method on every paper's models, each cell beside the same method on the model's own
untrained weights (its null), and the cross-paper questions, judged by the rules written before
any atlas run (`reports/atlas/preregistration.md`, from `experiments/atlas/questions.py`),
regenerated by `make atlas` (`python -m experiments.atlas`).

## The answers

Each question's answer comes from its claims below (a claim "reproduced" reads yes, "not
reproduced" no) by the rule of a paper's finding: every informative claim yes is yes, every one
no is no, anything between is partly. The untrained weights' answer to each claim is beside it.

{answers_table(claims)}

**Scale:** `{scale_name}`; each model trained at its paper's `{scale.paper_scale}` scale by its
paper's own fit arguments ({runs}).{part_note(scale)}{kept_note(list(records.values()))} This
sitting's stages: {clock.stages()}.

## The matrix

{len(MODELS)} models by {len(METHODS)} methods: {measured} cells measured ({counts[ABOVE]} above
their null, {counts[BELOW]} below, {counts[EQUAL]} equal), {counts[NOT_APPLICABLE]} where the
method does not apply (the reasons are in the pre-registration, or below where the measurement
found them; a claim reading one is never judged), {counts[NOT_YET]} not yet
measured{why_not_yet}. A cell is the mean over the model's seeds of the statistic the
pre-registration names for its method; beside it, the same on the untrained
weights.{found_not_applicable(cells)}

![The matrix](figures/matrix.png)

{matrix_table(cells)}

{view_text(scale)}
## The questions

The claims below are the questions' claims the measured cells can judge, each by its
pre-registered rule ("reproduced" reads yes, "not reproduced" no), beside the same rule on the
untrained weights. {pending_text(claims, cells, scale)}
"""
