"""The tiny lookup-table run the run-folder tests fit: paper 1's GRU seq2seq with 4-wide
embeddings and 8 units, two epochs of 6 batches, seed 3, with every recording callback."""

import contextlib
from collections.abc import Iterator
from pathlib import Path

import torch
import yaml

from experiments.cli import ExperimentCLI
from storage.files import load_checkpoint

TINY = {
    "seed_everything": 3,
    "run": {"paper": "paper1", "variant": "tiny"},
    "trainer": {
        "max_epochs": 2,
        "limit_train_batches": 6,
        "deterministic": True,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "callbacks": [
            {"class_path": "lightning_modules.callbacks.SelectionScore"},
            {"class_path": "pytorch_lightning.callbacks.ModelCheckpoint",
             "init_args": {"monitor": "val/selection", "mode": "max", "filename": "best"}},
            {"class_path": "pytorch_lightning.callbacks.ModelCheckpoint",
             "init_args": {"filename": "last", "enable_version_counter": False}},
            {"class_path": "lightning_modules.callbacks.TraceRecorder",
             "init_args": {"splits": ["validation", "new_compositions"], "every_n_epochs": 1}},
            {"class_path": "lightning_modules.callbacks.WeightSnapshot",
             "init_args": {"every_n_epochs": 1}},
        ],
    },
    "model": {"embedding_size": 4, "hidden_size": 8, "attention_guidance_weight": 1.0},
    "data": {"class_path": "datamodules.LookupTableDataModule",
             "init_args": {"batch_size": 4, "source_eos": False, "target_eos": False}},
}  # fmt: skip


@contextlib.contextmanager
def torch_settings_kept() -> Iterator[None]:
    """What a fit sets for the whole process (torch's deterministic algorithms, its thread
    count) set back on leaving, so that the tests after an in-process fit run as they would
    alone."""
    deterministic = (torch.are_deterministic_algorithms_enabled(),
                     torch.is_deterministic_algorithms_warn_only_enabled())  # fmt: skip
    threads = torch.get_num_threads()
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(deterministic[0], warn_only=deterministic[1])
        torch.set_num_threads(threads)


def fit(tmp_path: Path, root: str, *extra: str) -> Path:
    """Fit `TINY` under the run root `tmp_path / root`, in this process; its run folder."""
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    with torch_settings_kept():
        arguments = ["fit", "--config", str(config), "--run.root", str(tmp_path / root), *extra]
        ExperimentCLI(args=arguments)
    return tmp_path / root / "paper1" / "tiny" / "seed=3"


def weights(run: Path, name: str = "last.ckpt") -> dict[str, torch.Tensor]:
    """The state dict of one of the run's checkpoints."""
    return load_checkpoint(run / "checkpoints" / name)["state_dict"]
