"""Paper 2's language-model pipeline: the corpus DataModule's BPTT windows and probe rules, the
LSTM language model's carried state and trace, CD on a trained model, and the CLI run of the
paper's config."""

from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch
from torch import nn

from benchmarks.contextual_decomposition import reference_cd, reference_weights
from datamodules import RuleCorpusDataModule
from lightning_modules.language_model import LanguageModel
from lightning_modules.recurrent import Intervention
from probes.contextual_decomposition import decompose_language_model
from storage.run_folder import RunFolder
from tests.docs_blocks import Ran, run_module

CONFIG = Path(__file__).parents[1] / "experiments" / "configs" / "paper2" / "language_model.yaml"
SMALL = dict(corpus_length=3000, vocabulary=30, rules=40, conduit_length=3, batch_size=4,
             bptt=7, probe_rules=12, context=5)  # fmt: skip


def test_windows_tile_each_stream_and_targets_are_the_next_tokens():
    data = RuleCorpusDataModule(**SMALL)
    windows = list(data.split_dataloader("train"))
    assert [int(w["window"]) for w in windows] == list(range(len(windows)))
    inputs = torch.cat([w["input"] for w in windows], 1)
    targets = torch.cat([w["target"] for w in windows], 1)
    streams = data.corpus("train").tokens[: 3000 // 4 * 4].view(4, -1)
    assert torch.equal(inputs, streams[:, :-1])
    assert torch.equal(targets, streams[:, 1:])


def test_probe_rules_hold_alpha_conduit_and_omega_where_the_batch_says():
    data = RuleCorpusDataModule(**SMALL, conduit_pool=10, conduit_copies=2)
    batch = next(iter(data.split_dataloader("rules")))
    alpha, omega = data.vocab_size - 2, data.vocab_size - 1
    opened, closed = int(batch["open_position"][0]), int(batch["close_position"][0])
    assert (batch["input"][:, opened] == alpha).all()
    assert (batch["target"][:, closed] == omega).all()
    assert closed - opened == SMALL["conduit_length"]
    pool = {tuple(c) for c in data.corpus("train").conduits.tolist()}
    assert {tuple(c) for c in batch["input"][:, opened + 1 : closed + 1].tolist()} <= pool
    # held-out corpora use the training pool too
    assert torch.equal(data.corpus("validation").conduits, data.corpus("train").conduits)


def test_carried_state_makes_windows_equal_one_pass_over_the_stream():
    torch.manual_seed(0)
    model = LanguageModel(vocab_size=32, embedding_size=6, hidden_size=5).eval()
    data = RuleCorpusDataModule(**SMALL)
    windows = list(data.split_dataloader("validation"))
    with torch.no_grad():
        losses = [model._window_loss(w, "val") for w in windows]
        inputs = torch.cat([w["input"] for w in windows], 1)
        targets = torch.cat([w["target"] for w in windows], 1)
        logits, _ = model(inputs)
    whole = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none")
    per_window = whole.view(4, -1).split([w["input"].shape[1] for w in windows], 1)
    expected = torch.stack([part.mean() for part in per_window])
    torch.testing.assert_close(torch.stack(losses), expected)
    # window 0 starts again from zeros
    again = model._window_loss(windows[0], "val")
    torch.testing.assert_close(again, losses[0])


def test_trace_is_the_torch_lstm():
    torch.manual_seed(1)
    model = LanguageModel(vocab_size=32, embedding_size=6, hidden_size=5).eval()
    tokens = torch.randint(32, (3, 9))
    traced = model.trace({"input": tokens})
    hidden, _ = nn.LSTM.forward(model.lstm, model.embedding(tokens))
    torch.testing.assert_close(traced["lstm.hidden"], hidden)
    assert traced["lstm.cell"].shape == (3, 9, 5)
    assert torch.equal(traced["prediction"], model.output(hidden).argmax(-1))


def trained_model(dtype: torch.dtype) -> tuple[LanguageModel, RuleCorpusDataModule]:
    pl.seed_everything(0)
    data = RuleCorpusDataModule(**SMALL)
    model = LanguageModel(vocab_size=data.vocab_size, embedding_size=8, hidden_size=8)
    trainer = pl.Trainer(max_epochs=3, gradient_clip_val=0.25, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False)  # fmt: skip
    trainer.fit(model, data)
    return model.to(dtype).eval(), data


@pytest.mark.parametrize("dtype, bound", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_cd_parts_sum_to_the_trained_models_logits(dtype, bound):
    model, data = trained_model(dtype)
    batch = next(iter(data.split_dataloader("rules")))
    tokens = batch["input"]
    relevant = torch.zeros(tokens.shape, dtype=torch.bool)
    relevant[:, int(batch["open_position"][0])] = True
    parts = decompose_language_model(model, tokens, relevant)
    assert parts.relevant.dtype == dtype
    assert parts.approximation_error().max() < bound
    assert parts.relevant.abs().max() > 0.01  # the open symbol does contribute
    at = [int(batch["close_position"][0])]
    only_close = decompose_language_model(model, tokens, relevant, steps=at)
    torch.testing.assert_close(only_close.relevant, parts.relevant[:, at])


def test_batched_cd_equals_the_per_example_reference_loop():
    """Known answer: an independent one-sequence, one-phrase implementation in the style of
    Murdoch et al.'s code (benchmarks/contextual_decomposition.py), in float64."""
    torch.manual_seed(2)
    model = LanguageModel(vocab_size=40, embedding_size=6, hidden_size=5, init_range=1.0)
    model = model.double().eval()
    tokens = torch.randint(40, (3, 8))
    spans = [(0, 0), (2, 4), (7, 7)]
    rows = tokens.repeat_interleave(len(spans), 0)
    relevant = torch.zeros(rows.shape, dtype=torch.bool)
    for row in range(len(rows)):
        start, stop = spans[row % len(spans)]
        relevant[row, start : stop + 1] = True
    parts = decompose_language_model(model, rows, relevant, steps=[7])
    weights = reference_weights(model)
    vectors = model.embedding(rows).detach().numpy()
    for row in range(len(rows)):
        scores, rest = reference_cd(weights, vectors[row], *spans[row % len(spans)])
        torch.testing.assert_close(parts.relevant[row, 0], torch.from_numpy(scores))
        torch.testing.assert_close(parts.irrelevant[row, 0], torch.from_numpy(rest))


def cli(*args: str) -> Ran:
    """`python -m experiments <args>`, run in this process (`tests.docs_blocks.run_module`)."""
    return run_module("experiments", list(args), Path.cwd(), {})


def fit_language_model(root: Path, epochs: int, *extra: str) -> Path:
    done = cli("fit", "--config", str(CONFIG), "--run.root", str(root),
               "--trainer.max_epochs", str(epochs), "--trainer.enable_progress_bar", "false",
               "--model.embedding_size", "8", "--model.hidden_size", "8",
               *[f"--data.{k}={v}" for k, v in SMALL.items()], *extra)  # fmt: skip
    assert done.status == 0, done.output[-3000:]
    return root / "paper2" / "default" / "seed=0"


def test_the_paper2_config_fits_through_the_cli_and_records_its_run(tmp_path):
    # the fit (deterministic: true) runs in this process, which is as it was after it
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(False)
    try:
        run = fit_language_model(tmp_path, 2)
        assert not torch.are_deterministic_algorithms_enabled()
    finally:
        torch.use_deterministic_algorithms(before)
    for path in ("checkpoints/best.ckpt", "checkpoints/last.ckpt", "weights/epoch=init.safetensors",
                 "weights/epoch=1.safetensors", "metrics.csv"):  # fmt: skip
        assert (run / path).is_file(), path
    folder = RunFolder(run)
    assert isinstance(folder.model(), LanguageModel)
    assert folder.datamodule().hparams.conduit_length == SMALL["conduit_length"]
    assert "test/test/loss" in folder.metrics().columns


def test_bad_corpus_settings_are_one_clear_error(tmp_path):
    done = cli("fit", "--config", str(CONFIG), "--run.root", str(tmp_path),
               "--data.corpus_length", "50", "--data.rules", "10")  # fmt: skip
    assert done.status == 2
    assert "Traceback" not in done.output
    assert "do not fit in 50 tokens" in done.output


def test_a_resumed_fit_ends_with_the_weights_of_an_uninterrupted_one(tmp_path):
    whole = fit_language_model(tmp_path / "whole", 3)
    first = fit_language_model(tmp_path / "parts", 1)
    resumed = fit_language_model(tmp_path / "parts", 3, "--ckpt_path",
                                 str(first / "checkpoints" / "last.ckpt"))  # fmt: skip
    expected, got = RunFolder(whole).state_dict("last"), RunFolder(resumed).state_dict("last")
    for name in expected:
        assert torch.equal(expected[name], got[name]), name


def test_intervene_applies_its_edits_inside_the_block_only():
    """`with model.intervene(...)`: the edit reaches every forward inside the block (the LSTM's
    unit 3 held at zero changes the logits exactly as the same edit passed to `forward`), and
    the model is itself again after the block, even after an error."""
    torch.manual_seed(0)
    model = LanguageModel(vocab_size=11, embedding_size=6, hidden_size=8).eval()
    tokens = torch.randint(0, 11, (2, 5))
    edit = Intervention("lstm.hidden", units=[3], operation="zero")
    clean, _ = model(tokens)
    by_argument, _ = model(tokens, edits=[edit])
    record = {}
    with model.intervene([edit]):
        inside, _ = model(tokens, record=record)
    assert torch.equal(inside, by_argument) and not torch.equal(inside, clean)
    assert torch.count_nonzero(record["lstm.hidden"][..., 3]) == 0
    with pytest.raises(RuntimeError), model.intervene([edit]):
        raise RuntimeError("inside the block")
    assert torch.equal(model(tokens)[0], clean)
