"""Paper 2's runs trained again for the before-fix reading: how a retrained run is judged against
its committed run (every number equal, float32 round-off, another model), what a merged record
keeps of each, the folder merge that never writes over measurement files, and the report's naming
of another model beside its before-fix values."""

from __future__ import annotations

import json
import math

import pytest

from experiments.paper2.report import before_fix_text, readings_frame, retrained_frame
from experiments.paper2.reproduce import registered_on
from experiments.paper2.retrained import (
    EQUAL,
    OTHER,
    ROUNDED,
    compared,
    main,
    merge_folders,
    merged,
)
from experiments.paper2.scales import SCALES, Setting, epoch_tag
from experiments.report import Claim, Measured

SCALE = SCALES["quick"]
SETTING = Setting(8, 1000, 100, 1000)
END = epoch_tag(SCALE.epochs)


def snapshot(mean: float) -> dict:
    estimate = {"mean": mean, "standard_error": 0.01, "log_mean": math.log(mean),
                "log_standard_error": 0.01}  # fmt: skip
    return {"phrase": {"open": estimate}, "full": dict(estimate), "error": 1e-6}


def record(text: float, before_fix: float | None = None, seed: int = 2) -> dict:
    """A run's measurements: its text and authors readings at the end (P(omega | alpha) `text`)
    and, given `before_fix`, both before-fix readings."""
    readings = {"text": {END: snapshot(text)}, "authors": {END: snapshot(text / 2)}}
    if before_fix is not None:
        readings |= {"before_fix": {END: snapshot(before_fix)},
                     "authors_before_fix": {END: snapshot(before_fix / 2)}}  # fmt: skip
    return {"variant": SETTING.variant, "seed": seed, "command": ["--seed_everything", str(seed)],
            "readings": readings}  # fmt: skip


def test_every_number_equal_round_off_and_another_model_are_told_apart():
    committed = record(0.9419)
    assert compared(committed, record(0.9419, before_fix=0.99))["readings"] == EQUAL
    rounded = compared(committed, record(0.9419 * (1 + 5e-5), before_fix=0.99))
    assert rounded["readings"] == ROUNDED
    assert rounded["means_differ"] == 4 and rounded["means"] == 4  # text and authors, phrase+full
    other = compared(committed, record(0.9861, before_fix=0.99))
    assert other["readings"] == OTHER and other["largest_relative_difference"] == pytest.approx(
        (0.9861 - 0.9419) / 0.9861, rel=1e-2
    )


def test_a_merged_record_keeps_the_committed_readings_and_only_the_before_fix_ones_are_new():
    committed, again = record(0.9419), record(0.9861, before_fix=0.9998)
    result = merged(committed, again)
    assert result["readings"]["text"] == committed["readings"]["text"]
    assert result["readings"]["before_fix"] == again["readings"]["before_fix"]
    assert result["retrained"]["readings"] == OTHER
    assert result["retrained"]["text"] == again["readings"]["text"]  # another model's own
    same = merged(committed, record(0.9419, before_fix=0.9998))
    assert same["retrained"]["readings"] == EQUAL and "text" not in same["retrained"]


def test_merging_a_merged_record_again_gives_the_same_record():
    """The committed files already merged (the report's own runs) merged again, as when more runs
    are added: the before-fix readings they hold came from the retrained run, so the comparison
    counts the committed readings alone and nothing changes."""
    again = record(0.9419 * (1 + 5e-5), before_fix=0.9998)
    once = merged(record(0.9419), again)
    assert once["retrained"]["means"] == 4
    assert merged(once, again) == once


def test_a_retrained_run_of_another_command_or_without_a_committed_reading_is_refused():
    """Another command, a reading or a snapshot the committed run holds and the retrained one
    lacks: one error naming it and how to read it."""
    with pytest.raises(ValueError, match="command is not the committed run's"):
        merged(record(0.9, seed=2), {**record(0.9, 0.9, seed=2), "command": ["other"]})
    without_authors = record(0.9, 0.9)
    del without_authors["readings"]["authors"]
    with pytest.raises(ValueError, match="lacks the readings authors"):
        merged(record(0.9), without_authors)
    fewer_snapshots = record(0.9, 0.9)
    fewer_snapshots["readings"]["text"] = {"epoch=0": snapshot(0.9)}
    with pytest.raises(ValueError, match=f"lacks the snapshots {END} the committed run was read"):
        merged(record(0.9), fewer_snapshots)


def write(folder, seed: int, content: dict) -> None:
    path = folder / "paper2" / SETTING.variant / f"seed={seed}" / "measurements.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(content))


def test_the_folder_merge_copies_merges_and_adds_and_never_writes_over_measurements(tmp_path):
    committed, again, root = tmp_path / "committed", tmp_path / "again", tmp_path / "root"
    write(committed, 0, record(0.5, seed=0))
    write(committed, 2, record(0.9419, seed=2))
    write(again, 2, record(0.9861, before_fix=0.9998, seed=2))
    write(again, 3, record(0.97, before_fix=0.98, seed=3))  # a new seed: a run of its own
    assert merge_folders(committed, again, root) == {"copied": 1, "merged": 1, "added": 1}
    runs = root / "paper2" / SETTING.variant
    assert json.loads((runs / "seed=0" / "measurements.json").read_text()) == record(0.5, seed=0)
    assert (
        json.loads((runs / "seed=2" / "measurements.json").read_text())["retrained"]["readings"]
        == OTHER
    )
    before = {p: p.read_text() for p in root.rglob("*.json")}
    with pytest.raises(FileExistsError, match="already holds measurement files"):
        merge_folders(committed, again, root)
    assert {p: p.read_text() for p in root.rglob("*.json")} == before


def test_the_merge_command_says_what_is_wrong_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as ended:
        main([str(tmp_path / "absent"), str(tmp_path), str(tmp_path / "root")])
    assert ended.value.code == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "is not a folder of run measurement files" in said


def test_the_report_sets_another_models_before_fix_values_beside_its_own_text_reading():
    records = {
        (SETTING, 1): merged(record(0.9948, seed=1), record(0.9948, 0.9973, seed=1)),
        (SETTING, 2): merged(record(0.9419), record(0.9861, before_fix=0.9998)),
        (Setting(2, 10), 0): record(0.5, seed=0),  # not read before the fix: not listed
        (SETTING, 3): record(0.9843, before_fix=0.9944, seed=3),  # a new seed, its own weights
    }
    frame = retrained_frame(records, SCALE)
    assert list(frame["seed"]) == [1, 2, 3]
    assert list(frame["read from"]) == ["a run trained again"] * 2 + ["its own weights"]
    other = frame.iloc[1]
    assert (other["P(omega|alpha) text"], other["trained again, text"], other["before fix"]) == (
        pytest.approx(0.9419),
        pytest.approx(0.9861),
        pytest.approx(0.9998),
    )
    assert frame.iloc[0]["trained again, text"] == "-"
    text = before_fix_text(frame)
    assert "1 gave every float32 reading equal" in text and "1 another model" in text
    assert f"`{SETTING.variant}` seed 2" in text
    assert "1 other run kept its snapshots, each read from its own weights." in text
    assert retrained_frame({(Setting(2, 10), 0): record(0.5, seed=0)}, SCALE) is None


def test_the_before_fix_readings_are_dated_by_their_registration_and_have_their_own_columns():
    assert registered_on("before_fix.fig3.predictable_late") == "2026-11-28"
    assert registered_on("authors_before_fix.fig2.conduit_interacts") == "2026-11-28"
    assert registered_on("cd.approximation_error.float64") == "2026-11-28"
    assert registered_on("fig3.predictable_late") is None
    assert registered_on("authors.fig3.predictable_late") is None

    def claim(id: str, verdict: str) -> Claim:
        return Claim(id, "words", 1.0, Measured.of([1.0]), "rule", verdict)

    base = "fig2.conduit_interacts"
    frame = readings_frame([claim(base, "not reproduced"),
                            claim(f"authors.{base}", "reproduced"),
                            claim(f"authors_before_fix.{base}", "partially reproduced"),
                            claim(f"before_fix.{base}", "reproduced")])  # fmt: skip
    row = frame.set_index("claim").loc[base]
    assert (row["text"], row["authors"], row["before_fix"], row["authors_before_fix"]) == (
        "no",
        "yes",
        "yes",
        "partly",
    )
