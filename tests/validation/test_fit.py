"""The per-precision fit (docs/sources.md#roof-calibration): each shipped efficiency table's
medians are the least-squares fit to its precision's fit anchors, the fit reproduces those
anchors inside their measured bands, and every anchor is reported with its role."""

from __future__ import annotations

import pytest

from mcengine.validation import fit, roofline
from mcengine.validation.roofline import CALIBRATION, KNOWN_MISSES

ANCHORS = (*CALIBRATION, *KNOWN_MISSES)


@pytest.fixture(scope="module", params=("bf16", "fp8"))
def fitted(request):
    return fit.fit_precision(request.param, ANCHORS)


def test_every_precision_has_fit_and_held_out_anchors():
    for precision in ("bf16", "fp8"):
        roles = {a.role for a in ANCHORS if a.precision == precision}
        assert roles == {"fit", "held-out"}
    assert {a.role for a in KNOWN_MISSES} == {"held-out"}  # no fit anchor is excused


def test_the_shipped_medians_are_the_refit(fitted):
    shipped = fit.shipped_medians(fitted.precision)
    assert abs(fitted.compute - shipped[0]) <= fit.FIT_TOLERANCE
    assert abs(fitted.memory - shipped[1]) <= fit.FIT_TOLERANCE


def test_the_refit_lands_every_fit_anchor_in_its_band(fitted):
    for a in ANCHORS:
        if a.precision == fitted.precision and a.role == "fit":
            assert a.low <= a.measured * (1 + fitted.errors[a.name]) <= a.high


def test_two_anchors_two_unknowns_are_met_exactly():
    """bf16 fits two medians to two anchors (TensorRT-LLM TP4 batch-1 ITL and TTFT): the
    least-squares solution is the exact one, 0.586 / 0.856 to 3 decimals."""
    bf16 = fit.fit_precision("bf16", ANCHORS)
    for a in ANCHORS:
        if a.precision == "bf16" and a.role == "fit":
            assert abs(bf16.errors[a.name]) < 1e-4
    assert (round(bf16.compute, 3), round(bf16.memory, 3)) == (0.586, 0.856)


def test_validate_reports_role_and_refit_error_per_anchor():
    checks = {c.name: c for c in roofline.checks()}
    for a in ANCHORS:
        c = checks[f"calibration: {a.name}"]
        assert c.detail.startswith(f"[{a.precision}, {a.role}] error at the refit ")
    assert checks["bf16 memory efficiency median: shipped vs refit on its fit anchors"].passed
