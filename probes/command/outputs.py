"""What a probe run leaves behind: tables, figures and a W&B run, each written atomically (a
temporary file renamed into place, `storage.files.write_atomic`)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from storage.files import RunFileError, write_atomic

SMALLEST_POINTS = 8
"""The smallest text a figure of the suite draws (legends, tick labels, titles, annotations), in
points: what is smaller cannot be read in a report. A legend that then covers the data goes
outside the axes, and the figure grows, rather than the text shrinking."""


def pyplot():
    """`matplotlib.pyplot` drawing to files only (the Agg backend), imported when first needed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def legend_beside(axis, **options):
    """`axis`'s legend at `SMALLEST_POINTS`, right of the axes where it covers no data (`options`
    as `Axes.legend`'s); the figure grows by the legend's width, so the axes keep theirs."""
    legend = axis.legend(fontsize=SMALLEST_POINTS, loc="upper left", bbox_to_anchor=(1.02, 1),
                         borderaxespad=0, **options)  # fmt: skip
    figure = axis.figure
    width = legend.get_window_extent(figure.canvas.get_renderer()).width / figure.dpi
    figure.set_figwidth(figure.get_figwidth() + width + 0.1)
    return legend


def save_figure(figure, path: Path, dpi: int = 110) -> Path:
    """Lay out a matplotlib `figure`, write it to `path` atomically (format from the suffix),
    and close it."""
    import matplotlib.pyplot as plt

    figure.tight_layout()
    write_atomic(path, lambda temporary: figure.savefig(temporary, dpi=dpi, format=path.suffix[1:]))
    plt.close(figure)
    return path


def short_names(paths: Iterable[str]) -> dict[str, str]:
    """A short name for each of the folders `paths` (run folders, run groups) that tells them apart
    in a figure or table without a machine's absolute path: the path relative to the working
    directory when all of them lie inside it, else relative to their common parent (one folder
    alone: its own name), else (nothing in common but the root) the shortest ends of their paths
    that differ. Names use `/`; a path given twice is named once."""
    given = list(dict.fromkeys(map(str, paths)))
    full = [Path(os.path.abspath(path)) for path in given]
    cwd = Path.cwd()
    if all(path.is_relative_to(cwd) and path != cwd for path in full):
        return {path: f.relative_to(cwd).as_posix() for path, f in zip(given, full, strict=True)}
    base = Path(os.path.commonpath(full)) if full else cwd
    base = base.parent if base in full else base
    if base != Path(base.anchor):
        return {path: f.relative_to(base).as_posix() for path, f in zip(given, full, strict=True)}
    parts = [f.parts[1:] for f in full]
    for count in range(1, max(map(len, parts))):
        ends = ["/".join(part[-count:]) for part in parts]
        if len(set(ends)) == len(set(full)):
            return dict(zip(given, ends, strict=True))
    return {path: "/".join(part) for path, part in zip(given, parts, strict=True)}


def escape_cell(text: str) -> str:
    """`text` safe inside a Markdown table cell (a bare `|` would end the cell)."""
    return text.replace("|", "\\|")


def markdown_table(frame: pd.DataFrame, digits: int = 4, index: bool = True) -> str:
    """`frame` as a Markdown table, floats to `digits` decimals (pandas' `to_markdown` needs the
    optional tabulate package)."""
    if index:
        frame = frame.reset_index()

    def cell(value) -> str:
        return escape_cell(f"{value:.{digits}f}" if isinstance(value, float) else str(value))

    header = "| " + " | ".join(escape_cell(str(c)) for c in frame.columns) + " |"
    lines = [header, "|---" * len(frame.columns) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join(lines)


def require_format(suffix: str) -> None:
    """Raise one clear error now if tables of `suffix` (`csv`, `parquet`) cannot be written."""
    if suffix == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise RunFileError(
                "--format parquet needs pyarrow, which is not installed: "
                "`.venv/bin/pip install -e '.[parquet]'`, or use --format csv."
            ) from None


def save_table(frame: pd.DataFrame, path: Path) -> Path:
    """`frame` as CSV, or as parquet when `path` ends in `.parquet` (pandas needs pyarrow)."""
    require_format(path.suffix[1:])
    if path.suffix == ".parquet":
        return write_atomic(path, lambda temporary: frame.to_parquet(temporary, index=False))
    return write_atomic(path, lambda temporary: frame.to_csv(temporary, index=False))


def log_to_wandb(
    folder: Path,
    name: str,
    group: str,
    figures: dict[str, Path],
    tables: dict[str, pd.DataFrame],
    config: dict | None = None,
    tags: Sequence[str] = (),
) -> None:
    """Figures and tables as one W&B run `name` (with `config` and `tags`) stored in `folder`:
    offline unless `WANDB_MODE=online`; nothing with `WANDB_MODE=disabled`."""
    mode = os.environ.get("WANDB_MODE", "offline")
    if mode == "disabled":
        return
    import wandb

    folder.mkdir(parents=True, exist_ok=True)
    run = wandb.init(
        project=os.environ.get("WANDB_PROJECT", "recurrent-probes"),
        name=name,
        group=group,
        dir=str(folder),
        config=config,
        tags=list(tags),
        mode="online" if mode == "online" else "offline",
    )
    try:
        run.log({f"figures/{key}": wandb.Image(str(path)) for key, path in figures.items()})
        run.log({f"tables/{key}": wandb.Table(dataframe=frame) for key, frame in tables.items()})
    finally:
        run.finish()
