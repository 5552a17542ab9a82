"""The study tables of docs/case-study.md and README.md's headline verdict are the current
code's output: each block = its committed summary's rendering (fast), each committed
summary = a fresh run of the shipped study (slow)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("make_case_study", ROOT / "docs" / "case-study" / "make_case_study.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CS = _script()


@pytest.mark.parametrize("study", CS.STUDIES)
def test_page_block_is_the_committed_runs_rendering(study):
    assert CS.block(CS.PAGE.read_text(encoding="utf-8"), study) == CS.render_block(CS.summary(study))


def test_readme_headline_is_the_committed_case_studys_rendering():
    text = CS.README.read_text(encoding="utf-8")
    assert CS.block(text, CS.HEADLINE, "verdict") == CS.render_verdict(CS.summary(CS.HEADLINE))
    # the headline is the first screen: within the README's first 40 lines
    assert text.index(CS.markers(CS.HEADLINE, "verdict")[1]) < len("\n".join(text.splitlines()[:40]))
    assert not CS.stale({s: CS.summary(s) for s in CS.STUDIES})


def test_the_check_can_fail():
    docs = {s: CS.summary(s) for s in CS.STUDIES}
    name = next(iter(docs["case-study"]["scenarios"]))
    docs["case-study"]["scenarios"][name]["cost_per_mtok_usd"]["p50"] += 0.01
    assert CS.stale(docs) == ["docs/case-study.md case-study", "README.md case-study"]


def test_a_mix_block_shows_each_class():
    doc = CS.summary("mix-reasoning")
    block = CS.render_block(doc)
    for cls in doc["scenarios"]["h100"]["mix"]:
        assert f"instances serving {cls}" in block and f"  {cls} alone" in block


#: The statistics compared between a committed run and a fresh one (provenance and
#: elapsed time are not numbers of the model).
NUMBERS = ("scenarios", "paired_all", "slo_infeasible_share", "trials", "seed")


@pytest.mark.slow
@pytest.mark.parametrize("study", CS.STUDIES)
def test_committed_study_is_the_current_codes(study):
    import mcengine.api as mc
    from mcengine.io import dumps

    committed = CS.summary(study)
    doc = mc.run([study], trials=committed["trials"], seed=committed["seed"], keep_trials=False, figures=False).summary()
    fresh = json.loads(dumps(doc))  # as summary.json holds it
    for key in NUMBERS:
        assert fresh.get(key) == committed.get(key), f"{study}: {key} drifted: run python docs/case-study/make_case_study.py"
