"""What the browser tests of `python -m probes view` share (`tests/test_view*.py`): the command
served on a free port, headless Chromium, and reading the page's elements."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

import torch

CHROMIUM = ("chromium", "chromedriver")


@contextlib.contextmanager
def served(folders: Sequence[Path]) -> Iterator[str]:
    """`python -m probes view` over `folders` on a port the system picks (`--port 0`), until
    the block ends: its address, as printed."""
    command = [sys.executable, "-m", "probes", "view", "--port", "0", "--runs",
               *map(str, folders)]  # fmt: skip
    # The server logs every request: into a file, not a pipe nobody reads, which would fill up
    # and stop the server mid-session.
    with tempfile.TemporaryFile("w+") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True,
                                  env={**os.environ, "OMP_NUM_THREADS": "1"})  # fmt: skip
        try:
            expected = f"{len(folders)} run folder(s) at http://127.0.0.1:"

            def printed() -> str:
                log.seek(0)
                return log.read()

            wait_until(lambda: expected in printed() or server.poll() is not None, 60, expected)
            assert expected in printed(), printed()
            address = printed().split(expected.split(" at ")[0] + " at ")[1].split()[0]
            wait_until(lambda: answers(address), 60, "the page to answer")
            yield address
        finally:
            server.terminate()
            server.wait(timeout=30)


def headless_chromium(width: int = 1400, height: int = 1000):
    """Debian's Chromium, headless, driven by selenium; a `RuntimeError` naming the fix where it
    or its driver is missing."""
    missing = [name for name in CHROMIUM if shutil.which(name) is None]
    if missing:
        raise RuntimeError(f"{' and '.join(missing)} not installed: the browser tests drive "
                           "Debian's Chromium (apt-get install chromium chromium-driver; `make "
                           "test` installs them where it can)")  # fmt: skip
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     f"--window-size={width},{height}"):  # fmt: skip
        options.add_argument(argument)
    return webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))


def wait_until(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except Exception:  # the page is still being drawn: elements come and go
            pass
        time.sleep(0.25)
    raise AssertionError(f"waited {seconds} s for {what}")


def answers(address: str) -> bool:
    with urllib.request.urlopen(address, timeout=5) as response:
        return response.status == 200


def text_of(browser, element_id: str) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.ID, element_id).text.strip()


def choose(browser, dropdown_id: str, option: str) -> None:
    """Pick `option` in the dropdown `dropdown_id` (Dash 4's dropdown: a button, then a list),
    opening it again where its list did not come (the page was busy redrawing)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    def listed():
        options = browser.find_elements(By.CSS_SELECTOR, "label.dash-dropdown-option")
        return next((o for o in options if o.text == option), None)

    for _ in range(3):
        browser.find_element(By.ID, dropdown_id).click()
        try:
            wait_until(listed, 5, f"the option {option} in {dropdown_id}")
        except AssertionError:
            browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
            continue
        chosen = listed()
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", chosen)  # long
        chosen.click()
        return
    raise AssertionError(f"the dropdown {dropdown_id} does not offer {option}")


def choose_until(browser, dropdown_id: str, option: str, shown) -> None:
    """Pick `option` until the page `shown` it: a choice made while the page's first callbacks
    still run can be undone by them."""
    until_shown(lambda: choose(browser, dropdown_id, option), shown, f"{option} in {dropdown_id}")


def until_shown(act, shown, what: str, tries: int = 3, seconds: float = 10) -> None:
    """`act` again until the page `shown` its effect, at most `tries` times."""
    for _ in range(tries):
        act()
        try:
            wait_until(shown, seconds, what)
            return
        except AssertionError:
            continue
    raise AssertionError(f"{what}: never shown after {tries} tries")


def heatmap_title(browser) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, "#heatmap .gtitle").text


def unit_labels(browser, graph: str = "heatmap") -> list[str]:
    """The unit labels beside a heat map, top to bottom."""
    from selenium.webdriver.common.by import By

    return [tick.text for tick in browser.find_elements(By.CSS_SELECTOR, f"#{graph} .ytick text")]


def hover_text(browser) -> str:
    """The heat map's hover label (unit, step, token and value)."""
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, "#heatmap .hovertext").text


def heatmap_tokens(browser, graph: str = "heatmap") -> list[str]:
    """The tick labels above a heat map: the tokens of the example's steps."""
    from selenium.webdriver.common.by import By

    return [tick.text for tick in browser.find_elements(By.CSS_SELECTOR, f"#{graph} .xtick text")]


def plotted(browser, graph: str) -> dict:
    """The heat map trace that Plotly draws in the graph `graph` (its `z`, `zmin`, `zmax`)."""
    return browser.execute_script(
        "const trace = document.querySelector(`#${arguments[0]} .js-plotly-plot`)._fullData[0];"
        "return {z: trace.z, zmin: trace.zmin, zmax: trace.zmax};",
        graph,
    )


def shows(browser, graph: str, values: torch.Tensor) -> bool:
    """Whether the heat map in `graph` draws `values` [units, time]."""
    return torch.allclose(torch.tensor(plotted(browser, graph)["z"]), values, atol=1e-6)


def highlights(browser) -> list[list[float]]:
    """The heat map's marks of the pattern's units over its span: [x0, x1, y0, y1] each."""
    return browser.execute_script(
        "return (document.querySelector('#heatmap .js-plotly-plot').layout.shapes || [])"
        ".filter(s => s.name === 'pattern').map(s => [s.x0, s.x1, s.y0, s.y1]);"
    )


def chosen_units(browser) -> list[str]:
    """The units chosen for the pattern, as the dropdown shows them."""
    from selenium.webdriver.common.by import By

    chips = browser.find_elements(By.CSS_SELECTOR, "#pattern-units .dash-dropdown-value-item")
    return [chip.text.strip() for chip in chips]


def listed_matches(browser) -> list[list[str]]:
    """The pattern's matches as listed: [example, steps] each, best first."""
    from selenium.webdriver.common.by import By

    cells = {column: browser.find_elements(By.CSS_SELECTOR,
                                           f"#pattern-matches td[data-dash-column={column}]")
             for column in ("example", "steps")}  # fmt: skip
    return [[e.text, s.text] for e, s in zip(cells["example"], cells["steps"], strict=True)]


def planted_tokens(planted: dict, example: int) -> list[str]:
    """The token ids of the valid steps of a planted example, as the heat map shows them."""
    kept = planted["valid.lstm"][example].tolist()
    ids = planted["batch.input"][example].tolist()
    return [str(token) for token, valid in zip(ids, kept, strict=True) if valid]


def scroll_to(browser, element_id: str) -> None:
    """Scroll the page so that the element `element_id` is at the top of the window."""
    browser.execute_script("document.getElementById(arguments[0]).scrollIntoView()", element_id)


def type_into(browser, element_id: str, text: str) -> None:
    """Replace the text of the input `element_id` with `text`."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    field = browser.find_element(By.ID, element_id)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(text)


def assert_not_blank(browser, path: Path) -> None:
    """Save a screenshot to `path` and check that it is not blank: many colours, and a good share
    of pixels that are not the background."""
    from PIL import Image

    browser.save_screenshot(str(path))
    image = Image.open(io.BytesIO(path.read_bytes())).convert("RGB")
    pixels = list(image.getdata())
    background = max(set(pixels[::97]), key=pixels[::97].count)
    drawn = sum(pixel != background for pixel in pixels[::7]) / len(pixels[::7])
    assert len(image.getcolors(1 << 20) or ()) > 50 and drawn > 0.02, path
