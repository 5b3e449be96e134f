"""`python -m experiments.headlines`: rewrite the README's table of verdicts from the committed
reports (`reports/*/results.json`; `headlines_table`). A test fails while the README and the
reports disagree."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from experiments import REPOSITORY as ROOT
from experiments.findings import findings_counts
from experiments.report import UNINFORMATIVE, VERDICTS, claims_in, summary_counts
from storage.files import write_text_atomic

BLOCK = re.compile(r"(<!-- headlines:[^\n]*-->\n)(.*?)(<!-- /headlines -->)", re.S)


def headlines_table(reports: Path) -> str:
    """The README's table of verdicts, one row per committed report (`<reports>/*/results.json`):
    its findings reproduced of its informative findings (primary reading,
    `experiments.findings`) beside its claims by verdict, so the README cannot drift from the
    reports."""
    lines = [
        "| report | findings reproduced of informative | claims | " + " | ".join(VERDICTS) + " |",
        "|---" * (len(VERDICTS) + 3) + "|",
    ]
    for results in sorted(Path(reports).glob("*/results.json")):
        claims = claims_in(results)
        counts = summary_counts(claims)
        counted, total = findings_counts(claims)
        informative = total - counted[UNINFORMATIVE] - counted["-"]
        findings = f"{counted['reproduced']} of {informative}" if total else "-"
        cells = [f"`{Path(reports).name}/{results.parent.name}/report.md`", findings,
                 str(len(claims)), *(str(counts[v]) for v in VERDICTS)]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def readme_block(readme: str) -> str:
    """The README's table between its headline markers."""
    found = BLOCK.search(readme)
    if found is None:
        raise ValueError("README.md has no <!-- headlines: ... --> block: restore the markers")
    return found.group(2).strip()


def main() -> None:
    readme = ROOT / "README.md"
    table = headlines_table(ROOT / "reports")
    text = readme.read_text()
    readme_block(text)  # the markers are there
    write_text_atomic(readme, BLOCK.sub(lambda m: f"{m.group(1)}{table}\n{m.group(3)}", text))
    print(table, file=sys.stdout)


if __name__ == "__main__":
    main()
