"""Paper 2's scales and corpus settings: what each run of `make reproduce-paper2` trains.

Scale (`SCALE` or `--scale`, see `SCALES`): `paper` = the paper's corpus (1M tokens) and epochs,
3 seeds, for a GPU; `default` = the same corpus and seeds on the cells the disputed claims rest on,
for 2 CPU cores over several invocations (`--reuse-runs` resumes); `small` = 100k tokens, one seed
(45 min); `quick` = the whole pipeline on tiny sizes in minutes, whose verdicts mean nothing.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from experiments.engine.cli import reproduction_parser
from storage.layout import UNTRAINED

CONFIG = Path(__file__).parents[1] / "configs" / "paper2" / "language_model.yaml"
STREAM_LENGTH = 50_000
"""Tokens of the authors' test documents (`synthetic_range_data.py`'s `test_corpus_length`)."""


@dataclass(frozen=True)
class Scale:
    """How much of the paper a reproduction runs; every fit also gets `overrides`."""

    corpus_length: int  # section 4: 1M tokens
    epochs: int  # Figure 2 is at 50 epochs, so every run trains 50
    figure1_epoch: int  # Figure 1: 40 epochs
    rule_counts: tuple[int, ...]  # n of Figure 1
    conduit_lengths: tuple[int, ...]  # k of Figure 1; the largest is Figure 2's (paper: 8)
    predictability_lengths: tuple[int, ...]  # k of Figure 3 (not given in the paper)
    conduit_copies: tuple[int, ...]  # readings of m in 4.2's predictable setting; first: primary
    seeds: tuple[int, ...] = (0, 1, 2)  # each seed draws its own corpus and initialisation
    more_seeds: tuple[int, ...] = ()
    """Seeds Figure 3's cells at the longest k (the text's generator) are trained at besides
    `seeds` (`more_seed_settings`; `reports/paper2/preregistration.md` item 5: there the late gap
    keeps the paper's sign but within 2 SE over 3 seeds). Those cells are read over every seed."""
    predictability_rules: int = 1000  # 4.2: n = 1000
    conduit_pool: int = 100  # 4.2: conduits from a set of 100
    probe_rules: int = 200
    overrides: tuple[str, ...] = ()
    authors_generator: bool = True  # Figure 3's settings also by the authors' generator
    stream_length: int = STREAM_LENGTH
    """Tokens of each of the authors' test documents their analysis reads (theirs by default)."""
    before_fix: bool = False
    """Also read the runs of `before_fix_settings` by the authors' CD before their fix, in float64
    (`--before-fix`, `runs.BEFORE_FIX_READINGS`)."""
    # Figure 2's cell trained so too (`OPTIMIZERS`): one tuple per reading of the paper's
    # unstated values, each trained as its own group after the earlier ones (`training_order`)
    optimizers: tuple[tuple[str, ...], ...] = (
        ("momentum", "weight_decay"),
        ("momentum_at_lr_0.1", "weight_decay_1.2e-6"),
    )


@dataclass(frozen=True)
class Optimizer:
    """SGD's settings for section 3's statement on momentum and weight decay: the fit's
    arguments and how the report names them."""

    arguments: tuple[str, ...]
    name: str


OPTIMIZERS = {
    "sgd": Optimizer((), "plain SGD"),
    "momentum": Optimizer(("--model.momentum", "0.9"), "momentum 0.9"),
    "weight_decay": Optimizer(("--model.weight_decay", "0.0001"), "weight decay 1e-4"),
    "momentum_at_lr_0.1": Optimizer(("--model.momentum", "0.9", "--model.learning_rate", "0.1"),
                                    "momentum 0.9 at learning rate 0.1"),
    "weight_decay_1.2e-6": Optimizer(("--model.weight_decay", "1.2e-6"), "weight decay 1.2e-6"),
}  # fmt: skip
"""Section 3: "We found momentum and weight decay to slow rule learning in this setting, so they
are not used" (a claim of its own). The paper gives no values and the authors' code sets neither,
so every value is the suite's choice, in two readings. The first (common defaults): momentum 0.9
and weight decay 1e-4, both at learning rate 1; at lr 1 that weight decay shrinks every weight by
about 13% an epoch and kept the first such run at chance, and that momentum multiplies the step
about tenfold. The second, so that the optimizer alone changes: momentum 0.9 at
learning rate 0.1, the same long-run step as plain SGD at 1 (lr / (1 - momentum)), and weight
decay 1.2e-6 (AWD-LSTM's default for LSTM language models, about 0.2% an epoch here)."""


M_READINGS = (1000, 100)
"""4.2 says both "m = 1000 occurrences of each conduit q" and "copying each conduit 100 times".
The authors' generator (`nsaphra/acd`, `synthetic_range_data.py`) copies a rule's conduit
`conduit_count` - 1 times per rule instance; with n = 1000 rules over 100 conduits, its
`conduit_count` = 100 gives 10 x 99 = 990 copies of each q: the first reading, run as primary."""

SCALES = {
    # The paper's corpus, a grid around its figures (the paper gives no k or n), 3 seeds: 96 runs
    # of 50 epochs on 1M tokens (18 of them Figure 3 by the authors' generator), for a GPU: 30-46
    # min per run on one CPU core (the default grid, two machines); on one H200, 14 runs at a
    # time, about 32 s an epoch each (docs/reproductions.md): about 27 min a run, 3 h for all.
    "paper": Scale(1_000_000, 50, 40, (10, 100, 300, 1000), (1, 2, 4, 8), (4, 8), M_READINGS),
    # The paper's corpus and seeds on 2 CPU cores: Figure 3 with both readings of m, Figure 1 at
    # n = 10 to 1000 for k = 2, 4, 8, whose k = 8 cells are Figure 2's, that cell also with
    # momentum and with weight decay (section 3, two readings of their values, 12 runs); and
    # Figure 3 by the authors' generator; then Figure 3's k = 8 cells at seeds 3-5 (registered).
    # 93 runs of 30-46 min on one core each (two machines), two at a time: 23-36 h over several
    # invocations (`--reuse-runs` resumes them) or machines (`--shard`). A new reading appends
    # its runs, so the others keep their index and shard (the second optimizer reading is runs
    # 79-84, the three more seeds runs 85-93). Figure 1 takes n = 10 and 100 as well: at
    # 1M tokens n = 300 and 1000 sit at the ceiling by epoch 40 (P(omega | alpha) 0.999-1.000
    # at k = 2 and 4), so alone they would decide Figure 1's claims by the ceiling.
    "default": Scale(1_000_000, 50, 40, (10, 100, 300, 1000), (2, 4, 8), (4, 8), M_READINGS,
                     more_seeds=(3, 4, 5)),
    # About 45 minutes: 10x fewer tokens, one seed; m = 100 keeps the share of the corpus that
    # m = 1000 fills at 1M tokens. Floor and ceiling decide several claims.
    "small": Scale(100_000, 50, 40, (10, 100, 300, 1000), (2, 4, 8), (4, 8), (100,), (0,)),
    # The whole pipeline on tiny sizes (used by the tests), not a reproduction: its verdicts
    # mean nothing. Every kind of run once: two k and two n, Figure 3 by both generators, both
    # readings of the optimizers; one seed, 2 epochs of 4,000 tokens, 8 units.
    "quick": Scale(4_000, 2, 1, (10, 20), (2, 3), (2,), (2,), (0,), predictability_rules=100,
                   probe_rules=8, stream_length=5_000, overrides=("--model.embedding_size", "8",
                                             "--model.hidden_size", "8")),
}  # fmt: skip


@dataclass(frozen=True)
class Setting:
    """One corpus: `pool` None = fresh conduits (4.1); else 4.2's pooled conduits, with
    `copies` copies of each elsewhere (0 = unpredictable); `generator` `text` (the paper's text)
    or `authors` (their `synthetic_range_data.py`, `datamodules.rule_corpora_authors`)."""

    conduit_length: int
    rules: int
    pool: int | None = None
    copies: int = 0
    generator: str = "text"
    optimizer: str = "sgd"  # `OPTIMIZERS`

    @property
    def variant(self) -> str:
        if self.pool is None:
            name = f"k={self.conduit_length}_n={self.rules}"
        else:
            kind = f"predictable_m={self.copies}" if self.copies else "unpredictable"
            name = f"pooled_k={self.conduit_length}_{kind}"
        if self.optimizer != "sgd":
            name = f"{name}_{self.optimizer}"
        return name if self.generator == "text" else f"{name}_{self.generator}_generator"

    def arguments(self) -> list[str]:
        arguments = ["--data.conduit_length", str(self.conduit_length),
                     "--data.rules", str(self.rules)]  # fmt: skip
        if self.pool is not None:
            arguments += ["--data.conduit_pool", str(self.pool),
                          "--data.conduit_copies", str(self.copies)]  # fmt: skip
        if self.generator != "text":
            arguments += ["--data.generator", self.generator]
        return arguments + list(OPTIMIZERS[self.optimizer].arguments)


def figure1_settings(scale: Scale) -> list[Setting]:
    return [Setting(k, n) for k in scale.conduit_lengths for n in scale.rule_counts]


def figure3_settings(scale: Scale, generator: str = "text") -> dict[tuple[int, int], Setting]:
    """(k, m) -> setting; m = 0 is the unpredictable setting."""
    return {
        (k, copies): Setting(k, scale.predictability_rules, scale.conduit_pool, copies, generator)
        for k in scale.predictability_lengths
        for copies in (0, *scale.conduit_copies)
    }


def figure2_cell(scale: Scale, optimizer: str = "sgd") -> Setting:
    """Figure 2's cell (the longest k, the most rules), trained with `optimizer`."""
    return Setting(max(scale.conduit_lengths), max(scale.rule_counts), optimizer=optimizer)


def before_fix_settings(scale: Scale) -> list[Setting]:
    """The settings whose runs the registered reading of the authors' CD before their fix reads
    (`reports/paper2/preregistration.md`, item 4): Figure 3's by the text's generator and Figure
    2's cell."""
    return [*figure3_settings(scale).values(), figure2_cell(scale)]


def more_seed_settings(scale: Scale) -> list[Setting]:
    """Figure 3's settings by the text's generator at the longest k: those `Scale.more_seeds`
    trains at more seeds."""
    longest = max(scale.predictability_lengths)
    return [s for (k, _), s in figure3_settings(scale).items() if k == longest]


def optimizer_settings(scale: Scale) -> dict[str, Setting]:
    """Figure 2's cell trained with momentum and with weight decay (section 3's statement), every
    reading of their values."""
    return {optimizer: figure2_cell(scale, optimizer) for reading in scale.optimizers
            for optimizer in reading}  # fmt: skip


def generators(scale: Scale) -> tuple[str, ...]:
    """The generators Figure 3's settings are trained with: the text's, and the authors' second
    reading where the scale runs it."""
    return ("text", "authors") if scale.authors_generator else ("text",)


def training_order(scale: Scale) -> list[tuple[Setting, int]]:
    """Every (setting, seed) to train, the runs behind the claims that floor and ceiling decided
    at 100k tokens first (Figure 3, then Figure 2's k and n), so that an interrupted reproduction
    has them before the rest of Figure 1's grid; `Scale.more_seeds`' runs last, so the others
    keep their index. `--shard i/n` splits this list by run."""
    first = [*figure3_settings(scale).values(), figure2_cell(scale)]
    rest = [s for s in figure1_settings(scale) if s not in first]
    second = [s for g in generators(scale)[1:] for s in figure3_settings(scale, g).values()]
    optimizers = [[figure2_cell(scale, name) for name in reading] for reading in scale.optimizers]
    runs = [(s, seed) for group in (first, rest, second, *optimizers) for seed in scale.seeds
            for s in group]  # fmt: skip
    more = [(s, seed) for seed in scale.more_seeds for s in more_seed_settings(scale)]
    return list(dict.fromkeys(runs + more))


def epoch_tag(epochs: int) -> str:
    """The weight snapshot taken after `epochs` training epochs (0: `UNTRAINED`)."""
    return f"epoch={epochs - 1}" if epochs else UNTRAINED


def read_tags(setting: Setting, scale: Scale) -> list[tuple[list[str], list[str] | None]]:
    """What the report reads of a run of `setting`: groups of (weight snapshots, phrases; None:
    every phrase of `probes.contextual_decomposition.rule_phrases`). Figure 3's settings:
    P(omega | alpha) after every epoch. Figure 1's: every phrase at Figure 1's epoch and at the
    last; Figure 2's (the longest k) also alpha alone and alpha with the whole conduit after
    every epoch, so its claim is judged along training (every phrase at every epoch
    would cost the authors' reading about 50 min a run on one core). Every group also reads the
    untrained weights (`UNTRAINED`: the null model, and the curves' start)."""
    every_epoch = [epoch_tag(e) for e in range(0, scale.epochs + 1)]
    if setting.pool is not None:
        return [(every_epoch, ["open"])]
    figures = list(dict.fromkeys([UNTRAINED, epoch_tag(scale.figure1_epoch),
                                  epoch_tag(scale.epochs)]))  # fmt: skip
    whole = f"prefix={setting.conduit_length}"
    if setting.optimizer != "sgd":  # section 3's statement: the learning curve alone
        return [(every_epoch, ["prefix=0", whole])]
    if setting.conduit_length == max(scale.conduit_lengths):
        return [(figures, None), (every_epoch, ["prefix=0", whole])]
    return [(figures, None)]


def command_line() -> argparse.ArgumentParser:
    """`python -m experiments.paper2`'s options (built without importing the reproduction)."""
    parser = reproduction_parser(
        "`make reproduce-paper2`: \"Do LSTMs Learn Compositionally?\", Figures 1-3 and every "
        "finding of sections 4.1, 4.2 and 5, with contextual decomposition (CD) over training.",
        SCALES, "reports/paper2",
    )  # fmt: skip
    parser.add_argument(
        "--conduit-copies", type=int, nargs="+", default=None,
        help="readings of m in 4.2's predictable setting, the primary first (default: the "
        "scale's; default and paper scales: 1000 100)",
    )  # fmt: skip
    parser.add_argument(
        "--seeds", nargs="+", default=None, metavar="SEED",
        help="seeds, one run per setting each, e.g. 0 1 2 or 0,1,2 (default: the scale's; "
        "default and paper: 0 1 2)",
    )  # fmt: skip
    parser.add_argument(
        "--cells", nargs="+", default=None, metavar="CELL",
        help="train and measure only these settings' runs (their run folders' names, e.g. "
        "pooled_k=8_unpredictable; spaces or commas between them), at the scale's seeds or "
        "--seeds, the same runs the whole scale trains; no report: build it afterwards with "
        "--reuse-runs",
    )  # fmt: skip
    parser.add_argument("--before-fix", action="store_true", help="also read Figures 2-3's "
                        "runs by the authors' CD before their fix (nsaphra/acd 820fabd), in "
                        "float64, from their folders (docs/reproductions.md)")  # fmt: skip
    return parser


def listed(words: list[str]) -> list[str]:
    """The items of a command-line list given with spaces or commas between them."""
    return [item.strip() for word in words for item in word.split(",") if item.strip()]
