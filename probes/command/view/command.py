"""`python -m probes view --runs GLOB [--port N]`: the options, and the page served on 127.0.0.1
(`--port 0`: on a port the system picks, printed with the address).

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
        help=f"port on {HOST}; 0: one the system picks, printed with the address (default: "
        f"{DEFAULT_PORT})",
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
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535, or 0: any)")
    return int(text)


def bound_socket(port: int) -> socket.socket | None:
    """A listening socket on `port` of `HOST` (0: a port the system picks), or None where it is
    taken. Held from here to the serving, so nothing can take the port in between."""
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as werkzeug's own
    try:
        listening.bind((HOST, port))
    except OSError:
        listening.close()
        return None
    listening.listen()
    return listening


def main(arguments: argparse.Namespace) -> int:
    """Serve the page until interrupted; bad input is one line on stderr and status 2."""
    try:
        from werkzeug.serving import make_server  # Flask's server, as Dash's app.run uses

        from probes.command.view.page import build_app
        from probes.command.view.runs import matching_run_paths
    except ImportError as error:
        return refuse(
            f"the page needs Dash ({error}): install it with "
            "`.venv/bin/python -m pip install -e '.[view]'` (make does)."
        )
    listening = bound_socket(arguments.port)
    if listening is None:
        return refuse(f"port {arguments.port} on {HOST} is in use: give another with --port.")
    run_paths = matching_run_paths(arguments.runs)
    app = build_app(run_paths, arguments.trust_class)
    port = listening.getsockname()[1]
    server = make_server(HOST, port, app.server, threaded=True, fd=listening.fileno())
    print(
        f"python -m probes view: {len(run_paths)} run folder(s) at http://{HOST}:{port}/"
        " (Ctrl+C stops)",
        flush=True,
    )
    server.serve_forever()  # until Ctrl+C, which werkzeug's server takes as its end
    return 0


def refuse(message: str) -> int:
    print(f"python -m probes {NAME}: error: {message}", file=sys.stderr)
    return 2
