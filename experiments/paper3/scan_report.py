"""The report's section on SCAN's second reading: section 5.2 as the authors' scripts
ran it (`experiments/configs/paper3/scan_authors.yaml`, runs `scan_authors_<setting>`), its
Figure 3b, its tables and the table of SCAN's settings under both readings with their sources;
built from the runs' measurements alone."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from experiments.paper3.claims import EARLY_SCAN_STEPS, Records, curve_frame
from experiments.paper3.report import mean_and_spread, plot_curves
from experiments.paper3.scales import SCAN_AUTHORS, SETTINGS, Scale
from experiments.paper3.scan_authors import UNION_NOTE
from experiments.report import markdown_table, save_figure

CODE = "BCDLSG efb6c20"
"""yuanpeng16/BCDLSG at its first commit: the authors' code. Its SCAN scripts are
`experiments/scan_first_large/scan_first_large_{A..E}.sh` (setting A) and
`experiments/scan_second_large/scan_second_large_{A..E}.sh` (setting B); `.sh` lines are the
same in all ten."""

SCAN_SETTINGS = [
    ("runs", "5 per setting ('We run experiments for 5 times', 5)", "text: 5 per setting, seeds "
     "0-4", "5 per setting: the letters A-E of the script names are runs (--random_seed 8-12), "
     "not settings; setting A is scan_first_large, B scan_second_large",
     ".sh line 15; `plot_results.py` lines 107-111, 143-148"),
    ("steps", "2,000", "text: 2,000", "50 (Figure 3b stops at 50)",
     ".sh line 20 (--epochs 50); `s2s_model.py` line 97; `plot_results.py` lines 117-122"),
    ("batches", "256 drawn uniformly with replacement", "text", "the same",
     ".sh line 16; `s2s_model.py` lines 81-85, 98"),
    ("encoder", "bidirectional LSTM, state size 16", "text: 16 per direction",
     "32 per direction", ".sh lines 19, 25 (--num_units 64); `s2s_model.py` lines 132-133 "
     "(num_units / 2)"),
    ("decoder's initial state", "'the first and last states of encoder are concatenated'; "
     "decoder 64", "text: both directions' states at the first and at the last source position "
     "(4 x 16 = 64, hidden and cell)", "the forward direction's final state (last position) and "
     "the backward's (first position), 2 x 32 = 64, hidden and cell",
     "`s2s_model.py` lines 137-139, 175, 190"),
    ("embedding", "32", "text", "32", ".sh line 24; `s2s_model.py` lines 125-129, 221"),
    ("decoder embedding", "not stated (the text names one 'embedding layer')", "code: 8",
     "8 (the default of --output_embedding_size, which the scripts leave); the first input is "
     "a learnt start vector", "`main.py` line 146; `s2s_model.py` lines 156-161"),
    ("attention", "'LSTM with attention decoder', form not stated", "code: Luong 'general' "
     "score, input feeding, a 64-unit attention layer without bias or tanh read by the output "
     "layer", "the same", "`s2s_model.py` lines 163-176, 201 (TensorFlow's LuongAttention and "
     "AttentionWrapper)"),
    ("loss", "cross-entropy", "code: summed over each sequence (actions and end), averaged over "
     "the batch", "the same", "`s2s_model.py` lines 232-236"),
    ("optimizer", "Adam, learning rate 0.01", "text", "the same", ".sh line 21; `s2s_model.py` "
     "line 42"),
    ("learning-rate decay", "'exponentially decays by a factor of 0.96 every 100 steps'",
     "code: in whole steps (staircase)", "staircase; within 50 steps it never decays",
     ".sh line 26; `s2s_model.py` lines 33-40"),
    ("gradient clipping", "not stated", "code: global norm 1.0", "global norm 1.0",
     ".sh line 22; `s2s_model.py` lines 50-57"),
    ("initialisation", "not stated", "suite: torch's defaults (a framework default, as the "
     "images' reading)", "TensorFlow 1's: Glorot-uniform kernels, zero biases, forget bias 1, "
     "embeddings U(-1, 1)", "`s2s_model.py` lines 126-127, 132-133, 157-158, 190, 201"),
    ("setting B", "'changed jump to other action word and corresponding output symbol "
     "uniformly at random'", "text: every action word of every training command redrawn, the "
     "actions recomputed", "the deduplicated union of the training and test rows (20,910): "
     "every test row trained on", "scan_second_large .sh line 14 (uniform_scan); "
     "`data_generator.py` lines 174-189"),
    ("evaluation", "not stated; Figure 3b: training and test accuracy by step",
     "suite: greedy sentence accuracy on fixed samples drawn without replacement (default "
     "scale: 500 rows every 10 steps), each training batch's before its update, and all data "
     "after the last step", "after every step, teacher forced, on 100 training and 100 test "
     "rows drawn with replacement once per run (the same sentence accuracy as greedy)",
     "`main.py` lines 20-29, 66-67; `s2s_model.py` lines 92, 105-107, 114-120, 197"),
    ("Figure 3b's steps", "steps 10-25 for the early training", "updates done",
     "updates done; the figure's step k is its evaluation after k - 1 updates (the first 50 log "
     "lines, from the one before training)", "`s2s_model.py` lines 88-90, 110; "
     "`plot_results.py` lines 45-46, 55, 62, 117-122"),
    ("output classes", "-", "9: padding, start, end and the 6 actions", "7: the end "
     "(padding id 0) and the 6 actions; the suite keeps its 9", "`data_generator.py` lines "
     "196-201, 218-224; `main.py` line 64"),
    ("other script flags", "-", "-", "none of --switch_temperature, --attention_temperature, "
     "--content_noise_coe, --sample_wise_content_noise, --masked_attention, "
     "--single_representation is read by the seq2seq model (attention is masked to the source "
     "length regardless); --random_random seeds NumPy and TensorFlow from the seed's random "
     "draws", ".sh lines 17-18, 27-31; `main.py` lines 12-17, 99-145; `s2s_model.py` lines "
     "22-25, 166-168"),
]  # fmt: skip
"""SCAN's settings under both readings, each with its source: the text (section 5.2,
Appendix B), the primary reading (`scan.yaml`: the text, and the code where the text is silent)
and the authors' code (`scan_authors.yaml`). Lines are of BCDLSG efb6c20."""


def settings_table() -> str:
    columns = ["setting", "text (5.2, Appendix B)", "primary reading (scan.yaml)",
               "authors' code (scan_authors.yaml)", f"source in {CODE}"]  # fmt: skip
    return markdown_table(pd.DataFrame(SCAN_SETTINGS, columns=columns), index=False)


def authors_figure(records: Records, scale: Scale, path: Path) -> Path:
    """Figure 3b under the authors' reading: sentence accuracy on the training and test samples
    after every update, mean and spread over seeds, both settings."""
    curves = {(s, split): mean_and_spread([curve_frame(records[(SCAN_AUTHORS, s, seed)])[split]
                                           for seed in scale.seeds])
              for s in SETTINGS for split in ("train", "test")}  # fmt: skip
    fig, axis = plt.subplots(figsize=(6, 4))
    plot_curves(axis, curves, "Figure 3b, the authors' scripts (B trains on the test rows)",
                "sentence accuracy")  # fmt: skip
    axis.axvspan(*EARLY_SCAN_STEPS, color="grey", alpha=0.15)
    return save_figure(fig, path)


def scan_authors_figures(records: Records, scale: Scale, folder: Path) -> dict[str, Path]:
    return {"fig3b_scan_authors": authors_figure(records, scale,
                                                 folder / "fig3b_scan_authors.png")}  # fmt: skip


def scan_authors_section(tables: dict[str, pd.DataFrame], scale: Scale) -> str:
    """The report's section on SCAN's two readings."""
    first, last = EARLY_SCAN_STEPS
    return f"""
## SCAN under the authors' reading: their scripts

The authors' code trains SCAN otherwise than the text says in places; the second reading trains
it as their scripts did (`experiments/configs/paper3/scan_authors.yaml`, runs
`scan_authors_<setting>`, {scale.steps[SCAN_AUTHORS]:,} steps, sentence accuracy after every
step on {scale.eval_size[SCAN_AUTHORS]:,} training and test rows drawn with replacement) and
decides section 5.2's claims again by the same rules (ids `authors.scan.*`): the early training
on the training-sample curve their Figure 3b draws, over updates {first}-{last}. Where the text
is silent the primary reading already takes the code's choice; where it is explicit the text
stays the primary reading. What differs, with the source of each setting:

{settings_table()}

**{UNION_NOTE}.** Setting B's test accuracy, and its gap, are then no test of compositional
generalisation.

![Figure 3b, the authors' scripts](figures/fig3b_scan_authors.png)

Accuracy after the last step, on all training data (setting B: the union) and all test data:

{markdown_table(tables["scan_authors_final_accuracy"], 3, index=False)}

Early training, mean sentence accuracy over updates {first}-{last}:

{markdown_table(tables["scan_authors_early_training"], 3, index=False)}
"""
