"""The view's contextual decomposition: each input token's relevance to one logit at one step.

Known answers: a planted network (an embedding that is zero for every token but one, a GRU and an
output layer without biases) whose logits come from that one token alone, so its relevance is the
whole logit and every other token's is exactly 0; the parts of every model the view reaches sum to
the model's own logits; and the decoded steps of a recorded seq2seq run are the outputs its trace
holds. In a real browser (Debian's Chromium, as `tests/test_view.py`): the planted token is the
one coloured most strongly, on the page and in its screenshot, and a model CD cannot follow is
one message.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import torch
from torch import nn

from lightning_modules.language_model import LanguageModel
from lightning_modules.seq2seq import Seq2Seq
from lightning_modules.sequences import PAD
from probes.attach import attach
from probes.command.record import record_run
from probes.command.view.decomposition import Decompositions, LanguageModelPath, Seq2SeqPath
from probes.command.view.page import RunCache
from probes.command.view.runs import ViewError
from probes.contextual_decomposition import decompose_language_model
from storage.run_folder import RunFolder
from tests import test_view
from tests.client_models import WordLanguageModel
from tests.test_recurrent_cd import saturated
from tests.tiny_run import fit
from tests.view_page import assert_not_blank, choose, served, text_of, wait_until

PLANTED_TOKEN = 3
PLANTED_AT = [2, 4, 1, 5, 0]
"""The position of the planted token in each recorded example (it occurs once in each)."""


class PlantedLanguageModel(nn.Module):
    """Embedding -> GRU -> linear, no biases: only token 3 has a nonzero embedding, so the state
    and the logits are 0 until token 3 comes and afterwards depend on it alone (the planted GRU of
    `tests/test_recurrent_cd.py`, with an output layer)."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(6, 4)
        self.rnn = saturated(nn.GRU(4, 5, batch_first=True, bias=False))
        self.output = saturated(nn.Linear(5, 6, bias=False), scale=1.0, seed=1)
        with torch.no_grad():
            self.embedding.weight.zero_()
            self.embedding.weight[PLANTED_TOKEN] = torch.tensor([1.0, -2.0, 0.5, 1.5])

    def forward(self, tokens):
        return self.output(self.rnn(self.embedding(tokens))[0])


def planted_tokens() -> torch.Tensor:
    """Five examples of 7 tokens, token 3 once in each, at `PLANTED_AT`."""
    others = torch.tensor([0, 1, 2, 4, 5])
    generator = torch.Generator().manual_seed(0)
    tokens = others[torch.randint(len(others), (len(PLANTED_AT), 7), generator=generator)]
    tokens[torch.arange(len(PLANTED_AT)), PLANTED_AT] = PLANTED_TOKEN
    return tokens


class Tagger(nn.Module):
    """Embedding -> LSTM, no output layer: no logit to decompose."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(10, 4)
        self.rnn = nn.LSTM(4, 6, batch_first=True)

    def forward(self, tokens):
        return self.rnn(self.embedding(tokens))[0]


class DoubledInputs(PlantedLanguageModel):
    """The planted model's weights, but its forward doubles the embeddings: not embedding ->
    recurrent -> output as its weights read."""

    def forward(self, tokens):
        return self.output(self.rnn(2 * self.embedding(tokens))[0])


def recorded(folder: Path, model: nn.Module, tokens: torch.Tensor, time_first=False) -> Path:
    with attach(model) as attached:
        record_run(folder, attached, [{"tokens": tokens}], lambda batch: model(batch["tokens"]),
                   time_first=time_first)  # fmt: skip
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("cd_runs")
    word_model = WordLanguageModel().eval()
    words = torch.randint(50, (9, 3), generator=torch.Generator().manual_seed(2))  # [time, batch]
    return {
        "planted": recorded(folder / "planted", PlantedLanguageModel(), planted_tokens()),
        "tagger": recorded(folder / "tagger", Tagger(), torch.randint(10, (4, 5))),
        "doubled": recorded(folder / "doubled", DoubledInputs(), planted_tokens()),
        "word_model": recorded(folder / "word_model", word_model, words, time_first=True),
        "suite": fit(folder, "runs", "--trainer.max_epochs", "1"),
    }


browser, screenshots = test_view.browser, test_view.screenshots  # test_view's fixtures


def decompositions(*served: str | Path) -> Decompositions:
    """The view's CD over the run folders `served` (the page reads no other)."""
    return Decompositions(RunCache([str(path) for path in served]))


# ---- the relevance computation -----------------------------------------------------------------
def test_the_planted_token_has_the_whole_logit_and_every_other_token_none():
    model = PlantedLanguageModel().eval()
    path = LanguageModelPath(model.embedding, model.rnn, model.output)
    tokens = planted_tokens()[0]  # token 3 at step 2
    with torch.no_grad():
        logits = model(tokens[None])[0]
    at_end = path.relevance(tokens, 6)
    predicted = int(logits[6].argmax())
    assert at_end.relevant.shape == (7, 6) and abs(float(logits[6, predicted])) > 0.1
    torch.testing.assert_close(at_end.full, logits[6])
    torch.testing.assert_close(at_end.relevant[2], logits[6])  # the planted token: all of it
    assert torch.equal(at_end.relevant[[0, 1, 3, 4, 5, 6]], torch.zeros(6, 6))
    torch.testing.assert_close(at_end.relevant + at_end.irrelevant, logits[6].expand(7, -1))
    ranked = at_end.relevant[:, predicted].abs().argsort(descending=True)
    assert int(ranked[0]) == PLANTED_AT[0]
    before = path.relevance(tokens, 1)  # before the planted token: nothing anywhere
    assert before.relevant.shape == (2, 6) and not before.relevant.any()
    assert not before.full.any()


def test_a_language_models_relevance_is_the_suites_cd_of_each_token():
    torch.manual_seed(0)
    model = LanguageModel(vocab_size=11, embedding_size=6, hidden_size=7).double().eval()
    path = LanguageModelPath(model.embedding, model.lstm, model.output,
                             lambda tokens: model(tokens)[0])  # fmt: skip
    tokens = torch.randint(11, (9,))
    step = 5
    relevance = path.relevance(tokens, step)
    phrases = torch.eye(step + 1, dtype=torch.bool)
    rows = tokens[: step + 1].expand(step + 1, -1)
    suite = decompose_language_model(model, rows, phrases, steps=[step])
    torch.testing.assert_close(relevance.relevant, suite.relevant[:, 0])
    torch.testing.assert_close(relevance.irrelevant, suite.irrelevant[:, 0])
    assert relevance.error() < 1e-12


@pytest.mark.parametrize(
    "settings",
    [
        {},  # paper 1's shape: GRU, MLP attention before the decoder step
        {"full_focus": True, "decoder_embedding_size": 8},  # paper 1's full-focus decoders
        {"attention": "none"},  # paper 4's: no attention, the encoder's last state
        {"cell": "lstm", "attention": "dot", "bridge": "zeros"},
    ],
)
def test_a_seq2seqs_token_relevances_and_the_rest_sum_to_its_logits(settings):
    torch.manual_seed(1)
    model = Seq2Seq(9, 7, embedding_size=5, hidden_size=8, **settings).double().eval()
    source = torch.tensor([4, 7, 3, 8])
    relevance = Seq2SeqPath(model, "here").relevance(source, 3)
    with torch.no_grad():
        logits = model(source[None], torch.tensor([4]), steps=4)[0][0]
    torch.testing.assert_close(relevance.full, logits[3])
    assert relevance.relevant.shape == (4, 7) and relevance.error() < 1e-12
    assert relevance.relevant.abs().min(-1).values.max() > 1e-4  # every token reaches the step


@pytest.mark.parametrize(
    "settings, why",
    [
        ({"bidirectional": True}, "bidirectional"),
        ({"attention_placement": "post_rnn"}, "post_rnn, read after the decoder step"),
        ({"removed_units": {"encoder.hidden": [1]}}, "units removed"),
    ],
)
def test_a_seq2seq_cd_cannot_follow_is_one_error(settings, why):
    with pytest.raises(ViewError, match=f"here: contextual decomposition cannot follow.*{why}"):
        Seq2SeqPath(Seq2Seq(9, 7, embedding_size=5, hidden_size=8, **settings), "here")


# ---- runs: the model reached from the run folder -----------------------------------------------
def test_a_recorded_seq2seq_run_decodes_what_its_trace_holds(runs):
    run = str(runs["suite"])
    cd = decompositions(run)
    split = cd.runs(run).splits()[0]
    trace = RunFolder(run).trace(split, "best", ["prediction", "batch.target"])
    for row in range(3):
        steps = int((trace["batch.target"][row] != PAD).sum())
        predicted = cd.predictions(run, split, "best", row)
        assert torch.equal(predicted, trace["prediction"][row, :steps])
        relevance = cd.relevance(run, split, "best", row, steps - 1)
        assert relevance.error() < 1e-5 and relevance.relevant.abs().max() > 0


def test_ones_own_language_model_is_found_from_its_weights(runs):
    run = str(runs["word_model"])
    cd = decompositions(run)  # WordLanguageModel: 2 stacked LSTM layers, time first
    path = cd.path(run, "data", "best")
    assert (path.site, path.input_key) == ("rnn.l1.hidden", "batch.tokens")
    model = WordLanguageModel().eval()
    model.load_state_dict(load_weights(runs["word_model"]))
    tokens = RunFolder(run).trace("data", "best", ["batch.tokens"])["batch.tokens"][1]
    with torch.no_grad():
        logits = model(tokens[:, None])[0][:, 0]  # time first
    relevance = cd.relevance(run, "data", "best", 1, 6)
    torch.testing.assert_close(relevance.full, logits[6])
    assert relevance.relevant.shape == (7, 50) and relevance.error() < 1e-5


def load_weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(folder / "weights" / "best.safetensors")


def test_each_step_is_decomposed_once(runs, monkeypatch):
    run = str(runs["planted"])
    cd = decompositions(run)
    first = cd.relevance(run, "data", "best", 0, 6)
    path = cd.path(run, "data", "best")
    monkeypatch.setattr(path, "relevance", lambda *a: pytest.fail("decomposed again"))
    assert cd.relevance(run, "data", "best", 0, 6) is first


@pytest.mark.parametrize(
    "kind, message",
    [
        ("tagger", r"found 1 embeddings .* and 0 linear outputs reading rnn's 6 units"),
        ("doubled", r"do not give its recorded rnn.hidden .*the model does more between them"),
    ],
)
def test_a_model_cd_cannot_reach_is_one_error(runs, kind, message):
    with pytest.raises(ViewError, match=message):
        decompositions(runs[kind]).relevance(str(runs[kind]), "data", "best", 0, 2)


# ---- the page in a browser ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def page(runs):
    with served([runs["planted"], runs["tagger"]]) as address:
        yield address


def opened_section(browser, page: str, run: Path) -> None:
    """The page opened afresh on `run`, its first example shown, the CD section open."""
    from selenium.webdriver.common.by import By

    browser.get(page)
    wait_until(
        lambda: "example 0" in text_of(browser, "example-text") and text_of(browser, "run"),
        60,
        "the first example and the run's dropdown",
    )  # both redrawn after loading
    if str(run) != text_of(browser, "run"):
        choose(browser, "run", str(run))
    browser.find_element(By.CSS_SELECTOR, "#cd-show input").click()


def coloured(browser) -> list[tuple[float, tuple[int, ...]]]:
    """Each coloured token's relevance (`data-relevance`) and background colour (RGB)."""
    from selenium.webdriver.common.by import By

    found = []
    for span in browser.find_elements(By.CSS_SELECTOR, "#cd-tokens .cd-token[data-relevance]"):
        colour = span.value_of_css_property("background-color")
        rgb = tuple(int(float(c)) for c in colour[colour.index("(") + 1 : -1].split(",")[:3])
        found.append((float(span.get_attribute("data-relevance")), rgb))
    return found


def test_the_planted_token_is_coloured_most_strongly(browser, page, runs, screenshots):
    from PIL import Image
    from selenium.webdriver.common.by import By

    opened_section(browser, page, runs["planted"])
    wait_until(lambda: len(coloured(browser)) == 7, 60, "seven coloured tokens")
    relevance = decompositions(runs["planted"]).relevance(
        str(runs["planted"]), "data", "best", 0, 6
    )
    logit = int(relevance.full.argmax())  # the default: the predicted token at the last step
    found = coloured(browser)
    values = [value for value, _ in found]
    assert values[PLANTED_AT[0]] == pytest.approx(float(relevance.full[logit]), rel=1e-5)
    assert [v for i, v in enumerate(values) if i != PLANTED_AT[0]] == [0.0] * 6
    white = (255, 255, 255)
    strength = [sum((a - b) ** 2 for a, b in zip(rgb, white, strict=True)) for _, rgb in found]
    assert max(range(7), key=strength.__getitem__) == PLANTED_AT[0]
    assert len({rgb for i, (_, rgb) in enumerate(found) if i != PLANTED_AT[0]}) == 1
    spans = browser.find_elements(By.CSS_SELECTOR, "#cd-tokens .cd-token")
    hover = f"{float(relevance.relevant[PLANTED_AT[0], logit]):+.6f}"
    assert hover in spans[PLANTED_AT[0]].get_attribute("title")
    assert "logit of" in text_of(browser, "cd-summary") and text_of(browser, "cd-message") == ""
    path = screenshots / "decomposition.png"
    assert_not_blank(browser, path)
    image = Image.open(io.BytesIO(path.read_bytes())).convert("RGB")
    box = browser.execute_script(  # where the planted token is in the screenshot (the viewport)
        "return arguments[0].getBoundingClientRect().toJSON()", spans[PLANTED_AT[0]]
    )
    inside = image.crop((int(box["left"]) + 2, int(box["top"]) + 2, int(box["right"]) - 2,
                         int(box["bottom"]) - 2))  # fmt: skip
    most = max(inside.getcolors(1 << 16))[1]  # its most common colour: the background
    assert all(abs(a - b) <= 3 for a, b in zip(most, found[PLANTED_AT[0]][1], strict=True))


def test_a_step_before_the_planted_token_colours_nothing(browser, page, runs):
    opened_section(browser, page, runs["planted"])
    wait_until(lambda: len(coloured(browser)) == 7, 60, "seven coloured tokens")
    second = int(planted_tokens()[0, 1])
    choose(browser, "cd-step", f"1: after '{second}' -> '0'")  # all logits 0 there: argmax 0
    wait_until(lambda: len(coloured(browser)) == 2, 30, "two coloured tokens (steps 0 and 1)")
    assert [value for value, _ in coloured(browser)] == [0.0, 0.0]


def test_a_model_cd_cannot_reach_is_one_message(browser, page, runs, screenshots):
    opened_section(browser, page, runs["tagger"])
    message = "0 linear outputs reading rnn's 6 units"
    wait_until(lambda: message in text_of(browser, "cd-message"), 60, message)
    shown = text_of(browser, "cd-message")
    assert len(shown.splitlines()) == 1 and "Traceback" not in browser.page_source
    assert text_of(browser, "message") == ""  # the rest of the page still shows the run
    assert_not_blank(browser, screenshots / "decomposition_refused.png")
