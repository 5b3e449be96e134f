"""Paper 4's three-stage identification of neurons as probes of trained GRU token-positioning
runs (Lee et al., "Exposing the Functionalities of Neurons for GRU Seq2Seq", sections 3-4):
`svm-rfe` (stage 1, section 3.1), `integrated-gradients` (stage 2, section 3.2) and
`interventions` (stage 3, section 3.3: Table 1 and finding 4).

Each probe draws the rows of section 4 with `probes.neuron_functions.analysed_rows` and runs the
functions `experiments/paper4.py`'s `analyse` runs (`candidate_units`,
`attributions_before_output`, `identify_neurons`, `verify_neurons`), so with the same options
the probes and the reproduction compute the same numbers by construction. The defaults are the
paper's settings (`experiments/paper4.py`'s `paper` scale: the 50 most common tokens, positions
1-13, 500 rows per token); the reproduction's `default` scale analyses 200 rows per token
(`--rows-per-token 200`).

The probes compute on CPU whatever the command's device, in one torch thread as
`experiments/paper4.py`'s `analysis_of` does (the same numbers; the SVM and RFE are
scikit-learn's, and the GRU's steps over a few hundred short rows gain nothing from more threads,
which on shared cores slow them several times over); `--devices N` still spreads the runs over N
processes.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import torch

from datamodules.token_positioning import SPECIALS, SPLITS
from probes.catalogue import ModelProbe, grouped, option, run_labels, units_text
from probes.neuron_functions import (
    ANALYSED_POSITIONS,
    ANALYSED_SPLITS,
    ANALYSED_TOKENS,
    DIAGNOSTICS,
    HYPOTHESES,
    MANIPULATIONS,
    PLAUSIBLE,
    Traced,
    analysable,
    analysed_rows,
    analysed_tokens,
    attributions_before_output,
    candidate_units,
    identify_neurons,
    verify_neurons,
)
from probes.outputs import pyplot, save_figure
from probes.runs import RunFolder
from storage.files import RunFileError

PAPER4 = 'paper 4 (Lee et al., "Exposing the Functionalities of Neurons for GRU Seq2Seq")'
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


# ---- the rows of section 4, shared by the three probes -----------------------------------------
@dataclass(frozen=True)
class AnalysedRowsOptions:
    tokens: int = option(ANALYSED_TOKENS, "the most common words analysed (section 4: 50)")
    rows_per_token: int = option(500, "held-out rows requested per token, drawn with --seed "
                                 "(experiments/paper4.py: 500 at the paper scale, 200 at its "
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
                         "\"less-rigorous selection\"; experiments/paper4.py: 0.5)")  # fmt: skip


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

    paper = f"{PAPER4}, section 3"

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
        """`rows`, in one torch thread."""
        raise NotImplementedError

    def analysed(self, run: RunFolder, tag: str, options):
        """The model, its DataModule, the rows of section 4 and the analysable tokens."""
        torch.manual_seed(0)  # as experiments/paper4.py's analyse (nothing here draws from it)
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


# ---- stage 1: SVM and recursive feature elimination (section 3.1) ------------------------------
class SvmRfeProbe(TokenPositioningProbe):
    name = "svm-rfe"
    paper = f"{PAPER4}, section 3.1"
    purpose = "stage 1: is each hypothesis plausible per token (linear SVM), and its RFE units"
    details = (
        "For each analysed token (the TOKENS most common words, held-out rows re-requested with "
        "the token at each of POSITIONS, the rows the model answers correctly) and hypothesis: "
        "storing (h_t, t = -1..T-1, of the token's rows against as many rows of other tokens), "
        "counting (h_t, t = 0..T-1, labelled T - t) and triggering (h_(T-1) against h_t, t = "
        "0..T-2), a linear SVM on every unit; the hypothesis is plausible when its (balanced) "
        "training accuracy exceeds 95%, and recursive feature elimination keeps KEEP of the "
        "units as candidates (probes.neuron_functions.candidate_units). One row per run, "
        "checkpoint, token and hypothesis; units indexed from 0."
    )
    options = SvmRfeOptions

    def token_rows(self, run: RunFolder, tag: str, options) -> list[dict]:
        _, datamodule, traced, tokens = self.analysed(run, tag, options)
        rows = []
        for token in tokens:
            found = candidate_units(traced, token, options.keep, options.seed)
            for hypothesis in HYPOTHESES:
                candidates = found[hypothesis]
                rows.append({
                    **token_columns(datamodule, traced, token), "hypothesis": hypothesis,
                    "samples": candidates.samples, "accuracy": candidates.accuracy,
                    "plausible": candidates.plausible, "size": len(candidates.units),
                    "candidates": units_text(candidates.units),
                })  # fmt: skip
        return rows

    def summary_table(self, table):
        return grouped(table, ["hypothesis"], {
            "runs": ("run", "nunique"), "tokens": ("token", "count"),
            "accuracy": ("accuracy", "mean"), "plausible": ("plausible", "mean"),
            "size": ("size", "mean"),
        })  # fmt: skip

    def figures(self, table, options, folder):
        plt = pyplot()

        labels = run_labels(table)
        figure, axis = plt.subplots(figsize=(6, 4))
        width = 0.8 / len(labels)
        spread = torch.Generator().manual_seed(0)
        for index, label in enumerate(labels):
            part = table[table["group"] + " " + table["checkpoint"] == label]
            where = [HYPOTHESES.index(h) + index * width for h in part["hypothesis"]]
            jitter = (torch.rand(len(where), generator=spread) - 0.5) * width * 0.8
            axis.scatter([w + float(j) for w, j in zip(where, jitter, strict=True)],
                         part["accuracy"], s=6, alpha=0.6, label=label)  # fmt: skip
        axis.axhline(PLAUSIBLE, color="grey", linewidth=0.8, linestyle="--")
        axis.set_xticks([i + 0.4 - width / 2 for i in range(len(HYPOTHESES))], HYPOTHESES)
        axis.set_ylabel("SVM training accuracy (balanced)")
        axis.set_title("Stage 1, one point per token and run: plausible above 95% (dashed)",
                       fontsize=9)  # fmt: skip
        axis.legend(fontsize=7, markerscale=2)
        return {"accuracy": save_figure(figure, folder / "svm_rfe_accuracy.png")}


# ---- stage 2: integrated gradients (section 3.2) -----------------------------------------------
class IntegratedGradientsProbe(TokenPositioningProbe):
    name = "integrated-gradients"
    paper = f"{PAPER4}, section 3.2"
    purpose = "stage 2: each unit's integrated-gradients attribution to P(token at T)"
    details = (
        "For each analysed token (rows as svm-rfe's), integrated gradients (captum, IG_STEPS "
        "points, zero baseline) of P(token at T) with respect to the decoder state h_(T-1) (rows "
        "with T >= 2) and h_(T-2) (rows with T >= 3, where the counting units act through the "
        "triggering units a step later), decoder inputs held at the model's own outputs "
        "(probes.neuron_functions.attributions_before_output). One row per run, checkpoint, "
        "token, time (T-1, T-2) and unit: the unit's mean |attribution| over the rows "
        "(`importance`, what the filter reads), its mean signed attribution, and `above_mean`: "
        "importance at least the mean over all units, the filter's test (a candidate of stage 1 "
        "stays when it passes at T-1; a counting candidate at T-1 or T-2)."
    )
    options = IntegratedGradientsOptions

    def token_rows(self, run: RunFolder, tag: str, options) -> list[dict]:
        model, datamodule, traced, tokens = self.analysed(run, tag, options)
        rows = []
        for token in tokens:
            if not reaches_the_decoder(traced, token):
                continue  # no decoder state h_(T-1) to attribute to
            maps = attributions_before_output(model, traced, token, options.ig_steps)
            for before, attributions in maps.items():
                importance = attributions.abs().mean(0)
                signed = attributions.mean(0)
                threshold = importance.mean()
                base = {**token_columns(datamodule, traced, token), "time": f"T-{before}",
                        "samples": len(attributions)}  # fmt: skip
                rows += [{**base, "unit": unit, "importance": float(importance[unit]),
                          "attribution": float(signed[unit]),
                          "above_mean": bool(importance[unit] >= threshold)}
                         for unit in range(len(importance))]  # fmt: skip
        return rows

    def summary_table(self, table):
        per_token = table.groupby(["group", "checkpoint", "run", "token", "time"], sort=False).agg(
            samples=("samples", "first"), importance=("importance", "mean"),
            above_mean=("above_mean", "sum"), units=("unit", "count"),
        ).reset_index()  # fmt: skip
        per_token["above_share"] = per_token["above_mean"] / per_token["units"]
        return grouped(per_token, ["time"], {
            "runs": ("run", "nunique"), "tokens": ("token", "count"),
            "samples": ("samples", "mean"), "importance": ("importance", "mean"),
            "units_above_mean": ("above_mean", "mean"), "share_above_mean": ("above_share", "mean"),
        })  # fmt: skip

    def figures(self, table, options, folder):
        plt = pyplot()

        run, tag = table["run"].iloc[0], table["checkpoint"].iloc[0]
        first = table[(table["run"] == run) & (table["checkpoint"] == tag)]
        times = list(dict.fromkeys(first["time"]))
        figure, axes = plt.subplots(1, len(times), figsize=(6 * len(times), 5), squeeze=False)
        for axis, time in zip(axes[0], times, strict=True):
            part = first[first["time"] == time]
            matrix = part.pivot_table(index="word", columns="unit", values="importance",
                                      sort=False)  # fmt: skip
            relative = matrix.div(matrix.mean(axis=1), axis=0)  # 1 = the filter's threshold
            image = axis.imshow(relative.to_numpy(), aspect="auto", cmap="magma", vmin=0, vmax=3,
                                interpolation="nearest")  # fmt: skip
            axis.set_yticks(range(len(relative)), [repr(w) for w in relative.index], fontsize=5)
            axis.set(xlabel="unit", title=f"h_({time}): mean |IG| / its mean over units")
            figure.colorbar(image, ax=axis, fraction=0.04)
        figure.suptitle(f"{run} ({tag})", fontsize=9)
        return {"importance": save_figure(figure, folder / "integrated_gradients.png")}


# ---- stage 3: verification by manipulation (section 3.3, Table 1, finding 4) -------------------
class InterventionsProbe(TokenPositioningProbe):
    name = "interventions"
    paper = f"{PAPER4}, section 4 (Table 1)"
    purpose = "stage 3: accuracy after Table 1's manipulations of the identified neurons"
    details = (
        "Per analysed token (rows as svm-rfe's), the storing, counting, triggering and "
        "outputting units are identified by stages 1-2 (probes.neuron_functions."
        "identify_neurons: SVM + RFE keeping KEEP, then the integrated-gradients filter) and "
        "manipulated on the token's rows with T >= 2 (verify_neurons): storing units zeroed at "
        "T-1 or replaced by their previous values (the token at T), counting units at T-1 set "
        "to their values at T-1-k (the token at T+k; counting_before_trigger_k edits T-2, a "
        "diagnostic), triggering units' T-1 values written at T-1-k (the token at T-k), and at "
        "T the outputting units zeroed or every other unit zeroed (finding 4). One row per run, "
        "checkpoint, token and manipulation: hits, rows and accuracy, and the edited function's "
        "units (indexed from 0; others_zero zeroes every unit but these); rows control.* edit "
        "as many random units that are not the function's candidates instead (CONTROL_DRAWS "
        "draws, pooled). The summary is "
        "experiments/paper4.py's Table 1: per run, hits / rows over all tokens, then the mean "
        "over the runs of a group."
    )
    options = InterventionsOptions
    version = 2  # control rows (issue 17)

    def token_rows(self, run: RunFolder, tag: str, options) -> list[dict]:
        model, datamodule, traced, tokens = self.analysed(run, tag, options)
        rows = []
        for token in tokens:
            if not reaches_the_decoder(traced, token):
                continue  # nothing to filter or manipulate (experiments/paper4.py would stop)
            neurons = identify_neurons(model, traced, token, options.keep, options.seed,
                                       options.ig_steps)  # fmt: skip
            verification = verify_neurons(model, traced, neurons, options.control_draws,
                                          options.seed)  # fmt: skip
            controls = [f"control.{m}" for m in MANIPULATIONS if f"control.{m}" in verification]
            for manipulation in MANIPULATIONS + DIAGNOSTICS + tuple(controls):
                hits, total = verification[manipulation]
                control = manipulation.startswith("control.")
                function = MANIPULATED[manipulation.removeprefix("control.")]
                rows.append({
                    **token_columns(datamodule, traced, token), "manipulation": manipulation,
                    "diagnostic": manipulation in DIAGNOSTICS, "control": control, "hits": hits,
                    "rows": total, "accuracy": hits / total if total else None,
                    "function": function, "size": len(neurons.units(function)),
                    "units": "" if control else units_text(neurons.units(function)),
                })  # fmt: skip
        return rows

    def summary_table(self, table):
        per_run = table.groupby(["group", "checkpoint", "run", "manipulation"], sort=False).agg(
            hits=("hits", "sum"), rows=("rows", "sum"), tokens=("token", "count"),
        ).reset_index()  # fmt: skip
        per_run["accuracy"] = per_run["hits"] / per_run["rows"].where(per_run["rows"] > 0)
        return grouped(per_run, ["manipulation"], {
            "runs": ("run", "count"), "accuracy": ("accuracy", "mean"),
            "per_run": ("accuracy", lambda s: ", ".join(f"{v:.3f}" for v in s)),
            "rows": ("rows", "sum"), "tokens": ("tokens", "mean"),
        })  # fmt: skip

    def figures(self, table, options, folder):
        plt = pyplot()

        everything = self.summary_table(table)
        control = everything["manipulation"].str.startswith("control.")
        summary, controls = everything[~control], everything[control]
        names = list(MANIPULATIONS + DIAGNOSTICS)
        labels = run_labels(summary)
        figure, axis = plt.subplots(figsize=(11, 4))
        width = 0.8 / len(labels)
        for index, label in enumerate(labels):
            part = summary[summary["group"] + " " + summary["checkpoint"] == label]
            hatches = ["//" if m in DIAGNOSTICS else "" for m in part["manipulation"]]
            axis.bar([names.index(m) + index * width for m in part["manipulation"]],
                     part["accuracy"], width, color=f"C{index % 10}", label=label,
                     hatch=hatches)  # fmt: skip
            random = controls[controls["group"] + " " + controls["checkpoint"] == label]
            axis.scatter([names.index(m.removeprefix("control.")) + index * width
                          for m in random["manipulation"]], random["accuracy"], marker="_",
                         s=120, color="black", label="random units (control)" if not index
                         else None, zorder=3)  # fmt: skip
        ticks = [n.replace("counting_before_trigger_", "counting at\nT-2, ") for n in names]
        axis.set_xticks([i + 0.4 - width / 2 for i in range(len(names))],
                        [n.replace("_", "\n", 1) for n in ticks], fontsize=6)  # fmt: skip
        axis.set(ylim=(0, 1), ylabel="accuracy after the manipulation (mean over runs)")
        axis.set_title("Table 1 and finding 4: the token at the expected position (hatched: "
                       "diagnostics, not in the paper)", fontsize=9)  # fmt: skip
        axis.legend(fontsize=7)
        return {"table1": save_figure(figure, folder / "interventions_table1.png")}
