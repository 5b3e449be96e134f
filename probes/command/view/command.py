"""`python -m probes view --runs GLOB [--port N]`: the options, and the page served on 127.0.0.1.

Dash is an optional extra (`pip install -e '.[view]'`); without it the command is one error
naming the fix. Nothing here imports Dash, or the runs' readers, until the page is served.
"""

from __future__ import annotations

import argparse
import socket
import sys

HOST = "127.0.0.1"
DEFAULT_PORT = 8050
NAME = "view"


def add_view_parser(commands) -> None:
    """The `view` subcommand of `python -m probes` (`commands`: its subparsers)."""
    view = commands.add_parser(
        NAME,
        help="a local web page over recorded runs: examples, and every site as a heat map",
        description="Serve a web page on 127.0.0.1 over the run folders --runs matches: pick a "
        "run, split and recorded epoch or checkpoint, filter its examples, and read a site "
        "(hidden state, each gate) of an example as units x time under its tokens.",
    )
    view.add_argument(
        "--runs",
        nargs="+",
        required=True,
        metavar="GLOB",
        help="run folders, as shell globs, e.g. 'runs/paper1/*/seed=*' (quoted)",
    )
    view.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_PORT,
        help=f"port on {HOST} (default: {DEFAULT_PORT})",
    )
    view.add_argument(
        "--trust-class",
        action="append",
        default=[],
        metavar="CLASS",
        help="a class (package.module.Class) the runs' checkpoints may name besides "
        "the suite's own (their DataModule spells the tokens)",
    )


def port_number(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return int(text)


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def main(arguments: argparse.Namespace) -> int:
    """Serve the page until interrupted; bad input is one line on stderr and status 2."""
    try:
        from probes.command.view.page import build_app
        from probes.command.view.runs import matching_run_paths
    except ImportError as error:
        return refuse(
            f"the page needs Dash ({error}): install it with "
            "`.venv/bin/python -m pip install -e '.[view]'` (make does)."
        )
    if not port_is_free(arguments.port):
        return refuse(f"port {arguments.port} on {HOST} is in use: give another with --port.")
    run_paths = matching_run_paths(arguments.runs)
    app = build_app(run_paths, arguments.trust_class)
    print(
        f"python -m probes view: {len(run_paths)} run folder(s) at http://{HOST}:{arguments.port}/"
        " (Ctrl+C stops)",
        flush=True,
    )
    app.run(host=HOST, port=arguments.port, debug=False)
    return 0


def refuse(message: str) -> int:
    print(f"python -m probes {NAME}: error: {message}", file=sys.stderr)
    return 2
