"""Sequence-to-sequence model with attention and Attentive Guidance, on the suite's recurrent core.

Paper 1 (Baan et al. 2019, section 2): a GRU encoder-decoder with MLP attention (Bahdanau et al.
2015), trained with token cross-entropy only (baseline) or with the Attentive Guidance loss of
Hupkes et al. (2019) added (section 2.3):

    L = CE(tokens) + attention_guidance_weight * (1/T) sum_t -log a_hat[t, target_position_t]

The same class serves paper 3 (SCAN, Appendix B: LSTM, bidirectional encoder, the encoder's first
and last states concatenated as the decoder's initial state, Adam with exponential learning-rate
decay; its authors' code adds Luong attention with input feeding, TensorFlow's initialisation and
a loss summed over each sequence) and paper 4 (GRU, no attention, the encoder's last state passed
to the decoder).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MeanMetric
from torchmetrics.classification import MulticlassAccuracy

from lightning_modules.attention import Attention
from lightning_modules.recurrent import (
    SITES,
    Intervenable,
    Intervention,
    recurrent_layer,
    removal_edits,
)
from lightning_modules.sequences import PAD, SOS, sequence_correct
from lightning_modules.splits import metric_key, metric_prefix
from lightning_modules.tensorflow_init import tensorflow_initialise

LOSSES = ("token_loss", "attention_loss", "loss")
"""What a step's loss is logged as: its parts (`sequence_losses`; `attention_loss` only with
attention targets) and their weighted sum, the `loss` trained on."""


def sequence_losses(
    logits: Tensor,
    attention: Tensor | None,
    batch: dict[str, Tensor],
    over_steps: Literal["mean", "sum", "per_sequence"] = "mean",
) -> dict[str, Tensor]:
    """`token_loss`: cross-entropy of `logits` `[batch, time, vocab]` against `batch["target"]`;
    `attention_loss` (when there is attention and an `attention_target`): Baan et al. section
    2.3's L_AG = 1/T sum_t -log a_hat[t, target_t], over the attention `[batch, time, source]`.

    `over_steps="mean"`: each is the mean over the non-padding decoder steps of the batch (the
    paper's 1/T). `"sum"`: each step's mean over the batch, summed over the steps, as
    i-machine-think's `machine` computes both losses (`loss.py`, the attention loss's per-step
    NLL added up over the decoder's steps); at batch size 1 that is T times the mean.
    `"per_sequence"`: each row's losses summed over its steps, averaged over the rows, as paper 3's
    TensorFlow code computes its loss (`reduce_sum(loss * mask / batch_size)`, BCDLSG efb6c20
    `s2s_model.py` lines 234-236)."""
    token = F.cross_entropy(
        logits.flatten(0, 1), batch["target"].flatten(), ignore_index=PAD, reduction="none"
    ).view(batch["target"].shape)
    losses = {"token_loss": _over_steps(token, batch["target"] != PAD, over_steps)}
    if attention is not None and "attention_target" in batch:
        targets = batch["attention_target"]
        attended = attention.clamp_min(1e-12).log().gather(-1, targets.clamp_min(0)[..., None])
        losses["attention_loss"] = _over_steps(-attended[..., 0], targets >= 0, over_steps)
    return losses


def _over_steps(losses: Tensor, valid: Tensor, over_steps: str) -> Tensor:
    """Reduce `[batch, time]` losses over the `valid` entries (see `sequence_losses`)."""
    losses = losses * valid
    if over_steps == "mean":
        return losses.sum() / valid.sum()
    if over_steps == "per_sequence":
        return losses.sum() / losses.shape[0]
    return (losses.sum(0) / valid.sum(0).clamp_min(1)).sum()


class Seq2Seq(Intervenable, pl.LightningModule):
    """Encoder-decoder with optional attention and attentive-guidance loss.

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (linked from the DataModule).
        cell: recurrent cell of encoder and decoder.
        embedding_size, hidden_size: sizes of the embeddings and of each encoder direction.
        attention: `none`, `dot`, `general` or `mlp` (`lightning_modules.attention.Attention`).
        attention_placement: `pre_rnn` attends with the previous decoder state and feeds the
            context into the decoder step with the input embedding (i-machine-think's `pre-rnn`,
            which paper 1 used); `post_rnn` attends with the new state and feeds
            `[state; context]` to the output layer; `input_feeding` attends with the new state,
            the output layer reads Luong et al.'s (2015) attentional vector
            `a_t = W_c [state; context]` (decoder-sized) and the next step's input is
            `[embedding; a_t]` (`a` starts at 0): TensorFlow's `AttentionWrapper` with
            `attention_layer_size` the decoder size, as paper 3's code uses it (BCDLSG efb6c20
            `s2s_model.py` lines 169-171), so W_c has no bias and no tanh.
        full_focus: with `pre_rnn`, the decoder input is `context * relu(W [context; embedding])`
            instead of `[embedding; context]` (i-machine-think's `--full_focus`, used for both
            models of paper 1); needs `decoder_embedding_size` equal to the decoder size.
        decoder_embedding_size: size of the decoder's embedding (None: `embedding_size`);
            i-machine-think gives the decoder embeddings of the hidden size.
        init_range: if set, every parameter starts uniform in [-init_range, init_range]
            (i-machine-think: 0.08); else torch's defaults, or `init`'s.
        init: `torch` (its defaults) or `tensorflow`: TensorFlow 1's, which paper 3's code got
            (`lightning_modules.tensorflow_init`; LSTM only).
        bidirectional: bidirectional encoder (the decoder is as wide as both directions).
        bridge: `last` passes the encoder's final state (directions concatenated) to the decoder;
            `zeros` starts the decoder from zeros; `first_last` concatenates the encoder's states
            (hidden and, for an LSTM, cell) at the first and the last source position (paper 3,
            Appendix B), so the decoder is twice as wide as the encoder.
        attention_guidance_weight: weight of the attentive-guidance loss (0 = baseline).
        learning_rate: Adam's (initial) learning rate.
        learning_rate_decay: factor the learning rate is multiplied by every
            `learning_rate_decay_steps` training steps, continuously (TensorFlow's
            `exponential_decay`, paper 3 Appendix B: 0.96 every 100 steps); 1 = constant.
        learning_rate_decay_steps: see `learning_rate_decay`.
        learning_rate_staircase: decay in whole steps of the factor instead, after every
            `learning_rate_decay_steps` steps (`exponential_decay(..., staircase=True)`, as paper
            3's code, BCDLSG efb6c20 `s2s_model.py` lines 37-40; torch's `StepLR`).
        teacher_forcing_ratio: share of training steps fed the gold previous token; the rest are
            fed the model's own previous greedy output. At 0 the loss is paper 4's objective
            (section 2), `-sum_t log Pr(y_t | y_hat_(t-1), h_(t-1))` with
            `y_hat_(t-1) = argmax Pr(y | y_hat_(t-2), h_(t-2))`: each decoder step embeds the
            previous step's argmax, so gradients flow through the hidden state and not through
            the argmax (it has none). At 1 it is teacher forcing (`y_(t-1)` in its place).
        validation_loss: the inputs of the loss logged as `val/loss` (and `test/.../loss`):
            `teacher_forced` feeds the gold previous tokens; `own_outputs` feeds the model's own
            greedy outputs, so that the validation loss is the objective trained at
            `teacher_forcing_ratio` 0 (paper 4's early stopping watches it).
        loss_over_steps: `mean` averages the token and attention losses over the decoder steps
            (paper 1's 1/T); `sum` adds the steps' losses up, as i-machine-think's code did for
            paper 1's models; `per_sequence` sums each row's and averages over the rows, as
            paper 3's code (see `sequence_losses`).
        val_splits: names of the validation dataloaders, in order (linked from the DataModule).
            Metrics of the split `val` are logged as `val/<metric>`, of any other as
            `val/<split>/<metric>`.
        test_splits: names of the test dataloaders, in order (linked from the DataModule).
        removed_units: units held at zero at every step, by site, e.g.
            `{"encoder.hidden": [3, 17], "decoder.hidden": [5]}`: the units are removed from the
            network as in paper 1's pruning (section 5.2), in training and evaluation alike.
    """

    def __init__(
        self,
        source_vocab_size: int,
        target_vocab_size: int,
        cell: Literal["gru", "lstm"] = "gru",
        embedding_size: int = 16,
        hidden_size: int = 512,
        attention: Literal["none", "dot", "general", "mlp"] = "mlp",
        attention_placement: Literal["pre_rnn", "post_rnn", "input_feeding"] = "pre_rnn",
        full_focus: bool = False,
        decoder_embedding_size: int | None = None,
        init_range: float | None = None,
        init: Literal["torch", "tensorflow"] = "torch",
        bidirectional: bool = False,
        bridge: Literal["last", "zeros", "first_last"] = "last",
        attention_guidance_weight: float = 0.0,
        learning_rate: float = 1e-3,
        learning_rate_decay: float = 1.0,
        learning_rate_decay_steps: int = 100,
        learning_rate_staircase: bool = False,
        teacher_forcing_ratio: float = 1.0,
        validation_loss: Literal["teacher_forced", "own_outputs"] = "teacher_forced",
        loss_over_steps: Literal["mean", "sum", "per_sequence"] = "mean",
        val_splits: Sequence[str] = ("val",),
        test_splits: Sequence[str] = ("test",),
        removed_units: dict[str, list[int]] | None = None,
    ):
        super().__init__()
        self.save_hyperparameters()
        self._check_arguments()
        self.val_splits = tuple(val_splits)
        self.test_splits = tuple(test_splits)
        directions = 2 if bidirectional else 1
        encoder_size = hidden_size * directions
        decoder_size = encoder_size * (2 if bridge == "first_last" else 1)
        decoder_embedding_size = decoder_embedding_size or embedding_size
        pre_rnn = attention != "none" and attention_placement == "pre_rnn"
        input_feeding = attention != "none" and attention_placement == "input_feeding"
        if full_focus and not (pre_rnn and decoder_embedding_size == decoder_size):
            raise ValueError(
                "full_focus needs pre_rnn attention and decoder_embedding_size equal to the "
                f"decoder size ({decoder_size})."
            )
        decoder_input_size = decoder_embedding_size
        if pre_rnn and not full_focus:
            decoder_input_size += encoder_size
        decoder_input_size += decoder_size if input_feeding else 0
        self.encoder_embedding = nn.Embedding(source_vocab_size, embedding_size, padding_idx=PAD)
        self.decoder_embedding = nn.Embedding(
            target_vocab_size, decoder_embedding_size, padding_idx=PAD
        )
        self.encoder = recurrent_layer(cell, embedding_size, hidden_size, bidirectional)
        self.decoder = recurrent_layer(cell, decoder_input_size, decoder_size)
        self.attention = (
            Attention(attention, decoder_size, encoder_size) if attention != "none" else None
        )
        self.full_focus = nn.Linear(2 * decoder_size, decoder_size) if full_focus else None
        readout_size = decoder_size + (encoder_size if attention != "none" and not pre_rnn else 0)
        self.attention_layer = (  # Luong's W_c: [state; context] -> the attentional vector
            nn.Linear(readout_size, decoder_size, bias=False) if input_feeding else None
        )
        self.output = nn.Linear(decoder_size if input_feeding else readout_size, target_vocab_size)
        self._initialise()
        self._edits = self._removal_edits(removed_units or {}, cell, encoder_size, decoder_size)
        self._add_metrics(target_vocab_size)

    def _add_metrics(self, target_vocab_size: int) -> None:
        """The torchmetrics of every stage and split: sequence and token accuracy, the training
        loss's parts and each evaluation split's losses (`LOSSES`)."""
        splits = [("train", "train")]
        splits += [("val", s) for s in self.val_splits] + [("test", s) for s in self.test_splits]
        self.seq_acc = nn.ModuleDict({metric_key(*s): MeanMetric() for s in splits})
        self.train_loss_parts = nn.ModuleDict(
            {"token_loss": MeanMetric(), "attention_loss": MeanMetric()}
        )
        self.evaluation_losses = nn.ModuleDict(
            {metric_key(*s): nn.ModuleDict({n: MeanMetric() for n in LOSSES}) for s in splits[1:]}
        )
        self.token_acc = nn.ModuleDict(
            {
                metric_key(*s): MulticlassAccuracy(
                    target_vocab_size, average="micro", ignore_index=PAD
                )
                for s in splits
            }
        )

    def _initialise(self) -> None:
        """`init_range`'s uniform start or `init`'s; else the layers keep torch's defaults."""
        if self.hparams.init_range is not None:
            for parameter in self.parameters():
                nn.init.uniform_(parameter, -self.hparams.init_range, self.hparams.init_range)
        if self.hparams.init == "tensorflow":
            tensorflow_initialise(self)

    def _check_arguments(self) -> None:
        """One clear error for a bad choice or combination of the constructor's arguments."""
        choices = {
            "bridge": ("last", "zeros", "first_last"),
            "attention_placement": ("pre_rnn", "post_rnn", "input_feeding"),
            "validation_loss": ("teacher_forced", "own_outputs"),
            "loss_over_steps": ("mean", "sum", "per_sequence"),
            "init": ("torch", "tensorflow"),
        }
        for name, valid in choices.items():
            if self.hparams[name] not in valid:
                raise ValueError(
                    f"Unknown {name} {self.hparams[name]!r}: use " + ", ".join(map(repr, valid))
                )
        hp = self.hparams
        if hp.attention_guidance_weight and hp.attention == "none":
            raise ValueError("attention_guidance_weight > 0 needs an attention mechanism.")
        if hp.attention_placement == "input_feeding" and hp.attention == "none":
            raise ValueError("attention_placement 'input_feeding' needs an attention mechanism.")
        if hp.init == "tensorflow" and (hp.init_range is not None or hp.cell != "lstm"):
            raise ValueError("init 'tensorflow' is for LSTMs and replaces init_range: drop one.")

    # ---- the network -------------------------------------------------------------------------
    def forward(
        self,
        source: Tensor,
        source_lengths: Tensor,
        target: Tensor | None = None,
        steps: int | None = None,
        teacher_forcing_ratio: float = 0.0,
        record: dict[str, Tensor] | None = None,
        edits: Sequence[Intervention] = (),
        generator: torch.Generator | None = None,
        random_inputs: torch.Generator | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Encode `source` `[batch, source_time]` and decode `steps` tokens.

        Decoder inputs are the gold `target` `[batch, target_time]` with probability
        `teacher_forcing_ratio` per step, else the previous greedy prediction. With
        `random_inputs` (a generator) every decoder input, the first included, is instead a token
        drawn uniformly from the target vocabulary (paper 4, section 5: the decoder's inputs
        barely matter to token positioning). Under full teacher forcing without attention, and
        with nothing recorded or edited, the decoder runs torch's fused layer over the whole
        target (`_teacher_forced`) instead of one step at a time; the logits are the same.
        Returns
        `logits [batch, steps, target_vocab]` and `attention [batch, steps, source_time]` (None
        without attention). With `record`, every site is stored as `"encoder.<site>"`,
        `"decoder.<site>"` `[batch, time, units]`, plus `"attention"`.
        """
        edits = tuple(edits) + self._edits
        steps = steps if steps is not None else target.shape[1]
        first_last = self.hparams.bridge == "first_last"  # needs every position's cell state
        encoder_record = {} if record is not None or first_last else None
        encoder_outputs, final = self.encoder(
            self.encoder_embedding(source),
            lengths=source_lengths,
            record=encoder_record,
            edits=[e for e in edits if e.module == "encoder"],
        )
        if first_last:
            state = self._first_last_state(encoder_record, source_lengths)
        else:
            state = self._bridge(final, source.shape[0])
        if self._fusable(target, steps, teacher_forcing_ratio, record, edits, random_inputs):
            return self._teacher_forced(target[:, :steps], state), None
        decoder_edits = [e for e in edits if e.module == "decoder"]
        source_mask = source != PAD
        keys = self.attention.prepare_keys(encoder_outputs) if self.attention is not None else None
        token = source.new_full((source.shape[0],), SOS)
        fed = self._first_fed(encoder_outputs)
        logits, attentions, decoder_sites = [], [], []
        for step in range(steps):
            if random_inputs is not None:
                vocabulary = self.output.out_features
                token = torch.randint(vocabulary, token.shape, generator=random_inputs).to(
                    token.device
                )
            embedded, weights = self._decoder_input(token, state, keys, encoder_outputs,
                                                    source_mask, fed)  # fmt: skip
            state, sites = self.decoder.step(embedded, state, step, decoder_edits)
            readout, weights = self._readout(sites["hidden"], weights, keys, encoder_outputs,
                                             source_mask)  # fmt: skip
            fed = readout if fed is not None else None
            step_logits = self.output(readout)
            logits.append(step_logits)
            attentions.append(weights)
            decoder_sites.append(sites)
            if target is not None and teacher_forcing_ratio >= 1:  # no draw: leaves torch's RNG
                token = target[:, step]  # and no argmax, unused (paper 4's integrated gradients)
            else:
                token = step_logits.argmax(-1)
                if target is not None and teacher_forcing_ratio > 0:
                    forced = torch.rand(token.shape, generator=generator) < teacher_forcing_ratio
                    token = torch.where(forced.to(token.device), target[:, step], token)
        attention = torch.stack(attentions, 1) if self.attention is not None else None
        if record is not None:
            record.update({f"encoder.{k}": v for k, v in encoder_record.items()})
            for name in decoder_sites[0]:
                record[f"decoder.{name}"] = torch.stack([s[name] for s in decoder_sites], 1)
            if attention is not None:
                record["attention"] = attention
        return torch.stack(logits, 1), attention

    def _decoder_input(self, token, state, keys, encoder_outputs, source_mask, fed=None):
        """The decoder's input at one step, `[batch, input]`, and the attention weights computed
        before the step (pre-rnn attention) or None: the embedded `token`, with pre-rnn attention
        joined to its context (concatenated, or gated by the full-focus layer), with input
        feeding joined to the previous step's attentional vector `fed`."""
        embedded = self.decoder_embedding(token)
        if fed is not None:
            return torch.cat([embedded, fed], -1), None
        if self.attention is None or self.hparams.attention_placement != "pre_rnn":
            return embedded, None
        weights = self.attention(self._hidden_of(state), keys, source_mask)
        context = self._context(weights, encoder_outputs)
        if self.full_focus is not None:
            return context * torch.relu(
                self.full_focus(torch.cat([context, embedded], -1))
            ), weights
        return torch.cat([embedded, context], -1), weights

    def _first_fed(self, encoder_outputs: Tensor) -> Tensor | None:
        """Input feeding's attentional vector before the first step: 0 (TensorFlow's
        `AttentionWrapper.zero_state`); None without input feeding."""
        if self.attention_layer is None:
            return None
        return encoder_outputs.new_zeros(encoder_outputs.shape[0], self.decoder.hidden_size)

    def _readout(self, hidden, weights, keys, encoder_outputs, source_mask):
        """What the output layer reads after a decoder step, and the step's attention weights:
        the new state `hidden` (no attention, or pre-rnn attention, whose `weights` are given);
        with post-rnn attention `[hidden; context]`, attending with `hidden`; with input feeding
        Luong's attentional vector `W_c [hidden; context]`."""
        if self.attention is None or weights is not None:
            return hidden, weights
        weights = self.attention(hidden, keys, source_mask)
        readout = torch.cat([hidden, self._context(weights, encoder_outputs)], -1)
        if self.attention_layer is not None:
            readout = self.attention_layer(readout)
        return readout, weights

    def _fusable(self, target, steps, teacher_forcing_ratio, record, edits, random_inputs) -> bool:
        """Whether the decoder's inputs are all known in advance and nothing inside it is
        recorded or edited: full teacher forcing, no attention, no random inputs."""
        return (
            self.attention is None
            and target is not None
            and steps <= target.shape[1]
            and teacher_forcing_ratio >= 1
            and record is None
            and not edits
            and random_inputs is None
        )

    def _teacher_forced(self, target: Tensor, state) -> Tensor:
        """The decoder over the whole teacher-forced target in one call of torch's fused layer
        (inputs `<sos>, target[:, :-1]`): the logits the step loop computes, without a Python
        step per token. `state` is the decoder's start state `[batch, units]` (LSTM: a pair)."""
        first = target.new_full((target.shape[0], 1), SOS)
        inputs = self.decoder_embedding(torch.cat([first, target[:, :-1]], 1))
        start = (
            state.unsqueeze(0) if torch.is_tensor(state) else tuple(s.unsqueeze(0) for s in state)
        )
        outputs, _ = self.decoder(inputs, start)
        return self.output(outputs)

    @staticmethod
    def _removal_edits(
        removed_units: dict[str, list[int]], cell: str, encoder_size: int, decoder_size: int
    ) -> tuple[Intervention, ...]:
        """`removed_units` as zeroing interventions at every step, checked against the network."""
        sizes = {"encoder": encoder_size, "decoder": decoder_size}
        for site, units in removed_units.items():
            module, _, name = site.partition(".")
            if module not in sizes or name not in SITES[cell]:
                known = [f"{m}.{n}" for m in sizes for n in SITES[cell]]
                raise ValueError(f"removed_units: unknown site {site!r}; known sites: {known}.")
            outside = [u for u in units if not 0 <= u < sizes[module]]
            if outside:
                raise ValueError(
                    f"removed_units[{site!r}]: units {outside} outside 0..{sizes[module] - 1}."
                )
        return removal_edits(removed_units)

    def _bridge(self, final, batch: int):
        """Decoder start state from the encoder's final state `[directions, batch, hidden]`."""
        parts = (final,) if self.hparams.cell == "gru" else final
        if self.hparams.bridge == "last":
            joined = tuple(p.transpose(0, 1).reshape(batch, -1) for p in parts)
        else:
            joined = tuple(torch.zeros_like(p.transpose(0, 1).reshape(batch, -1)) for p in parts)
        return joined[0] if self.hparams.cell == "gru" else joined

    def _first_last_state(self, encoder_record: dict[str, Tensor], lengths: Tensor):
        """Paper 3, Appendix B: the decoder starts from the encoder's states at the first and the
        last source position, concatenated (hidden, and cell for an LSTM), `[batch, 2 * units]`."""
        rows = torch.arange(lengths.shape[0], device=lengths.device)
        last = (lengths - 1).to(rows.device)
        parts = tuple(
            torch.cat([encoder_record[site][:, 0], encoder_record[site][rows, last]], -1)
            for site in ("hidden", "cell")[: 1 if self.hparams.cell == "gru" else 2]
        )
        return parts[0] if self.hparams.cell == "gru" else parts

    def _hidden_of(self, state) -> Tensor:
        return state if self.hparams.cell == "gru" else state[0]

    @staticmethod
    def _context(weights: Tensor, encoder_outputs: Tensor) -> Tensor:
        return torch.einsum("bs,bsu->bu", weights, encoder_outputs)

    @torch.no_grad()
    def trace(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        """What the model computes on `batch` under greedy decoding, by site name.

        Keys: `encoder.<site>` `[batch, source_time, units]`, `decoder.<site>`
        `[batch, target_time, units]` (sites as in `lightning_modules.recurrent.SITES`),
        `attention` `[batch, target_time, source_time]`, `prediction` `[batch, target_time]`.
        """
        record: dict[str, Tensor] = {}
        logits, _ = self(
            batch["source"], batch["source_lengths"], steps=batch["target"].shape[1], record=record
        )
        record["prediction"] = logits.argmax(-1)
        return record

    # ---- training and evaluation -------------------------------------------------------------
    def _shared_step(self, batch: dict[str, Tensor], stage: str, split: str) -> Tensor:
        """One batch of `split` in `stage` (`train`, `val` or `test`)."""
        target = batch["target"]
        training = stage == "train"
        generator = None
        if training and self.hparams.teacher_forcing_ratio < 1:
            generator = torch.Generator().manual_seed(self.global_step)
        logits, attention = self(
            batch["source"],
            batch["source_lengths"],
            target,
            teacher_forcing_ratio=self.hparams.teacher_forcing_ratio if training else 0.0,
            generator=generator,
        )
        loss_logits = logits  # accuracy is always greedy; the loss as `validation_loss` says
        if not training and self.hparams.validation_loss == "teacher_forced":
            loss_logits, attention = self(
                batch["source"], batch["source_lengths"], target, teacher_forcing_ratio=1.0
            )
        log = sequence_losses(loss_logits, attention, batch, self.hparams.loss_over_steps)
        loss = log["token_loss"]
        if "attention_loss" in log:
            loss = loss + self.hparams.attention_guidance_weight * log["attention_loss"]
        log["loss"] = loss
        batch_size = target.shape[0]
        prediction = logits.argmax(-1)
        correct = sequence_correct(prediction, target).float()
        self.seq_acc[metric_key(stage, split)].update(correct)
        self.token_acc[metric_key(stage, split)].update(prediction.flatten(), target.flatten())
        if training:  # per step the loss and the batch's accuracy; the rest once per epoch
            self.log("train/loss", loss, on_step=True, on_epoch=True, batch_size=batch_size)
            # Before this step's update. With full teacher forcing a sequence is right exactly
            # when greedy decoding gets it right (each greedy input is then the gold token).
            self.log("train/batch_seq_acc", correct.mean(), on_step=True, on_epoch=False,
                     batch_size=batch_size)  # fmt: skip
            for name, metric in self.train_loss_parts.items():
                if name in log:
                    metric.update(log[name], weight=batch_size)
            return {"loss": loss, "prediction": prediction}
        for name, value in log.items():
            self.evaluation_losses[metric_key(stage, split)][name].update(value, batch_size)
        return {"loss": loss, "prediction": prediction}

    def on_train_epoch_end(self) -> None:
        for name, metric in self.train_loss_parts.items():
            if metric.update_called:
                self.log(f"train/{name}", metric)
        self._log_accuracy("train", "train")

    def on_validation_epoch_end(self) -> None:
        self._log_evaluation("val", self.val_splits)

    def on_test_epoch_end(self) -> None:
        self._log_evaluation("test", self.test_splits)

    def _log_evaluation(self, stage: str, splits: Sequence[str]) -> None:
        """Each evaluated split's losses (weighted by batch size) and accuracies, once per epoch:
        logged at every step, Lightning's bookkeeping cost more than the step itself at batch
        size 1 (paper 1's)."""
        for split in splits:
            key = metric_key(stage, split)
            if not self.seq_acc[key].update_called:
                continue
            for name in LOSSES:
                metric = self.evaluation_losses[key][name]
                if metric.update_called:
                    self.log(f"{metric_prefix(stage, split)}/{name}", metric,
                             add_dataloader_idx=False)  # fmt: skip
            self._log_accuracy(stage, split)

    def _log_accuracy(self, stage: str, split: str) -> None:
        """Log the split's accuracy metrics; Lightning computes and resets them per epoch."""
        kwargs = dict(on_step=False, on_epoch=True, add_dataloader_idx=False)
        prefix, key = metric_prefix(stage, split), metric_key(stage, split)
        self.log(f"{prefix}/seq_acc", self.seq_acc[key], **kwargs)
        self.log(f"{prefix}/token_acc", self.token_acc[key], **kwargs)

    def training_step(self, batch, batch_idx):
        return self._shared_step(batch, "train", "train")

    def validation_step(self, batch, batch_idx, dataloader_idx: int = 0):
        return self._shared_step(batch, "val", self.val_splits[dataloader_idx])

    def test_step(self, batch, batch_idx, dataloader_idx: int = 0):
        return self._shared_step(batch, "test", self.test_splits[dataloader_idx])

    def configure_optimizers(self):
        trainable = [p for p in self.parameters() if p.requires_grad]
        # torch's fused Adam kernel: 5x faster than the default on CPU at batch size 1.
        optimizer = torch.optim.Adam(trainable, lr=self.hparams.learning_rate, fused=True)
        decay, every = self.hparams.learning_rate_decay, self.hparams.learning_rate_decay_steps
        if decay == 1.0:
            return optimizer
        if self.hparams.learning_rate_staircase:
            scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=every, gamma=decay)
        else:
            per_step = decay ** (1 / every)
            scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=per_step)
        schedule = {"scheduler": scheduler, "interval": "step"}
        return {"optimizer": optimizer, "lr_scheduler": schedule}
