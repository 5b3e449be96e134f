"""Two-digit MNIST images of paper 3, section 5.1, on a tiny fake MNIST whose pixels say which
image they are and its label."""

import pytest
import torch

from datamodules import TwoDigitImagesDataModule
from datamodules.mnist import IMAGE_MAGIC, LABEL_MAGIC


def fake_images(count: int, first_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Image i: label i % 10, pixel [0, 0] = its id (first_id + i), other pixels 10 * label."""
    labels = torch.arange(count) % 10
    images = (10 * labels).view(-1, 1, 1).repeat(1, 28, 28)
    images[:, 0, 0] = first_id + torch.arange(count)
    return images.to(torch.uint8), labels


def write_fake_mnist(folder, train, test) -> str:
    """The (images, labels) of `train` and `test` as the four MNIST IDX files in `folder`."""
    for prefix, (images, labels) in (("train", train), ("t10k", test)):
        for kind, tensor, magic in (
            ("images-idx3", images, IMAGE_MAGIC),
            ("labels-idx1", labels, LABEL_MAGIC),
        ):
            header = magic.to_bytes(4, "big") + b"".join(n.to_bytes(4, "big") for n in tensor.shape)
            (folder / f"{prefix}-{kind}-ubyte").write_bytes(
                header + tensor.to(torch.uint8).numpy().tobytes()
            )
    return str(folder)


@pytest.fixture(scope="module")
def fake_mnist_dir(tmp_path_factory):
    """100 training images (ids 0..99) and 50 test images (ids 100..149) as MNIST IDX files."""
    folder = tmp_path_factory.mktemp("fake_mnist")
    return write_fake_mnist(folder, fake_images(100, 0), fake_images(50, 100))


def datamodule(fake_mnist_dir, setting="A", **kwargs):
    settings = dict(train_pairs=2000, test_pairs=1000, eval_size=300) | kwargs
    data = TwoDigitImagesDataModule(data_dir=fake_mnist_dir, setting=setting, **settings)
    data.setup()
    return data


def decode(image: torch.Tensor) -> dict[str, torch.Tensor]:
    """Image ids and labels of the left and right halves of images [batch, 1, 28, 56]."""
    pixels = (image[:, 0] * 255).round().long()
    return {
        "left_id": pixels[:, 0, 0],
        "right_id": pixels[:, 0, 28],
        "left_label": pixels[:, 5, 5] // 10,
        "right_label": pixels[:, 5, 33] // 10,
    }


def whole_split(data, name):
    batches = list(data.split_dataloader(name))
    return {key: torch.cat([batch[key] for batch in batches]) for key in batches[0]}


@pytest.mark.parametrize("setting", ["A", "B"])
def test_training_pairs_follow_the_setting(fake_mnist_dir, setting):
    data = datamodule(fake_mnist_dir, setting)
    batch = whole_split(data, "train")
    shift = (batch["right_label"] - batch["label"]) % 10
    counts = torch.bincount(shift, minlength=10)
    if setting == "A":  # right digit Y or Y+1, about half each
        assert set(shift.tolist()) == {0, 1} and 900 < counts[0] < 1100
    else:  # right digit uniform on all ten labels
        assert (counts > 100).all()
    assert set(batch["label"].tolist()) == set(range(10))
    assert batch["index"].tolist() == list(range(2000))


@pytest.mark.parametrize("setting", ["A", "B"])
def test_test_pairs_never_repeat_the_training_right_digits(fake_mnist_dir, setting):
    data = datamodule(fake_mnist_dir, setting)
    batch = whole_split(data, "test")
    shift = (batch["right_label"] - batch["label"]) % 10
    assert set(shift.tolist()) == set(range(2, 10))  # never Y or Y+1
    decoded = decode(batch["image"])
    assert ((decoded["left_id"] >= 100) & (decoded["right_id"] >= 100)).all()  # test images only


@pytest.mark.parametrize("split", ["train", "test_sample"])
def test_images_are_the_indexed_mnist_images_side_by_side(fake_mnist_dir, split):
    data = datamodule(fake_mnist_dir, "B")
    batch = whole_split(data, split)
    assert batch["image"].shape == (len(batch["label"]), 1, 28, 56)
    assert batch["image"].dtype == torch.float32
    assert batch["image"].min() >= 0 and batch["image"].max() <= 1
    decoded = decode(batch["image"])
    assert torch.equal(decoded["left_label"], batch["label"])
    assert torch.equal(decoded["right_label"], batch["right_label"])
    pairs = data.datasets[split].columns
    offset = 100 if split.startswith("test") else 0
    assert torch.equal(decoded["left_id"], pairs["left_index"] + offset)
    assert torch.equal(decoded["right_id"], pairs["right_index"] + offset)


def test_splits_sizes_and_loaders(fake_mnist_dir):
    data = datamodule(fake_mnist_dir, batch_size=16, steps_per_epoch=7)
    assert data.val_splits == ("train_sample", "test_sample")
    assert data.test_splits == ("train", "test")
    assert data.num_classes == 10
    assert data.data_source == f"MNIST IDX files from {fake_mnist_dir}"
    sizes = {
        name: len(data.datasets[name]) for name in ("train_sample", "test_sample", "train", "test")
    }
    assert sizes == {"train_sample": 300, "test_sample": 300, "train": 2000, "test": 1000}
    sample, full = whole_split(data, "train_sample"), whole_split(data, "train")
    assert torch.equal(sample["image"], full["image"][:300])  # the first eval_size pairs
    assert [len(loader.dataset) for loader in data.val_dataloader()] == [300, 300]
    assert [len(loader.dataset) for loader in data.test_dataloader()] == [2000, 1000]
    assert next(iter(data.split_dataloader("test")))["label"].shape == (data.eval_batch_size,)
    assert next(iter(data.split_dataloader("test", batch_size=8)))["label"].shape == (8,)
    batches = list(data.train_dataloader())
    assert len(batches) == 7
    assert all(b["image"].shape == (16, 1, 28, 56) and b["label"].shape == (16,) for b in batches)
    assert set(batches[0]) == {"image", "label", "right_label", "index"}
    with pytest.raises(ValueError, match="valid splits: train, test, train_sample, test_sample"):
        data.split_dataloader("validation")


def test_pairs_are_deterministic_for_a_data_seed(fake_mnist_dir):
    first, again = datamodule(fake_mnist_dir), datamodule(fake_mnist_dir)
    other_seed, setting_b = datamodule(fake_mnist_dir, data_seed=1), datamodule(fake_mnist_dir, "B")
    for name in ("train", "test"):
        for key in ("left_index", "right_index", "label", "right_label"):
            assert torch.equal(first.datasets[name].columns[key], again.datasets[name].columns[key])
    assert not torch.equal(
        first.datasets["train"].columns["left_index"],
        other_seed.datasets["train"].columns["left_index"],
    )
    # Both settings share the test pairs and the left digits of the training pairs.
    assert torch.equal(
        first.datasets["test"].columns["right_index"],
        setting_b.datasets["test"].columns["right_index"],
    )
    assert torch.equal(
        first.datasets["train"].columns["left_index"],
        setting_b.datasets["train"].columns["left_index"],
    )
    pools = [datamodule(fake_mnist_dir, training_batches="from_pool") for _ in range(2)]
    draws = [torch.cat([b["index"] for b in d.train_dataloader()]) for d in pools]
    assert torch.equal(*draws)


def training_batches(data, epoch: int = 0) -> list[dict[str, torch.Tensor]]:
    loader = data.train_dataloader()
    loader.sampler.set_epoch(epoch)  # as Lightning does before every epoch
    return list(loader)


@pytest.mark.parametrize("setting", ["A", "B"])
def test_fresh_batches_are_new_pairs_every_step_of_the_setting(fake_mnist_dir, setting):
    """As the authors' mnist.py (lines 288-289): every step draws its own pairs from the
    training images, the right digit as the setting says; none is a pair of the fixed pool the
    model is evaluated on."""
    data = datamodule(fake_mnist_dir, setting, batch_size=64, steps_per_epoch=30)
    batches = training_batches(data)
    assert len(batches) == 30 and all(b["image"].shape == (64, 1, 28, 56) for b in batches)
    assert [b["index"].tolist() for b in batches[:2]] == [list(range(64)), list(range(64, 128))]
    decoded = [decode(b["image"]) for b in batches]
    assert not torch.equal(decoded[0]["left_id"], decoded[1]["left_id"])
    left_ids = torch.cat([d["left_id"] for d in decoded])
    assert left_ids.max() < 100 and len(left_ids.unique()) == 100  # training images, all of them
    for batch, halves in zip(batches, decoded, strict=True):
        assert torch.equal(halves["left_label"], batch["label"])
        assert torch.equal(halves["right_label"], batch["right_label"])
    shift = torch.cat([(b["right_label"] - b["label"]) % 10 for b in batches])
    assert set(shift.tolist()) == ({0, 1} if setting == "A" else set(range(10)))
    pool = data.datasets["train"].columns
    assert not torch.equal(decoded[0]["left_id"], pool["left_index"][:64])


def test_fresh_batches_repeat_for_a_data_seed_and_continue_over_epochs(fake_mnist_dir):
    """The batch of step s depends on (data_seed, s) alone: the same for another module of the
    same seed, another for another seed, and epoch 1 starts at step `steps_per_epoch` (so a fit
    resumed at an epoch boundary draws what an uninterrupted one does)."""
    first, again = (datamodule(fake_mnist_dir, batch_size=8, steps_per_epoch=4) for _ in "12")
    other_seed = datamodule(fake_mnist_dir, batch_size=8, steps_per_epoch=4, data_seed=1)
    for one, other in zip(training_batches(first), training_batches(again), strict=True):
        assert torch.equal(one["image"], other["image"])
        assert torch.equal(one["index"], other["index"])
    assert not torch.equal(training_batches(first)[0]["image"],
                           training_batches(other_seed)[0]["image"])  # fmt: skip
    longer = training_batches(datamodule(fake_mnist_dir, batch_size=8, steps_per_epoch=8))
    second_epoch = training_batches(first, epoch=1)
    assert [b["index"][0].item() for b in second_epoch] == [32, 40, 48, 56]
    for resumed, straight in zip(second_epoch, longer[4:], strict=True):
        assert torch.equal(resumed["image"], straight["image"])


def test_unknown_training_batches_are_refused():
    with pytest.raises(ValueError, match="unknown training_batches 'pool'; valid: 'fresh'"):
        TwoDigitImagesDataModule(training_batches="pool")


def test_mnist_without_test_images_is_one_error_naming_the_files(tmp_path):
    """A folder whose t10k files hold 0 images: one error naming them, not an empty test set."""
    data_dir = write_fake_mnist(tmp_path, fake_images(20, 0), fake_images(0, 0))
    data = TwoDigitImagesDataModule(data_dir=data_dir, train_pairs=10, test_pairs=10)
    with pytest.raises(ValueError) as info:
        data.setup()
    assert str(info.value).startswith(
        f"{tmp_path / 't10k-images-idx3-ubyte'} and t10k-labels-idx1-ubyte: no images"
    )


def test_unknown_setting_is_refused():
    with pytest.raises(ValueError, match="unknown setting 'C'"):
        TwoDigitImagesDataModule(setting="C")
