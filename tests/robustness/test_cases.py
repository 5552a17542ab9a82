"""Every robustness case (tests/robustness/cases.py) keeps the contract as a real
process: its exit status, a message naming the input, no traceback, nothing written
outside --out, within the time budget."""

from __future__ import annotations

import pytest

from .cases import CASES, problems, run_case

pytestmark = pytest.mark.slow  # real processes; some run a few thousand trials first


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_keeps_the_contract(case, tmp_path):
    got = run_case(case, tmp_path / "case")
    assert problems(case, got) == [], got.stderr[-2000:]
