"""What a reproduction may not touch: files committed to git, and a committed report of another
scale or on other data.

A reproduction writes its report to `--out`. By default that is `reports/paperN/` only when the
scale asked for is the one of the report committed there (its `build.json`), and so is the data
where the study names it (`Study.data_of`: paper 1's sample1, or the tables generated where
sample1 cannot be had); any other build writes to `<run root>/reports/paperN/<scale>/`, so `make
reproduce-paper1 SCALE=quick`, or a default-scale run on generated tables, leaves the committed
report, and `git status`, as they were. Writing such a report over a committed one takes
`--replace-report`. A run folder is trained from scratch only after its old
files are deleted; a folder holding files tracked by git (the committed measurements under
`reports/paperN/runs/`) is never emptied: the reproduction stops with one line instead.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from storage.files import write_text_atomic
from storage.layout import default_run_root

BUILD = "build.json"
"""The file beside a report that says what built it: `{"paper", "scale"}`, and `"data"` where its
study names the data its runs read."""


class CommittedFileError(RuntimeError):
    """A reproduction was about to delete or replace what is committed: one line to the user."""


def committed_files(folder: Path) -> list[str]:
    """The files under `folder` that git tracks (in whatever repository holds it); none where
    `folder` is missing, outside a repository or git is not installed."""
    if not folder.is_dir() or not any((p / ".git").exists() for p in folder.resolve().parents):
        return []  # outside any repository: nothing to ask git
    try:
        listed = subprocess.run(
            ["git", "-C", str(folder), "ls-files", "-z", "--", "."],
            capture_output=True, check=False, timeout=60,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return []
    if listed.returncode:
        return []
    return [name for name in listed.stdout.decode().split("\0") if name]


def refuse_deleting_committed(run: Path, why: str) -> None:
    """Stop before emptying the run folder `run` (`why`: what was about to) if git tracks any of
    its files."""
    tracked = committed_files(run)
    if tracked:
        raise CommittedFileError(
            f"{run} holds {len(tracked)} committed file(s) ({tracked[0]}, ...) and would be "
            f"emptied to {why}: nothing committed is deleted. Rebuild from it with --reuse-runs "
            "(nothing is trained where its measurements match), or train into another --runs"
        )


def report_build(out: Path) -> dict | None:
    """What built the report in `out` (its `build.json`: scale, and data where recorded); None
    where `out` holds no report. A report without `build.json` has scale `"unknown"`."""
    if not (out / "results.json").is_file():
        return None
    try:
        build = json.loads((out / BUILD).read_text())
        return {"scale": str(build["scale"]), "data": build.get("data")}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {"scale": "unknown", "data": None}


def describe_build(build: dict) -> str:
    """A report's build (`report_build`) in words: `scale default, on sample1`."""
    return f"scale {build['scale']}" + (f", on {build['data']}" if build["data"] else "")


def same_build(build: dict, scale: str, data: str | None) -> bool:
    """A report built so (`report_build`) is one of `scale` on `data` (data compared where both
    name it)."""
    return build["scale"] == scale and (None in (build["data"], data) or build["data"] == data)


def default_out(paper: str, scale: str, root: Path, reports: Path, data: str | None = None) -> Path:
    """Where a reproduction of `paper` at `scale` on `data` writes its report unless told: the
    committed report's folder `reports/<paper>` at that report's own scale and data (where none is
    committed yet, at the `default` scale, the one a study commits), else
    `<root>/reports/<paper>/<scale>` under the run root, so a quick check, or a run on other data,
    never stands where the study's report belongs."""
    committed = report_build(reports / paper)
    if (committed is None and scale == "default") or (
        committed and same_build(committed, scale, data)
    ):
        return reports / paper
    return root / "reports" / paper / scale


def wandb_folder(paper: str, scale: str, root: Path, reports: Path) -> Path:
    """Where a reproduction of `paper` at `scale` keeps its report's W&B run:
    `<root>/wandb-reports/<paper>-<scale>/` under its run root, or under the default run root
    (`default_run_root()`) when the run root lies inside `reports` (a rebuild from a committed
    report's measurements, which writes nothing into the checkout)."""
    if Path(root).resolve().is_relative_to(Path(reports).resolve()):
        root = Path(default_run_root())
    return Path(root) / "wandb-reports" / f"{paper}-{scale}"


def check_out(out: Path, paper: str, scale: str, replace: bool, data: str | None = None) -> None:
    """Refuse, before anything is trained, to write a `scale` report on `data` over a report of
    another scale, or on other data, in `out` unless `replace` (`--replace-report`) asks for
    exactly that."""
    found = report_build(out)
    if found is None or same_build(found, scale, data) or replace:
        return
    if found["scale"] != scale:
        held, this = f"of scale {found['scale']!r}", f"{scale!r} reproduction"
    else:
        held, this = f"on {found['data']}", f"reproduction on {data}"
    raise CommittedFileError(
        f"{out} holds a report {held}; this {this} of {paper} would replace it: give another "
        "--out (the default for it is under the run root), or --replace-report to replace it"
    )


def write_build(out: Path, paper: str, scale: str, data: str | None = None) -> None:
    """Record beside a report what built it (`BUILD`)."""
    build = {"paper": paper, "scale": scale} | ({"data": data} if data else {})
    write_text_atomic(out / BUILD, json.dumps(build) + "\n")
