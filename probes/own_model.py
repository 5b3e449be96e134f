"""Integrated gradients with respect to any site of a researcher's own model (`probes.attach`):

    attributions, delta = site_integrated_gradients(
        attached, lambda: model(tokens)[0][-1], "rnn.l1.hidden", steps=(8,), target=label)

Integrated gradients go through captum (`IntegratedGradients`) on a function of the site's
values: the values are written into the model by a `replace` edit, so the gradient reaches them
wherever the site sits, inside torch's recurrent layers included (captum's own layer methods
cannot reach a gate there, and fail on `nn.LSTM`'s tuple outputs: captum issues #1220, #1528).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from captum.attr import IntegratedGradients
from torch import Tensor

from lightning_modules.recurrent import Intervention
from probes.attach import Attached


def site_integrated_gradients(
    attached: Attached,
    output: Callable[[], Tensor],
    site: str,
    steps: Sequence[int],
    target: int | Tensor | None = None,
    baseline: Tensor | float = 0.0,
    n_steps: int = 50,
) -> tuple[Tensor, Tensor]:
    """Integrated gradients (captum) of `output()` `[batch, outputs]` (its `target` column) with
    respect to the values of `site` at `steps`, from `baseline` (a number or `[batch,
    len(steps), units]`) to the values the model computes. Returns the attributions `[batch,
    len(steps), units]` and captum's convergence delta `[batch]` (attributions' sum minus the
    output's change). `output` runs the model (e.g. `lambda: model(tokens)[0][-1]`)."""
    with attached.trace() as trace:
        output()
    if site not in trace:
        raise ValueError(f"site {site!r} was not traced; the sites are {', '.join(trace)}.")
    values = trace[site][:, list(steps)].detach()
    rows = values.shape[0]

    def forward(scaled: Tensor) -> Tensor:
        outputs = []
        for start in range(0, scaled.shape[0], rows):  # one model run per captum row block
            edit = Intervention(site, steps=tuple(steps), operation="replace",
                                value=scaled[start : start + rows])  # fmt: skip
            with attached.edit([edit]):
                outputs.append(output())
        return torch.cat(outputs)

    if not isinstance(baseline, Tensor):
        baseline = torch.full_like(values, float(baseline))
    with torch.enable_grad():
        attributions, delta = IntegratedGradients(forward).attribute(
            values, baseline, target=target, n_steps=n_steps, internal_batch_size=rows,
            return_convergence_delta=True,
        )  # fmt: skip
    return attributions.detach(), delta.detach()
