"""The SCAN ``addprim_jump`` split (Lake & Baroni 2018, "Generalization without Systematicity"),
as paper 3 ("Gradient Descent Resists Compositionality") trains its seq2seq LSTM on it
(section 5.2; Appendix B).

SCAN commands come from a finite grammar (Lake & Baroni 2018, Figure 6)::

    C -> S and S | S after S | S
    S -> V twice | V thrice | V
    V -> D opposite left | D opposite right | D around left | D around right | D | U
    D -> U left | U right | turn left | turn right
    U -> walk | look | run | jump

which gives 34 V, 102 S and 102 + 2 * 102**2 = 20,910 commands. Without SCAN's files at hand
(``data_dir=None``) the split is regenerated from the grammar: ``train`` is the 13,203 commands
without "jump" plus 1,467 copies of ``jump -> I_JUMP`` (14,670 rows, as in SCAN's
``tasks_train_addprim_jump.txt``), ``test`` the 7,706 other commands containing "jump".

Paper 3 trains two settings: A, the split as is, and B, where the training commands use the
action words uniformly at random (see :func:`randomize_actions`); both are tested on ``test``.
The authors' code builds its setting B otherwise: it trains on the deduplicated union of the
training and test rows (see :func:`union_of_splits`), so every test row is trained on.
"""

import functools
import os
import random
from itertools import product
from pathlib import Path
from typing import Literal

import torch

from datamodules.sampling import TrainTestDataModule, VocabularySizes
from datamodules.sequences import collate_sequences, decode_targets
from datamodules.text_files import read_rows

Pair = tuple[str, str]
PRIMITIVES = {"walk": "I_WALK", "look": "I_LOOK", "run": "I_RUN", "jump": "I_JUMP"}
TURNS = {"left": "I_TURN_LEFT", "right": "I_TURN_RIGHT"}
REPEATS = {"twice": 2, "thrice": 3}
CONJUNCTIONS = ("and", "after")
INPUT_WORDS = sorted([*PRIMITIVES, "turn", *TURNS, "opposite", "around", *REPEATS, *CONJUNCTIONS])
ACTIONS = sorted([*PRIMITIVES.values(), *TURNS.values()])
SPLIT_FILES = {"train": "tasks_train_addprim_jump.txt", "test": "tasks_test_addprim_jump.txt"}
JUMP_COPIES = 1467
ROW_FORMAT = "'IN: <command> OUT: <actions>'"
EMPTY_FIX = (
    "fill it (or copy it again from the SCAN repository), or leave --data.data_dir unset to "
    "regenerate the split from the grammar"
)


def _verb_actions(words: list[str]) -> list[str] | None:
    """Actions of a V phrase (``jump``, ``turn left``, ``run opposite right``, ...)."""
    if len(words) <= 1:
        return [PRIMITIVES[words[0]]] if words and words[0] in PRIMITIVES else None
    verb, *modifier, direction = words
    if direction not in TURNS or (verb not in PRIMITIVES and verb != "turn"):
        return None
    step = [TURNS[direction]] if verb == "turn" else [TURNS[direction], PRIMITIVES[verb]]
    if not modifier:
        return step
    if modifier == ["opposite"]:
        return [TURNS[direction], *step]
    if modifier == ["around"]:
        return step * 4
    return None


def _sentence_actions(words: list[str]) -> list[str] | None:
    """Actions of an S phrase: a V phrase, optionally followed by ``twice`` or ``thrice``."""
    times = REPEATS.get(words[-1], 1) if words else 1
    verb = _verb_actions(words[:-1] if times > 1 else words)
    return None if verb is None else verb * times


def interpret(command: str) -> str:
    """The action sequence of a SCAN command (space-separated output symbols).

    >>> interpret("jump left twice after jump right")
    'I_TURN_RIGHT I_JUMP I_TURN_LEFT I_JUMP I_TURN_LEFT I_JUMP'
    """
    words = command.split()
    joints = [i for i, word in enumerate(words) if word in CONJUNCTIONS]
    sentences = [words] if not joints else [words[: joints[0]], words[joints[0] + 1 :]]
    actions = [_sentence_actions(sentence) for sentence in sentences]
    if len(joints) > 1 or any(a is None for a in actions):
        raise ValueError(f"not a SCAN command (Lake & Baroni 2018 grammar): {command!r}")
    if joints and words[joints[0]] == "after":
        actions.reverse()
    return " ".join(action for sentence in actions for action in sentence)


def generate_scan_commands() -> list[Pair]:
    """All 20,910 ``(command, actions)`` pairs of the grammar: every S, then every ``S and S``,
    then every ``S after S`` (S in a fixed order)."""
    return list(_scan_commands())


@functools.lru_cache(maxsize=1)
def _scan_commands() -> tuple[Pair, ...]:
    """`generate_scan_commands`, kept for the process: interpreting the grammar takes half a
    second, and a reproduction sets up a DataModule per SCAN run it measures."""
    verbs = [*PRIMITIVES]
    for verb, direction in product([*PRIMITIVES, "turn"], TURNS):
        verbs += [f"{verb} {modifier}{direction}" for modifier in ("", "opposite ", "around ")]
    sentences = [f"{verb}{suffix}" for verb in verbs for suffix in ("", " twice", " thrice")]
    commands = sentences + [
        f"{first} {joint} {second}"
        for joint in CONJUNCTIONS
        for first, second in product(sentences, repeat=2)
    ]
    return tuple((command, interpret(command)) for command in commands)


def addprim_jump_split(pairs: list[Pair] | None = None) -> dict[str, list[Pair]]:
    """SCAN's ``addprim_jump`` split of ``pairs`` (default: the whole grammar).

    ``train``: the pairs without "jump", then ``JUMP_COPIES`` copies of ``("jump", "I_JUMP")``;
    ``test``: the pairs with "jump" other than the bare primitive.
    """
    pairs = generate_scan_commands() if pairs is None else pairs
    with_jump = {command for command, _ in pairs if "jump" in command.split()}
    return {
        "train": [pair for pair in pairs if pair[0] not in with_jump]
        + [("jump", PRIMITIVES["jump"])] * JUMP_COPIES,
        "test": [pair for pair in pairs if pair[0] in with_jump and pair[0] != "jump"],
    }


def check_scan_folder(path: str | os.PathLike) -> Path:
    """Raise one clear FileNotFoundError unless ``path`` holds both addprim_jump task files."""
    folder = Path(path)
    missing = [name for name in SPLIT_FILES.values() if not (folder / name).is_file()]
    if missing:
        problem = f"lacks {', '.join(missing)}" if folder.is_dir() else "does not exist"
        raise FileNotFoundError(
            f"SCAN folder {folder} {problem}. Point --data.data_dir at the SCAN repository's "
            f"add_prim_split folder containing {' and '.join(SPLIT_FILES.values())}, or leave it "
            "unset to regenerate the split from the grammar."
        )
    return folder


def _parse_line(line: str, where: str) -> Pair:
    if line.startswith("IN: ") and " OUT: " in line:
        command, actions = (part.strip() for part in line[4:].split(" OUT: ", 1))
        words, symbols = command.split(), actions.split()
        if words and symbols and set(words) <= set(INPUT_WORDS) and set(symbols) <= set(ACTIONS):
            return _checked(" ".join(words), " ".join(symbols), where)
    raise ValueError(
        f"{where}: expected {ROW_FORMAT} with SCAN words "
        f"({' '.join(INPUT_WORDS)}) and actions ({' '.join(ACTIONS)}), got {line!r}"
    )


def _checked(command: str, actions: str, where: str) -> Pair:
    """The row, unless SCAN's grammar (:func:`interpret`) does not produce it: one ValueError
    naming ``where``."""
    try:
        produced = interpret(command)
    except ValueError:
        raise ValueError(
            f"{where}: {command!r} is not a command of SCAN's grammar (Lake & Baroni 2018): "
            "correct or remove the row"
        ) from None
    if produced != actions:
        raise ValueError(
            f"{where}: SCAN's grammar gives {command!r} the actions {produced!r}, not "
            f"{actions!r}: correct or remove the row"
        )
    return command, actions


def read_scan_split(path: str | os.PathLike) -> dict[str, list[Pair]]:
    """Read ``tasks_{train,test}_addprim_jump.txt`` from ``path`` (SCAN's ``add_prim_split``).

    Both files must be UTF-8 with at least one row (blank lines are skipped); a file that is
    not, or a malformed row, is one ValueError naming the file (and line).
    """
    folder = check_scan_folder(path)
    splits = {}
    for split, name in SPLIT_FILES.items():
        rows = read_rows(folder / name, ROW_FORMAT, EMPTY_FIX)
        splits[split] = [_parse_line(line, f"{folder / name}, line {n}") for n, line in rows]
    return splits


def randomize_actions(pairs: list[Pair], seed: int) -> list[Pair]:
    """Paper 3's setting B: the same commands with the action words drawn uniformly at random.

    The paper says only that it "changed 'jump' to other action word and corresponding output
    symbol uniformly at random", removing "the dependency of input semantics to output syntax
    by using action words uniformly at random, but we still keep the correspondence between
    input words and output actions". Read here as: every occurrence of walk/look/run/jump in
    every command (the bare "jump" rows included) is replaced by one of the four drawn
    uniformly from ``random.Random(seed)``, and the actions are recomputed with
    :func:`interpret`, so each word still maps to its own action and "jump" now occurs in
    compositions.
    """
    rng = random.Random(seed)
    primitives = list(PRIMITIVES)
    randomized = []
    for command, _ in pairs:
        words = [rng.choice(primitives) if w in PRIMITIVES else w for w in command.split()]
        randomized.append((" ".join(words), interpret(" ".join(words))))
    return randomized


def union_of_splits(split: dict[str, list[Pair]]) -> list[Pair]:
    """Setting B as the authors' code builds it (``--data_name uniform_scan``,
    ``UniformSCANGanerator`` in yuanpeng16/BCDLSG efb6c20 ``data_generator.py`` lines 174-189):
    the training rows then the test rows, each command kept once, at its first row. On
    addprim_jump that is every command of the grammar once (20,910 rows), the 7,706 test
    commands included, and "jump" alone once instead of 1,467 times."""
    seen: set[str] = set()
    union = []
    for command, actions in split["train"] + split["test"]:
        if command not in seen:
            seen.add(command)
            union.append((command, actions))
    return union


class EncodedPairs(torch.utils.data.Dataset):
    """SCAN's (command, actions) `pairs` as rows of ids, encoded when read: `source` (the
    command's word ids and end of sequence, 1), `source_lengths`, `target` (the action ids and
    end of sequence, 2) and the row's `index`. Encoding every row when the data is set up took
    seconds a DataModule, for rows a short fit never reads."""

    def __init__(self, pairs: list[Pair], source_ids: dict[str, int], target_ids: dict[str, int]):
        self.pairs, self.source_ids, self.target_ids = pairs, source_ids, target_ids

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        index = range(len(self.pairs))[index]  # from the end too, as a list's
        words, actions = (column.split() for column in self.pairs[index])
        return {  # Python ints -> torch.long tensors
            "source": torch.tensor([self.source_ids[w] for w in words] + [1]),
            "source_lengths": torch.tensor(len(words) + 1),
            "target": torch.tensor([self.target_ids[a] for a in actions] + [2]),
            "index": torch.tensor(index),
        }


class ScanDataModule(VocabularySizes, TrainTestDataModule):
    """SCAN ``addprim_jump`` as padded batches, the layout of
    :class:`~datamodules.lookup_tables.LookupTableDataModule` without its attention/table keys:

    - ``source`` ``[batch, source_time]``: word ids then ``<eos>`` (1), padded with 0.
    - ``source_lengths`` ``[batch]``: words including ``<eos>``.
    - ``target`` ``[batch, target_time]``: action ids then ``<eos>`` (2), no ``<sos>``, padded 0.
    - ``index`` ``[batch]``: the row's index within its split.

    Training batches are ``batch_size`` rows drawn uniformly with replacement, ``steps_per_epoch``
    per epoch (paper 3, Appendix B). Validation serves ``train_sample`` and ``test_sample``
    (``eval_size`` rows of each, drawn once from ``data_seed``), testing the full ``train`` and
    ``test`` splits. Both settings share one vocabulary: the grammar's 13 words and 6 actions.

    Args:
        data_dir: the SCAN repository's ``add_prim_split`` folder; ``None`` regenerates the split
            from the grammar.
        setting: "A", the split as is, or "B" (as ``setting_b`` builds it); the test split is
            the same in both.
        setting_b: what setting B trains on: ``random_actions``, the training commands with
            random action words (the text, :func:`randomize_actions`), or ``union``, the
            deduplicated union of the training and test rows (the authors' code,
            :func:`union_of_splits`: the test rows are trained on).
        batch_size: rows per batch.
        steps_per_epoch: training batches per epoch.
        eval_size: rows of each validation sample; ``None`` (or more than a split has): all.
        eval_replacement: draw the validation samples' rows with replacement (the authors'
            code: ``random.choices(rows, k=100)``, ``main.py`` lines 20-29), else without.
        data_seed: seed of setting B's words, the validation samples and the training draws.
        num_workers: DataLoader workers.
    """

    eval_batch_size = 256
    collate_fn = staticmethod(collate_sequences)

    def __init__(
        self,
        data_dir: str | None = None,
        setting: Literal["A", "B"] = "A",
        setting_b: Literal["random_actions", "union"] = "random_actions",
        batch_size: int = 256,
        steps_per_epoch: int = 100,
        eval_size: int | None = 1000,
        data_seed: int = 0,
        num_workers: int = 0,
        eval_replacement: bool = False,
    ) -> None:
        if setting not in ("A", "B"):
            raise ValueError(f"unknown SCAN setting {setting!r}; valid settings: A, B")
        if setting_b not in ("random_actions", "union"):
            raise ValueError(f"unknown setting_b {setting_b!r}; valid: random_actions, union")
        if eval_replacement and eval_size is None:
            raise ValueError("eval_replacement draws eval_size rows: give eval_size a number")
        super().__init__(batch_size, steps_per_epoch, eval_size, data_seed, num_workers)
        self.save_hyperparameters()
        self.data_dir = data_dir
        self.setting = setting
        self.setting_b = setting_b
        self.eval_replacement = eval_replacement
        self.source_vocab = ["<pad>", "<eos>", *INPUT_WORDS]
        self.target_vocab = ["<pad>", "<sos>", "<eos>", *ACTIONS]
        self.splits: dict[str, list[Pair]] | None = None
        self.data_source = (
            f"SCAN files from {data_dir}"
            if data_dir is not None
            else "SCAN addprim_jump regenerated from the grammar (Lake & Baroni 2018)"
        )
        if setting == "B" and setting_b == "union":
            self.data_source += (
                "; setting B trained on the deduplicated union of the training and test rows "
                "(the authors' uniform_scan): every test row is in training"
            )

    def prepare_data(self) -> None:
        if self.data_dir is not None:
            check_scan_folder(self.data_dir)

    def setup(self, stage: str | None = None) -> None:
        if self.splits is not None:
            return
        split = addprim_jump_split() if self.data_dir is None else read_scan_split(self.data_dir)
        train = split["train"]
        if self.setting == "B" and self.setting_b == "union":
            train = union_of_splits(split)
        elif self.setting == "B":
            train = randomize_actions(train, self.data_seed)
        rng = random.Random(self.data_seed)

        def sample(pairs: list[Pair]) -> list[Pair]:
            if self.eval_replacement:
                return [pairs[i] for i in sorted(rng.choices(range(len(pairs)), k=self.eval_size))]
            if self.eval_size is None or self.eval_size >= len(pairs):
                return list(pairs)
            return [pairs[i] for i in sorted(rng.sample(range(len(pairs)), self.eval_size))]

        splits = {"train": train, "test": split["test"]}
        splits |= {"train_sample": sample(train), "test_sample": sample(split["test"])}
        source_ids = {word: i for i, word in enumerate(self.source_vocab)}
        target_ids = {action: i for i, action in enumerate(self.target_vocab)}
        self.datasets = {
            name: EncodedPairs(pairs, source_ids, target_ids) for name, pairs in splits.items()
        }
        self.splits = splits

    def decode_target(self, ids: torch.Tensor) -> list[str]:
        """Output ids ``[batch, time]`` (or ``[time]``) -> space-joined strings, cut at eos."""
        return decode_targets(ids, self.target_vocab)
