"""Paper 1's findings (Baan et al. 2019), each in the paper's words with where it is stated, and the
claims that test it (`experiments.findings`): the report opens with their table.

The primary reading is the report's: the checkpoints of lowest validation loss (the authors'
code), the update gate read as torch's `z` and the co-authors' functional groups. The text's
checkpoint selection (best validation accuracy) repeats Tables 5-6 as the `text selection`
reading. Claims about the data or the setup stay unmarked: Tables 5-6's LSTM accuracies against
machine-zoo's tables (`footnote1.*_lstm.*`), the majority classifier's chance level, the share of
weights Figure 2's thresholds keep (also over all weights, `all_weights.*`) and the 26 units
pruning keeps. The other readings registered before their results
(`reports/paper1/preregistration.md`, items 6-7) mark their claims where the runs record them:
Figure 4 on the authors' gate data (`authors_gates.*`) and by where the cloud of units lies
(`cloud.*`), polarity as the sign of a neuron's mean weight (`mean_sign.*`).
"""

from __future__ import annotations

from experiments.findings import Finding

FINDINGS: tuple[Finding, ...] = (
    Finding(
        "tables5_6",
        "The models with attentive guidance infer more compositional solutions than the baseline: "
        "perfect on heldout inputs and compositions, above the baseline on every test set, where "
        "the baseline fails new compositions (abstract, section 2.3, Appendix A Tables 5-6)",
        ("table5.*", "table6.*", "pattern.*"),
        {"text selection": ("selection_text.*",)},
        because="one baseline seed solves more new compositions than any of the paper's baselines",
    ),
    Finding(
        "footnote1",
        "Models with LSTM units gave results very similar to the GRUs' (footnote 1)",
        (
            "footnote1.lstm_similar_to_gru",
            "footnote1.analyses_same_verdict",
            "footnote1.findings_hold_on_lstms",
        ),  # fmt: skip
        because="our guided LSTMs generalise to new compositions far worse than our guided GRUs, "
        "and a good share of the analyses' verdicts differ between the two cells",
    ),
    Finding(
        "fig1",
        "Decoder embedding: the baseline has small weights, the AG model bigger weights in rows "
        "2-10; the <sos> row is equally strong in both (section 3.1, Figure 1)",
        ("fig1.*",),
    ),
    Finding(
        "fig2",
        "The baseline weights are much more cluttered; the AG model has a few distinct, strongly "
        "polar neurons, and strongly connected neurons in the encoder's W_hz, W_hr and the "
        "decoder's W_iz, W_ir (section 3.2, Figure 2)",
        ("fig2.fewer_connected_neurons.*", "fig2.hub_neurons.*", "fig2.polar_neurons.*"),
        {"mean sign": ("mean_sign.fig2.polar_neurons.*",)},
        because="in the decoder's W_iz the baseline has more strongly polar neurons than the "
        "guided models, and in the encoder's W_hz two groups of one kind of model differ as much "
        "in polar neurons by their seeds alone",
    ),
    Finding(
        "sec3_2",
        "The polarity of the neurons that are on average strongly positive or negative are "
        "inversely related between update and reset gates (section 3.2)",
        ("sec3_2.inverse_gate_polarity.*",),
        {"mean sign": ("mean_sign.sec3_2.inverse_gate_polarity.*",)},
    ),
    Finding(
        "fig3",
        "Unlike the baseline's, some AG encoder neurons only produce activations in specific value "
        "ranges; most AG decoder neurons cover the whole range (section 4.1, Figure 3)",
        ("fig3.*",),
    ),
    Finding(
        "table2_encoder",
        "The current table is predicted from the encoder by about 35 units in the baseline, by "
        "only 2 in the guided models (section 4.1, Table 2 row 1)",
        ("table2.encoder.hidden.*",),
    ),
    Finding(
        "table2_gates",
        "From the decoder's gates the guided models predict the current table perfectly, the "
        "baseline around 50%; the guided gates' groups are remarkably larger than the encoder's "
        "(section 4.1, Table 2 rows 2-3)",
        ("table2.decoder.*", "table2.guided_gate_groups_larger"),
    ),
    Finding(
        "table3",
        "Using all units, it is possible to predict the time step with all models, but in the "
        "guided models the information is more concentrated in functional groups (section 4.1, "
        "Table 3)",
        ("table3.*",),
    ),
    Finding(
        "sec4_1_top5",
        "On average, 93% of the units in the functional group of the AG models can be found in "
        "the top 5% of the units with the strongest absolute weight values (section 4.1)",
        ("sec4_1.group_units_in_top5pct",),
    ),
    Finding(
        "footnote5",
        "SHAP seems to confirm the responsible neurons, but selects more neurons and gives less "
        "consistent results (footnote 5)",
        ("footnote5.*",),
        because="our SHAP-ranked groups are smaller than the weight-ranked ones and share few of "
        "their units",
    ),
    Finding(
        "fig4",
        "Baseline update gates are mostly left-saturated; AG encoder gates also, with a "
        "considerable amount of outliers; AG decoder gates are often right-saturated; AG gates "
        "stick to the axes, baseline gates lie between them (section 4.2, Figure 4)",
        ("fig4.*",),
        {
            "authors' gate data": ("authors_gates.fig4.*",),
            "cloud": ("cloud.fig4.*",),
            "authors' gate data, cloud": ("authors_gates.cloud.fig4.*",),
        },
        because="on the test sets our update gates are seldom closed: most units are neither "
        "left- nor right-saturated, and the baseline's gates are open more often than the guided "
        "models', in the encoder and the decoder",
    ),
    Finding(
        "sec5_1_guided",
        "AG models retrained with a frozen baseline component: the encoder embeddings seem "
        "irrelevant, the decoder embeddings matter, the whole encoder drops accuracy by 80%, "
        "decoder W_ih drops it to about .6, encoder W_ih and decoder W_hh raise it (section 5.1, "
        "Table 4)",
        ("table4.guided.*", "sec5_1.guided_with_*"),
        {"against the retrained control": ("control.sec5_1.guided_with_*",)},
        because="a baseline's encoder W_ih or decoder W_hh does not raise our guided models' "
        "accuracy, and the baseline's encoder embeddings lower it more than the paper found",
    ),
    Finding(
        "sec5_1_baseline",
        "None of the baseline models given a frozen component from an AG model retrain "
        "themselves to a significantly higher accuracy (section 5.1, Table 4)",
        ("table4.baseline.*", "sec5_1.baseline_not_helped"),
        {"against the retrained control": ("control.sec5_1.baseline_not_helped",)},
    ),
    Finding(
        "sec5_2",
        "Keeping only the 5% most strongly connected neurons drops accuracy to 12.4%; retraining "
        "20 epochs fully restores it, 92.5% against the full network's 82.3% (section 5.2)",
        (
            "sec5_2.pruned_accuracy",
            "sec5_2.pruned_retrained_accuracy",
            "sec5_2.retrained_beats_full",
        ),  # fmt: skip
        {
            "the paper's pool of three": ("pool3.sec5_2.*",),
            "units ranked by strong edges": ("edges.sec5_2.*",),
            "weights zeroed": ("zeroed.sec5_2.*",),
            "strong edges, weights zeroed": ("edges_zeroed.sec5_2.*",),
        },  # fmt: skip
        because="our pruned guided models solve almost no new compositions before retraining, "
        "and after 20 epochs of retraining they stay below the full network",
    ),
)
"""Paper 1's findings in the order the paper states them (Appendix A's tables first: every later
finding compares the models they describe)."""
