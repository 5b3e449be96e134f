"""Every probe `python -m probes` offers, by name (in the order `--help` lists them): the paper and
section it comes from, what it measures, and where its class is. A probe's module is imported
only when that probe runs or its own `--help` is asked for, so listing the probes costs no more
than importing torch."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import import_module

PAPER1 = "paper 1 (Baan et al. 2019)"
PAPER2 = 'paper 2 ("Do LSTMs Learn Compositionally?")'
PAPER4 = 'paper 4 (Lee et al., "Exposing the Functionalities of Neurons for GRU Seq2Seq")'


@dataclass(frozen=True)
class ProbeCard:
    """What the command lists of a probe, and the `module:Class` that runs it."""

    name: str
    paper: str
    purpose: str
    where: str


PROBES = {card.name: card for card in (
    ProbeCard("functional-group", f"{PAPER1}, section 4.1",
              "diagnostic classifiers and the functional group of units each needs",
              "probes.command.functional_group:FunctionalGroupProbe"),
    ProbeCard("gate-saturation", f"{PAPER1}, section 4.2",
              "how often each gate unit is closed (< low) or open (> high)",
              "probes.command.gate_saturation:GateSaturationProbe"),
    ProbeCard("connectivity", f"{PAPER1}, section 3",
              "weight heat maps and connectivity graphs of the gate weights",
              "probes.command.connectivity:ConnectivityProbe"),
    ProbeCard("pruning", f"{PAPER1}, section 5.2",
              "sequence accuracy with only the strongest units of encoder and decoder kept",
              "probes.command.pruning:PruningProbe"),
    ProbeCard("contextual-decomposition", f"{PAPER2}, section 3.1 (Figures 1-3)",
              "P(omega | phrase) at the close symbol by contextual decomposition, over training",
              "probes.command.contextual_decomposition:ContextualDecompositionProbe"),
    ProbeCard("svm-rfe", f"{PAPER4}, section 3.1",
              "stage 1: is each hypothesis plausible per token (linear SVM), and its RFE units",
              "probes.command.svm_rfe:SvmRfeProbe"),
    ProbeCard("integrated-gradients", f"{PAPER4}, section 3.2",
              "stage 2: each unit's integrated-gradients attribution to P(token at T)",
              "probes.command.integrated_gradients:IntegratedGradientsProbe"),
    ProbeCard("interventions", f"{PAPER4}, section 4 (Table 1)",
              "stage 3: accuracy after Table 1's manipulations of the identified neurons",
              "probes.command.interventions:InterventionsProbe"),
)}  # fmt: skip
"""The probes, one line each; a new probe is one module of `probes.command` and one line here."""


@cache
def probe(name: str):
    """The `RunProbe` of the probe `name` (its module imported now), with its card."""
    card = PROBES[name]
    module, _, cls = card.where.partition(":")
    instance = getattr(import_module(module), cls)()
    instance.card = card
    return instance
