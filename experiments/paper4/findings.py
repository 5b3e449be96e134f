"""Paper 4's findings (Lee et al., sections 2, 4 and 5), each in the paper's words with the
claims that test it (`experiments.findings`).

The primary reading is the suite's reading of the paper's text; a finding's claims include its
size-matched random-unit controls (`control.*`) and the paper's directional words
(`direction.*`). The other readings are the pre-registered ones still to run
(`reports/paper4/preregistration.md`, "The readings not yet run"): Table 1's triggering rows at
T = 6 (`t6.*`), counting edited at every step before the output and with the lag held
(`each_step.*`, `lag_held.*`), "storing previous" as a single-step replacement (`single_step.*`)
and random decoder inputs drawn from words (`words_only.*`); they mark their claims once those
exist. The data's coverage (`data.*`) is a fact about the corpus, not a finding: no finding names
it."""

from __future__ import annotations

from experiments.findings import Finding

FINDINGS: tuple[Finding, ...] = (
    Finding(
        "sec2.gru_accuracy",
        "This token positioning accuracy can reach 98.5% and 98.1% respectively on the two "
        "datasets with random initialization multiple times (2; Gutenberg: 98.5%).",
        ("accuracy.gru",),
    ),
    Finding(
        "sec2.lstm_accuracy",
        "We substitute the GRU with LSTM models, and the average accuracy can also achieves "
        "97.5% (2).",
        ("accuracy.lstm",),
    ),
    Finding(
        "sec2.several_signals",
        "It is also possible to assign multiple control signals to control multiple tokens at "
        "the same time, and the accuracy achieves a respectful value of 95.2% (2).",
        ("accuracy.two_signals",),
    ),
    Finding(
        "finding1.storing_group",
        "For each token, regardless of its position, there is a small group of fixed neurons "
        "(15% ~ 25%) jointly storing the token-specific information (finding 1).",
        ("plausible.storing", "share.storing", "finding1.one_group_for_every_position"),
    ),
    Finding(
        "finding1.storing_unchanged",
        "The storing neurons remain mostly unchanged from t = -1 to T - 1 (finding 1, Figure 2); "
        "replacing them by their values in the previous time stamp, the accuracy remains high "
        "(87.9% and 83.3%, Table 1).",
        (
            "finding1.storing_steady",
            "table1.storing_previous",
            "direction.storing_previous_remains_high",
        ),
        {"single step": ("single_step.*",)},
        because="the storing units change less from step to step than the other units, but "
        "not so little that a step's values stand in for the next: replaced by their previous "
        "values, the token is lost in many rows.",
    ),  # fmt: skip
    Finding(
        "finding1.storing_zeroed",
        "We replace the values of storing neurons at t = T - 1 with zero, and observe the "
        "accuracy drops significantly to 10.7% and 20.0% (finding 1, Table 1).",
        ("table1.storing_zero", "control.storing_zero", "direction.storing_zero_drops"),
    ),
    Finding(
        "finding2.counting_group",
        "Associated with each token, there is a small group of neurons (about 20%) whose values "
        "keep increasing (or keep decreasing) with t from t = 0 to T - 1 (finding 2).",
        ("plausible.counting", "share.counting"),
        because="a linear classifier on the hidden states separates the steps left before the "
        "output well, but for nearly every token just short of the paper's plausibility bar.",
    ),
    Finding(
        "finding2.drop_then_rise",
        "When the position signal T appears at the encoder at t = 0, the values of the counting "
        "neurons face significant drop [...] the amount of dropping is positively correlated "
        "with the position T [...] then, as time step moves forward, the values of counting "
        "neurons slowly increase (finding 2, Figure 3).",
        ("finding2.deeper_drop_for_larger_T", "finding2.steady_rise"),
        because="the counting units rise steadily after t = 0, but their drop deepens with T "
        "only for the nearer positions: beyond them it stops growing.",
    ),
    Finding(
        "finding2.opposite_way",
        "We also observe some neurons perform counting in the opposite manner (i.e. starting by "
        "jumping to a positive range and gradually decreasing the values) (finding 2).",
        ("finding2.some_count_the_opposite_way",),
        because="falling counting units are about as common as rising ones, not a few: a unit "
        "and its negation are equally easy for a GRU to learn.",
    ),
    Finding(
        "finding2.counting_verified",
        "We replace the values of counting neurons at t with those of the previous stage (t - k) "
        "[...] and then verify there are 99% chance the target token can be generated k step "
        "later (finding 2, Table 1, k = 1 to 3).",
        ("table1.counting_k*", "control.counting_k*"),
        {"each step": ("each_step.*",), "lag held": ("lag_held.*",)},
        because="holding the counting units back by one step delays the token nearly always, "
        "but holding them back by two or three steps delays it far less often.",
    ),  # fmt: skip
    Finding(
        "finding3.triggering",
        "For each token, there is a small group of neurons (15% ~ 25%) whose values change "
        "dramatically from t < T - 1 to t = T - 1 [...] Table 1 shows high accuracy while using "
        "the values of triggering neurons at t = 5 to overwrite the values at t = 1, 2, 3, and 4 "
        "respectively when T = 6 (finding 3).",
        (
            "plausible.triggering",
            "share.triggering",
            "table1.triggering_k*",
            "control.triggering_k*",
        ),
        {"T = 6": ("t6.*",)},
        because="the triggering units' last values written earlier bring the token forward "
        "often, but less often the earlier they are written.",
    ),  # fmt: skip
    Finding(
        "finding4.outputting",
        "For each token, there is a small group of neurons (approximately 20%) that is "
        "activated at t = T, causing the fully connected layer to assign highest probability to "
        "this token [...] zero-out the values of outputting neurons [...] dropped to close to "
        "0.0% [...] zero-out all neurons other than the outputting neurons [...] remains as "
        "high as 99.9% (finding 4).",
        (
            "share.outputting",
            "finding4.outputting_zero",
            "finding4.others_zero",
            "control.outputting_zero",
            "control.others_zero",
        ),
    ),  # fmt: skip
    Finding(
        "finding4.values_near_one",
        "Only a small set of neurons in h_T contributes to the output, and their values tend to "
        "be close to -1 or +1 (finding 4).",
        ("finding4.outputting_values_near_one",),
    ),
    Finding(
        "sec4.restraining",
        "The triggering neurons can also be regarded as playing a restraining role in the "
        "earlier stages (4, detail (1)).",
        ("finding3.triggering_restrains_earlier",),
    ),
    Finding(
        "sec4.multi_functional",
        "Each token has its own four types of neuron sets but overlap may exist, as we discover "
        "that neurons can be multi-functional (4, detail (2)).",
        ("functions.several_at_once",),
    ),
    Finding(
        "sec5.random_inputs",
        "x_t's role is negligible in token-positioning as we find that the positioning accuracy "
        "remains 98.0% when all x_t are replaced by random tokens (5).",
        ("accuracy.random_decoder_inputs", "accuracy.random_inputs_barely_matter"),
        {"words only": ("words_only.*",)},
        because="these models lean on their decoder inputs: fed random tokens, they place the "
        "token far less often.",
    ),
    Finding(
        "sec5.triggering_gates",
        "It is the set of triggering neurons that increases r[store] and decreases z[output] at "
        "the same time [...] when triggering neurons are masked, the average of z[output] "
        "increases from 0.067 to 0.410, and r[store] drops from 0.860 to 0.594 (5, Figure 5).",
        ("section5.*",),
        because="masking the triggering units raises the outputting units' update gate for "
        "nearly every token, but lowers the storing units' reset gate for only some; token "
        "'i''s gate values differ from the paper's.",
    ),
)
