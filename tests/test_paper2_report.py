"""Paper 2's report tables on hand-made readings with known rows."""

from dataclasses import replace

from experiments.paper2.readings import Estimate, Snapshot
from experiments.paper2.report import seed_frame
from experiments.paper2.scales import (
    SCALES,
    Setting,
    epoch_tag,
    figure3_settings,
    optimizer_settings,
)

SCALE = replace(SCALES["default"], epochs=8, figure1_epoch=6, seeds=(0,))


def read(phrase: str, by_epoch: dict[int, float]) -> dict[str, Snapshot]:
    """A run whose `phrase` (alpha alone) gives omega these probabilities after these epochs."""
    return {epoch_tag(e): Snapshot({phrase: Estimate(p, 0.01)}, Estimate(p, 0.01), 0.0)
            for e, p in by_epoch.items()}  # fmt: skip


def test_each_run_table_holds_every_run_in_natural_order():
    """Every run has its rows: Figure 1's cells at Figure 1's epoch; the runs read along
    training (the authors' generator's Figure 3 runs, those with momentum) after the first and
    the last quarter, their alpha read under either phrase name; n = 300 comes before n = 1000."""
    along = {2: 0.1, 6: 0.7, 8: 0.9}
    measured = {
        (Setting(8, 1000), 0): read("open", {6: 0.99}),
        (Setting(8, 300), 0): read("open", {6: 0.5}),
        (optimizer_settings(SCALE)["momentum"], 0): read("prefix=0", along),
        (figure3_settings(SCALE, "authors")[(8, 0)], 0): read("open", along),
    }
    frame = seed_frame(measured, epoch_tag(SCALE.figure1_epoch), SCALE)
    assert list(zip(frame["run"], frame["epoch"], frame["P(omega|alpha)"], strict=True)) == [
        ("k=8_n=300", 6, 0.5),
        ("k=8_n=1000", 6, 0.99),
        ("k=8_n=1000_momentum", 2, 0.1),
        ("k=8_n=1000_momentum", 8, 0.9),
        ("pooled_k=8_unpredictable_authors_generator", 2, 0.1),
        ("pooled_k=8_unpredictable_authors_generator", 8, 0.9),
    ]


def test_figure1_keeps_its_legend_off_the_data_and_equal_curves_apart():
    """n = 300 and n = 1000 both at the ceiling: their curves are drawn apart (shifted in k,
    the larger n thinner on top), and the legend sits below the axes."""
    import matplotlib.pyplot as plt

    from experiments.paper2.figures import SHIFT, figure1_drawn

    def cell(opened: float) -> Snapshot:
        return Snapshot({"open": Estimate(opened, 0.0), "conduit": Estimate(0.001, 0.0)},
                        Estimate(opened, 0.0), 0.0)  # fmt: skip

    scale = replace(SCALE, conduit_lengths=(2, 4), rule_counts=(300, 1000))
    figure = figure1_drawn({(k, n): cell(0.999) for k in (2, 4) for n in (300, 1000)}, scale)
    axis = figure.axes[0]
    lines = {line.get_label(): line for line in axis.get_lines()}
    low, high = lines["n=300, open"], lines["n=1000, open"]
    assert list(high.get_xdata()) == [2 + SHIFT / 2, 4 + SHIFT / 2]
    assert list(low.get_xdata()) == [2 - SHIFT / 2, 4 - SHIFT / 2]
    assert low.get_linewidth() > high.get_linewidth() and low.zorder <= high.zorder
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    legend = axis.get_legend().get_window_extent(renderer)
    assert legend.y1 < axis.get_window_extent(renderer).y0
    assert f"shifted by {SHIFT:g} in k" in axis.get_title()
    plt.close(figure)
