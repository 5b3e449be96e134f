"""A checkpoint is data: the classes it names are never imported or called unless trusted.

The malicious checkpoints here name `os.system` (with a shell command that would create a marker
file) or a module that creates the marker when imported, placed on the import path so that an
import would succeed. Every entry point that rebuilds a run from a checkpoint must refuse them
with one error naming the file, and the marker must never appear. Also: `fit --ckpt_path` with a
checkpoint of another model class or other sizes is one clear error, not a silent swap.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import yaml

from experiments.cli import main
from storage.files import RunFileError
from storage.run_folder import RunFolder
from storage.trusted_classes import UntrustedClassError, resolve_class
from tests.docs_blocks import run_module
from tests.tiny_run import TINY


@pytest.fixture()
def payload(tmp_path, monkeypatch):
    """(a folder on the import path holding `payload_module`, the marker its import or the
    shell command would create)."""
    marker = tmp_path / "marker"
    folder = tmp_path / "importable"
    folder.mkdir()
    (folder / "payload_module.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).touch()\n"
        "class Model:\n    def __init__(self, **kwargs): pass\n"
    )
    monkeypatch.syspath_prepend(str(folder))
    yield folder, marker
    sys.modules.pop("payload_module", None)


def malicious_run(folder: Path, marker: Path, model: str, data: str) -> Path:
    """A run folder whose weights-only checkpoint names `model` and `data` as its classes."""
    checkpoint = {
        "state_dict": {"encoder.weight": torch.zeros(2, 2)},
        "hyper_parameters": {"_class_path": model, "command": f"touch {marker}"},
        "datamodule_hyper_parameters": {"_class_path": data, "command": f"touch {marker}"},
    }
    (folder / "checkpoints").mkdir(parents=True)
    torch.save(checkpoint, folder / "checkpoints" / "best.ckpt")
    torch.save(checkpoint, folder / "checkpoints" / "last.ckpt")
    return folder


PAYLOADS = [
    ("os.system", "os.system"),
    ("payload_module.Model", "payload_module.Model"),
    ("lightning_modules.seq2seq.os.system", "datamodules.lookup_tables.os.system"),
    ("storage.files.os", "datamodules.LookupTableDataModule"),
]


@pytest.mark.parametrize("model,data", PAYLOADS)
def test_run_folder_imports_and_calls_nothing_a_checkpoint_names(tmp_path, payload, model, data):
    _, marker = payload
    run = RunFolder(malicious_run(tmp_path / "run", marker, model, data))
    with pytest.raises(RunFileError, match="best.ckpt"):
        run.model()
    if data != "datamodules.LookupTableDataModule":
        with pytest.raises(RunFileError, match="best.ckpt"):
            run.datamodule()
    assert run.state_dict()["encoder.weight"].shape == (2, 2)  # the data itself stays readable
    assert not marker.exists()
    assert "payload_module" not in sys.modules


def test_nested_class_paths_are_refused_before_anything_is_built(tmp_path, payload):
    _, marker = payload
    run_dir = malicious_run(tmp_path / "run", marker, "lightning_modules.seq2seq.Seq2Seq",
                            "datamodules.LookupTableDataModule")  # fmt: skip
    checkpoint = torch.load(run_dir / "checkpoints" / "best.ckpt", weights_only=True)
    checkpoint["hyper_parameters"]["attention"] = {"class_path": "payload_module.Model"}
    torch.save(checkpoint, run_dir / "checkpoints" / "best.ckpt")
    with pytest.raises(UntrustedClassError, match="payload_module.Model"):
        RunFolder(run_dir).model()
    assert not marker.exists()


def test_a_class_the_user_names_is_trusted(tmp_path, payload):
    _, marker = payload
    found = resolve_class("payload_module.Model", object, "test", trusted=["payload_module.Model"])
    assert found.__name__ == "Model" and marker.exists()  # imported because the user said so
    with pytest.raises(UntrustedClassError, match="as its LightningModule, but it is not one"):
        from pytorch_lightning import LightningModule

        resolve_class("lightning_modules.recurrent.Intervention", LightningModule, "test")


# The commands run in this process (`run_module`, as `python -m` would), the payload's folder on
# the import path: a refusal that failed would import or call the payload here.
@pytest.mark.parametrize("model,data", PAYLOADS[:2])
def test_probe_command_refuses_a_malicious_checkpoint(tmp_path, payload, model, data):
    _, marker = payload
    run = malicious_run(tmp_path / "runs" / "x" / "seed=0", marker, model, data)
    done = run_module("probes", ["pruning", "--runs", str(run), "--out", str(tmp_path / "out")],
                      tmp_path, {"WANDB_MODE": "disabled"})  # fmt: skip
    assert done.status == 2, done.output
    assert "Traceback" not in done.output and "best.ckpt" in done.output
    assert not marker.exists() and "payload_module" not in sys.modules


@pytest.mark.parametrize("model,data", PAYLOADS[:2])
def test_fit_refuses_a_malicious_ckpt_path(tmp_path, payload, model, data):
    _, marker = payload
    run = malicious_run(tmp_path / "evil", marker, model, data)
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    done = run_module("experiments", ["fit", "--config", str(config), "--run.root",
                                      str(tmp_path / "runs"), "--ckpt_path",
                                      str(run / "checkpoints" / "last.ckpt")],
                      tmp_path, {"WANDB_MODE": "disabled"})  # fmt: skip
    assert done.status == 2, done.output
    assert "Traceback" not in done.output and model in done.output
    assert not marker.exists() and "payload_module" not in sys.modules
    assert not (tmp_path / "runs").exists()  # refused before the run folder was made


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[Path, Path]:
    """(the config, the run folder) of a 1-epoch tiny lookup-table fit."""
    folder = tmp_path_factory.mktemp("tiny")
    config = folder / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    main(["fit", "--config", str(config), "--run.root", str(folder / "runs"),
          "--trainer.max_epochs", "1"])  # fmt: skip
    return config, folder / "runs" / "paper1" / "tiny" / "seed=3"


def refused(capsys, *arguments: str) -> str:
    with pytest.raises(SystemExit) as stopped:
        main(list(arguments))
    assert stopped.value.code == 2
    return capsys.readouterr().err


def test_resume_with_other_sizes_is_one_clear_error(tmp_path, tiny_run, capsys):
    config, run = tiny_run
    before = sorted((p, p.stat().st_mtime_ns) for p in run.rglob("*"))
    error = refused(capsys, "fit", "--config", str(config), "--run.root", str(run.parents[2]),
                    "--model.hidden_size", "16", "--trainer.max_epochs", "2",
                    "--ckpt_path", str(run / "checkpoints" / "last.ckpt"))  # fmt: skip
    assert "hidden_size=8 (config: 16)" in error and f"fit --resume {run}" in error
    assert sorted((p, p.stat().st_mtime_ns) for p in run.rglob("*")) == before


def test_resume_from_another_model_class_is_one_clear_error(tmp_path, tiny_run, capsys):
    config, run = tiny_run
    checkpoint = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)
    checkpoint["hyper_parameters"]["_class_path"] = "lightning_modules.language_model.LanguageModel"
    other = tmp_path / "other.ckpt"
    torch.save(checkpoint, other)
    error = refused(capsys, "fit", "--config", str(config), "--run.root", str(tmp_path),
                    "--ckpt_path", str(other))  # fmt: skip
    assert "LanguageModel" in error and "lightning_modules.seq2seq.Seq2Seq" in error
    assert "Traceback" not in error
    assert not (tmp_path / "paper1").exists()


def test_a_model_class_named_with_trust_class_is_rebuilt(tmp_path, monkeypatch):
    """A researcher's own LightningModule, named with `--trust-class`, is rebuilt with its
    weights; the same checkpoint without the flag is refused."""
    folder = tmp_path / "importable"
    folder.mkdir()
    (folder / "user_models.py").write_text(
        "import torch\nimport pytorch_lightning as pl\n"
        "class UserModel(pl.LightningModule):\n"
        "    def __init__(self, hidden_size: int):\n"
        "        super().__init__()\n        self.layer = torch.nn.Linear(2, hidden_size)\n"
    )
    monkeypatch.syspath_prepend(str(folder))
    weights = {"layer.weight": torch.arange(6.0).reshape(3, 2), "layer.bias": torch.ones(3)}
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    torch.save({"state_dict": weights,
                "hyper_parameters": {"_class_path": "user_models.UserModel", "hidden_size": 3}},
               run_dir / "checkpoints" / "best.ckpt")  # fmt: skip
    with pytest.raises(UntrustedClassError, match="--trust-class"):
        RunFolder(run_dir).model()
    from probes.command.cli import parser

    command = ["pruning", "--runs", str(run_dir), "--out", str(tmp_path),
               "--trust-class", "user_models.UserModel"]  # fmt: skip
    trusted = parser(command).parse_args(command).trust_class
    model = RunFolder(run_dir, trusted).model()
    assert torch.equal(model.layer.weight, weights["layer.weight"])
    sys.modules.pop("user_models", None)
