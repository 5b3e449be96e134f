"""The smoke reproductions the tests run: `python -m experiments.paperN --scale smoke`."""

import json
import os
import subprocess
import sys
from pathlib import Path


def smoke_reproduction(
    paper: int,
    folder: Path,
    timeout: int = 900,
    env: dict[str, str] | None = None,
    options: tuple[str, ...] = (),
) -> tuple[str, dict[str, dict]]:
    """Run paper `paper`'s smoke reproduction with its runs and report under `folder` (with `env`
    added to the environment, and `options`); return its output and its claims
    (`report/results.json`) by id, in their order."""
    done = subprocess.run(
        [sys.executable, "-m", f"experiments.paper{paper}", "--scale", "smoke",
         "--runs", str(folder / "runs"), "--out", str(folder / "report"), *options],
        capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    claims = json.loads((folder / "report" / "results.json").read_text())
    return done.stdout, {claim["id"]: claim for claim in claims}
