"""Paper 1's pre-registered readings of Figures 2 and 4 (`reports/paper1/preregistration.md`, items
6-7): the authors' counting, the cloud rule, the all-weights share, polarity by the mean weight,
the longer compositions' check and the data's resolution, with known answers; and one model
measured end to end."""

from pathlib import Path

import pytest
import torch

from datamodules import machine_tasks
from datamodules.cache import ChecksumError, sha256
from datamodules.machine_tasks import Sample1Unavailable, resolve_longer
from experiments.paper1 import readings as readings_module
from experiments.paper1.analyses import GATES
from experiments.paper1.reading_claims import (
    FIELDS,
    authors_results,
    beside,
    cloud_claim,
    reading_claims,
    readings_text,
    weight_reading_claims,
)
from experiments.paper1.readings import (
    all_weight_shares,
    authors_files,
    authors_gates,
    authors_saturation,
    mean_sign,
    measure_readings,
    unfollowed_row,
)
from experiments.paper1.reproduce import measured_on_all
from experiments.report import Claim, Measured
from lightning_modules.recording import pad_and_concatenate, record_split
from probes.activations import gate_saturation
from probes.traces import valid_steps
from storage.layout import UNTRAINED
from storage.run_folder import RunFolder
from tests.tiny_run import fit


def gate_trace(values: list[list[float]], source_lengths: list[int], targets: list[list[int]]):
    """A trace whose four gate sites hold one unit with `values` `[batch, time]` at every step
    (encoder and decoder alike), its valid steps set by `source_lengths` and `targets`."""
    gate = torch.tensor(values, dtype=torch.float64)[..., None]
    trace = {site: gate for site in GATES}
    trace["batch.source_lengths"] = torch.tensor(source_lengths)
    trace["batch.target"] = torch.tensor(targets)
    return trace


def test_the_authors_counting_pools_every_step_of_every_file():
    """File a: 2 valid encoder steps, both < 0.1; file b: 6 valid steps, one < 0.1 and three >
    0.9. Pooled: left 3/8, right 3/8 (files averaged would give left 7/12); the padded steps (0.0)
    count for nothing."""
    a = gate_trace([[0.05, 0.01, 0.0]], [2], [[3, 4, 0]])
    b = gate_trace([[0.95, 0.5, 0.99], [0.02, 0.97, 0.5]], [3, 3], [[3, 3, 3], [3, 3, 3]])
    counted = authors_saturation([a, b])
    assert set(counted) == set(GATES)
    assert counted["encoder.update_gate"] == {"left": [3 / 8], "right": [3 / 8]}
    assert counted["decoder.update_gate"] == {"left": [3 / 8], "right": [3 / 8]}


def test_the_cloud_rule_reads_where_the_units_lie():
    def verdict(left, right) -> str:
        return cloud_claim("cloud.x", "x", [left], [right]).verdict

    assert verdict([0.9, 0.8, 0.7], [0.1, 0.0, 0.0]) == "reproduced"  # every unit left of it
    # one unit of three left-saturated (1/3 <= 0.5), but the mean left 0.3 > the mean right 0.03
    assert verdict([0.9, 0.0, 0.0], [0.0, 0.1, 0.0]) == "partially reproduced"
    # units never saturated count as not left-saturated
    assert verdict([0.0, 0.0, 0.0], [0.0, 0.0, 0.0]) == "not reproduced"


HIDDEN, INPUTS = 20, 6


def planted_state(polar: bool) -> dict[str, torch.Tensor]:
    """A GRU seq2seq's recurrent layers of small weights (|w| < 0.015: a checkerboard of 0.01
    plus row and column offsets, so every row's and column's mean in a gate block lies within
    0.002 of 0 and a scaled MAD of them is 0.0044). With `polar`: encoder W_hz rows 3 (+0.5)
    and 7 (-0.5), W_hr rows 3 and 7 at -0.3 (row 3 inverse, row 7 not); decoder W_iz column 2 at
    +0.4 and W_ir column 2 at -0.4 (inverse)."""

    def small(rows: int, columns: int) -> torch.Tensor:
        i, j = torch.arange(rows)[:, None], torch.arange(columns)[None]
        return 0.001 * (i % 5 - 2 + j % 5 - 2) + 0.01 * (-1.0) ** (i + j)

    state = {
        "encoder.weight_ih_l0": small(3 * HIDDEN, INPUTS),
        "encoder.weight_hh_l0": small(3 * HIDDEN, HIDDEN),
        "decoder.weight_ih_l0": small(3 * HIDDEN, HIDDEN),
        "decoder.weight_hh_l0": small(3 * HIDDEN, HIDDEN),
    }
    if polar:  # torch's blocks: reset rows 0..H-1, update H..2H-1
        encoder, decoder = state["encoder.weight_hh_l0"], state["decoder.weight_ih_l0"]
        encoder[HIDDEN + 3], encoder[HIDDEN + 7] = 0.5, -0.5
        encoder[3], encoder[7] = -0.3, -0.3
        decoder[HIDDEN : 2 * HIDDEN, 2], decoder[:HIDDEN, 2] = 0.4, -0.4
    return state


def test_the_all_weights_share_and_the_mean_sign_find_the_planted_units():
    state = planted_state(polar=True)
    shares = all_weight_shares(state)
    # encoder: 4 planted rows of 20 weights >= 0.2 of 60 x (6 + 20); decoder: 2 columns of 20
    assert shares["encoder"] == pytest.approx(80 / (60 * 26))
    assert shares["decoder"] == pytest.approx(40 / (60 * 40))
    assert mean_sign(state) == {
        "encoder W_hz": {"polar": [3, 7], "opposite": [3]},
        "decoder W_iz": {"polar": [2], "opposite": [2]},
    }
    assert mean_sign(planted_state(polar=False)) == {
        "encoder W_hz": {"polar": [], "opposite": []},
        "decoder W_iz": {"polar": [], "opposite": []},
    }


def test_the_mean_sign_claims_count_polar_neurons_and_inverse_runs():
    polar = {"all_weights": all_weight_shares(planted_state(True)),
             "mean_sign": mean_sign(planted_state(True))}  # fmt: skip
    plain = {"all_weights": all_weight_shares(planted_state(False)),
             "mean_sign": mean_sign(planted_state(False))}  # fmt: skip
    claims = {c.id: c for c in weight_reading_claims({"baseline": [plain] * 5,
                                                      "guided": [polar] * 5})}  # fmt: skip
    assert claims["mean_sign.fig2.polar_neurons.encoder_W_hz"].verdict == "reproduced"  # 2 - 0
    assert claims["mean_sign.fig2.polar_neurons.decoder_W_iz"].verdict == "reproduced"  # 1 - 0
    inverse = "mean_sign.sec3_2.inverse_gate_polarity"
    assert claims[f"{inverse}.guided.decoder"].verdict == "reproduced"  # 1 of 1 opposite, 5 runs
    assert claims[f"{inverse}.guided.encoder"].verdict == "not reproduced"  # 1 of 2: not > 0.5
    assert claims[f"{inverse}.baseline.encoder"].verdict == "not reproduced"  # no polar neuron
    mixed = {"baseline": [plain] * 5, "guided": [polar] * 3 + [plain] * 2}
    mixed_claims = {c.id: c for c in weight_reading_claims(mixed)}
    assert mixed_claims[f"{inverse}.guided.decoder"].verdict == "partially reproduced"  # 3 of 5
    share = claims["all_weights.fig2.threshold_is_top1pct.encoder"]
    assert share.measured.mean == pytest.approx((80 / 1560) / 2)  # 10 runs, half planted


def write(folder: Path, name: str, lines: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(f"{line}\n" for line in lines))
    return folder / name


TABLES = ["000 t1 .\t000 001\t0 1 2", "001 t1 .\t001 000\t0 1 2",
          "000 t2 .\t000 000\t0 1 2", "001 t2 .\t001 001\t0 1 2"]  # fmt: skip


def test_a_longer_file_whose_outputs_do_not_follow_from_the_tables_is_left_out(
    tmp_path, monkeypatch
):
    sample1, longer = tmp_path / "sample1", tmp_path / "longer"
    write(sample1, "train.tsv", TABLES)
    for task in ("heldout_tables", "heldout_compositions", "new_compositions"):
        write(sample1, f"{task}.tsv", ["000 t1 t2 .\t000 001 001\t0 1 2 3"])
    write(longer, "heldout_tables4.csv", ["000 t1 t1 t2 t2\t000 001 000 000 000"])
    write(longer, "heldout_compositions4.csv", ["001 t2 t1 t1 t2\t001 001 000 001 001"])
    write(longer, "new_compositions4.csv", ["000 t1 t1 t1 t1\t000 001 000 001 001"])  # wrong last
    monkeypatch.setattr(readings_module, "resolve_sample1", lambda: (sample1, "here"))
    monkeypatch.setattr(readings_module, "resolve_longer", lambda: (longer, "here"))
    files, left_out = authors_files()
    assert list(files) == ["heldout_tables", "heldout_compositions", "new_compositions",
                           "heldout_tables4", "heldout_compositions4"]  # fmt: skip
    assert files["heldout_tables4"] == [("000 t1 t1 t2 t2 .", "000 001 000 000 000")]
    assert list(left_out) == ["new_compositions4"]
    assert (
        "row 1" in left_out["new_compositions4"]
        and "'000 001 000 001 000'" in (left_out["new_compositions4"])
    )
    tables = {"t1": {"000": "001"}}
    assert unfollowed_row([("000 t3 .", "000 001")], tables) is not None  # an unknown table


def test_the_longer_files_are_found_next_to_a_sample1_clone_else_one_clear_error(
    tmp_path, monkeypatch
):
    clone = tmp_path / "machine-tasks" / "LookupTables" / "data"
    (clone / "samples" / "sample1").mkdir(parents=True)
    files = {name: write(clone / "longer_compositions" / "sample1", name, [f"{name}\tx"])
             for name in machine_tasks.LONGER_SHA256}  # fmt: skip
    monkeypatch.setattr(machine_tasks, "LONGER_SHA256", {n: sha256(p) for n, p in files.items()})
    monkeypatch.setenv("RECURRENT_PROBES_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("RECURRENT_PROBES_OFFLINE", "1")
    monkeypatch.setenv("RECURRENT_PROBES_SAMPLE1", str(clone / "samples" / "sample1"))
    folder, origin = resolve_longer()
    assert folder.resolve() == (clone / "longer_compositions" / "sample1").resolve()
    assert origin == "next to $RECURRENT_PROBES_SAMPLE1"
    files["new_compositions4.csv"].write_text("changed\n")
    with pytest.raises(ChecksumError, match="new_compositions4.csv missing or not"):
        resolve_longer()
    monkeypatch.setenv("RECURRENT_PROBES_SAMPLE1", "")
    with pytest.raises(Sample1Unavailable, match="set \\$RECURRENT_PROBES_SAMPLE1 to"):
        resolve_longer()


def saturation_of(units: int, left: float, right: float) -> dict:
    return {site: {"left": [left] * units, "right": [right] * units} for site in GATES}


def test_the_readings_claims_are_absent_where_the_measurements_lack_them():
    older = {(v, s): {"analysis": {}} for v in ("baseline", "guided") for s in (1, 2)}
    assert measured_on_all(older, FIELDS, ("baseline", "guided"), (1, 2)) == (None, None)
    assert readings_text({}, None) == ""
    state = planted_state(True)
    run = {"all_weights": all_weight_shares(state), "mean_sign": mean_sign(state)}
    unavailable = {**run, "authors_gates": {"unavailable": "generated tables"}}
    analysis = {"saturation": saturation_of(4, 0.6, 0.1)}
    results = {v: [{**analysis, "readings": unavailable}] * 2 for v in ("baseline", "guided")}
    assert authors_results(results) is None
    ids = [c.id for c in reading_claims(results)]
    assert not [i for i in ids if i.startswith("authors_gates.")]
    assert "cloud.fig4.baseline_update_left_saturated.encoder" in ids
    counted = {**run, "authors_gates": {"saturation": saturation_of(4, 0.2, 0.7)}}
    results["guided"] = [{**analysis, "readings": counted}] * 2
    assert authors_results(results) is None  # every run must have the authors' data
    results["baseline"] = results["guided"]
    ids = [c.id for c in reading_claims(results)]
    assert len([i for i in ids if i.startswith("authors_gates.fig4.")]) == 6
    assert len([i for i in ids if i.startswith("authors_gates.cloud.fig4.")]) == 3


def test_each_reading_stands_right_after_its_primary_claim():
    def claim(id: str) -> Claim:
        return Claim(id, id, 0.0, Measured.of([0.0]), "rule", "reproduced")

    primary = [claim("fig4.a"), claim("fig4.b")]
    readings = [claim("authors_gates.fig4.a"), claim("cloud.fig4.a"),
                claim("authors_gates.cloud.fig4.a"), claim("all_weights.fig9.x")]  # fmt: skip
    assert [c.id for c in beside(primary, readings)] == [
        "fig4.a", "authors_gates.fig4.a", "cloud.fig4.a", "authors_gates.cloud.fig4.a",
        "fig4.b", "all_weights.fig9.x",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> RunFolder:
    """The tiny lookup-table fit (`tests.tiny_run.TINY`), one epoch."""
    return RunFolder(fit(tmp_path_factory.mktemp("readings"), "runs", "--trainer.max_epochs", "1"))


def test_a_fitted_model_is_measured_end_to_end(tiny, monkeypatch):
    """A run's readings from its folder: the all-weights share and the mean sign from its
    weights, and the authors' counting over files (here two of its own test sets, its data
    standing in for sample1) equal to the counting over the same sets' traces as the datamodule
    records them."""
    data = tiny.datamodule("best")
    own = {split: [row[:2] for row in data.splits[split]]
           for split in ("heldout_tables", "new_compositions")}  # fmt: skip
    assert authors_gates(tiny, "best")["unavailable"].startswith("the model trained on generated")
    monkeypatch.setattr(readings_module, "SAMPLE1", data.data_dir)
    monkeypatch.setattr(readings_module, "authors_files", lambda: (own, {}))
    measured = measure_readings(tiny, "best")
    state = tiny.state_dict("best")
    assert measured["all_weights"] == all_weight_shares(state)
    assert measured["mean_sign"] == mean_sign(state)
    gates = measured["authors_gates"]
    assert (
        gates["files"] == {name: len(rows) for name, rows in own.items()} and not gates["left_out"]
    )
    model = tiny.model("best")
    traces = [record_split(model, data.split_dataloader(split, batch_size=7)) for split in own]
    joined = {key: pad_and_concatenate([t[key] for t in traces]) for key in traces[0]}
    for site in GATES:
        expected = gate_saturation(joined[site], valid_steps(joined, site))
        assert gates["saturation"][site]["left"] == pytest.approx(expected.left.tolist())
        assert gates["saturation"][site]["right"] == pytest.approx(expected.right.tolist())
        assert len(gates["saturation"][site]["left"]) == 8
    untrained = measure_readings(tiny, UNTRAINED)
    assert untrained["all_weights"] == all_weight_shares(tiny.state_dict(UNTRAINED))
    assert untrained["mean_sign"] == mean_sign(tiny.state_dict(UNTRAINED))
