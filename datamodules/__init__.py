"""One module per task: its data, generated or read from a path the user gives, as a Lightning
DataModule (paper 3's toy points also on their own, `toy_2d_points`, torch only).

The DataModules (the class paths the configs name, `datamodules.LookupTableDataModule`) are
imported from their modules when first used, so that reading one task's constants or points (a
report built from kept measurements) does not import every task, and Lightning with them."""

from storage import lazy_names

_TASKS = {
    "LookupTableDataModule": "lookup_tables", "RuleCorpusDataModule": "rule_corpora",
    "ScanDataModule": "scan", "TokenPositioningDataModule": "token_positioning",
    "Toy2DDataModule": "toy_2d", "TwoDigitImagesDataModule": "two_digit_images",
}  # fmt: skip
TASK_MODULES = tuple(f"datamodules.{module}" for module in _TASKS.values())
"""Every task's module (what a process that trains imports ahead: `experiments.engine.launch`)."""
__all__ = sorted(_TASKS)
__getattr__ = lazy_names("datamodules", dict(zip(_TASKS, TASK_MODULES, strict=True)))
