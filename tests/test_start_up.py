"""The command lines start without the libraries only their work needs: listing the probes
imports no probe, no Lightning, no scikit-learn, captum, Dash, W&B or matplotlib (the time they
take to import is measured by `make bench`; here, what is imported)."""

import json
import subprocess
import sys

import pytest

HEAVY = ("pytorch_lightning", "lightning_fabric", "sklearn", "scipy", "captum", "dash", "wandb",
         "matplotlib", "torchmetrics")  # fmt: skip


def imported_by(code: str, heavy: tuple[str, ...] = HEAVY) -> set[str]:
    """The top-level packages of `heavy` that running `code` in a fresh interpreter imports."""
    probe = f"import sys\n{code}\nprint(__import__('json').dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=600, check=True)  # fmt: skip
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    return {name.split(".")[0] for name in modules} & set(heavy)


def test_listing_the_probes_imports_no_probe_and_no_heavy_library():
    code = (
        "from probes.command.cli import parser\n"
        "try:\n    parser(['--help']).parse_args(['--help'])\nexcept SystemExit:\n    pass"
    )
    assert imported_by(code) == set()


def test_the_run_files_floor_imports_no_lightning():
    """Writing a run's files atomically and reading its checkpoints as data (`storage.files`)
    needs torch, not Lightning: only a fit's checkpoint writer (`storage.checkpoint_io`) is
    Lightning's."""
    assert imported_by("import storage.files, storage.layout") == set()


def test_a_probes_help_lists_its_own_options(capsys):
    from probes.command.cli import parser

    try:
        parser(["gate-saturation", "--help"]).parse_args(["gate-saturation", "--help"])
    except SystemExit:
        pass
    shown = capsys.readouterr().out
    assert "--gates" in shown and "--low" in shown and "--runs" in shown


def test_a_reproductions_help_imports_nothing_it_runs():
    """Not even torch: a help's start-up is measured against `import torch`
    (`benchmarks/start_up.py`), so a study's scales import nothing that imports torch."""
    for paper in (1, 2, 3, 4):
        code = (
            "import runpy, contextlib, io\nsys.argv = ['x', '--help']\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    try:\n"
            f"        runpy.run_module('experiments.paper{paper}', run_name='__main__')\n"
            "    except SystemExit:\n        pass"
        )
        assert imported_by(code, (*HEAVY, "torch")) == set(), paper


def test_a_reproductions_bad_option_is_refused_before_anything_is_imported():
    done = subprocess.run([sys.executable, "-m", "experiments.paper3", "--scale", "huge"],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 2 and "invalid choice: 'huge'" in done.stderr


def shown_help(subcommand: str, capsys) -> str:
    """What `python -m experiments <subcommand> --help` prints."""
    from experiments.cli import ExperimentCLI

    with pytest.raises(SystemExit) as ended:
        ExperimentCLI(args=[subcommand, "--help"])
    assert ended.value.code == 0
    return capsys.readouterr().out


def test_fits_help_lists_the_options_read_before_its_config(capsys):
    """`--resume` and `--trust-class` are taken from the command line before LightningCLI parses
    it; `fit --help` still lists each, on its own line, with what it does."""
    lines = {
        line.split()[0]: line for line in shown_help("fit", capsys).splitlines() if line.strip()
    }
    assert "--resume" in lines and "--trust-class" in lines
    assert "checkpoints/last.ckpt" in lines["--resume"] and "config.yaml" in lines["--resume"]
    assert "class path" in lines["--trust-class"]
    shown = shown_help("test", capsys)
    assert "--resume" not in shown and "--trust-class CLASS" in shown
