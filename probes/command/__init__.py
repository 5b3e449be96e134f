"""`python -m probes`: the probes of `probes.command.registry` run over recorded run folders,
with tables and figures written (`probes.command.cli`, `probes.command.outputs`).

Each probe is one module here, an adapter from a run folder (`storage.RunFolder`) to tidy rows
that calls the pure methods of `probes`; `probes.command.base` holds what they share."""
