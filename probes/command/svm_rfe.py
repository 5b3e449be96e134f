"""The `svm-rfe` probe: paper 4's stage 1 (section 3.1), candidate units by a linear SVM with
recursive feature elimination."""

from __future__ import annotations

import torch

from probes.command.base import run_labels, units_text
from probes.command.outputs import legend_beside, pyplot, save_figure
from probes.command.token_positioning import (
    SvmRfeOptions,
    TokenPositioningProbe,
)
from probes.neuron_functions import HYPOTHESES, PLAUSIBLE, candidate_units


class SvmRfeProbe(TokenPositioningProbe):
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
    summary_by = ["hypothesis"]
    summary_columns = {
        "runs": ("run", "nunique"), "tokens": ("token", "count"),
        "accuracy": ("accuracy", "mean"), "plausible": ("plausible", "mean"),
        "size": ("size", "mean"),
    }  # fmt: skip

    def rows_of_token(self, model, traced, token: int, options) -> list[dict]:
        found = candidate_units(traced, token, options.keep, options.seed)
        rows = []
        for hypothesis in HYPOTHESES:
            candidates = found[hypothesis]
            rows.append({
                "hypothesis": hypothesis, "samples": candidates.samples,
                "accuracy": candidates.accuracy, "plausible": candidates.plausible,
                "size": len(candidates.units), "candidates": units_text(candidates.units),
            })  # fmt: skip
        return rows

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
        legend_beside(axis, markerscale=2)
        return {"accuracy": save_figure(figure, folder / "svm_rfe_accuracy.png")}
