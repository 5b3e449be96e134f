"""The screenshots (docs/probing.md) of `python -m probes view` (docs/view/*.png), taken afresh.

Fits a small run of paper 1 (the tests' tiny lookup-table GRU, `tests.test_runs.TINY`, with 16
units and four short epochs), serves the page over it and drives Debian's Chromium through three
views, as a user would (the browser tests' helpers, `tests/view_page.py`): an example's heat map
with a value on hover; a pattern search (the units on over a span of an example, every other span
of the split where they are, and a click on the second match, its span marked); and the best
checkpoint beside the first epoch. Each PNG is reduced to 256 colours, which keeps it well under
200 KB.

    .venv/bin/python -m examples.view_screenshots [--out docs/view]

Takes about a minute on two cores. The pattern is found, not planted: the script picks the first
example and span of the list's first page where a few units are on together and the split has
other spans like it (`pattern_to_show`).
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from pathlib import Path

from PIL import Image

from probes.command.view.pattern_search import find_pattern, split_units
from probes.command.view.runs import ViewedRun
from tests.test_runs import fit
from tests.view_page import (
    choose,
    headless_chromium,
    heatmap_tokens,
    highlights,
    listed_matches,
    scroll_to,
    served,
    type_into,
    wait_until,
)

SITE = "encoder.hidden"
UNITS_ON = 3
"""The pattern: the units that are on together over the span, this many (or more where tied)."""
SIZE = ("--model.hidden_size", "16", "--model.embedding_size", "8", "--trainer.max_epochs", "4",
        "--trainer.limit_train_batches", "40")  # fmt: skip


def pattern_to_show(run: ViewedRun, split: str, tag: str) -> tuple[int, int, int, float]:
    """The first example (of the list's first page) and span of steps where `UNITS_ON` units are
    on together at a threshold above 0 (two decimals) and other spans of the split match, with
    that threshold: (example, first step, last step, threshold)."""
    trace = run.trace(split, tag)
    for example in range(min(15, trace.rows)):
        values = run.example_site(split, tag, example, SITE).values  # [time, units]
        spans = [(a, b) for a in range(len(values)) for b in range(len(values) - 1, a - 1, -1)]
        for first, last in spans:
            lowest = values[first : last + 1].min(0).values  # each unit's least over the span
            threshold = math.floor(float(lowest.sort(descending=True).values[UNITS_ON - 1]) * 100)
            threshold /= 100
            if threshold <= 0:
                continue
            units = (lowest >= threshold).nonzero()[:, 0].tolist()
            split_values, valid = split_units(trace, SITE, units)
            steps = valid[example].nonzero()[:, 0]
            selection = (example, int(steps[first]), int(steps[last]) + 1)
            if len(find_pattern(split_values, valid, threshold, last - first + 1, selection)) >= 3:
                return example, first, last, threshold
    raise SystemExit(f"no span of {split} has {UNITS_ON} units on together: fit the run longer")


def screenshot(browser, path: Path) -> None:
    """The window as a PNG of 256 colours at `path` (written whole, then renamed)."""
    taken = path.with_suffix(".taken.png")
    browser.save_screenshot(str(taken))
    image = Image.open(taken).convert("RGB").quantize(colors=256)
    image.save(taken, optimize=True)
    os.replace(taken, path)
    print(f"{path}: {path.stat().st_size // 1024} KB")


def take(browser, address: str, run: ViewedRun, out: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    split = run.splits()[0]
    tag = run.tags(split)[0]
    browser.get(address)
    wait_until(lambda: heatmap_tokens(browser), 60, "the first example's heat map")
    cells = browser.find_element(By.CSS_SELECTOR, "#heatmap .nsewdrag")
    ActionChains(browser).move_to_element(cells).perform()
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#heatmap .hovertext"), 10, "hover")
    screenshot(browser, out / "example.png")

    example, first, last, threshold = pattern_to_show(run, split, tag)
    browser.find_elements(By.CSS_SELECTOR, "#examples input[type=radio]")[example].click()
    wait_until(lambda: f"example {example}" in browser.find_element(By.ID, "example-text").text,
               30, f"example {example}")  # fmt: skip
    for field, value in (("from", first), ("to", last), ("threshold", threshold)):
        type_into(browser, f"pattern-{field}", str(value))
    browser.find_element(By.ID, "pattern-on-units").click()
    wait_until(lambda: len(highlights(browser)) > 0, 30, "the chosen units marked")
    browser.find_element(By.ID, "pattern-find").click()
    wait_until(lambda: len(listed_matches(browser)) >= 3, 30, "the matches")
    matched, steps = listed_matches(browser)[1]
    cells = browser.find_elements(By.CSS_SELECTOR, "#pattern-matches td[data-dash-column=tokens]")
    cells[1].click()
    wait_until(lambda: f"example {matched}" in browser.find_element(By.ID, "example-text").text,
               30, f"the match's example {matched}")  # fmt: skip
    start = int(steps.split("-")[0]) - 0.5
    wait_until(lambda: [mark[0] for mark in highlights(browser)][:1] == [start], 30, "its span")
    scroll_to(browser, "example-text")
    screenshot(browser, out / "pattern_search.png")

    choose(browser, "side-run", str(run.path))
    wait_until(lambda: heatmap_tokens(browser, "side-second"), 60, "the second heat map")
    scroll_to(browser, "side-text")
    screenshot(browser, out / "side_by_side.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/view"), help="(default: docs/view)")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("WANDB_MODE", "disabled")
    with tempfile.TemporaryDirectory() as folder:
        path = fit(Path(folder), "runs", *SIZE)
        browser = headless_chromium(1400, 1000)
        try:
            with served([str(path)]) as address:
                take(browser, address, ViewedRun(path), out)
        finally:
            browser.quit()


if __name__ == "__main__":
    main()
