"""Probes: the analysis methods of the four papers as functions over tensors. They read and write
no files, print nothing, choose no device and set no global state.

The command `python -m probes` (`probes.command`) is the one part that does: it runs the probes
of `probes.command.registry` (one module each in `probes.command`) over recorded run folders
(`storage.RunFolder`) and writes tables and figures (`probes.command.outputs`)."""
