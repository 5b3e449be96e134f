"""Paper 3, "Gradient Descent Resists Compositionality" (anonymous, under review): Figures 3-6
and the claims of sections 5.1, 5.2 and 6 (`python -m experiments.paper3`,
`make reproduce-paper3`).

Three experiments, each in setting A (the redundant input X2 carries label information in
training) and setting B (it does not), 5 runs each, every fit through the suite's CLI
(`python -m experiments fit ...`):

1. two-digit images (5.1, Appendix A): a CNN, the label is the left digit; also trained as the
   authors' TensorFlow program ran it (the second reading);
2. SCAN add-jump (5.2, Appendix B): a seq2seq LSTM with attention; also trained as the
   authors' scripts ran it (the second reading, `scan_authors`);
3. the toy 2-D problem (6, Appendix C): an MLP, with its decision boundaries over training;
   also trained as the authors ran it, in the TensorFlow Playground (the second reading).

Then `reports/paper3/{report.md, results.json, figures/, runs/}` are written and logged to W&B.

- `scales`: the experiments, settings and scales of the reproduction.
- `runs`: each run trained through the CLI and measured once into `<run>/measurements.json`
  (curves, final accuracies, the toy's decision boundaries).
- `toy`: the toy's two readings (the text's, the playground's) and what is read of a toy
  run's decision boundary.
- `claims`: the claims of sections 5.1, 5.2 and 6 with the rules that decide them.
- `untrained`: every claim of a model also decided on the runs' untrained weights (the null
  model; a claim they pass is uninformative).
- `report`: Figures 3-6 and the report's text, built from the measurements alone;
  `toy_report` and `images_report`: the sections on the toy's and the images' second readings.
- `scan_authors`: section 5.2's claims under SCAN's second reading; `scan_report`: its section
  of the report, with the table of SCAN's settings and their sources.
- `reproduce`: the whole reproduction.
"""
