"""`python -m experiments.paper1 --scale smoke`: the whole reproduction pipeline in a minute.

Tiny models for one short epoch: the numbers mean nothing, the files must all be there.
"""

import json
import subprocess
import sys


def test_smoke_reproduction_writes_report_claims_and_figure(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "experiments.paper1", "--scale", "smoke",
         "--runs", str(tmp_path / "runs"), "--out", str(tmp_path / "report")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("] baseline seed=") == 5
    assert done.stdout.count("] guided seed=") == 5
    claims = json.loads((tmp_path / "report" / "results.json").read_text())
    ids = {claim["id"] for claim in claims}
    for split in ("heldout_compositions", "heldout_inputs", "heldout_tables", "new_compositions"):
        assert f"table5.{split}" in ids and f"table6.{split}" in ids
    assert all(c["verdict"] in ("reproduced", "partially reproduced", "not reproduced")
               for c in claims)  # fmt: skip
    report = (tmp_path / "report" / "report.md").read_text()
    assert "Scale:** `smoke`" in report
    assert (tmp_path / "report" / "figures" / "tables5_6.png").stat().st_size > 10_000
