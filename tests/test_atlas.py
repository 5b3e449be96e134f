"""The atlas (`experiments.atlas`): its pre-registration, each wired method's cell on a small
hand-built model with a known answer, and the quick reproduction end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from datamodules.lookup_tables import LookupTableDataModule
from experiments.atlas.cells import (
    beyond_chance,
    connectivity_cell,
    functional_group_cell,
    saturation_cell,
    token_cells,
    token_statistics,
)
from experiments.atlas.claims import NEEDS
from experiments.atlas.questions import (
    DATE,
    METHODS,
    MODELS,
    NOT_APPLICABLE,
    QUESTIONS,
    RULES,
    WIRED,
    cell_status,
    preregistration_text,
)
from experiments.atlas.report import answers_table
from experiments.atlas.runs import TAGS, paper_layout
from experiments.atlas.scales import SCALES
from experiments.atlas.targets import EOS, NO_LABEL, lookup_table_batch, table_index
from experiments.atlas.view import ROWS_PER_TOKEN
from experiments.atlas.view import SPLIT as VIEW_SPLIT
from experiments.report import RULE_VERDICTS, UNINFORMATIVE, Claim, Measured
from lightning_modules.seq2seq import Seq2Seq
from probes.command.view.decomposition import Decompositions
from probes.command.view.runs import ViewedRun
from probes.command.view.side_by_side import examples_differ
from probes.neuron_functions import Traced, trace_rows
from storage.layout import UNTRAINED
from storage.run_folder import RunFolder
from tests.planted_counter_gru import (
    O_A,
    REGISTER,
    S_A,
    STEPS,
    A,
    H,
    V,
    build_model,
    every_request,
)
from tests.smoke import (
    assert_quick_report,
    quick_command,
    quick_reproduction,
    shared_quick_reproduction,
)
from tests.test_probes import TABLES, UNITS, planted_gru, planted_inputs

REPOSITORY = Path(__file__).resolve().parents[1]


# ---- the pre-registration ------------------------------------------------------------------------
def test_committed_preregistration_is_the_one_the_code_judges_by():
    """reports/atlas/preregistration.md is questions.py's text: a rule changed in the code
    without its pre-registration (or the other way round) fails here."""
    committed = (REPOSITORY / "reports" / "atlas" / "preregistration.md").read_text()
    assert committed == preregistration_text()
    assert f"Written {DATE}, before any atlas run" in committed


def test_every_cell_is_measured_or_says_why_not():
    assert len(MODELS) >= 6 and len(METHODS) >= 6
    assert set(NOT_APPLICABLE) <= {(m, k) for m in MODELS for k in METHODS}
    for model in MODELS:
        for method in METHODS:
            status = cell_status(model, method)
            assert status == "measured" or len(status.split()) >= 8, (model, method)


def test_every_question_claim_has_a_rule_that_can_fail_both_ways():
    claims = [claim for question in QUESTIONS for claim in question.claims]
    assert len(claims) == len(set(claims)) and set(claims) == set(RULES)
    assert [q.id for q in QUESTIONS] == ["q1", "q2", "q3", "q4"]
    for claim, rule in RULES.items():
        assert rule.kind in ("threshold", "direction"), claim
        assert 0 < rule.partially_at <= rule.reproduced_at, claim  # a tie is never a yes
        assert rule.reproduced_at < 1, claim  # a statistic of at most 1 can reach it


# ---- each wired method's cell on a hand-built model with a known answer -------------------------
def gate_gru(planted: bool = True):
    """`tests/test_probes.py`'s planted GRU with its update gates made to read the inputs: units
    0 and 1 hold the table (one-hot inputs 0-7) as a point on a circle (`planted`; else nothing),
    the other units noise (inputs 8-11)."""
    gru = planted_gru()
    with torch.no_grad():
        update = slice(UNITS, 2 * UNITS)
        angles = torch.arange(TABLES) * 2 * math.pi / TABLES
        weight = gru.weight_ih_l0[update]
        gru.bias_ih_l0[update] = 0.0
        if planted:
            weight[0, :TABLES] = 3 * torch.cos(angles)
            weight[1, :TABLES] = 3 * torch.sin(angles)
        weight[2:, TABLES:] = torch.randn(UNITS - 2, 4, generator=torch.Generator().manual_seed(2))
    return gru


def as_decoder(record: dict, **batch) -> Traced:
    """A recorded layer's sites as a seq2seq's encoder and decoder sites, with `batch`."""
    sites = {f"{module}.{site}": values for module in ("encoder", "decoder")
             for site, values in record.items()}  # fmt: skip
    return Traced(batch, sites, None, None)


def test_functional_group_cell_finds_the_unit_planted_to_hold_the_table_index():
    """Paper 1's diagnostic classifier of the decoder's update gate for the table index: on gates
    whose units 0 and 1 hold the table it classifies every held-out step (the cell: 1.0), its
    functional group starts with unit 0 and, alone, classifies every held-out step too; the same
    GRU without the planted table (its null) is at chance."""
    inputs, tables = planted_inputs()
    found = {}
    for planted in (True, False):
        record = {}
        gate_gru(planted)(inputs, record=record)
        found[planted] = functional_group_cell(as_decoder(record), tables, "update_gate")
    assert found[True]["value"] == 1.0 and found[True]["units"][0] == 0
    majority = float(torch.bincount(tables.flatten()).max()) / tables.numel()
    assert found[True]["accuracy"] == 1.0
    assert found[True]["majority"] == found[False]["majority"] == pytest.approx(majority)
    assert found[False]["value"] < found[False]["majority"] + 0.05


def test_table_index_of_lookup_tables_is_the_attended_table_up_to_T():
    """A row `000 t4 t5 .` (tables 3 and 4 from 0) whose steps attend source positions 0, 1, 2,
    3: its decoder steps 1 and 2 apply tables 3 and 4; step 0 (the copied input) and every step
    from T = 3 on have none. Token positioning labels the step that outputs the token."""
    batch = {
        "attention_target": torch.tensor([[0, 1, 2, 3]]),
        "source_table": torch.tensor([[NO_LABEL, 3, 4, NO_LABEL]]),
        "signal_token": torch.tensor([[7]]),
        "signal_position": torch.tensor([[3]]),
    }
    traced = Traced(batch, {"decoder.hidden": torch.zeros(1, 6, 2)}, None, None)
    assert table_index(traced, "lookup tables").tolist() == [[-100, 3, 4, -100, -100, -100]]
    assert table_index(traced, "token positioning").tolist() == [[-100, -100, 7, -100, -100, -100]]


def test_lookup_table_rows_request_the_final_string_at_its_position():
    """Paper 1's rows as paper 4's: each row requests its final output string at T = 1 + its
    number of tables, at most `per_token` rows of each string."""
    data = LookupTableDataModule(data_dir=None, batch_size=1)
    batch, chosen = lookup_table_batch(data, tokens=8, per_token=5)
    assert len(chosen) == 8 and len(batch["source"]) == 40
    assert torch.bincount(batch["signal_token"][:, 0]).max() == 5
    tables = (batch["source_table"] >= 0).sum(1)
    position = batch["signal_position"][:, 0]
    assert torch.equal(position, tables + 1)
    final = batch["target"][torch.arange(40), position - 1]
    assert torch.equal(final, batch["signal_token"][:, 0])
    assert (batch["target"][torch.arange(40), position] == EOS).all()


def saturation_rows(gru, lengths: list[int], positions: list[int]) -> Traced:
    """The GRU's gates over 150 rows of 4 steps as both modules', each row's source `lengths`
    and output position `positions` (cycled), every step past them an open gate."""
    inputs, _ = planted_inputs()
    record = {}
    gru(inputs, record=record)
    source = torch.tensor(lengths * 150)[:150]
    position = torch.tensor(positions * 150)[:150]
    traced = as_decoder(record, source_lengths=source, signal_position=position[:, None])
    time = torch.arange(4)[None]
    for module, valid in (
        ("encoder", time < source[:, None]),
        ("decoder", time < position[:, None]),
    ):
        gate = traced.record[f"{module}.update_gate"]
        traced.record[f"{module}.update_gate"] = torch.where(valid[..., None], gate, 1.0)
    return traced


def test_gate_saturation_cell_counts_the_valid_steps_of_planted_gates():
    """Every update gate of the planted GRU is shut (z ~ 0): every unit left-saturated on every
    valid step (the cell: 1.0), the open gates past each row's source and T not counted; with the
    gates opened (its null here), none is."""
    shut = saturation_cell(saturation_rows(planted_gru(), [2, 3, 4], [1, 2]), "update_gate")
    assert shut["value"] == 1.0
    assert shut["encoder"]["left"] == [1.0] * UNITS and shut["decoder"]["right"] == [0.0] * UNITS
    opened = planted_gru()
    with torch.no_grad():
        opened.bias_ih_l0[UNITS : 2 * UNITS] = 20.0
    found = saturation_cell(saturation_rows(opened, [2, 3, 4], [1, 2]), "update_gate")
    assert found["value"] == 0.0 and found["encoder"]["right"] == [1.0] * UNITS


def test_connectivity_cell_finds_the_planted_hub():
    """An encoder whose recurrent update-gate matrix sends every strong edge to unit 0: the hub
    share of its receiving units is 1; with every weight equal and strong, a unit's share is
    1/12."""
    gru = torch.nn.GRU(4, UNITS)
    state = {}
    for name, weight in (("hub", 0.0), ("even", 0.5)):
        with torch.no_grad():
            gru.weight_hh_l0.fill_(weight)
            if name == "hub":
                gru.weight_hh_l0[UNITS] = 1.0  # update gate block, unit 0's row
        state[name] = {f"encoder.{key}": value.clone() for key, value in gru.state_dict().items()}
    assert connectivity_cell(state["hub"], "update_gate")["value"] == 1.0
    assert connectivity_cell(state["even"], "update_gate")["value"] == pytest.approx(1 / UNITS)


@pytest.fixture(scope="module")
def counter():
    """Paper 4's planted network (`tests/planted_counter_gru.py`) on every T 1..8, both tokens and
    every filler count, decoded greedily."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # matrices this small: a second thread only waits (20x on a busy CPU)
    model = build_model()
    yield model, trace_rows(model, every_request(), STEPS)
    torch.set_num_threads(threads)


def test_paper4_cells_find_the_unit_planted_to_count_the_remaining_steps(counter):
    """On the planted network paper 4's stages name u_2 (the register unit that becomes the
    trigger) the counting unit and s_A a storing unit; setting it back a step delays the token on
    every row and random units on none (the `neuron_functions` cell: 1.0); zeroing the storing
    units loses it. P(A at T) depends on h_(T-1) through g and s_A alone, so the integrated
    gradients' top 10% (2 units) hold all of it; u_2 lies inside the functional group for steps
    remaining (question 4's overlap: 1)."""
    model, traced = counter
    cells = token_cells(model, traced, A, control_draws=1)
    assert cells["counting"] == [REGISTER[1]] and S_A in cells["storing"]
    assert cells["outputting"] == [O_A]
    assert (
        cells["counts"]["counting_k1"] == [28, 28]
        and cells["counts"]["control.counting_k1"][0] == 0
    )
    statistics = token_statistics({"A": cells}, H)
    assert statistics["counting_excess"] == 1.0 and statistics["storing_effect"] == 1.0
    assert statistics["ig_top_share"] > 0.99
    assert REGISTER[1] in cells["remaining_group"] and statistics["overlap"] == 1.0


def test_paper4_cells_of_untrained_weights_find_nothing_to_verify(counter):
    """The same cells on an untrained seq2seq of the planted network's shape (the null): it never
    outputs the token at T, so no manipulation moves it: the `neuron_functions` cell is 0."""
    _, planted = counter
    torch.manual_seed(0)
    model = Seq2Seq(V, V, cell="gru", embedding_size=V, hidden_size=H, attention="none",
                    bridge="last").eval()  # fmt: skip
    traced = trace_rows(model, planted.batch, STEPS)
    cells = token_cells(model, traced, A, control_draws=1)
    assert token_statistics({"A": cells}, H)["counting_excess"] == 0.0


def test_overlap_beyond_chance():
    assert beyond_chance({1, 2}, {1, 2, 3, 4}, 8) == 1.0  # the smaller inside the larger
    assert beyond_chance({1, 2}, {3, 4}, 8) == pytest.approx((0 - 0.5) / (2 - 0.5))
    assert beyond_chance({1, 2, 3, 4}, {1, 2, 5, 6}, 8) == 0.0  # as random sets overlap
    assert beyond_chance({1, 2, 3, 4}, {1, 5, 6, 7}, 8) == -0.5  # less than they do
    assert beyond_chance(set(), {1}, 8) == 0.0 and beyond_chance({1}, set(range(8)), 8) == 0.0


# ---- the quick atlas end to end ------------------------------------------------------------------
QUICK_RUNS = ("paper1_baseline/seed=1", "paper1_guided/seed=1", "paper2_lm/seed=0",
              "paper4_gru/seed=0")  # fmt: skip
INAPPLICABLE = {"paper1_baseline": 1, "paper1_guided": 1, "paper2_lm": 3, "paper4_gru": 0}
"""How many of each quick model's cells do not apply: paper 1's rows have no redundant input;
paper2_lm has none either, one table index and no paper 4's stages (`questions.AMENDMENTS`)."""


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One quick atlas shared by the tests: its folder, output and claims."""
    return shared_quick_reproduction(tmp_path_factory, "atlas")


def test_quick_atlas_measures_every_model_beside_its_null(quick):
    """The quick atlas trains paper 1's baseline and guided GRUs, paper 2's language model and
    paper 4's GRU as their papers' own runs (in their papers' run folders, where a paper's
    reproduction under the same run root would have trained them), measures each by the wired
    methods trained and untrained into its measurements file under `atlas/` and beside the report,
    and writes the matrix (table and figure) and the questions it can judge, each beside its
    verdict on the untrained weights; the rest are listed as not yet judged (no model it trains
    is one a method of theirs does not apply to, so none is listed as never judged)."""
    folder, output, claims = quick
    report = (folder / "report" / "report.md").read_text()
    assert_quick_report(report, "# The atlas")
    for run in QUICK_RUNS:
        record = json.loads((folder / "report" / "runs" / "atlas" / run / "measurements.json")
                            .read_text())  # fmt: skip
        assert "--run.root" not in record["command"] and record["schema"] == 1
        model, seed = run[:-7], int(run[-1])  # trained as its paper's own run, in its folder
        assert "atlas" not in record["command"]
        trained = paper_layout(model, seed, SCALES["quick"], folder / "runs").path
        assert (trained / "checkpoints" / "best.ckpt").is_file()
        assert [p.name for p in (folder / "runs" / "atlas" / run).iterdir()] == [
            "measurements.json"
        ]
        for measured in (record, record["untrained"]):
            assert set(measured["cells"]) == set(WIRED)
            assert all((value is None) == (cell_status(model, name) != "measured"
                                           or "does_not_apply" in (measured.get(name) or {}))
                       for name, value in measured["cells"].items()), run  # fmt: skip
        paper4_stages = model != "paper2_lm"  # a language model has no paper 4's tokens
        assert bool(record["tokens"] and record["untrained"]["tokens"]) == paper4_stages
        for measured in (record, record["untrained"]):  # beta + gamma is the model's logit
            assert measured["contextual_decomposition"]["error"] < 1e-4
        row = next(line for line in report.splitlines() if line.startswith(f"| `{model}`"))
        assert row.count("(null ") == len(WIRED) - INAPPLICABLE[model]
        assert row.count("does not apply") == INAPPLICABLE[model]
    assert (folder / "report" / "figures" / "matrix.png").stat().st_size > 1000
    assert "![The matrix](figures/matrix.png)" in report
    assert set(claims) == {
        "q1.guided_counting", "q1.guided_storing", "q1.guided_more",
        "q2.most.paper1_baseline", "q2.most.paper1_guided", "q2.most.paper4_gru",
        "q2.guided_over_baseline", "q3.left_saturated.paper1_baseline",
        "q3.left_saturated.paper1_guided", "q3.left_saturated.paper4_gru",
        "q4.overlap.paper1_baseline", "q4.overlap.paper1_guided", "q4.overlap.paper4_gru",
    }  # fmt: skip
    assert all(claim["null"] in RULE_VERDICTS for claim in claims.values())
    never = report.split("Never judged on this model set (")[1].split("Not yet judged (")[0]
    pending = report.split("Not yet judged (")[1].split("## Claims")[0]
    assert never.strip().endswith("- none.")
    assert "- `q2.most.paper3_scan_A`: waits for `paper3_scan_A` (not trained at this scale)" in (
        pending
    )
    assert "`q2.most.paper1_baseline`" not in pending and "`q2.b_over_a`" in pending
    assert "`q3.guidance_only`" in pending and pending.count("\n- `") == len(RULES) - len(claims)
    assert "23 cells measured" in report and "5 where the" in report
    assert "- `paper2_lm` x `functional_groups`: the rule corpus has one rule" in report
    assert output.count("] paper") == 4


def test_the_page_opens_the_rows_each_quick_models_cells_read_beside_its_null(quick):
    """Each quick model's run folder holds the page's traces of split `atlas`: the rows its cells
    read at the checkpoint they measure and, on the same rows, its untrained weights, which the
    page's readers open at every site, its Side by side accepts as one set of examples, and its
    contextual decomposition splits into parts that sum to the logit. Each trace is its model's
    own reading of the rows it holds (a known answer: traced again, paper 4's GRU gives the same
    hidden states), and the page orders its units by what the cells found (the gates by the
    saturation measured, trained and untrained). The report names the command that opens each
    model's runs."""
    folder, _, _ = quick
    report = (folder / "report" / "report.md").read_text()
    runs = {}
    for run in QUICK_RUNS:
        model, seed = run[:-7], int(run[-1])
        path = paper_layout(model, seed, SCALES["quick"], folder / "runs").path
        viewed = runs.setdefault(str(path), ViewedRun(path))
        tag = TAGS[MODELS[model].paper]
        assert set(viewed.tags(VIEW_SPLIT)) == {tag, UNTRAINED}
        trained, untrained = viewed.trace(VIEW_SPLIT, tag), viewed.trace(VIEW_SPLIT, UNTRAINED)
        assert examples_differ(trained, untrained) == "" and trained.sites == untrained.sites
        assert 0 < trained.rows <= ROWS_PER_TOKEN * SCALES["quick"].tokens
        for site in trained.sites:
            assert len(viewed.example_site(VIEW_SPLIT, tag, 0, site).values) > 0
        record = json.loads((folder / "report" / "runs" / "atlas" / run / "measurements.json")
                            .read_text())  # fmt: skip
        layer = "lstm" if model == "paper2_lm" else "encoder"
        gate = f"{layer}.{'forget_gate' if MODELS[model].cell == 'lstm' else 'update_gate'}"
        for measured, at in ((record, tag), (record["untrained"], UNTRAINED)):
            shares = measured["gate_saturation"][layer]
            by_saturation = sorted(
                range(len(shares["left"])), key=lambda u: -(shares["left"][u] + shares["right"][u])
            )
            orders = viewed.unit_orders(VIEW_SPLIT, at, gate)  # the cells' own units
            assert orders[f"gate_saturation.{gate}: most saturated first"].units == by_saturation
        glob = f"<runs>/{path.parent.relative_to(folder / 'runs').as_posix()}/seed=*"
        assert f"- `{model}`: `python -m probes view --runs '{glob}'`" in report
    paper4 = paper_layout("paper4_gru", 0, SCALES["quick"], folder / "runs").path
    decompositions = Decompositions(lambda path: runs[path])
    for tag in ("best", UNTRAINED):
        trace = ViewedRun(paper4).trace(VIEW_SPLIT, tag).read(
            ["batch.source", "batch.source_lengths", "decoder.hidden"])  # fmt: skip
        batch = {"source": trace["batch.source"], "source_lengths": trace["batch.source_lengths"]}
        again = trace_rows(RunFolder(paper4).model(tag), batch, trace["decoder.hidden"].shape[1],
                           timed_only=False)  # fmt: skip
        torch.testing.assert_close(again.record["decoder.hidden"], trace["decoder.hidden"])
        assert decompositions.relevance(str(paper4), VIEW_SPLIT, tag, 0, 0).error() < 1e-4


def test_part_of_the_atlas_is_measured_and_reported_with_models(quick, tmp_path):
    """`--models` measures only the models named (here kept from the quick atlas: nothing is
    trained) and reports their cells and the claims that read them alone, judged as in the whole
    atlas, the others listed as left out; a name not of the scale, or the atlas's own report's
    place (the default scale's, without --out), is one error naming the fix."""
    folder, _, claims = quick
    paper1 = ("paper1_baseline", "paper1_guided")
    done = quick_command("atlas", "--runs", folder / "runs", "--reuse-runs", "--out",
                         tmp_path / "part", "--models", *paper1, trains_nothing=True)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 tasks, 2 at a time; 2 done before, 0 to run" in done.stdout
    part = {c["id"]: c for c in json.loads((tmp_path / "part" / "results.json").read_text())}
    reading = {claim_id for claim_id in claims if not {"paper2_lm", "paper4_gru"} & set(
        model for model, _ in NEEDS[claim_id])}  # fmt: skip
    assert set(part) == reading and len(reading) == 10
    assert {k: (c["verdict"], c["null"], c["measured"]) for k, c in part.items()} == {
        k: (c["verdict"], c["null"], c["measured"]) for k, c in claims.items() if k in reading
    }
    report = (tmp_path / "part" / "report.md").read_text()
    assert "`paper2_lm`, `paper4_gru` left out with --models" in report
    assert "- `q2.most.paper4_gru`: waits for `paper4_gru` (left out with --models)" in report
    for options, error in (
        (("--models", "paper9_rnn", "--out", str(tmp_path / "x")), "--models: paper9_rnn not "
         "among the models of scale quick: name some of paper1_baseline, paper1_guided"),
        (("--models", "paper1_guided", "--scale", "default"),  # whose report is the atlas's
         "give it a place of its own with --out DIR"),
    ):  # fmt: skip
        refused = quick_command("atlas", "--runs", tmp_path / "none", *options)
        assert refused.returncode == 2 and error in refused.stderr, refused.stderr
        assert not (tmp_path / "none").exists()


def test_the_committed_default_atlas_rebuilds_from_its_runs_training_nothing(tmp_path):
    """`reports/atlas` rebuilds from its committed measurement files alone, by the command the
    README gives, offline, with nothing trained and no training library loaded: every run done
    before, the same claims (verdicts, nulls, measured values, rule dates) and the same matrix."""
    kept = REPOSITORY / "reports" / "atlas" / "runs"
    runs = sorted(kept.glob("atlas/*/seed=*/measurements.json"))
    scale = SCALES["default"]
    assert len(runs) == sum(len(seeds) for seeds in scale.models.values())
    readme = (REPOSITORY / "README.md").read_text()
    assert "--runs reports/atlas/runs --reuse-runs" in " ".join(readme.split())
    offline = {"RECURRENT_PROBES_OFFLINE": "1", "RECURRENT_PROBES_CACHE": str(tmp_path / "cache")}
    done = quick_command("atlas", "--scale", "default", "--runs", kept, "--reuse-runs",
                         "--out", tmp_path / "report", env=offline,
                         trains_nothing=True)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(runs)} done before, 0 to run" in done.stdout
    committed = REPOSITORY / "reports" / "atlas"
    rebuilt = tmp_path / "report"
    assert json.loads((rebuilt / "results.json").read_text()) == json.loads(
        (committed / "results.json").read_text()
    )

    def matrix(report: Path) -> str:
        text = report.read_text()
        return text[text.index("## The matrix") : text.index("## The questions")]

    assert matrix(rebuilt / "report.md") == matrix(committed / "report.md")


def test_a_question_is_answered_by_its_claims_as_a_finding_is_judged():
    """The report's answers: a question whose claims all read yes is answered yes, one whose
    claims read yes and no is answered partly, uninformative claims count for nothing, and a
    question no claim judges is not judged; each claim's answer stands beside its null's."""

    def judged(id: str, verdict: str, null: str = "not reproduced") -> Claim:
        because = {"rule_verdict": "reproduced", "uninformative_because": "untrained passes"}
        return Claim(id, id, "", Measured.of([1.0]), "a rule", verdict, null=null,
                     **(because if verdict == UNINFORMATIVE else {}))  # fmt: skip

    claims = [judged("q1.guided_counting", "reproduced"), judged("q1.guided_storing", "reproduced"),
              judged("q1.guided_more", UNINFORMATIVE, "reproduced"),
              judged("q3.guidance_only", "reproduced"),
              judged("q3.left_saturated.paper4_gru", "not reproduced"),
              judged("q4.overlap.paper4_gru", "partially reproduced", "reproduced")]  # fmt: skip
    answer = {row.split(" | ")[0].split("**")[1]: row.split(" | ")[1]
              for row in answers_table(claims).splitlines()[2:]}  # fmt: skip
    assert answer == {"q1": "**yes**", "q2": "**not judged**", "q3": "**partly**",
                      "q4": "**partly**"}  # fmt: skip
    assert "`q4.overlap.paper4_gru` partly (yes)" in answers_table(claims)


def test_quick_atlas_rebuilds_from_its_measurements_alone(quick):
    """The report rebuilt from the measurement files beside it (`--runs <report>/runs
    --reuse-runs`) trains nothing, loads neither Lightning, sklearn nor captum, and judges every
    claim as before."""
    folder, _, claims = quick
    kept = folder / "report" / "runs"
    output, again = quick_reproduction("atlas", folder / "rebuilt", trains_nothing=True,
                                       options=("--runs", str(kept), "--reuse-runs"))  # fmt: skip
    assert "4 done before, 0 to run" in output
    assert not list(kept.rglob("*.ckpt"))
    assert {k: (c["verdict"], c["null"], c["measured"]) for k, c in again.items()} == {
        k: (c["verdict"], c["null"], c["measured"]) for k, c in claims.items()
    }
