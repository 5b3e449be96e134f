"""Find a pattern (LSTMVis's core move, Strobelt et al.): pick units and a span of steps of the
shown example, and list every other span of the split where the same units are on, ranked; one
click on a match shows its example with the span marked on the heat map.

The search is `find_pattern`, a function over tensors; `split_units` reads what it needs of a
trace: the chosen units of one site over every example (one memory-mapped slice,
`safe_open(...).get_slice(site)[:, :, units]`) and the site's valid steps. The page's part is the
section under the heat map and its callbacks (`section`, `register_callbacks`); Dash lacks such a
search, so it is written here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from dash import Dash, Input, Output, Patch, State, ctx, dash_table, dcc, html, no_update
from dash.exceptions import PreventUpdate
from torch import Tensor

from probes.command.view.page import EXAMPLES_PER_PAGE, RunCache, listed_examples
from probes.command.view.runs import (
    MOST_EXAMPLES,
    RecordedTrace,
    ViewedRun,
    ViewError,
    step_tokens_key,
)
from probes.command.view.widgets import answered, labelled
from probes.traces import valid_key, valid_steps

STAGE = "pattern"
PLACE = "example"
"""The page keeps this view's problem in `problem-pattern` (its message shows it); the section
goes under the heat map."""
DEFAULT_THRESHOLD = 0.5
MOST_MATCHES = 200
"""The list shows the best this many matches (the count says how many there are)."""
MATCHES_PER_PAGE = 10
HIGHLIGHT = "pattern"
HIGHLIGHT_COLOUR = "#ff7f0e"
"""The name and colour of the heat map's shapes that mark the chosen units over the span."""
MATCH_COLUMNS = ("rank", "example", "steps", "tokens", "length", "strength")


@dataclass(frozen=True)
class Match:
    """Steps `start` to `stop` (exclusive, trace steps) of `example` where the units are on;
    `strength`: the mean of their values over those steps."""

    example: int
    start: int
    stop: int
    strength: float

    @property
    def length(self) -> int:
        return self.stop - self.start


def find_pattern(
    values: Tensor,
    valid: Tensor,
    threshold: float,
    length: int,
    skip: tuple[int, int, int] | None = None,
) -> list[Match]:
    """Every span where the chosen units are on, best first.

    `values` `[examples, time, units]` holds the chosen units only, `valid` `[examples, time]`
    the steps each example has. A step is on where it is valid and every chosen unit is at least
    `threshold` (LSTMVis's rule); a match is a maximal run of on steps, so that the units are not
    all on (or the example has no step) right before and right after it. `skip`
    `(example, start, stop)`: the selection itself, whose overlapping matches are left out.

    Ranking: LSTMVis scores a candidate span by the on-units it shares with the selection and by
    its length. Here every match has all chosen units on, and only those units are read, so the
    shared units leave their margin: first the closer a match's length is to `length` (the
    selection's), the better; among equally close ones, the stronger (the higher the mean of the
    chosen units' values over the match), the better; then by example and step, so that the
    order is total. Cost: linear in the size of `values` (one comparison, one cumulative sum),
    then sorting the matches.
    """
    if values.shape[-1] == 0:
        raise ViewError("Pick at least one unit to look for.")
    on = (values >= threshold).all(-1) & valid.bool()
    edges = torch.diff(F.pad(on.to(torch.int8), (1, 1)), dim=1)  # [examples, time + 1]
    starts, stops = (edges == 1).nonzero(), (edges == -1).nonzero()  # the k-th of each pair up
    mean_per_step = values.double().mean(-1)
    cumulative = F.pad(mean_per_step.cumsum(1), (1, 0))  # [examples, time + 1]
    example, start, stop = starts[:, 0], starts[:, 1], stops[:, 1]
    strength = (cumulative[example, stop] - cumulative[example, start]) / (stop - start)
    spans = zip(example.tolist(), start.tolist(), stop.tolist(), strength.tolist(), strict=True)
    matches = [Match(*span, strength=float(mean)) for *span, mean in spans]
    if skip is not None:
        matches = [m for m in matches if not overlaps(m, *skip)]
    return sorted(matches, key=lambda m: (abs(m.length - length), -m.strength, m.example, m.start))


def overlaps(match: Match, example: int, start: int, stop: int) -> bool:
    return match.example == example and match.start < stop and start < match.stop


def split_units(trace: RecordedTrace, site: str, units: Sequence[int]) -> tuple[Tensor, Tensor]:
    """`units` of `site` over every example, `[examples, time, units]` (one slice of the file),
    and the site's valid steps `[examples, time]` (every step where the trace marks none)."""
    if site not in trace.shapes:
        raise ViewError(f"{trace.path} has no site {site!r}: pick one of {', '.join(trace.sites)}.")
    count = trace.shapes[site][2]
    wrong = [unit for unit in units if not 0 <= unit < count]
    if wrong:
        raise ViewError(f"{site} has units 0..{count - 1}, not {wrong}: pick some of those.")
    values = trace.read_units(site, units)
    key = valid_key(site, trace.shapes.keys())
    if key not in trace.shapes:
        return values, torch.ones(values.shape[:2], dtype=torch.bool)
    return values, valid_steps({site: values, **trace.read([key])}, site)


# ---- the page ----------------------------------------------------------------------------------
def section(run_paths: Sequence[str]) -> html.Div:
    """Under the heat map: the units, the span and the threshold, the search and its matches."""
    units = dcc.Dropdown(
        id="pattern-units",
        multi=True,
        value=[],
        placeholder="click cells of the heat map, or take the units on below",
    )
    span = html.Div(
        [dcc.Input(id="pattern-from", type="number", min=0, step=1, value=0,
                   style={"width": "5em"}),
         html.Span(" to "),
         dcc.Input(id="pattern-to", type="number", min=0, step=1, value=0,
                   style={"width": "5em"})])  # fmt: skip
    threshold = dcc.Input(id="pattern-threshold", type="number", step=0.05,
                          value=DEFAULT_THRESHOLD, style={"width": "6em"})  # fmt: skip
    buttons = html.Div(
        [html.Button("units on over the span", id="pattern-on-units"),
         html.Button("find the pattern", id="pattern-find")],
        style={"display": "flex", "gap": "0.5em", "alignItems": "end"})  # fmt: skip
    matches = dash_table.DataTable(
        id="pattern-matches",
        columns=[{"name": name, "id": name} for name in MATCH_COLUMNS],
        data=[],
        page_size=MATCHES_PER_PAGE,
        style_cell={"textAlign": "left", "fontFamily": "monospace", "padding": "2px 6px",
                    "cursor": "pointer"},
    )  # fmt: skip
    return html.Div(
        [html.H4("Find a pattern", style={"margin": "0.5em 0"}),
         html.Div([labelled("units", units, flex="3"), labelled("steps (of this example)", span),
                   labelled("on where at least", html.Div(threshold)), buttons],
                  style={"display": "flex", "gap": "1em", "flexWrap": "wrap"}),
         html.Div(id="pattern-summary", style={"margin": "0.5em 0"}),
         matches,
         dcc.Store(id="pattern-pending", data=None),
         dcc.Store(id="pattern-searched", data=None)],
        style={"borderTop": "1px solid #ccc", "marginTop": "0.5em"},
    )  # fmt: skip


def register_callbacks(app: Dash, runs: RunCache) -> None:
    chosen_site = [State(name, "value") for name in ("run", "split", "tag", "site")]
    example_states = [State("examples", "selected_row_ids")]  # not the list: sent at each call
    filters = [State(name, "value") for name in ("filter-tokens", "filter-right")]
    problem = Output(f"problem-{STAGE}", "data", allow_duplicate=True)
    app.callback(
        Output("pattern-units", "options"),
        Output("pattern-units", "value", allow_duplicate=True),
        problem,
        *[Input(name, "value") for name in ("run", "split", "tag", "site", "order")],
        State("pattern-units", "value"),
        prevent_initial_call=True,
    )(answered(lambda *chosen: unit_options(runs, *chosen), [], []))
    app.callback(
        Output("pattern-units", "value", allow_duplicate=True),
        problem,
        Input("heatmap", "clickData"),
        Input("pattern-on-units", "n_clicks"),
        *chosen_site, State("order", "value"), *example_states,
        State("pattern-units", "value"),
        *[State(f"pattern-{name}", "value") for name in ("from", "to", "threshold")],
        prevent_initial_call=True,
    )(answered(lambda *chosen: chosen_units(runs, *chosen), no_update))  # fmt: skip
    app.callback(
        Output("pattern-matches", "data"),
        Output("pattern-matches", "page_current"),
        Output("pattern-summary", "children"),
        Output("pattern-matches", "active_cell"),
        Output("pattern-searched", "data"),
        Output(f"problem-{STAGE}", "data"),
        Input("pattern-find", "n_clicks"),
        *[Input(name, "value") for name in ("run", "split", "tag", "site")],
        *example_states,
        *[State(f"pattern-{name}", "value") for name in ("units", "from", "to", "threshold")],
        State("pattern-searched", "data"),
    )(answered(lambda *chosen: search(runs, *chosen), [], 0, "", None, None))
    selected = [Output("examples", name, allow_duplicate=True)
                for name in ("selected_rows", "selected_row_ids", "page_current")]  # fmt: skip
    listed = [State(name, "value") for name in ("run", "split", "tag")]
    app.callback(
        *selected,
        Output("pattern-from", "value"),
        Output("pattern-to", "value"),
        Output("filter-tokens", "value"),
        Output("filter-right", "value"),
        Output("pattern-pending", "data", allow_duplicate=True),
        Input("pattern-matches", "active_cell"),
        State("pattern-matches", "data"),
        *listed, *filters,
        prevent_initial_call=True,
    )(lambda *chosen: show_match(runs, *chosen))  # fmt: skip
    app.callback(
        *selected,
        Output("pattern-pending", "data", allow_duplicate=True),
        problem,
        Input("example-count", "children"),  # set each time the list is made again
        State("pattern-pending", "data"),
        *listed, *filters,
        prevent_initial_call=True,
    )(lambda *chosen: show_pending_example(runs, *chosen))  # fmt: skip
    app.callback(
        Output("heatmap", "figure", allow_duplicate=True),
        Input("heatmap", "figure"),
        *[Input(f"pattern-{name}", "value") for name in ("units", "from", "to")],
        *chosen_site, State("order", "value"),
        prevent_initial_call=True,
    )(lambda *chosen: highlight(runs, *chosen))  # fmt: skip


def unit_options(runs: RunCache, path, split, tag, site, order, units) -> tuple:
    """The site's units in the heat map's order; the chosen ones kept where the site has them."""
    if not (path and split and tag and site):
        return [], []
    ordered = unit_order(runs, path, split, tag, site, order)
    options = [{"label": f"unit {unit}", "value": unit} for unit in ordered]
    return options, [unit for unit in units or [] if unit in ordered]


def unit_order(runs: RunCache, path, split, tag, site, order) -> list[int]:
    orders = runs(path).unit_orders(split, tag, site)
    return orders.get(order, next(iter(orders.values()))).units


def chosen_units(runs: RunCache, click, _, path, split, tag, site, order, selected, units, first,
                 last, threshold) -> tuple:  # fmt: skip
    """A click on the heat map adds its cell's unit to the chosen ones, or takes it out; the
    button takes the units that are on at every step of the span (LSTMVis's selection)."""
    units = list(units or [])
    if ctx.triggered_id == "heatmap":
        if not click or not click.get("points"):
            return (no_update,)
        unit = unit_order(runs, path, split, tag, site, order)[int(click["points"][0]["y"])]
        return ([u for u in units if u != unit] if unit in units else [*units, unit],)
    example = shown_example(selected)
    values = runs(path).example_site(split, tag, example, site).values
    first, last, threshold = checked_span(first, last, threshold, example, len(values))
    on = (values[first : last + 1] >= threshold).all(0)
    found = [unit for unit in unit_order(runs, path, split, tag, site, order) if on[unit]]
    if not found:
        raise ViewError(
            f"No unit of {site} is at least {threshold} at every step {first}-{last} of example "
            f"{example}: lower the threshold or shorten the span."
        )
    return (found,)


def shown_example(selected_ids) -> int:
    """The example selected in the list (a row's id is its example)."""
    if not selected_ids:
        raise ViewError("Pick an example in the list first: the pattern is a span of it.")
    return int(selected_ids[0])


def checked_span(first, last, threshold, example: int, steps: int) -> tuple[int, int, float]:
    """The span's first and last step (heat map columns) and the threshold, or one error."""
    if not isinstance(threshold, (int, float)):
        raise ViewError("Give a threshold (a number): a unit is on where its value is at least it.")
    if not (isinstance(first, int) and isinstance(last, int) and 0 <= first <= last < steps):
        raise ViewError(
            f"Example {example} has steps 0..{steps - 1}: give a span within them, from <= to "
            f"(not {first} to {last})."
        )
    return first, last, float(threshold)


def search(runs: RunCache, _, path, split, tag, site, selected, units, first, last, threshold,
           searched) -> tuple:  # fmt: skip
    """The matches of the chosen units over the span, as the list's rows, a summary, and the
    site they are of (`searched`); another run, split, tag or site empties the list."""
    if ctx.triggered_id != "pattern-find":
        if searched in (None, [path, split, tag, site]):
            raise PreventUpdate  # the list is of the site shown (or there is none)
        return [], 0, "", None, None
    if not (path and split and tag and site):
        return [], 0, "", None, None
    if not units:
        raise ViewError(
            "Pick the units to look for: click cells of the heat map, or press "
            "'units on over the span'."
        )
    example = shown_example(selected)
    run = runs(path)
    trace = run.trace(split, tag)
    values, valid = split_units(trace, site, units)
    steps = valid[example].nonzero()[:, 0]
    first, last, threshold = checked_span(first, last, threshold, example, len(steps))
    start, stop = int(steps[first]), int(steps[last]) + 1
    matches = find_pattern(values, valid, threshold, last - first + 1, (example, start, stop))
    listed = listed_matches(run, trace, site, matches[:MOST_MATCHES], valid)
    names = ", ".join(map(str, units))
    summary = (
        f"{len(matches)} other span(s) of {split} ({tag}) where units {names} of {site} are all "
        f">= {threshold}, like steps {first}-{last} of example {example}; ranked by closeness "
        "to its length, then by strength (the units' mean value)"
    )
    if len(matches) > MOST_MATCHES:
        summary += f"; the best {MOST_MATCHES} listed"
    if not bool((values[example, start:stop] >= threshold).all()):
        summary += " (the units are not all on over the selection itself)"
    return listed, 0, summary + ".", None, [path, split, tag, site]


def listed_matches(run: ViewedRun, trace: RecordedTrace, site: str, matches: list[Match],
                   valid: Tensor) -> list[dict]:  # fmt: skip
    """The list's rows: each match's rank, example, steps (as the heat map's columns: `from`,
    `to`) and tokens, length and strength; `id` its place in the list."""
    column = valid.cumsum(1) - 1  # a valid step's column in its example's heat map
    tokens_key = step_tokens_key(trace, site)
    tokens = trace.read([tokens_key])[tokens_key] if tokens_key else None
    rows = []
    for place, match in enumerate(matches):
        first = int(column[match.example, match.start])
        last = int(column[match.example, match.stop - 1])
        spelled = []
        if tokens is not None:
            spelled = run.spell(tokens_key, tokens[match.example, match.start : match.stop])
        rows.append({"id": place, "rank": place + 1, "example": match.example,
                     "steps": f"{first}-{last}", "from": first, "to": last,
                     "tokens": " ".join(spelled), "length": match.length,
                     "strength": round(match.strength, 4)})  # fmt: skip
    return rows


def show_match(runs: RunCache, cell, matches, path, split, tag, tokens, right) -> tuple:
    """A click on a match: its example selected in the list (the filters cleared first where they
    hide it) and its span set as the chosen one, which the heat map marks."""
    if not cell or cell.get("row_id") is None or cell["row_id"] >= len(matches or []):
        raise PreventUpdate
    match = matches[cell["row_id"]]
    span = (match["from"], match["to"])
    listed = listed_ids(runs, path, split, tag, tokens, right)
    if match["example"] in listed:
        return *selection(listed, match["example"]), *span, no_update, no_update, None
    return no_update, no_update, no_update, *span, "", "all", match["example"]


def show_pending_example(runs: RunCache, _, pending, path, split, tag, tokens, right) -> tuple:
    """Once the cleared filters list every example, the match's example selected; one message
    where the list still leaves it out (past its first `MOST_EXAMPLES`)."""
    if pending is None:
        raise PreventUpdate
    listed = listed_ids(runs, path, split, tag, tokens, right)
    if pending not in listed:
        message = (f"Example {pending} is past the first {MOST_EXAMPLES} examples listed: filter "
                   "the list by its tokens to reach it.")  # fmt: skip
        return no_update, no_update, no_update, None, message
    return *selection(listed, pending), None, ""


def listed_ids(runs: RunCache, path, split, tag, tokens, right) -> list[int]:
    """The examples the list shows, in its order (`page.listed_examples`)."""
    return [int(row["id"]) for row in listed_examples(runs, path, split, tag, tokens, right)[0]]


def selection(listed: list[int], example: int) -> tuple:
    """The list's selected row, its id and the page that shows it, for `example`."""
    index = listed.index(example)
    return [index], [example], index // EXAMPLES_PER_PAGE


def highlight(runs: RunCache, figure, units, first, last, path, split, tag, site, order):
    """The heat map with the chosen units over the span outlined (its other shapes kept)."""
    if not figure or "layout" not in figure:
        raise PreventUpdate
    kept = [s for s in figure["layout"].get("shapes", []) if s.get("name") != HIGHLIGHT]
    marks = []
    if units and isinstance(first, int) and isinstance(last, int) and first <= last:
        try:
            ordered = unit_order(runs, path, split, tag, site, order)
        except Exception:  # the page's message already says what is wrong with the run
            raise PreventUpdate from None
        rows = sorted(ordered.index(unit) for unit in units if unit in ordered)
        for top, bottom in consecutive_runs(rows):
            line = {"color": HIGHLIGHT_COLOUR, "width": 3}
            marks.append({"type": "rect", "name": HIGHLIGHT, "xref": "x", "yref": "y",
                          "x0": first - 0.5, "x1": last + 0.5, "y0": top - 0.5,
                          "y1": bottom + 0.5, "line": line})  # fmt: skip
    if kept + marks == figure["layout"].get("shapes", []):
        raise PreventUpdate
    patched = Patch()
    patched["layout"]["shapes"] = kept + marks
    return patched


def consecutive_runs(rows: list[int]) -> list[tuple[int, int]]:
    """Sorted row numbers as (first, last) of each run of consecutive ones."""
    runs: list[tuple[int, int]] = []
    for row in rows:
        if runs and row == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], row)
        else:
            runs.append((row, row))
    return runs
