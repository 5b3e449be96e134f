"""The `contextual_decomposition` cell: paper 2's method on a seq2seq model's analysed rows
(`targets.Rows`). Each row's logit of its analysed token at its output step T (decoder step
T - 1, the decoder fed its greedy outputs as traced) is split by the suite's contextual
decomposition (`probes.contextual_decomposition.decompose_seq2seq`) into beta, the part the
row's determining phrase (`questions.COUNTERPARTS`) contributes, and gamma, the rest (every
bias, the decoder's own inputs and the rest of the source); the cell is the mean over the rows
of beta / (|beta| + |gamma|) (0 for a row where both are 0).

The determining phrase, as source positions (`PHRASES`):

- token positioning: the signal pair (token, <pos=T>), which the datamodule appends to the end of
  the source line (the analysed signal is the last pair: `signal_token[:, -1]`);
- lookup tables: the input bits and the tables applied up to the output at T, i.e. the source
  positions the attention targets of decoder steps 0 .. T - 1 point at (the bits at step 0, each
  table at the step that applies it; the final string's T applies every table);
- SCAN: the command word the last action comes from, as its table index (its verb, or its
  direction for a turn): the one source position `action_source` names for step T - 1
  (`targets.scan_batch`);
- rule corpus: alpha, for omega (paper 2's `open` phrase, `targets.alpha_phrase`). A language
  model's omega logit is its prediction at the last conduit token, decomposed from a zero state
  by paper 2's own CD (`probes.contextual_decomposition.decompose_language_model`, the CD its
  reproduction reads, the output bias in gamma).

beta + gamma must give the model's own logits (relative error, `TOLERANCE`); a decomposition that
does not is a bug and stops the measurement. A model CD cannot follow (`refused_seq2seq`: paper
3's bidirectional and first-last encoders) gets the cell explained instead of measured
(`does_not_apply`), which the report counts as a cell the method does not apply to.
"""

from __future__ import annotations

import torch
from torch import Tensor

from datamodules.token_positioning import SPECIALS
from experiments.atlas.targets import RULE_CORPUS, Rows, alpha_phrase, omega_steps
from lightning_modules.sequences import SOS
from probes.contextual_decomposition import (
    DecomposedLogits,
    Decomposition,
    decompose_language_model,
    decompose_seq2seq,
    refused_seq2seq,
)
from probes.neuron_functions import Traced

TOLERANCE = 1e-4
"""The largest relative error of beta + gamma against the model's own logits (paper 2's
`approximation_error`: over the vocabulary at each analysed row's step T - 1)."""


def signal_pair(traced: Traced) -> Tensor:
    """`[rows, source time]`: token positioning's determining phrase, the analysed signal pair
    (token, <pos=T>): the last two source positions, checked to hold the row's token and T's
    position token (the vocabulary's `<pos=T>` follows its specials)."""
    source, lengths = traced.batch["source"], traced.batch["source_lengths"]
    rows = torch.arange(len(lengths))
    token, position = source[rows, lengths - 2], source[rows, lengths - 1]
    expected = len(SPECIALS) + traced.position - 1
    if not (torch.equal(token, traced.token) and torch.equal(position, expected)):
        row = int(torch.nonzero((token != traced.token) | (position != expected))[0])
        raise ValueError(f"token positioning row {row} does not end in its signal pair "
                         f"(token {int(traced.token[row])}, <pos={int(traced.position[row])}>): "
                         "analyse rows of TokenPositioningDataModule.requested_rows")  # fmt: skip
    time = torch.arange(source.shape[1])[None]
    return (time >= (lengths - 2)[:, None]) & (time < lengths[:, None])


def applied_tables(traced: Traced) -> Tensor:
    """`[rows, source time]`: lookup tables' determining phrase, the input bits and the tables
    applied up to the output at T: the source positions attended by decoder steps 0 .. T - 1."""
    attention = traced.batch["attention_target"]
    steps = torch.arange(attention.shape[1])[None]
    before = (steps < traced.position[:, None]) & (attention >= 0)
    phrase = torch.zeros_like(traced.batch["source"], dtype=torch.bool)
    rows = torch.arange(len(attention))[:, None].expand_as(attention)
    phrase[rows[before], attention[before]] = True
    if not torch.equal(phrase.sum(1), traced.position):
        raise ValueError("lookup-table rows need an attention target for each step up to T: "
                         "analyse rows of targets.lookup_table_batch")  # fmt: skip
    return phrase


def command_word(traced: Traced) -> Tensor:
    """`[rows, source time]`: SCAN's determining phrase, the command word the last action comes
    from (its verb, or its direction for a turn: `targets.action_words`), at the source position
    the row's `action_source` names for its step T - 1."""
    sources = traced.batch.get("action_source")
    if sources is None:
        raise ValueError("SCAN rows need the source word of each action (action_source): "
                         "analyse rows of targets.scan_batch")  # fmt: skip
    rows = torch.arange(len(sources))
    at = sources[rows, traced.position - 1]
    if bool((at < 0).any()):
        raise ValueError("a SCAN row has no source word for its last action: analyse rows of "
                         "targets.scan_batch")  # fmt: skip
    phrase = torch.zeros_like(traced.batch["source"], dtype=torch.bool)
    phrase[rows, at] = True
    return phrase


PHRASES = {"token positioning": signal_pair, "lookup tables": applied_tables,
           "SCAN": command_word, RULE_CORPUS: alpha_phrase}  # fmt: skip
"""Each wired task's determining phrase of its analysed rows (`questions.COUNTERPARTS`)."""


@torch.no_grad()
def analysed_parts(model, traced: Traced, phrases: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Each row's logit of its analysed token at its step T - 1 split by CD with `phrases`
    `[rows, source time]` as the phrase: beta and gamma `[rows]`, and the relative error of
    beta + gamma over the vocabulary there against the model's own logits (fed the same greedy
    outputs; `DecomposedLogits.approximation_error`) `[rows]`. Rows are decomposed by source
    length, each group cut to its length."""
    source, lengths = traced.batch["source"], traced.batch["source_lengths"]
    beta, gamma, error = (torch.zeros(len(lengths)) for _ in range(3))
    for length in torch.unique(lengths).tolist():
        rows = torch.nonzero(lengths == length).flatten()
        steps = int(traced.position[rows].max())
        outputs = traced.outputs[rows, :steps]
        fed = torch.cat([outputs.new_full((len(rows), 1), SOS), outputs[:, :-1]], 1)
        cut = source[rows, :length]
        states = decompose_seq2seq(model, cut, fed, phrases[rows, :length])
        at = (torch.arange(len(rows)), traced.position[rows] - 1)
        relevant, irrelevant = Decomposition(states.relevant[at], states.irrelevant[at]).logits(
            model.output
        )
        full = model(cut, lengths[rows], target=outputs, steps=steps, teacher_forcing_ratio=1.0)
        token = traced.token[rows, None]
        beta[rows], gamma[rows] = relevant.gather(1, token)[:, 0], irrelevant.gather(1, token)[:, 0]
        error[rows] = DecomposedLogits(relevant, irrelevant, full[0][at]).approximation_error()
    return beta, gamma, error


@torch.no_grad()
def language_model_parts(model, traced: Traced, phrases: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """`analysed_parts` of a language model's rule rows (`targets.rule_corpus_rows`): omega's
    logit where the model predicts it (the step of the last conduit token, alpha's step + T - 1)
    split by paper 2's CD from a zero state with `phrases` `[rows, time]` as the phrase, rows
    decomposed by that step."""
    tokens = traced.batch["input"]
    steps = omega_steps(traced)
    beta, gamma, error = (torch.zeros(len(tokens)) for _ in range(3))
    for step in torch.unique(steps).tolist():
        rows = torch.nonzero(steps == step).flatten()
        parts = decompose_language_model(model, tokens[rows], phrases[rows], steps=[step])
        token = traced.token[rows, None]
        beta[rows] = parts.relevant[:, 0].gather(1, token)[:, 0]
        gamma[rows] = parts.irrelevant[:, 0].gather(1, token)[:, 0]
        error[rows] = parts.approximation_error()[:, 0]
    return beta, gamma, error


def phrase_shares(model, traced: Traced, phrases: Tensor, task: str = "") -> tuple[Tensor, float]:
    """beta / (|beta| + |gamma|) of each row's analysed token at T `[rows]` (0 where both are 0),
    and the largest relative error of beta + gamma; an error above `TOLERANCE` stops here. A
    `task` of a language model (the rule corpus) is read by `language_model_parts`, any other by
    `analysed_parts`."""
    parts = language_model_parts if task == RULE_CORPUS else analysed_parts
    beta, gamma, errors = parts(model, traced, phrases)
    error = float(errors.max())
    if not error <= TOLERANCE:
        raise RuntimeError(f"contextual decomposition: beta + gamma is off the model's own logits "
                           f"by a relative {error:.2g} (more than {TOLERANCE:g}): the "
                           "decomposition does not follow this model")  # fmt: skip
    total = beta.abs() + gamma.abs()
    return torch.where(total > 0, beta / total.clamp_min(1e-30), 0.0), error


def decomposition_cell(model, rows: Rows, task: str) -> dict:
    """The `contextual_decomposition` cell of `model` on its analysed `rows` of `task`: `value`
    (the mean share over the rows), the mean per analysed token, the rows and the largest
    relative error; for a model CD cannot follow, `value` None and `does_not_apply` (why)."""
    why = None if task == RULE_CORPUS else refused_seq2seq(model.hparams)
    if why:
        return {"value": None, "does_not_apply": f"contextual decomposition cannot follow the "
                f"model: {why}"}  # fmt: skip
    traced = rows.traced
    if not len(traced.token):
        return {"value": None, "why": "no analysed rows"}
    if task not in PHRASES:
        raise ValueError(f"the determining phrase of {task!r} rows is not built yet "
                         f"(built: {', '.join(PHRASES)})")  # fmt: skip
    shares, error = phrase_shares(model, traced, PHRASES[task](traced), task)
    tokens = {rows.names[token]: float(shares[traced.token == token].mean())
              for token in rows.tokens if bool((traced.token == token).any())}  # fmt: skip
    return {"value": float(shares.mean()), "rows": len(shares), "error": error, "tokens": tokens}
