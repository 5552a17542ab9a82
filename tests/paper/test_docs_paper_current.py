"""docs/paper/ is the current code's paper study: a fresh `mcengine paper` at the committed
trials and seed gives the committed claims and frontier (regenerate with
`mcengine paper --out docs/paper --force`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The model's numbers in summary.json (provenance, elapsed time and file names are not).
NUMBERS = ("claims", "verdict", "frontier", "trials", "seed", "quick")


@pytest.mark.slow
def test_committed_paper_study_is_the_current_codes():
    """The command itself, in a process of its own (as the docs were written), so no state
    an earlier test left in this process can enter the comparison."""
    committed = json.loads((ROOT / "docs" / "paper" / "summary.json").read_text(encoding="utf-8"))
    argv = [sys.executable, "-m", "mcengine", "paper", "--trials", str(committed["trials"]), "--seed", str(committed["seed"]),
            "--json", "--quiet", *(["--quick"] if committed["quick"] else [])]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=3600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    fresh = json.loads(done.stdout)
    for key in NUMBERS:
        assert fresh.get(key) == committed.get(key), f"docs/paper/summary.json {key} drifted: run mcengine paper --out docs/paper --force"
