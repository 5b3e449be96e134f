"""Recorded seq2seq traces as probes read them: several splits as one batch, the valid steps of
a site, a label per step, and the update gate in either sign convention.

The traces are `TraceRecorder`'s (`lightning_modules.callbacks`): sites `encoder.<name>` and
`decoder.<name>` `[batch, time, units]`, and the batch under `batch.<key>`. What paper 1 (Baan
et al. 2019, section 4) probes is written here once, so that its reproduction and
`python -m probes` compute the same thing.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import torch
from torch import Tensor

from lightning_modules.sequences import PAD
from probes.diagnostic import labelled_steps

STEP_LABEL = "time"  # the label "which step is this" (paper 1, Table 3)
CONVENTIONS = ("torch", "paper1")
PAPER1_GATE_SITES = (
    "encoder.update_gate", "encoder.reset_gate", "decoder.update_gate", "decoder.reset_gate",
)  # fmt: skip
"""The GRU gates paper 1 analyses (Figure 4, Table 2)."""


def valid_key(site: str, recorded: Collection[str] = ()) -> str:
    """The trace entry that marks the valid steps of `site`: its layer's own mask `valid.<layer>`
    `[batch, time]` wherever the recording (the entry names `recorded`) has one, as every run
    recorded from any model has (`probes.command.record.record_run`), whatever its modules are
    called. Only the suite's seq2seq traces (`TraceRecorder`), which hold no such masks, mark the
    steps of `encoder.<site>` by `batch.source_lengths` and of `decoder.<site>` by
    `batch.target`."""
    layer = site.rsplit(".", 1)[0]
    own = f"valid.{layer}"
    if own in recorded or layer not in ("encoder", "decoder"):
        return own
    return "batch.source_lengths" if layer == "encoder" else "batch.target"


def trace_keys(
    sites: Sequence[str], labels: Sequence[str] = (), recorded: Collection[str] = ()
) -> list[str]:
    """The trace entries that probing `sites` with `labels` reads (the masks' entries included)
    from a recording holding the entries `recorded` (`valid_key`)."""
    keys = set(sites) | {label for label in labels if label != STEP_LABEL}
    keys |= {valid_key(site, recorded) for site in sites}
    return sorted(keys)


def valid_steps(trace: dict[str, Tensor], site: str) -> Tensor:
    """`[batch, time]` over the steps of `site`: a recorded layer's steps within its sequences;
    in the suite's seq2seq traces an encoder's steps within the source and a decoder's steps with
    a target (`valid_key`)."""
    key = valid_key(site, trace.keys())
    if key == "batch.source_lengths":
        time = torch.arange(trace[site].shape[1])
        return time[None] < trace["batch.source_lengths"][:, None]
    if key == "batch.target":
        return trace["batch.target"] != PAD
    return trace[key].bool()


def step_labels(
    trace: dict[str, Tensor], site: str, label: str, align: str | None = None
) -> Tensor:
    """`[batch, time]` labels of the steps of `site`, -100 where a step has none.

    `label` is `time` (the step's index, within the valid steps) or a trace entry `[batch, time]`
    such as `batch.source_table`. With `align` (e.g. `batch.attention_target`, the source step
    each decoder step should attend to), each step takes the label of the step `align` points at,
    and none where it points nowhere (< 0).
    """
    if label == STEP_LABEL:
        mask = valid_steps(trace, site)
        return torch.where(mask, torch.arange(mask.shape[1])[None], -100)
    values = trace[label]
    if align is None:
        return values
    index = trace[align]
    return torch.where(index >= 0, values.gather(1, index.clamp_min(0)), -100)


def site_values(trace: dict[str, Tensor], site: str, convention: str = "torch") -> Tensor:
    """A site's recorded values; with `convention="paper1"` an update gate is `1 - z`.

    Paper 1 writes the GRU as `h = (1 - z) h_prev + z h_candidate` (section 2.2), torch as
    `h = (1 - z) n + z h_prev`: the paper's update gate is one minus torch's.
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"convention {convention!r} is not one of {', '.join(CONVENTIONS)}")
    values = trace[site]
    return 1 - values if convention == "paper1" and site.endswith("update_gate") else values


def site_samples(
    trace: dict[str, Tensor],
    site: str,
    label: str,
    align: str | None = None,
    convention: str = "torch",
) -> tuple[Tensor, Tensor]:
    """The labelled valid steps of `site` for `label` (`step_labels`) over every sequence in
    `trace`: features `[samples, units]` and labels `[samples]`, what paper 1's diagnostic
    classifiers are fit on."""
    labels = step_labels(trace, site, label, align)
    labels = torch.where(valid_steps(trace, site), labels, -100)
    return labelled_steps(site_values(trace, site, convention), labels)
