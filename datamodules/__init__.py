from datamodules.lookup_tables import LookupTableDataModule
from datamodules.rule_corpora import RuleCorpusDataModule

__all__ = ["LookupTableDataModule", "RuleCorpusDataModule"]
