"""docs/model.md's calibration paragraph is the code's current fit (regenerate it with
``python docs/make_calibration.py``): the fitted medians of the shipped tables and every
anchor's error at them, by precision and role."""

from __future__ import annotations

from tests.docs_scripts import ROOT, docs_script


def _script():
    return docs_script("make_calibration")


def test_the_calibration_paragraph_is_the_codes():
    script = _script()
    assert script.PAGE.read_text(encoding="utf-8") == script.page_text(), "docs/model.md drifted: run python docs/make_calibration.py"


def test_the_paragraph_states_the_fitted_medians_and_no_stale_claim():
    text = _script().calibration_text()
    assert "**bf16** (medians: compute 0.59, memory 0.85, KV read 0.34)" in text
    assert "**fp8** (medians: compute 0.45, memory 0.62, KV read 0.53)" in text
    page = (ROOT / "docs" / "model.md").read_text(encoding="utf-8")
    assert "fitted on measured FP8 H100 runs" not in page and "27% fast" not in page
