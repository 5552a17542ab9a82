"""docs/facility.md's table is the current code's output: the page's block = the
committed facility run's rendering (fast); the committed run = a fresh run (slow)."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]

FD = SimpleNamespace(**runpy.run_path(str(ROOT / "docs" / "facility" / "make_facility.py")))


def test_page_block_is_the_committed_runs_rendering():
    assert FD.page_block(FD.PAGE.read_text(encoding="utf-8")) == FD.rendered()


def test_the_table_shows_the_new_cost_lines_and_both_verdicts():
    block = FD.rendered()
    for label in ("switch tiers", "facility (power, racks)", "cooling", "floor", "cost of capital", "case study: ratio", "tiers", "switch ports", "racks"):
        assert label in block


@pytest.mark.slow
def test_committed_facility_run_is_the_current_codes():
    import mcengine.api as mc
    from mcengine.io import dumps

    committed = FD.summary(FD.HERE / FD.STUDY)
    doc = mc.run([FD.STUDY], trials=committed["trials"], seed=committed["seed"], keep_trials=False, figures=False).summary()
    fresh = json.loads(dumps(doc))
    for key in ("scenarios", "paired_all", "slo_infeasible_share", "trials", "seed"):
        assert fresh.get(key) == committed.get(key), f"{key} drifted: run python docs/facility/make_facility.py"
