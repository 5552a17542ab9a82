"""The README's case study is the current code's output: README block = the committed
summary's rendering (fast), committed summary = a fresh run of the shipped study (slow)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("make_case_study", ROOT / "docs" / "case-study" / "make_case_study.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_case_study_is_the_committed_runs_rendering():
    cs = _script()
    assert cs.readme_block((ROOT / "README.md").read_text(encoding="utf-8")) == cs.render_block(cs.summary())


def test_the_check_can_fail(tmp_path):
    cs = _script()
    doc = cs.summary()
    name = next(iter(doc["scenarios"]))
    doc["scenarios"][name]["cost_per_mtok_usd"]["p50"] += 0.01
    assert cs.readme_block((ROOT / "README.md").read_text(encoding="utf-8")) != cs.render_block(doc)


#: The statistics compared between the committed run and a fresh one (provenance and
#: elapsed time are not numbers of the model).
NUMBERS = ("scenarios", "paired_all", "slo_missed_share", "trials", "seed")


@pytest.mark.slow
def test_committed_case_study_is_the_current_codes():
    import mcengine.api as mc

    cs = _script()
    committed = cs.summary()
    import json

    from mcengine.io import dumps

    doc = mc.run(trials=committed["trials"], seed=committed["seed"], keep_trials=False, figures=False).summary()
    fresh = json.loads(dumps(doc))  # as summary.json holds it
    for key in NUMBERS:
        assert fresh.get(key) == committed.get(key), f"{key} drifted: run python docs/case-study/make_case_study.py"
