from datamodules.lookup_tables import LookupTableDataModule

__all__ = ["LookupTableDataModule"]
