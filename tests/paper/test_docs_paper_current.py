"""docs/paper/ is the current code's paper study: a fresh `mcengine paper` at the committed
trials and seed gives the committed claims and frontier (regenerate with
`mcengine paper --out docs/paper --force`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The model's numbers in summary.json (provenance, elapsed time and file names are not).
NUMBERS = ("claims", "frontier", "trials", "seed", "quick")


@pytest.mark.slow
def test_committed_paper_study_is_the_current_codes():
    import mcengine.api as mc
    from mcengine.io import dumps

    committed = json.loads((ROOT / "docs" / "paper" / "summary.json").read_text(encoding="utf-8"))
    fresh = json.loads(dumps(mc.paper(trials=committed["trials"], seed=committed["seed"], quick=committed["quick"])))
    for key in NUMBERS:
        assert fresh.get(key) == committed.get(key), f"docs/paper/summary.json {key} drifted: run mcengine paper --out docs/paper --force"
