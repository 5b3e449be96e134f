"""Paper 3's classifier, step snapshots, curve reading and claim rules, and the whole pipeline
at quick scale (`python -m experiments.paper3 --scale quick`): its report, the runs'
measurements it is rebuilt from alone, and its runs split over shards and merged."""

import copy
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import pytorch_lightning as pl
import torch
import torch.nn.functional as F
import yaml
from pytorch_lightning.loggers import CSVLogger

from datamodules import Toy2DDataModule
from experiments.paper3.runs import (
    accuracy_curves,
    arguments_of,
    configured_reading,
    evaluation_limits,
    trained_by_another_reading,
    trained_reading,
    up_to_date,
)
from experiments.paper3.scales import CONFIGS, IMAGES_AUTHORS, SCALES
from experiments.paper3.toy import (
    GRID,
    PLAYGROUND,
    TEXT,
    decoded_grid,
    x2_dependence,
    y1_probability,
)
from experiments.report import RULE_VERDICTS
from lightning_modules.callbacks import WeightSnapshot
from lightning_modules.classifier import (
    Classifier,
    KerasAdam,
    TwoLogits,
    playground_square_loss,
)
from lightning_modules.recurrent import Intervention
from storage import RunLayout
from storage.run_folder import RunFolder
from tests.smoke import (
    assert_quick_report,
    assert_shards_merge,
    copy_kept_measurements,
    quick_command,
    quick_reproduction,
    rebuilt_alone,
)


def test_multi_margin_loss_is_the_multiclass_hinge():
    """torch's multi_margin (Weston-Watkins; the images' hinge loss of the first reading): mean over
    rows of sum_{j != y} max(0, 1 - s_y + s_j) / C."""
    model = Classifier("mlp", input_size=2, num_classes=3, loss="multi_margin")
    logits = torch.tensor([[2.0, 1.5, -1.0], [0.0, 0.0, 3.0]])
    labels = torch.tensor([0, 1])
    expected = ((1 - 2.0 + 1.5) + 0.0) / 3 + ((1 - 0.0 + 0.0) + (1 - 0.0 + 3.0)) / 3
    torch.testing.assert_close(model.loss(logits, labels), torch.tensor(expected / 2))


def test_categorical_hinge_is_keras_crammer_singer():
    """Keras's categorical_hinge (the authors' loss): per row max(0, 1 + neg - s_y), neg the
    largest of the other outputs and the 0 the one-hot mask leaves in the true class's place;
    averaged. Row 0: 1 + 1.5 - 2 = 0.5. Row 1: every other output is negative, so neg = 0 and
    the loss is 1 - 0.5 = 0.5 (a textbook Crammer-Singer hinge gives 1 - 2 - 0.5 < 0: 0).
    Torch's multi_margin_loss gives (0.5 + 0) / 3 and 0: another loss."""
    model = Classifier("mlp", input_size=2, num_classes=3, loss="categorical_hinge")
    logits = torch.tensor([[2.0, 1.5, -1.0], [-3.0, 0.5, -2.0]], requires_grad=True)
    labels = torch.tensor([0, 1])
    loss = model.loss(logits, labels)
    torch.testing.assert_close(loss, torch.tensor(0.5))
    torch.testing.assert_close(F.multi_margin_loss(logits, labels), torch.tensor(0.5 / 3 / 2))
    loss.backward()  # row 0 pushes s_0 up and s_1 down, row 1 only s_1 up (the mask's 0 is fixed)
    torch.testing.assert_close(logits.grad, torch.tensor([[-0.5, 0.5, 0.0], [0.0, -0.5, 0.0]]))


def test_keras_initialisation_is_glorot_uniform_with_zero_biases():
    cnn = Classifier("two_digit_cnn", hidden_sizes=[64, 64], num_classes=10, init="keras")
    fans = {"conv0": (9, 9 * 32), "conv1": (9 * 32, 9 * 64), "hidden0": (64 * 11 * 25, 64),
            "hidden1": (64, 64), "output": (64, 10)}  # fmt: skip
    for name, (fan_in, fan_out) in fans.items():
        layer = getattr(cnn.network, name)
        limit = (6 / (fan_in + fan_out)) ** 0.5
        largest = layer.weight.abs().max().item()
        assert 0.9 * limit < largest <= limit, name
        assert not layer.bias.any(), name
    torch_default = Classifier("two_digit_cnn", hidden_sizes=[64, 64], num_classes=10)
    torch_limit = 1 / 17600**0.5  # torch's default: U(-1 / sqrt(fan_in), 1 / sqrt(fan_in))
    assert torch_default.network.hidden0.weight.abs().max() <= torch_limit
    assert torch_default.network.hidden0.bias.any()


def test_keras_adam_takes_the_keras_update():
    """Two updates of `KerasAdam` equal TensorFlow's Adam by hand: lr_t = lr sqrt(1 - b2^t) /
    (1 - b1^t), w -= lr_t m / (sqrt(v) + 1e-7), epsilon on the uncorrected moment; torch's Adam
    with eps 1e-7 moves the tiny gradient's weight over twice as far."""
    gradients = [torch.tensor([1e-6, 1e-3, -2.0], dtype=torch.float64),
                 torch.tensor([3e-6, -1e-3, 1.0], dtype=torch.float64)]  # fmt: skip
    lr, beta1, beta2, epsilon = 0.001, 0.9, 0.999, 1e-7
    expected, m, v = torch.zeros(3, dtype=torch.float64), 0.0, 0.0
    for t, gradient in enumerate(gradients, start=1):
        m, v = beta1 * m + (1 - beta1) * gradient, beta2 * v + (1 - beta2) * gradient**2
        expected = expected - lr * (1 - beta2**t) ** 0.5 / (1 - beta1**t) * m / (v.sqrt() + epsilon)
    finals = {}
    for name, make in (("keras", lambda p: KerasAdam([p], lr=lr)),
                       ("torch", lambda p: torch.optim.Adam([p], lr=lr, eps=epsilon))):  # fmt: skip
        weight = torch.zeros(3, dtype=torch.float64, requires_grad=True)
        optimizer = make(weight)
        for gradient in gradients:
            weight.grad = gradient.clone()
            optimizer.step()
        finals[name] = weight.detach()
    torch.testing.assert_close(finals["keras"], expected, rtol=1e-12, atol=0)
    assert finals["torch"][0] / expected[0] > 2
    model = Classifier("two_digit_cnn", hidden_sizes=[64, 64], num_classes=10,
                       optimizer="keras_adam", learning_rate=lr)  # fmt: skip
    assert isinstance(model.configure_optimizers(), KerasAdam)


def test_cnn_and_mlp_layers_and_traces():
    cnn = Classifier("two_digit_cnn", hidden_sizes=[64, 64], num_classes=10)
    images = torch.rand(3, 1, 28, 56)
    assert cnn(images).shape == (3, 10)
    assert cnn.network.hidden0.in_features == 64 * 11 * 25  # conv 26x54, pool 13x27, conv 11x25
    assert cnn.network.hidden1.in_features == 64 and cnn.network.output.in_features == 64
    traced = cnn.trace({"image": images})
    assert traced["hidden.0"].shape == (3, 64) and traced["prediction"].shape == (3,)
    assert traced["hidden.1"].shape == (3, 64)
    mlp = Classifier("mlp", input_size=2, hidden_sizes=[8, 8, 8], num_classes=2)
    points = torch.randn(5, 2)
    traced = mlp.trace({"inputs": points})
    assert [traced[f"hidden.{i}"].shape for i in range(3)] == [(5, 8)] * 3
    assert (traced["hidden.2"] >= 0).all()  # after the ReLU
    torch.testing.assert_close(traced["logits"], mlp(points))
    torch.testing.assert_close(mlp.network.output(traced["hidden.2"]), traced["logits"])
    with pytest.raises(ValueError, match="Unknown architecture"):
        Classifier("transformer")


def test_classifier_intervene_edits_the_named_hidden_units_only():
    """Zeroing units 1 and 4 of `hidden.1` inside `intervene`: the trace shows exactly those
    zeroed, the logits are the rest of the network on the edited layer, and outside the block
    the model is unchanged."""
    torch.manual_seed(0)
    mlp = Classifier("mlp", input_size=2, hidden_sizes=[8, 8, 8], num_classes=2).eval()
    points = torch.randn(5, 2)
    clean = mlp.trace({"inputs": points})
    with mlp.intervene([Intervention("hidden.1", units=[1, 4], operation="zero")]):
        edited = mlp.trace({"inputs": points})
        logits = mlp(points)
    expected = clean["hidden.1"].clone()
    expected[:, [1, 4]] = 0
    assert torch.equal(edited["hidden.0"], clean["hidden.0"])
    assert torch.equal(edited["hidden.1"], expected)
    downstream = mlp.network.output(mlp.network.relu2(mlp.network.hidden2(expected)))
    torch.testing.assert_close(logits, downstream)
    torch.testing.assert_close(edited["logits"], downstream)
    assert not torch.allclose(logits, clean["logits"])
    torch.testing.assert_close(mlp(points), clean["logits"])


def test_step_snapshots_match_the_logged_curve(tmp_path):
    """A validation row of `step` s is the model after s + 1 updates: its logged loss equals the
    loss of the `step=<s+1>` snapshot, and `accuracy_curves` indexes it by updates done."""
    pl.seed_everything(0)
    data = Toy2DDataModule(train_size=200, test_size=50, eval_size=50, steps_per_epoch=4)
    model = Classifier(val_splits=data.val_splits, test_splits=data.test_splits)
    trainer = pl.Trainer(
        max_steps=6, val_check_interval=1, num_sanity_val_steps=0, log_every_n_steps=1,
        default_root_dir=tmp_path, logger=CSVLogger(tmp_path, name="", version=""),
        callbacks=[WeightSnapshot(every_n_epochs=0, at_steps=list(range(7)))],
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    )  # fmt: skip
    trainer.fit(model, datamodule=data)
    run = RunFolder(tmp_path)
    metrics = run.metrics()
    logged = metrics[["step", "val/train_sample/loss"]].dropna()
    batch = next(iter(data.split_dataloader("train_sample")))
    for step, loss in logged.itertuples(index=False):
        model.load_state_dict(run.state_dict(f"step={int(step) + 1}"))
        with torch.no_grad():
            recomputed = model.loss(model(batch["inputs"]), batch["label"])
        assert recomputed.item() == pytest.approx(loss, abs=1e-6)
    assert not torch.equal(run.state_dict("step=0")["network.output.weight"],
                           run.state_dict("step=1")["network.output.weight"])  # fmt: skip
    assert list(accuracy_curves(run, "toy_2d").index) == [1, 2, 3, 4, 5, 6]


# ---- the toy as the authors ran it: the TensorFlow Playground ----------------------------------
def test_playground_square_loss_and_its_gradient_through_tanh():
    """0.5 (o - t)^2 on t = 2 label - 1, averaged; its gradient at the tanh's input z is
    (o - t)(1 - o^2) / n (`src/nn.ts`: SQUARE.der = o - t, TANH.der = 1 - o^2)."""
    z = torch.tensor([[0.3], [-1.2], [2.0]], requires_grad=True)
    labels = torch.tensor([1, 0, 0])
    logits = TwoLogits()(torch.tanh(z))
    loss = playground_square_loss(logits, labels)
    o, t = torch.tanh(z.detach()).squeeze(1), torch.tensor([1.0, -1.0, -1.0])
    torch.testing.assert_close(loss, (0.5 * (o - t) ** 2).mean())
    loss.backward()
    torch.testing.assert_close(z.grad.squeeze(1), (o - t) * (1 - o**2) / 3)
    torch.testing.assert_close(logits.detach(), torch.stack([-o, o], 1))
    model = Classifier("mlp", loss="playground_square")
    assert model.loss(logits, labels).item() == pytest.approx(loss.item())


def test_playground_network_and_initialisation():
    """One tanh unit served as [-o, o]; weights U(-0.5, 0.5), biases 0.1 (`src/nn.ts` lines 161,
    25); torch's defaults otherwise."""
    torch.manual_seed(0)
    model = Classifier("mlp", hidden_sizes=[8, 8, 8], loss="playground_square", init="playground")
    layers = [layer for layer in model.network if isinstance(layer, torch.nn.Linear)]
    assert [layer.out_features for layer in layers] == [8, 8, 8, 1]
    weights = torch.cat([layer.weight.flatten() for layer in layers])
    assert weights.min() >= -0.5 and weights.max() < 0.5
    assert weights.min() < -0.45 and weights.max() > 0.45 and abs(weights.mean()) < 0.05
    assert all(torch.equal(layer.bias, torch.full_like(layer.bias, 0.1)) for layer in layers)
    points = torch.randn(6, 2) * 5
    logits = model(points)
    assert logits.shape == (6, 2) and torch.equal(logits[:, 0], -logits[:, 1])
    assert (logits.abs() < 1).all()
    traced = model.trace({"inputs": points})
    assert torch.equal(traced["prediction"], (logits[:, 1] > 0).long())
    default = Classifier("mlp", loss="playground_square")
    assert not torch.equal(default.network.hidden0.bias, torch.full((8,), 0.1))
    with pytest.raises(ValueError, match="One tanh output unit decides two classes"):
        Classifier("mlp", num_classes=3, loss="playground_square")
    with pytest.raises(ValueError, match="Unknown init 'xavier'"):
        Classifier("mlp", init="xavier")


def playground_reference(model, inputs, labels, passes: int, batch: int = 10, rate: float = 0.1):
    """`src/playground.ts` `oneStep` and `src/nn.ts` by hand: every point in order, its
    derivatives (output derivative o - t, back through the network) added to the accumulators,
    the weights moved by the accumulated mean after every `batch`-th point of a pass; the
    accumulators are never cleared at the end of a pass."""
    parameters = list(model.parameters())
    accumulated = [torch.zeros_like(p) for p in parameters]
    count = 0
    for _ in range(passes):
        for index, (point, label) in enumerate(zip(inputs, labels, strict=True)):
            output = model(point[None])[0, 1]
            target = 2.0 * float(label) - 1
            grads = torch.autograd.grad(output, parameters, grad_outputs=output.detach() - target)
            accumulated = [a + g for a, g in zip(accumulated, grads, strict=True)]
            count += 1
            if (index + 1) % batch == 0:
                with torch.no_grad():
                    for parameter, total in zip(parameters, accumulated, strict=True):
                        parameter -= rate * total / count
                accumulated, count = [torch.zeros_like(p) for p in parameters], 0
    return model


def test_one_playground_step_is_one_ordered_pass_updating_every_10_points(tmp_path):
    """Two epochs of the fit (`playground_passes`, the playground's loss and init) end with the
    weights of two playground steps done by hand, the leftover points of the first pass in the
    second pass's first update; an epoch is len // 10 updates and `after_epochs` snapshots it."""
    pl.seed_everything(0)
    data = Toy2DDataModule(distribution="authors", training_order="playground_passes",
                           candidates=60, test_size=20, data_seed=1)  # fmt: skip
    data.setup()
    train = data.datasets["train"].columns
    size = len(train["label"])
    assert size % 10 and size >= 20  # a leftover to carry (60 candidates: about 22 points)
    model = Classifier(loss="playground_square", init="playground", val_splits=data.val_splits,
                       test_splits=data.test_splits)  # fmt: skip
    initial = copy.deepcopy(model)
    trainer = pl.Trainer(
        max_epochs=2, num_sanity_val_steps=0, logger=False, default_root_dir=tmp_path,
        callbacks=[WeightSnapshot(every_n_epochs=0, after_epochs=[1, 2])],
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    )  # fmt: skip
    trainer.fit(model, datamodule=data)
    assert trainer.global_step == 2 * (size // 10)
    run = RunFolder(tmp_path)
    for passes, tag in ((1, "epoch=0"), (2, "epoch=1")):
        reference = playground_reference(copy.deepcopy(initial), train["inputs"], train["label"],
                                         passes)  # fmt: skip
        for name, value in reference.state_dict().items():
            torch.testing.assert_close(run.state_dict(tag)[name], value, atol=1e-6, rtol=1e-5)
    for name, value in run.state_dict("epoch=1").items():
        torch.testing.assert_close(model.state_dict()[name], value)
    # the leftover points matter: two passes that each start afresh end elsewhere
    afresh = playground_reference(copy.deepcopy(initial), train["inputs"], train["label"], 1)
    afresh = playground_reference(afresh, train["inputs"], train["label"], 1)
    assert not torch.allclose(afresh.network.output.weight, model.network.output.weight, atol=1e-4)
    assert {"epoch=init", "epoch=0", "epoch=1"} <= set(run.checkpoint_tags())


def test_runs_of_another_reading_are_trained_again(tmp_path):
    """A change of the images' and SCAN's configs leaves their commands as they were: kept
    measurements without the config file's settings of today, or a run folder whose saved config
    has others, are not reused. The settings are those the config file gives and the command
    does not."""
    scale = SCALES["quick"]
    images = arguments_of("two_digit_images", "A", 0, scale, tmp_path)
    primary = configured_reading("two_digit_images", images)
    assert (
        primary["model.hidden_sizes"] == [64, 64] and primary["model.loss"] == "categorical_hinge"
    )
    assert primary["data.training_batches"] == "fresh" and "data.setting" not in primary
    authors_arguments = arguments_of(IMAGES_AUTHORS, "A", 0, scale, tmp_path)
    authors = configured_reading(IMAGES_AUTHORS, authors_arguments)
    assert (authors["model.init"], authors["model.optimizer"]) == ("keras", "keras_adam")
    scan = configured_reading("scan", arguments_of("scan", "A", 0, scale, tmp_path))
    assert scan["model.attention"] == "general" and scan["trainer.gradient_clip_val"] == 1.0
    record = {"final": {"train": 0.9}, "boundaries": None, "untrained": {}, "data_sizes": {}}
    assert not up_to_date(record, "two_digit_images", images)  # no config settings recorded
    assert up_to_date(record | {"reading": primary}, "two_digit_images", images)
    assert not up_to_date(record | {"reading": primary}, IMAGES_AUTHORS, authors_arguments)
    before_null_model = {k: v for k, v in record.items() if k != "untrained"} | {"reading": primary}
    assert not up_to_date(before_null_model, "two_digit_images", images)  # measured again
    layout = RunLayout(tmp_path)
    assert trained_reading(layout, images, primary) is None
    assert not trained_by_another_reading(layout, "two_digit_images", images)
    now = yaml.safe_load((CONFIGS / "two_digit_images.yaml").read_text())
    now["data"]["init_args"] |= {"setting": "A", "data_seed": 0}  # the command's, resolved
    before = copy.deepcopy(now)
    before["model"]["init_args"] |= {"hidden_sizes": [64], "loss": "multi_margin"}
    layout.config.write_text(yaml.safe_dump(before))
    assert trained_reading(layout, images, primary)["model.hidden_sizes"] == [64]
    assert trained_by_another_reading(layout, "two_digit_images", images)
    layout.config.write_text(yaml.safe_dump(now))
    assert not trained_by_another_reading(layout, "two_digit_images", images)


def test_authors_runs_share_one_data_seed():
    """The authors' program varies the model's seed only (one --data_random_seed): every run of
    the authors' reading draws its data with the scale's first seed; the primary's with its own."""
    scale = SCALES["quick"]
    for seed in scale.seeds:
        for experiment, data_seed in ((IMAGES_AUTHORS, scale.seeds[0]), ("two_digit_images", seed)):
            arguments = arguments_of(experiment, "B", seed, scale, Path("/runs"))
            assert arguments[arguments.index("--data.data_seed") + 1] == str(data_seed)
            assert arguments[arguments.index("--seed_everything") + 1] == str(seed)
    assert SCALES["default"].eval_size[IMAGES_AUTHORS] == 100  # mnist.py lines 266-267


def test_toy_readings_grids_and_snapshot_tags():
    assert torch.equal(GRID, torch.arange(-100, 101) / 100)
    assert len(PLAYGROUND.axis) == 100 and PLAYGROUND.extent == (-6.0, 6.0, -6.0, 6.0)
    assert [TEXT.snapshot_tag(n) for n in (0, 1, 16)] == ["step=0", "step=1", "step=16"]
    assert [PLAYGROUND.snapshot_tag(n) for n in (0, 1, 1024)] == [
        "epoch=init", "epoch=0", "epoch=1023"]  # fmt: skip
    axis = PLAYGROUND.axis
    assert set(axis[PLAYGROUND.positive].tolist()) == {
        a for a in axis.tolist() if 0.3 < a <= 5.3}  # fmt: skip
    x2, x1 = torch.meshgrid(axis, axis, indexing="ij")
    assert x2_dependence((x1 > 0).float(), PLAYGROUND) == 0.0
    assert x2_dependence(((x1 > 0) & (x2 < 0)).float(), PLAYGROUND) == 1.0
    beyond_data = (x1 > 0) & (x2 < 5.5)  # flips only above the data's range
    assert x2_dependence(beyond_data.float(), PLAYGROUND) == 0.0


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One quick reproduction, shared by the tests: its folder, output and claims."""
    folder = tmp_path_factory.mktemp("paper3_quick")
    output, claims = quick_reproduction(3, folder)
    return folder, output, claims


def reproduction(*options) -> subprocess.CompletedProcess:
    return quick_command(3, *options)


VARIANTS = [f"{e}_{s}" for e in ("scan", "scan_authors", "toy_2d", "toy_2d_playground",
                                  "two_digit_images", "two_digit_images_authors")
            for s in "AB"]  # fmt: skip


def test_quick_reproduction_writes_report_claims_and_figures(quick):
    tmp_path, output, claims = quick
    for experiment in ("scan", "two_digit_images", "two_digit_images_authors", "toy_2d",
                       "toy_2d_playground", "scan_authors"):  # fmt: skip
        for setting in "AB":
            assert output.count(f"] {experiment}_{setting} seed=") == 2
    assert "24 tasks, 2 at a time; 0 done before, 24 to run" in output
    toy = ["toy.fails_on_test", "toy.depends_on_x2", "toy.step1_boundary_stable"]
    assert list(claims) == [
        "images.faster_early", "images.gap_larger", "scan.faster_early", "scan.gap_larger",
        *toy, *(f"playground.{id}" for id in toy),
        "authors.images.faster_early", "authors.images.gap_larger",
        "authors.scan.faster_early", "authors.scan.gap_larger",
        "scan.train_size", "scan.test_size",
    ]  # fmt: skip
    # every claim of a model is also judged on the untrained weights (the null model);
    # SCAN's split sizes are the data's: the paper's numbers, and no null verdict
    assert all("null" in claim for claim in claims.values())
    assert all(claims[id]["null"] in RULE_VERDICTS for id in list(claims)[:-2])
    for split, rows in (("train", 14670), ("test", 7706)):
        size = claims[f"scan.{split}_size"]
        assert (size["verdict"], size["rule_verdict"], size["null"]) == (
            "uninformative", "reproduced", None)  # fmt: skip
        assert size["measured"]["values"] == [rows] * 4
    for id in ("toy.depends_on_x2", "playground.toy.fails_on_test"):  # A against its control
        assert claims[id]["rule"].startswith("direction first: mean per-seed difference A - B")
        assert "setting A's" in claims[id]["earlier"][0]["rule"]
    for id in ("images.faster_early", "images.gap_larger"):
        assert claims[f"authors.{id}"]["claim"] == claims[id]["claim"]
        assert claims[f"authors.{id}"]["rule"].split(":")[0] == claims[id]["rule"].split(":")[0]
    assert claims["authors.scan.gap_larger"]["claim"] == claims["scan.gap_larger"]["claim"]
    assert "all 7,706 test rows were in its training data" in claims[
        "authors.scan.gap_larger"]["rule"]  # fmt: skip
    assert claims["playground.toy.depends_on_x2"]["claim"] == claims["toy.depends_on_x2"]["claim"]
    assert "[0.3, 5.3]" in claims["playground.toy.depends_on_x2"]["rule"]
    assert "one update of 10 points" in claims["toy.step1_boundary_stable"]["rule"]
    assert "one pass over the training points" in claims[
        "playground.toy.step1_boundary_stable"]["rule"]  # fmt: skip
    report = (tmp_path / "report" / "report.md").read_text()
    figures = ("fig3a_two_digit_images", "fig3b_scan", "fig3c_toy_2d", "fig4_toy_data",
               "fig5_toy_boundary_steps", "fig6_toy_boundary_seeds", "fig3c_toy_playground",
               "fig4_toy_playground_data", "fig5_toy_playground_boundary_steps",
               "fig6_toy_playground_boundary_seeds", "fig3a_two_digit_images_readings",
               "fig3b_scan_authors")  # fmt: skip
    for figure in figures:
        assert (tmp_path / "report" / "figures" / f"{figure}.png").stat().st_size > 1000
        assert f"figures/{figure}.png" in report
    assert "regenerated from the grammar" in report
    assert_quick_report(report)
    assert "| one tanh unit o, 0.5 (o - t)^2 on t = +-1 |" in report  # the table of settings
    assert report.count("| playground | A |") == 2  # the step-1 table, both readings
    assert "| Keras's defaults: Glorot uniform weights, zero biases |" in report  # images' settings
    for setting in "AB":  # both readings' accuracies
        assert report.count(f"| authors' program | {setting} |") == 1
        assert report.count(f"| primary | {setting} |") == 1
    assert "| gradient clipping | not stated | code: global norm 1.0 |" in report  # SCAN's table
    assert "| B | union of train and test |" in report
    scan_run = tmp_path / "runs" / "paper3" / "scan_A" / "seed=0"
    assert (scan_run / "traces" / "test_sample" / "best.safetensors").is_file()


def test_measurements_beside_the_report_hold_what_it_reads(quick):
    """Every run's measurements are copied beside the report, with the command that trained it
    (without the run root), its final accuracies and, for the toy, the grids the figures draw."""
    tmp_path, _, _ = quick
    kept = tmp_path / "report" / "runs"
    measurements = sorted(p.relative_to(kept).as_posix() for p in kept.rglob("measurements.json"))
    assert measurements == [f"paper3/{v}/seed={s}/measurements.json" for v in VARIANTS
                            for s in (0, 1)]  # fmt: skip
    scan = json.loads((kept / "paper3" / "scan_B" / "seed=1" / "measurements.json").read_text())
    assert scan["command"] == [
        "--config", "experiments/configs/paper3/scan.yaml", "--seed_everything", "1",
        "--run.variant", "scan_B", "--trainer.max_steps", "4",
        "--trainer.enable_progress_bar", "false", "--data.setting", "B", "--data.data_seed", "1",
        "--data.eval_size", "20", "--trainer.val_check_interval", "2",
        "--data.steps_per_epoch", "2", "--data.batch_size", "32",
        "--trainer.limit_test_batches", "2",
    ]  # fmt: skip
    assert len(scan["batch_accuracy"]["seq_acc"]) == 4 and scan["boundaries"] is None
    authors = json.loads((kept / "paper3" / "scan_authors_B" / "seed=1" /
                          "measurements.json").read_text())  # fmt: skip
    assert authors["command"][:2] == ["--config", "experiments/configs/paper3/scan_authors.yaml"]
    assert authors["curves"]["updates"] == [1, 2, 3, 4]  # evaluated after every step
    assert "every test row is in training" in authors["data_source"]
    run = RunFolder(tmp_path / "runs" / "paper3" / "scan_B" / "seed=1")
    assert scan["final"]["test"] == run.test_accuracy("test", "seq_acc")
    # the toy's grids: every step of Figure 5 for setting A's first seed, the last elsewhere
    toy = {(s, seed): json.loads((kept / "paper3" / f"toy_2d_{s}" / f"seed={seed}" /
                                  "measurements.json").read_text())
           for s in "AB" for seed in (0, 1)}  # fmt: skip
    assert list(toy[("A", 0)]["boundaries"]["y1_probability"]) == ["0", "1", "2", "3", "4", "8"]
    for key in (("A", 1), ("B", 0), ("B", 1)):
        assert list(toy[key]["boundaries"]["y1_probability"]) == ["8"]
    toy_run = RunFolder(tmp_path / "runs" / "paper3" / "toy_2d_A" / "seed=1")
    full = y1_probability(toy_run.model("last"), toy_run.state_dict("step=8"))
    kept_grid = decoded_grid(toy[("A", 1)]["boundaries"]["y1_probability"]["8"])
    assert kept_grid.shape == (201, 201)
    np.testing.assert_allclose(kept_grid, full.numpy(), atol=0.5 / 255 + 1e-7, rtol=0)
    assert toy[("A", 1)]["boundaries"]["x2_dependence"] == x2_dependence(full)
    # the untrained weights (the null model): step 0's boundary, and accuracies on all data
    step0 = y1_probability(toy_run.model("last"), toy_run.state_dict("step=0"))
    assert toy[("A", 1)]["untrained"]["x2_dependence"] == x2_dependence(step0)
    assert set(scan["untrained"]) == {"samples", "final"}
    # quick decodes 2 test batches of each split; the untrained weights are tested on the same
    assert evaluation_limits(run) == {"limit_val_batches": 1.0, "limit_test_batches": 2}
    assert evaluation_limits(toy_run) == {"limit_val_batches": 1.0, "limit_test_batches": 1.0}
    assert scan["data_sizes"] == {"train": 14670, "test": 7706}
    shares = toy[("A", 1)]["boundaries"]["quadrant_y1_share"]  # every run: Figure 5's steps
    assert list(shares) == ["0", "1", "2", "3", "4", "8"]
    # the playground's runs: its steps are passes, its grid the playground's
    playground = {(s, seed): json.loads((kept / "paper3" / f"toy_2d_playground_{s}" /
                                         f"seed={seed}" / "measurements.json").read_text())
                  for s in "AB" for seed in (0, 1)}  # fmt: skip
    assert "--trainer.max_epochs" in playground[("B", 1)]["command"]
    grids = playground[("A", 0)]["boundaries"]["y1_probability"]
    assert list(grids) == ["0", "1", "2", "3", "4"]
    assert list(playground[("A", 1)]["boundaries"]["y1_probability"]) == ["4"]
    # the images' runs keep the reading they were trained with; the authors' share a data seed
    images = {}
    for experiment in ("two_digit_images", IMAGES_AUTHORS):
        path = kept / "paper3" / f"{experiment}_B" / "seed=1" / "measurements.json"
        images[experiment] = json.loads(path.read_text())
    for experiment, record in images.items():
        assert record["reading"] == configured_reading(experiment, record["command"])
        assert len(record["curves"]["updates"]) == 4 and record["boundaries"] is None
    seeds = {e: r["command"][r["command"].index("--data.data_seed") + 1] for e, r in images.items()}
    assert seeds == {"two_digit_images": "1", IMAGES_AUTHORS: "0"}
    assert playground[("A", 0)]["curves"]["passes"] == list(range(1, 5))
    updates = playground[("A", 0)]["curves"]["updates"]
    assert updates[1] == 2 * updates[0] and 16 <= updates[0] <= 21  # about 18 a pass
    playground_run = RunFolder(tmp_path / "runs" / "paper3" / "toy_2d_playground_A" / "seed=0")
    last = y1_probability(playground_run.model("last"), playground_run.state_dict("epoch=3"),
                          PLAYGROUND)  # fmt: skip
    assert decoded_grid(grids["4"]).shape == (100, 100)
    np.testing.assert_allclose(decoded_grid(grids["4"]), last.numpy(), atol=0.5 / 255 + 1e-7,
                               rtol=0)  # fmt: skip
    assert playground[("A", 0)]["boundaries"]["x2_dependence"] == x2_dependence(last, PLAYGROUND)


def test_measurements_beside_the_report_rebuild_it_alone(quick):
    """From the measurements beside the report alone (a run root holding nothing else) the same
    `results.json` is rebuilt, nothing trained. It deletes the quick reproduction's runs: the
    tests that read them come before it."""
    tmp_path, _, _ = quick
    shutil.rmtree(tmp_path / "runs")
    done = rebuilt_alone(3, tmp_path, 24)
    assert "24 tasks, 2 at a time; 24 done before, 0 to run" in done.stdout
    assert not list(tmp_path.rglob("*.ckpt"))


def test_shards_trained_apart_merge_into_the_one_machine_report(quick, tmp_path):
    """`--shard 1/2` trains every other run of the fixed list (here the seed-0 runs) and writes
    no report; with the other shard's run root (the seed-1 runs' measurements of the one-machine
    reproduction, copied, to keep the suite short) `--merge` of both writes the one-machine
    report, and without one of them stops naming a missing run. To keep the suite short the
    first shard trains two of its runs and keeps the rest, measured by the one-machine
    reproduction, with `--reuse-runs`; the two trained again give its measurements."""
    single, _, _ = quick
    trained_here = ["toy_2d_A", "two_digit_images_B"]
    for run in VARIANTS:
        if run not in trained_here:
            copy_kept_measurements(single, tmp_path, 3, f"{run}/seed=0", 1)
    done = reproduction("--shard", "1/2", "--runs", tmp_path / "shard1", "--reuse-runs", "--out",
                        tmp_path / "report1")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "12 tasks, 2 at a time; 10 done before, 2 to run: two_digit_images_B seed=0, "
        "toy_2d_A seed=0"
    ) in done.stdout
    assert "--merge <each shard's run root>" in done.stdout
    assert not (tmp_path / "report1").exists()
    trained = sorted(p.parent.relative_to(tmp_path / "shard1").as_posix()
                     for p in (tmp_path / "shard1").rglob("checkpoints"))  # fmt: skip
    assert trained == [f"paper3/{v}/seed=0" for v in trained_here]
    for run in VARIANTS:
        copy_kept_measurements(single, tmp_path, 3, f"{run}/seed=1", 2)
    assert_shards_merge(3, tmp_path, single, "paper3/scan_A/seed=1", 24)
