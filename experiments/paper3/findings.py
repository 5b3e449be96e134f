"""Paper 3's findings (Gradient Descent Resists Compositionality, sections 5.1, 5.2 and 6), each
in the paper's words with the claims that test it (`experiments.findings`).

The primary reading is the paper's text (`images.*`, `scan.*`, `toy.*`); the other readings are
the authors' programs (`authors`: their TensorFlow image program and their SCAN scripts,
`authors.images.*`, `authors.scan.*`) and the authors' TensorFlow Playground for the toy
(`playground`: `playground.toy.*`). SCAN's split sizes (`scan.train_size`, `scan.test_size`)
are facts about the data, not findings: no finding names them."""

from __future__ import annotations

from experiments.findings import Finding

FINDINGS: tuple[Finding, ...] = (
    Finding(
        "sec5.1.faster",
        "The training accuracy improves faster in the first setting than in the second one, "
        "indicating that X2 helps to train the model quickly (5.1, Figure 3a).",
        ("images.faster_early",),
        {"authors": ("authors.images.faster_early",)},
    ),
    Finding(
        "sec5.1.gap",
        "In the first setting, the gap of training and test accuracy is significantly larger "
        "than that in the second setting (5.1, Figure 3a).",
        ("images.gap_larger",),
        {"authors": ("authors.images.gap_larger",)},
    ),
    Finding(
        "sec5.2.faster",
        "The training accuracy increases faster during the early training (steps 10-25) in the "
        "first setting than in the second setting (5.2, Figure 3b).",
        ("scan.faster_early",),
        {"authors": ("authors.scan.faster_early",)},
        because="in the first steps the model trained as the text describes gets barely any "
        "whole training sentence right in either setting, so the first setting's head start "
        "is real but small.",
    ),
    Finding(
        "sec5.2.gap",
        "The gap of training and test accuracy is significantly larger in the first setting "
        "than in the second setting (5.2, Figure 3b).",
        ("scan.gap_larger",),
        {"authors": ("authors.scan.gap_larger",)},
    ),
    Finding(
        "sec6.fails_on_test",
        "The trained model does not have good compositionality: the boundary after training "
        "passes through the middle of the upper right (test) area (6, Figure 5).",
        ("toy.fails_on_test",),
        {"playground": ("playground.toy.fails_on_test",)},
        because="on the text's grid most seeds of the first setting still classify the unseen "
        "corner (1, 1) nearly as well as their controls do: the boundary seldom cuts through "
        "the middle of the test area.",
    ),
    Finding(
        "sec6.depends_on_x2",
        "We use different random seeds, and show that the trained model do not have "
        "compositionality (6, Figure 6).",
        ("toy.depends_on_x2",),
        {"playground": ("playground.toy.depends_on_x2",)},
        because="on the text's grid not every seed of the first setting depends on X2 more "
        "than its control does by the margin.",
    ),
    Finding(
        "sec6.step1_stable",
        "The initialized parameters at step 0 output wrong predictions for samples in the "
        "upper left area [...] they push the updated boundary in step 1 to the middle of upper "
        "right area. In the following steps [...] the boundary remains stable (6, Figure 5).",
        ("toy.step1_boundary_stable",),
        {"playground": ("playground.toy.step1_boundary_stable",)},
        because="the first update barely moves the boundary from where the initial weights put "
        "it, and later steps move it across the upper-right area instead of leaving it there.",
    ),
)
