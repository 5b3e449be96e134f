"""Paper 4's probes (`svm-rfe`, `integrated-gradients`, `interventions`) through
`python -m probes` on run folders of the hand-built GRU seq2seq of
`tests/planted_counter_gru.py`, whose storing, counting, triggering and outputting units are
planted.

The network is saved as a checkpoint of `lightning_modules.seq2seq.Seq2Seq` trained on a
`TokenPositioningDataModule` over a small text written here: pairs of lines "x x .. x" (1-3
fillers) -> "a b a b a b a b" or "b a b a b a b a", so that `a` and `b` are the two most common
words (the analysed tokens) and every held-out pair requests each of them at four of the
positions 1-8. The network's vocabulary is renumbered to the DataModule's (its behaviour does
not change). The probes must find the planted units, and Table 1's answers follow from the
design (see `test_interventions_give_the_planted_table_1`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from datamodules.token_positioning import TokenPositioningDataModule
from probes.command.cli import main
from probes.command.token_positioning import one_thread
from probes.neuron_functions import (
    DIAGNOSTICS,
    MANIPULATIONS,
    analysed_rows,
    analysed_tokens,
    identify_neurons,
)
from probes.neuron_manipulation import verify_neurons
from storage.files import load_checkpoint
from storage.run_folder import RunFolder
from tests.data_files import write_best_checkpoint
from tests.planted_counter_gru import (
    O_A,
    O_B,
    REGISTER,
    S_A,
    S_B,
    A,
    B,
    G,
    H,
    P,
    X,
    renumbered_model,
    token_positioning_checkpoint,
)

KEEP = str(2 / H)
"""RFE keeps 2 of the 16 units: stage 1 then keeps s_A, s_B (storing) and g, u_1 (triggering),
as in `test_neuron_functions.test_identify_neurons_on_the_planted_network`."""
DATA = {"vocab_size": 4 + P + 3, "max_tokens": P, "validation_share": 0.25, "test_share": 0.25,
        "batch_size": 8}  # fmt: skip
"""Specials, <pos=1..8>, then a, b, x; 24 pairs, 12 held out (validation and test)."""


def write_text(folder: Path) -> Path:
    """4 copies of each (filler count 1-3, pattern) pair, each pair its own chain."""
    patterns = ("a b a b a b a b", "b a b a b a b a")
    chunks = [" ".join(["x"] * f) + "\n" + pattern for f in (1, 2, 3) for pattern in patterns]
    folder.mkdir(parents=True)
    (folder / "book.txt").write_text("\n\n".join(chunks * 4) + "\n")
    return folder


def planted_run(folder: Path, text: Path, data_seed: int) -> Path:
    settings = {"data_dir": str(text), **DATA, "data_seed": data_seed}
    datamodule = TokenPositioningDataModule(**settings)
    assert datamodule.vocab[4 + P :] == ["a", "b", "x"]
    model = renumbered_model(datamodule.vocab, {X: "x", A: "a", B: "b"})
    return write_best_checkpoint(folder, token_positioning_checkpoint(model, settings))


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("paper4")
    text = write_text(root / "text")
    for seed in (0, 1):  # other splits of the same pairs
        planted_run(root / "runs" / "planted" / f"seed={seed}", text, seed)
    return root / "runs"


def probe(*arguments) -> int:
    return main([str(a) for a in arguments])


def ids(run: Path) -> tuple[int, int]:
    vocab = RunFolder(run).datamodule().vocab
    return vocab.index("a"), vocab.index("b")


def test_the_run_folder_loads_and_answers_every_row(runs):
    run = RunFolder(runs / "planted" / "seed=0")
    model, datamodule = run.model(), run.datamodule()
    tokens = analysed_tokens(datamodule, 2)
    assert [datamodule.vocab[t] for t in tokens] == ["a", "b"]
    traced, correct = analysed_rows(model, datamodule, tokens, per_token=500)
    assert correct.all() and len(correct) == 12 * 8  # 12 held-out pairs, positions 1-8
    assert (traced.token == tokens[0]).sum() == 48


def test_svm_rfe_finds_the_planted_candidates(runs, tmp_path):
    assert probe("svm-rfe", "--runs", f"{runs}/planted/seed=*", "--tokens", 2, "--keep", KEEP,
                 "--out", tmp_path) == 0  # fmt: skip
    table = pd.read_csv(tmp_path / "svm-rfe.csv", dtype={"candidates": str})
    assert len(table) == 2 * 2 * 3  # runs, tokens, hypotheses
    assert set(table["word"]) == {"a", "b"} and (table["token_rows"] == 48).all()
    assert (table["accuracy"] == 1.0).all() and table["plausible"].all()
    candidates = {h: set(map(frozenset, part["candidates"].str.split()))
                  for h, part in table.groupby("hypothesis")}  # fmt: skip
    assert candidates["storing"] == {frozenset({str(S_A), str(S_B)})}
    assert candidates["triggering"] == {frozenset({str(G), str(REGISTER[0])})}
    for units in candidates["counting"]:
        assert len(units) == 2 and {int(u) for u in units} <= set(REGISTER + [G])
    summary = (tmp_path / "svm-rfe.summary.md").read_text()
    assert "| planted | best | storing | 2 | 4 | 1.0000 | 1.0000 | 2.0000 |" in summary
    assert (tmp_path / "figures" / "svm_rfe_accuracy.png").stat().st_size > 0


def test_integrated_gradients_single_out_the_read_units(runs, tmp_path):
    """At h_(T-1) only g and the token's storing unit carry P(token at T); at h_(T-2), u_2 (the
    unit that becomes g) and the storing unit."""
    run = runs / "planted" / "seed=0"
    assert probe("integrated-gradients", "--runs", run, "--tokens", 2, "--out", tmp_path) == 0
    table = pd.read_csv(tmp_path / "integrated-gradients.csv")
    assert len(table) == 2 * 2 * H  # tokens, times, units
    a, b = ids(run)
    above = {(token, time): sorted(part.loc[part["above_mean"], "unit"])
             for (token, time), part in table.groupby(["token", "time"])}  # fmt: skip
    assert above[a, "T-1"] == sorted([G, S_A]) and above[b, "T-1"] == sorted([G, S_B])
    assert REGISTER[1] in above[a, "T-2"] and set(above[a, "T-2"]) <= {REGISTER[1], S_A}
    assert REGISTER[1] in above[b, "T-2"] and set(above[b, "T-2"]) <= {REGISTER[1], S_B}
    for token in (a, b):
        positions = token_positions(run, token)
        samples = table[table["token"] == token].groupby("time")["samples"].first()
        assert samples["T-1"] == (positions >= 2).sum() and samples["T-2"] == (positions >= 3).sum()
    at_g = table[(table["unit"] == G) & (table["time"] == "T-1")]
    assert (at_g["attribution"] > 0).all() and (at_g["importance"] == at_g["attribution"]).all()
    summary = (tmp_path / "integrated-gradients.summary.md").read_text()
    assert "| planted | best | T-1 | 1 | 2 |" in summary
    assert (tmp_path / "figures" / "integrated_gradients.png").stat().st_size > 0


def least_position(manipulation: str) -> int:
    """The smallest T `verify_neurons` tries a manipulation on (T >= 2, and what k needs)."""
    k = int(manipulation[-1]) if manipulation[-1].isdigit() else 0
    if manipulation.startswith("counting_before_trigger"):
        return k + 2  # values from T - 2 - k >= 0
    if manipulation.startswith("counting"):
        return max(2, k + 1)  # values from T - 1 - k >= 0
    if manipulation.startswith("triggering"):
        return k + 2  # written at T - 1 - k >= 1
    return 2


def token_positions(run: Path, token: int) -> torch.Tensor:
    """T of every row the probes request for `token` (all are answered correctly)."""
    datamodule = RunFolder(run).datamodule()
    requested = datamodule.requested_rows(("validation", "test"), [token], range(1, 14), 500)
    return requested["signal_position"][:, 0]


def test_interventions_give_the_planted_table_1(runs, tmp_path):
    """With the planted units found, every manipulation does what the design says on every row:
    the token is lost with s zeroed at T - 1 or o zeroed at T, kept with s replaced by its
    previous values or everything but o zeroed, and advanced by k with g's T - 1 value written at
    T - 1 - k. Counting units at T - 1 get their values from T - 1 - k, where u_j is +1 iff
    j = 1 + k: the token comes at T + k iff u_(k+1) is among the counting units (edited at
    T - 2 instead: iff u_(k+2) is)."""
    assert probe("interventions", "--runs", f"{runs}/planted/seed=*", "--tokens", 2, "--keep",
                 KEEP, "--control-draws", 0, "--out", tmp_path) == 0  # fmt: skip
    table = pd.read_csv(tmp_path / "interventions.csv", dtype={"units": str})
    assert len(table) == 2 * 2 * len(MANIPULATIONS + DIAGNOSTICS)
    for (run, token), part in table.groupby(["run", "token"]):
        a, _ = ids(Path(run))
        units = part.groupby("function")["units"].first().str.split().map(lambda u: [*map(int, u)])
        assert units["storing"] == [S_A if token == a else S_B]
        assert units["triggering"] == [G]
        assert units["outputting"] == [O_A if token == a else O_B]
        counting = units["counting"]
        assert REGISTER[1] in counting and set(counting) <= set(REGISTER + [G])
        expected = {"storing_zero": 0.0, "storing_previous": 1.0, "outputting_zero": 0.0,
                    "others_zero": 1.0, **{f"triggering_k{k}": 1.0 for k in (1, 2, 3, 4)},
                    **{f"counting_k{k}": float(REGISTER[k] in counting) for k in (1, 2, 3)},
                    **{f"counting_before_trigger_k{k}": float(REGISTER[k + 1] in counting)
                       for k in (1, 2, 3)}}  # fmt: skip
        assert part.set_index("manipulation")["accuracy"].to_dict() == expected
        positions = token_positions(Path(run), token)
        for manipulation, rows in part.set_index("manipulation")["rows"].items():
            assert rows == (positions >= least_position(manipulation)).sum(), manipulation
    assert (table.loc[table["manipulation"] == "counting_k1", "accuracy"] == 1.0).all()
    summary = (tmp_path / "interventions.summary.md").read_text()
    rows = table.groupby("manipulation")["rows"].sum()  # over tokens and runs
    assert ("| planted | best | storing_zero | 2 | 0.0000 | 0.000, 0.000 | "
            f"{rows['storing_zero']} | 2.0000 |") in summary  # fmt: skip
    assert ("| planted | best | triggering_k4 | 2 | 1.0000 | 1.000, 1.000 | "
            f"{rows['triggering_k4']} | 2.0000 |") in summary  # fmt: skip
    assert (tmp_path / "figures" / "interventions_table1.png").stat().st_size > 0


def test_interventions_rows_are_verify_neurons_on_the_analysed_rows(runs, tmp_path):
    """The probe at the default settings (RFE keeps half the units) is the direct calls."""
    run = runs / "planted" / "seed=1"
    assert probe("interventions", "--runs", run, "--tokens", 2, "--out", tmp_path) == 0
    table = pd.read_csv(tmp_path / "interventions.csv", dtype={"units": str}).fillna({"units": ""})
    folder = RunFolder(run)
    model, datamodule = folder.model(), folder.datamodule()
    traced, _ = analysed_rows(model, datamodule, analysed_tokens(datamodule, 2))
    for token, part in table.groupby("token", sort=False):
        with one_thread():
            neurons = identify_neurons(model, traced, token)
            direct = verify_neurons(model, traced, neurons, control_draws=3)
        probed = part.set_index("manipulation")
        assert {
            m: [h, r] for m, h, r in zip(probed.index, probed["hits"], probed["rows"], strict=True)
        } == {  # fmt: skip
            m: v for m, v in direct.items() if not m.startswith("storing_zero.T=")
        }
        assert probed["control"].sum() == 11  # every manipulation has its control
        for function in ("storing", "counting", "triggering", "outputting"):
            units = probed.loc[probed["function"] == function, "units"].iloc[0]
            assert units.split() == [str(u) for u in neurons.units(function).tolist()]


def language_model_run(folder: Path) -> Path:
    (folder / "checkpoints").mkdir(parents=True)
    torch.save({"state_dict": {}, "hyper_parameters": {
        "_class_path": "lightning_modules.language_model.LanguageModel"}},
        folder / "checkpoints" / "best.ckpt")  # fmt: skip
    return folder


@pytest.mark.parametrize("name", ["svm-rfe", "integrated-gradients", "interventions"])
def test_a_run_of_another_model_is_one_clear_error(tmp_path, capsys, name):
    run = language_model_run(tmp_path / "language_model")
    assert probe(name, "--runs", run, "--out", tmp_path / "out") == 2
    error = capsys.readouterr().err
    assert (f"best.ckpt is a run of lightning_modules.language_model.LanguageModel: {name} probes "
            "runs of lightning_modules.seq2seq.Seq2Seq") in error  # fmt: skip
    assert len(error.strip().splitlines()) == 1 and "Traceback" not in error
    assert not (tmp_path / "out" / f"{name}.csv").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--keep", "0"], "--keep 0.0 is not in (0, 1]"),
        (["--tokens", "1"], "--tokens 1: stage 1 needs at least 2 tokens"),
        (["--splits", "tests"], "--splits tests: give some of train, validation, test"),
        (["--tokens", "5"], "--tokens 5 is more than the 3 words of the run's vocabulary"),
    ],
)
def test_bad_options_are_one_clear_error(runs, tmp_path, capsys, arguments, message):
    run = runs / "planted" / "seed=0"
    assert probe("interventions", "--runs", run, "--out", tmp_path, *arguments) == 2
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1


def test_a_seq2seq_of_other_data_is_one_clear_error(runs, tmp_path, capsys):
    checkpoint = load_checkpoint(runs / "planted" / "seed=0" / "checkpoints" / "best.ckpt")
    checkpoint["datamodule_hyper_parameters"] = {"_class_path": "datamodules.ScanDataModule"}
    (tmp_path / "scan" / "checkpoints").mkdir(parents=True)
    torch.save(checkpoint, tmp_path / "scan" / "checkpoints" / "best.ckpt")
    assert probe("svm-rfe", "--runs", tmp_path / "scan", "--out", tmp_path / "out") == 2
    error = capsys.readouterr().err
    assert "was trained on datamodules.ScanDataModule: svm-rfe re-requests tokens" in error
    assert len(error.strip().splitlines()) == 1


@pytest.mark.parametrize("count", [50, 120])
def test_integrated_gradients_figure_labels_its_tokens_readably(tmp_path, monkeypatch, count):
    """50 tokens (section 4's count) over 16 units at two steps: each token's label is at least
    8 pt and the labels are far enough apart not to overlap; of 120 tokens, one in two is
    labelled (the axis says so), the figure growing no taller than for 60."""
    import probes.command.integrated_gradients as module

    drawn = []
    monkeypatch.setattr(module, "save_figure", lambda figure, path: drawn.append(figure) or path)
    words = [f"word{index}" for index in range(count)]
    table = pd.DataFrame([
        {"run": "runs/paper4/default/seed=0", "group": "runs/paper4/default", "checkpoint": "best",
         "word": word, "time": time, "unit": unit, "importance": 1.0 + (unit == index % 16)}
        for time in ("T-1", "T-2") for index, word in enumerate(words) for unit in range(16)
    ])  # fmt: skip
    module.IntegratedGradientsProbe().figures(table, None, tmp_path)
    (figure,) = drawn
    figure.tight_layout()
    every = 1 if count == 50 else 2
    assert figure.get_figheight() <= 1.5 + 1.6 * 8 / 72 * 60
    maps = [axis for axis in figure.axes if axis.get_xlabel() == "unit"]  # not the colour bars
    assert len(maps) == 2
    for axis in maps:
        labels = [label for label in axis.get_yticklabels() if label.get_text()]
        assert [label.get_text() for label in labels] == [repr(word) for word in words[::every]]
        assert min(label.get_fontsize() for label in labels) >= 8
        apart = axis.get_window_extent().height / len(labels) * 72 / figure.dpi
        assert apart >= 8, f"{apart:.1f} pt between labels"
        assert axis.get_ylabel() == ("token" if every == 1 else "token (one in 2 labelled)")
