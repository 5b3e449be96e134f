"""The page of `python -m probes view`: pick a run, a split and a recorded tag; filter and pick an
example; read a site of it as a heat map (units x time, the tokens above, values on hover).

Built on Dash: its components and callbacks are the page, Plotly draws the heat map, and no
JavaScript is written here. Each callback answers a problem with one line in the page's message
(`#message`), never a traceback.

Further views are modules of this package (`VIEWS`), each with a `section(run_paths)` placed
under the heat map (`PLACE = "example"`) or below both columns (`"page"`), a `STAGE` (its
problem store), and `register_callbacks(app, runs)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from pathlib import Path
from types import ModuleType

import numpy
import plotly.graph_objects as go
from dash import Dash, Input, Output, State, dash_table, dcc, html, no_update

from probes.command.view.decomposition_page import (
    decomposition_section,
    register_decomposition_callbacks,
)
from probes.command.view.runs import MOST_EXAMPLES, ExampleSite, ViewedRun, ViewError
from probes.command.view.unit_orders import INDEX, UnitOrder
from probes.command.view.widgets import answered, labelled

EXAMPLE_COLUMNS = ("example", "input", "target", "output", "right")
RIGHT_CHOICES = {"all": "all", "yes": "right", "no": "wrong"}
PREFERRED_SITES = ("encoder.hidden", "lstm.hidden")
EXAMPLES_PER_PAGE = 15
STAGES = ("run", "examples", "orders", "example")
"""Each stage of the page keeps its problem in a store `problem-<stage>`; `#message` shows the
first."""
VIEWS = ("pattern_search", "side_by_side")
"""The modules of `probes.command.view` that add a view to the page (they build on this one)."""


class RunCache:
    """`ViewedRun`s by path, made once (their caches of headers and vocabularies kept) while the
    folder is there; a folder that is missing is asked again each time. Only the run folders
    `run_paths` (those `--runs` matched) are ever read: any other path a request names is one
    `ViewError`."""

    def __init__(self, run_paths: Sequence[str], trusted_classes: Sequence[str] = ()):
        self.served = frozenset(str(path) for path in run_paths)
        self.trusted_classes = tuple(trusted_classes)
        self.runs: dict[str, ViewedRun] = {}

    def __call__(self, path: str) -> ViewedRun:
        if not isinstance(path, str) or path not in self.served:
            raise ViewError(
                f"{path!r} is not one of the run folders this page serves (those --runs "
                "matched): pick a run from the list, or serve it with --runs."
            )
        if path not in self.runs or not Path(path).is_dir():
            self.runs.pop(path, None)
            self.runs[path] = ViewedRun(path, self.trusted_classes)
        return self.runs[path]


def build_app(run_paths: Sequence[str], trusted_classes: Sequence[str] = ()) -> Dash:
    """The Dash app over the run folders `run_paths` (`runs.matching_run_paths`)."""
    app = Dash(__name__, title="recurrent-probes view", update_title=None)
    views = [import_module(f"probes.command.view.{name}") for name in VIEWS]
    app.layout = layout(run_paths, views)
    runs = RunCache(run_paths, trusted_classes)
    register_callbacks(app, runs, views)
    for view in views:
        view.register_callbacks(app, runs)
    return app


def stages(views: Sequence[ModuleType]) -> list[str]:
    return [*STAGES, *(view.STAGE for view in views)]


def layout(run_paths: Sequence[str], views: Sequence[ModuleType] = ()) -> html.Div:
    """The page: its message (in sight however far the page is scrolled), the run, split and
    tag, the examples beside the example's view; the sections of `views` under the heat map or
    below."""
    stores = [dcc.Store(id=f"problem-{stage}", data="") for stage in stages(views)]
    sections = {place: [v.section(run_paths) for v in views if v.PLACE == place]
                for place in ("example", "page")}  # fmt: skip
    alert = {"color": "#b00020", "fontWeight": "bold", "margin": "0.5em 0",
             "position": "sticky", "top": 0, "zIndex": 10, "background": "white"}  # fmt: skip
    message = html.Div(id="message", role="alert", style=alert)
    columns = html.Div(
        [html.Div(examples_column(), style={"flex": "2", "minWidth": "28em"}),
         html.Div(example_column() + sections["example"],
                  style={"flex": "3", "minWidth": "30em"})],
        style={"display": "flex", "gap": "1.5em", "flexWrap": "wrap"},
    )  # fmt: skip
    return html.Div(
        [html.H3("recurrent-probes: recorded runs"), message, choosers(run_paths), columns,
         *sections["page"], *stores],
        style={"fontFamily": "sans-serif", "margin": "1em"},
    )  # fmt: skip


def choosers(run_paths: Sequence[str]) -> html.Div:
    """The run, split and recorded tag."""
    first = run_paths[0] if run_paths else None
    return html.Div(
        [labelled("run", dcc.Dropdown(id="run", options=list(run_paths), value=first,
                                      clearable=False)),
         labelled("split", dcc.Dropdown(id="split", clearable=False)),
         labelled("recorded epoch / checkpoint", dcc.Dropdown(id="tag", clearable=False))],
        style={"display": "flex", "gap": "1em"},
    )  # fmt: skip


def examples_column() -> list:
    """The filters and the list of examples (one selectable row each)."""
    filters = html.Div(
        [dcc.Input(id="filter-tokens", type="text", debounce=True,
                   placeholder="tokens contain (input, target or output)"),
         dcc.RadioItems(id="filter-right", value="all", inline=True,
                        options=[{"label": f" {text} ", "value": value}
                                 for value, text in RIGHT_CHOICES.items()]),
         html.Span(id="example-count")],
        style={"display": "flex", "gap": "1em", "alignItems": "center", "margin": "0.5em 0",
               "flexWrap": "wrap"},
    )  # fmt: skip
    examples = dash_table.DataTable(
        id="examples",
        columns=[{"name": name, "id": name} for name in EXAMPLE_COLUMNS],
        data=[],
        row_selectable="single",
        selected_rows=[],
        page_size=EXAMPLES_PER_PAGE,
        style_cell={"textAlign": "left", "fontFamily": "monospace", "padding": "2px 6px"},
        style_data_conditional=[
            {"if": {"filter_query": "{right} = no", "column_id": "right"}, "color": "#b00020"},
            {"if": {"filter_query": "{right} = yes", "column_id": "right"}, "color": "#00701a"},
        ],
    )
    return [filters, examples]


def example_column() -> list:
    """The site and order of units, the example's tokens and its heat map."""
    site = dcc.Dropdown(id="site", clearable=False)
    order = dcc.Dropdown(id="order", options=[INDEX], value=INDEX, clearable=False)
    return [
        html.Div([labelled("site", site), labelled("units ordered by", order, flex="2")],
                 style={"display": "flex", "gap": "1em"}),
        html.Pre(id="example-text", style={"margin": "0.5em 0"}),
        dcc.Graph(id="heatmap", figure=empty_figure(), config={"displaylogo": False}),
        decomposition_section(),
    ]  # fmt: skip


def register_callbacks(app: Dash, runs: RunCache, views: Sequence[ModuleType] = ()) -> None:
    app.callback(
        Output("split", "options"),
        Output("split", "value"),
        Output("problem-run", "data"),
        Input("run", "value"),
        State("split", "value"),
    )(answered(lambda path, split: run_splits(runs, path, split), [], None))
    app.callback(
        Output("tag", "options"),
        Output("tag", "value"),
        Output("site", "options"),
        Output("site", "value"),
        Output("examples", "data"),
        Output("examples", "selected_rows"),
        Output("examples", "selected_row_ids"),  # the table derives them only from clicks
        Output("example-count", "children"),
        Output("problem-examples", "data"),
        Input("run", "value"),
        Input("split", "value"),
        Input("tag", "value"),
        Input("filter-tokens", "value"),
        Input("filter-right", "value"),
        State("site", "value"),
    )(answered(lambda *chosen: split_examples(runs, *chosen), [], None, [], None, [], [], [], ""))
    app.callback(
        Output("order", "options"),
        Output("order", "value"),
        Output("problem-orders", "data"),
        Input("run", "value"),
        Input("split", "value"),
        Input("tag", "value"),
        Input("site", "value"),
        State("order", "value"),
    )(answered(lambda *chosen: site_orders(runs, *chosen), [INDEX], INDEX))
    app.callback(
        Output("heatmap", "figure"),
        Output("example-text", "children"),
        Output("problem-example", "data"),
        Input("run", "value"),
        Input("split", "value"),
        Input("tag", "value"),
        Input("site", "value"),
        Input("examples", "selected_row_ids"),  # not the list: it would be sent at each switch
        Input("order", "value"),
    )(answered(lambda *chosen: example_view(runs, *chosen), empty_figure(), ""))
    app.callback(
        Output("message", "children"),
        [Input(f"problem-{stage}", "data") for stage in stages(views)],
    )(lambda *problems: next((p for p in problems if p), ""))
    register_decomposition_callbacks(app, runs)


def run_splits(runs: RunCache, path: str | None, split: str | None) -> tuple:
    """The run's splits, the chosen one kept where the run has it."""
    if not path:
        raise ViewError(
            "No run folder to show: give run folders with --runs 'runs/paper1/*/seed=*'."
        )
    splits = runs(path).splits()
    return splits, split if split in splits else splits[0]


def split_examples(runs: RunCache, path, split, tag, tokens, right, site) -> tuple:
    """The tags of `split`, the sites and the filtered examples of the chosen tag (the chosen tag
    and site kept where the trace has them)."""
    if not path or not split:
        return [], None, [], None, [], [], [], ""
    run = runs(path)
    tags = run.tags(split)
    tag = tag if tag in tags else tags[0]
    trace = run.trace(split, tag)
    if site not in trace.sites:
        site = next((s for s in PREFERRED_SITES if s in trace.sites), trace.sites[0])
    shown, count = listed_examples(runs, path, split, tag, tokens, right)
    if run.vocabulary_problem:
        count += f"; {run.vocabulary_problem}"
    first = [0] if shown else []
    return tags, tag, trace.sites, site, shown, first, [shown[0]["id"]] if shown else [], count


def listed_examples(runs: RunCache, path, split, tag, tokens, right) -> tuple[list[dict], str]:
    """The rows the list shows under the filters (at most `MOST_EXAMPLES`), and their count: the
    one home of what the list holds, so that a callback needs the chosen run, split, tag and
    filters, never the list itself (which would be sent to the server at each call)."""
    rows = runs(path).examples(split, tag)
    shown = [row for row in rows if matches(row, tokens, right)]
    count = f"{len(shown)} of {len(rows)} examples"
    if len(shown) > MOST_EXAMPLES:
        shown, count = shown[:MOST_EXAMPLES], f"{count} (the first {MOST_EXAMPLES} listed)"
    return shown, count


def matches(row: dict, tokens: str | None, right: str) -> bool:
    if right in ("yes", "no") and row["right"] != right:
        return False
    text = (tokens or "").strip()
    return not text or any(text in row[column] for column in ("input", "target", "output"))


def site_orders(runs: RunCache, path, split, tag, site, order) -> tuple:
    """The orders of the site's units the run offers; the chosen one kept where offered."""
    if not (path and split and tag and site):
        return [INDEX], INDEX
    names = list(runs(path).unit_orders(split, tag, site))
    return names, order if order in names else INDEX


def example_view(runs: RunCache, path, split, tag, site, selected, order) -> tuple:
    """The heat map and the text of the selected example (`selected`: its id, the table's
    `selected_row_ids`), its units in the chosen order."""
    if not (path and split and tag and site and selected):
        return empty_figure(), ""
    run = runs(path)
    rows = run.examples(split, tag)
    if not 0 <= selected[0] < len(rows):
        return no_update, no_update
    row = rows[selected[0]]
    example = run.example_site(split, tag, int(row["example"]), site)
    orders = run.unit_orders(split, tag, site)
    unit_order = orders.get(order, orders[INDEX])
    text = f"example {row['example']}   input: {row['input']}"
    if row["target"]:
        text += f"\ntarget: {row['target']}   output: {row['output']}   right: {row['right']}"
    title = f"{site}, example {row['example']} ({split}, {tag})"
    return heatmap(example, unit_order, title), text


def heatmap(example: ExampleSite, order: UnitOrder, title: str) -> go.Figure:
    """Units x time in `order` (its group marked with a dot and set off by a line), each step's
    token above it; hover: unit, step, token (and the model's output there) and value."""
    values = example.values.T[order.units].float().numpy()  # [units, time], in `order`
    units, steps = values.shape
    if example.outputs:
        pairs = zip(example.tokens, example.outputs, strict=True)
        example_steps = [f"{token} -> {output}" for token, output in pairs]
    else:
        example_steps = example.tokens
    # Hover without a string per cell (a 512-unit example's would be a megabyte to send and
    # parse at every switch): the unit from a small integer array, the step and its text from
    # the x axis, whose categories are the steps' labels (the tokens are its tick labels).
    step_labels = [f"step {step} ({text})" for step, text in enumerate(example_steps)]
    ids = numpy.asarray(order.units)
    small = numpy.int16 if ids.size == 0 or ids.max() < 2**15 else numpy.int32
    unit_ids = numpy.repeat(ids.astype(small)[:, None], steps, axis=1)  # [units, time]
    gate_like = values.size and values.min() >= 0 and values.max() <= 1
    figure = go.Figure(
        go.Heatmap(
            z=values,
            x=step_labels,
            y=list(range(units)),
            customdata=unit_ids,
            colorscale="Viridis" if gate_like else "RdBu_r",
            zmid=None if gate_like else 0,
            zmin=0 if gate_like else None,
            zmax=1 if gate_like else None,
            hovertemplate="unit %{customdata}, %{x}<br>value %{z:.4f}<extra></extra>",
        )
    )
    figure.update_xaxes(side="top", type="category", tickmode="array", tickvals=step_labels,
                        ticktext=example.tokens, title_text="step (token)")  # fmt: skip
    every = max(1, units // 40)
    shown = sorted(set(range(order.marked)) | set(range(0, units, every)))
    labels = [f"● {order.units[i]}" if i < order.marked else str(order.units[i]) for i in shown]
    figure.update_yaxes(autorange="reversed", title_text="unit", tickmode="array",
                        tickvals=shown, ticktext=labels)  # fmt: skip
    if 0 < order.marked < units:
        figure.add_hline(y=order.marked - 0.5, line_color="black", line_width=2)
    height = 130 + min(max(14 * units, 200), 900)
    figure.update_layout(title_text=title, title_y=0.02, title_yanchor="bottom", height=height,
                         margin={"t": 80, "b": 50})  # fmt: skip
    return figure


def empty_figure() -> go.Figure:
    figure = go.Figure()
    figure.update_layout(xaxis_visible=False, yaxis_visible=False, height=320,
                         plot_bgcolor="white", paper_bgcolor="white")  # fmt: skip
    return figure
