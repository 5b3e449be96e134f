"""Claims with verdicts decided by written rules, and the report files of a reproduction.

Every number or finding of a paper becomes a `Claim`: the paper's value, the measured
mean/std/n, the rule in words, and the verdict that the rule's code computes (never set by
hand). `write_report` writes `results.json` (a list of claims, as in DESIGN.md) and
`report.md` atomically.

A rule or reading changed after results existed keeps the verdict of the old one beside the new
(`Earlier`, attached by `with_earlier` or by the rule itself): a claim keeps every change, newest
first. The report says which verdicts a change moved and why in a few words (`why_changed`: a
reason's first sentence); its history, `history.md` (`experiments.history`), lists each change
with its whole reason and every verdict it changed.

A fourth verdict, **uninformative**, counts as neither reproduced nor not: a claim
whose rule the same architecture passes untrained (its initial weights, the same data and
analysis: `against_null`), or one its rule cannot fail by construction (`cannot_fail`, with the
reason). The rule's own verdict on the trained models is kept beside it (`Claim.rule_verdict`).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import pandas as pd

from experiments import REPOSITORY
from probes.command.outputs import escape_cell, markdown_table, save_figure  # noqa: F401 (re-exported)
from probes.command.outputs import log_to_wandb as log_wandb_run
from storage.files import write_text_atomic

RULE_VERDICTS = ("reproduced", "partially reproduced", "not reproduced")
"""What a rule can say of a model."""
UNINFORMATIVE = "uninformative"
VERDICTS = (*RULE_VERDICTS, UNINFORMATIVE)
FLOAT_NOISE = 1e-9
"""Differences this small are ties: a rule compares printed values, not float artefacts."""
QUICK = "quick"
"""The scale at which every reproduction runs its whole pipeline on tiny sizes, in minutes: a
check of the pipeline whose verdicts mean nothing, as its report's first line says
(`report_title`)."""


@dataclass(frozen=True)
class Measured:
    mean: float
    std: float
    n: int
    values: tuple[float, ...] = ()

    @classmethod
    def of(cls, values: Sequence[float]) -> Measured:
        values = tuple(float(v) for v in values)
        n = len(values)
        mean = sum(values) / n
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
        return cls(mean, std, n, values)


@dataclass(frozen=True)
class Earlier:
    """A claim's verdict under the rule (or the reading of the paper) that the current one
    replaced after results existed, and why it was replaced."""

    verdict: str
    rule: str
    reason: str


@dataclass(frozen=True)
class Threshold:
    """A threshold rule's statistic and bounds (`threshold_claim`), readable so that the same
    rule can judge the statistic computed on other runs (a null)."""

    statistic: float
    reproduced_at: float
    partially_at: float

    def verdict(self, statistic: float) -> str:
        """The rule's verdict on `statistic`."""
        return graded(statistic >= self.reproduced_at, statistic >= self.partially_at)


@dataclass(frozen=True)
class Claim:
    id: str
    claim: str
    paper: float | str
    measured: Measured
    rule: str
    verdict: str
    earlier: tuple[Earlier, ...] = ()
    """The verdicts before each change of rule, reading or runs, newest first: `earlier[0]` is
    what the rule replaced last gave; each entry's `reason` is the change that followed it."""
    null: str | None = None
    """The same rule's verdict on the same architectures untrained (`against_null`); None where
    the pipeline was not run on them."""
    rule_verdict: str | None = None
    """The rule's verdict on the trained models, kept where `verdict` is uninformative."""
    uninformative_because: str | None = None
    rule_since: str | None = None
    """When the rule was last changed: `2026-11-25 (commit 6467b3a)` (`experiments.rule_dates`)."""
    finding: str | None = None
    """The id of the paper's finding the claim tests (`experiments.findings`); None for a fact
    about the data or the setup."""
    reading: str | None = None
    """The reading of the paper the claim is under; None for the report's primary one."""
    null_model: str | None = None
    """What `null` was judged on where not the untrained models (e.g. `seed split`)."""
    threshold: Threshold | None = field(default=None, compare=False, repr=False)
    """A threshold rule's statistic and bounds (`threshold_claim`); not written to json."""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")
        if self.null is not None and self.null not in RULE_VERDICTS:
            raise ValueError(f"null must be one of {RULE_VERDICTS}, got {self.null!r}")
        uninformative = self.verdict == UNINFORMATIVE
        if uninformative != (self.rule_verdict is not None) or uninformative != bool(
            self.uninformative_because
        ):
            raise ValueError(
                f"claim {self.id!r}: an uninformative verdict keeps the rule's own verdict "
                "(rule_verdict) and its reason (uninformative_because), and only it does: use "
                "against_null or cannot_fail"
            )

    def as_json(self) -> dict:
        record = asdict(self)
        record["measured"] = {k: v for k, v in record["measured"].items() if k != "values"}
        record["measured"]["values"] = list(self.measured.values)
        record["earlier"] = [asdict(e) for e in self.earlier]
        del record["threshold"]
        if self.null_model is None:
            del record["null_model"]
        return record

    @classmethod
    def from_json(cls, record: dict) -> Claim:
        """The claim `as_json` wrote (a `results.json` entry)."""
        measured = dict(record["measured"])
        measured["values"] = tuple(measured.get("values", ()))
        earlier = record.get("earlier") or ()
        earlier = tuple(Earlier(**e) for e in ([earlier] if isinstance(earlier, dict) else earlier))
        return cls(record["id"], record["claim"], record["paper"], Measured(**measured),
                   record["rule"], record["verdict"], earlier, record.get("null"),
                   record.get("rule_verdict"), record.get("uninformative_because"),
                   record.get("rule_since"), record.get("finding"),
                   record.get("reading"), record.get("null_model"))  # fmt: skip

    @property
    def changed(self) -> bool:
        """The verdict differs from the one before the latest change (`earlier[0]`)."""
        return bool(self.earlier) and self.earlier[0].verdict != self.verdict

    def changes(self) -> list[tuple[Earlier, str]]:
        """Each change as (the state before it, the verdict right after it), newest first."""
        after = [self.verdict] + [e.verdict for e in self.earlier]
        return list(zip(self.earlier, after, strict=False))


def after_rule_change(claim: Claim, verdict: str, rule: str, reason: str) -> Claim:
    """`claim` with `verdict` under `rule`, the rule (or reading) it replaced on the same
    measurements, as its newest `Earlier`, `reason` naming the change; its older history kept."""
    return replace(claim, earlier=(Earlier(verdict, rule, reason), *claim.earlier))


def against_null(claim: Claim, on_untrained: Claim) -> Claim:
    """`claim`, judged on the trained models, beside the same rule on the same architectures
    untrained (`on_untrained`: initial weights, the same data and analysis). Where the untrained
    models pass the rule (reproduced) and the trained ones reproduce it at least partly, the rule
    cannot tell training from none: the claim is uninformative. A trained model that fails a
    rule its untrained one passes stays "not reproduced" (the rule could fail, and did)."""
    null = on_untrained.rule_verdict or on_untrained.verdict
    judged = replace(claim, null=null)
    if null != "reproduced" or judged.verdict == "not reproduced":
        return judged
    return cannot_fail(judged, f"the untrained models pass the same rule ({on_untrained.rule})")


def judged_against_untrained(
    claims: Sequence[Claim], untrained: Sequence[Claim], reason: str | None = None
) -> list[Claim]:
    """Every claim of `claims` beside the same claim on the untrained models (`against_null`),
    where `untrained` has it. With `reason` (the null model came after results existed), a claim
    it makes uninformative keeps its verdict before as its newest `earlier` state, with
    `reason`, so the report's history names it."""
    by_id = {claim.id: claim for claim in untrained}
    judged = [against_null(c, by_id[c.id]) if c.id in by_id else c for c in claims]
    if reason is None:
        return judged
    return [
        after_rule_change(after, before.verdict, before.rule, reason)
        if after.verdict != before.verdict else after
        for before, after in zip(claims, judged, strict=True)
    ]  # fmt: skip


def cannot_fail(claim: Claim, why: str) -> Claim:
    """`claim` as uninformative: its rule cannot fail (`why`: by construction, or on the untrained
    models); the rule's own verdict is kept in `rule_verdict`."""
    if claim.verdict == UNINFORMATIVE:
        return claim
    return replace(claim, verdict=UNINFORMATIVE, rule_verdict=claim.verdict,
                   uninformative_because=why)  # fmt: skip


def earlier_file(paper: str, name: str) -> Path:
    """`reports/<paper>/earlier/<name>`: the claims of a report committed before its runs or rules
    changed, kept so that a new report sets their verdicts beside its own (`with_earlier`)."""
    return REPOSITORY / "reports" / paper / "earlier" / name


def claims_in(path: Path) -> list[Claim]:
    """The claims a results file holds (a report's `results.json`, an `earlier_file`)."""
    return [Claim.from_json(record) for record in json.loads(Path(path).read_text())]


def with_earlier(
    claims: Sequence[Claim], earlier: Sequence[Claim], reason: str, unless_recorded: bool = False
) -> list[Claim]:
    """`claims`, each given, after its own changes, the verdict and rule of the claim with its id
    in `earlier` (the same claims computed by the replaced rule, reading or runs) and the
    `reason` of the change, where the change touched it (its rule's text or verdict differs),
    then that claim's own earlier changes: the whole history, newest first. `unless_recorded`:
    a claim whose rule already computed its verdict before this change (its own `earlier`, e.g.
    `compare_summaries`) is left as it is."""
    by_id = {claim.id: claim for claim in earlier}

    def history(claim: Claim) -> tuple[Earlier, ...]:
        old = by_id.get(claim.id)
        if old is None or (unless_recorded and claim.earlier):
            return claim.earlier
        state = claim.earlier[-1] if claim.earlier else claim
        touched = (old.rule, old.verdict) != (state.rule, state.verdict)
        entry = (Earlier(old.verdict, old.rule, reason),) if touched else ()
        return (*claim.earlier, *entry, *old.earlier)

    return [replace(claim, earlier=history(claim)) for claim in claims]


def compare_means(
    id: str,
    claim: str,
    paper_values: Sequence[float],
    measured_values: Sequence[float],
    decimals: int = 2,
    at_most: float | None = None,
) -> Claim:
    """Paper mean vs measured mean over independent runs (see `compare_summaries`)."""
    return compare_summaries(
        id, claim, Measured.of(paper_values), Measured.of(measured_values), decimals,
        at_most=at_most,
    )  # fmt: skip


ONE_ALLOWANCE = (
    "the rule: one allowance for the paper's rounding. The rule rounded the measured mean to the "
    "paper's precision and then also allowed a further rounding margin (0.02; paper 4: 0.05 at 2 "
    "decimals), two allowances for one rounding; the unrounded mean is now compared with the "
    "paper's printed value, allowing half a unit of its last decimal (before the mean was "
    "rounded, the unrounded mean had had the 0.02 margin)"
)
CLOSE = 0.05
"""The "partially reproduced" margin of `compare_summaries` beyond 4 SE: five points, the suite's
reading of "close to" where a paper gives a value without a tolerance."""


def margins(standard_error: float, decimals: int) -> tuple[float, float, float]:
    """The margins of a distance from a paper's printed value (`graded_distance`): half a unit
    of its last decimal (its one rounding), 2 SE + that for reproduced, 4 SE + `CLOSE` for
    partially reproduced."""
    allowance = 0.5 * 10.0**-decimals
    return allowance, 2 * standard_error + allowance, 4 * standard_error + CLOSE


def graded_distance(distance: float, reproduced_within: float, partially_within: float) -> str:
    """Reproduced within `reproduced_within`, partially within `partially_within` (ties within
    `FLOAT_NOISE`), else not reproduced."""
    return graded(distance <= reproduced_within + FLOAT_NOISE,
                  distance <= partially_within + FLOAT_NOISE)  # fmt: skip


def compare_summaries(
    id: str,
    claim: str,
    paper: Measured,
    measured: Measured,
    decimals: int = 2,
    previous_rounding: float = 0.02,
    previous_decimals: int | None = None,
    at_most: float | None = None,
) -> Claim:
    """Paper mean vs measured mean, the paper given as mean, std and number of runs, its values
    printed with `decimals` decimals.

    Rule: with SE = sqrt(s_paper^2/n_paper + s_measured^2/n_measured), reproduced when the
    unrounded measured mean is within 2 SE + half a unit of the paper's last printed decimal
    (its one rounding) of the paper's value, partially reproduced within 4 SE + `CLOSE`, else
    not reproduced (differences below `FLOAT_NOISE` are ties). `at_most`: the largest difference
    the paper's words allow ("fully restores", "close to"), capping the seeds' spread: reproduced
    within at most `at_most`, partially within at most twice it. The verdict of the rule it
    replaced (the mean rounded to `previous_decimals`, default `decimals`, and a further
    `previous_rounding` margin: `ONE_ALLOWANCE`) is kept as `earlier`.
    """
    standard_error = math.sqrt(paper.std**2 / paper.n + measured.std**2 / measured.n)
    allowance, reproduced_within, partially_within = margins(standard_error, decimals)
    capped = ""
    if at_most is not None:
        reproduced_within = min(reproduced_within, at_most)
        partially_within = min(partially_within, 2 * at_most)
        capped = f"; at most {at_most} and {2 * at_most}, what the paper's words allow"
    difference = abs(measured.mean - paper.mean)
    verdict = graded_distance(difference, reproduced_within, partially_within)
    rule = (
        f"|measured mean - paper's printed value| = {difference:.{decimals + 1}f}; reproduced if "
        f"<= 2 SE + {allowance:g} (half a unit of the paper's last decimal) = "
        f"{reproduced_within:.{decimals + 1}f}, partially if <= 4 SE + {CLOSE} = "
        f"{partially_within:.{decimals + 1}f} (SE of the difference of means{capped})"
    )
    places = decimals if previous_decimals is None else previous_decimals
    printed = round(abs(round(measured.mean, places) - paper.mean), places)
    previous = graded(printed <= 2 * standard_error + previous_rounding,
                      printed <= 4 * standard_error + 2.5 * previous_rounding)  # fmt: skip
    previous_rule = (
        f"|measured mean at {places} decimals - paper mean| = {printed:.{places}f}; reproduced "
        f"if <= 2 SE + {previous_rounding}, partially if <= 4 SE + {2.5 * previous_rounding:.3g}"
    )
    return Claim(
        id, claim, round(paper.mean, 4), measured, rule, verdict,
        (Earlier(previous, previous_rule, ONE_ALLOWANCE),),
    )  # fmt: skip


def ratio_claim(
    id: str, claim: str, paper: float, measured_values: Sequence[float], within: float = 2.0
) -> Claim:
    """A count or size (e.g. units in a functional group) vs the paper's: reproduced when the
    measured mean is within a factor `within` of the paper's value, partially within
    `within`^2."""
    measured = Measured.of(measured_values)
    ratio = measured.mean / paper if paper else math.inf
    closeness = min(ratio, 1 / ratio) if ratio > 0 else 0.0
    return threshold_claim(
        id, claim, paper, measured_values, closeness,
        "min(measured/paper, paper/measured) of the means",
        reproduced_at=1 / within, partially_at=1 / within**2,
    )  # fmt: skip


def threshold_claim(
    id: str,
    claim: str,
    paper: float | str,
    values: Sequence[float],
    statistic: float,
    statistic_name: str,
    reproduced_at: float,
    partially_at: float,
) -> Claim:
    """A finding checked by one statistic: reproduced when `statistic >= reproduced_at`,
    partially when `>= partially_at`, else not reproduced."""
    if statistic >= reproduced_at:
        verdict = "reproduced"
    elif statistic >= partially_at:
        verdict = "partially reproduced"
    else:
        verdict = "not reproduced"
    rule = (
        f"{statistic_name} = {statistic:.3f}; reproduced if >= {reproduced_at:.3g}, "
        f"partially if >= {partially_at:.3g}"
    )
    return Claim(id, claim, paper, Measured.of(values), rule, verdict,
                 threshold=Threshold(statistic, reproduced_at, partially_at))  # fmt: skip


def direction_claim(
    id: str,
    claim: str,
    paper: float | str,
    values: Sequence[float],
    change: float,
    change_name: str,
    reproduced_at: float,
    partially_at: float,
) -> Claim:
    """A change or comparison the paper states with a direction (a rise, a fall, A above B):
    `change` is signed so that the paper's direction is positive. The direction is tested
    first: no change (a tie, within `FLOAT_NOISE`) or the opposite one is not reproduced; then
    reproduced when `change >= reproduced_at`, partially when `>= partially_at` (both above 0)."""
    if not 0 < partially_at <= reproduced_at:
        raise ValueError(
            f"claim {id!r}: a direction's thresholds need 0 < partially_at <= reproduced_at, got "
            f"{partially_at} and {reproduced_at} (a tie is not a change)"
        )
    if change <= FLOAT_NOISE:
        verdict = "not reproduced"
    else:
        verdict = graded(change >= reproduced_at, change >= partially_at)
    rule = (
        f"{change_name} = {change:.3f}, signed so the paper's direction is positive; not "
        f"reproduced if <= 0 (a tie is not a change), reproduced if >= {reproduced_at:.3g}, "
        f"partially if >= {partially_at:.3g}"
    )
    return Claim(id, claim, paper, Measured.of(values), rule, verdict)


def direction_first(claim: Claim, change: float, change_name: str) -> Claim:
    """`claim` (a level compared with the paper's) where the paper states a change to that level:
    not reproduced unless the measured `change` (signed so the paper's direction is positive)
    goes the paper's way, a tie included, whatever the level's own rule says."""
    rule = (f"direction first: {change_name} = {change:.3f}, signed so the paper's direction is "
            f"positive, must be > 0; then {claim.rule}")  # fmt: skip
    verdict = claim.verdict if change > FLOAT_NOISE else "not reproduced"
    return replace(claim, rule=rule, verdict=verdict)


def graded(reproduced: bool, partially: bool) -> str:
    """The verdict of a rule with a reproduced and a weaker, partially-reproduced condition."""
    if reproduced:
        return "reproduced"
    return "partially reproduced" if partially else "not reproduced"


def summary_counts(claims: Sequence[Claim]) -> dict[str, int]:
    counts = Counter(c.verdict for c in claims)
    return {verdict: counts.get(verdict, 0) for verdict in VERDICTS}


def headline(claims: Sequence[Claim]) -> str:
    """`N claims: a reproduced, b partially reproduced, c not reproduced, d uninformative`."""
    counts = summary_counts(claims)
    return f"{len(claims)} claims: " + ", ".join(f"{n} {v}" for v, n in counts.items())


def verdict_line(report: Path, claims: Sequence[Claim]) -> str:
    """`wrote <report>: ` and the `headline`."""
    return f"wrote {report}: {headline(claims)}"


def current_commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def why_changed(claim: Claim) -> str:
    """Where a change made after results existed moved `claim`'s verdict: the verdict before the
    newest such change and why, in a few words (the first sentence of its reason: the data, the
    rule, the reading or the runs), and how many older changes moved it; empty where none did.
    The whole reasons are in the report's history (`experiments.history`)."""
    moves = [before for before, after in claim.changes() if before.verdict != after]
    if not moves:
        return ""
    text = f"was {moves[0].verdict} ({moves[0].reason.split('. ', 1)[0]})"
    if len(moves) > 1:
        text += f"; {len(moves) - 1} older change{'s' * (len(moves) > 2)} in history.md"
    return text


def claims_table(claims: Sequence[Claim]) -> str:
    """The claims as a markdown table; the `untrained` column (the rule's verdict on the
    untrained models, "-" where not run) where any claim was judged on them, and the `changed`
    column (`why_changed`) where a change after results existed moved any verdict."""
    nulls = any(c.null is not None for c in claims)
    moved = any(why_changed(c) for c in claims)
    lines = [
        "| id | claim | paper | measured mean ± std (n) | verdict |"
        + (" untrained |" if nulls else "")
        + (" changed |" if moved else "")
        + " rule |",
        "|---|---|---|---|---|" + ("---|" if nulls else "") + ("---|" if moved else "") + "---|",
    ]
    for c in claims:
        m = c.measured
        paper = f"{c.paper:.3f}" if isinstance(c.paper, float) else str(c.paper)
        verdict = f"**{c.verdict}**"
        if c.rule_verdict is not None:
            verdict += f" (the rule: {c.rule_verdict}; {escape_cell(c.uninformative_because)})"
        by = f" ({c.null_model})" if c.null_model else ""
        null = f" {c.null or '-'}{by} |" if nulls else ""
        changed = f" {escape_cell(why_changed(c))} |" if moved else ""
        lines.append(
            f"| `{c.id}` | {escape_cell(c.claim)} | {escape_cell(paper)} | {m.mean:.3f} ± "
            f"{m.std:.3f} ({m.n}) | {verdict} |{null}{changed} {escape_cell(c.rule)} |"
        )
    return "\n".join(lines)


def runs_named(root: Path, paper: str) -> str:
    """Where a report says `paper`'s runs are, without a machine's own paths: under the run root
    `root` relative to the repository where it lies inside it (`reports/paper2/runs/paper2/`),
    else `<runs>/paper2/`, `<runs>` being the run root given with `--runs`."""
    try:
        where = Path(root).resolve().relative_to(REPOSITORY).as_posix()
    except ValueError:
        return f"`<runs>/{paper}/` (`<runs>`: the run root, `--runs`)"
    return f"`{where}/{paper}/`"


def report_title(title: str, scale: str) -> str:
    """A report's first line, `# <title>`; at the `QUICK` scale it also says that the report is a
    check of the pipeline whose verdicts mean nothing."""
    notice = "quick scale: a check of the pipeline on tiny sizes; its verdicts mean nothing"
    return f"# {title} ({notice})" if scale == QUICK else f"# {title}"


def write_report(
    folder: str | Path,
    claims: Sequence[Claim],
    markdown: str,
    history: str = "",
    findings: str = "",
) -> Path:
    """Write `results.json` (the claims), `report.md` (`markdown` plus the claims and a summary
    of verdicts, opened by the `findings` section where given: `experiments.findings`) and,
    given its text, `history.md` (`experiments.history.history_text`) into `folder`, each
    atomically."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(
        folder / "results.json", json.dumps([c.as_json() for c in claims], indent=2) + "\n"
    )
    summary = headline(claims)
    moved = sum(bool(why_changed(c)) for c in claims)
    if moved:
        summary += (f"; {moved} verdicts were moved by a change made after results existed "
                    "(the column changed)")  # fmt: skip
    where = ""
    if history:
        write_text_atomic(folder / "history.md", history)
        where = ("Every earlier verdict with the whole reason for its change, and when each rule "
                 "was written: [history.md](history.md).\n\n")  # fmt: skip
    title, _, body = markdown.rstrip().partition("\n")
    opening = f"\n{findings.strip()}\n" if findings else ""
    text = (
        f"{title}\n\n**Verdicts:** {summary}.\n{opening}{body}\n\n## Claims\n\n{where}"
        f"{claims_table(claims)}\n\n## Summary\n\n{summary}.\n"
    )
    write_text_atomic(folder / "report.md", text)
    return folder / "report.md"


def claims_frame(claims: Sequence[Claim]) -> pd.DataFrame:
    """The claims as a table (for W&B)."""
    return pd.DataFrame(
        [
            {"id": c.id, "claim": c.claim, "paper": str(c.paper), "mean": c.measured.mean,
             "std": c.measured.std, "n": c.measured.n, "verdict": c.verdict, "rule": c.rule,
             "untrained": c.null, "rule verdict": c.rule_verdict,
             "earlier verdict": c.earlier[0].verdict if c.earlier else None}
            for c in claims
        ]
    )  # fmt: skip


def log_to_wandb(
    folder: Path,
    paper: str,
    scale: str,
    claims: Sequence[Claim],
    figures: dict[str, Path],
    tables: dict[str, pd.DataFrame],
    seeds: object = None,
) -> None:
    """A reproduction's figures and tables as one W&B run in `folder` (offline unless
    `WANDB_MODE=online`), named `<paper>-<scale>` and tagged with both, its config the paper, the
    scale, its `seeds` (where the scale has them), the commit and the claims' count by verdict.
    A W&B run that cannot be written is one warning line: the report is complete without it."""
    config = {"paper": paper, "scale": scale, "commit": current_commit(),
              "claims": {"total": len(claims), **summary_counts(claims)}}  # fmt: skip
    if seeds is not None:
        config["seeds"] = seeds
    try:
        log_wandb_run(folder, f"{paper}-{scale}", paper, figures, tables, config, (paper, scale))
    except Exception as error:  # W&B raises many kinds; none may cost the report
        print(f"warning: the report's W&B run was not written to {folder} "
              f"({type(error).__name__}: {error}); the report is complete without it",
              file=sys.stderr, flush=True)  # fmt: skip
