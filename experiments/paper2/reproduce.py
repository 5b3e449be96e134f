"""`make reproduce-paper2`: "Do LSTMs Learn Compositionally?", Figures 1-3 and every finding of
sections 4.1, 4.2 and 5, with contextual decomposition (CD) over training.

Three stages, each fit going through the suite's CLI (`python -m experiments fit ...`):
1. train one LSTM language model per corpus setting: conduit length k x rule count n with fresh
   conduits (4.1, Figures 1-2), and conduits from a pool of 100, unpredictable or predictable
   (4.2, Figure 3); weights are snapshot after every epoch;
2. as soon as a run is trained, decompose the logits of the snapshots the report reads on its
   held-out rule instances (`probes.contextual_decomposition`), read
   `P(omega | phrase) = softmax(v_phrase)[omega]` at the close symbol and keep the estimates in
   `<run>/measurements.json` (`runs`);
3. from the measurements alone, write `reports/paper2/{report.md, results.json, figures/, runs/}`
   and log them to W&B.

The scales are `scales.SCALES`; `--shard i/n` trains and measures the i-th of n parts of the runs
(split by run) and `--merge` writes the report from the shards' measurements.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from experiments.paper2.claims import error_claim, figure1_claims, figure2_claims, figure3_claims
from experiments.paper2.figures import figure1, figure2, figure3
from experiments.paper2.readings import Snapshot, combined
from experiments.paper2.report import figure_frames, report_text, seed_frame
from experiments.paper2.runs import measure_all, snapshots
from experiments.paper2.scales import (
    SCALES,
    Scale,
    Setting,
    epoch_tag,
    figure1_settings,
    figure3_settings,
)
from experiments.report import Claim, claims_frame
from experiments.runner import (
    Sitting,
    Stopwatch,
    keep_beside_report,
    kept_note,
    publish,
    reproduction_main,
    reproduction_parser,
)


def figure_values(measured: dict[tuple[Setting, int], dict[str, Snapshot]], scale: Scale) -> dict:
    """What Figures 1-3 plot, combined over seeds (`readings.combined`): Figure 1's snapshot by
    (k, n), Figure 2's prefixes by n at the longest k, Figure 3's curve of P(omega | alpha) by
    (k, m)."""
    analysed = {s: {tag: combined([measured[(s, seed)][tag] for seed in scale.seeds])
                    for tag in measured[(s, scale.seeds[0])]}
                for s in dict.fromkeys(s for s, _ in measured)}  # fmt: skip
    figure1_tag, figure2_tag = epoch_tag(scale.figure1_epoch), epoch_tag(scale.epochs)
    longest = max(scale.conduit_lengths)
    prefix_names = [f"prefix={i}" for i in range(longest + 1)]
    curve_tags = [epoch_tag(e) for e in range(1, scale.epochs + 1)]
    return {
        "figure1": {(s.conduit_length, s.rules): analysed[s][figure1_tag]
                    for s in figure1_settings(scale)},
        "figure2": {s.rules: [analysed[s][figure2_tag].phrase[p] for p in prefix_names]
                    for s in figure1_settings(scale) if s.conduit_length == longest},
        "figure3": {key: [analysed[s][tag].phrase["open"] for tag in curve_tags]
                    for key, s in figure3_settings(scale).items()},
    }  # fmt: skip


def reproduce(scale_name: str, out: Path, sitting: Sitting) -> list[Claim] | None:
    """Train every setting of Figures 1-3 once per seed, decompose their rules over training as
    each is trained, report from the runs' measurements alone; a shard only trains and measures
    its runs (None)."""
    scale = SCALES[scale_name]
    clock = Stopwatch()
    with clock.stage("training and analyses"):
        records = measure_all(scale, sitting)
    if not sitting.shard.whole:
        return None
    root, jobs = sitting.root, sitting.jobs
    with clock.stage("report"):
        measured = {key: snapshots(record) for key, record in records.items()}
        values = figure_values(measured, scale)
        fig1, fig2, curves = values["figure1"], values["figure2"], values["figure3"]
        errors = [snapshot.error for result in measured.values() for snapshot in result.values()]
        claims = (
            figure1_claims(fig1, scale)
            + figure2_claims(fig2[max(scale.rule_counts)], max(scale.rule_counts))
            + [claim for m in scale.conduit_copies for claim in figure3_claims(curves, scale, m)]
            + [error_claim(errors)]
        )
        folder = out / "figures"
        figures = {
            "fig1_rule_frequency": figure1(fig1, scale, folder / "fig1_rule_frequency.png"),
            "fig2_conduit_prefixes": figure2(fig2, max(scale.conduit_lengths), scale.epochs,
                                             folder / "fig2_conduit_prefixes.png"),
            "fig3_predictability": figure3(curves, scale, folder / "fig3_predictability.png"),
        }  # fmt: skip
        frames = figure_frames(fig1, fig2, curves, scale)
        predictability = set(figure3_settings(scale).values())
        frames["seeds"] = seed_frame(measured, predictability, epoch_tag(scale.figure1_epoch),
                                     scale)  # fmt: skip
    markdown = report_text(scale_name, scale, frames, clock, kept_note(list(records.values())),
                           root, jobs)  # fmt: skip
    tables = {"claims": claims_frame(claims), "figure1": frames["figure1"],
              "figure2": frames["figure2"].reset_index(),
              "figure3": frames["figure3"].reset_index(), "seeds": frames["seeds"]}  # fmt: skip
    publish(out, "paper2", claims, markdown, root, figures, tables)
    keep_beside_report("paper2", [(s.variant, seed) for s, seed in records], root, out)
    return claims


def main(argv: list[str] | None = None) -> list[Claim] | None:
    parser = reproduction_parser(__doc__.split("\n\n")[0], SCALES, "reports/paper2")
    parser.add_argument(
        "--conduit-copies", type=int, nargs="+", default=None,
        help="readings of m in 4.2's predictable setting, the primary first (default: the "
        "scale's; default and paper scales: 1000 100)",
    )  # fmt: skip
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=None,
        help="seeds, one run per setting each (default: the scale's; default and paper: 0 1 2)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    changes = {"conduit_copies": args.conduit_copies, "seeds": args.seeds}
    SCALES[args.scale] = replace(SCALES[args.scale],
                                 **{k: tuple(v) for k, v in changes.items() if v})  # fmt: skip
    return reproduction_main(parser.description, SCALES, "reports/paper2", reproduce, argv, parser)
