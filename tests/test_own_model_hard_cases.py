"""What a researcher's own model meets when the probes are attached, each against a known
answer: PyTorch's word-language-model example (`tests/client_models.ExampleRNNModel`) with tied
weights recorded into a run folder whole or not at all, its traced training step equal to the
untraced one, TorchScript and LSTM projections refused in one line each, and the commands of
docs/own_model.md run as written."""

import re
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file
from torch import nn

import probes.command.record as record
from lightning_modules.callbacks import WeightSnapshot
from probes.attach import attach
from probes.command.cli import main
from probes.command.record import record_run
from probes.contextual_decomposition import decompose_attention_decoder, decompose_recurrent
from tests.client_models import ExampleRNNModel, WordLanguageModel

EXACT = {"rtol": 1e-10, "atol": 1e-12}
DOCS = Path(__file__).resolve().parents[1] / "docs" / "own_model.md"


def tokens_of(batch: int = 3, time: int = 5, seed: int = 0) -> torch.Tensor:
    return torch.randint(40, (time, batch), generator=torch.Generator().manual_seed(seed))


def tied_model() -> ExampleRNNModel:
    torch.manual_seed(0)
    return ExampleRNNModel(tie_weights=True).eval()


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_tied_weights_are_recorded_whole_with_their_alias(tmp_path):
    model = tied_model()
    batches = [{"tokens": tokens_of(seed=seed)} for seed in (1, 2)]
    with attach(model) as attached:
        layout = record_run(tmp_path / "run", attached, batches,
                            lambda b: model(b["tokens"], model.init_hidden(3)))  # fmt: skip
    weights = load_file(layout.weight_snapshot("best"))
    assert set(weights) == set(model.state_dict())
    torch.testing.assert_close(weights["decoder.weight"], model.encoder.weight, rtol=0, atol=0)
    with safe_open(layout.weight_snapshot("best"), "pt") as handle:
        assert handle.metadata()["aliases"] == "decoder.weight=encoder.weight"
    fresh = ExampleRNNModel(tie_weights=True)
    fresh.load_state_dict(weights)  # every name there, strictly
    torch.testing.assert_close(fresh.decoder.weight, model.decoder.weight, rtol=0, atol=0)
    assert files_under(tmp_path) == ["run", "run/recorded.txt", "run/traces", "run/traces/data",
                                     "run/traces/data/best.safetensors", "run/weights",
                                     "run/weights/best.safetensors"]  # fmt: skip


def test_a_weight_snapshot_of_tied_weights_holds_both_names(tmp_path):
    model = tied_model()
    trainer = SimpleNamespace(is_global_zero=True, default_root_dir=str(tmp_path))
    WeightSnapshot()._save(trainer, model, "epoch=0")
    weights = load_file(tmp_path / "weights" / "epoch=0.safetensors")
    assert set(weights) == set(model.state_dict())
    torch.testing.assert_close(weights["decoder.weight"], weights["encoder.weight"], rtol=0, atol=0)


def failing_weights(monkeypatch):
    """`record_run` failing as it writes the weights, after the trace."""
    save = record.save_tensors_atomic

    def save_or_fail(tensors, path, metadata=None):
        if Path(path).parent.name == "weights":
            raise OSError("disk full")
        return save(tensors, path, metadata)

    monkeypatch.setattr(record, "save_tensors_atomic", save_or_fail)


def test_a_failed_recording_leaves_no_run_folder(tmp_path, monkeypatch):
    model = WordLanguageModel().eval()
    batches = [{"tokens": tokens_of()}]
    failing_weights(monkeypatch)
    with attach(model) as attached, pytest.raises(OSError, match="disk full"):
        record_run(tmp_path / "mine" / "seed=0", attached, batches, lambda b: model(b["tokens"]))
    assert files_under(tmp_path) == []


def test_a_failed_recording_into_a_run_folder_leaves_it_as_it_was(tmp_path, monkeypatch):
    model = WordLanguageModel().eval()
    batches = [{"tokens": tokens_of()}]
    with attach(model) as attached:
        record_run(tmp_path / "run", attached, batches, lambda b: model(b["tokens"]))
        before = {name: (tmp_path / "run" / name).read_bytes()
                  for name in files_under(tmp_path / "run") if "." in name}  # fmt: skip
        failing_weights(monkeypatch)
        with pytest.raises(OSError, match="disk full"):
            record_run(tmp_path / "run", attached, batches, lambda b: model(b["tokens"] * 0),
                       split="other")  # fmt: skip
    after = {name: (tmp_path / "run" / name).read_bytes()
             for name in files_under(tmp_path / "run") if "." in name}  # fmt: skip
    assert after == before
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no temporary folder left


def test_a_second_split_recorded_into_a_run_folder_joins_the_first(tmp_path):
    model = WordLanguageModel().eval()
    with attach(model) as attached:
        for split in ("train", "test"):
            record_run(tmp_path / "run", attached, [{"tokens": tokens_of()}],
                       lambda b: model(b["tokens"]), split=split)  # fmt: skip
    assert (tmp_path / "run" / "traces" / "train" / "best.safetensors").is_file()
    assert (tmp_path / "run" / "traces" / "test" / "best.safetensors").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def training_steps(model: ExampleRNNModel, batch_first: bool, steps: int = 2):
    """PyTorch's word-language-model `train()`: `steps` steps of truncated backpropagation from
    seed 3, the state carried over detached. Every step's loss and output, and the weights."""
    generator = torch.Generator().manual_seed(4)
    data = torch.randint(40, (steps * 6 + 1, 4), generator=generator)
    hidden = model.init_hidden(4)
    losses, outputs = [], []
    torch.manual_seed(3)
    for step in range(steps):
        tokens, targets = data[step * 6 : step * 6 + 6], data[step * 6 + 1 : step * 6 + 7]
        if batch_first:
            tokens, targets = tokens.T, targets.T
        hidden = tuple(h.detach() for h in hidden)
        model.zero_grad()
        output, hidden = model(tokens, hidden)
        loss = nn.functional.nll_loss(output, targets.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for parameter in model.parameters():
            parameter.data.add_(parameter.grad, alpha=-20)
        losses.append(loss.detach())
        outputs.append(output.detach())
    return torch.stack(losses), outputs, {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("batch_first", [False, True])
def test_a_traced_word_language_model_training_step_equals_the_untraced_one(batch_first):
    torch.manual_seed(2)
    model = ExampleRNNModel(batch_first=batch_first).double().train()
    start = {k: v.clone() for k, v in model.state_dict().items()}
    losses, outputs, weights = training_steps(model, batch_first)
    model.load_state_dict(start)
    with attach(model) as attached, attached.trace() as trace:
        traced_losses, traced_outputs, traced_weights = training_steps(model, batch_first)
    torch.testing.assert_close(traced_losses, losses, **EXACT)
    for traced, reference in zip(traced_outputs, outputs, strict=True):
        torch.testing.assert_close(traced, reference, **EXACT)
    for name, value in weights.items():
        torch.testing.assert_close(traced_weights[name], value, **EXACT, msg=name)
    assert trace["rnn.l1.hidden"].shape == (4, 12, 10)  # the two steps, one sequence


@pytest.mark.parametrize(
    ("module", "inputs"),
    [(nn.LSTM(3, 4, 2), torch.randn(5, 2, 3)),
     (nn.LSTM(3, 4, batch_first=True, bidirectional=True), torch.randn(2, 5, 3)),
     (nn.GRU(3, 4, 2, bidirectional=True), torch.randn(5, 2, 3)),
     (nn.GRU(3, 4), torch.randn(5, 3))],
)  # fmt: skip
def test_traced_outputs_have_torchs_layout(module, inputs):
    outputs, final = module(inputs)
    with attach(module) as attached, attached.trace():
        traced, traced_final = module(inputs)
    assert traced.stride() == outputs.stride()  # batch-first: a view of time-first memory
    for part, traced_part in zip(final if isinstance(final, tuple) else (final,),
                                 traced_final if isinstance(final, tuple) else (traced_final,),
                                 strict=True):  # fmt: skip
        assert traced_part.stride() == part.stride()
    torch.testing.assert_close(traced, outputs)


@pytest.mark.parametrize("time", [5, 1])
def test_a_trace_keeps_the_output_a_model_then_changes_in_place(time):
    torch.manual_seed(1)
    module = nn.LSTM(3, 4, 2)
    with attach(module) as attached, attached.trace() as trace:
        outputs, _ = module(torch.randn(time, 2, 3))
        expected = outputs.detach().clone()
        nn.functional.dropout(outputs, 0.5, training=True, inplace=True)
    torch.testing.assert_close(trace["lstm.l1.hidden"], expected.transpose(0, 1), rtol=0, atol=0)


class ScriptableTagger(nn.Module):
    """A model TorchScript compiles: an LSTM tagger over embedded tokens `[time, batch]`."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(40, 6)
        self.rnn = nn.LSTM(6, 8, 2)
        self.tags = nn.Linear(8, 3)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.tags(self.rnn(self.embedding(tokens))[0])


def test_scripting_an_attached_model_says_to_script_it_detached():
    model = ScriptableTagger().eval()
    tokens = tokens_of()
    attached = attach(model)
    with pytest.raises(RuntimeError, match=r"rnn is attached.*detach\(\)") as error:
        torch.jit.script(model)
    assert "\n" not in str(error.value)
    with attached.trace() as trace:  # the attachment still works
        model(tokens)
    assert trace["rnn.l1.hidden"].shape == (3, 5, 8)
    attached.detach()
    scripted = torch.jit.script(model)
    torch.testing.assert_close(scripted(tokens), model(tokens))


def test_attaching_a_scripted_model_says_to_attach_the_eager_one():
    for scripted in (torch.jit.script(ScriptableTagger()), torch.jit.script(nn.LSTM(3, 4))):
        with pytest.raises(TypeError, match=r"TorchScript.*attach the eager module") as error:
            attach(scripted)
        assert "\n" not in str(error.value)
    holder = nn.ModuleDict({"scripted": torch.jit.script(nn.GRU(3, 4)), "eager": nn.GRU(3, 4)})
    with pytest.warns(UserWarning, match=r"scripted .*TorchScript"):
        attached = attach(holder)
    assert list(attached.modules) == ["eager"]


@pytest.mark.parametrize("kind", ["recurrent", "attention decoder"])
def test_contextual_decomposition_refuses_an_lstm_projection_in_one_line(kind):
    lstm = nn.LSTM(3, 6, proj_size=2, batch_first=True)
    inputs, phrase = torch.randn(2, 4, 3), torch.zeros(2, 4, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"proj_size=2.*cannot be decomposed") as error:
        if kind == "recurrent":
            decompose_recurrent(lstm, inputs, phrase)
        else:
            decompose_attention_decoder(lstm, inputs, None, None, None)
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match=r"RNN .*cannot be decomposed"):
        decompose_recurrent(nn.RNN(3, 6, batch_first=True), inputs, phrase)


def documented_commands(text: str) -> list[list[str]]:
    """The `python -m probes` commands of the markdown `text`'s bash blocks, as arguments."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for command in block.replace("\\\n", " ").splitlines():
            words = shlex.split(command)
            if words[1:3] == ["-m", "probes"]:
                commands.append(words[3:])
    return commands


def test_the_commands_of_the_own_model_docs_run_as_written(tmp_path, monkeypatch):
    torch.manual_seed(0)
    model = WordLanguageModel().eval()
    tokens = [tokens_of(4, 6, seed) for seed in range(3)]
    batches = [{"tokens": t, "label": (t.T < 20).long()} for t in tokens]
    monkeypatch.chdir(tmp_path)
    with attach(model) as attached:
        record_run("runs/mine/seed=0", attached, batches, lambda batch: model(batch["tokens"]))
    commands = documented_commands(DOCS.read_text())
    assert [c[0] for c in commands] == ["functional-group", "gate-saturation", "connectivity"]
    for command in commands:
        assert main(command) == 0, command
