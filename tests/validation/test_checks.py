"""`mcengine validate`: every stage's cross-checks pass, and a check fails when it should."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from mcengine import validation
from mcengine.validation import fab, reliability, roofline, sensitivity
from mcengine.validation.check import Check, mc_check


@pytest.mark.parametrize(("module", "at_least"), [(fab, 8), (reliability, 10), (roofline, 15), (sensitivity, 8)],
                         ids=["fab", "reliability", "roofline", "sensitivity"])
def test_stage_checks_pass(module, at_least):
    checks = module.checks()
    assert len(checks) >= at_least
    failed = [(c.name, c.expected, c.got, c.tolerance) for c in checks if c.status == "FAIL"]
    assert not failed


@pytest.mark.parametrize("anchor", roofline.CALIBRATION, ids=lambda a: a.name)
def test_calibration_against_measured_h100(anchor):
    """With the shipped h100 efficiency defaults, each measured H100 result lands in its
    band (MLPerf offline 21,806-24,525 tok/s on 8 GPUs; NIM ITL 18.58 ms +-5%; TensorRT-LLM
    bf16 TP4 offline 2,474 tok/s +-10% ...)."""
    assert not anchor.known_miss
    assert anchor.low <= anchor.value() <= anchor.high


@pytest.mark.parametrize("anchor", roofline.KNOWN_MISSES, ids=lambda a: a.name)
def test_known_misses_miss_by_the_amount_they_state(anchor):
    """docs/sources.md#roof-h100-bf16: the bf16 TP4 ITL (14.69 ms measured) and TTFT
    (147.6 ms) are modelled 32% and 25% high, the continuous-serving offline throughput
    (2,474 tok/s) 27% high. The stated percentage is the model's: once
    the model lands in the band (or drifts) this fails, and the row is promoted or restated."""
    middle = (anchor.low + anchor.high) / 2
    value = anchor.value()
    assert not anchor.low <= value <= anchor.high
    stated = int(re.match(r"([+-]\d+)%", anchor.known_miss).group(1))
    assert round(100 * (value / middle - 1)) == stated


def test_roofline_reports_the_known_misses_without_failing():
    checks = {c.name: c for c in roofline.checks()}
    for anchor in roofline.KNOWN_MISSES:
        c = checks[f"calibration: {anchor.name}"]
        assert c.status == "known miss" and c.known_miss == anchor.known_miss and not c.passed


def test_a_known_miss_is_reported_but_not_required(monkeypatch):
    from mcengine import api

    ok, miss, bad = Check("s", "ok", 1.0, 1.0, 0.1), Check("s", "miss", 1.0, 2.0, 0.1, known_miss="why"), Check("s", "bad", 1.0, 2.0, 0.1)
    assert (ok.status, miss.status, bad.status) == ("pass", "known miss", "FAIL")
    assert Check("s", "nan", 1.0, math.nan, 0.1, known_miss="why").status == "FAIL"  # a NaN is never excused
    assert Check("s", "in", 1.0, 1.05, 0.1, known_miss="why").status == "pass"
    monkeypatch.setattr(api, "validate", lambda: [ok, miss])
    doc = api.validation_report()
    assert doc["passed"] and [c["status"] for c in doc["checks"]] == ["pass", "known miss"]
    monkeypatch.setattr(api, "validate", lambda: [ok, miss, bad])
    assert not api.validation_report()["passed"]


def test_a_check_fails_outside_its_tolerance_and_on_nan():
    assert Check("s", "n", 1.0, 1.4, 0.5).passed
    assert not Check("s", "n", 1.0, 1.6, 0.5).passed
    assert not Check("s", "n", 1.0, math.nan, math.inf).passed


def test_mc_check_tolerance_is_four_standard_errors():
    sample = np.array([1.0, 2.0, 3.0, 4.0])
    c = mc_check("fab", "x", sample, 2.5, "detail", "wafers")
    assert c.got == 2.5
    assert c.tolerance == pytest.approx(4 * sample.std(ddof=1) / 2)
    assert "4 wafers" in c.detail


def test_all_checks_lists_every_stage_in_order():
    stages = [c.stage for c in validation.all_checks()]
    firsts = [s for i, s in enumerate(stages) if i == 0 or stages[i - 1] != s]
    assert firsts == ["fab", "reliability", "roofline", "training", "sensitivity"]
