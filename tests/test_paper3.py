"""Paper 3's classifier, step snapshots, curve reading and claim rules, and the whole pipeline
at smoke scale (`python -m experiments.paper3 --scale smoke`): its report, the runs'
measurements it is rebuilt from alone, and its runs split over shards and merged."""

import json
import shutil
import subprocess

import numpy as np
import pytest
import pytorch_lightning as pl
import torch
from pytorch_lightning.loggers import CSVLogger

from datamodules import Toy2DDataModule
from experiments.paper3.claims import greater_claim
from experiments.paper3.runs import GRID, accuracy_curves, x2_dependence, y1_probability
from lightning_modules.callbacks import WeightSnapshot
from lightning_modules.classifier import Classifier
from lightning_modules.recurrent import Intervention
from storage.run_folder import RunFolder
from tests.smoke import assert_shards_merge, smoke_command, smoke_reproduction


def test_multi_margin_loss_is_the_multiclass_hinge():
    """Appendix A's hinge loss: mean over rows of sum_{j != y} max(0, 1 - s_y + s_j) / C."""
    model = Classifier("mlp", input_size=2, num_classes=3, loss="multi_margin")
    logits = torch.tensor([[2.0, 1.5, -1.0], [0.0, 0.0, 3.0]])
    labels = torch.tensor([0, 1])
    expected = ((1 - 2.0 + 1.5) + 0.0) / 3 + ((1 - 0.0 + 0.0) + (1 - 0.0 + 3.0)) / 3
    torch.testing.assert_close(model.loss(logits, labels), torch.tensor(expected / 2))


def test_cnn_and_mlp_layers_and_traces():
    cnn = Classifier("two_digit_cnn", hidden_sizes=[64], num_classes=10)
    images = torch.rand(3, 1, 28, 56)
    assert cnn(images).shape == (3, 10)
    assert cnn.network.hidden0.in_features == 64 * 11 * 25  # conv 26x54, pool 13x27, conv 11x25
    traced = cnn.trace({"image": images})
    assert traced["hidden.0"].shape == (3, 64) and traced["prediction"].shape == (3,)
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


def test_x2_dependence_of_known_boundaries():
    x2, x1 = torch.meshgrid(GRID, GRID, indexing="ij")
    assert x2_dependence((x1 > 0).float()) == 0.0  # Y1 read from X1 alone: compositional
    assert x2_dependence(((x1 > 0) & (x2 < 0)).float()) == 1.0  # every column flips at X2 = 0
    half = (x1 > 0.5) | ((x1 > 0) & (x2 < 0))  # columns x1 in (0, 0.5] flip, the rest do not
    assert x2_dependence(half.float()) == pytest.approx(0.5)


def test_greater_claim_rule():
    assert greater_claim("images.gap_larger", [0.4] * 5, [0.1] * 5, "gap", 0.05).verdict == (
        "reproduced"
    )
    slight = greater_claim("images.gap_larger", [0.12, 0.13, 0.11], [0.1] * 3, "gap", 0.05)
    assert slight.verdict == "partially reproduced"
    assert greater_claim("images.gap_larger", [0.1] * 3, [0.2] * 3, "gap", 0.05).verdict == (
        "not reproduced"
    )
    noisy = greater_claim("scan.gap_larger", [0.9, 0.1, 0.9, 0.1], [0.3] * 4, "gap", 0.05)
    assert noisy.verdict == "partially reproduced"  # mean difference 0.2 < 2 SE


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """One smoke reproduction, shared by the tests: its folder, output and claims."""
    folder = tmp_path_factory.mktemp("paper3_smoke")
    output, claims = smoke_reproduction(3, folder)
    return folder, output, claims


def reproduction(*options) -> subprocess.CompletedProcess:
    return smoke_command(3, *options)


VARIANTS = [f"{e}_{s}" for e in ("scan", "toy_2d", "two_digit_images") for s in "AB"]


def test_smoke_reproduction_writes_report_claims_and_figures(smoke):
    tmp_path, output, claims = smoke
    for experiment in ("scan", "two_digit_images", "toy_2d"):
        for setting in "AB":
            assert output.count(f"] {experiment}_{setting} seed=") == 2
    assert "12 tasks, 2 at a time; 0 done before, 12 to run" in output
    assert set(claims) == {
        "images.faster_early", "images.gap_larger", "scan.faster_early", "scan.gap_larger",
        "toy.fails_on_test", "toy.depends_on_x2",
    }  # fmt: skip
    report = (tmp_path / "report" / "report.md").read_text()
    figures = ("fig3a_two_digit_images", "fig3b_scan", "fig3c_toy_2d", "fig4_toy_data",
               "fig5_toy_boundary_steps", "fig6_toy_boundary_seeds")  # fmt: skip
    for figure in figures:
        assert (tmp_path / "report" / "figures" / f"{figure}.png").stat().st_size > 1000
        assert f"figures/{figure}.png" in report
    assert "`smoke`" in report and "regenerated from the grammar" in report
    scan_run = tmp_path / "runs" / "paper3" / "scan_A" / "seed=0"
    assert (scan_run / "traces" / "test_sample" / "best.safetensors").is_file()


def test_measurements_beside_the_report_rebuild_it_alone(smoke):
    """Every run's measurements are copied beside the report, with the command that trained it
    (without the run root), its final accuracies and, for the toy, the grids the figures draw;
    from them alone the same `results.json` is rebuilt, nothing trained."""
    tmp_path, _, _ = smoke
    kept = tmp_path / "report" / "runs"
    measurements = sorted(p.relative_to(kept).as_posix() for p in kept.rglob("measurements.json"))
    assert measurements == [f"paper3/{v}/seed={s}/measurements.json" for v in VARIANTS
                            for s in (0, 1)]  # fmt: skip
    scan = json.loads((kept / "paper3" / "scan_B" / "seed=1" / "measurements.json").read_text())
    assert scan["command"] == [
        "--config", "experiments/configs/paper3/scan.yaml", "--seed_everything", "1",
        "--run.variant", "scan_B", "--trainer.max_steps", "6",
        "--trainer.enable_progress_bar", "false", "--data.setting", "B", "--data.data_seed", "1",
        "--data.eval_size", "40", "--trainer.val_check_interval", "2",
        "--data.steps_per_epoch", "3",
    ]  # fmt: skip
    assert len(scan["batch_accuracy"]["seq_acc"]) == 6 and scan["boundaries"] is None
    run = RunFolder(tmp_path / "runs" / "paper3" / "scan_B" / "seed=1")
    assert scan["final"]["test"] == run.test_accuracy("test", "seq_acc")
    # the toy's grids: every step of Figure 5 for setting A's first seed, the last elsewhere
    toy = {(s, seed): json.loads((kept / "paper3" / f"toy_2d_{s}" / f"seed={seed}" /
                                  "measurements.json").read_text())
           for s in "AB" for seed in (0, 1)}  # fmt: skip
    assert list(toy[("A", 0)]["boundaries"]["y1_probability"]) == ["0", "1", "2", "3", "4", "8",
                                                                    "16"]  # fmt: skip
    for key in (("A", 1), ("B", 0), ("B", 1)):
        assert list(toy[key]["boundaries"]["y1_probability"]) == ["16"]
    toy_run = RunFolder(tmp_path / "runs" / "paper3" / "toy_2d_A" / "seed=1")
    full = y1_probability(toy_run.model("last"), toy_run.state_dict("step=16"))
    kept_grid = np.array(toy[("A", 1)]["boundaries"]["y1_probability"]["16"])
    assert kept_grid.shape == (201, 201)
    np.testing.assert_allclose(kept_grid, full.numpy(), atol=5e-4 + 1e-7, rtol=0)
    assert toy[("A", 1)]["boundaries"]["x2_dependence"] == x2_dependence(full)
    # rebuilt from a run root holding nothing but the measurement files
    shutil.rmtree(tmp_path / "runs")
    done = reproduction("--runs", kept, "--reuse-runs", "--out", tmp_path / "rebuilt")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "12 tasks, 2 at a time; 12 done before, 0 to run" in done.stdout
    rebuilt = (tmp_path / "rebuilt" / "results.json").read_text()
    assert rebuilt == (tmp_path / "report" / "results.json").read_text()
    assert (
        "12 of the 12 were kept from an earlier invocation"
        in (tmp_path / "rebuilt" / "report.md").read_text()
    )
    assert not list(tmp_path.rglob("*.ckpt"))


def test_shards_trained_apart_merge_into_the_one_machine_report(smoke, tmp_path):
    """`--shard 1/2` and `--shard 2/2` in two run roots train each run once (every other run of
    the fixed list: here the seed-0 runs, then the seed-1 runs) and write no report; `--merge` of
    both writes the one-machine report, and without one of them stops naming a missing run."""
    single, _, _ = smoke
    for index in (1, 2):
        done = reproduction("--shard", f"{index}/2", "--runs", tmp_path / f"shard{index}",
                            "--out", tmp_path / f"report{index}")  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "6 tasks, 2 at a time; 0 done before, 6 to run" in done.stdout
        assert "--merge <each shard's run root>" in done.stdout
        assert not (tmp_path / f"report{index}").exists()
        trained = sorted(
            p.parent.relative_to(tmp_path / f"shard{index}").as_posix()
            for p in (tmp_path / f"shard{index}").rglob("measurements.json")
        )
        assert trained == [f"paper3/{v}/seed={index - 1}" for v in VARIANTS]
    assert_shards_merge(3, tmp_path, single, "paper3/scan_A/seed=1", 12)
