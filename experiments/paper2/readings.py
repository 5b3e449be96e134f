"""Paper 2's readings of a run: P(omega | phrase) by contextual decomposition (CD) at the close
symbol of its probe rules (section 3.1), as estimates over the rules, and their combination
over seeds; and the same as the plain JSON a run's `measurements.json` keeps (`snapshot_record`,
`snapshot_of`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from datamodules.rule_corpora_authors import AuthorsCorpus, authors_evaluation_corpus
from experiments.paper2.scales import STREAM_LENGTH
from probes.contextual_decomposition import BiasAtPhraseEnd, mean_and_standard_error
from probes.stream_decomposition import stream_close_probabilities
from storage.run_folder import RunFolder


@dataclass(frozen=True)
class Estimate:
    """A mean over the probe rules and its standard error; and the mean of the logarithms and
    its standard error (`geometric`: how the paper averaged its rules is unknown, and the
    authors' code keeps log-softmax scores, whose mean is a geometric mean's logarithm)."""

    mean: float
    standard_error: float
    log_mean: float | None = None
    log_standard_error: float | None = None

    def geometric(self) -> Estimate:
        """The geometric mean, with its standard error by the delta method."""
        value = math.exp(self.log_mean)
        return Estimate(value, value * self.log_standard_error, self.log_mean,
                        self.log_standard_error)  # fmt: skip

    def above(self, other: Estimate, relative: float = 0.1) -> bool:
        """Higher than `other` by more than twice the standard error of the difference and by
        more than `relative` of the larger mean (near chance, 1/|V|, tiny differences can be
        many standard errors apart and still mean nothing; 0 where the paper's change is
        "slight")."""
        spread = (self.standard_error**2 + other.standard_error**2) ** 0.5
        margin = max(2 * spread, relative * max(self.mean, other.mean))
        return self.mean - other.mean > margin


@dataclass(frozen=True)
class Snapshot:
    """CD at one weight snapshot: P(omega | phrase) by phrase name, the full model's P(omega),
    and the largest approximation error over every position of every decomposition."""

    phrase: dict[str, Estimate]
    full: Estimate
    error: float

    def alpha(self) -> Estimate:
        """P(omega | alpha alone): the phrase `open` where every phrase is read, `prefix=0` where
        only alpha and alpha with the whole conduit are (one phrase under two names)."""
        return self.phrase["open" if "open" in self.phrase else "prefix=0"]


def estimate(values: torch.Tensor) -> Estimate:
    """Arithmetic and log-space means of probabilities `values` `[rules]` (a probability of 0,
    below float64's range, counts as 1e-300)."""
    logs = values.to(torch.float64).clamp_min(1e-300).log()
    return Estimate(*mean_and_standard_error(values), *mean_and_standard_error(logs))


def over_seeds(estimates: Sequence[Estimate]) -> Estimate:
    """The mean over seeds of each seed's mean (and of its log-space mean), with its standard
    error over seeds; with one seed, that seed's estimate (standard error over the rules)."""
    if len(estimates) == 1:
        return estimates[0]
    means = torch.tensor([e.mean for e in estimates], dtype=torch.float64)
    if any(e.log_mean is None for e in estimates):
        return Estimate(*mean_and_standard_error(means))
    logs = torch.tensor([e.log_mean for e in estimates], dtype=torch.float64)
    return Estimate(*mean_and_standard_error(means), *mean_and_standard_error(logs))


def geometric(snapshot: Snapshot) -> Snapshot:
    """`snapshot` with every estimate its geometric mean (`Estimate.geometric`)."""
    return Snapshot({name: value.geometric() for name, value in snapshot.phrase.items()},
                    snapshot.full.geometric(), snapshot.error)  # fmt: skip


def combined(snapshots: Sequence[Snapshot]) -> Snapshot:
    """One snapshot of several seeds' (`over_seeds` for each phrase and the full model)."""
    return Snapshot(
        {name: over_seeds([s.phrase[name] for s in snapshots]) for name in snapshots[0].phrase},
        over_seeds([s.full for s in snapshots]),
        max(s.error for s in snapshots),
    )


@dataclass(frozen=True)
class CdSettings:
    """Which CD reads a run's model: `bias_at_phrase_end="irrelevant"` the authors' CD before
    their fix (`probes.contextual_decomposition.bias_with_phrase`), `dtype` (e.g.
    `torch.float64`) the model cast to it first; the defaults (`FIXED_CD`): the fixed CD, in the
    run's own dtype, as the reproduction reads."""

    bias_at_phrase_end: BiasAtPhraseEnd = "relevant"
    dtype: torch.dtype | None = None


FIXED_CD = CdSettings()


def close_probabilities(
    run: Path, tags: list[str], only: Sequence[str] | None = None, cd: CdSettings = FIXED_CD
) -> dict[str, Snapshot]:
    """For each weight snapshot `tag`, P(omega | phrase) at the close symbol of the run's probe
    rules (section 3.1: softmax of the phrase's part of the logits), for every phrase of
    `probes.contextual_decomposition.rule_phrases` (or the phrases named in `only`), decomposed
    by `cd` in one batch (`rule_close_probabilities`, which the `contextual-decomposition` probe
    runs too), as estimates over the rules."""
    # the probe command's module: Lightning, sklearn and captum, which a report need not load
    from probes.command.contextual_decomposition import rule_close_probabilities

    measured = rule_close_probabilities(RunFolder(run), tags, only,
                                        bias_at_phrase_end=cd.bias_at_phrase_end,
                                        dtype=cd.dtype)  # fmt: skip
    return {
        tag: Snapshot(
            {name: estimate(values) for name, values in result.phrase.items()},
            estimate(result.full),
            result.error,
        )
        for tag, result in measured.items()
    }


def snapshot_record(snapshot: Snapshot) -> dict:
    """`snapshot` as JSON: `{"phrase": {name: estimate}, "full": estimate, "error"}`, each
    estimate `{"mean", "standard_error", "log_mean", "log_standard_error"}`, every number to six
    significant digits (so the report built now and one rebuilt from the file are equal)."""

    def rounded(value):
        if isinstance(value, dict):
            return {key: rounded(item) for key, item in value.items()}
        return float(f"{value:.6g}") if isinstance(value, float) else value

    return rounded(asdict(snapshot))


def snapshot_of(record: dict) -> Snapshot:
    """The `Snapshot` a `snapshot_record` holds."""
    return Snapshot(
        {name: Estimate(**value) for name, value in record["phrase"].items()},
        Estimate(**record["full"]),
        record["error"],
    )


# ---- the authors' reading: their test streams, carried state, omega's own step ----
AUTHORS, AUTHORS_AT_CLOSE, AUTHORS_DOMAIN = "authors", "authors_at_close", "authors_domain"
STREAM_READINGS = {
    AUTHORS: "the authors' analysis (lm_synthetic_decomposition.py): their test.txt stream (fresh "
    "conduits), CD from the state carried across 35-token windows, P read at omega's own step",
    AUTHORS_AT_CLOSE: "the same stream and start state, P read at the text's step (the last "
    "conduit token): what the start state alone changes",
    AUTHORS_DOMAIN: "the authors' analysis on their domain_test.txt stream (the training pool's "
    "conduits, 4.2's runs only), P read at omega's own step",
}


def authors_streams(data, length: int = STREAM_LENGTH) -> dict[str, AuthorsCorpus]:
    """The authors' test documents for a run's corpus (`RuleCorpusDataModule` `data`), by their
    procedure (`datamodules.rule_corpora_authors.authors_evaluation_corpus`) over the run's
    Sigma and k: `test` (their `test.txt`, random tokens between the symbols, their analysis's
    default) and, for a pooled corpus (4.2), `domain_test` (their `domain_test.txt`: rule i takes
    pool conduit `i // conduit_count % 100`, as written; the two tokens their longer conduits
    leave after `)` are Sigma's id 0 here, read by no measurement); `length` tokens each."""
    h = data.hparams
    train = data.corpus("train")
    settings = dict(length=length, vocab_size=train.vocabulary - 1,
                    rule_length=h.conduit_length + 2, seed=h.data_seed + 5)  # fmt: skip
    streams = {"test": authors_evaluation_corpus(None, **settings)}
    if h.conduit_pool is not None:
        pool = [conduit + [0, 0] for conduit in train.conduits.tolist()]
        conduit_count = max(1, h.conduit_copies // max(h.rules // h.conduit_pool, 1))
        streams["domain_test"] = authors_evaluation_corpus(pool, conduit_count=conduit_count,
                                                           **settings)  # fmt: skip
    return streams


def stream_snapshots(
    run: Path,
    tags: list[str],
    only: Sequence[str] | None = None,
    cd: CdSettings = FIXED_CD,
    stream_length: int = STREAM_LENGTH,
    domain: bool = True,
) -> dict[str, dict[str, Snapshot]]:
    """The authors' readings (`STREAM_READINGS`) of a run's weight snapshots `tags`, for the
    phrases named in `only` (None: all), each rule of their streams (`stream_length` tokens)
    decomposed by `cd` (`probes.stream_decomposition.stream_close_probabilities`): by reading,
    by tag. With `domain` False, their test stream alone (`AUTHORS`, `AUTHORS_AT_CLOSE`)."""
    folder = RunFolder(run)
    data, model = folder.datamodule("last"), folder.model("last").to(dtype=cd.dtype)
    train = data.corpus("train")
    streams = authors_streams(data, stream_length)
    if not domain:
        streams.pop("domain_test", None)
    readings: dict[str, dict[str, Snapshot]] = {AUTHORS: {}, AUTHORS_AT_CLOSE: {}}
    if "domain_test" in streams:
        readings[AUTHORS_DOMAIN] = {}
    for tag in tags:
        model.load_state_dict(folder.state_dict(tag))
        for name, stream in streams.items():
            read = stream_close_probabilities(
                model, stream.tokens, train.conduit_length, train.open_symbol,
                train.close_symbol, only, bias_at_phrase_end=cd.bias_at_phrase_end,
            )  # fmt: skip
            after = Snapshot({phrase: estimate(v) for phrase, v in read.after_close.items()},
                             estimate(read.full_after_close), read.error)  # fmt: skip
            if name == "test":
                readings[AUTHORS][tag] = after
                readings[AUTHORS_AT_CLOSE][tag] = Snapshot(
                    {phrase: estimate(v) for phrase, v in read.at_close.items()},
                    estimate(read.full_at_close), read.error,
                )  # fmt: skip
            else:
                readings[AUTHORS_DOMAIN][tag] = after
    return readings
