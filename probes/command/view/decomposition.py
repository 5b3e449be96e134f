"""Contextual decomposition (CD) in the view: how much each input token of an example, alone,
gives to one output logit at one step (no web page here; `decomposition_page.py` shows it).

For a chosen example and output step, every input token is in turn the whole phrase of CD
(`probes.contextual_decomposition`), all of them in one batch: the token's relevance to a logit is
the phrase's part beta of that logit, and beta + gamma (the rest's part, the output bias
included) is the model's own logit up to rounding, for every token (`StepRelevance.error`).

The decompositions the suite has, and so the models the view reaches (`model_path`):

- a language model, embedding -> unidirectional GRU or LSTM (stack) -> linear output, whose logits
  at step t read the tokens 0..t: the suite's `LanguageModel` (paper 2), and a model of one's own
  recorded with `record_run` (or trained with a checkpoint of another class) whose weights have
  that shape, found by shape and checked against the hidden states its trace recorded
  (`own_language_model`);
- the suite's `Seq2Seq` with a unidirectional encoder and a decoder started from its last state or
  from zeros, with no attention (paper 4) or pre-rnn attention (paper 1, full focus included):
  each source token the phrase, the decoder fed its own greedy outputs (as the recorded traces
  were), attention weights and full-focus gates held fixed
  (`probes.contextual_decomposition.decompose_attention_decoder`).

Any other model is one `ViewError` naming why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from torch import Tensor, nn

from lightning_modules.sequences import PAD, SOS
from probes.command.view.runs import (
    OUTPUT_KEY,
    TARGET_KEY,
    RecordedTrace,
    ViewedRun,
    ViewError,
    step_tokens_key,
    valid_mask,
)
from probes.contextual_decomposition import (
    Decomposition,
    decompose_recurrent,
    decompose_seq2seq,
    refused_seq2seq,
)
from probes.traces import valid_key
from storage.files import RunFileError
from storage.run_folder import RunFolder

LANGUAGE_MODEL = "lightning_modules.language_model.LanguageModel"
SEQ2SEQ = "lightning_modules.seq2seq.Seq2Seq"
CHECK_TOLERANCE = 1e-4
"""How close (relative) a rebuilt model's hidden states must come to the recorded ones."""
REACHES = (
    "the view decomposes language models (embedding -> GRU or LSTM -> linear output: paper 2's, "
    "or one's own recorded with record_run) and seq2seq GRUs and LSTMs (papers 1 and 4)"
)


@dataclass(frozen=True)
class StepRelevance:
    """CD of the logits at one output step, each input token alone the phrase: `relevant` and
    `irrelevant` `[tokens, vocabulary]` (row i: token i the phrase), `full` `[vocabulary]` the
    model's own logits there. Tokens after the step (a language model's) have no row."""

    relevant: Tensor
    irrelevant: Tensor
    full: Tensor

    def error(self) -> float:
        """The largest `|beta + gamma - logit|` over the rows and logits, relative to the largest
        logit."""
        if not len(self.relevant):
            return 0.0
        gap = (self.relevant + self.irrelevant - self.full).abs().max()
        return float(gap / self.full.abs().max().clamp_min(1e-12))


@dataclass(frozen=True)
class ExampleInputs:
    """What one example gives the model: its input token ids `[time]`, the number of output
    steps, and where the trace spells them (`input_key`, `output_key`)."""

    tokens: Tensor
    steps: int
    input_key: str
    output_key: str


class LanguageModelPath:
    """Embedding -> unidirectional GRU or LSTM (any number of layers) -> linear output; the logits
    at step t read tokens 0..t. `forward(tokens [1, time]) -> logits [1, time, vocabulary]` is the
    model's own (the suite's `LanguageModel`) or the three modules composed."""

    kind = "language model"

    def __init__(self, embedding: nn.Module, recurrent: nn.RNNBase, output: nn.Linear,
                 forward: Callable[[Tensor], Tensor] | None = None):  # fmt: skip
        self.embedding, self.recurrent, self.output = embedding, recurrent, output
        self.forward = forward or self.composed
        self.input_key = "batch.input"  # the suite's; a model of one's own: `own_language_model`
        self.site: str | None = None  # a model of one's own: the recorded top hidden state
        self.valid = ""  # ... and the entry marking its valid steps

    def composed(self, tokens: Tensor) -> Tensor:
        """The three modules in a row (`recurrent` batch first)."""
        return self.output(self.recurrent(self.embedding(tokens))[0])

    def reads(self, step: int, tokens: int) -> int:
        """How many input tokens (from the first) the logits at `step` read."""
        return min(step + 1, tokens)

    def example(self, run: ViewedRun, trace: RecordedTrace, row: int) -> ExampleInputs:
        key = self.input_key
        if key not in trace.shapes:
            raise ViewError(f"{trace.path} holds no input tokens {key}: record the run again.")
        keys = [key] + ([self.valid] if self.valid in trace.shapes else [])
        entries = trace.read_row(keys, row)
        tokens = entries[key][0]
        if self.site:
            tokens = tokens[valid_mask(entries, self.valid, len(tokens))]
            self.check(trace, row, tokens)
        return ExampleInputs(tokens, len(tokens), key, key)

    @torch.no_grad()
    def predictions(self, example: ExampleInputs) -> Tensor:
        """The token the model predicts at each step `[steps]`."""
        return self.forward(example.tokens[None])[0].argmax(-1)

    @torch.no_grad()
    def relevance(self, tokens: Tensor, step: int) -> StepRelevance:
        read = tokens[: step + 1]
        rows = len(read)
        embedded = self.embedding(read)[None].expand(rows, -1, -1)
        phrases = torch.eye(rows, dtype=torch.bool)
        states = decompose_recurrent(self.recurrent, embedded, phrases)[-1].states
        at_step = Decomposition(states.relevant[:, step], states.irrelevant[:, step])
        relevant, irrelevant = at_step.logits(self.output)
        return StepRelevance(relevant, irrelevant, self.forward(read[None])[0, step])

    # ---- a model of one's own: found by shape, checked against its recorded hidden states ----
    def check(self, trace: RecordedTrace, row: int, tokens: Tensor) -> None:
        """The rebuilt modules give the hidden states the trace recorded for example `row`, or
        one `ViewError`: the weights are not embedding -> recurrent -> output as found."""
        recorded = trace.read_row([self.site], row)[self.site][0, : len(tokens)].double()
        if len(tokens) and int(tokens.max()) >= self.embedding.num_embeddings:
            raise ViewError(f"{trace.path}: the tokens of {self.input_key} reach id "
                            f"{int(tokens.max())}, past the embedding's "
                            f"{self.embedding.num_embeddings} rows: {REACHES}.")  # fmt: skip
        with torch.no_grad():
            rebuilt = self.recurrent(self.embedding(tokens)[None])[0][0].double()
        gap = float((rebuilt - recorded).abs().max()) if len(tokens) else 0.0
        if gap > CHECK_TOLERANCE * max(1.0, float(recorded.abs().max())):
            raise ViewError(
                f"{trace.path}: the run's weights, read as an embedding feeding "
                f"{self.site.rsplit('.', 1)[0]} on {self.input_key}, do not give its recorded "
                f"{self.site} (off by {gap:.2g}): the model does more between them, which CD "
                f"here cannot follow; {REACHES}."
            )


def own_language_model(state: dict[str, Tensor], where: str, trace: RecordedTrace):
    """A `LanguageModelPath` over the weights `state` of a model of one's own: one torch GRU or
    LSTM (`<path>.weight_ih_l0`, ...), one embedding (a `[vocabulary, inputs]` weight with no
    bias) and one linear output reading the top layer (`[outputs, hidden]`), found by shape; the
    trace names its input tokens and holds the top layer's hidden states for `check`."""
    prefixes = sorted({key[: -len(".weight_ih_l0")] for key in state
                       if key.endswith(".weight_ih_l0")})  # fmt: skip
    if len(prefixes) != 1:
        raise ViewError(f"{where} holds {len(prefixes)} recurrent modules "
                        f"({', '.join(prefixes) or 'none'}), not one: {REACHES}.")  # fmt: skip
    prefix = prefixes[0]
    if f"{prefix}.weight_ih_l0_reverse" in state or f"{prefix}.weight_hr_l0" in state:
        raise ViewError(f"{where}: {prefix} is bidirectional or projected; CD runs forward in "
                        f"time through plain layers: {REACHES}.")  # fmt: skip
    weight_hh = state[f"{prefix}.weight_hh_l0"]
    hidden = weight_hh.shape[1]
    cells = {3 * hidden: nn.GRU, 4 * hidden: nn.LSTM}
    if weight_hh.shape[0] not in cells:
        raise ViewError(f"{where}: {prefix} is neither a GRU nor an LSTM: {REACHES}.")
    layers = sum(f"{prefix}.weight_ih_l{k}" in state for k in range(len(state)))
    inputs = state[f"{prefix}.weight_ih_l0"].shape[1]
    recurrent = cells[weight_hh.shape[0]](inputs, hidden, layers, batch_first=True,
                                          bias=f"{prefix}.bias_ih_l0" in state)  # fmt: skip
    recurrent.load_state_dict({key[len(prefix) + 1 :]: value for key, value in state.items()
                               if key.startswith(f"{prefix}.")})  # fmt: skip
    others = {key[: -len(".weight")]: value for key, value in state.items()
              if key.endswith(".weight") and value.dim() == 2
              and not key.startswith(f"{prefix}.")}  # fmt: skip
    embeddings = [name for name, weight in others.items()
                  if weight.shape[1] == inputs and f"{name}.bias" not in state]  # fmt: skip
    outputs = [name for name, weight in others.items()
               if weight.shape[1] == hidden and name not in embeddings]  # fmt: skip
    if len(embeddings) != 1 or len(outputs) != 1:
        raise ViewError(
            f"{where}: found {len(embeddings)} embeddings of {inputs} features "
            f"({', '.join(embeddings) or 'none'}) and {len(outputs)} linear outputs reading "
            f"{prefix}'s {hidden} units ({', '.join(outputs) or 'none'}), not one of each: "
            f"{REACHES}."
        )
    embedding = nn.Embedding.from_pretrained(others[embeddings[0]])
    weight = others[outputs[0]]
    output = nn.Linear(weight.shape[1], weight.shape[0], bias=f"{outputs[0]}.bias" in state)
    output.load_state_dict({"weight": weight} | ({"bias": state[f"{outputs[0]}.bias"]}
                                                 if output.bias is not None else {}))  # fmt: skip
    path = LanguageModelPath(embedding, recurrent.eval(), output)
    layer = prefix if layers == 1 else f"{prefix}.l{layers - 1}"
    path.site = f"{layer}.hidden"
    if path.site not in trace.shapes:
        raise ViewError(f"{trace.path} has no {path.site} to check {where}'s weights against: "
                        f"record the run with record_run; {REACHES}.")  # fmt: skip
    path.input_key = step_tokens_key(trace, path.site) or ""
    path.valid = valid_key(path.site, trace.shapes.keys())
    if path.input_key not in trace.shapes:
        raise ViewError(f"{trace.path} holds no tokens of {path.site}'s steps: record the run "
                        "with the batches' input tokens.")  # fmt: skip
    return path


class Seq2SeqPath:
    """The suite's `Seq2Seq` (papers 1 and 4): each source token the phrase, through the encoder
    into a decoder fed its own greedy outputs; refused (one `ViewError`) where CD cannot follow."""

    kind = "seq2seq"

    def __init__(self, model: nn.Module, where: str):
        why = refused_seq2seq(model.hparams)
        if why:
            raise ViewError(f"{where}: contextual decomposition cannot follow this Seq2Seq: {why}; "
                            f"{REACHES}.")  # fmt: skip
        self.model = model

    def reads(self, step: int, tokens: int) -> int:
        return tokens  # every decoder step reads the whole source

    def example(self, run: ViewedRun, trace: RecordedTrace, row: int) -> ExampleInputs:
        keys = [k for k in ("batch.source", "batch.source_lengths", TARGET_KEY, OUTPUT_KEY)
                if k in trace.shapes]  # fmt: skip
        if "batch.source" not in keys:
            raise ViewError(f"{trace.path} holds no batch.source: record the run again.")
        entries = trace.read_row(keys, row)
        source = entries["batch.source"][0]
        if "batch.source_lengths" in entries:
            source = source[: int(entries["batch.source_lengths"][0])]
        if TARGET_KEY in entries:
            steps = int((entries[TARGET_KEY][0] != PAD).sum())
        else:
            steps = entries[OUTPUT_KEY].shape[1] if OUTPUT_KEY in entries else 1
        return ExampleInputs(source, steps, "batch.source", OUTPUT_KEY)

    @torch.no_grad()
    def logits(self, source: Tensor, steps: int) -> Tensor:
        """The model's logits `[steps, vocabulary]` under greedy decoding (as traced)."""
        return self.model(source[None], torch.tensor([len(source)]), steps=steps)[0][0]

    def predictions(self, example: ExampleInputs) -> Tensor:
        return self.logits(example.tokens, example.steps).argmax(-1)

    @torch.no_grad()
    def relevance(self, source: Tensor, step: int) -> StepRelevance:
        full = self.logits(source, step + 1)
        fed = torch.cat([source.new_tensor([SOS]), full.argmax(-1)[:-1]])  # greedy, as traced
        rows = len(source)
        states = decompose_seq2seq(
            self.model,
            source[None].expand(rows, -1),
            fed[None].expand(rows, -1),
            torch.eye(rows, dtype=torch.bool),
        )
        at_step = Decomposition(states.relevant[:, step], states.irrelevant[:, step])
        relevant, irrelevant = at_step.logits(self.model.output)
        return StepRelevance(relevant, irrelevant, full[step])


def model_path(folder: RunFolder, tag: str, trace: RecordedTrace):
    """The decomposable path through the model of `folder` at `tag`, or one `ViewError` or
    `RunFileError` naming why there is none."""
    settings = folder.settings_tag(tag)
    where = str(folder.path)
    if folder.checkpoint_path(settings).is_file():
        class_path = folder.model_class_path(tag)
        if class_path == LANGUAGE_MODEL:
            model = folder.model(tag)
            return LanguageModelPath(model.embedding, model.lstm, model.output,
                                     lambda tokens: model(tokens)[0])  # fmt: skip
        if class_path == SEQ2SEQ:
            return Seq2SeqPath(folder.model(tag), where)
        state = folder.state_dict(tag)
        where = f"{folder.weights_path(tag)} (a {class_path.rsplit('.', 1)[-1]})"
        return own_language_model(state, where, trace)
    path = folder.files.weight_snapshot(tag)
    if not path.is_file():
        raise ViewError(
            f"{folder.path} holds no weights for {tag} ({folder.checkpoint_path(settings)} or "
            f"{path}): contextual decomposition needs the model; pick a tag with weights, or "
            "record the run with record_run (which keeps them)."
        )
    try:
        state = load_file(path)
    except (SafetensorError, OSError) as error:
        raise RunFileError(f"{path} is corrupt ({error}): record the run again.") from None
    return own_language_model(state, str(path), trace)


class Decompositions:
    """The view's CD, computed on demand and kept: the path through each (run, tag)'s model
    (rebuilt once while its weights file is unchanged) and each (run, split, tag, example, step)'s
    relevances of every logit (so that picking another logit costs nothing)."""

    def __init__(self, runs: Callable[[str], ViewedRun], most: int = 256):
        self.runs = runs
        self._path = lru_cache(maxsize=8)(self._model_path)
        self._relevance = lru_cache(maxsize=most)(self._step_relevance)

    def _model_path(self, run_path: str, split: str, tag: str, stamp: tuple):
        run = self.runs(run_path)
        folder = run.folder
        for weights in (folder.checkpoint_path(folder.settings_tag(tag)), folder.weights_path(tag),
                        folder.files.weight_snapshot(tag)):  # fmt: skip
            run.inside(weights)  # only files inside the run are read
        return model_path(folder, tag, run.trace(split, tag))

    def path(self, run_path: str, split: str, tag: str):
        folder = self.runs(run_path).folder
        weights = [folder.weights_path(tag), folder.files.weight_snapshot(tag),
                   folder.trace_path(split, tag)]  # fmt: skip
        stamp = tuple(p.stat().st_mtime_ns if p.is_file() else 0 for p in weights)
        return self._path(run_path, split, tag, stamp)

    def example(self, run_path: str, split: str, tag: str, row: int) -> ExampleInputs:
        run = self.runs(run_path)
        return self.path(run_path, split, tag).example(run, run.trace(split, tag), row)

    def predictions(self, run_path: str, split: str, tag: str, row: int) -> Tensor:
        """The token the model outputs at each step of example `row` `[steps]`."""
        return self.path(run_path, split, tag).predictions(self.example(run_path, split, tag, row))

    def relevance(self, run_path: str, split: str, tag: str, row: int, step: int):
        path = self.path(run_path, split, tag)
        return self._relevance(path, run_path, split, tag, row, step)

    def _step_relevance(self, path, run_path, split, tag, row, step) -> StepRelevance:
        example = self.example(run_path, split, tag, row)
        if not 0 <= step < example.steps:
            raise ViewError(f"example {row} has output steps 0..{example.steps - 1}, not {step}: "
                            "pick one of those.")  # fmt: skip
        return path.relevance(example.tokens, step)
