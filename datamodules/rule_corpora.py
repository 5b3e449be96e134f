"""Synthetic long-range-rule corpora of paper 2 ("Do LSTMs Learn Compositionally?", section 4).

Tokens are drawn uniformly from a vocabulary Sigma of `vocabulary` types (ids `0 ..
vocabulary - 1`), and `rules` instances of the rule `alpha Sigma^k omega` are inserted, with the
open symbol alpha (id `vocabulary`) and the close symbol omega (id `vocabulary + 1`) outside
Sigma (section 4.1). For the conduit-predictability experiment (section 4.2) the conduits are
drawn from a pool of `conduit_pool` random conduits, each used equally often, and in the
predictable setting each conduit is also copied `conduit_copies` times elsewhere in the corpus.
Everything is seeded; the same arguments give the same corpus.
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset

from datamodules.rule_corpora_authors import authors_corpora
from datamodules.rule_corpus import RuleCorpus
from datamodules.sampling import ResumableLoader


def generate_rule_corpus(
    length: int,
    vocabulary: int,
    rules: int,
    conduit_length: int,
    seed: int = 0,
    conduit_pool: int | None = None,
    conduit_copies: int = 0,
    pool: Tensor | None = None,
) -> RuleCorpus:
    """A corpus of exactly `length` tokens over `vocabulary` types with `rules` instances of
    `alpha q omega`, each conduit `q` `conduit_length` tokens (the paper's values are
    `RuleCorpusDataModule`'s defaults).

    `conduit_pool`: None draws every conduit `q` afresh from Sigma^k; a number draws that many
    conduits and uses each `rules / conduit_pool` times (paper 2, 4.2: 100 conduits, 10 uses
    each for n = 1000). `conduit_copies`: copies of each pooled conduit placed elsewhere (the
    predictable-conduit setting; 0 = unpredictable).
    """
    if conduit_pool is not None and rules % conduit_pool:
        raise ValueError(f"rules ({rules}) must be a multiple of conduit_pool ({conduit_pool}).")
    if conduit_copies and conduit_pool is None:
        raise ValueError("conduit_copies needs a conduit_pool: only pooled conduits are copied.")
    generator = torch.Generator().manual_seed(seed)
    if conduit_pool is None:
        conduits = torch.randint(vocabulary, (rules, conduit_length), generator=generator)
        used = conduits
    else:
        conduits = torch.randint(vocabulary, (conduit_pool, conduit_length), generator=generator)
        if pool is not None:
            if pool.shape != conduits.shape:
                raise ValueError(f"pool is {tuple(pool.shape)}, not {tuple(conduits.shape)}.")
            conduits = pool
        used = conduits.repeat(rules // conduit_pool, 1)
    rule_tokens = rules * (conduit_length + 2)
    copy_tokens = conduit_copies * len(conduits) * conduit_length
    filler = length - rule_tokens - copy_tokens
    if filler < 0:
        raise ValueError(
            f"{rules} rules of length {conduit_length + 2} and {copy_tokens} copied conduit "
            f"tokens do not fit in {length} tokens: use a longer corpus or fewer rules."
        )
    # Blocks: each rule, each copy of a conduit, each single filler token; shuffled together.
    kinds = torch.cat([
        torch.zeros(rules, dtype=torch.long),  # 0: rule, indexed into `used`
        torch.ones(conduit_copies * len(conduits), dtype=torch.long),  # 1: a copied conduit
        torch.full((filler,), 2, dtype=torch.long),  # 2: one random token
    ])  # fmt: skip
    order = torch.randperm(len(kinds), generator=generator)
    kinds = kinds[order]
    fillers = torch.randint(vocabulary, (filler,), generator=generator)
    copies = conduits.repeat(conduit_copies, 1)[torch.randperm(len(conduits) * conduit_copies,
                                                                generator=generator)]  # fmt: skip
    rule_order = torch.randperm(rules, generator=generator)
    sizes = torch.tensor([conduit_length + 2, conduit_length, 1])[kinds]
    starts = torch.cumsum(sizes, 0) - sizes
    tokens = torch.empty(length, dtype=torch.long)
    rule_starts = starts[kinds == 0]
    rule_body = torch.cat(
        [
            torch.full((rules, 1), vocabulary),
            used[rule_order],
            torch.full((rules, 1), vocabulary + 1),
        ],
        1,
    )
    offsets = torch.arange(conduit_length + 2)
    tokens[(rule_starts[:, None] + offsets).flatten()] = rule_body.flatten()
    copy_starts = starts[kinds == 1]
    if len(copy_starts):
        tokens[(copy_starts[:, None] + offsets[:conduit_length]).flatten()] = copies.flatten()
    tokens[starts[kinds == 2]] = fillers
    return RuleCorpus(tokens, rule_starts, conduits, vocabulary, conduit_length,
                      pooled=conduit_pool is not None)  # fmt: skip


def rule_windows(corpus: RuleCorpus, count: int, context: int, seed: int) -> Tensor:
    """`count` held-out instances of the rule, each `[context random tokens] alpha q omega`,
    `[count, context + conduit_length + 2]`: the probe set on which paper 2 (section 3.1) reads
    `P(omega | alpha)` at the close symbol. The conduits `q` come from the corpus's pool when it
    has one (4.2), else they are drawn afresh like every conduit of 4.1."""
    generator = torch.Generator().manual_seed(seed)
    length, vocabulary = corpus.conduit_length, corpus.vocabulary
    if corpus.pooled:
        conduits = corpus.conduits[
            torch.randint(len(corpus.conduits), (count,), generator=generator)
        ]
    else:
        conduits = torch.randint(vocabulary, (count, length), generator=generator)
    return torch.cat(
        [
            torch.randint(vocabulary, (count, context), generator=generator),
            torch.full((count, 1), corpus.open_symbol),
            conduits,
            torch.full((count, 1), corpus.close_symbol),
        ],
        1,
    )


class _Windows(Dataset):
    """A token stream cut into `batch_size` parallel rows and read in BPTT windows (the PyTorch
    word-language-model example's `batchify`/`get_batch`): window `i` is one whole batch."""

    def __init__(self, tokens: Tensor, batch_size: int, bptt: int):
        columns = len(tokens) // batch_size
        self.rows = tokens[: columns * batch_size].view(batch_size, columns)
        self.bptt = bptt

    def __len__(self) -> int:
        return -(-(self.rows.shape[1] - 1) // self.bptt)

    def __getitem__(self, window: int) -> dict[str, Tensor]:
        start = window * self.bptt
        chunk = self.rows[:, start : start + self.bptt + 1]
        return {"input": chunk[:, :-1], "target": chunk[:, 1:], "window": torch.tensor(window)}


def collate_rule_windows(items: list[dict[str, Tensor]]) -> dict[str, Tensor]:
    return {key: torch.stack([item[key] for item in items]) for key in items[0]}


GENERATORS = ("text", "authors")


def text_corpora(h) -> dict[str, RuleCorpus]:
    """The training corpus of `RuleCorpusDataModule`'s hyperparameters `h` and its held-out
    ones (the same settings, `evaluation_length` long, `rules` scaled to keep the rule density,
    the same conduit pool)."""
    settings = dict(vocabulary=h.vocabulary, conduit_length=h.conduit_length,
                    conduit_pool=h.conduit_pool)  # fmt: skip
    train = generate_rule_corpus(h.corpus_length, rules=h.rules, seed=h.data_seed,
                                 conduit_copies=h.conduit_copies, **settings)  # fmt: skip
    length = h.evaluation_length or max(h.corpus_length // 10, 1)
    share = length / h.corpus_length
    rules = round(h.rules * share)
    if h.conduit_pool:
        rules = max(h.conduit_pool, rules - rules % h.conduit_pool)
    corpora = {"train": train}
    for offset, split in enumerate(("validation", "test"), start=1):
        corpora[split] = generate_rule_corpus(
            length, rules=rules, seed=h.data_seed + offset, pool=train.conduits,
            conduit_copies=round(h.conduit_copies * share), **settings,
        )  # fmt: skip
    return corpora


class RuleCorpusDataModule(pl.LightningDataModule):
    """Paper 2's corpora for language modelling (section 4), in BPTT windows.

    Splits ``train``, ``validation`` and ``test`` are corpora of the same settings (the held-out
    ones `evaluation_length` long, with `rules` scaled to keep the training corpus's rule
    density, and the same conduit pool); each batch is one window of `bptt` steps over
    `batch_size` parallel streams:

    - ``input`` ``[batch, bptt]``, ``target`` ``[batch, bptt]`` (the next tokens);
    - ``window`` ``[]``: the window's index; window 0 starts the streams (the model resets its
      carried state there).

    Split ``rules`` is the probe set of `probe_rules` held-out rule instances (`rule_windows`):
    ``input`` ``[batch, context + k + 1]``, ``target``, ``open_position`` (where alpha stands in
    ``input``) and ``close_position`` (the input step whose target is omega).

    Args:
        corpus_length: training tokens (paper: 1M).
        vocabulary: |Sigma| (paper: 1k); alpha and omega are ids `vocabulary`, `vocabulary + 1`.
        rules: n, instances of the rule in the training corpus.
        conduit_length: k.
        conduit_pool: None draws every conduit afresh; a number reuses that many (4.2: 100).
        conduit_copies: m, copies of each pooled conduit outside the rules (4.2's predictable
            setting; 0 = unpredictable).
        data_seed: seed of the training corpus (held-out corpora use `data_seed + 1`, `+ 2`).
        evaluation_length: tokens of the validation and test corpora (None: a tenth of
            `corpus_length`).
        batch_size: parallel streams (the example's 20).
        bptt: steps per window (the example's 35).
        probe_rules: rule instances in the ``rules`` split.
        context: random tokens before alpha in each probe instance.
        generator: ``text`` (the paper's text: `generate_rule_corpus`) or ``authors`` (the
            authors' `synthetic_range_data.py`, `datamodules.rule_corpora_authors`: Sigma has
            `vocabulary + 1` types, the pool is always used (4.1's fresh conduits are a pool of
            `rules` conduits), their `conduit_count` is `max(1, conduit_copies // (rules /
            conduit_pool))` (m = 1000 -> 100, 990 copies of each conduit), and the validation
            and test corpora are their `valid.txt` and `test.txt`, with their `domain_test.txt`
            as the extra split ``domain_test``).
    """

    def __init__(
        self,
        corpus_length: int = 1_000_000,
        vocabulary: int = 1000,
        rules: int = 1000,
        conduit_length: int = 8,
        conduit_pool: int | None = None,
        conduit_copies: int = 0,
        data_seed: int = 0,
        evaluation_length: int | None = None,
        batch_size: int = 20,
        bptt: int = 35,
        probe_rules: int = 200,
        context: int = 20,
        generator: str = "text",
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        for name in ("corpus_length", "vocabulary", "conduit_length", "batch_size", "bptt"):
            if getattr(self.hparams, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self.hparams, name)}.")
        if generator not in GENERATORS:
            raise ValueError(
                f"generator must be one of {', '.join(GENERATORS)}, not {generator!r}."
            )
        self.corpora: dict[str, RuleCorpus] | None = None

    @property
    def vocab_size(self) -> int:
        """Sigma plus the open and close symbols (the authors' Sigma has one type more)."""
        return self.hparams.vocabulary + 2 + (self.hparams.generator == "authors")

    def corpus(self, split: str = "train") -> RuleCorpus:
        self.setup()
        return self.corpora[split]

    def setup(self, stage: str | None = None) -> None:
        if self.corpora is not None:
            return
        h = self.hparams
        if h.generator == "authors":
            self.corpora = authors_corpora(h)
        else:
            self.corpora = text_corpora(h)
        probes = rule_windows(self.corpora["train"], h.probe_rules, h.context,
                              seed=h.data_seed + 3)  # fmt: skip
        self.datasets = {
            name: _Windows(corpus.tokens, h.batch_size, h.bptt)
            for name, corpus in self.corpora.items()
        }
        close = h.context + h.conduit_length
        self.datasets["rules"] = [
            {"input": window[:-1], "target": window[1:], "open_position": torch.tensor(h.context),
             "close_position": torch.tensor(close)}
            for window in probes
        ]  # fmt: skip

    def split_dataloader(self, name: str, batch_size: int | None = None) -> DataLoader:
        """A loader over any split, in order. For the corpora each batch is a BPTT window (the
        streams are fixed by the DataModule's `batch_size`); for ``rules``, `batch_size`
        instances (default 256)."""
        self.setup()
        if name not in self.datasets:
            raise ValueError(f"unknown split {name!r}; valid splits: {', '.join(self.datasets)}")
        if name == "rules":
            return DataLoader(self.datasets[name], batch_size=batch_size or 256,
                              collate_fn=collate_rule_windows)  # fmt: skip
        return DataLoader(self.datasets[name], batch_size=None)

    def train_dataloader(self) -> DataLoader:
        self.setup()
        return ResumableLoader(self.datasets["train"], batch_size=None)

    def val_dataloader(self) -> DataLoader:
        return self.split_dataloader("validation")

    def test_dataloader(self) -> DataLoader:
        return self.split_dataloader("test")
