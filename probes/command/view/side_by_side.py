"""Two runs side by side: the shown example's site in the chosen run (A) and in a second run or a
second recorded epoch of the same run (B), as two heat maps with A's order of units and one colour
scale.

B must hold the same examples as A (the same tokens in the same rows of the split: `same_examples`)
and the same site with as many units; otherwise the page says which and shows B's heat map empty.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from dash import Dash, Input, Output, ctx, dcc, html

from probes.command.view.page import RunCache, empty_figure, heatmap
from probes.command.view.runs import INPUT_KEYS, TARGET_KEY, ExampleSite, RecordedTrace, ViewError
from probes.command.view.unit_orders import INDEX
from probes.command.view.widgets import labelled, one_line

STAGE = "side"
PLACE = "page"
"""The page keeps this view's problem in `problem-side` (its message shows it); the section goes
below both columns."""
EXAMPLE_KEYS = (*INPUT_KEYS, "batch.source_lengths", TARGET_KEY)
"""The trace entries that say which examples a split holds (tokens and lengths)."""


def section(run_paths: Sequence[str]) -> html.Div:
    """Below the columns: the second run and its tag, and the two heat maps."""
    second = dcc.Dropdown(id="side-run", options=list(run_paths), value=None,
                          placeholder="a second run (or the same, at another epoch)")  # fmt: skip
    graphs = [
        html.Div(dcc.Graph(id=f"side-{which}", figure=empty_figure(),
                           config={"displaylogo": False}),
                 style={"flex": "1", "minWidth": "30em"})
        for which in ("first", "second")
    ]  # fmt: skip
    return html.Div(
        [html.H4("Side by side", style={"margin": "0.5em 0"}),
         html.Div([labelled("second run", second, flex="3"),
                   labelled("its recorded epoch / checkpoint",
                            dcc.Dropdown(id="side-tag", clearable=False))],
                  style={"display": "flex", "gap": "1em"}),
         html.Pre(id="side-text", style={"margin": "0.5em 0"}),
         html.Div(graphs, style={"display": "flex", "gap": "1em", "flexWrap": "wrap"})],
        style={"borderTop": "1px solid #ccc", "marginTop": "1em"},
    )  # fmt: skip


def register_callbacks(app: Dash, runs: RunCache) -> None:
    compared: dict[tuple, str] = {}  # what `examples_differ` found, by the two files' versions
    app.callback(
        Output("side-tag", "options"),
        Output("side-tag", "value"),
        Output("side-first", "figure"),
        Output("side-second", "figure"),
        Output("side-text", "children"),
        Output(f"problem-{STAGE}", "data"),
        *[Input(name, "value") for name in ("run", "split", "tag", "site")],
        Input("examples", "selected_row_ids"),  # not the list: it would be sent at each switch
        Input("order", "value"),
        Input("side-run", "value"),
        Input("side-tag", "value"),
    )(lambda *chosen: side_by_side(runs, compared, *chosen))


def side_by_side(runs: RunCache, compared: dict, path, split, tag, site, selected, order,
                 second_path, second_tag) -> tuple:  # fmt: skip
    """B's tags of the split, A's and B's heat maps of the shown example on one scale, which is
    which, and the problem: one line, with B's tags still offered to pick another."""
    tags: list[str] = []
    try:
        if not (path and split and tag and site and second_path):
            return [], None, empty_figure(), empty_figure(), "", ""
        tags, second_tag = second_tags(runs, path, split, tag, second_path, second_tag)
        if not selected:
            return tags, second_tag, empty_figure(), empty_figure(), "", ""
        example = int(selected[0])
        figures = compared_heatmaps(runs, compared, path, split, tag, site, example, order,
                                    second_path, second_tag)  # fmt: skip
        return tags, second_tag, *figures, ""
    except Exception as error:  # shown on the page as one line, never a traceback
        return tags, second_tag, empty_figure(), empty_figure(), "", one_line(error)


def second_tags(runs: RunCache, path, split, tag, second_path, second_tag) -> tuple[list, str]:
    """B's recorded tags of the split, and the one shown: the chosen one where B has it, else
    the first that is not A itself."""
    first, second = runs(path), runs(second_path)
    tags = second.recorded_tags(split)
    if not tags:
        raise ViewError(
            f"{second.path} has no trace of split {split!r}, so it cannot be shown beside "
            f"{first.path}: pick a second run recorded on {split}."
        )
    if second_tag not in tags or ctx.triggered_id == "side-run":
        others = [t for t in tags if (second.path, t) != (first.path, tag)]
        second_tag = (others or tags)[0]
    return tags, second_tag


def compared_heatmaps(runs: RunCache, compared: dict, path, split, tag, site, example: int,
                      order, second_path, second_tag) -> tuple:  # fmt: skip
    """A's and B's heat maps of `example`, A's order of units and one colour scale for both, and
    which is which; one `ViewError` where B cannot be shown beside A (`check_comparable`)."""
    first, second = runs(path), runs(second_path)
    check_comparable(first.trace(split, tag), second.trace(split, second_tag), site, compared)
    a_site = first.example_site(split, tag, example, site)
    b_site = second.example_site(split, second_tag, example, site)
    orders = first.unit_orders(split, tag, site)
    unit_order = orders.get(order, orders[INDEX])
    a_figure = heatmap(a_site, unit_order, f"A: {site}, example {example} ({split}, {tag})")
    b_figure = heatmap(b_site, unit_order, f"B: {site}, example {example} ({split}, {second_tag})")
    share_colour_scale(a_figure, b_figure, a_site, b_site)
    text = f"A: {first.path} ({tag})\nB: {second.path} ({second_tag}), units in A's order"
    return a_figure, b_figure, text


def check_comparable(a: RecordedTrace, b: RecordedTrace, site: str, compared: dict) -> None:
    """One `ViewError` where B cannot be shown beside A: it lacks the site, has another number
    of its units, or holds other examples."""
    if site not in b.shapes:
        both = sorted(set(a.sites) & set(b.sites))
        raise ViewError(
            f"{b.path} has no site {site!r}, so side by side cannot show it: pick a site both "
            f"runs record ({', '.join(both) or 'they share none'}) or another second run."
        )
    if b.shapes[site][2] != a.shapes[site][2]:
        raise ViewError(
            f"{b.path} has {b.shapes[site][2]} units at {site}, {a.path} has "
            f"{a.shapes[site][2]}: side by side compares models of one size; pick another run."
        )
    key = tuple((trace.path, trace.path.stat().st_mtime_ns) for trace in (a, b))
    if key not in compared:
        compared[key] = examples_differ(a, b)
    if compared[key]:
        raise ViewError(
            f"{b.path} holds other examples than {a.path} ({compared[key]}): side by side shows "
            "one example in both, so pick a run recorded on the same split contents."
        )


def examples_differ(a: RecordedTrace, b: RecordedTrace) -> str:
    """What differs between the examples of two traces (their count, or an entry of their tokens
    and lengths), or nothing where they hold the same examples in the same rows."""
    if a.rows != b.rows:
        return f"{b.rows} examples, not {a.rows}"
    keys = [key for key in EXAMPLE_KEYS if key in a.shapes or key in b.shapes]
    for key in keys:
        if a.shapes.get(key) != b.shapes.get(key):
            return f"{key} is {b.shapes.get(key, 'absent')}, not {a.shapes.get(key, 'absent')}"
        if not a.read([key])[key].equal(b.read([key])[key]):
            return f"{key} differs"
    return ""


def share_colour_scale(a: go.Figure, b: go.Figure, *sites: ExampleSite) -> None:
    """One colour scale for both heat maps: a gate's 0..1 where both sites are gates (as `heatmap`
    draws one), else -m..m with m the largest magnitude of either."""
    values = [site.values.float() for site in sites if site.values.numel()]
    if not values:
        return
    if all(v.min() >= 0 and v.max() <= 1 for v in values):
        scale = {"colorscale": "Viridis", "zmin": 0, "zmax": 1}
    else:
        largest = max(float(v.abs().max()) for v in values) or 1.0
        scale = {"colorscale": "RdBu_r", "zmin": -largest, "zmax": largest, "zmid": None}
    for figure in (a, b):
        figure.update_traces(**scale)
