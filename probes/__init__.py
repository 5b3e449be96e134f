"""Probes: the analysis methods of the four papers as functions over tensors, plus a reader of
run folders (`probes.runs`). Those functions print nothing, write no files and choose no device.

The command `python -m probes` (`probes.command`) is the one part that does: it runs the probes
of `probes.registry` (adapters in `probes.catalogue*`) over recorded runs and writes tables and
figures (`probes.outputs`)."""
