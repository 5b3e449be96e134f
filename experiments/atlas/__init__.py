"""The atlas: every paper's method on every paper's models, beside each model's untrained weights,
and four questions none of the four papers could ask (`python -m experiments.atlas`,
`make atlas`).

- `questions`: the pre-registration: the matrix's models and methods, the cells a method does not
  apply to and why, each paper-specific target defined for every task, the questions with their
  rules; `reports/atlas/preregistration.md` is its text.
- `scales`: which models each scale trains (by their papers' own configs and scales).
- `targets`: each task's analysed rows (the counterparts of `questions.COUNTERPARTS`).
- `cells`: one model measured by every wired method (the suite's probes), trained and untrained.
- `runs`: each model trained through the engine's fit and measured once into its
  `measurements.json`.
- `claims`, `report`: the questions judged, the matrix and the report, from the measurements
  alone.
- `reproduce`: the study as the engine runs it.
"""
