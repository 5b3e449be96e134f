"""The `integrated-gradients` probe: paper 4's stage 2 (section 3.2), the candidates' integrated
gradients."""

from __future__ import annotations

import math
from pathlib import Path

from probes.command.base import grouped
from probes.command.outputs import SMALLEST_POINTS, pyplot, save_figure
from probes.command.token_positioning import (
    IntegratedGradientsOptions,
    TokenPositioningProbe,
    reaches_the_decoder,
)
from probes.neuron_functions import attributions_before_output


class IntegratedGradientsProbe(TokenPositioningProbe):
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

    def rows_of_token(self, model, traced, token: int, options) -> list[dict]:
        if not reaches_the_decoder(traced, token):
            return []  # no decoder state h_(T-1) to attribute to
        rows = []
        maps = attributions_before_output(model, traced, token, options.ig_steps)
        for before, attributions in maps.items():
            importance = attributions.abs().mean(0)
            signed = attributions.mean(0)
            threshold = importance.mean()
            base = {"time": f"T-{before}", "samples": len(attributions)}
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
        run, tag = table["run"].iloc[0], table["checkpoint"].iloc[0]
        first = table[(table["run"] == run) & (table["checkpoint"] == tag)]
        figure = importance_figure(first)
        figure.suptitle(f"{table['group'].iloc[0]}/{Path(run).name} ({tag})", fontsize=9)
        return {"importance": save_figure(figure, folder / "integrated_gradients.png")}


LABEL_POINTS = SMALLEST_POINTS
"""The size of a token's label in the figure."""
MOST_LABELS = 60
"""Token labels a heat map shows at most: beyond, every k-th token is labelled."""


def importance_figure(first):
    """One heat map per step of one run's rows `first`: each token's mean |IG| per unit over its
    mean over units. Each token is a row labelled at `LABEL_POINTS`; the figure grows with the
    tokens labelled (every k-th beyond `MOST_LABELS`), 1.6 label heights apart."""
    plt = pyplot()
    times = list(dict.fromkeys(first["time"]))
    words = int(first.groupby("time")["word"].nunique().max())
    every = math.ceil(words / MOST_LABELS)
    height = max(5.0, 1.5 + 1.6 * LABEL_POINTS / 72 * math.ceil(words / every))
    figure, axes = plt.subplots(1, len(times), figsize=(6 * len(times), height), squeeze=False)
    for axis, time in zip(axes[0], times, strict=True):
        part = first[first["time"] == time]
        matrix = part.pivot_table(index="word", columns="unit", values="importance",
                                  sort=False)  # fmt: skip
        relative = matrix.div(matrix.mean(axis=1), axis=0)  # 1 = the filter's threshold
        image = axis.imshow(relative.to_numpy(), aspect="auto", cmap="magma", vmin=0, vmax=3,
                            interpolation="nearest")  # fmt: skip
        labels = [repr(word) for word in relative.index]
        axis.set_yticks(range(0, len(labels), every), labels[::every], fontsize=LABEL_POINTS)
        axis.set(xlabel="unit", title=f"h_({time}): mean |IG| / its mean over units",
                 ylabel="token" if every == 1 else f"token (one in {every} labelled)")  # fmt: skip
        figure.colorbar(image, ax=axis, fraction=0.04)
    return figure
