"""Paper 2's P(omega | phrase) as the authors' analysis reads it: the suite's second reading.

`nsaphra/acd`, `word_language_model/lm_synthetic_decomposition.py` (commit aa072d5), against the
text's reading (`probes.command.contextual_decomposition.rule_close_probabilities`: held-out rule
instances after 20 random tokens, each decomposed from a zero state, P(x_t = omega) read at the
last conduit token):

- one test stream (their `eval_batch_size` 1) cut into windows of `bptt` = 35 tokens; the model's
  state is carried from window to window (their `rerun_layers` updates `hidden` after each), and
  CD of a phrase in a window starts from that carried state, all of it irrelevant
  (`cd.cd_lstm(..., cell_state=hidden)`: `prev_irrel_h` = h, `start_state` = c);
- a window's rules are its `(` and `)` paired in order after their `get_rule_boundaries`
  (`window_rules`), and the phrases are the text's (`rule_phrases`);
- P is read from the logits at the step of `)` itself (`relevant_scores[stop_idx]`), which
  predict the token after `)`: one step later than the text's P(x_t = omega). Both positions are
  returned, so the report can tell the start state's effect from the position's.

Their scores are log-softmax values per rule; how the paper averaged them is not in the code, so
the caller keeps per-rule probabilities (arithmetic and geometric means both derive from them).
Only whole windows are read (their last window is shorter; at most one rule is left out).
Written by hand: no library has CD (see `probes.contextual_decomposition`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from probes.contextual_decomposition import BiasAtPhraseEnd, decompose_recurrent, rule_phrases


def window_rules(window: Sequence[int], open_symbol: int, close_symbol: int) -> list[tuple]:
    """The `(open, close)` positions of a window's rules as their `get_rule_boundaries` pairs
    them: every `(` and every `)` in order; if the first `(` comes after the first `)` the first
    `(` is dropped, and if the last `(` comes after the last `)` the last `)` is dropped (as
    written, so a rule crossing either edge of the window empties it); counts that still differ
    (their `assert`) give no rules here."""
    starts = [i for i, token in enumerate(window) if token == open_symbol]
    stops = [i for i, token in enumerate(window) if token == close_symbol]
    if not starts or not stops:
        return []
    if starts[0] > stops[0]:
        starts = starts[1:]
        if not starts:
            return []
    if starts[-1] > stops[-1]:
        stops = stops[:-1]
        if not stops:
            return []
    return list(zip(starts, stops, strict=True)) if len(starts) == len(stops) else []


@dataclass(frozen=True)
class StreamReadings:
    """Per phrase name, P(next token = omega) from the phrase's part of the logits `[rules]`,
    read at the last conduit token (`at_close`, the text's position) and at omega's own step
    (`after_close`, the authors'); the full model's at both; the largest relative approximation
    error at the read positions; how many rules were read and how many pairs were left out
    (`(` and `)` not `conduit_length + 1` apart: a broken rule)."""

    at_close: dict[str, Tensor]
    after_close: dict[str, Tensor]
    full_at_close: Tensor
    full_after_close: Tensor
    error: float
    rules: int
    broken: int


def carried_states(model: nn.Module, windows: Tensor) -> tuple[Tensor, Tensor]:
    """The model's LSTM state `(h, c)`, each `[windows, units]`, at the start of each window of
    one stream read in order from a zero state."""
    units = model.lstm.hidden_size
    hidden = cell = model.embedding.weight.new_zeros(1, 1, units)
    starts_h, starts_c = [], []
    for window in windows:
        starts_h.append(hidden[0, 0])
        starts_c.append(cell[0, 0])
        _, (hidden, cell) = nn.LSTM.forward(model.lstm, model.embedding(window[None]),
                                            (hidden, cell))  # fmt: skip
    return torch.stack(starts_h), torch.stack(starts_c)


@torch.no_grad()
def stream_close_probabilities(
    model: nn.Module,
    stream: Tensor,
    conduit_length: int,
    open_symbol: int,
    close_symbol: int,
    phrases: Sequence[str] | None = None,
    bptt: int = 35,
    max_rules: int | None = None,
    chunk: int = 1024,
    bias_at_phrase_end: BiasAtPhraseEnd = "relevant",
) -> StreamReadings:
    """The authors' reading over `stream` `[length]` of a `LanguageModel` (embedding, one LSTM
    layer, output): each of the first `max_rules` rules (None: all), each phrase of
    `rule_phrases` (or those named in `phrases`), decomposed in batches of `chunk` rows.
    `bias_at_phrase_end="irrelevant"`: their CD before their fix, the phrase's last bias product
    in the rest's part (`probes.contextual_decomposition.bias_with_phrase`). Runs in the model's
    dtype: `model.double()` reads it in float64."""
    model.eval()
    windows = stream[: len(stream) // bptt * bptt].view(-1, bptt)
    start_hidden, start_cell = carried_states(model, windows)
    rows, masks, stops, broken = [], [], [], 0
    names: list[str] = []
    for index, window in enumerate(windows.tolist()):
        for start, stop in window_rules(window, open_symbol, close_symbol):
            if stop - start != conduit_length + 1:
                broken += 1
                continue
            named = rule_phrases(start, conduit_length)
            names = [name for name in named if phrases is None or name in phrases]
            for name in names:
                mask = torch.zeros(bptt, dtype=torch.bool)
                mask[named[name]] = True
                rows.append(index)
                masks.append(mask)
                stops.append(stop)
        if max_rules is not None and len(stops) >= max_rules * max(len(names), 1):
            break
    if not rows:
        raise ValueError(
            f"no rule (open symbol {open_symbol}, close symbol {close_symbol}, "
            f"{conduit_length} tokens between) lies inside a {bptt}-token window of the stream"
        )
    if max_rules is not None:
        kept = max_rules * len(names)
        rows, masks, stops = rows[:kept], masks[:kept], stops[:kept]
    read = {"relevant": [], "irrelevant": [], "full": []}
    for begin in range(0, len(rows), chunk):
        window_of = torch.tensor(rows[begin : begin + chunk])
        tokens = windows[window_of]
        embedded = model.embedding(tokens)
        h0, c0 = start_hidden[window_of], start_cell[window_of]
        zeros = torch.zeros_like(h0)
        mask = torch.stack(masks[begin : begin + chunk])
        parts = decompose_recurrent(model.lstm, embedded, mask, [((zeros, h0), (zeros, c0))],
                                    bias_at_phrase_end)  # fmt: skip
        states = parts[-1].states
        full, _ = nn.LSTM.forward(model.lstm, embedded, (h0[None], c0[None]))
        stop = torch.tensor(stops[begin : begin + chunk])
        at = torch.stack([stop - 1, stop], 1)  # [rows, 2]: the text's and the authors' step
        pick = torch.arange(len(at))[:, None]
        read["relevant"].append(states.relevant[pick, at] @ model.output.weight.T)
        read["irrelevant"].append(model.output(states.irrelevant[pick, at]))
        read["full"].append(model.output(full[pick, at]))
    logits = {key: torch.cat(value) for key, value in read.items()}
    error = (logits["relevant"] + logits["irrelevant"] - logits["full"]).norm(dim=-1)
    error = float((error / logits["full"].norm(dim=-1)).max()) if len(rows) else 0.0
    probability = logits["relevant"].softmax(-1)[..., close_symbol].view(-1, len(names), 2)
    full = logits["full"].softmax(-1)[..., close_symbol].view(-1, len(names), 2)[:, 0]
    return StreamReadings(
        {name: probability[:, i, 0] for i, name in enumerate(names)},
        {name: probability[:, i, 1] for i, name in enumerate(names)},
        full[:, 0],
        full[:, 1],
        error,
        len(probability),
        broken,
    )
