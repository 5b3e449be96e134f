"""Paper 1's findings and the rules registered for its claims (`reports/paper1/preregistration.md`),
checked on hand-made values with known answers and on the committed report's claim ids."""

import json
from pathlib import Path

from experiments.findings import with_findings
from experiments.paper1.findings import FINDINGS
from experiments.paper1.reproduce import STUDY
from experiments.report import Claim

REPORT = Path(__file__).parents[1] / "reports" / "paper1"
FACTS = {
    *(f"footnote1.{variant}_lstm.{split}" for variant in ("baseline", "guided")
      for split in ("heldout_compositions", "heldout_inputs", "heldout_tables",
                    "new_compositions")),
    "fig2.threshold_is_top1pct.encoder", "fig2.threshold_is_top1pct.decoder",
    "sec4_1.majority_baseline", "sec5_2.units_kept",
}  # fmt: skip
"""The committed claims that are facts about the data or the setup, not the paper's findings."""


def committed_claims() -> list[Claim]:
    return [Claim.from_json(r) for r in json.loads((REPORT / "results.json").read_text())]


def test_every_finding_names_committed_claims_and_only_the_facts_stay_unmarked():
    marked = with_findings(committed_claims(), FINDINGS)  # a finding naming none is refused
    assert {c.id for c in marked if c.finding is None} == FACTS
    readings = {(c.finding, c.reading) for c in marked if c.reading is not None}
    assert readings == {("tables5_6", "text selection")}
    assert STUDY.findings == FINDINGS
    assert 8 <= len(FINDINGS) <= 16 and len({f.id for f in FINDINGS}) == len(FINDINGS)
