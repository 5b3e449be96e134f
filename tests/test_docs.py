"""The README and the pages under docs/ link only to files and headings that exist."""

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"```.*?```", re.S)
HEADING = re.compile(r"^#{1,6} (.+)$", re.M)


def anchor_of(heading: str) -> str:
    """GitHub's anchor of a markdown heading: lower case, punctuation but `-` and `_` dropped,
    spaces as `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def broken_links(page: Path) -> list[str]:
    """Each relative link or image of `page` (outside code blocks) whose file, or whose
    `#heading` in that file, does not exist."""
    broken = []
    for target in LINK.findall(FENCED.sub("", page.read_text())):
        if re.match(r"[a-z]+://|mailto:", target):
            continue
        file, _, anchor = target.partition("#")
        linked = (page.parent / file) if file else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md":
            headings = HEADING.findall(FENCED.sub("", linked.read_text()))
            if anchor not in {anchor_of(h) for h in headings}:
                broken.append(f"{target}: no such heading")
    return broken


def test_every_link_of_the_readme_and_docs_resolves():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert len(pages) > 1
    assert {str(p.relative_to(ROOT)): broken_links(p) for p in pages if broken_links(p)} == {}


def test_a_missing_file_or_heading_is_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# A page\n\n## Benchmarks: `make bench`\n")
    (tmp_path / "README.md").write_text(
        "[ok](docs/page.md#benchmarks-make-bench) ![gone](docs/gone.png) "
        "[moved](docs/page.md#old-heading) [web](https://example.org/x)\n"
        "```\n[in code](nowhere.md)\n```\n"
    )
    assert broken_links(tmp_path / "README.md") == [
        "docs/gone.png: no such file",
        "docs/page.md#old-heading: no such heading",
    ]
