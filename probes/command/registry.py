"""Every probe `python -m probes` offers, by name (in the order `--help` lists them)."""

from probes.command.base import RunProbe
from probes.command.connectivity import ConnectivityProbe
from probes.command.contextual_decomposition import ContextualDecompositionProbe
from probes.command.functional_group import FunctionalGroupProbe
from probes.command.gate_saturation import GateSaturationProbe
from probes.command.integrated_gradients import IntegratedGradientsProbe
from probes.command.interventions import InterventionsProbe
from probes.command.pruning import PruningProbe
from probes.command.svm_rfe import SvmRfeProbe

PROBES: dict[str, RunProbe] = {
    probe.name: probe
    for probe in (
        FunctionalGroupProbe(),
        GateSaturationProbe(),
        ConnectivityProbe(),
        PruningProbe(),
        ContextualDecompositionProbe(),
        SvmRfeProbe(),
        IntegratedGradientsProbe(),
        InterventionsProbe(),
    )
}
