"""The command lines start without the libraries only their work needs: listing the probes
imports no probe, no Lightning, no scikit-learn, captum, Dash, W&B or matplotlib (the time they
take to import is measured by `make bench`; here, what is imported)."""

import json
import subprocess
import sys

HEAVY = ("pytorch_lightning", "lightning_fabric", "sklearn", "scipy", "captum", "dash", "wandb",
         "matplotlib", "torchmetrics")  # fmt: skip


def imported_by(code: str) -> set[str]:
    """The top-level packages of `HEAVY` that running `code` in a fresh interpreter imports."""
    probe = f"import sys\n{code}\nprint(__import__('json').dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=600, check=True)  # fmt: skip
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    return {name.split(".")[0] for name in modules} & set(HEAVY)


def test_listing_the_probes_imports_no_probe_and_no_heavy_library():
    code = (
        "from probes.command.cli import parser\n"
        "try:\n    parser(['--help']).parse_args(['--help'])\nexcept SystemExit:\n    pass"
    )
    assert imported_by(code) == set()


def test_a_probes_help_lists_its_own_options(capsys):
    from probes.command.cli import parser

    try:
        parser(["gate-saturation", "--help"]).parse_args(["gate-saturation", "--help"])
    except SystemExit:
        pass
    shown = capsys.readouterr().out
    assert "--gates" in shown and "--low" in shown and "--runs" in shown


def test_a_reproductions_help_imports_nothing_it_runs():
    for paper in (1, 2, 3, 4):
        code = (
            "import runpy, contextlib, io\nsys.argv = ['x', '--help']\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    try:\n"
            f"        runpy.run_module('experiments.paper{paper}', run_name='__main__')\n"
            "    except SystemExit:\n        pass"
        )
        assert imported_by(code) == set(), paper


def test_a_reproductions_bad_option_is_refused_before_anything_is_imported():
    done = subprocess.run([sys.executable, "-m", "experiments.paper3", "--scale", "huge"],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 2 and "invalid choice: 'huge'" in done.stderr
