"""`python -m probes view`: the page over a tiny recorded run of the suite, driven by a real
browser (Debian's Chromium and chromium-driver, through selenium).

The run is a one-epoch fit of `tests.test_runs.TINY` (paper 1's lookup tables, GRU seq2seq);
beside it: a run folder that does not exist, one that has recorded nothing yet, and one whose
trace has no time axis (a classifier's). Checks: the address printed, the page loads with the
first example's heat map under its tokens, switching examples changes those tokens, the filter
narrows the list, each bad run is one message on the page, and every view's screenshot is not
blank. Without Chromium and its driver the browser tests fail saying so (`make test` installs
them).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

from probes.attach import attach
from probes.command.cli import main as probes_main
from probes.command.record import record_run
from probes.command.view.runs import RecordedTrace, ViewedRun, ViewError
from probes.command.view.unit_orders import UnitOrder, unit_orders
from storage.files import RunFileError, save_tensors_atomic
from storage.run_folder import RunFolder
from tests.test_runs import fit

CHROMIUM = ("chromium", "chromedriver")
GROUP = [5, 2]
MEASUREMENTS = {"analysis": {"probes": {"table2.encoder.hidden": {"units": GROUP}}}}
"""A probe result in the shape of paper 1's measurements: a functional group of the encoder."""
GROUP_ORDER = "probes.table2.encoder.hidden: group of 2 first"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The tiny suite run and three run folders the page cannot show, by what they are."""
    folder = tmp_path_factory.mktemp("view_runs")
    suite = fit(folder, "runs", "--trainer.max_epochs", "1")
    (suite / "measurements.json").write_text(json.dumps(MEASUREMENTS))
    unfinished = folder / "runs" / "paper1" / "unfinished" / "seed=1"
    unfinished.mkdir(parents=True)
    (unfinished / "config.yaml").write_text("seed_everything: 1\n")
    classifier = folder / "runs" / "paper3" / "classifier" / "seed=1"
    save_tensors_atomic({"hidden.0": torch.rand(6, 8), "prediction": torch.zeros(6, dtype=int)},
                        classifier / "traces" / "test" / "last.safetensors")  # fmt: skip
    return {
        "suite": suite,
        "missing": folder / "runs" / "paper1" / "no_such_run" / "seed=1",
        "unfinished": unfinished,
        "unshowable": classifier,
    }


# ---- without a browser -------------------------------------------------------------------------
def test_examples_and_an_example_site_are_what_the_trace_holds(runs):
    run = ViewedRun(runs["suite"])
    split, tag = run.splits()[0], "best"
    rows = run.examples(split, tag)
    trace = RunFolder(runs["suite"]).trace(split, tag)
    assert len(rows) == trace["encoder.hidden"].shape[0]
    assert {row["right"] for row in rows} <= {"yes", "no"}
    length = int(trace["batch.source_lengths"][2])
    site = run.example_site(split, tag, 2, "encoder.hidden")
    assert torch.equal(site.values, trace["encoder.hidden"][2, :length])
    assert " ".join(site.tokens) == rows[2]["input"]
    decoder = run.example_site(split, tag, 2, "decoder.update_gate")
    assert " ".join(decoder.tokens) == rows[2]["target"]
    assert " ".join(decoder.outputs) == rows[2]["output"]


def test_a_run_recorded_from_ones_own_model_shows_its_token_ids(tmp_path):
    class Tagger(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = torch.nn.Embedding(10, 4)
            self.rnn = torch.nn.LSTM(4, 6, batch_first=True)

        def forward(self, tokens):
            return self.rnn(self.embedding(tokens))[0]

    model = Tagger()
    tokens = torch.randint(0, 10, (5, 7), generator=torch.Generator().manual_seed(0))
    record_run(tmp_path / "own", attach(model), [{"tokens": tokens}], lambda b: model(b["tokens"]))
    run = ViewedRun(tmp_path / "own")
    assert {"rnn.hidden", "rnn.forget_gate"} <= set(run.trace("data", "best").sites)
    rows = run.examples("data", "best")
    assert rows[3]["input"] == " ".join(map(str, tokens[3].tolist())) and rows[3]["right"] == "-"
    assert run.vocabulary_problem == "token ids shown: no checkpoint names a DataModule"
    site = run.example_site("data", "best", 3, "rnn.forget_gate")
    assert site.tokens == [str(t) for t in tokens[3].tolist()] and site.values.shape == (7, 6)


def test_an_example_reads_its_row_of_one_site_not_the_whole_trace(runs, monkeypatch):
    run = ViewedRun(runs["suite"])
    split = run.splits()[0]
    run.examples(split, "best")  # the list reads the small entries once
    monkeypatch.setattr(RecordedTrace, "read", lambda *a: pytest.fail("whole entries read"))
    assert run.example_site(split, "best", 1, "decoder.hidden").values.dim() == 2


def test_no_callback_is_sent_the_list_of_examples(runs):
    """The list can hold thousands of rows: a callback that took it as an input or state would
    upload it at every switch of examples (the table's `selected_row_ids` name the example)."""
    from probes.command.view.page import build_app

    app = build_app([str(runs["suite"])])
    sent = [f"{item['id']}.{item['property']}" for callback in app.callback_map.values()
            for item in callback["inputs"] + callback["state"]]  # fmt: skip
    assert "examples.selected_row_ids" in sent and "examples.data" not in sent


def test_units_are_ordered_by_the_groups_and_saturation_a_run_holds(runs):
    saturation = {"left": [0.1, 0, 0.5, 0], "right": [0, 0, 0.4, 0.2]}
    measured = {"analysis": {
        "probes": {"table2.decoder.update_gate": {"units": [3, 1]}},
        "saturation": {"decoder.update_gate": saturation},
    }}  # fmt: skip
    orders = unit_orders(measured, "decoder.update_gate", 4)
    assert orders == {
        "index": UnitOrder([0, 1, 2, 3]),
        "probes.table2.decoder.update_gate: group of 2 first": UnitOrder([3, 1, 0, 2], 2),
        "saturation.decoder.update_gate: most saturated first": UnitOrder([2, 3, 0, 1]),
    }
    assert list(unit_orders(measured, "encoder.hidden", 4)) == ["index"]
    run = ViewedRun(runs["suite"])
    assert list(run.unit_orders(run.splits()[0], "best", "encoder.hidden")) == [
        "index",
        GROUP_ORDER,
    ]


def test_missing_unfinished_and_unshowable_runs_are_one_error_each(runs):
    with pytest.raises(RunFileError, match="does not exist: train it first"):
        ViewedRun(runs["missing"])
    with pytest.raises(ViewError, match="has no recorded traces yet.*TraceRecorder"):
        ViewedRun(runs["unfinished"]).splits()
    with pytest.raises(ViewError, match="no site with a time axis.*recurrent model"):
        ViewedRun(runs["unshowable"]).trace("test", "last")


def test_a_port_in_use_is_one_error(runs, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert probes_main(["view", "--runs", str(runs["suite"]), "--port", str(port)]) == 2
    assert (
        f"port {port} on 127.0.0.1 is in use: give another with --port" in capsys.readouterr().err
    )


# ---- the page in a browser ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def page(runs):
    """The command serving every run of `runs` on a free port: its address, as printed."""
    with serving([runs[kind] for kind in ("suite", "missing", "unfinished", "unshowable")]) as at:
        yield at


@contextmanager
def serving(folders: Sequence[Path]) -> Iterator[str]:
    """`python -m probes view` over `folders` on a free port, stopped on exit: its address, as
    printed."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    command = [sys.executable, "-m", "probes", "view", "--port", str(port), "--runs",
               *map(str, folders)]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})  # fmt: skip
    try:
        printed = server.stdout.readline()
        expected = f"{len(folders)} run folder(s) at http://127.0.0.1:{port}/"
        assert expected in printed, server.stderr.read()
        address = printed.split(" at ")[1].split()[0]
        wait_until(lambda: answers(address), 60, "the page to answer")
        yield address
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    missing = [name for name in CHROMIUM if shutil.which(name) is None]
    if missing:
        pytest.fail(f"{' and '.join(missing)} not installed: the browser tests drive Debian's "
                    "Chromium (apt-get install chromium chromium-driver; `make test` installs "
                    "them where it can)")  # fmt: skip
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--window-size=1400,1000"):  # fmt: skip
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("view_screenshots")


def opened(browser, page: str, runs) -> tuple[ViewedRun, str]:
    """The page opened afresh, once it shows the first example: the suite run, its first split."""
    browser.get(page)
    run = ViewedRun(runs["suite"])
    split = run.splits()[0]
    expected = run.example_site(split, "best", 0, "encoder.hidden").tokens
    wait_until(lambda: heatmap_tokens(browser) == expected, 60, f"the tokens {expected}")
    return run, split


def test_page_shows_the_first_example_under_its_tokens(browser, page, runs, screenshots):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    opened(browser, page, runs)
    assert text_of(browser, "message") == ""
    assert "example 0" in text_of(browser, "example-text")
    cells = browser.find_element(By.CSS_SELECTOR, "#heatmap .nsewdrag")
    ActionChains(browser).move_to_element(cells).perform()  # the middle step, a middle unit
    wait_until(lambda: "value" in hover_text(browser), 10, "a value on hover")
    assert "unit" in hover_text(browser) and "step 1" in hover_text(browser)
    assert_not_blank(browser, screenshots / "example.png")


def test_switching_examples_changes_the_heat_maps_tokens(browser, page, runs, screenshots):
    from selenium.webdriver.common.by import By

    run, split = opened(browser, page, runs)
    rows = run.examples(split, "best")[:15]  # the table's first page
    other = next(i for i, row in enumerate(rows) if row["input"] != rows[0]["input"])
    expected = run.example_site(split, "best", other, "encoder.hidden").tokens
    browser.find_elements(By.CSS_SELECTOR, "#examples input[type=radio]")[other].click()
    wait_until(lambda: heatmap_tokens(browser) == expected, 30, f"the tokens {expected}")
    assert f"example {other}" in text_of(browser, "example-text")
    assert_not_blank(browser, screenshots / "other_example.png")


def test_units_ordered_by_a_functional_group_put_it_first_and_mark_it(
    browser, page, runs, screenshots
):
    opened(browser, page, runs)
    choose(browser, "order", GROUP_ORDER)
    marked = [f"● {unit}" for unit in GROUP]
    wait_until(lambda: unit_labels(browser)[:2] == marked, 30, f"the units {marked} first")
    assert "● " not in " ".join(unit_labels(browser)[2:])
    assert_not_blank(browser, screenshots / "ordered_units.png")


def test_the_token_filter_narrows_the_list(browser, page, runs, screenshots):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    run, split = opened(browser, page, runs)
    rows = run.examples(split, "best")
    token = rows[0]["input"].split()[-1]
    matching = [row for row in rows if any(token in row[c] for c in ("input", "target", "output"))]
    assert len(matching) < len(rows)
    browser.find_element(By.ID, "filter-tokens").send_keys(token, Keys.ENTER)
    count = f"{len(matching)} of {len(rows)} examples"
    wait_until(lambda: count in text_of(browser, "example-count"), 30, count)
    assert_not_blank(browser, screenshots / "filtered.png")


@pytest.mark.parametrize(
    "kind, message",
    [
        ("missing", "does not exist: train it first"),
        ("unfinished", "has no recorded traces yet"),
        ("unshowable", "holds no site with a time axis"),
    ],
)
def test_a_run_the_page_cannot_show_is_one_message(browser, page, runs, screenshots, kind,
                                                   message):  # fmt: skip
    opened(browser, page, runs)
    choose(browser, "run", str(runs[kind]))
    wait_until(lambda: message in text_of(browser, "message"), 30, message)
    shown = text_of(browser, "message")
    assert str(runs[kind]) in shown and len(shown.splitlines()) == 1
    assert "Traceback" not in browser.page_source
    assert_not_blank(browser, screenshots / f"{kind}.png")


# ---- helpers -----------------------------------------------------------------------------------
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
    """Pick `option` in the dropdown `dropdown_id` (Dash 4's dropdown: a button, then a list)."""
    from selenium.webdriver.common.by import By

    browser.find_element(By.ID, dropdown_id).click()
    options = browser.find_elements(By.CSS_SELECTOR, "label.dash-dropdown-option")
    chosen = next(o for o in options if o.text == option)
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", chosen)  # a long list
    chosen.click()


def unit_labels(browser) -> list[str]:
    """The unit labels beside the heat map, top to bottom."""
    from selenium.webdriver.common.by import By

    return [tick.text for tick in browser.find_elements(By.CSS_SELECTOR, "#heatmap .ytick text")]


def hover_text(browser) -> str:
    """The heat map's hover label (unit, step, token and value)."""
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, "#heatmap .hovertext").text


def heatmap_tokens(browser) -> list[str]:
    """The tick labels above the heat map: the tokens of the example's steps."""
    from selenium.webdriver.common.by import By

    return [tick.text for tick in browser.find_elements(By.CSS_SELECTOR, "#heatmap .xtick text")]


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
