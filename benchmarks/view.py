"""`make bench`: how fast `python -m probes view` opens a run with a 1 GiB trace and switches
examples (targets: open under 2 s, switch under 200 ms), beside the same on a small trace.

Two run folders are written to a temporary folder (deleted at the end): a big one whose trace
holds `lstm.hidden` float32 `[examples, time, units]` of 1 GiB (default 8192 x 64 x 512) with its
input tokens and predictions, and a small one of the same time and units with 64 examples: the
baseline, so every ratio big / small is what the trace's size costs (the heat map of one example
is the same size in both). Measured for each, with the trace's pages evicted from the page cache
before each measurement (`posix_fadvise(DONTNEED)`: a run opened for the first time since it
was written or since the memory was needed elsewhere; "warm" rows repeat with the pages cached):

1. the data layer (`probes.command.view.runs.ViewedRun`): opening the run (splits, tags, the
   trace's header, the list of examples, the first example's row of the site) and switching to
   another example (its row), in a fresh process, with the process's peak memory above its
   imports (a layer that read whole sites would need the 1 GiB);
2. the page's server: the callbacks the page runs to open the run and to switch examples (the
   data layer plus the Plotly heat map), in the same process;
3. the real page in Chromium (Debian's, through selenium, as `tests/test_view.py`): from loading
   the address to the first example's heat map drawn, and from clicking another example to its
   heat map drawn (skipped, saying so, where Chromium or its driver is missing).

Switches are the median (and the slowest) of `--switches` examples picked at random. Threads:
as `OMP_NUM_THREADS` sets them (the view does little arithmetic).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from storage.files import save_tensors_atomic

SITE, TOKENS, SPLIT, TAG = "lstm.hidden", "batch.input", "data", "best"
TARGETS = {"open": 2.0, "switch": 0.2}
"""The targets, seconds: a 1 GiB trace opens under 2 s and switches examples under 200 ms."""


def write_run(folder: Path, examples: int, steps: int, units: int) -> Path:
    """A run folder whose trace holds `lstm.hidden` `[examples, steps, units]` float32, its input
    tokens and predictions (random), nothing else."""
    generator = torch.Generator().manual_seed(0)
    tensors = {
        SITE: torch.randn(examples, steps, units, generator=generator),
        TOKENS: torch.randint(1000, (examples, steps), generator=generator),
        "prediction": torch.randint(1000, (examples, steps), generator=generator),
    }
    save_tensors_atomic(tensors, folder / "traces" / SPLIT / f"{TAG}.safetensors")
    return folder


def evict(run: Path) -> None:
    """Drop the trace's pages from the page cache (the file stays; other files are untouched)."""
    path = run / "traces" / SPLIT / f"{TAG}.safetensors"
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(descriptor)


def resident(field: str) -> int:
    """This process's `VmRSS` or `VmHWM` in bytes."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(field))


def cpu_share(seconds: float = 1.0) -> float:
    """The share of one core this process gets while busy for `seconds` (1: a free core; a
    loaded machine or `nice` gives less, and every time below grows by about its inverse)."""
    began, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - began < seconds:
        sum(range(1000))
    return (time.process_time() - cpu) / (time.perf_counter() - began)


def timed(function, *arguments) -> tuple[float, object]:
    began = time.perf_counter()
    result = function(*arguments)
    return time.perf_counter() - began, result


def measure_server(run: Path, switches: int) -> dict:
    """Measures 1 and 2 on `run` in this process (a fresh one: `--measure`)."""
    from probes.command.view.page import (
        RunCache,
        example_view,
        run_splits,
        site_orders,
        split_examples,
    )
    from probes.command.view.runs import ViewedRun

    before = resident("VmRSS")
    path = str(run)

    def open_data_layer():
        viewed = ViewedRun(path)
        split = viewed.splits()[0]
        tag = viewed.tags(split)[0]
        sites = viewed.trace(split, tag).sites
        viewed.examples(split, tag)
        viewed.example_site(split, tag, 0, sites[0])
        return viewed

    def open_page(runs):
        _, split = run_splits(runs, path, None)
        _, tag, _, site, rows, _, selected, _ = split_examples(runs, path, split, None, None, "all",
                                                            None)  # fmt: skip
        _, order = site_orders(runs, path, split, tag, site, None)
        example_view(runs, path, split, tag, site, selected, order)
        return rows, order

    evict(run)
    result = {"data_open": timed(open_data_layer)[0]}
    result["data_open_warm"], viewed = timed(open_data_layer)
    evict(run)
    runs = RunCache([path])
    result["page_open"], (rows, order) = timed(open_page, runs)
    picked = torch.randperm(len(rows), generator=torch.Generator().manual_seed(1))[:switches]
    data, page, warm = [], [], []
    for row in picked.tolist():
        evict(run)
        data.append(timed(viewed.example_site, SPLIT, TAG, row, SITE)[0])
        evict(run)
        page.append(timed(example_view, runs, path, SPLIT, TAG, SITE, [row], order)[0])
        warm.append(timed(example_view, runs, path, SPLIT, TAG, SITE, [row], order)[0])
    result |= {"data_switch": data, "page_switch": page, "page_switch_warm": warm}
    result["peak_memory"] = resident("VmHWM") - before
    return result


def measure_browser(run: Path, switches: int) -> dict | str:
    """Measure 3: the real page in Chromium, or why it cannot be measured here."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.view_page import headless_chromium, served

    try:
        browser = headless_chromium()
    except RuntimeError as error:
        return f"not measured: {error}"

    def answered(row: int) -> None:
        """Wait until the server's answer for example `row` is on the page (its text)."""
        WebDriverWait(browser, 120, poll_frequency=0.01).until(
            lambda driver: f"example {row} " in driver.find_element(By.ID, "example-text").text
        )

    def drawn(row: int) -> None:
        """Wait until the heat map of example `row` is drawn (its title names it)."""
        WebDriverWait(browser, 120, poll_frequency=0.01).until(
            lambda driver: f"example {row} " in " ".join(
                title.text for title in driver.find_elements(By.CSS_SELECTOR, "#heatmap .gtitle")
            )
        )  # fmt: skip

    try:
        with served([run]) as address:
            evict(run)
            began = time.perf_counter()
            browser.get(address)
            answered(0)
            answered_at = time.perf_counter() - began
            drawn(0)
            result = {"browser_open": time.perf_counter() - began, "browser_answered": answered_at}
            result |= {"browser_switch": [], "browser_switch_answered": []}
            result["browser_scripts"] = browser.execute_script(  # the page's own load event
                "return performance.getEntriesByType('navigation')[0].loadEventEnd / 1000"
            )
            for row in range(1, switches + 1):  # the table's first page (15 rows)
                evict(run)
                radio = browser.find_elements(By.CSS_SELECTOR, "#examples input[type=radio]")[row]
                began = time.perf_counter()
                radio.click()
                answered(row)
                result["browser_switch_answered"].append(time.perf_counter() - began)
                drawn(row)
                result["browser_switch"].append(time.perf_counter() - began)
            return result
    finally:
        browser.quit()


def line(name: str, big: float, small: float, target: float | None) -> str:
    met = f"  target < {target:g} s: {'met' if big < target else 'MISSED'}" if target else ""
    return f"  {name:<44} {big:8.3f} s  small trace {small:7.3f} s  ({big / small:5.2f}x){met}"


def report(big: dict, small: dict, sizes: dict) -> None:
    shares = " then ".join(f"{share:.0%}" for share in sizes["cpu"])
    print(f"python -m probes view on a {sizes['big']} trace vs a {sizes['small']} trace "
          f"(baseline), {torch.get_num_threads()} thread(s), page cache evicted before each "
          f"measurement unless 'warm'; this process got {shares} of a core (before, "
          "after):")  # fmt: skip
    rows = [("data layer: open the run", "data_open", "open"),
            ("data layer: open again (warm)", "data_open_warm", None),
            ("page's server: open (callbacks + heat map)", "page_open", "open"),
            ("Chromium: load the page to the heat map", "browser_open", "open"),
            ("  to its load event (scripts loaded)", "browser_scripts", None),
            ("  to the first example's text (answered)", "browser_answered", None)]  # fmt: skip
    for name, key, target in rows:
        if key in big and key in small:
            print(line(name, big[key], small[key], TARGETS.get(target)))
    switches = [("data layer: switch example (median)", "data_switch"),
                ("page's server: switch example (median)", "page_switch"),
                ("page's server: switch, warm (median)", "page_switch_warm"),
                ("Chromium: click to heat map drawn (median)", "browser_switch"),
                ("  to the example's text (answered)", "browser_switch_answered")]  # fmt: skip
    for name, key in switches:
        if key in big and key in small:
            print(line(name, statistics.median(big[key]), statistics.median(small[key]),
                       TARGETS["switch"]) + f"; slowest {max(big[key]):.3f} s")  # fmt: skip
    for result, which in ((big, "big"), (small, "small")):
        if "browser" in result:
            print(f"  Chromium ({which} trace): {result['browser']}")
    print(
        f"  peak memory of the data layer and server above their imports: big "
        f"{big['peak_memory'] / 2**20:.0f} MiB, small {small['peak_memory'] / 2**20:.0f} MiB"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=8192, help="rows of the big trace")
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--units", type=int, default=512)
    parser.add_argument("--small-examples", type=int, default=64, help="rows of the baseline")
    parser.add_argument("--switches", type=int, default=10, help="examples switched to")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the fresh process
    arguments = parser.parse_args(argv)
    if arguments.measure:
        print(json.dumps(measure_server(arguments.measure, arguments.switches)))
        return
    results, sizes = {}, {"cpu": [cpu_share()]}
    with tempfile.TemporaryDirectory(prefix="view_bench_") as scratch:
        for name, examples in (("big", arguments.examples), ("small", arguments.small_examples)):
            shape = (examples, arguments.steps, arguments.units)
            run = write_run(Path(scratch) / name, *shape)
            size = (run / "traces" / SPLIT / f"{TAG}.safetensors").stat().st_size
            sizes[name] = f"{size / 2**30:.2f} GiB [{' x '.join(map(str, shape))}]"
            measured = subprocess.run(
                [sys.executable, "-m", "benchmarks.view", "--measure", str(run),
                 "--switches", str(arguments.switches)],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            results[name] = json.loads(measured.stdout.splitlines()[-1])
            browser = measure_browser(run, min(arguments.switches, 14))
            if isinstance(browser, str):
                results[name]["browser"] = browser
            else:
                results[name] |= browser
    sizes["cpu"].append(cpu_share())
    report(results["big"], results["small"], sizes)


if __name__ == "__main__":
    main()
