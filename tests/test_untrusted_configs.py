"""A received run folder's `config.yaml` imports nothing the suite's allow-list does not name,
whatever the key, the type or the file it sits in.

jsonargparse imports a dotted string given to a callable-typed argument (`LambdaCallback`'s
hooks, `LambdaLR`'s `lr_lambda`), loads a config file that a value names (`data: other.yaml`) and
parses a string holding YAML (`data: "{class_path: ...}"`). Each case here puts `evil2`, a module
beside the run whose import creates a marker, within reach of the import path, resumes the run
(`fit --resume RUN`, and `fit --config RUN/config.yaml --ckpt_path ...`), and requires one error
line before anything is imported: no marker, no `evil2` (nor the standard library's `this`) in
`sys.modules`, and the run folder as it was.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import yaml

from experiments.cli import main
from storage import RunLayout
from storage.trusted_classes import UntrustedClassError, check_received_config
from tests.test_received_runs import refused, state, write_config

RUN = Path("paper1") / "tiny" / "seed=3"
EVIL = """\
from pathlib import Path
Path({marker!r}).touch()
from pytorch_lightning import LightningDataModule


def hook(*arguments):
    Path({marker!r} + ".hook").touch()


def lam(epoch):
    Path({marker!r} + ".hook").touch()
    return 1.0


class Evil(LightningDataModule):
    pass
"""


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A finished 2-epoch tiny run (copied per test)."""
    folder = tmp_path_factory.mktemp("untrusted")
    main(["fit", "--config", str(write_config(folder)), "--run.root", str(folder / "runs")])
    return folder / "runs" / RUN


@pytest.fixture()
def evil(tmp_path, monkeypatch) -> Path:
    """The marker `evil2` (in the working directory, on the import path) creates when imported;
    `<marker>.hook` when one of its functions is called."""
    marker = tmp_path / "marker"
    beside = tmp_path / "beside"
    beside.mkdir()
    (beside / "evil2.py").write_text(EVIL.format(marker=str(marker)))
    monkeypatch.chdir(beside)
    monkeypatch.syspath_prepend(str(beside))
    had_this = "this" in sys.modules
    yield marker
    sys.modules.pop("evil2", None)
    if not had_this:
        sys.modules.pop("this", None)


@pytest.fixture()
def received(trained, tmp_path) -> Path:
    run = tmp_path / "runs" / RUN
    shutil.copytree(trained, run, symlinks=True)
    return run


def edit_config(run: Path, edit) -> None:
    layout = RunLayout(run)
    config = yaml.safe_load(layout.config.read_text())
    edit(config)
    layout.config.write_text(yaml.safe_dump(config))


def lambda_callback(config: dict) -> None:
    config["trainer"]["callbacks"].append({
        "class_path": "pytorch_lightning.callbacks.LambdaCallback",
        "init_args": {"on_fit_start": "evil2.hook"},
    })  # fmt: skip


def lambda_lr(config: dict) -> None:
    config["lr_scheduler"] = {
        "class_path": "torch.optim.lr_scheduler.LambdaLR",
        "init_args": {"lr_lambda": "evil2.lam"},
    }


def data_file(config: dict) -> None:
    config["data"] = "data_evil.yaml"


def data_file_without_suffix(config: dict) -> None:
    config["data"] = "data_evil"


def data_as_yaml_text(config: dict) -> None:
    config["data"] = "{class_path: evil2.Evil}"


def standard_library(config: dict) -> None:
    config["trainer"]["callbacks"].append({
        "class_path": "pytorch_lightning.callbacks.LambdaCallback",
        "init_args": {"on_fit_start": "this.s.format"},
    })  # fmt: skip


CASES = {
    "callback": (lambda_callback, "evil2.hook"),
    "scheduler": (lambda_lr, "evil2.lam"),
    "config file": (data_file, "data_evil.yaml"),
    "config file without suffix": (data_file_without_suffix, "data_evil"),
    "yaml text": (data_as_yaml_text, "evil2.Evil"),
    "standard library": (standard_library, "this.s.format"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_received_config_naming_code_anywhere_imports_nothing(received, evil, capsys, case):
    edit, named = CASES[case]
    edit_config(received, edit)
    for name in ("data_evil.yaml", "data_evil"):
        (received / name).write_text("class_path: evil2.Evil\n")
    layout = RunLayout(received)
    before = state(received)
    as_the_hint_said = ["fit", "--config", str(layout.config), "--trainer.max_epochs", "3",
                        "--ckpt_path", str(layout.checkpoint("last"))]  # fmt: skip
    resume = ["fit", "--resume", str(received), "--trainer.max_epochs", "3"]
    for command in (resume, as_the_hint_said):
        error = refused(capsys, *command)
        assert repr(named) in error and str(layout.config) in error, error
    assert not evil.exists() and not Path(f"{evil}.hook").exists()
    assert "evil2" not in sys.modules and "this" not in sys.modules
    assert "The Zen of Python" not in capsys.readouterr().out
    assert state(received) == before


SAVED = {
    "trainer": {"accelerator": "auto", "callbacks": [
        {"class_path": "pytorch_lightning.callbacks.ModelCheckpoint",
         "init_args": {"monitor": "val/selection", "filename": "best", "dirpath": None}},
        {"class_path": "pytorch_lightning.callbacks.LambdaCallback",
         "init_args": {"on_fit_start": None, "on_fit_end": None}},
    ]},
    "model": {"class_path": "lightning_modules.seq2seq.Seq2Seq",
              "init_args": {"cell": "gru", "hidden_size": 8}},
    "data": {"class_path": "datamodules.LookupTableDataModule", "init_args": {"data_dir": None}},
    "run": {"root": "runs", "paper": "paper1", "variant": "tiny"},
    "optimizer": None,
    "lr_scheduler": {"class_path": "torch.optim.lr_scheduler.StepLR",
                     "init_args": {"step_size": 3}},
}  # fmt: skip
"""A saved config of the suite's shape: accepted as it is."""


def with_changed(path: tuple, value: object) -> dict:
    changed = yaml.safe_load(yaml.safe_dump(SAVED))
    place = changed
    for key in path[:-1]:
        place = place[key]
    place[path[-1]] = value
    return changed


REFUSED = {
    "a dotted string under any key": (("model", "init_args", "cell"), "evil2.hook"),
    "a dotted string where a class goes": (("data",), "datamodules.LookupTableDataModule"),
    "a dotted string in a list": (("trainer", "plugins"), ["evil2.hook"]),
    "a callable of an allowed class": (("trainer", "callbacks", 1, "init_args", "on_fit_end"),
                                       "torch.optim.SGD"),  # fmt: skip
    "a class as a callable": (("trainer", "callbacks", 1, "init_args", "on_fit_end"),
                              {"class_path": "lightning_modules.callbacks.SelectionScore"}),
    "a class section as a string": (("model",), "Seq2Seq"),
    "a callback as a string": (("trainer", "callbacks", 0), "ModelCheckpoint"),
    "a config file by its suffix": (("trainer",), "trainer.yml"),
    "a config file in init_args": (("data", "init_args"), "settings.json"),
    "yaml text naming a class": (("run", "paper"), "[{class_path: evil2.Evil}]"),
    "quoted yaml text": (("run", "paper"), "'evil2.hook'"),
    "an instantiator": (("model", "_instantiator"), "evil2.hook"),
    "a key of jsonargparse's": (("data", "__path__"), "/elsewhere"),
}  # fmt: skip


def test_a_saved_config_of_the_suite_is_accepted(tmp_path):
    check_received_config(SAVED, tmp_path / "config.yaml")
    dotted_data = with_changed(("run", "variant"), "v1.guided")
    dotted_data["trainer"]["callbacks"][0]["init_args"]["monitor"] = "val.loss"
    check_received_config(dotted_data, tmp_path / "config.yaml")


@pytest.mark.parametrize("case", REFUSED)
def test_a_config_naming_code_or_another_file_is_refused_in_one_line(tmp_path, case):
    path, value = REFUSED[case]
    with pytest.raises(UntrustedClassError) as error:
        check_received_config(with_changed(path, value), tmp_path / "config.yaml")
    message = str(error.value)
    assert "\n" not in message and str(tmp_path / "config.yaml") in message


def test_a_string_naming_a_file_beside_the_config_is_refused(tmp_path, monkeypatch):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "notes").write_text("class_path: evil2.Evil\n")
    (tmp_path / "here").write_text("class_path: evil2.Evil\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("notes", "here", "~/here", str(tmp_path / "here")):
        with pytest.raises(UntrustedClassError, match="names the file"):
            check_received_config(with_changed(("run", "paper"), name), tmp_path / "run" / "c.yaml")
    check_received_config(with_changed(("run", "root"), str(tmp_path)), tmp_path / "run" / "c.yaml")


def test_what_the_user_names_with_trust_class_is_accepted(tmp_path):
    settings = with_changed(("trainer", "callbacks", 1, "init_args", "on_fit_end"), "evil2.hook")
    with pytest.raises(UntrustedClassError, match="--trust-class evil2.hook"):
        check_received_config(settings, tmp_path / "config.yaml")
    check_received_config(settings, tmp_path / "config.yaml", trusted=["evil2.hook"])
