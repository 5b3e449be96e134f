"""`python -m probes contextual-decomposition` and `pruning` on hand-built run folders.

- CD: a `LanguageModel` run (random weights, a small rule corpus) with two checkpoints and two
  weight snapshots; the probe's rows equal `close_probabilities` of
  `experiments/paper2/readings.py` exactly, at every tag.
- Pruning: a `Seq2Seq` run whose DataModule's targets are the model's own greedy outputs, so its
  unpruned accuracy is 1 on every split; keeping every unit leaves it at 1, keeping none gives
  the accuracy of the same weights built with every unit removed (`removed_units`), and the
  default share equals `experiments.paper1.ablations.pruned_accuracy`.
- A run of the other model class is the one-line error of `ModelProbe.check`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from datamodules import LookupTableDataModule
from experiments.paper1.ablations import pruned_accuracy
from experiments.paper2.readings import close_probabilities
from lightning_modules.language_model import LanguageModel
from lightning_modules.seq2seq import Seq2Seq
from probes.command.cli import main
from probes.interventions import sequence_accuracy
from storage.files import save_tensors_atomic
from storage.run_folder import RunFolder

CORPUS = dict(corpus_length=3000, vocabulary=30, rules=40, conduit_length=3, batch_size=4,
              bptt=7, probe_rules=12, context=5)  # fmt: skip
SIZES = dict(source_vocab_size=18, target_vocab_size=11, embedding_size=4, hidden_size=8,
             decoder_embedding_size=8, full_focus=True)  # fmt: skip
SPLITS = ["heldout_inputs", "heldout_compositions", "heldout_tables", "new_compositions"]


def probe(*arguments) -> int:
    return main([str(a) for a in arguments])


def save_checkpoint(path: Path, model, model_class: str, data: dict) -> None:
    """A checkpoint as the suite's CLI writes it: weights, model and DataModule settings."""
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = {**model.hparams, "_class_path": model_class}
    torch.save({"state_dict": model.state_dict(), "hyper_parameters": settings,
                "datamodule_hyper_parameters": data}, path)  # fmt: skip


# ---- contextual decomposition ------------------------------------------------------------------
def language_model(seed: int) -> LanguageModel:
    torch.manual_seed(seed)
    return LanguageModel(vocab_size=CORPUS["vocabulary"] + 2, embedding_size=8, hidden_size=8,
                         init_range=1.0).eval()  # fmt: skip


@pytest.fixture(scope="module")
def language_run(tmp_path_factory) -> Path:
    """Checkpoints best and last and snapshots epoch=0 and epoch=1, each of other weights."""
    run = tmp_path_factory.mktemp("paper2") / "seed=0"
    data = {"_class_path": "datamodules.RuleCorpusDataModule", **CORPUS}
    model_class = "lightning_modules.language_model.LanguageModel"
    save_checkpoint(run / "checkpoints" / "best.ckpt", language_model(1), model_class, data)
    save_checkpoint(run / "checkpoints" / "last.ckpt", language_model(2), model_class, data)
    for epoch in (0, 1):
        state = language_model(3 + epoch).state_dict()
        save_tensors_atomic(state, run / "weights" / f"epoch={epoch}.safetensors")
    return run


def test_cd_rows_equal_the_paper2_pipeline_at_every_checkpoint(language_run, tmp_path):
    assert probe("contextual-decomposition", "--runs", language_run, "--checkpoint", "all",
                 "--out", tmp_path) == 0  # fmt: skip
    table = pd.read_csv(tmp_path / "contextual-decomposition.csv")
    tags = ["best", "last", "epoch=0", "epoch=1"]
    assert list(table["checkpoint"].unique()) == tags
    phrases = ["open", "conduit", "prefix=0", "prefix=1", "prefix=2", "prefix=3"]
    expected = close_probabilities(language_run, tags)
    for tag in tags:
        rows = table[table["checkpoint"] == tag].set_index("phrase")
        assert list(rows.index) == phrases
        for phrase in phrases:
            estimate = expected[tag].phrase[phrase]
            assert rows.loc[phrase, "probability"] == estimate.mean, (tag, phrase)
            assert rows.loc[phrase, "standard_error"] == estimate.standard_error, (tag, phrase)
        assert (rows["full_probability"] == expected[tag].full.mean).all()
        assert (rows["approximation_error"] == expected[tag].error).all()
    # the weights differ per tag, and prefix=0 is the open symbol alone
    assert table.groupby("checkpoint")["full_probability"].first().nunique() == 4
    assert (table[table["phrase"] == "open"]["probability"].values
            == table[table["phrase"] == "prefix=0"]["probability"].values).all()  # fmt: skip
    # where the phrases are: alpha after 5 context tokens, 3 conduit tokens, omega after them
    rows = table[table["checkpoint"] == "best"].set_index("phrase")
    assert rows.loc["open", "positions"] == "5" and rows.loc["conduit", "positions"] == "6 7 8"
    assert rows.loc["prefix=2", "positions"] == "5 6 7" and (rows["close_position"] == 8).all()
    assert (table["instances"] == CORPUS["probe_rules"]).all()
    assert table["approximation_error"].max() < 1e-5
    assert table["epoch"].dropna().tolist() == [0] * 6 + [1] * 6
    assert (tmp_path / "figures" / "cd_over_training.png").is_file()
    assert (tmp_path / "figures" / "cd_prefixes.png").is_file()


def test_cd_phrase_choice_equals_the_pipelines_only(language_run, tmp_path, capsys):
    assert probe("contextual-decomposition", "--runs", language_run, "--checkpoint", "epoch=1",
                 "--phrases", "open", "--out", tmp_path) == 0  # fmt: skip
    table = pd.read_csv(tmp_path / "contextual-decomposition.csv")
    expected = close_probabilities(language_run, ["epoch=1"], only=["open"])["epoch=1"]
    assert table["phrase"].tolist() == ["open"]
    assert table["probability"].tolist() == [expected.phrase["open"].mean]
    assert probe("contextual-decomposition", "--runs", language_run, "--phrases", "prefix=4",
                 "--out", tmp_path) == 2  # fmt: skip
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "the run's conduits have k = 3 tokens" in error


# ---- pruning -----------------------------------------------------------------------------------
def seq2seq(seed: int, **kwargs) -> Seq2Seq:
    torch.manual_seed(seed)
    return Seq2Seq(**SIZES, **kwargs).eval()


class OwnAnswers(LookupTableDataModule):
    """Paper 1's lookup tables with each target replaced by the greedy output of
    `seq2seq(model_seed)`: that model is right on every row of every split."""

    def __init__(self, model_seed: int = 0):
        super().__init__(source_eos=False, target_eos=False)
        self.model_seed = model_seed

    def split_dataloader(self, name: str, shuffle: bool = False, batch_size: int | None = None):
        model = seq2seq(self.model_seed)
        batches = super().split_dataloader(name, shuffle, batch_size)
        return [{**batch, "target": model.trace(batch)["prediction"]} for batch in batches]


OWN_ANSWERS = f"{OwnAnswers.__module__}.OwnAnswers"
"""The test's DataModule: a user's own class, trusted with `--trust-class`."""


@pytest.fixture(scope="module")
def seq2seq_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("paper1") / "seed=1"
    data = {"_class_path": OWN_ANSWERS, "model_seed": 0}
    save_checkpoint(run / "checkpoints" / "best.ckpt", seq2seq(0),
                    "lightning_modules.seq2seq.Seq2Seq", data)  # fmt: skip
    return run


def pruning_table(run: Path, out: Path, *options) -> pd.DataFrame:
    assert probe("pruning", "--runs", run, "--out", out, "--trust-class", OWN_ANSWERS,
                 *options) == 0  # fmt: skip
    return pd.read_csv(out / "pruning.csv").set_index("split")


def test_pruning_keeping_every_unit_or_none(seq2seq_run, tmp_path):
    every = pruning_table(seq2seq_run, tmp_path / "every", "--share", "1")
    assert list(every.index) == SPLITS
    assert (every["accuracy"] == 1.0).all() and (every["pruned_accuracy"] == 1.0).all()
    assert (every["encoder_kept"] == 8).all() and (every["decoder_kept"] == 8).all()
    assert every.loc["new_compositions", "encoder_units"] == "0 1 2 3 4 5 6 7"
    none = pruning_table(seq2seq_run, tmp_path / "none", "--share", "0")
    assert (none["accuracy"] == 1.0).all() and (none["encoder_kept"] == 0).all()
    removed = seq2seq(0, removed_units={"encoder.hidden": list(range(8)),
                                        "decoder.hidden": list(range(8))})  # fmt: skip
    data = OwnAnswers()
    for split in SPLITS:
        expected = sequence_accuracy(removed, data.split_dataloader(split, batch_size=256))
        assert none.loc[split, "pruned_accuracy"] == expected, split
    assert (none["pruned_accuracy"] < 1.0).all()


def test_pruning_default_equals_the_paper1_ablation(seq2seq_run, tmp_path):
    table = pruning_table(seq2seq_run, tmp_path)
    assert (table["share"] == 0.05).all() and (table["encoder_kept"] == 1).all()  # ceil(0.4)
    for split in SPLITS:
        accuracy, kept = pruned_accuracy(RunFolder(seq2seq_run, [OWN_ANSWERS]), split)
        assert table.loc[split, "pruned_accuracy"] == accuracy, split
        assert str(table.loc[split, "encoder_units"]) == " ".join(map(str, kept["encoder.hidden"]))
        assert str(table.loc[split, "decoder_units"]) == " ".join(map(str, kept["decoder.hidden"]))
    summary = (tmp_path / "pruning.summary.md").read_text()
    assert "| group | checkpoint | split | runs | accuracy | pruned_accuracy |" in summary
    assert (tmp_path / "figures" / "pruning_accuracy.png").is_file()


# ---- bad input ---------------------------------------------------------------------------------
def test_a_run_of_the_other_model_is_one_line_naming_its_class(
    language_run, seq2seq_run, tmp_path, capsys
):  # fmt: skip
    assert probe("pruning", "--runs", language_run, "--out", tmp_path) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "Traceback" not in error
    assert (f"{language_run}/checkpoints/best.ckpt is a run of "
            "lightning_modules.language_model.LanguageModel: pruning probes runs of "
            "lightning_modules.seq2seq.Seq2Seq") in error  # fmt: skip
    assert probe("contextual-decomposition", "--runs", seq2seq_run, "--out", tmp_path) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0
    assert (f"{seq2seq_run}/checkpoints/best.ckpt is a run of lightning_modules.seq2seq.Seq2Seq"
            ": contextual-decomposition probes runs of "
            "lightning_modules.language_model.LanguageModel") in error  # fmt: skip
    assert probe("pruning", "--runs", seq2seq_run, "--share", "1.5", "--out", tmp_path) == 2
    assert "--share 1.5 is not between 0 and 1" in capsys.readouterr().err
