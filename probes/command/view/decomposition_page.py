"""The page's contextual decomposition section: pick an output step and a logit (default: the
token the model predicts there) of the example shown, and read each input token coloured by its
relevance to that logit (`decomposition.py`: the logit's part from that token alone, beta),
on a diverging scale centred at 0, the values on hover (and in each token's `data-relevance`).

The section is closed until its box is ticked, so the page computes nothing for it until asked; each
(run, split, tag, example, step) is decomposed once (`Decompositions`). A model CD cannot follow
is one line in the section's own message (`#cd-message`), never a traceback.
"""

from __future__ import annotations

import torch
from dash import Dash, Input, Output, State, dcc, html
from dash.exceptions import PreventUpdate
from plotly.colors import sample_colorscale

from probes.command.view.decomposition import Decompositions
from probes.command.view.runs import ViewedRun
from probes.command.view.widgets import answered, labelled

COLOURS = "RdBu_r"
"""Plotly's diverging scale: blue below 0, near white at 0, red above."""
STAGES = ("choices", "logits", "tokens")
HIDDEN = {"display": "none"}
SHOW = "on"
EXAMPLE = Input("cd-example", "data")
"""The example decomposed, `[run, split, tag, row]`, or None while the section is closed: set by
one callback (`example_choice`), so that while the section is closed switching examples costs
the page one request more, not one per callback here."""


def decomposition_section() -> html.Div:
    """The section, closed (a box that opens it): the step and logit, the message, the coloured
    tokens and a legend."""
    stores = [dcc.Store(id=f"cd-problem-{stage}", data="") for stage in STAGES]
    stores.append(dcc.Store(id="cd-example", data=None))
    alert = {"color": "#b00020", "fontWeight": "bold", "margin": "0.5em 0"}
    controls = html.Div(
        [labelled("output step", dcc.Dropdown(id="cd-step", clearable=False)),
         labelled("logit (output token, the model's logit)",
                  dcc.Dropdown(id="cd-logit", clearable=False), flex="2")],
        style={"display": "flex", "gap": "1em"},
    )  # fmt: skip
    tokens = {"fontFamily": "monospace", "lineHeight": "2.4em", "margin": "0.5em 0"}
    show = dcc.Checklist(id="cd-show", value=[], options=[{"value": SHOW, "label":
        " contextual decomposition: each input token's relevance to one logit"}])  # fmt: skip
    body = html.Div(
        [controls, html.Div(id="cd-message", role="alert", style=alert),
         html.Div(id="cd-tokens", style=tokens), html.Div(id="cd-summary")],
        id="cd-body", style=HIDDEN,
    )  # fmt: skip
    return html.Div([show, body, *stores], id="cd-section", style={"marginTop": "1em"})


def register_decomposition_callbacks(app: Dash, runs) -> None:
    """The section's callbacks over the page's `RunCache` `runs`."""
    decompositions = Decompositions(runs)
    app.callback(Output("cd-body", "style"), Input("cd-show", "value"))(
        lambda shown: {} if shown else HIDDEN
    )
    app.callback(
        Output("cd-example", "data"),
        Input("cd-show", "value"),
        Input("run", "value"),
        Input("split", "value"),
        Input("tag", "value"),
        Input("examples", "selected_row_ids"),
        State("cd-example", "data"),
    )(example_choice)
    app.callback(
        Output("cd-step", "options"),
        Output("cd-step", "value"),
        Output("cd-problem-choices", "data"),
        EXAMPLE,
    )(answered(lambda chosen: step_choices(decompositions, chosen), [], None))
    app.callback(
        Output("cd-logit", "options"),
        Output("cd-logit", "value"),
        Output("cd-problem-logits", "data"),
        Input("cd-step", "value"),
        EXAMPLE,
    )(answered(lambda *chosen: logit_choices(decompositions, *chosen), [], None))
    app.callback(
        Output("cd-tokens", "children"),
        Output("cd-summary", "children"),
        Output("cd-problem-tokens", "data"),
        Input("cd-logit", "value"),
        Input("cd-step", "value"),
        EXAMPLE,
    )(answered(lambda *chosen: coloured_tokens(decompositions, *chosen), [], ""))
    app.callback(
        Output("cd-message", "children"),
        [Input(f"cd-problem-{stage}", "data") for stage in STAGES],
    )(lambda *problems: next((p for p in problems if p), ""))


def example_choice(shown, path, split, tag, selected, current) -> list | None:
    """`[run, split, tag, row]` of the example shown (`selected`: the table's
    `selected_row_ids`) while the section is open, else None; no update where that is what the
    page holds already."""
    chosen = None
    if shown and path and split and tag and selected:
        chosen = [path, split, tag, int(selected[0])]
    if chosen == current:
        raise PreventUpdate  # nothing new: the section's callbacks are not run
    return chosen


def step_choices(decompositions: Decompositions, chosen: list | None) -> tuple:
    """The example's output steps, each with the token the model outputs there; the last
    chosen."""
    if chosen is None:
        return [], None
    path, split, tag, row = chosen
    run: ViewedRun = decompositions.runs(path)
    inputs = decompositions.example(path, split, tag, row)
    outputs = run.spell(inputs.output_key, decompositions.predictions(path, split, tag, row))
    words = run.spell(inputs.input_key, inputs.tokens)
    language_model = decompositions.path(path, split, tag).kind == "language model"
    options = []
    for step, output in enumerate(outputs):
        after = f"after {words[step]!r} " if language_model else ""
        options.append({"label": f"{step}: {after}-> {output!r}", "value": step})
    return options, options[-1]["value"] if options else None


def logit_choices(decompositions: Decompositions, step, chosen: list | None) -> tuple:
    """Every logit at `step`, largest first (the model's logit beside each token); the predicted
    token chosen."""
    if chosen is None or step is None:
        return [], None
    path, split, tag, row = chosen
    relevance = decompositions.relevance(path, split, tag, row, step)
    key = decompositions.example(path, split, tag, row).output_key
    words = decompositions.runs(path).spell(key, torch.arange(len(relevance.full)))
    order = relevance.full.argsort(descending=True).tolist()
    options = [{"label": f"{words[i]} ({float(relevance.full[i]):+.4f})", "value": i}
               for i in order]  # fmt: skip
    return options, order[0]


def coloured_tokens(decompositions: Decompositions, logit, step, chosen: list | None) -> tuple:
    """The example's input tokens, each coloured by its relevance to `logit` at `step`, and a line
    saying what the colours are."""
    if chosen is None or step is None or logit is None:
        return [], ""
    path, split, tag, row = chosen
    run: ViewedRun = decompositions.runs(path)
    inputs = decompositions.example(path, split, tag, row)
    relevance = decompositions.relevance(path, split, tag, row, step)
    words = run.spell(inputs.input_key, inputs.tokens)
    values = relevance.relevant[:, logit].tolist()
    scale = max((abs(v) for v in values), default=0.0) or 1.0
    spans = [token_span(word, values[i] if i < len(values) else None, scale, step)
             for i, word in enumerate(words)]  # fmt: skip
    output = run.spell(inputs.output_key, torch.tensor([logit]))[0]
    summary = [
        html.Div(legend(scale)),
        html.Div(
            f" logit of {output!r} at step {step}: {float(relevance.full[logit]):+.4f} (the "
            "model's). Each token's colour is the part of it from that token alone (beta; the "
            "rest, gamma, is the logit minus beta); beta + gamma match the logit to "
            f"{relevance.error():.1e} of the largest logit."
        ),
    ]
    return spans, summary


def token_span(word: str, value: float | None, scale: float, step: int) -> html.Span:
    """One input token: its background the relevance on the diverging scale (`value / scale`
    from -1 to 1), the value on hover and in `data-relevance`; grey where it comes after the
    step (no relevance)."""
    style = {"padding": "0.2em 0.4em", "margin": "0 0.15em", "borderRadius": "3px",
             "border": "1px solid #ddd"}  # fmt: skip
    if value is None:
        return html.Span(word, className="cd-token", style={**style, "color": "#999"},
                         title=f"{word}: after step {step}, it cannot reach it")  # fmt: skip
    share = value / scale
    background = sample_colorscale(COLOURS, [0.5 + 0.5 * share])[0]
    style |= {"backgroundColor": background, "color": "white" if abs(share) > 0.6 else "black"}
    return html.Span(word, className="cd-token", style=style, title=f"{word}: {value:+.6f}",
                     **{"data-relevance": f"{value:.9g}"})  # fmt: skip


def legend(scale: float) -> html.Span:
    """The colour scale from -scale to +scale."""
    low, middle, high = sample_colorscale(COLOURS, [0.0, 0.5, 1.0])
    bar = {"display": "inline-block", "width": "10em", "height": "0.9em", "margin": "0 0.4em",
           "background": f"linear-gradient(to right, {low}, {middle}, {high})",
           "verticalAlign": "middle"}  # fmt: skip
    return html.Span([f"{-scale:+.3g}", html.Span(style=bar), f"{scale:+.3g}"], id="cd-legend")
