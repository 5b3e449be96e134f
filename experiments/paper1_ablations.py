"""Paper 1's ablation studies (Baan et al. 2019, section 5), as fits through the suite's CLI.

Component substitution (5.1, Table 4): a component of one trained model, frozen, in the other
model, which is retrained by its own procedure (guided with Attentive Guidance, baseline
without) at lr 0.001, then tested on new compositions. Both directions, model pairs of the
same seed. Pruning (5.2): every encoder and decoder unit but the 5% with the strongest
connections held at zero; new-composition accuracy before and after retraining.

Each retrain is `python -m experiments fit --config <receiver>.yaml` with `LoadWeights`
callbacks (the receiver's own best checkpoint, then the donor's component, frozen) or with
`--model.removed_units`, so a user can run any one of them by hand from its `command.txt`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from experiments.runner import fit
from probes.interventions import removal_edits, sequence_accuracy
from probes.runs import RunFolder
from probes.weights import strongest_units, unit_strength

COMPONENTS = {  # Table 4's components -> parameter names or prefixes (i-machine-think's modules)
    "Encoder": ["encoder_embedding", "encoder"],
    "Encoder Emb": ["encoder_embedding"],
    "Encoder W_ih": ["encoder.weight_ih_l0", "encoder.bias_ih_l0"],
    "Encoder W_hh": ["encoder.weight_hh_l0", "encoder.bias_hh_l0"],
    "Decoder": ["decoder_embedding", "decoder", "attention", "full_focus", "output"],
    "Decoder Emb": ["decoder_embedding"],
    "Decoder W_ih": ["decoder.weight_ih_l0", "decoder.bias_ih_l0"],
    "Decoder W_hh": ["decoder.weight_hh_l0", "decoder.bias_hh_l0"],
}
OPPOSITE = {"guided": "baseline", "baseline": "guided"}
KEEP_SHARE = 0.05  # section 5.2: "keeping only 5% of neurons with the biggest weights"
PRUNED_MODULES = ("encoder", "decoder")


def slug(component: str) -> str:
    return component.lower().replace(" ", "_")


def load_weights(checkpoint: Path, parameters: list[str] | None = None, freeze: bool = False):
    """A `--trainer.callbacks+=` argument adding a `LoadWeights` callback."""
    init = {"checkpoint": str(checkpoint), "parameters": parameters, "freeze": freeze}
    callback = {"class_path": "lightning_modules.callbacks.LoadWeights", "init_args": init}
    return f"--trainer.callbacks+={json.dumps(callback)}"


@dataclass(frozen=True)
class Substitution:
    receiver: str  # variant retrained: guided or baseline
    component: str  # key of COMPONENTS, taken from the opposite variant and frozen
    seed: int

    @property
    def variant(self) -> str:
        donor = OPPOSITE[self.receiver]
        return f"substitution/{self.receiver}_with_{donor}_{slug(self.component)}"

    def run(self, root: Path, base: list[str], configs: Path, trained, reuse: bool) -> Path:
        """Retrain the receiver of `trained(variant, seed)` with the donor's component frozen;
        `base` holds the scale's overrides (epochs, sizes)."""
        run = root / "paper1" / self.variant / f"seed={self.seed}"
        own = trained(self.receiver, self.seed) / "checkpoints" / "best.ckpt"
        donor = trained(OPPOSITE[self.receiver], self.seed) / "checkpoints" / "best.ckpt"
        arguments = [
            "--config", str(configs / f"{self.receiver}.yaml"),
            "--seed_everything", str(self.seed),
            "--run.root", str(root), "--run.variant", self.variant,
            "--trainer.enable_progress_bar", "false",
            *base,
            load_weights(own),
            load_weights(donor, COMPONENTS[self.component], freeze=True),
        ]  # fmt: skip
        fit(run, arguments, reuse)
        return run


def pruned_units(state_dict) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """Section 5.2: the hidden units (kept, removed) of each of encoder and decoder; kept are
    the `KEEP_SHARE` with the strongest connections (`probes.weights.unit_strength`)."""
    kept, removed = {}, {}
    for module in PRUNED_MODULES:
        strength = unit_strength(state_dict, module)
        strongest = set(strongest_units(strength, KEEP_SHARE).tolist())
        kept[f"{module}.hidden"] = sorted(strongest)
        removed[f"{module}.hidden"] = [u for u in range(strength.numel()) if u not in strongest]
    return kept, removed


def pruned_accuracy(run: Path, split: str) -> tuple[float, dict[str, list[int]]]:
    """Sequence accuracy on `split` of the run's best model with its weak units removed, without
    retraining; and the kept units."""
    folder = RunFolder(run)
    kept, removed = pruned_units(folder.state_dict())
    data = folder.datamodule()
    accuracy = sequence_accuracy(
        folder.model(), data.split_dataloader(split, batch_size=256), removal_edits(removed)
    )
    return accuracy, kept


def retrain_pruned(
    root: Path, seed: int, base: list[str], configs: Path, trained, reuse: bool
) -> Path:
    """Retrain the guided model of `seed` with its weak units removed (section 5.2)."""
    source = trained("guided", seed)
    _, removed = pruned_units(RunFolder(source).state_dict())
    run = root / "paper1" / "pruned" / "guided" / f"seed={seed}"
    arguments = [
        "--config", str(configs / "guided.yaml"),
        "--seed_everything", str(seed),
        "--run.root", str(root), "--run.variant", "pruned/guided",
        "--trainer.enable_progress_bar", "false",
        *base,
        "--model.removed_units", json.dumps(removed),
        load_weights(source / "checkpoints" / "best.ckpt"),
    ]  # fmt: skip
    fit(run, arguments, reuse)
    return run
