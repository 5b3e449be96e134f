"""The suite's data cache (``$RECURRENT_PROBES_CACHE``, default ``~/.cache/recurrent-probes``)
and downloads into it that are checked against recorded SHA-256 checksums.

Written by hand: ``torchvision.datasets.utils.download_url`` does the same with MD5, but
torchvision stays optional, and its downloads are not written atomically.
"""

from __future__ import annotations

import hashlib
import os
import urllib.request
from pathlib import Path

from storage.files import write_atomic

DOWNLOAD_TIMEOUT_S = 30


def cache_dir() -> Path:
    """``$RECURRENT_PROBES_CACHE``, or ``~/.cache/recurrent-probes``."""
    folder = os.environ.get("RECURRENT_PROBES_CACHE") or "~/.cache/recurrent-probes"
    return Path(folder).expanduser()


def sha256(path: str | os.PathLike) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class ChecksumError(ValueError):
    """A file's content is not the one recorded; the message names the file and both digests."""


def download_verified(url: str, path: Path, expected_sha256: str) -> Path:
    """Download `url` to `path` (a temporary file, renamed once its SHA-256 is `expected_sha256`).

    Raises `OSError` when the network cannot be reached and `ChecksumError` when the content
    differs; neither leaves a file behind."""
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:
        content = response.read()
    digest = hashlib.sha256(content).hexdigest()
    if digest != expected_sha256:
        raise ChecksumError(
            f"{url} has SHA-256 {digest}, not the recorded {expected_sha256}: the file changed "
            "upstream or in transit; nothing was kept."
        )
    return write_atomic(path, lambda temporary: Path(temporary).write_bytes(content))
