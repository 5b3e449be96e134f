"""The atlas's SCAN rows (`experiments.atlas.targets.scan_rows`) and cells with known answers: the
command word each action comes from (its verb, or its direction for a turn) on hand-written
commands and on every command of the grammar, the rows' T and analysed token, the table index of
their decoder steps, contextual decomposition with the command word as the phrase on a planted
seq2seq, the redundant-input cell as training minus test sentence accuracy, and paper 3's own
model shape refused in one line, and the report telling the claims its cells can never judge
from those its runs will."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from datamodules.scan import PRIMITIVES, TURNS, ScanDataModule, generate_scan_commands, interpret
from experiments.atlas.cells import PAPER4_TIME, measure_model
from experiments.atlas.claims import claims_of
from experiments.atlas.decomposition import command_word, decomposition_cell, phrase_shares
from experiments.atlas.questions import MODELS, Q3_MODELS, RULES
from experiments.atlas.redundant import redundant_cell
from experiments.atlas.report import matrix, not_yet_text, report_text, unjudged
from experiments.atlas.runs import arguments_of, paper_layout
from experiments.atlas.scales import NOT_WIRED, SCALES, WIRED_TASKS
from experiments.atlas.targets import (
    NO_LABEL,
    ROWS,
    action_words,
    scan_batch,
    scan_rows,
    table_index,
)
from experiments.engine.publish import Stopwatch
from lightning_modules.recurrent import Intervenable
from lightning_modules.seq2seq import Seq2Seq
from probes.interventions import sequence_accuracy, split_accuracy
from probes.neuron_functions import trace_rows
from tests.test_atlas_decomposition import planted_seq2seq

# SCAN's vocabularies (`ScanDataModule`): the source's <pad>, <eos>, then the words in order; the
# target's <pad>, <sos>, <eos>, then the actions in order.
WORDS = ["<pad>", "<eos>", "after", "and", "around", "jump", "left", "look", "opposite", "right",
         "run", "thrice", "turn", "twice", "walk"]  # fmt: skip
WORD = {word: i for i, word in enumerate(WORDS)}
I_TURN_RIGHT, I_WALK = 7, 8
# The planted seq2seq (`tests.test_atlas_decomposition.planted_seq2seq`): "right" writes unit 0,
# which the logit of I_TURN_RIGHT reads, "walk" unit 1, which that of I_WALK reads; "left" and
# "jump" write units no logit reads.
WRITERS = (WORD["right"], WORD["walk"], WORD["left"], WORD["jump"])

# Hand-written rows: four distinct commands end in I_TURN_RIGHT, three in I_WALK ("walk twice"
# three times over the splits, counted once), two in I_JUMP, one in I_LOOK.
TRAIN = ["turn right", "walk twice", "walk twice", "turn left and turn right", "walk right",
         "turn right after walk", "jump around right", "look opposite right"]  # fmt: skip
TEST = ["walk twice", "turn opposite right twice", "walk after turn right",
        "jump twice after turn right"]  # fmt: skip


def test_each_action_comes_from_its_verb_or_for_a_turn_its_direction():
    """Hand-worked commands: each action's source word position (an `after` command's actions
    start with its second sentence); a string outside the grammar is refused."""
    assert action_words("jump twice after turn left") == [4, 0, 0]
    assert action_words("walk opposite right thrice and look") == [2, 2, 0] * 3 + [5]
    assert action_words("turn around left") == [2] * 4
    assert action_words("run left after jump around right twice") == [5, 3] * 8 + [1, 0]
    assert action_words("jump") == [0]
    with pytest.raises(ValueError, match="not a SCAN command"):
        action_words("jump and")


def test_every_command_of_the_grammar_has_each_actions_word():
    """On all 20,910 commands: one source word per action, which names that action (a primitive's
    verb or a turn's direction, never `turn` or a modifier)."""
    for command, actions in generate_scan_commands():
        words, sources = command.split(), action_words(command)
        assert len(sources) == len(actions.split())
        for action, source in zip(actions.split(), sources, strict=True):
            assert {**PRIMITIVES, **TURNS}[words[source]] == action


@pytest.fixture(scope="module")
def scan_data(tmp_path_factory):
    """A SCAN datamodule reading the hand-written rows as its split files."""
    folder = tmp_path_factory.mktemp("scan")
    for name, commands in (("train", TRAIN), ("test", TEST)):
        lines = [f"IN: {command} OUT: {interpret(command)}" for command in commands]
        (folder / f"tasks_{name}_addprim_jump.txt").write_text("\n".join(lines) + "\n")
    data = ScanDataModule(data_dir=str(folder), eval_size=None)
    data.setup()
    return data


@pytest.fixture(scope="module")
def planted(scan_data):
    model = planted_seq2seq(WRITERS, vocabulary=len(WORDS))
    with torch.no_grad():
        rows = scan_rows(model, scan_data, tokens=2, per_token=10, correct_only=False)
    return model, rows


def test_scan_rows_are_every_distinct_command_of_the_two_most_common_last_actions(planted):
    """`tokens=2`: I_TURN_RIGHT (4 commands) then I_WALK (3); each command once, its T the
    number of its actions, its analysed token its last action; SCAN is a task with rows."""
    _, rows = planted
    traced = rows.traced
    assert ROWS["SCAN"] is scan_rows
    assert rows.tokens == [I_TURN_RIGHT, I_WALK]
    assert rows.names == {I_TURN_RIGHT: "I_TURN_RIGHT", I_WALK: "I_WALK"}
    commands = [" ".join(WORDS[w] for w in source if w > 1) for source in traced.batch["source"]]
    expected = {"turn right": 1, "turn left and turn right": 2, "turn right after walk": 2,
                "turn opposite right twice": 4, "walk twice": 2, "walk right": 2,
                "walk after turn right": 2}  # fmt: skip
    assert sorted(commands) == sorted(expected)
    for row, command in enumerate(commands):
        assert int(traced.position[row]) == expected[command]
        last = interpret(command).split()[-1]
        assert rows.names[int(traced.token[row])] == last
    assert traced.token.tolist() == [I_TURN_RIGHT] * 4 + [I_WALK] * 3


def test_per_token_keeps_a_seeded_draw_of_each_tokens_rows(scan_data, planted):
    """At most `per_token` rows of each token, the same draw every time."""
    model, _ = planted
    first, second = (scan_rows(model, scan_data, 2, 2, False).traced for _ in range(2))
    assert first.token.tolist() == [I_TURN_RIGHT] * 2 + [I_WALK] * 2
    assert torch.equal(first.batch["source"], second.batch["source"])


def test_the_table_index_of_a_step_is_the_command_word_its_action_comes_from(planted):
    """ "turn left and turn right" (I_TURN_LEFT I_TURN_RIGHT): left, right; "walk right"
    (I_TURN_RIGHT I_WALK): right, walk; no label from T on."""
    _, rows = planted
    traced = rows.traced
    labels = table_index(traced, "SCAN")
    sources = traced.batch["source"]
    for command, words in (("turn left and turn right", ["left", "right"]),
                           ("walk right", ["right", "walk"]),
                           ("turn opposite right twice", ["right"] * 4)):  # fmt: skip
        ids = torch.tensor([WORD[w] for w in command.split()] + [1])
        row = next(r for r in range(len(sources)) if sources[r, : len(ids)].tolist() == ids.tolist()
                   and int(traced.batch["source_lengths"][r]) == len(ids))  # fmt: skip
        steps = len(words)
        assert labels[row, :steps].tolist() == [WORD[w] for w in words]
        assert (labels[row, steps:] == NO_LABEL).all()


def test_the_command_word_carries_the_whole_logit_of_the_last_action(planted):
    """The planted model's logit of I_TURN_RIGHT reads only what "right" writes, that of I_WALK
    only what "walk" writes: with the command word of the last action as the phrase (the one
    "right" or "walk" it comes from) the cell is 1 on every row; with the command's first word
    where that is another word ("turn", which writes nothing), 0."""
    model, rows = planted
    traced = rows.traced
    phrase = command_word(traced)
    assert (phrase.sum(1) == 1).all()
    found = decomposition_cell(model, rows, "SCAN")
    assert found["value"] == pytest.approx(1.0, abs=1e-6) and found["rows"] == 7
    assert found["tokens"] == pytest.approx({"I_TURN_RIGHT": 1.0, "I_WALK": 1.0}, abs=1e-6)
    first = torch.zeros_like(phrase)
    first[:, 0] = True
    other = ~phrase[:, 0]
    shares, _ = phrase_shares(model, traced, first)
    assert other.sum() == 4 and shares[other].abs().max() < 1e-6


class Answers(Intervenable, torch.nn.Module):
    """A stand-in seq2seq answering, from a table of sources, the right actions of the commands
    `known` and I_WALK at every step for any other command."""

    device = torch.device("cpu")

    def __init__(self, data: ScanDataModule, known: set[str]):
        super().__init__()
        self.answers = {}
        for split in ("train", "test"):
            for row, (command, _) in zip(data.datasets[split], data.splits[split], strict=True):
                if command in known:
                    self.answers[tuple(row["source"].tolist())] = row["target"]

    def forward(self, source, lengths, steps, edits=(), **_):
        logits = torch.zeros(len(source), steps, 9)
        logits[:, :, I_WALK] = 1.0
        for row, length in enumerate(lengths.tolist()):
            target = self.answers.get(tuple(source[row, :length].tolist()))
            if target is not None:
                logits[row, : len(target)] = torch.nn.functional.one_hot(target, 9)[:steps]
        return logits, None


def test_scans_redundant_input_is_training_minus_test_sentence_accuracy(scan_data):
    """Paper 3's reading: the share of all training rows answered exactly (every action and
    <eos>; `probes.interventions.split_accuracy`, whatever the batches) minus that of all test
    rows, the splits as they are (duplicates counted), whatever the analysed rows."""
    known = {"turn right", "walk twice", "look opposite right", "walk after turn right"}
    model = Answers(scan_data, known)
    train = sum(command in known for command in TRAIN) / len(TRAIN)
    test = sum(command in known for command in TEST) / len(TEST)
    assert split_accuracy(model, scan_data, "train") == train == 4 / 8
    assert sequence_accuracy(model, scan_data.split_dataloader("train", batch_size=3)) == train
    found = redundant_cell(model, None, "SCAN", scan_data)
    assert found["value"] == pytest.approx(train - test) and found["value"] == 0.0
    assert (found["train"], found["test"]) == (0.5, 0.5)
    model = Answers(scan_data, {"walk twice"})
    found = redundant_cell(model, None, "SCAN", scan_data)
    assert found["value"] == pytest.approx(2 / 8 - 1 / 4)
    with pytest.raises(ValueError, match="needs the run's SCAN datamodule"):
        redundant_cell(model, None, "SCAN")


def test_a_models_cells_on_scan_rows(scan_data):
    """Every cell of a tiny untrained LSTM seq2seq on SCAN rows: the table index feeds the
    functional groups, the redundant input is its training minus test sentence accuracy."""
    torch.manual_seed(0)
    model = Seq2Seq(len(WORDS), 9, cell="lstm", embedding_size=4, hidden_size=6, attention="none",
                    bridge="last").eval()  # fmt: skip
    with torch.no_grad():
        rows = scan_rows(model, scan_data, tokens=2, per_token=10, correct_only=False)
    state = {key: value.detach() for key, value in model.state_dict().items()}
    found = measure_model(model, rows, "SCAN", "lstm", state, 1, scan_data)
    expected = redundant_cell(model, rows, "SCAN", scan_data)["value"]
    assert found["cells"]["redundant_input"] == expected
    assert found["functional_groups"]["value"] is not None
    assert found["rows"] == 7 and -1 <= found["cells"]["contextual_decomposition"] <= 1
    assert set(found["tokens"]) == {"I_TURN_RIGHT", "I_WALK"}  # paper 4's stages on each token
    assert None not in found["cells"].values()


@pytest.fixture(scope="module")
def paper3_shaped(scan_data):
    """A tiny untrained seq2seq of paper 3's SCAN shape (bidirectional encoder, its first and
    last states handed to a decoder twice its size), its analysed rows and its cells."""
    torch.manual_seed(0)
    model = Seq2Seq(len(WORDS), 9, cell="lstm", embedding_size=4, hidden_size=4,
                    attention="general", attention_placement="input_feeding", bidirectional=True,
                    bridge="first_last").eval()  # fmt: skip
    with torch.no_grad():
        rows = scan_rows(model, scan_data, tokens=2, per_token=10, correct_only=False)
    state = {key: value.detach() for key, value in model.state_dict().items()}
    return model, rows, measure_model(model, rows, "SCAN", "lstm", state, 1, scan_data)


def test_paper3s_model_shape_is_measured_where_paper4s_time_is_not_read(scan_data, paper3_shaped):
    """Paper 3's encoder (bidirectional, its first and last states handed to a decoder twice its
    size) has no state in the decoder's units at paper 4's t = 0: paper 4's own tracing refuses
    it in one line; the atlas traces it all the same and measures every cell that does not read
    paper 4's time, the others (and CD, which cannot follow that encoder) saying why they do not
    apply; no token is put through paper 4's stages."""
    model, rows, found = paper3_shaped
    batch, _ = scan_batch(scan_data, tokens=2, per_token=10)
    with pytest.raises(ValueError, match="encoder's states have 8 units and its decoder's 16"):
        trace_rows(model, batch, int(batch["signal_position"].max()) + 3)
    assert rows.traced.states is None and rows.traced.rows(rows.correct).states is None
    assert found["units"] == 16 and found["tokens"] == {}
    measured = ("functional_groups", "gate_saturation", "connectivity", "redundant_input")
    assert all(found["cells"][name] is not None for name in measured)
    for name in (*PAPER4_TIME, "contextual_decomposition"):
        assert found["cells"][name] is None, name
        assert "does_not_apply" in found[name], name
    for name in PAPER4_TIME:
        assert found[name]["does_not_apply"].startswith("paper 4's time: the model's encoder's "
                                                        "states have 8 units")  # fmt: skip


def test_the_report_tells_claims_never_judged_from_claims_not_yet_judged(paper3_shaped):
    """A model set of `paper3_scan_A` alone (paper 3's shape, trained and untrained alike), at a
    scale that trains no other model: its gate saturation judges its q3 claim; the claims reading
    its contextual decomposition or its neuron functions, which do not apply to it, are never
    judged, each naming that cell (`q2.b_over_a` too, though setting B is not measured); the
    claims on models the scale does not train are not yet judged, each naming what it waits for.
    Each claim stands in one place, and the report's counts are those of its lists."""
    found = paper3_shaped[2]
    records = {("paper3_scan_A", 0): {**found, "untrained": found,
                                      "trained": {"started": 0.0, "finished": 60.0}}}  # fmt: skip
    scale = replace(SCALES["quick"], models={"paper3_scan_A": (0,)})
    claims = claims_of(records)
    never, not_yet = unjudged(claims, matrix(records))
    assert [claim.id for claim in claims] == ["q3.left_saturated.paper3_scan_A"]
    decomposition, counting = "contextual_decomposition", "neuron_functions"
    assert never == {"q2.most.paper3_scan_A": [("paper3_scan_A", decomposition)],
                     "q2.b_over_a": [("paper3_scan_A", decomposition)],
                     "q4.overlap.paper3_scan_A": [("paper3_scan_A", counting)]}  # fmt: skip
    assert not_yet["q4.overlap.paper4_gru"] == [("paper4_gru", "neuron_functions")]
    assert not_yet["q2.most.paper3_scan_B"] == [("paper3_scan_B", "contextual_decomposition")]
    assert not_yet["q3.guidance_only"] == [(m, "gate_saturation") for m in Q3_MODELS
                                           if m != "paper3_scan_A"]  # fmt: skip
    assert sorted([*never, *not_yet, claims[0].id]) == sorted(RULES)
    text = " ".join(report_text("quick", scale, records, claims, Stopwatch()).split())
    waiting = len(RULES) - 4
    assert (f"Of the {len(RULES)} pre-registered claims, 1 is judged below, 3 never judged on "
            "this model set") in text and f"and {waiting} not yet judged" in text  # fmt: skip
    assert "4 cells measured" in text and "6 where the method does not apply" in text
    never_part = text.split("Never judged on this model set (")[1].split("Not yet judged (")[0]
    waiting_part = text.split("Not yet judged (")[1]
    assert ("- `q4.overlap.paper3_scan_A`: reads `paper3_scan_A` x `neuron_functions`, where "
            "the method does not apply") in never_part  # fmt: skip
    assert never_part.count("- `") == 3 and waiting_part.count("- `") == waiting
    assert "- `q4.overlap.paper4_gru`: waits for `paper4_gru` (not trained at this scale)" in (
        waiting_part
    )
    assert "paper3_scan_A`: " not in waiting_part and "`q4.overlap.paper4_gru`" not in never_part


def test_the_report_says_why_a_task_is_not_trained():
    """SCAN's models and the rule corpus's are trained and measured, so the default scale lists
    no model as not trained; every unwired task (none now) has its reason."""
    text = not_yet_text(SCALES["default"])
    assert "paper3_scan" not in text and "paper2_lm" not in text and "not trained" not in text
    assert {model.task for model in MODELS.values()} - set(WIRED_TASKS) <= set(NOT_WIRED)


def test_scan_models_train_by_paper3s_own_arguments_at_its_default_scale(tmp_path):
    """The atlas's SCAN runs are paper 3's SCAN runs of setting A and B at paper 3's default
    scale (its config, 2,000 steps), in paper 3's own run folder."""
    from experiments.paper3 import runs as paper3_runs
    from experiments.paper3.scales import SCALES as PAPER3_SCALES

    for setting in ("A", "B"):
        model = f"paper3_scan_{setting}"
        own = paper3_runs.arguments_of("scan", setting, 0, PAPER3_SCALES["default"], tmp_path)
        found = arguments_of(model, 0, SCALES["default"], tmp_path)
        assert found == own
        layout = paper_layout(model, 0, SCALES["default"], tmp_path)
        assert layout.path == tmp_path / "paper3" / f"scan_{setting}" / "seed=0"
        assert found[found.index("--data.setting") + 1] == setting
        assert found[found.index("--trainer.max_steps") + 1] == "2000"
