"""Each task's analysed rows, with the counterparts of the pre-registration
(`questions.COUNTERPARTS`): every row carries its analysed token and its output position T as
paper 4's rows do (`signal_token`, `signal_position`), so that paper 4's identification and every
other method read any task's rows alike, and the table index labels its decoder steps.

- token positioning (paper 4): paper 4's own rows (`probes.neuron_functions.analysed_rows`);
- lookup tables (paper 1): every split's rows; T the position of the final output string, the
  analysed token that string; the table index of a decoder step the table its attention target
  points at (paper 1, Table 2);
- SCAN (paper 3): every split's rows, each command once (SCAN's training file repeats `jump`
  1,467 times; a repeated command is the same row); T the position of the last action before
  `<eos>`, the analysed token that action; the table index of a decoder step the command word its
  action comes from (`action_words`: its verb, or its direction for a turn), the batch's
  `action_source` (the word's source position);
- rule corpus (paper 2): every split's rule instances (the training, validation and test corpora's
  and the probe rules paper 2 reads, `RuleCorpusDataModule`), each as paper 2's probe rules are
  cut: `context` tokens, alpha, the conduit (the language model reads up to the last conduit
  token, whose next-token prediction is omega); T the position of omega counted from alpha
  (conduit length + 1), the analysed token omega; steps remaining T - t with alpha at t = 0
  (`steps_until_omega`), the table index alpha's identity from alpha to the last conduit token.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

import torch
from torch import Tensor

from datamodules.machine_tasks import SPLITS as LOOKUP_SPLITS
from datamodules.rule_corpus import RuleCorpus
from datamodules.scan import CONJUNCTIONS, PRIMITIVES, TURNS, interpret
from datamodules.sequences import collate_sequences
from probes.contextual_decomposition import rule_phrases
from probes.neuron_functions import (
    ANALYSED_POSITIONS,
    ANALYSED_SPLITS,
    Traced,
    analysed_rows,
    analysed_tokens,
    trace_rows,
)

EOS = 2
"""`<eos>` in every seq2seq vocabulary of the suite (0 `<pad>`, 1 `<sos>`); outputs are above it."""
NO_LABEL = -100


@dataclass(frozen=True)
class Rows:
    """A model's analysed rows: `traced` (paper 4's `Traced`: the batch with `signal_token` and
    `signal_position`, the record of every site and the greedy outputs), `correct` `[requested
    rows]` (answered correctly at T, over every requested row), `tokens` (the analysed tokens'
    ids) and their `names`."""

    traced: Traced
    correct: Tensor
    tokens: list[int]
    names: dict[int, str]


def selected(batch: dict[str, Tensor], keep: Tensor) -> dict[str, Tensor]:
    return {key: value[keep] for key, value in batch.items()}


def final_output_batch(rows: list[dict[str, Tensor]], tokens: int, per_token: int, seed: int):
    """`rows` (encoded seq2seq rows) as one batch, each with its final output before `<eos>`
    (`signal_token`) at its position T (`signal_position`), at most `per_token` rows of each of
    the `tokens` most common final outputs (drawn with `seed`), ordered by output, then T; the
    kept rows' indices in `rows` and the outputs' ids."""
    batch = collate_sequences(rows)
    position = (batch["target"] > EOS).sum(1)
    final = batch["target"][torch.arange(len(position)), position - 1]
    counts = Counter(final.tolist())
    chosen = sorted(counts, key=lambda token: (-counts[token], token))[:tokens]
    generator, kept = random.Random(seed), []
    for token in chosen:
        rows = torch.nonzero(final == token).flatten().tolist()
        generator.shuffle(rows)
        kept += sorted(rows[:per_token], key=lambda row: (int(position[row]), row))
    batch = selected(batch, torch.tensor(kept))
    batch["signal_token"] = final[kept][:, None]
    batch["signal_position"] = position[kept][:, None]
    return batch, kept, chosen


def lookup_table_batch(datamodule, tokens: int, per_token: int, seed: int = 0):
    """Every split's lookup-table rows as one batch, each with its final output string
    (`signal_token`) at its position T (`signal_position`: 1 + the number of tables), at most
    `per_token` rows of each of the `tokens` most common final strings (drawn with `seed`),
    ordered by string, then T; and the strings' ids."""
    datamodule.setup()
    rows = [row for split in LOOKUP_SPLITS for row in datamodule.datasets[split]]
    batch, _, chosen = final_output_batch(rows, tokens, per_token, seed)
    return batch, chosen


def traced_rows(model, batch: dict[str, Tensor], chosen: list[int], vocabulary: list[str],
                correct_only: bool) -> Rows:  # fmt: skip
    """A batch of final outputs (`final_output_batch`) decoded greedily for T + 3 steps; with
    `correct_only` only the rows whose final output the model gives at T. A model without paper
    4's time is traced too, its `states` None (`probes.neuron_functions.untimed`): the cells
    that read that time say they do not apply to it (`cells.measure_model`)."""
    steps = int(batch["signal_position"].max()) + 3
    traced = trace_rows(model, batch, steps, timed_only=False)
    correct = traced.answered
    names = {token: vocabulary[token] for token in chosen}
    return Rows(traced.rows(correct) if correct_only else traced, correct, chosen, names)


def lookup_table_rows(model, datamodule, tokens: int, per_token: int, correct_only: bool) -> Rows:
    """Paper 1's task as paper 4's rows (`lookup_table_batch`), decoded greedily for T + 3
    steps; with `correct_only` only the rows whose final string the model outputs at T."""
    batch, chosen = lookup_table_batch(datamodule, tokens, per_token)
    return traced_rows(model, batch, chosen, datamodule.target_vocab, correct_only)


SCAN_SPLITS = ("train", "test")
"""SCAN's splits (`datamodules.scan.ScanDataModule`); its samples are rows of these."""


def action_words(command: str) -> list[int]:
    """The position in the SCAN `command` of the word each of its actions (in output order)
    comes from: a primitive action's verb (walk, look, run, jump), a turn's direction (left,
    right). Read from SCAN's grammar (`datamodules.scan.interpret`): each sentence of the command
    has one verb and at most one direction, and an `after` command outputs its second sentence
    first; a string outside the grammar is a ValueError.

    >>> action_words("jump twice after turn left")  # I_TURN_LEFT I_JUMP I_JUMP
    [4, 0, 0]
    """
    actions = interpret(command).split()
    words = command.split()
    joint = next((i for i, word in enumerate(words) if word in CONJUNCTIONS), None)
    spans = [(0, len(words))] if joint is None else [(0, joint), (joint + 1, len(words))]
    if joint is not None and words[joint] == "after":
        spans.reverse()
    sources, produced = [], []
    for start, end in spans:
        sentence = words[start:end]
        for action in interpret(" ".join(sentence)).split():
            meaning = TURNS if action in TURNS.values() else PRIMITIVES
            sources.append(
                start + next(i for i, w in enumerate(sentence) if meaning.get(w) == action)
            )
            produced.append(action)
    if produced != actions:  # the grammar composes sentences only by and / after
        raise ValueError(f"SCAN command {command!r}: its sentences give {produced}, the whole "
                         f"command {actions}")  # fmt: skip
    return sources


def distinct_commands(datamodule) -> tuple[list[dict[str, Tensor]], list[str]]:
    """Every split's SCAN rows (`SCAN_SPLITS`), each command once (at its first row), and their
    commands."""
    datamodule.setup()
    seen, rows, commands = set(), [], []
    for split in SCAN_SPLITS:
        pairs = datamodule.splits[split]
        for row, (command, _) in zip(datamodule.datasets[split], pairs, strict=True):
            if command not in seen:
                seen.add(command)
                rows.append(row)
                commands.append(command)
    return rows, commands


def scan_batch(datamodule, tokens: int, per_token: int, seed: int = 0):
    """Every split's SCAN commands (`distinct_commands`) as one batch, each with its last action
    (`signal_token`) at its position T (`signal_position`), at most `per_token` rows of each of
    the `tokens` most common last actions (drawn with `seed`), ordered by action, then T, with
    `action_source` `[rows, target time]` (the source position of the word each target action
    comes from, `action_words`; -1 at `<eos>` and padding); and the actions' ids."""
    rows, commands = distinct_commands(datamodule)
    batch, kept, chosen = final_output_batch(rows, tokens, per_token, seed)
    sources = torch.full(batch["target"].shape, -1)
    for row, index in enumerate(kept):
        words = action_words(commands[index])
        sources[row, : len(words)] = torch.tensor(words)
    if not torch.equal((sources >= 0).sum(1), batch["signal_position"][:, 0]):
        raise ValueError("SCAN rows whose targets are not their commands' actions: analyse rows "
                         "of datamodules.scan.ScanDataModule")  # fmt: skip
    batch["action_source"] = sources
    return batch, chosen


def scan_rows(model, datamodule, tokens: int, per_token: int, correct_only: bool) -> Rows:
    """Paper 3's task as paper 4's rows (`scan_batch`), decoded greedily for T + 3 steps; with
    `correct_only` only the rows whose last action the model outputs at T."""
    batch, chosen = scan_batch(datamodule, tokens, per_token)
    return traced_rows(model, batch, chosen, datamodule.target_vocab, correct_only)


def token_positioning_rows(model, datamodule, tokens: int, per_token: int,
                           correct_only: bool) -> Rows:  # fmt: skip
    """Paper 4's rows: its held-out pairs re-requested for its `tokens` most common tokens at
    positions 1-13, at most `per_token` rows each (`analysed_rows`)."""
    chosen = analysed_tokens(datamodule, tokens)
    traced, correct = analysed_rows(model, datamodule, chosen, ANALYSED_POSITIONS, per_token,
                                    ANALYSED_SPLITS, correct_only)  # fmt: skip
    return Rows(traced, correct, chosen, {token: datamodule.vocab[token] for token in chosen})


RULE_CORPUS = "rule corpus"
PROBE_RULES = "rules"
"""The `RuleCorpusDataModule` split of paper 2's probe rules (section 3.1); its other splits are
corpora (`RuleCorpusDataModule.corpus`)."""


def rule_instance_windows(corpus: RuleCorpus, context: int) -> Tensor:
    """`[instances, context + k + 2]`: every rule instance of `corpus` with at least `context`
    tokens before its alpha, as paper 2's probe rules are cut (`datamodules.rule_corpora.
    rule_windows`): the `context` corpus tokens before alpha, alpha, the conduit, omega."""
    k = corpus.conduit_length
    opens = corpus.open_positions[corpus.open_positions >= context]
    windows = corpus.tokens[(opens - context)[:, None] + torch.arange(context + k + 2)]
    if not (bool((windows[:, context] == corpus.open_symbol).all())
            and bool((windows[:, -1] == corpus.close_symbol).all())):  # fmt: skip
        raise ValueError(
            "a rule corpus whose open_positions do not hold alpha with omega "
            "conduit_length + 1 later: build it with datamodules.rule_corpora"
        )
    return windows


def rule_corpus_batch(datamodule, per_token: int, seed: int = 0) -> tuple[dict[str, Tensor], int]:
    """Every split's rule instances (each corpus's `rule_instance_windows` and the probe rules) as
    one batch, at most `per_token` of them (drawn with `seed`, kept in split order): `input`
    `[rows, context + k + 1]` (the window up to the last conduit token), `open_position` `[rows]`
    (alpha's step), `signal_token` `[rows, 1]` (omega) and `signal_position` `[rows, 1]` (T =
    k + 1, omega's position counted from alpha); and omega's id."""
    datamodule.setup()
    context = datamodule.hparams.context
    corpora = [datamodule.corpus(split) for split in datamodule.corpora]
    probes = [torch.cat([row["input"], row["target"][-1:]])
              for row in datamodule.datasets[PROBE_RULES]]  # fmt: skip
    windows = torch.cat([*(rule_instance_windows(c, context) for c in corpora),
                         *([torch.stack(probes)] if probes else [])])  # fmt: skip
    order = list(range(len(windows)))
    random.Random(seed).shuffle(order)
    kept = torch.tensor(sorted(order[:per_token]), dtype=torch.long)
    omega, rows = corpora[0].close_symbol, len(kept)
    batch = {
        "input": windows[kept, :-1],
        "open_position": torch.full((rows,), context),
        "signal_token": torch.full((rows, 1), omega),
        "signal_position": torch.full((rows, 1), corpora[0].conduit_length + 1),
    }
    return batch, omega


@torch.no_grad()
def trace_language_model(model, batch: dict[str, Tensor]) -> Traced:
    """A language model's rule rows (`rule_corpus_batch`) read from a zero state, as paper 4's
    `Traced`: the batch, the record of every site (`lstm.<site>` `[rows, time, units]`), the
    greedy next-token predictions from alpha on (`outputs[:, j]`: the prediction of position
    j + 1 counted from alpha, so `answered` is omega predicted at T), `states` None (the cells of
    paper 4's time read the model themselves)."""
    record: dict[str, Tensor] = {}
    logits, _ = model(batch["input"], record=record)
    opened = batch["open_position"]
    steps = batch["input"].shape[1] - int(opened.min())
    at = (opened[:, None] + torch.arange(steps)).clamp_max(batch["input"].shape[1] - 1)
    return Traced(batch, record, logits.argmax(-1).gather(1, at), None)


def rule_corpus_rows(model, datamodule, tokens: int, per_token: int, correct_only: bool) -> Rows:
    """Paper 2's task as the atlas's rows (`rule_corpus_batch`; its one analysed token, omega,
    whatever `tokens`), read by the language model from a zero state; with `correct_only` only
    the rows whose omega it predicts at T."""
    batch, omega = rule_corpus_batch(datamodule, per_token)
    traced = trace_language_model(model, batch)
    correct = traced.answered
    return Rows(traced.rows(correct) if correct_only else traced, correct, [omega],
                {omega: "omega"})  # fmt: skip


def omega_steps(traced: Traced) -> Tensor:
    """`[rows]`: each rule row's step whose next-token prediction is omega, the last conduit
    token (alpha's step + T - 1), where the cells read the language model at h_(T-1)."""
    return traced.batch["open_position"] + traced.position - 1


def rule_steps(traced: Traced) -> Tensor:
    """`[rows, time]`: the rule rows' steps from alpha to the last conduit token (the step whose
    prediction is omega), paper 4's t = 0 .. T - 1 with alpha at t = 0."""
    t = torch.arange(traced.batch["input"].shape[1])[None] - traced.batch["open_position"][:, None]
    return (t >= 0) & (t < traced.position[:, None])


def steps_until_omega(traced: Traced) -> Tensor:
    """`[rows, time]`: the rule corpus's steps remaining (`questions.COUNTERPARTS`), the steps
    until omega from alpha on: T - t at the step t counted from alpha (k + 1 at alpha, 1 at the
    last conduit token), `NO_LABEL` elsewhere."""
    t = torch.arange(traced.batch["input"].shape[1])[None] - traced.batch["open_position"][:, None]
    return torch.where(rule_steps(traced), traced.position[:, None] - t, NO_LABEL)


def alpha_phrase(traced: Traced) -> Tensor:
    """`[rows, time]`: the rule corpus's determining phrase of omega, alpha alone (paper 2's
    `open` phrase, `probes.contextual_decomposition.rule_phrases`)."""
    phrase = torch.zeros(traced.batch["input"].shape, dtype=torch.bool)
    for row, (opened, position) in enumerate(
        zip(traced.batch["open_position"].tolist(), traced.position.tolist(), strict=True)
    ):
        phrase[row, rule_phrases(opened, position - 1)["open"]] = True
    return phrase


ROWS = {
    "lookup tables": lookup_table_rows,
    "token positioning": token_positioning_rows,
    "SCAN": scan_rows,
    RULE_CORPUS: rule_corpus_rows,
}
"""The analysed rows of each wired task (`scales.WIRED_TASKS`)."""


def decoder_steps(traced: Traced) -> Tensor:
    """`[rows, decoder time]`: the decoder steps up to the one that outputs the analysed token
    (steps 0 .. T - 1)."""
    time = torch.arange(traced.record["decoder.hidden"].shape[1])
    return time[None] < traced.position[:, None]


def encoder_steps(traced: Traced) -> Tensor:
    """`[rows, source time]`: the encoder's steps within each source."""
    time = torch.arange(traced.record["encoder.hidden"].shape[1])
    return time[None] < traced.batch["source_lengths"][:, None]


POINTERS = {
    "lookup tables": ("attention_target", "source_table"),
    "SCAN": ("action_source", "source"),
}
"""The batch's keys a decoder step's table index is read from: the source position each step
points at, and what the source holds there."""


def table_index(traced: Traced, task: str) -> Tensor:
    """`[rows, decoder time]` the table index of each decoder step (`questions.COUNTERPARTS`),
    `NO_LABEL` where a step has none: lookup tables, the table the step's attention target points
    at, for steps 0 .. T - 1; SCAN, the command word (its id) the step's target action comes
    from, for steps 0 .. T - 1; token positioning, the analysed token at the step that outputs it
    (T - 1); the rule corpus, alpha's identity at every step from alpha to the last conduit token
    (`rule_steps`: the time of its rows' input)."""
    if task == RULE_CORPUS:
        alpha = traced.batch["input"].gather(1, traced.batch["open_position"][:, None])
        return torch.where(rule_steps(traced), alpha, NO_LABEL)
    steps = traced.record["decoder.hidden"].shape[1]
    labels = torch.full((len(traced.token), steps), NO_LABEL)
    if task == "token positioning":
        labels[torch.arange(len(traced.token)), traced.position - 1] = traced.token
        return labels
    pointer, table = POINTERS[task]
    attention = traced.batch[pointer][:, :steps]
    tables = traced.batch[table].gather(1, attention.clamp_min(0))
    width = attention.shape[1]
    labels[:, :width] = torch.where(attention >= 0, tables, NO_LABEL)
    return torch.where(decoder_steps(traced), labels, NO_LABEL)
