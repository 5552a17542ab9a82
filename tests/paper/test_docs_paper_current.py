"""docs/paper/ is the current code's paper study: a fresh quick study on one thread gives the
numbers of docs/paper/quick.json (written on two threads, so the thread count is checked
too), and quick.json's fingerprint is the committed full study's, so the two are current
together (regenerate both with `python docs/make_paper.py`)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("make_paper", ROOT / "docs" / "make_paper.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MP = _script()


def test_quick_json_fingerprints_the_committed_full_study():
    stored = json.loads(MP.QUICK.read_text(encoding="utf-8"))
    assert stored["full_sha256"] == MP.fingerprint(MP.committed_full()), "docs/paper/summary.json is not the study quick.json was written with: run python docs/make_paper.py"
    assert stored["numbers"]["quick"] and stored["numbers"]["trials"] == MP.QUICK_TRIALS and stored["numbers"]["seed"] == MP.SEED


def test_the_full_study_records_the_make_scripts_command():
    """docs/paper/summary.json records the command docs/make_paper.py ran, its --out relative
    to the checkout: no path of the machine that regenerated it."""
    assert MP.committed_full()["provenance"]["command_line"] == ["mcengine", *MP.FULL]
    assert MP.FULL[MP.FULL.index("--out") + 1] == "docs/paper"


def test_a_changed_full_study_changes_its_fingerprint():
    doc = MP.committed_full()
    before = MP.fingerprint(doc)
    doc["claims"][0]["number"] += 1
    assert MP.fingerprint(doc) != before
    doc["elapsed_s"] = -1.0  # not one of the model's numbers
    doc["claims"][0]["number"] -= 1
    assert MP.fingerprint(doc) == before


@pytest.mark.slow
def test_committed_quick_study_is_the_current_codes_on_one_thread():
    """The command itself, in a process of its own (as the docs were written), so no state
    an earlier test left in this process can enter the comparison."""
    stored = json.loads(MP.QUICK.read_text(encoding="utf-8"))["numbers"]
    fresh = MP.numbers(MP.quick_study(threads=1))
    for key in MP.NUMBERS:
        assert fresh[key] == stored[key], f"docs/paper {key} drifted: run python docs/make_paper.py"
