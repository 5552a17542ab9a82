"""`mcengine validate`: every stage's cross-checks pass, and a check fails when it should."""

from __future__ import annotations

import math

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
    failed = [(c.name, c.expected, c.got, c.tolerance) for c in checks if not c.passed]
    assert not failed


@pytest.mark.parametrize("anchor", roofline.CALIBRATION, ids=lambda a: a.name)
def test_calibration_against_measured_h100(anchor):
    """With the shipped h100 efficiency defaults, each measured H100 FP8 result lands in
    its band (MLPerf offline 21,806-24,525 tok/s on 8 GPUs; NIM ITL 18.58 ms +-5% ...)."""
    assert anchor.low <= anchor.value() <= anchor.high


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
    assert firsts == ["fab", "reliability", "roofline", "sensitivity"]
