from datamodules.lookup_tables import LookupTableDataModule
from datamodules.rule_corpora import RuleCorpusDataModule
from datamodules.scan import ScanDataModule
from datamodules.token_positioning import TokenPositioningDataModule
from datamodules.toy_2d import Toy2DDataModule
from datamodules.two_digit_images import TwoDigitImagesDataModule

__all__ = [
    "LookupTableDataModule",
    "RuleCorpusDataModule",
    "ScanDataModule",
    "TokenPositioningDataModule",
    "Toy2DDataModule",
    "TwoDigitImagesDataModule",
]
