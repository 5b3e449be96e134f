"""Paper 1's data: the lookup-3bit ``sample1`` of ``i-machine-think/machine-tasks``.

``LookupTables/data/samples/sample1`` at the pinned commit. Every model behind paper 1's Tables
5-6 (``Kaleidophon/machine-zoo``, ``create_zoo.sh``) was trained on this one sample.
machine-tasks has no license file, so the suite does not ship it; :func:`resolve_sample1` finds
a copy, in this order:

1. the folder named by ``$RECURRENT_PROBES_SAMPLE1``;
2. the copy kept in the data cache (``$RECURRENT_PROBES_CACHE``, default
   ``~/.cache/recurrent-probes``), under ``machine-tasks-<commit>/`` + the path above;
3. a download of the files at the pinned commit from GitHub into that cache (not tried when
   ``$RECURRENT_PROBES_OFFLINE`` is set, as for a machine without a network).

Every file is checked against the SHA-256 recorded here (the blobs are the same from June 2018,
``LookupTables/lookup-3bit/samples/sample1``, to the pinned commit, where the folder is
``LookupTables/data/samples/sample1``). ``LookupTableDataModule(data_dir="sample1")`` reads the
files so found; a reproduction calls :func:`lookup_data` to fall back to generated tables, with a
notice, where none can be found.

Paper 1's reading of Figure 4 by the authors' gate data also reads three files of
``LookupTables/data/longer_compositions/sample1`` at the same commit (``LONGER_SHA256``, the
length-4 versions of sample1's test sets); :func:`resolve_longer` finds them the same three ways,
the first next to the ``$RECURRENT_PROBES_SAMPLE1`` folder, as in a clone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from datamodules.cache import ChecksumError, cache_dir, download_verified, sha256

REPOSITORY = "i-machine-think/machine-tasks"
COMMIT = "467a283a970fa74d34b581988f7fd7519da168f0"
SAMPLE1_PATH = "LookupTables/data/samples/sample1"
SAMPLE1 = "sample1"
"""The ``data_dir`` value that names this sample."""
TEST_SPLITS = ("heldout_inputs", "heldout_compositions", "heldout_tables", "new_compositions")
SPLITS = ("train", "validation", *TEST_SPLITS)
"""A lookup-table sample's splits, each in its file `<split>.tsv`; the generated tables' too."""
SAMPLE1_ENV = "RECURRENT_PROBES_SAMPLE1"
OFFLINE_ENV = "RECURRENT_PROBES_OFFLINE"
SAMPLE1_SHA256 = {
    "train.tsv": "9e27673af207ff46822bba8121c5a52739aabdc129dc0d3fdf885c993c698aee",
    "validation.tsv": "eec5f36b4c91fd3be4e1afd0e83880cbd87343ca9afb0a6acbf0271466db59b4",
    "heldout_inputs.tsv": "98b60a86e424c1f09c002618ecb79213a537afbab71c7759982a32789eb7ff04",
    "heldout_compositions.tsv": "747947cf13e4fa8cff4a9bc7761f2040a105b49f19b5c6243bbe6b7861e29a09",
    "heldout_tables.tsv": "6686119dad70088c74735c172e7768fdf2cad3e8d1e4e6a2438a67707f75c142",
    "new_compositions.tsv": "c3626dc590158f33b12b465690255cfc42f6b674c3bb1d4bb46a22577bea279e",
}
LONGER_PATH = "LookupTables/data/longer_compositions/sample1"
LONGER_SHA256 = {
    "heldout_tables4.csv": "b970a12b33e49d1a701be26398e603174646dfd06345b8e66975d6c3650bbebf",
    "heldout_compositions4.csv": "9bad8285e99832f1b513d140023234049f70e12d5135ea45fc62218e3ea15226",
    "new_compositions4.csv": "111ed92cd7d6c7f9dd0279d15f6322c0ca42cbc8d3b7e8d643e492e212b82c35",
}
"""The length-4 versions of sample1's heldout tables, heldout compositions and new compositions
(input and outputs, no attention column, no ``.`` ending the input)."""
SAMPLE1_RECORD = {
    "source": f"{REPOSITORY}/{SAMPLE1_PATH}",
    "commit": COMMIT,
    "sha256": SAMPLE1_SHA256,
}
"""What a run trained on sample1 records of its data (`data` in its measurements): a rebuild
matches on it, so the committed runs are recognised where sample1 cannot be had."""
DOWNLOAD_URL = f"https://raw.githubusercontent.com/{REPOSITORY}/{COMMIT}/{SAMPLE1_PATH}"
LONGER_URL = f"https://raw.githubusercontent.com/{REPOSITORY}/{COMMIT}/{LONGER_PATH}"
HOW_TO_GET = (
    f"set ${SAMPLE1_ENV} to the {SAMPLE1_PATH} folder of a clone of "
    f"https://github.com/{REPOSITORY} (git checkout {COMMIT[:7]}), or run once where "
    "raw.githubusercontent.com can be reached"
)
GENERATED_EFFECT = (
    "On the generated tables the baseline models generalise about three times better to "
    "heldout tables than on sample1 (measured: heldout-tables sequence accuracy .17 against "
    ".05, the paper .05; see the section 'How much the data matters')."
)


class Sample1Unavailable(FileNotFoundError):
    """No verified copy of sample1 was found or could be downloaded; the message says how."""


def cached_sample1(path: str = SAMPLE1_PATH) -> Path:
    """Where the downloaded copy of machine-tasks' folder `path` is kept."""
    return cache_dir() / f"machine-tasks-{COMMIT[:7]}" / path


def mismatched_files(folder: Path, digests: dict[str, str] | None = None) -> list[str]:
    """The files of `digests` (sample1's, ``SAMPLE1_SHA256``, by default) that are missing from
    `folder` or differ."""
    return [
        name
        for name, digest in (SAMPLE1_SHA256 if digests is None else digests).items()
        if not (folder / name).is_file() or sha256(folder / name) != digest
    ]


def cached_or_downloaded(name: str, path: str, digests: dict[str, str], url: str,
                         download: bool, how: str) -> tuple[Path, str]:  # fmt: skip
    """machine-tasks' folder `path` (`name` in messages; its files `digests`) from the data
    cache, else downloaded there from `url` (the folder at the pinned commit) if `download` and
    ``$RECURRENT_PROBES_OFFLINE`` is unset, and where it came from; :class:`Sample1Unavailable`
    saying `how` to get it otherwise."""
    cached = cached_sample1(path)
    missing = mismatched_files(cached, digests)
    if not missing:
        return cached, "the data cache"
    if not download or os.environ.get(OFFLINE_ENV):
        raise Sample1Unavailable(f"machine-tasks' {name} is not in {cached}: {how}.")
    try:
        for file in missing:
            download_verified(f"{url}/{file}", cached / file, digests[file])
    except OSError as error:
        raise Sample1Unavailable(
            f"machine-tasks' {name} could not be downloaded ({error}): {how}."
        ) from error
    return cached, "a download into the data cache"


def resolve_sample1(download: bool = True) -> tuple[Path, str]:
    """A folder holding sample1's six files, verified, and where it came from (downloaded there
    if `download` and ``$RECURRENT_PROBES_OFFLINE`` is unset).

    Raises :class:`Sample1Unavailable` (or :class:`~datamodules.cache.ChecksumError` for a
    download whose content differs) with the way to get the files."""
    named = os.environ.get(SAMPLE1_ENV)
    if named:
        folder = Path(named).expanduser()
        wrong = mismatched_files(folder)
        if wrong:
            raise ChecksumError(
                f"${SAMPLE1_ENV}={named}: {', '.join(wrong)} missing or not machine-tasks' "
                f"sample1 (commit {COMMIT[:7]}); point it at {SAMPLE1_PATH}, or pass another "
                "sample folder as --data.init_args.data_dir."
            )
        return folder, f"${SAMPLE1_ENV}"
    return cached_or_downloaded(SAMPLE1, SAMPLE1_PATH, SAMPLE1_SHA256, DOWNLOAD_URL, download,
                                HOW_TO_GET)  # fmt: skip


def resolve_longer(download: bool = True) -> tuple[Path, str]:
    """A folder holding ``LONGER_SHA256``'s files, verified, and where it came from: next to the
    ``$RECURRENT_PROBES_SAMPLE1`` folder as in a clone (``../../longer_compositions/sample1``),
    else the data cache, else a download there (as :func:`resolve_sample1`). A copy next to it
    that differs is a :class:`~datamodules.cache.ChecksumError`; none there, the cache is tried."""
    named = os.environ.get(SAMPLE1_ENV)
    if named:
        folder = Path(named).expanduser() / ".." / ".." / "longer_compositions" / "sample1"
        wrong = mismatched_files(folder, LONGER_SHA256)
        if not wrong:
            return folder, f"next to ${SAMPLE1_ENV}"
        if len(wrong) < len(LONGER_SHA256) or any((folder / name).exists() for name in wrong):
            raise ChecksumError(
                f"{folder}: {', '.join(wrong)} missing or not machine-tasks' {LONGER_PATH} (commit "
                f"{COMMIT[:7]}); check out {COMMIT[:7]} in that clone, or remove them to use the "
                "data cache."
            )
    how = (
        f"set ${SAMPLE1_ENV} to the {SAMPLE1_PATH} folder of a clone of https://github.com/"
        f"{REPOSITORY} (git checkout {COMMIT[:7]}), whose {LONGER_PATH} is read, or run once "
        "where raw.githubusercontent.com can be reached"
    )
    return cached_or_downloaded("longer compositions of sample1", LONGER_PATH, LONGER_SHA256,
                                LONGER_URL, download, how)  # fmt: skip


@dataclass(frozen=True)
class LookupData:
    """The data a paper-1 reproduction trains on: ``data_dir`` for every run's config (``sample1``
    or None for the generated tables), and one line for the report and the log."""

    data_dir: str | None
    notice: str
    unavailable: str = ""
    """Why sample1 could not be had (empty where it was)."""

    @property
    def is_paper_data(self) -> bool:
        return self.data_dir == SAMPLE1


def lookup_data(download: bool = True) -> LookupData:
    """sample1 where it can be had, else the generated tables with a notice saying so."""
    try:
        _, origin = resolve_sample1(download)
    except Sample1Unavailable as error:
        return LookupData(
            None,
            "**Not the paper's data.** machine-tasks' sample1 was not available "
            f"({error}), so the models trained on lookup tables generated by "
            f"`generate_lookup_tables(data_seed=0)`. {GENERATED_EFFECT}",
            str(error),
        )
    return LookupData(
        SAMPLE1,
        f"machine-tasks' lookup-3bit `sample1` ({REPOSITORY} at commit {COMMIT[:7]}, "
        f"`{SAMPLE1_PATH}`, every file's SHA-256 checked), read from {origin}.",
    )


def sample1_as_recorded(unavailable: str) -> LookupData:
    """sample1 where it cannot be had (`unavailable` says why, to the user: the notice, which a
    report prints, names no folder of this machine) but kept runs record it (`SAMPLE1_RECORD`):
    their commands name it, so they are matched and rebuilt, and nothing can be trained."""
    return LookupData(
        SAMPLE1,
        f"machine-tasks' lookup-3bit `sample1` ({REPOSITORY} at commit {COMMIT[:7]}, "
        f"`{SAMPLE1_PATH}`, every file's SHA-256) as the kept runs record it; not available "
        "where this report was built, so the report is built from their measurements and nothing "
        "is trained.",
        unavailable,
    )
