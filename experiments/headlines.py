"""`python -m experiments.headlines`: rewrite the README's table of verdicts from the committed
reports (`reports/paperN/results.json`; `experiments.report.headlines_table`). A test fails while
the README and the reports disagree."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from experiments.report import headlines_table
from storage.files import write_text_atomic

ROOT = Path(__file__).parents[1]
BLOCK = re.compile(r"(<!-- headlines:[^\n]*-->\n)(.*?)(<!-- /headlines -->)", re.S)


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
