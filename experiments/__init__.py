"""The reproductions: one engine (`engine/`), a plugin per study, the claims and their reports."""

from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
"""The repository's root: where `reports/` and the configs' relative paths are."""
