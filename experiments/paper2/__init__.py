"""Paper 2, "Do LSTMs Learn Compositionally?" (an anonymous submission; the authors' code is
`nsaphra/acd`): LSTM language models on synthetic rule corpora, read by contextual decomposition
over training; Figures 1-3 and the findings of sections 4.1, 4.2 and 5
(`python -m experiments.paper2`, `make reproduce-paper2`).

- `scales`: the scales of the reproduction and the corpus settings (`Scale`, `SCALES`,
  `Setting`, the training order).
- `readings`: P(omega | phrase) by contextual decomposition, as estimates over a run's probe
  rules, combined over seeds.
- `runs`: each run trained through the suite's CLI (`python -m experiments fit ...`,
  `experiments/configs/paper2/language_model.yaml`) and measured once into
  `<run>/measurements.json`.
- `claims`: every finding with the rule that decides it.
- `figures`, `report`: Figures 1-3, the tables and the text, from the measurements alone.
- `reproduce`: the whole reproduction.
"""
