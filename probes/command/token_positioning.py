"""Paper 4's three-stage identification of neurons as probes of trained GRU token-positioning
runs (Lee et al., "Exposing the Functionalities of Neurons for GRU Seq2Seq", sections 3-4):
`svm-rfe` (stage 1, section 3.1), `integrated-gradients` (stage 2, section 3.2) and
`interventions` (stage 3, section 3.3: Table 1 and finding 4).

Each probe draws the rows of section 4 with `probes.neuron_functions.analysed_rows` and runs the
functions `experiments.paper4`'s `analyse` runs (`candidate_units`,
`attributions_before_output`, `identify_neurons`, `verify_neurons`), so with the same options
the probes and the reproduction compute the same numbers by construction. The defaults are the
paper's settings (`experiments.paper4`'s `paper` scale: the 50 most common tokens, positions
1-13, 500 rows per token); the reproduction's `default` scale analyses 200 rows per token
(`--rows-per-token 200`).

The probes compute on CPU whatever the command's device, in one torch thread as
`experiments.paper4`'s `analysis_of` does (the same numbers; the SVM and RFE are
scikit-learn's, and the GRU's steps over a few hundred short rows gain nothing from more threads,
which on shared cores slow them several times over); `--devices N` still spreads the runs over N
processes.

This module holds what the three share: the rows of section 4 and their options.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import torch

from datamodules.token_positioning import SPECIALS, SPLITS
from probes.command.base import ModelProbe, option
from probes.neuron_functions import (
    ANALYSED_POSITIONS,
    ANALYSED_SPLITS,
    ANALYSED_TOKENS,
    Traced,
    analysable,
    analysed_rows,
    analysed_tokens,
)
from storage.files import RunFileError
from storage.run_folder import RunFolder

TOKEN_POSITIONING = ("datamodules.TokenPositioningDataModule",
                     "datamodules.token_positioning.TokenPositioningDataModule")  # fmt: skip
MANIPULATED = {
    "storing_zero": "storing", "storing_previous": "storing",
    **{f"counting_k{k}": "counting" for k in (1, 2, 3)},
    **{f"counting_before_trigger_k{k}": "counting" for k in (1, 2, 3)},
    **{f"triggering_k{k}": "triggering" for k in (1, 2, 3, 4)},
    "outputting_zero": "outputting", "others_zero": "outputting",
}  # fmt: skip
"""The function whose units each manipulation of `verify_neurons` edits (`others_zero` zeroes
every unit but the outputting ones)."""


@dataclass(frozen=True)
class AnalysedRowsOptions:
    tokens: int = option(ANALYSED_TOKENS, "the most common words analysed (section 4: 50)")
    rows_per_token: int = option(500, "held-out rows requested per token, drawn with --seed "
                                 "(experiments.paper4: 500 at the paper scale, 200 at its "
                                 "default scale; the paper's Figure 2 shows 500)")  # fmt: skip
    positions: list = option(list(ANALYSED_POSITIONS), "positions T requested (section 4: 1-13)",
                             type=int)  # fmt: skip
    splits: list = option(list(ANALYSED_SPLITS), "splits whose line pairs are re-requested")
    answered: str = option("correct", "analyse only the rows the model answers correctly (the "
                           "paper) or all of them", choices=("correct", "all"))  # fmt: skip
    seed: int = option(0, "seed of the rows drawn per token, of the other tokens' rows of the "
                       "storing hypothesis and of the SVMs")  # fmt: skip


@dataclass(frozen=True)
class SvmRfeOptions(AnalysedRowsOptions):
    keep: float = option(0.5, "share of units recursive feature elimination keeps (section 3.1's "
                         "\"less-rigorous selection\"; experiments.paper4: 0.5)")  # fmt: skip


@dataclass(frozen=True)
class IntegratedGradientsOptions(AnalysedRowsOptions):
    ig_steps: int = option(32, "integration points of integrated gradients (captum's default)")


@dataclass(frozen=True)
class InterventionsOptions(SvmRfeOptions):
    ig_steps: int = option(32, "integration points of integrated gradients (captum's default)")
    control_draws: int = option(
        3,
        "draws of as many random non-candidate units, each edited "
        "like the named ones (the control rows control.*; 0: none)",
    )


class TokenPositioningProbe(ModelProbe):
    """A paper-4 probe: a GRU `Seq2Seq` trained on `TokenPositioningDataModule`, its rows of
    section 4 (`analysed_rows`) and the tokens stage 1 can classify (`analysable`)."""

    def validate(self, options) -> None:
        if options.tokens < 2:
            raise ValueError(f"--tokens {options.tokens}: stage 1 needs at least 2 tokens")
        if options.rows_per_token < 2:
            raise ValueError(f"--rows-per-token {options.rows_per_token}: give at least 2")
        if min(options.positions) < 1:
            raise ValueError(f"--positions {options.positions}: positions T start at 1")
        unknown = sorted(set(options.splits) - set(SPLITS))
        if unknown:
            raise ValueError(f"--splits {' '.join(unknown)}: give some of {', '.join(SPLITS)}")
        if hasattr(options, "keep") and not 0 < options.keep <= 1:
            raise ValueError(f"--keep {options.keep} is not in (0, 1]")
        if hasattr(options, "ig_steps") and options.ig_steps < 1:
            raise ValueError(f"--ig-steps {options.ig_steps}: give at least 1")

    def check(self, run: RunFolder, tag: str, options) -> None:
        super().check(run, tag, options)
        checkpoint = run.checkpoint(tag)
        path = self.reads(run, tag, options)[0]
        settings = checkpoint["hyper_parameters"]
        if settings.get("cell", "gru") != "gru" or settings.get("attention", "none") != "none":
            raise RunFileError(
                f"{path} is a {settings.get('cell')} seq2seq with attention "
                f"{settings.get('attention')!r}: {self.name} probes paper 4's vanilla GRU "
                "(cell gru, attention none); give --runs of experiments/configs/paper4/gru.yaml."
            )
        data = (checkpoint.get("datamodule_hyper_parameters") or {}).get("_class_path")
        if data not in TOKEN_POSITIONING:
            raise RunFileError(
                f"{path} was trained on {data or 'an unrecorded DataModule'}: {self.name} "
                "re-requests tokens of a datamodules.TokenPositioningDataModule; give --runs of "
                "experiments/configs/paper4/gru.yaml."
            )

    def rows(self, run, tag, options, device) -> list[dict]:
        with one_thread():
            return self.token_rows(run, tag, options)

    def token_rows(self, run: RunFolder, tag: str, options) -> list[dict]:
        """`rows`, in one torch thread: each analysed token's `token_columns`, then its own."""
        model, datamodule, traced, tokens = self.analysed(run, tag, options)
        return [{**token_columns(datamodule, traced, token), **row} for token in tokens
                for row in self.rows_of_token(model, traced, token, options)]  # fmt: skip

    def rows_of_token(self, model, traced: Traced, token: int, options) -> list[dict]:
        """The probe's rows of one analysed token (without its `token_columns`)."""
        raise NotImplementedError

    def analysed(self, run: RunFolder, tag: str, options):
        """The model, its DataModule, the rows of section 4 and the analysable tokens."""
        torch.manual_seed(0)  # as experiments.paper4's analyse (nothing here draws from it)
        model, datamodule = run.model(tag), run.datamodule(tag)
        words = len(datamodule.vocab) - len(SPECIALS) - datamodule.max_tokens
        if options.tokens > words:
            raise RunFileError(
                f"{run.path}: --tokens {options.tokens} is more than the {words} words of the "
                "run's vocabulary; ask for fewer."
            )
        tokens = analysed_tokens(datamodule, options.tokens)
        try:
            traced, _ = analysed_rows(model, datamodule, tokens, options.positions,
                                      options.rows_per_token, options.splits,
                                      options.answered == "correct", options.seed)  # fmt: skip
        except ValueError as error:  # no pair holds the tokens at the positions
            raise RunFileError(f"{run.path}: {error} Ask for other --positions.") from None
        return model, datamodule, traced, [t for t in tokens if analysable(traced, t)]


@contextmanager
def one_thread():
    """torch in one thread inside, restored after (see the module docstring)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def token_columns(datamodule, traced: Traced, token: int) -> dict:
    """A token's id, word and rows (answered correctly unless --answered all)."""
    return {"token": token, "word": datamodule.vocab[token],
            "token_rows": int((traced.token == token).sum())}  # fmt: skip


def reaches_the_decoder(traced: Traced, token: int) -> bool:
    """Whether some row of `token` has T >= 2 (stages 2-3 need h_(T-1) in the decoder)."""
    return bool((traced.position[traced.token == token] >= 2).any())
