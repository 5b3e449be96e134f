"""Paper 1, Baan et al. 2019, "On the Realization of Compositionality in Neural Networks": GRU
seq2seq models with attention trained on machine-tasks' lookup tables with and without Attentive
Guidance, and every analysis of sections 2-5 and Appendix A (`python -m experiments.paper1`,
`make reproduce-paper1`).

- `scales`: the data, variants, seeds, checkpoint selections, the paper's values and the scales.
- `runs`: each model trained through the suite's CLI, the ablation retrains, test accuracies.
- `tables`: Appendix A's Tables 5-6, their claims, figure and the comparisons beside them.
- `analyses`, `claims`: sections 3-4 (heat maps, connectivity, activations, diagnostic
  classifiers, functional groups, gate saturation) and their claims.
- `shapley`: footnote 5 (functional groups ranked by Kernel SHAP values) and its claims.
- `lstm`: footnote 1's LSTMs analysed as the GRUs, and how many GRU verdicts they repeat.
- `ablations`: section 5 (component substitution and pruning).
- `registered`: the rules registered before their results: the guided-against-baseline
  comparisons' seed-split null and the verdicts the changed rules keep from before them.
- `findings`: the paper's findings in its words, each with the claims that test it.
- `reproduce`: the whole reproduction and its report.
"""
