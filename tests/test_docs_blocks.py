"""Every ```bash and ```python block of README.md and docs/ runs as written, on small runs and
offline, each with a known answer (exit status 0 and the files or output it promises).

`TABLE` names every block by its page and first command (or first line) and says how it is
run small; a block missing from it fails `test_every_docs_block_says_how_it_runs`. Shell lines
run in a scratch working directory that reaches the repository's `.venv` and
`experiments/configs` (`make` runs in the repository, its runs under a scratch run root);
`.venv/bin/python -m <module> ...` runs in this process, as `python -m` would
(`tests/docs_blocks.py`). A command is made small only by appending overrides (last value
wins) and by substituting a prepared path for a `path/to/...` placeholder (`PLACEHOLDERS`). A
page's Python blocks run in order in one namespace, each after the setup this file gives it
(the snippets' `model`, `tokens`, `loader`, ...)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from storage.files import load_checkpoint
from tests.docs_blocks import (
    ROOT,
    Block,
    blocks,
    run_module,
    run_python,
    run_shell_block,
    run_words,
    serving,
    words_of,
)
from tests.docs_runs import (
    gutenberg_books,
    lookup_sample,
    mnist_files,
    planted_paper4_run,
    planted_text,
)

README, DATA, OWN, PROBING = "README.md", "docs/data.md", "docs/own_model.md", "docs/probing.md"
REPRODUCTIONS, TRAINING = "docs/reproductions.md", "docs/training.md"
FIT = ".venv/bin/python -m experiments fit --config experiments/configs/"
RESUME = ".venv/bin/python -m experiments fit --resume path/to/received/paper1/guided/seed=1"
CLONE = "git clone https://github.com/i-machine-think/machine-tasks ~/machine-tasks"
VIEW = ".venv/bin/python -m probes view --runs 'runs/paper1/*/seed=*'"
SUMMARY = ".venv/bin/python -m experiments wandb-summary runs/paper1/guided/seed=1"
TABLE = {
    (README, "make reproduce-paper1"):
        "test_readme: `make reproduce-paper1` at its own scale, made small by ARGS='--runs <a "
        "copy of the committed runs> --reuse-runs --out <scratch>' (the documented rebuild: "
        "nothing trained; the quick scale's training is test_paper1_smoke's) and -o "
        ".venv/.installed (the venv is never rebuilt); `make test` is this suite: not run, "
        "`make -n test` must name pytest over tests/",
    (DATA, CLONE):
        "test_data_git_clone: not run (GitHub); its repository, commit, folder and variable must "
        "be the ones datamodules.machine_tasks reads",
    (OWN, "from lightning_modules.recurrent import Intervention"):
        "test_own_model: after tokens [7, 3] and a loader of two batches",
    (OWN, "from probes.contextual_decomposition import decompose_recurrent"):
        "test_own_model: the model in eval mode, its embedded tokens, a phrase, and two GRUs",
    (OWN, "from probes.contextual_decomposition import decompose_attention_decoder"):
        "test_own_model: model = the seq2seq tutorial's attention model (tests/client_models.py)",
    (OWN, "from probes.command.record import record_run"):
        "test_own_model: the word language model attached again, three labelled batches",
    (OWN, ".venv/bin/python -m probes functional-group --runs runs/mine/seed=0 --splits data"):
        "test_own_model: on the run folder the block above records",
    (PROBING, ".venv/bin/python -m probes functional-group --runs 'runs/paper1/*/seed=*' --out "
              "probes-out/fg"):
        "test_probing_commands: on the paper-1 runs of docs/training.md's first block",
    (PROBING, VIEW):
        "test_probing_view: each in the background with --port <a free port> appended, its "
        "page fetched, then stopped",
    (PROBING, "from storage import RunFolder"):
        "test_probing_python: on the paper-1 run of docs/training.md's first block",
    (PROBING, "import torch"):
        "test_probing_python: on a 40-epoch fit of paper2/language_model.yaml, tiny",
    (PROBING, "from probes.neuron_functions import identify_neurons, trace_rows"):
        "test_probing_python: on the hand-built GRU of tests/planted_counter_gru.py as the run",
    (REPRODUCTIONS, "make venv"):
        "test_reproductions_slurm: `make -n venv`; the submission in a workspace (run root "
        "runs/) with sbatch a stand-in on PATH (tests/fake_sbatch.py) that records what it gets",
    (TRAINING, FIT + "paper1/guided.yaml"):
        "the `trained` fixture: TINY_FIT, SIZES and NO_DATA appended, the sample2 placeholder "
        "a generated sample; read by test_training_paper1_fits_and_prints_its_config",
    (TRAINING, RESUME):
        "test_training_resume: on a copy of the guided run at received/, --trainer.max_steps 4",
    (TRAINING, FIT + "paper2/language_model.yaml"):
        "test_training_papers: TINY_FIT and SIZES appended",
    (TRAINING, FIT + "paper4/gru.yaml"):
        "test_training_papers: TINY_FIT and SIZES appended, the books placeholder two small "
        "books",
    (TRAINING, FIT + "paper3/scan.yaml --data.setting B"):
        "test_training_papers: TINY_FIT, SIZES and NO_DATA appended, the mnist placeholder "
        "IDX files of 150 images",
    (TRAINING, "wandb login"):
        "test_training_wandb: not run (online); the venv's wandb is there and the Makefile's "
        "WANDB_MODE gives way to the environment's",
    (TRAINING, SUMMARY):
        "test_training_wandb_summary: on a fit's W&B run written offline into "
        "runs/paper1/guided/seed=1 and a report's (experiments.report.log_to_wandb) into "
        "runs/wandb-reports/paper1-quick",
}  # fmt: skip
"""Each docs block by (page, key) -> how it is run small, beginning with the test that runs it."""
TINY_FIT = ["--trainer.max_steps", "2", "--trainer.limit_val_batches", "2",
            "--trainer.limit_test_batches", "2", "--trainer.val_check_interval", "1"]  # fmt: skip
SIZES = {
    "paper1/": ["--model.hidden_size", "16", "--model.decoder_embedding_size", "16"],
    "paper2/": ["--model.embedding_size", "16", "--model.hidden_size", "16"],
    "paper3/scan": ["--data.batch_size", "16", "--data.eval_size", "32"],
    "paper4/": ["--model.embedding_size", "8", "--model.hidden_size", "16"],
}  # fmt: skip
"""What else a fit of the configs under each folder gets appended: smaller models, SCAN's
smaller batches and validation samples."""
NO_DATA = {"paper1": ["--data.init_args.data_dir", "null"], "paper3/two_digit_images_authors":
           ["--data.data_dir", "{mnist}"]}  # fmt: skip
"""Appended where a fit would read data a small offline run cannot have: paper 1's sample1 (the
generated tables instead, as docs/data.md says), and the embedded MNIST, converted from its CSV
files once per data cache (here a fresh one each time): the prepared IDX files instead."""
PLACEHOLDERS = {
    "path/to/machine-tasks/LookupTables/data/samples/sample2": "sample2",
    "path/to/received/paper1/guided/seed=1": "received",
    "path/to/gutenberg_books": "books",
    "path/to/mnist": "mnist",
}
"""A docs placeholder -> the prepared path (`prepared`) that replaces it."""


def block(page: str, key: str) -> Block:
    found = [b for b in blocks() if (b.page, b.key) == (page, key)]
    assert found, f"{page} no longer has the block {key!r}: update TABLE"
    return found[0]


def page_blocks(page: str, language: str) -> list[Block]:
    return [b for b in blocks() if b.page == page and b.language == language]


def test_every_docs_block_says_how_it_runs():
    found = {(b.page, b.key) for b in blocks()}
    new = sorted(found - set(TABLE))
    assert new == [], f"a new docs block: say in tests/test_docs_blocks.py how it runs: {new}"
    assert sorted(set(TABLE) - found) == [], "TABLE names blocks the docs no longer have"
    tests = {how.split(":")[0] for how in TABLE.values()} - {"the `trained` fixture"}
    assert {name for name in tests if name not in globals()} == set()


def test_a_new_block_is_found_with_its_key(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("```bash\n# a comment\nmake it \\\n  --now  # go\n```\n")
    (tmp_path / "docs" / "a.md").write_text("text\n```python\nx = 1\n```\n```yaml\na: 1\n```\n")
    assert [(b.page, b.line, b.key) for b in blocks(tmp_path)] == [
        ("README.md", 1, "make it"), ("docs/a.md", 2, "x = 1")]  # fmt: skip
    assert blocks(tmp_path)[0].commands == ["make it    --now  # go"]


def test_a_wrong_option_or_name_in_a_docs_block_fails(scratch):
    """A docs command with an option the CLI lacks, or a snippet naming a site no model has,
    fails its test."""
    toy = next(c for c in block(TRAINING, FIT + "paper3/scan.yaml --data.setting B").commands
               if "toy_2d.yaml" in c)  # fmt: skip
    broken = Block(TRAINING, 1, "bash", toy + " --trainer.max_stepz 2\n")
    unrecognized = r"(?s)max_stepz 2\n.*unrecognized arguments: --trainer\.max_stepz"
    with pytest.raises(AssertionError, match=unrecognized):
        run_shell_block(broken, workspace(scratch / "broken"), {})
    first = block(OWN, "from lightning_modules.recurrent import Intervention")
    namespace: dict = {}
    own_model_setups(namespace)[first.key](namespace)
    broken = Block(OWN, 1, "python", first.text.replace("rnn.l1.forget_gate", "rnn.l9.forget_gate"))
    with pytest.raises(KeyError, match="rnn.l9.forget_gate"):
        run_python(broken, namespace, scratch)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A scratch folder, and the environment every block runs in: offline, no W&B, no sample1,
    a scratch data cache, runs under the working directory."""
    folder = tmp_path_factory.mktemp("docs_blocks")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {"RECURRENT_PROBES_OFFLINE": "1", "WANDB_MODE": "disabled",
                            "RECURRENT_PROBES_SAMPLE1": "",
                            "RECURRENT_PROBES_CACHE": str(folder / "cache")}.items():  # fmt: skip
            patch.setenv(name, value)
        patch.delenv("RECURRENT_PROBES_RUNS", raising=False)
        yield folder


def workspace(folder: Path) -> Path:
    """A working directory reaching the repository's `.venv` and `experiments/configs`."""
    folder.mkdir()
    for name in (".venv", "experiments"):
        (folder / name).symlink_to(ROOT / name)
    return folder


@pytest.fixture(scope="module")
def prepared(scratch) -> dict[str, str]:
    """The prepared paths that replace the docs' placeholders (`PLACEHOLDERS`)."""
    data = scratch / "data"
    return {"sample2": str(lookup_sample(data / "sample2")),
            "books": str(gutenberg_books(data / "books")),
            "mnist": str(mnist_files(data / "mnist"))}  # fmt: skip


def shrunk(words: list[str], prepared: dict[str, str]) -> list[str]:
    """A docs command made small: its placeholders replaced, and for a fit TINY_FIT appended, and
    for a fit of a config its SIZES and NO_DATA (where the command gives no data folder)."""
    unknown = [w for w in words if w.startswith("path/to/") and w not in PLACEHOLDERS]
    assert unknown == [], "a docs placeholder with no prepared path: add it to PLACEHOLDERS"
    words = [prepared[PLACEHOLDERS[w]] if w in PLACEHOLDERS else w for w in words]
    if words[:4] != [".venv/bin/python", "-m", "experiments", "fit"] or "--print_config" in words:
        return words
    config = next((w for w in words if w.startswith("experiments/configs/")), "")  # --resume: ""
    extra = [*TINY_FIT, *(w for folder, more in SIZES.items() if folder in config for w in more)]
    for name, appended in NO_DATA.items():
        if name in config and appended[0] not in words:
            extra += [value.format(**prepared) for value in appended]
    return [*words, *extra]


@pytest.fixture(scope="module")
def trained(scratch, prepared):
    """docs/training.md's first block (paper 1's fits and --print_config) run in a workspace:
    the workspace and what each command printed."""
    work = workspace(scratch / "trained")
    ran = run_shell_block(block(TRAINING, FIT + "paper1/guided.yaml"), work, {},
                          lambda words: shrunk(words, prepared))  # fmt: skip
    return work, ran


def test_training_paper1_fits_and_prints_its_config(trained, prepared):
    work, ran = trained
    for run in ("guided/seed=1", "baseline/seed=3"):
        for name in ("checkpoints/best.ckpt", "checkpoints/last.ckpt",
                     "traces/new_compositions/best.safetensors"):  # fmt: skip
            assert (work / "runs" / "paper1" / run / name).is_file(), (run, name)
    assert load_checkpoint(work / "runs/paper1/guided/seed=1/checkpoints/last.ckpt")[
        "global_step"] == 2  # fmt: skip
    config = (work / "runs/paper1/baseline/seed=3/config.yaml").read_text()
    assert f"data_dir: {prepared['sample2']}" in config and "seed_everything: 3" in config
    printed = ran[1].output
    assert "variant: guided" in printed and "attention_guidance_weight: 1.0" in printed


def test_training_resume(trained):
    work, _ = trained
    received = work / "received" / "paper1" / "guided" / "seed=1"
    shutil.copytree(work / "runs" / "paper1" / "guided" / "seed=1", received)
    run_shell_block(block(TRAINING, RESUME), work, {},
                    lambda words: [*shrunk(words, {"received": str(received)}),
                                   "--trainer.max_steps", "4"])  # fmt: skip
    assert load_checkpoint(received / "checkpoints" / "last.ckpt")["global_step"] == 4
    assert "max_epochs: 100" in (received / "config.yaml").read_text()


def test_training_papers(scratch, prepared):
    work = workspace(scratch / "papers")
    for key in ("paper2/language_model.yaml", "paper4/gru.yaml",
                "paper3/scan.yaml --data.setting B"):  # fmt: skip
        run_shell_block(block(TRAINING, FIT + key), work, {},
                        lambda words: shrunk(words, prepared))  # fmt: skip
    runs = work / "runs"
    expected = ["paper2/k=4_n=100/seed=0", "paper3/scan_B/seed=0",
                "paper3/scan_authors_A/seed=0", "paper3/toy_2d_A/seed=0",
                "paper3/toy_2d_playground_A/seed=0", "paper3/two_digit_images_A/seed=0",
                "paper3/two_digit_images_authors_A/seed=0", "paper4/gru/seed=0"]  # fmt: skip
    assert sorted(str(p.parent.parent.relative_to(runs))
                  for p in runs.glob("*/*/*/checkpoints/last.ckpt")) == expected  # fmt: skip
    assert "rules: 100" in (runs / "paper2/k=4_n=100/seed=0/config.yaml").read_text()
    assert "setting: B" in (runs / "paper3/scan_B/seed=0/config.yaml").read_text()
    assert f"data_dir: {prepared['books']}" in (runs / "paper4/gru/seed=0/config.yaml").read_text()


def test_training_wandb():
    words = [words_of(c) for c in block(TRAINING, "wandb login").commands]
    assert words[0] == ({}, ["wandb", "login"]) and (ROOT / ".venv/bin/wandb").is_file()
    assert words[1] == ({"WANDB_MODE": "online"}, ["make", "reproduce-paper1"])
    show = ["make", "--no-print-directory", "-o", ".venv/.installed",  # a make within make test
            "--eval", "mode: ; @echo $(WANDB_MODE)", "mode"]  # fmt: skip
    assert run_words(show, ROOT, {"WANDB_MODE": "online"}).output.strip() == "online"
    assert run_words(show, ROOT, {"WANDB_MODE": None}).output.strip() == "offline"


def test_training_wandb_summary(scratch, monkeypatch):
    """Each command prints its run's name, group, tags, config and summary: a fit's run, written
    offline as a fit names it, and a report's, written by the reproductions' own code."""
    import wandb

    from experiments.report import Claim, Measured, log_to_wandb

    work = workspace(scratch / "wandb_summary")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_SERVICE", raising=False)  # restored as it was, after the test
    run_folder = work / "runs" / "paper1" / "guided" / "seed=1"
    run_folder.mkdir(parents=True)
    config = {"seed_everything": 1, "trainer": {"max_epochs": 5},
              "run": {"paper": "paper1", "variant": "guided"}}  # fmt: skip
    fit = wandb.init(dir=str(run_folder), name="paper1/guided/seed=1", group="paper1/guided",
                     config=config, mode="offline")  # fmt: skip
    fit.log({"test/new_compositions/seq_acc": 0.25})
    fit.finish()
    claim = Claim("a", "a claim", 1.0, Measured.of([0.5, 0.7]), "a rule", "reproduced")
    report = work / "runs" / "wandb-reports" / "paper1-quick"
    log_to_wandb(report, "paper1", "quick", [claim], {}, {}, (1, 2))
    wandb.teardown()  # the service stopped: both runs' logs whole on disk
    fitted, reported = (ran.output.splitlines() for ran in
                        run_shell_block(block(TRAINING, SUMMARY), work, {}))  # fmt: skip
    assert " paper1/guided/seed=1 (group paper1/guided; tags -): runs/paper1/guided" in fitted[0]
    assert {"  seed_everything: 1", "  trainer.max_epochs: 5", '  run.variant: "guided"',
            "  test/new_compositions/seq_acc: 0.25"} <= set(fitted)  # fmt: skip
    assert " paper1-quick (group paper1; tags paper1, quick): runs/wandb-reports" in reported[0]
    assert {'  scale: "quick"', "  seeds: [1, 2]", "  claims.total: 1",
            "  claims.reproduced: 1"} <= set(reported)  # fmt: skip


def own_model_setups(namespace: dict) -> dict:
    """docs/own_model.md's Python blocks by key -> what runs before each (the snippets' free
    names), in the page's namespace."""
    from torch import nn

    from probes.attach import attach
    from tests.client_models import AttentionSeq2Seq, WordLanguageModel

    def first(ns):
        torch.manual_seed(0)
        ns.update(WordLanguageModel=WordLanguageModel, tokens=torch.randint(50, (7, 3)),
                  loader=[torch.randint(50, (5, 3)) for _ in range(2)])  # fmt: skip

    def recurrent(ns):
        ns["model"].eval()
        ns["tokens"] = torch.randint(50, (7, 3))
        ns.update(embedded=ns["model"].encoder(ns["tokens"]).transpose(0, 1).detach(),
                  phrase=phrase(3, 7), encoder_gru=nn.GRU(6, 8, batch_first=True),
                  decoder_gru=nn.GRU(5, 8, batch_first=True), source_embedded=torch.randn(3, 7, 6),
                  decoder_inputs=torch.randn(3, 4, 5),
                  no_phrase=torch.zeros(3, 4, dtype=torch.bool))  # fmt: skip

    def attention(ns):
        model = AttentionSeq2Seq().eval()
        tokens = torch.randint(20, (3, 6))
        outputs, _ = model(tokens)
        fed = torch.cat([torch.zeros(3, 1, dtype=torch.long), outputs.argmax(-1)[:, :-1]], 1)
        ns.update(model=model, tokens=tokens, outputs=outputs, phrase=phrase(3, 6),
                  decoder_embedded=model.decoder.embedding(fed).detach())  # fmt: skip

    def record(ns):
        model = WordLanguageModel().eval()
        batches = [{"tokens": t, "label": (t.T < 25).long()}
                   for t in (torch.randint(50, (6, 4)) for _ in range(3))]  # fmt: skip
        ns.update(model=model, attached=attach(model), batches=batches)

    def phrase(batch: int, time: int) -> torch.Tensor:
        return torch.arange(time).expand(batch, time).ge(2) & torch.arange(time).lt(4)

    return {
        "from lightning_modules.recurrent import Intervention": first,
        "from probes.contextual_decomposition import decompose_recurrent": recurrent,
        "from probes.contextual_decomposition import decompose_attention_decoder": attention,
        "from probes.command.record import record_run": record,
    }


def own_model_checks(ns: dict, key: str) -> None:
    """The known answers of the block of `key`, read from the page's namespace."""
    from probes.attach import attachment

    if key == "from lightning_modules.recurrent import Intervention":
        assert ns["trace"]["rnn.l1.forget_gate"].shape == (3, 7, 16)
        assert bool(ns["trace"].valid["rnn.l1"].all()) and "rnn.l1.cell" in ns["attached"].sites
        assert ns["edited"].shape == (5, 3, 50) and attachment(ns["model"]) is None
    elif key.endswith("import decompose_recurrent"):
        model, tokens = ns["model"], ns["tokens"]
        summed = ns["relevant_logits"] + ns["irrelevant_logits"]
        torch.testing.assert_close(summed, model(tokens)[0].transpose(0, 1), rtol=0, atol=1e-5)
        final = ns["decoder_gru"](ns["decoder_inputs"], ns["encoder_gru"](ns["source_embedded"])[1])
        torch.testing.assert_close(sum(ns["decoder"].final[0]), final[1][0], rtol=0, atol=1e-5)
    elif key.endswith("import decompose_attention_decoder"):
        summed = ns["relevant_logits"] + ns["irrelevant_logits"]
        torch.testing.assert_close(summed.log_softmax(-1), ns["outputs"], rtol=0, atol=1e-5)
    else:
        run = Path(ns["__cwd__"]) / "runs" / "mine" / "seed=0"
        assert set(load_file(run / "traces" / "data" / "best.safetensors")) >= {
            "rnn.l1.hidden", "batch.label", "batch.tokens"}  # fmt: skip


def test_own_model(scratch):
    """The page's Python blocks in order, then its shell block on the run folder they record."""
    work = workspace(scratch / "own_model")
    namespace = {"__cwd__": str(work)}
    setups = own_model_setups(namespace)
    for python in page_blocks(OWN, "python"):
        setups[python.key](namespace)
        run_python(python, namespace, work)
        own_model_checks(namespace, python.key)
    shell = block(OWN, ".venv/bin/python -m probes functional-group --runs runs/mine/seed=0 "
                       "--splits data")  # fmt: skip
    run_shell_block(shell, work, {})
    for probe in ("functional-group", "gate-saturation", "connectivity"):
        table = work / "probes-out" / probe / f"{probe}.csv"
        assert len(table.read_text().splitlines()) > 1, probe


def test_probing_commands(trained):
    work, _ = trained
    key = ".venv/bin/python -m probes functional-group --runs 'runs/paper1/*/seed=*' --out " \
          "probes-out/fg"  # fmt: skip
    ran = run_shell_block(block(PROBING, key), work, {})
    table = (work / "probes-out" / "fg" / "functional-group.csv").read_text()
    assert "paper1/guided/seed=1" in table and "paper1/baseline/seed=3" in table
    over_training = (work / "probes-out" / "fg-over-training" / "functional-group.csv").read_text()
    assert "encoder.hidden" in over_training and "baseline" not in over_training
    assert "gate-saturation" in ran[2].output and "--gates" in ran[3].output


def test_probing_view(trained):
    work, _ = trained
    for command, runs in zip(block(PROBING, VIEW).commands, (2, 1), strict=True):
        settings, words = words_of(command)
        words = [*words, "--port", "0"]  # the system picks a free one
        with serving(words, work, settings, " run folder(s) at ") as (printed, page):
            assert f"{runs} run folder(s) at http://127.0.0.1:" in printed
            assert "<html" in page.lower() and "_dash-config" in page


@pytest.fixture(scope="module")
def probing_runs(scratch, trained):
    """A workspace with the runs docs/probing.md's Python blocks read: paper 1's of the
    `trained` fixture, a tiny 40-epoch fit of paper 2's config, paper 4's planted GRU."""
    work = workspace(scratch / "probing")
    (work / "runs").mkdir()
    (work / "runs" / "paper1").symlink_to(trained[0] / "runs" / "paper1")
    fit = ["fit", "--config", "experiments/configs/paper2/language_model.yaml", "--run.variant",
           "k=8_n=1000", "--data.corpus_length", "20000", "--trainer.max_epochs", "40",
           "--trainer.limit_train_batches", "2", "--trainer.limit_val_batches", "2",
           "--trainer.limit_test_batches", "2", "--trainer.check_val_every_n_epoch", "40",
           *SIZES["paper2/"]]  # fmt: skip
    ran = run_module("experiments", fit, work, {})
    assert ran.status == 0, ran.output
    planted_paper4_run(work / "runs" / "paper4" / "gru" / "seed=0", planted_text(scratch / "text"))
    return work


def probing_checks(ns: dict, key: str) -> None:
    """The known answers of docs/probing.md's Python block of `key`, read from its namespace."""
    from tests.planted_counter_gru import O_A, S_A

    if key == "from storage import RunFolder":  # paper 1's guided run: 16 units
        labelled = int((ns["trace"]["batch.source_table"] >= 0).sum())
        assert ns["features"].shape == (labelled, 16) and ns["labels"].shape == (labelled,)
        assert 0 < len(ns["group"].units) <= 16 and ns["saturation"].left.shape == (16,)
        assert type(ns["model"]).__name__ == "Seq2Seq" and ns["model"].hparams.hidden_size == 16
    elif key == "import torch":  # parts that sum to the logits; P(close) a probability
        assert float(ns["error"]) < 1e-4 and ns["p_close"].shape == ns["batch"]["input"].shape[:1]
        assert bool(((ns["p_close"] >= 0) & (ns["p_close"] <= 1)).all())
    else:  # the planted network: s_A stores token "i", o_A outputs it
        assert ns["neurons"].storing.tolist() == [S_A] and O_A in ns["neurons"].outputting.tolist()
        assert len(ns["traced"].token) > 0


def test_probing_python(probing_runs):
    """The page's three Python blocks in order, in one namespace."""
    namespace: dict = {}
    for python in page_blocks(PROBING, "python"):
        run_python(python, namespace, probing_runs)
        probing_checks(namespace, python.key)


def test_data_git_clone():
    """Not run (it clones from GitHub): it must fetch the repository and commit that
    datamodules.machine_tasks pins, and point its variable at the folder it reads."""
    from datamodules import machine_tasks

    clone, checkout, export = (words_of(c)[1] for c in block(DATA, CLONE).commands)
    assert clone[:3] == ["git", "clone", f"https://github.com/{machine_tasks.REPOSITORY}"]
    assert checkout[:4] == ["git", "-C", clone[3], "checkout"]
    assert len(checkout) == 5 and machine_tasks.COMMIT.startswith(checkout[4])
    folder = f"{clone[3]}/{machine_tasks.SAMPLE1_PATH}"
    assert export == ["export", f"{machine_tasks.SAMPLE1_ENV}={folder}"]


def test_reproductions_slurm(scratch, monkeypatch):
    """`make -n venv` succeeds; the submission, with `sbatch` a stand-in on PATH, writes the
    array's and the merge's scripts under the run root's slurm/, every job at the scale given,
    submits the array with the options given and the merge after it, and says where the report
    will be (the committed report's folder, at its scale)."""
    from tests.fake_sbatch import calls, stand_in

    commands = block(REPRODUCTIONS, "make venv").commands
    assert commands[0] == "make venv" and run_words(["make", "-n", "venv"], ROOT, {}).status == 0
    work = workspace(scratch / "slurm")
    record = stand_in(scratch / "slurm_sbatch", monkeypatch)
    settings, words = words_of(commands[1])
    ran = run_words(words, work, settings)
    assert ran.status == 0, ran.output
    assert f"the report will be in {ROOT / 'reports' / 'paper2'}" in ran.output
    slurm = work / "runs" / "slurm"
    shards, merge = slurm / "paper2-default-shards.sbatch", slurm / "paper2-default-merge.sbatch"
    options = ["--time=12:00:00", "--cpus-per-task=2", "--mem=8G"]
    after = "--dependency=afterok:100"
    assert calls(record) == [["--parsable", *options, str(shards)],
                             ["--parsable", after, *options, str(merge)]]  # fmt: skip
    shard_lines, merge_lines = shards.read_text().splitlines(), merge.read_text().splitlines()
    assert "#SBATCH --array=0-7" in shard_lines and "#SBATCH --requeue" in merge_lines
    assert f"#SBATCH --output={slurm}/paper2-default-shard-%A_%a.out" in shard_lines
    assert '--scale default --shard "$shard/8" --runs ' in shard_lines[-1]
    roots = " ".join(str(work / "runs" / f"shard{i}") for i in range(1, 9))
    assert f"--scale default --merge {roots} --runs {work / 'runs' / 'merged'}" in merge_lines[-1]
    assert sorted(p.name for p in (work / "runs").iterdir()) == ["slurm"]  # nothing trained


def test_readme(scratch):
    """`make reproduce-paper1` at the committed report's scale, rebuilt from a copy of its
    committed runs (nothing trained, offline), gives the committed verdicts; `make test` is this
    suite: only `make -n test` is run."""
    commands = [words_of(c) for c in block(README, "make reproduce-paper1").commands]
    assert commands == [({}, ["make", "reproduce-paper1"]), ({}, ["make", "test"])]
    runs, out = scratch / "readme_runs", scratch / "readme_report"
    shutil.copytree(ROOT / "reports" / "paper1" / "runs", runs)
    make = ["make", "reproduce-paper1", "-o", ".venv/.installed",
            f"ARGS=--runs {runs} --reuse-runs --out {out}"]  # fmt: skip
    ran = run_words(make, ROOT, {"RECURRENT_PROBES_RUNS": str(scratch / "readme_root")})
    assert ran.status == 0, ran.output
    assert "0 to run" in ran.output and not list(runs.rglob("*.ckpt")), ran.output
    committed = json.loads((ROOT / "reports" / "paper1" / "results.json").read_text())
    rebuilt = json.loads((out / "results.json").read_text())
    assert [(c["id"], c["verdict"]) for c in rebuilt] == [
        (c["id"], c["verdict"]) for c in committed
    ]
    dry = run_words(["make", "-n", "-o", ".venv/.installed", "test"], ROOT, {})
    assert dry.status == 0 and re.search(r"-m pytest .*tests$", dry.output, re.M), dry.output
