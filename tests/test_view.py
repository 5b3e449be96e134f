"""`python -m probes view`: the page over a tiny recorded run of the suite, driven by a real
browser (Debian's Chromium and chromium-driver, through selenium).

The run is a two-epoch fit of `tests.tiny_run.TINY` (paper 1's lookup tables, GRU seq2seq);
beside it: a run folder that does not exist, one that has recorded nothing yet, one whose trace
has no time axis (a classifier's), a run of one's own LSTM with planted patterns
(`tests.test_view_pattern_search.planted_trace`) and a copy of the suite run with other examples
and a missing site. Checks: the address printed, the page loads with the first example's heat
map under its tokens, switching examples changes those tokens, the filter narrows the list, each
bad run is one message on the page, a pattern search lists the planted spans best first and a
click on one shows its example with the span marked, two epochs side by side share the order of
units and the colour scale (a second run that differs is one message), and every view's
screenshot is not blank. Without Chromium and its driver the browser tests fail saying so
(`make test` installs them).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest
import torch

from probes.attach import attach
from probes.command.cli import main as probes_main
from probes.command.record import record_run
from probes.command.view.runs import RecordedTrace, ViewedRun, ViewError
from probes.command.view.unit_orders import UnitOrder, unit_orders
from storage.files import RunFileError, save_tensors_atomic
from storage.layout import RunLayout, RunNameError
from storage.run_folder import RunFolder
from tests.test_view_pattern_search import EXPECTED, PLANTED_UNITS, SELECTION, planted_trace
from tests.tiny_run import fit
from tests.view_page import (
    assert_not_blank,
    choose,
    choose_until,
    chosen_units,
    headless_chromium,
    heatmap_title,
    heatmap_tokens,
    highlights,
    hover_text,
    listed_matches,
    planted_tokens,
    plotted,
    scroll_to,
    served,
    shows,
    text_of,
    type_into,
    unit_labels,
    until_shown,
    wait_until,
)

GROUP = [5, 2]
MEASUREMENTS = {"analysis": {"probes": {"table2.encoder.hidden": {"units": GROUP}}}}
"""A probe result in the shape of paper 1's measurements: a functional group of the encoder."""
GROUP_ORDER = "probes.table2.encoder.hidden: group of 2 first"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The tiny suite run and three run folders the page cannot show, by what they are; a run of
    one's own model with planted patterns (`planted_trace`), and a copy of the suite run whose
    best trace holds its examples in reverse and whose first epoch lacks `encoder.hidden`."""
    folder = tmp_path_factory.mktemp("view_runs")
    suite = fit(folder, "runs")  # two epochs: two tags to show side by side
    (suite / "measurements.json").write_text(json.dumps(MEASUREMENTS))
    unfinished = folder / "runs" / "paper1" / "unfinished" / "seed=1"
    unfinished.mkdir(parents=True)
    (unfinished / "config.yaml").write_text("seed_everything: 1\n")
    classifier = folder / "runs" / "paper3" / "classifier" / "seed=1"
    save_tensors_atomic({"hidden.0": torch.rand(6, 8), "prediction": torch.zeros(6, dtype=int)},
                        classifier / "traces" / "test" / "last.safetensors")  # fmt: skip
    planted = folder / "runs" / "own" / "planted" / "seed=1"
    save_tensors_atomic(planted_trace(), planted / "traces" / "test" / "best.safetensors")
    other = folder / "runs" / "paper1" / "other" / "seed=3"
    shutil.copytree(suite, other)
    traces = RunFolder(suite)
    reversed_best = {k: v.flip(0) for k, v in traces.trace("new_compositions", "best").items()}
    first_epoch = traces.trace("new_compositions", "epoch=0")
    del first_epoch["encoder.hidden"]
    for tag, entries in (("best", reversed_best), ("epoch=0", first_epoch)):
        save_tensors_atomic(entries, other / "traces" / "new_compositions" / f"{tag}.safetensors")
    return {
        "suite": suite,
        "missing": folder / "runs" / "paper1" / "no_such_run" / "seed=1",
        "unfinished": unfinished,
        "unshowable": classifier,
        "planted": planted,
        "other": other,
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


def test_a_trace_adds_the_unit_orders_recorded_beside_it_to_the_runs_own(runs, tmp_path):
    """An analysis recorded with one trace (`RunLayout.trace_analysis`: the atlas's cells) orders
    that trace's units after the run's own `measurements.json`; another tag's trace has none of
    it, and a file that is not an analysis offers nothing."""
    copy = shutil.copytree(runs["suite"], tmp_path / "seed=1")
    beside = RunLayout(copy).trace_analysis("new_compositions", "best")
    beside.write_text(json.dumps({"analysis": {"cell": {"encoder.hidden": {"units": [7]}}}}))
    run = ViewedRun(copy)
    orders = run.unit_orders("new_compositions", "best", "encoder.hidden")
    assert list(orders) == ["index", GROUP_ORDER, "cell.encoder.hidden: group of 1 first"]
    assert orders["cell.encoder.hidden: group of 1 first"].units[:2] == [7, 0]
    assert list(run.unit_orders("new_compositions", "epoch=0", "encoder.hidden")) == [
        "index",
        GROUP_ORDER,
    ]
    beside.write_text("[not, an analysis")
    assert list(run.unit_orders("new_compositions", "best", "encoder.hidden")) == [
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


def page_callback(app, output: str):
    """The page's callback that answers `output` (e.g. `split.options`), as Dash calls it."""
    key = next(key for key in app.callback_map if f".{output}." in f".{key}.")
    return app.callback_map[key]["callback"].__wrapped__


def test_the_page_reads_only_the_runs_its_globs_matched(runs):
    from probes.command.view.page import build_app

    app = build_app([str(runs["suite"])])
    splits, tags = page_callback(app, "split.options"), page_callback(app, "tag.options")
    assert splits(str(runs["suite"]), None)[0] == ViewedRun(runs["suite"]).splits()
    for asked in (str(runs["other"]), str(runs["suite"]) + "/", ["a", "list"]):
        options, _, problem = splits(asked, None)
        assert options == [] and "not one of the run folders this page serves" in problem
        answer = tags(asked, "new_compositions", "best", "", "all", None)
        assert answer[4] == [] and "not one of the run folders this page serves" in answer[-1]


@pytest.fixture()
def beside_outside(runs, tmp_path) -> tuple[Path, Path]:
    """(a copy of the suite run, a folder outside it holding a trace `loot.safetensors`)."""
    run = tmp_path / "runs" / "paper1" / "tiny" / "seed=3"
    shutil.copytree(runs["suite"], run)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(run / "traces" / "new_compositions" / "best.safetensors",
                outside / "loot.safetensors")  # fmt: skip
    return run, outside


def test_a_split_or_tag_reaching_outside_the_run_is_refused(beside_outside):
    from probes.command.view.page import build_app

    run, outside = beside_outside
    split = os.path.relpath(outside, run / "traces")  # ../../../../../outside
    app = build_app([str(run)])
    tags, view = page_callback(app, "tag.options"), page_callback(app, "heatmap.figure")
    answer = tags(str(run), split, "loot", "", "all", None)
    assert answer[0] == [] and answer[4] == [] and "path separator or '..'" in answer[-1]
    relative_tag = os.path.relpath(outside / "loot", run / "traces" / "new_compositions")
    for chosen_split, tag in ((split, "loot"), ("new_compositions", relative_tag)):
        answer = view(str(run), chosen_split, tag, "encoder.hidden", [0], "index")
        assert "path separator or '..'" in answer[-1] and "\n" not in answer[-1]
    with pytest.raises(RunNameError, match="path separator or '..'"):
        ViewedRun(run).tags(split)


@pytest.mark.parametrize(
    "reach",
    [
        lambda layout: layout.trace("../../../outside", "loot"),
        lambda layout: layout.trace("new_compositions", "../best"),
        lambda layout: layout.traces(".."),
        lambda layout: layout.checkpoint("../../outside/loot"),
        lambda layout: layout.weight_snapshot("a/b"),
        lambda layout: layout.analysis_at("..\\x"),
        lambda layout: RunLayout.of("runs", "paper1", "guided/../../..", 1),
        lambda layout: RunLayout.of("runs", "../paper1", "guided", 1),
        lambda layout: RunLayout.of("runs", "paper1", "guided", "1/../.."),
    ],
)
def test_a_run_layout_refuses_names_that_leave_the_run(tmp_path, reach):
    with pytest.raises(RunNameError, match="path separator or '..'") as error:
        reach(RunLayout(tmp_path / "run"))
    assert "\n" not in str(error.value)


def test_the_layout_keeps_the_names_runs_have():
    layout = RunLayout.of("runs", "paper1", "pruned/guided", 3)
    assert layout.path == Path("runs/paper1/pruned/guided/seed=3")
    assert layout.trace("new_compositions", "epoch=init").name == "epoch=init.safetensors"
    assert layout.checkpoint("last").name == "last.ckpt"


def test_a_trace_linked_from_outside_the_run_is_not_read(beside_outside):
    run, outside = beside_outside
    (run / "traces" / "new_compositions" / "loot.safetensors").symlink_to(
        outside / "loot.safetensors"
    )
    (run / "traces" / "outside").symlink_to(outside, target_is_directory=True)
    viewed = ViewedRun(run)
    assert "outside" not in viewed.splits()
    for split, tag in (("new_compositions", "loot"), ("outside", "loot")):
        with pytest.raises(ViewError, match="outside the run folder"):
            viewed.trace(split, tag)
    assert viewed.trace("new_compositions", "best").rows > 0


# ---- the page in a browser ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def page(runs):
    """The command serving every run of `runs` on a port the system picks: its address, as
    printed."""
    with served(list(runs.values())) as address:
        yield address


@pytest.fixture(scope="module")
def browser():
    try:
        driver = headless_chromium()
    except RuntimeError as error:
        pytest.fail(str(error))
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


def test_a_pattern_search_lists_the_planted_spans_and_a_click_shows_one(
    browser, page, runs, screenshots
):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    opened(browser, page, runs)
    choose(browser, "run", str(runs["planted"]))
    planted = planted_trace()
    wait_until(lambda: heatmap_tokens(browser) == planted_tokens(planted, 0), 30, "example 0")
    browser.find_element(By.ID, "pattern-find").click()  # no units chosen yet: one message
    wait_until(lambda: "Pick the units" in text_of(browser, "message"), 30, "the message")
    cells = browser.find_element(By.CSS_SELECTOR, "#heatmap .nsewdrag")
    ActionChains(browser).move_to_element(cells).click().perform()  # the middle unit, 2
    wait_until(lambda: chosen_units(browser) == ["unit 2"], 30, "unit 2 chosen by a click")
    example, start, stop = SELECTION
    type_into(browser, "pattern-from", str(start))
    type_into(browser, "pattern-to", str(stop - 1))
    browser.find_element(By.ID, "pattern-on-units").click()
    units = [f"unit {unit}" for unit in PLANTED_UNITS]
    wait_until(lambda: chosen_units(browser) == units, 30, f"the units on: {units}")
    marks = [[start - 0.5, stop - 0.5, unit - 0.5, unit + 0.5] for unit in PLANTED_UNITS]
    wait_until(lambda: highlights(browser) == marks, 30, f"the selection marked: {marks}")
    browser.find_element(By.ID, "pattern-find").click()
    expected = [[str(e), f"{a}-{b - 1}"] for e, a, b in EXPECTED]
    wait_until(lambda: listed_matches(browser) == expected, 30, f"the matches {expected}")
    assert f"{len(EXPECTED)} other span(s)" in text_of(browser, "pattern-summary")
    assert text_of(browser, "message") == ""
    scroll_to(browser, "pattern-summary")
    assert_not_blank(browser, screenshots / "pattern_search.png")

    # the second match's example is filtered out of the list: a click clears the filter
    until_shown(
        lambda: type_into(browser, "filter-tokens", "0 1 2" + Keys.ENTER),
        lambda: "1 of 6 examples" in text_of(browser, "example-count"),
        "the filter",
    )
    matched, start, stop = EXPECTED[1]
    cells = browser.find_elements(By.CSS_SELECTOR, "#pattern-matches td[data-dash-column=tokens]")
    cells[1].click()
    tokens = planted_tokens(planted, matched)
    wait_until(lambda: heatmap_tokens(browser) == tokens, 30, f"example {matched}: {tokens}")
    assert f"example {matched}" in text_of(browser, "example-text")
    assert "6 of 6 examples" in text_of(browser, "example-count")
    marks = [[start - 0.5, stop - 0.5, unit - 0.5, unit + 0.5] for unit in PLANTED_UNITS]
    wait_until(lambda: highlights(browser) == marks, 30, f"the match marked: {marks}")
    assert_not_blank(browser, screenshots / "pattern_match.png")


def test_two_tags_of_one_run_side_by_side_share_the_order_and_colour_scale(
    browser, page, runs, screenshots
):
    run, split = opened(browser, page, runs)
    values = {tag: run.example_site(split, tag, 0, "encoder.hidden").values.T
              for tag in ("epoch=0", "epoch=1")}  # fmt: skip
    largest = {tag: float(v.abs().max()) for tag, v in values.items()}
    assert largest["epoch=0"] != largest["epoch=1"]  # one scale for both is not either's own
    title = f"encoder.hidden, example 0 ({split}, epoch=0)"
    choose_until(browser, "tag", "epoch=0", lambda: heatmap_title(browser) == title)
    choose(browser, "order", GROUP_ORDER)
    choose(browser, "side-run", str(runs["suite"]))
    wait_until(lambda: "(best)" in text_of(browser, "side-text"), 30, "B: the suite run, best")
    choose(browser, "side-tag", "epoch=1")
    described = [
        f"A: {runs['suite']} (epoch=0)",
        f"B: {runs['suite']} (epoch=1), units in A's order",
    ]
    wait_until(lambda: text_of(browser, "side-text").splitlines() == described, 30, str(described))
    tokens = run.example_site(split, "epoch=0", 0, "encoder.hidden").tokens
    order = GROUP + [unit for unit in range(values["epoch=0"].shape[0]) if unit not in GROUP]
    marked = [f"● {unit}" for unit in GROUP]
    for graph, tag in (("side-first", "epoch=0"), ("side-second", "epoch=1")):
        expected = values[tag][order].float()
        wait_until(lambda g=graph, e=expected: shows(browser, g, e), 30, f"{graph}: {tag}")
        wait_until(lambda g=graph: heatmap_tokens(browser, g) == tokens, 10, f"{graph}: tokens")
        wait_until(lambda g=graph: unit_labels(browser, g)[:2] == marked, 10, f"{graph}: order")
    gates = all(float(v.min()) >= 0 and float(v.max()) <= 1 for v in values.values())
    scale = [0, 1] if gates else [-max(largest.values()), max(largest.values())]
    for graph in ("side-first", "side-second"):
        assert [plotted(browser, graph)[end] for end in ("zmin", "zmax")] == pytest.approx(scale)
    assert text_of(browser, "message") == ""
    scroll_to(browser, "side-text")
    assert_not_blank(browser, screenshots / "side_by_side.png")


@pytest.mark.parametrize(
    "tag, message",
    [("best", "holds other examples than"), ("epoch=0", "has no site 'encoder.hidden'")],
)
def test_a_second_run_with_other_examples_or_without_the_site_is_one_message(
    browser, page, runs, screenshots, tag, message
):
    opened(browser, page, runs)
    choose(browser, "side-run", str(runs["other"]))
    if tag != "best":
        wait_until(lambda: "holds other examples" in text_of(browser, "message"), 30, "best")
        choose(browser, "side-tag", tag)
    wait_until(lambda: message in text_of(browser, "message"), 30, message)
    shown = text_of(browser, "message")
    assert str(runs["other"]) in shown and len(shown.splitlines()) == 1
    assert "Traceback" not in browser.page_source
    assert heatmap_tokens(browser, "side-second") == []
    scroll_to(browser, "side-text")
    assert_not_blank(browser, screenshots / f"side_by_side_refused_{tag}.png")
