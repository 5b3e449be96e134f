import random

import pytest
import torch

from datamodules import ScanDataModule
from datamodules.scan import (
    SPLIT_FILES,
    addprim_jump_split,
    generate_scan_commands,
    interpret,
    randomize_actions,
    read_scan_split,
    union_of_splits,
)
from tests.data_files import write_scan_split


@pytest.fixture(scope="module")
def pairs():
    return generate_scan_commands()


@pytest.fixture(scope="module")
def split(pairs):
    return addprim_jump_split(pairs)


def test_grammar_and_split_sizes(pairs, split):
    commands = [command for command, _ in pairs]
    assert len(commands) == len(set(commands)) == 20_910
    assert commands == [command for command, _ in generate_scan_commands()]  # deterministic
    jump_free = [c for c, _ in split["train"] if "jump" not in c.split()]
    assert len(jump_free) == len(set(jump_free)) == 13_203
    assert split["train"].count(("jump", "I_JUMP")) == 1_467
    assert len(split["train"]) == 14_670
    tests = [command for command, _ in split["test"]]
    assert len(tests) == len(set(tests)) == 7_706
    assert all("jump" in c.split() and c != "jump" for c in tests)
    assert not set(tests) & {command for command, _ in split["train"]}


@pytest.mark.parametrize(
    "command, actions",
    [
        (
            "jump left twice after jump right",
            "I_TURN_RIGHT I_JUMP I_TURN_LEFT I_JUMP I_TURN_LEFT I_JUMP",
        ),
        (
            "look left twice and run opposite right",
            "I_TURN_LEFT I_LOOK I_TURN_LEFT I_LOOK I_TURN_RIGHT I_TURN_RIGHT I_RUN",
        ),
        ("turn right after jump twice", "I_JUMP I_JUMP I_TURN_RIGHT"),
        ("turn around left", " ".join(["I_TURN_LEFT"] * 4)),
        ("walk opposite right thrice", " ".join(["I_TURN_RIGHT I_TURN_RIGHT I_WALK"] * 3)),
        ("run around right", " ".join(["I_TURN_RIGHT I_RUN"] * 4)),
        ("turn opposite left", "I_TURN_LEFT I_TURN_LEFT"),
    ],
)
def test_interpret_known_examples(command, actions):
    assert interpret(command) == actions


@pytest.mark.parametrize("command", ["walk before run left", "twice", "turn", "run and"])
def test_interpret_rejects_commands_outside_the_grammar(command):
    with pytest.raises(ValueError, match=command):
        interpret(command)


def test_longest_action_sequence(pairs):
    assert max(len(actions.split()) for _, actions in pairs) == 48


def test_write_read_round_trip_and_errors(split, tmp_path):
    write_scan_split(split, tmp_path)
    assert read_scan_split(tmp_path) == split
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(SPLIT_FILES.values())
    from_files = ScanDataModule(data_dir=str(tmp_path), eval_size=None)
    from_files.prepare_data()
    from_files.setup()
    assert from_files.data_source == f"SCAN files from {tmp_path}"
    assert from_files.splits["test"] == from_files.splits["test_sample"] == split["test"]

    with pytest.raises(FileNotFoundError, match="does not exist.*tasks_train_addprim_jump.txt"):
        read_scan_split(tmp_path / "nowhere")
    (tmp_path / "tasks_test_addprim_jump.txt").unlink()
    with pytest.raises(FileNotFoundError, match="lacks tasks_test_addprim_jump.txt"):
        read_scan_split(tmp_path)
    with pytest.raises(FileNotFoundError, match="lacks tasks_test_addprim_jump.txt"):
        ScanDataModule(data_dir=str(tmp_path)).prepare_data()

    (tmp_path / "tasks_test_addprim_jump.txt").write_text(
        "IN: jump twice OUT: I_JUMP I_JUMP\nIN: jump twice I_JUMP I_JUMP\n"
    )
    with pytest.raises(ValueError, match=r"tasks_test_addprim_jump.txt, line 2: expected 'IN: "):
        read_scan_split(tmp_path)


@pytest.mark.parametrize("name", list(SPLIT_FILES.values()))
def test_empty_split_file_is_one_error_naming_it(split, tmp_path, name):
    write_scan_split({part: pairs[:20] for part, pairs in split.items()}, tmp_path)
    (tmp_path / name).write_text("\n   \n")
    with pytest.raises(ValueError) as info:
        read_scan_split(tmp_path)
    assert str(info.value) == (
        f"{tmp_path / name} is empty: a split file needs at least one "
        "'IN: <command> OUT: <actions>' row; fill it (or copy it again from the SCAN "
        "repository), or leave --data.data_dir unset to regenerate the split from the grammar"
    )
    (tmp_path / name).write_bytes(b"")
    with pytest.raises(ValueError, match=rf"{name} is empty"):
        ScanDataModule(data_dir=str(tmp_path)).setup()


def test_non_utf8_split_file_names_the_file_and_line(split, tmp_path):
    write_scan_split({part: pairs[:20] for part, pairs in split.items()}, tmp_path)
    path = tmp_path / SPLIT_FILES["test"]
    path.write_bytes(path.read_bytes() + b"\n\nIN: jump \xff\xfe OUT: I_JUMP\n")  # line 23
    with pytest.raises(ValueError) as info:
        read_scan_split(tmp_path)
    assert str(info.value) == f"{path} is not UTF-8 text (byte 0xff on line 23): save it as UTF-8"


def test_setting_b_randomizes_action_words(split):
    train = split["train"]
    randomized = randomize_actions(train, seed=0)
    assert len(randomized) == len(train)
    assert all(interpret(command) == actions for command, actions in randomized)
    assert any("jump" in c.split() and len(c.split()) > 1 for c, _ in randomized)
    # only the action words change: turn/left/opposite/twice/and... stay in place
    keep = {"walk", "look", "run", "jump"}
    for (command, _), (original, _) in zip(randomized[:500], train[:500], strict=True):
        assert [w for w in command.split() if w not in keep] == [
            w for w in original.split() if w not in keep
        ]
    assert randomize_actions(train, seed=0) == randomized
    assert randomize_actions(train, seed=1) != randomized


@pytest.fixture(scope="module")
def datamodule():
    data = ScanDataModule(batch_size=8, steps_per_epoch=3, eval_size=20, data_seed=0)
    data.setup()
    return data


def test_datamodule_vocab_and_splits(datamodule):
    assert datamodule.source_vocab_size == 15 and datamodule.target_vocab_size == 9
    assert datamodule.source_vocab[:2] == ["<pad>", "<eos>"]
    assert datamodule.target_vocab[:3] == ["<pad>", "<sos>", "<eos>"]
    assert "regenerated from the grammar" in datamodule.data_source
    sizes = {name: len(rows) for name, rows in datamodule.splits.items()}
    assert sizes == {"train": 14_670, "test": 7_706, "train_sample": 20, "test_sample": 20}
    assert [len(loader.dataset) for loader in datamodule.val_dataloader()] == [20, 20]
    assert [len(loader.dataset) for loader in datamodule.test_dataloader()] == [14_670, 7_706]
    with pytest.raises(ValueError, match="valid splits: train, test, train_sample"):
        datamodule.split_dataloader("validation")
    with pytest.raises(ValueError, match="unknown SCAN setting"):
        ScanDataModule(setting="C")


def test_datamodule_batches(datamodule):
    batch = next(iter(datamodule.split_dataloader("test", batch_size=8)))
    assert set(batch) == {"source", "source_lengths", "target", "index"}
    assert all(t.dtype == torch.long for t in batch.values())
    assert batch["source"].shape == (8, int(batch["source_lengths"].max()))
    assert batch["index"].tolist() == list(range(8))
    for row, source, length, target in zip(
        datamodule.splits["test"][:8],
        batch["source"],
        batch["source_lengths"],
        batch["target"],
        strict=True,
    ):
        command, actions = row
        words = [datamodule.source_vocab[i] for i in source[: length - 1]]
        assert words == command.split() and source[length - 1] == 1 and not source[length:].any()
        assert int((target == 2).nonzero()[0]) == len(actions.split())
        assert datamodule.decode_target(target) == [actions]

    train_batches = list(datamodule.train_dataloader())
    assert len(train_batches) == 3
    assert all(len(batch["index"]) == 8 for batch in train_batches)
    again = ScanDataModule(batch_size=8, steps_per_epoch=3, eval_size=20, data_seed=0)
    for first, second in zip(train_batches, again.train_dataloader(), strict=True):
        assert all(torch.equal(first[key], second[key]) for key in first)


def test_setting_b_datamodule_shares_vocab_and_test_split(datamodule):
    b = ScanDataModule(setting="B", batch_size=8, steps_per_epoch=3, eval_size=20, data_seed=0)
    b.setup()
    assert b.source_vocab == datamodule.source_vocab
    assert b.target_vocab == datamodule.target_vocab
    assert b.splits["test"] == datamodule.splits["test"]
    assert b.splits["train"] == randomize_actions(datamodule.splits["train"], 0)


def test_union_of_splits_is_every_command_once(split):
    """The authors' setting B (uniform_scan): the training rows then the test rows, each command
    once at its first row: the whole grammar, every test row included, "jump" once."""
    union = union_of_splits(split)
    commands = [command for command, _ in union]
    assert len(union) == len(set(commands)) == 20_910
    assert set(split["test"]) <= set(union)
    assert set(split["train"]) <= set(union) and commands.count("jump") == 1
    assert union[:13_203] == [pair for pair in split["train"] if pair[0] != "jump"][:13_203]
    assert union[-7_706:] == split["test"]
    assert all(interpret(command) == actions for command, actions in union)


def test_authors_setting_b_datamodule_trains_on_the_union(datamodule):
    b = ScanDataModule(setting="B", setting_b="union", batch_size=8, steps_per_epoch=3,
                       eval_size=20, data_seed=0)  # fmt: skip
    b.setup()
    assert b.splits["train"] == union_of_splits(addprim_jump_split())
    assert b.splits["test"] == datamodule.splits["test"]
    assert "every test row is in training" in b.data_source
    a = ScanDataModule(setting="A", setting_b="union", batch_size=8, eval_size=20, data_seed=0)
    a.setup()  # setting_b changes setting B only
    assert a.splits["train"] == datamodule.splits["train"]
    assert "test row" not in a.data_source
    with pytest.raises(ValueError, match="unknown setting_b 'test'"):
        ScanDataModule(setting="B", setting_b="test")


def test_eval_samples_with_replacement_are_the_authors_draw(split):
    """main.py's choose(): random.choices(rows, k=100), seeded by the run: here `data_seed`'s
    Random draws the training sample, then the test sample."""
    data = ScanDataModule(eval_size=100, eval_replacement=True, data_seed=3)
    data.setup()
    rng = random.Random(3)
    train = sorted(rng.choices(range(14_670), k=100))
    test = sorted(rng.choices(range(7_706), k=100))
    assert data.splits["train_sample"] == [split["train"][i] for i in train]
    assert data.splits["test_sample"] == [split["test"][i] for i in test]
    assert len(set(train)) < 100  # with replacement: a row drawn twice (seed 3)
    with pytest.raises(ValueError, match="eval_replacement draws eval_size rows"):
        ScanDataModule(eval_size=None, eval_replacement=True)
