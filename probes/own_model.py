"""The probes on a researcher's own model, past tracing and editing (`probes.attach`): its traces
recorded once into the suite's run-folder format, so that `python -m probes` runs on them like
on any run, and integrated gradients with respect to any site.

    attached = attach(model)
    record_run("runs/mine/seed=0", attached, batches, lambda batch: model(batch["tokens"]))
    # python -m probes functional-group --runs runs/mine/seed=0 --splits data \
    #     --targets rnn.l1.hidden:batch.label
    # python -m probes gate-saturation --runs runs/mine/seed=0 --splits data \
    #     --gates rnn.l0.forget_gate rnn.l1.forget_gate

    attributions = site_integrated_gradients(
        attached, lambda: model(tokens)[0][-1], "rnn.l1.hidden", steps=(8,), target=label)

Integrated gradients go through captum (`IntegratedGradients`) on a function of the site's
values: the values are written into the model by a `replace` edit, so the gradient reaches them
wherever the site sits, inside torch's recurrent layers included (captum's own layer methods
cannot reach a gate there, and fail on `nn.LSTM`'s tuple outputs: captum issues #1220, #1528).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import torch
from captum.attr import IntegratedGradients
from torch import Tensor

from lightning_modules.callbacks import pad_and_concatenate
from lightning_modules.recurrent import Intervention
from probes.attach import Attached
from storage import RunLayout
from storage.files import save_tensors_atomic, write_text_atomic


@torch.no_grad()
def record_run(
    folder: str | Path,
    attached: Attached,
    batches: Iterable[dict[str, Tensor]],
    forward: Callable[[dict[str, Tensor]], object],
    split: str = "data",
    tag: str = "best",
) -> RunLayout:
    """Run `forward(batch)` (the model in evaluation mode) over `batches` inside a trace and
    write the run folder `folder`: `traces/<split>/<tag>.safetensors` with every site `[batch,
    time, units]`, each layer's valid steps as `valid.<layer>`, and each batch tensor whose first
    dimension is the batch (labels `[batch, time]` for the diagnostic classifiers, say) as
    `batch.<key>`; `weights/<tag>.safetensors` with the model's state dict. Batches may differ in
    length: they are zero-padded in time, padding marked invalid."""
    layout = RunLayout(Path(folder))
    model = attached.model
    was_training = model.training
    model.eval()
    chunks: dict[str, list[Tensor]] = {}
    try:
        for batch in batches:
            with attached.trace() as trace:
                forward(batch)
            rows = next(iter(trace.values())).shape[0]
            recorded = {**trace, **{f"valid.{name}": mask for name, mask in trace.valid.items()}}
            recorded |= {
                f"batch.{key}": value
                for key, value in batch.items()
                if isinstance(value, Tensor) and value.dim() and len(value) == rows
            }
            for key, value in recorded.items():
                chunks.setdefault(key, []).append(value)
    finally:
        model.train(was_training)
    tensors = {key: pad_and_concatenate(values) for key, values in chunks.items()}
    save_tensors_atomic(tensors, layout.trace(split, tag), {"split": split, "tag": tag})
    save_tensors_atomic(model.state_dict(), layout.weight_snapshot(tag))
    write_text_atomic(
        layout.path / "recorded.txt",
        f"Recorded by probes.own_model.record_run from a {type(model).__name__}: "
        f"split {split}, tag {tag}, {len(tensors)} entries.\n",
    )
    return layout


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
