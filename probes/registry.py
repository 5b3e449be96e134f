"""Every probe `python -m probes` offers, by name (in the order `--help` lists them)."""

from probes.catalogue import (
    ConnectivityProbe,
    FunctionalGroupProbe,
    GateSaturationProbe,
    RunProbe,
)

PROBES: dict[str, RunProbe] = {
    probe.name: probe
    for probe in (
        FunctionalGroupProbe(),
        GateSaturationProbe(),
        ConnectivityProbe(),
    )
}
