"""docs/load.md's measured section is the current code's output: its blocks (the measured
tables, the length spread's "What it moves") = the rendering of the committed summaries of
docs/load/ (fast), each committed summary = a fresh run of
the ``load-diurnal`` study at its settings (slow)."""

from __future__ import annotations

import json

import pytest

from tests.docs_scripts import docs_script, drifted

LT = docs_script("load/make_load_tables")


def test_page_block_is_the_committed_summaries_rendering():
    assert LT.page_block(LT.PAGE.read_text(encoding="utf-8")) == LT.rendered()
    assert LT.main(["--check"]) == 0


def test_paper_block_is_the_committed_quick_studys_claims_under_load():
    """The paper block quotes claims 3 and 6 under load from docs/paper/quick.json, and a
    changed figure there gives another block."""
    quick = json.loads(LT.PAPER_QUICK.read_text(encoding="utf-8"))
    page = LT.page_block(LT.PAGE.read_text(encoding="utf-8"), LT.PAPER_BEGIN, LT.PAPER_END)
    assert page == LT.render_paper(quick) and page.count("\n") == len(LT.PAPER_CLAIMS) - 1
    fleet = next(c for c in quick["numbers"]["claims"] if c["key"] == "fleet")["shipped"]["under_load"]
    fleet["text"] = fleet["text"].replace("x", "0x")
    assert LT.render_paper(quick) != page


def test_the_length_spread_paragraph_is_the_committed_runs_rendering():
    """docs/load.md#length-spread's "What it moves" is rendered from the committed spread run
    and the mean lengths' run, and a changed figure in either gives another paragraph."""
    page = LT.page_block(LT.PAGE.read_text(encoding="utf-8"), LT.SPREAD_BEGIN, LT.SPREAD_END)
    assert page == LT.rendered_spread() and page.startswith("**What it moves** (`mcengine run load-diurnal --trials 2048 --seed 0 --set")
    fleet, _, spread = (LT.summary(name) for name, _ in LT.RUNS)
    spread["scenarios"]["lite-h100"]["slo_met"]["mean"] -= 1.0 / spread["trials"]
    assert LT.render_spread(spread, fleet) != page
    spread["scenarios"]["lite-h100"]["slo_met"]["mean"] += 1.0 / spread["trials"]
    fleet["scenarios"]["h100"]["load"]["fleet_instances"]["p50"] += 1.0
    assert LT.render_spread(spread, fleet) != page


def test_committed_summaries_are_the_runs_settings():
    """Each committed run is the study at the script's trials and seed; the fixed run's
    every trial serves on 128 instances, the others' on the fleet they buy."""
    fleet, fixed, spread = (LT.summary(name) for name, _ in LT.RUNS)
    assert all(d["trials"] == LT.TRIALS and d["seed"] == LT.SEED and d["scenario"] == LT.STUDY for d in (fleet, fixed, spread))
    for name in LT.DESIGNS:
        assert fixed["scenarios"][name]["load"]["instances"]["min"] == fixed["scenarios"][name]["load"]["instances"]["max"] == 128
        for doc in (fleet, spread):
            assert doc["scenarios"][name]["load"]["instances"] == doc["scenarios"][name]["load"]["fleet_instances"]


def test_the_check_can_fail():
    """A perturbed summary gives another block: the fixed clusters' cost, and a paired ratio."""
    fleet, fixed, _ = (LT.summary(name) for name, _ in LT.RUNS)
    saturated = LT.CS.summary(LT.CS.HEADLINE)
    page = LT.page_block(LT.PAGE.read_text(encoding="utf-8"))
    cost = fixed["scenarios"]["lite-h100"][LT.COST]
    cost["p50"] += 0.01
    assert f"${cost['p50']:.3f}" in LT.render(fleet, fixed, saturated) != page
    cost["p50"] -= 0.01
    fleet["paired_all"]["lite-h100-2x / h100"][LT.COST]["p_b_below_a"] += 0.5
    assert LT.render(fleet, fixed, saturated) != page


@pytest.mark.slow
@pytest.mark.parametrize("name,overrides", LT.RUNS)
def test_committed_summary_is_the_current_codes(name, overrides):
    assert not (keys := drifted(LT.summary(name), LT.run(overrides))), f"docs/load/{name}: {keys} drifted: run python docs/load/make_load_tables.py"
