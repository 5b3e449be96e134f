"""Paper 4, Lee et al., "Exposing the Functionalities of Neurons for GRU Seq2Seq": token
positioning, the storing, counting, triggering and outputting neurons found by the three-stage
method of section 3, Table 1, Figures 2, 3 and 5 and the gate interaction of section 5
(`python -m experiments.paper4`, `make reproduce-paper4`).

- `scales`: the trained variants (the GRU over several seeds, the neuron analysis runs on each;
  one LSTM; one with two (token, position) signals; one GRU under teacher forcing, the second
  reading of section 2's objective) and the scales of the reproduction.
- `runs`: each run trained through the suite's CLI (`python -m experiments fit ...`,
  `experiments/configs/paper4/gru.yaml`) and measured once into `<run>/measurements.json`, with
  its untrained weights.
- `analysis`: the measurements of one trained model (sections 3-5 on a GRU).
- `claims`: every number and finding of the paper with the rule that decides it.
- `untrained`: every claim also decided on the runs' untrained weights (the null model).
- `report`: the figures, tables and text, built from the measurements alone.
- `reproduce`: the whole reproduction.
"""
