"""What every part of the `python -m probes view` page shares: a problem shown as one line, a
callback guarded so that its problem is shown rather than raised, a labelled control."""

from __future__ import annotations

from collections.abc import Callable

from dash import html
from dash.exceptions import PreventUpdate

from probes.command.view.runs import ViewError
from storage.files import RunFileError
from storage.layout import RunNameError


def one_line(error: Exception) -> str:
    """The message of `error` on one line: the suite's own errors as they are, anything else with
    its kind."""
    if isinstance(error, (ViewError, RunFileError, RunNameError)):
        return str(error)
    first = str(error).splitlines()[0] if str(error) else ""
    return f"The page cannot show this ({type(error).__name__}: {first})."


def answered(function: Callable, *empty) -> Callable:
    """`function`'s outputs and no problem, or `empty` and the problem's one line."""

    def guarded(*arguments):
        try:
            return (*function(*arguments), "")
        except PreventUpdate:  # Dash's way of changing nothing, not a problem
            raise
        except Exception as error:  # shown on the page as one line, never a traceback
            return (*empty, one_line(error))

    return guarded


def labelled(label: str, component, flex: str = "1") -> html.Div:
    return html.Div([html.Label(label), component], style={"minWidth": "14em", "flex": flex})
