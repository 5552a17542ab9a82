"""The load models' compiled root solves (mcengine/kernels/queueing.py) against closed forms
and scipy's root finder."""

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from mcengine.analytic import queueing as qu
from mcengine.kernels import queueing as kq


def quantiles(a, b, g, burst, tail):
    a, b, g, burst, tail = (np.ascontiguousarray(x, float) for x in np.broadcast_arrays(*(np.atleast_1d(x) for x in (a, b, g, burst, tail))))
    return kq.hypoexponential_quantiles(a * g, np.maximum(b * g, 1e-300), burst, a, b, tail, 50.0 * (g * (a + b) + burst),
                                        qu.ROOT_STEPS, qu.ROOT_TOLERANCE)


def test_hypoexponential_quantile_closed_forms():
    """One exponential of mean ``s``: ``s ln(1 / tail)``; two of equal mean ``s`` (``b = 0``
    and a burst of mean ``a g``): ``(1 + x) e^(-x) = tail`` at ``x = t / s``; ``a R + b A``:
    ``(a e^(-t/(a g)) - b e^(-t/(b g))) / (a - b) = tail`` (brentq), and with a burst of
    its own mean, its three-term survival."""
    tail = np.array([0.5, 0.1, 0.01, 1e-3, 1e-6])
    np.testing.assert_allclose(quantiles(1.5, 0.0, 0.2, 0.0, tail), 0.3 * np.log(1.0 / tail), rtol=1e-13)
    for level, got in zip(tail, quantiles(1.0, 0.0, 0.2, 0.2, tail)):
        assert got == pytest.approx(0.2 * brentq(lambda x: (1.0 + x) * math.exp(-x) - level, 0.0, 100.0, xtol=1e-16), rel=1e-12)
    a, b, g = 1.6, 0.6, 0.05
    for level, got in zip(tail, quantiles(a, b, g, 0.0, tail)):
        root = brentq(lambda t: (a * math.exp(-t / (a * g)) - b * math.exp(-t / (b * g))) / (a - b) - level, 0.0, 10.0, xtol=1e-16)
        assert got == pytest.approx(root, rel=1e-12)
    m = 0.02

    def plus(s, t):
        return (s * math.exp(-t / s) - m * math.exp(-t / m)) / (s - m)

    for level, got in zip(tail, quantiles(a, b, g, m, tail)):
        root = brentq(lambda t: (a * plus(a * g, t) - b * plus(b * g, t)) / (a - b) - level, 0.0, 10.0, xtol=1e-16)
        assert got == pytest.approx(root, rel=1e-12)


def waits(lam, cv2, g, p, span, floor):
    flat = [np.ascontiguousarray(x, float).ravel() for x in np.broadcast_arrays(lam, cv2, g, p, span, floor)]
    return kq.self_consistent_waits(*flat, qu.ROOT_STEPS, qu.WAIT_TOLERANCE, qu.SMOOTH_ARRIVAL_CV2)


def test_self_consistent_wait_limits_and_each_trial_its_own():
    """No arrivals: the gap (or the floor); full passes not outrunning the arrivals: ``inf``;
    one server (a pass ``T = g``: every wait a pass or more, ends as regular as the passes)
    with Poisson arrivals and one prompt a pass: M/D/1's queue-length decay ``z = 1 / s``,
    ``s = e^(rho (s - 1))`` (``rho = lambda g``), ``W = g / (1 - z)`` (to 1e-11: the index
    of dispersion floored at 1e-12 puts the wait 7.5e-13 of itself off a 50-digit root at
    this load, at most 9e-13 at loads 0.1-0.99); a floor above the
    fixed point's wait is the answer; and a trial's wait is the same bits alone as among
    others."""
    assert waits(0.0, 1.0, 0.1, 4.0, 0.8, 0.0)[0] == 0.1
    assert waits(0.0, 1.0, 0.1, 4.0, 0.8, 0.3)[0] == 0.3
    assert waits(80.0, 1.0, 0.1, 8.0, 0.8, 0.0)[0] == np.inf
    rho = 0.8
    z = 1.0 / brentq(lambda x: math.exp(rho * (x - 1.0)) - x, 1.0 + 1e-9, 10.0, xtol=1e-15)
    assert waits(rho / 0.1, 1.0, 0.1, 1.0, 0.1, 0.0)[0] == pytest.approx(0.1 / (1.0 - z), rel=1e-11)
    wait = waits(rho / 0.1, 1.0, 0.1, 1.0, 0.1, 0.0)[0]
    assert waits(rho / 0.1, 1.0, 0.1, 1.0, 0.1, 1.01 * wait)[0] == 1.01 * wait
    lam, cv2, p, span = np.array([1.0, 50.0, 79.0, 0.0, 9.0]), np.array([4.0, 1.0, 0.0, 1.0, 0.25]), 8.0, np.array([0.8, 0.8, 1.6, 0.8, 0.1])
    got = waits(lam, cv2, 0.1, p, span, 0.12)
    for i in range(lam.size):
        assert waits(lam[i], cv2[i], 0.1, p, span[i], 0.12)[0] == got[i]


def test_self_consistent_wait_below_the_heavy_traffic_root():
    """Smooth arrivals with ``P d < 1`` (``lambda`` 19.838/s, arrival CV 0.0912, ``g = T`` =
    0.1 s, ``P = 2``, the index of dispersion floored at 1e-12): the heavy-traffic root ``u``
    lies below the root (``H(u) < 0``), and with it the kernel's first step (the index there
    floored either way); its wait is the root of ``H`` by brentq (to 1e-12: its tolerance is 1e-13 of ``1 - z``) and the nested
    solve's (:func:`tests.analytic.wait_reference.nested_wait`, to 1e-11: its own
    tolerance on the index of dispersion is 1e-12)."""
    from tests.analytic.wait_reference import nested_wait

    lam, cv, g, p = 19.838, 0.0912, 0.1, 2.0
    v = cv * cv

    def residual(z):  # H(z) at the floored index of dispersion
        d = max(1.0 - g / (-math.expm1(p * math.log(z)) * g), 1e-12)
        return z - 1.0 - math.expm1(-math.log1p(-math.expm1(p * d * math.log(z)) / (g * d) / lam * v) / v)

    k = p / (lam * g)
    u = 1.0 - 2.0 * (k - 1.0) / ((1.0 + v) * k * k + k * (p * 1e-12 - 1.0))
    assert 0.0 < u < 1.0 and residual(u) < 0.0
    root = brentq(residual, u, 1.0 - 1e-9, xtol=1e-16, rtol=1e-15)
    assert root > 5.0 * u
    wait = waits(lam, v, g, p, g, 0.0)[0]
    assert wait == pytest.approx(g / (1.0 - root ** p), rel=1e-12)
    assert wait == pytest.approx(nested_wait(*(np.array([x]) for x in (lam, cv, g, p, g, 0.0)))[0], rel=1e-11)


def test_self_consistent_wait_with_no_gap_is_the_floor():
    """Passes that end with no gap (``g = 0``): no queue ahead, so the wait is the floor (0
    without one) at any load, as the nested solve
    (:func:`tests.analytic.wait_reference.nested_wait`) gives where there is a floor."""
    from tests.analytic.wait_reference import nested_wait

    lam, floor = np.array([0.5, 5.0, 50.0, 5.0]), np.array([0.3, 0.3, 0.3, 0.0])
    got = waits(lam, 1.0, 0.0, 4.0, 0.8, floor)
    np.testing.assert_array_equal(got, floor)
    np.testing.assert_array_equal(nested_wait(lam[:3], np.ones(3), np.zeros(3), np.full(3, 4.0), np.full(3, 0.8), floor[:3]), floor[:3])
