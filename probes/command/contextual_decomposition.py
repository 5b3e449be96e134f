"""The `contextual-decomposition` probe: paper 2's P(omega | phrase) by contextual decomposition,
over training (section 3.1, Figures 1-3).

It runs `rule_close_probabilities` (below), the function `close_probabilities` of
`experiments/paper2/readings.py` runs, so the probe and the paper's pipeline compute the same
numbers by construction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from probes.command.base import ModelProbe, epoch_of, option, units_text
from probes.command.outputs import legend_beside, pyplot, save_figure
from probes.contextual_decomposition import (
    BiasAtPhraseEnd,
    CloseProbabilities,
    decompose_language_model,
    mean_and_standard_error,
    rule_phrases,
)
from storage.files import RunFileError
from storage.run_folder import RunFolder, safetensors_keys

LANGUAGE_MODEL = "lightning_modules.language_model.LanguageModel"
LSTM_PARAMETERS = ("embedding.weight", "lstm.weight_ih_l0", "lstm.weight_hh_l0", "lstm.bias_ih_l0",
                   "lstm.bias_hh_l0", "output.weight", "output.bias")  # fmt: skip
PHRASE = re.compile(r"open|conduit|prefixes|prefix=(\d+)")


@dataclass(frozen=True)
class ContextualDecompositionOptions:
    phrases: list = option(
        ["open", "conduit", "prefixes"],
        "phrases whose P(omega | phrase) is read: open (the open symbol alpha, Figures 1 and 3), "
        "conduit (the k conduit tokens, Figure 1), prefix=I (alpha and the first I conduit "
        "tokens, Figure 2) or prefixes (every prefix=I, I = 0..k). All are decomposed in one "
        "batch, as experiments.paper2 does: the defaults give its Figure 1-2 numbers, `open` "
        "alone its Figure 3 numbers",
    )  # fmt: skip


def chosen_phrases(phrases: list[str], conduit_length: int) -> list[str]:
    """The phrase names of `rule_phrases` that `--phrases` picks, for conduits of `k` tokens."""
    chosen = []
    for phrase in phrases:
        match = PHRASE.fullmatch(phrase)
        if phrase == "prefixes":
            chosen += [f"prefix={i}" for i in range(conduit_length + 1)]
        elif match and match[1] is not None and int(match[1]) > conduit_length:
            raise RunFileError(
                f"--phrases {phrase}: the run's conduits have k = {conduit_length} tokens; give "
                f"prefix=0 .. prefix={conduit_length} or `prefixes`."
            )
        else:
            chosen.append(phrase)
    return list(dict.fromkeys(chosen))


class ContextualDecompositionProbe(ModelProbe):
    """Paper 2's CD measurement over training: P(omega | phrase) at the close symbol of the
    run's probe rules, per checkpoint and weight snapshot.

    The figures of paper 2 are read from the weight snapshots taken after every epoch (Figure 1
    at 40 epochs, Figure 2 at 50, Figure 3 over all of them), which `ModelProbe` does not offer.
    So the tags are every checkpoint and snapshot (`RunFolder.checkpoint_tags`); the model and its
    DataModule are rebuilt from the settings of the `last` checkpoint (`best` when there is no
    `last`), as `experiments.paper2` does, and the tag's weights are loaded into it. A result
    therefore reads (and its cache key hashes) the settings checkpoint and the tag's weights.
    """

    details = (
        "Contextual decomposition (Murdoch et al. 2018) splits the LSTM language model's logits "
        "at the step before the close symbol omega into the part from a phrase and the rest; "
        "P(omega | phrase) = softmax(phrase part)[omega] (section 3.1), averaged over the run's "
        "held-out rule instances (the DataModule's `rules` split). One row per run, checkpoint "
        "or weight snapshot (--checkpoint all: every epoch=N, N + 1 epochs trained) and phrase, "
        "with the full model's P(omega) and the largest relative CD error of the decomposition "
        "(the paper: below 1e-5). Runs of lightning_modules.language_model.LanguageModel on a "
        "datamodules.RuleCorpusDataModule (experiments/configs/paper2)."
    )
    options = ContextualDecompositionOptions
    summary_by = ["phrase"]
    summary_columns = {
        "runs": ("run", "nunique"), "conduit_length": ("conduit_length", "first"),
        "rules": ("rules", "first"), "probability": ("probability", "mean"),
        "full_probability": ("full_probability", "mean"),
        "approximation_error": ("approximation_error", "max"),
    }  # fmt: skip
    model_classes = (LANGUAGE_MODEL,)

    def validate(self, options) -> None:
        if not options.phrases:
            raise ValueError("--phrases needs at least one phrase")
        for phrase in options.phrases:
            if not PHRASE.fullmatch(phrase):
                raise ValueError(f"--phrases {phrase!r} is not open, conduit, prefix=I or prefixes")

    @staticmethod
    def settings_tag(run: RunFolder) -> str:
        """The checkpoint whose settings rebuild the model and data: `last`, else `best`."""
        return "last" if run.files.checkpoint("last").is_file() else "best"

    def tags(self, run: RunFolder, options) -> list[str]:
        return run.checkpoint_tags()

    def where(self, run: RunFolder, options) -> str:
        return str(run.path)

    def reads(self, run: RunFolder, tag: str, options) -> list[Path]:
        settings = run.weights_path(self.settings_tag(run))
        weights = run.weights_path(tag)
        return [settings] if weights == settings else [settings, weights]

    def conduit_length(self, run: RunFolder) -> int:
        settings = self.settings_tag(run)
        data = run.checkpoint(settings).get("datamodule_hyper_parameters") or {}
        if "conduit_length" not in data:
            raise RunFileError(
                f"{run.weights_path(settings)} was not trained on a rule corpus "
                f"(datamodules.RuleCorpusDataModule): {self.name} reads its probe rules; give "
                "--runs of experiments/configs/paper2."
            )
        return int(data["conduit_length"])

    def check(self, run: RunFolder, tag: str, options) -> None:
        super().check(run, self.settings_tag(run), options)  # names the settings checkpoint
        chosen_phrases(options.phrases, self.conduit_length(run))
        path = run.weights_path(tag)
        if path.suffix != ".safetensors":
            run.checkpoint(tag)  # a corrupt checkpoint fails here
            return
        held = safetensors_keys(path, "delete it, or probe the other tags with --checkpoint.")
        missing = sorted(set(LSTM_PARAMETERS) - held)
        if missing:
            raise RunFileError(f"{path} has no {', '.join(missing)}: not a LanguageModel snapshot.")

    def rows(self, run, tag, options, device) -> list[dict]:
        settings = self.settings_tag(run)
        data = run.checkpoint(settings)["datamodule_hyper_parameters"]
        only = chosen_phrases(options.phrases, int(data["conduit_length"]))
        measured = rule_close_probabilities(run, [tag], only, settings, device)[tag]
        full, full_error = mean_and_standard_error(measured.full)
        rows = []
        for phrase, values in measured.phrase.items():
            probability, standard_error = mean_and_standard_error(values)
            rows.append({
                "phrase": phrase, "positions": units_text(measured.positions[phrase]),
                "close_position": measured.close_position, "epoch": epoch_of(tag),
                "conduit_length": data["conduit_length"], "rules": data["rules"],
                "conduit_pool": data.get("conduit_pool"),
                "conduit_copies": data.get("conduit_copies", 0), "instances": len(values),
                "probability": probability, "standard_error": standard_error,
                "full_probability": full, "full_standard_error": full_error,
                "approximation_error": measured.error,
            })  # fmt: skip
        return rows

    def figures(self, table, options, folder):
        plt = pyplot()

        figures = {}
        snapshots = table[table["epoch"].notna()]
        if not snapshots.empty:  # Figures 1 and 3: P(omega | phrase) over training
            shown = [p for p in ("open", "conduit") if p in set(snapshots["phrase"])]
            shown = shown or list(dict.fromkeys(snapshots["phrase"]))
            figure, axis = plt.subplots(figsize=(7, 4))
            for index, (group, part) in enumerate(snapshots.groupby("group", sort=False)):
                for phrase, style in zip(shown, ("-", "--", ":", "-."), strict=False):
                    means = part[part["phrase"] == phrase].groupby("epoch")["probability"].mean()
                    axis.plot(means.index + 1, means.values, style, color=f"C{index % 10}",
                              label=f"{group}: {phrase}")  # fmt: skip
            axis.set(yscale="log", xlabel="epochs trained",
                     ylabel="P(omega | phrase) (CD, mean over rules and runs)")  # fmt: skip
            axis.set_title("P(omega) from the open symbol (solid) and the conduit (dashed)",
                           fontsize=9)  # fmt: skip
            legend_beside(axis)
            figures["over_training"] = save_figure(figure, folder / "cd_over_training.png")
        prefixes = table[table["phrase"].str.startswith("prefix=")]
        if not prefixes.empty:  # Figure 2: alpha with the first i conduit tokens
            figure, axis = plt.subplots(figsize=(6, 4))
            for group, part in prefixes.groupby("group", sort=False):
                epochs = part["epoch"].dropna()
                tag = (f"epoch={int(epochs.max())}" if not epochs.empty
                       else part["checkpoint"].iloc[0])  # fmt: skip
                part = part[part["checkpoint"] == tag]
                means = part.groupby("phrase", sort=False)["probability"].mean()
                steps = [int(name.split("=")[1]) for name in means.index]
                axis.plot(steps, means.values, marker="o", label=f"{group} ({tag})")
            axis.set(xlabel="i (alpha and the first i conduit tokens)",
                     ylabel="P(omega | phrase) (CD)")  # fmt: skip
            legend_beside(axis)
            figures["prefixes"] = save_figure(figure, folder / "cd_prefixes.png")
        return figures


@torch.no_grad()
def rule_close_probabilities(
    run: RunFolder,
    tags: Sequence[str],
    only: Sequence[str] | None = None,
    settings_tag: str = "last",
    device: torch.device | str = "cpu",
    bias_at_phrase_end: BiasAtPhraseEnd = "relevant",
    dtype: torch.dtype | None = None,
) -> dict[str, CloseProbabilities]:
    """Paper 2, section 3.1: for each checkpoint or weight snapshot `tag` of a `LanguageModel` run
    (the model rebuilt from checkpoint `settings_tag`, the tag's weights loaded), P(omega | phrase)
    at the close symbol of the run's probe rules (the DataModule's `rules` split), for every
    phrase of `rule_phrases` (or those named in `only`, kept in `rule_phrases`' order), all
    phrases decomposed in one batch. `bias_at_phrase_end="irrelevant"`: the authors' CD before
    their fix (`probes.contextual_decomposition.bias_with_phrase`); `dtype` (e.g.
    `torch.float64`): the model cast to it before decomposing (None: as saved)."""
    data = run.datamodule(settings_tag)
    model = run.model(settings_tag).to(device, dtype)  # dtype None: as saved
    batch = next(iter(data.split_dataloader("rules", batch_size=len(data.datasets["rules"]))))
    tokens = batch["input"].to(device)
    open_position = int(batch["open_position"][0])
    close_position = int(batch["close_position"][0])
    named = rule_phrases(open_position, data.hparams.conduit_length)
    named = {name: steps for name, steps in named.items() if only is None or name in only}
    masks = torch.zeros(len(named), *tokens.shape, dtype=torch.bool, device=device)
    for row, positions in enumerate(named.values()):
        masks[row, :, positions] = True
    repeated = tokens.repeat(len(named), 1)
    close_symbol = data.vocab_size - 1
    results = {}
    for tag in tags:
        model.load_state_dict(run.state_dict(tag))
        parts = decompose_language_model(model, repeated, masks.flatten(0, 1),
                                         bias_at_phrase_end=bias_at_phrase_end)  # fmt: skip
        probability = parts.relevant_probabilities()[:, close_position, close_symbol].cpu()
        per_phrase = probability.view(len(named), -1)
        full = parts.full[: len(tokens), close_position].softmax(-1)[:, close_symbol].cpu()
        results[tag] = CloseProbabilities(
            dict(zip(named, per_phrase, strict=True)),
            full,
            float(parts.approximation_error().max()),
            named,
            close_position,
        )
    return results
