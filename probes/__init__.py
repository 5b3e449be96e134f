"""Probes: the analysis methods of the four papers as functions over tensors, plus a reader of
run folders (`probes.runs`). Probes take tensors and return tensors or small dataclasses; they
print nothing, write no files and choose no device."""
