"""Every probe `python -m probes` offers, by name (in the order `--help` lists them)."""

from probes.catalogue import (
    ConnectivityProbe,
    FunctionalGroupProbe,
    GateSaturationProbe,
    RunProbe,
)
from probes.catalogue_models import ContextualDecompositionProbe, PruningProbe
from probes.catalogue_paper4 import IntegratedGradientsProbe, InterventionsProbe, SvmRfeProbe

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
