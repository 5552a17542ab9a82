"""The load models' compiled root solves (mcengine/kernels/queueing.py) against closed forms
and scipy's root finder."""

import math

import mpmath as mp
import numpy as np
import pytest
from scipy.optimize import brentq

from mcengine.analytic import queueing as qu
from mcengine.kernels import queueing as kq


def ratios(lam, cv2, g, p, d, steps=qu.ROOT_STEPS):
    flat = [np.asarray(x, float).ravel() for x in np.broadcast_arrays(lam, cv2, g, p, d)]
    return kq.queue_ratios(*flat, steps, qu.ROOT_TOLERANCE)


def test_queue_ratio_known_answers():
    """M/M/c's ratio ``lambda g`` (Poisson arrivals and pass ends, one prompt a pass) to 1e-13,
    for loads from a trickle to 0.999; 0 with no arrivals; 1 where full passes do not outrun
    the arrivals."""
    rho = np.array([1e-6, 0.01, 0.3, 0.7, 0.9, 0.99, 0.999])
    np.testing.assert_allclose(ratios(rho / 0.1, 1.0, 0.1, 1.0, 1.0), rho, rtol=1e-13)
    assert ratios(0.0, 1.0, 0.1, 4.0, 1.0)[0] == 0.0
    assert ratios(80.0, 1.0, 0.1, 8.0, 1.0)[0] == 1.0


def test_queue_ratio_is_the_root_for_gamma_arrivals_and_batches():
    """``z = A*((1 - z^(P I)) / (g I))`` against brentq (to 1e-11, or 1e-9 of 0 for the ratios
    that small) over a grid of gamma arrival CVs (0 to 3), passes of 1 to 8 prompts,
    dispersions and loads up to 0.99 of the full passes rate; every trial settles in at
    most 12 steps (its answer with 12 steps the same bits)."""
    rng = np.random.default_rng(3)
    n = 400
    cv2 = np.where(rng.random(n) < 0.2, 0.0, rng.uniform(0.0, 3.0, n) ** 2)
    p = rng.integers(1, 9, n).astype(float)
    d = np.where(rng.random(n) < 0.3, 1.0, rng.uniform(1e-12, 1.0, n))
    g = rng.uniform(0.01, 0.1, n)
    lam = p / g * rng.uniform(0.05, 0.99, n)
    z = ratios(lam, cv2, g, p, d)
    assert (z > 1e-6).mean() > 0.9
    np.testing.assert_array_equal(ratios(lam, cv2, g, p, d, steps=12), z)
    for i in range(n):
        v = cv2[i]

        def residual(x):
            s = -math.expm1(p[i] * d[i] * math.log(x)) / (g[i] * d[i]) / lam[i]
            return (math.exp(-s) if v == 0.0 else (1.0 + s * v) ** (-1.0 / v)) - x

        root = brentq(residual, 1e-300, 1.0 - 1e-9, xtol=1e-16, rtol=1e-15)
        assert z[i] == pytest.approx(root, rel=1e-11, abs=1e-9)


def log_ratio_reference(lam, v, g, p, d):
    """The ratio's root by 120 halvings in ``y = ln z`` at 40 digits (mpmath), from ``ln
    phi(0) - 1`` to ``-1e-40``: ``H(y) = y - ln phi(e^y)`` is negative below the root and
    positive between it and 0 (:func:`mcengine.kernels.queueing.queue_ratios`); the bracket
    is at most about 2^55 wide in :func:`test_queue_ratio_over_the_legal_range`, so the root
    to about 2^-65 relative."""
    with mp.workdps(40):
        lam, v, g, p, d = (mp.mpf(float(x)) for x in (lam, v, g, p, d))
        c = 1 / (g * d * lam)

        def log_phi(y):
            s = -mp.expm1(p * d * y) * c
            return -mp.log1p(s * v) / v if v > 0 else -s

        lo, hi = log_phi(mp.ninf) - 1, -mp.mpf(10) ** -40
        for _ in range(120):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mid - log_phi(mid) < 0 else (lo, mid)
        return float(mp.exp(lo))


def test_queue_ratio_tiny_root():
    """Evenly spaced arrivals and pass ends far more regular than Poisson's (``P I < 1``:
    ``phi`` not convex near 0) put the root near 0. With ``ln phi(z) = -c (1 - z^(P I))``,
    ``c = 1 / (lambda g I)``: at ``c = 100``, ``P I = 0.4`` it is ``e^-100`` to 1e-15; at ``c =
    200``, ``P I = 0.01`` it is ``e^(-100 u)``, ``u / 2 = 1 - e^-u`` (about 5.4e-70; ``phi(0) =
    e^-200``). Both to 1e-12 in at most 8 steps (halvings from 1 would need about 150 and
    230), and both as the 40-digit log-space halving gives them."""
    u = brentq(lambda x: x / 2.0 - 1.0 + math.exp(-x), 1.0, 2.0, xtol=1e-16)
    for (lam, g, p, d), root in (((1.0, 0.1, 4.0, 0.1), math.exp(-100.0)), ((5.0, 0.1, 1.0, 0.01), math.exp(-100.0 * u))):
        z = ratios(lam, 0.0, g, p, d)[0]
        assert z == pytest.approx(root, rel=1e-12)
        assert z == pytest.approx(log_ratio_reference(lam, 0.0, g, p, d), rel=1e-12)
        assert ratios(lam, 0.0, g, p, d, steps=8)[0] == z


def test_queue_ratio_near_capacity_and_where_steps_once_flipped():
    """Three pools where Newton steps on ``ln z`` with an absolute stop and the slope ``1 - k
    e^(P I y) / (1 + s v)`` went wrong: a load within 1e-16 of capacity (``k - 1`` below one
    rounding unit of ``k``: the ratio came out above 1), a root of 3.5e-96 and one of 0.63
    (the steps flipped between two floats, the answer depending on the step cap's parity).
    Each within 1e-11 of the 40-digit log-space halving, below 1, the same bits at 59 and
    60 steps."""
    for pool in ((183.6282408178624, 0.0, 0.6153737545854, 113.0, 1.451553188954631e-12),
                 (292.4801268046614, 1.5426841735928218e-06, 0.06491964575600291, 19.0, 2.2878487957933957e-07),
                 (3425.051402477256, 7.564856436140003e-4, 0.016050484973732543, 55.0, 2.3785785012235812e-05)):
        z = ratios(*pool)[0]
        assert z < 1.0
        assert z == pytest.approx(log_ratio_reference(*pool), rel=1e-11)
        assert ratios(*pool, steps=59)[0] == z


@pytest.mark.slow
def test_queue_ratio_over_the_legal_range():
    """Random pools over the legal range (squared arrival CV 0 or 1e-8 to 10, 1 to 64 prompts
    a pass, dispersion 1e-12 to 1, gaps 1 ms to 1 s, loads 1e-8 to 0.9999 of the full
    passes' rate) against the 40-digit log-space halving: within 1e-11 of the root (the
    residual's rounding over its slope near capacity), every trial in at most 20 steps
    (its answer with 20 steps the same bits), a third of :data:`~mcengine.analytic.queueing.ROOT_STEPS`."""
    rng = np.random.default_rng(7)
    n = 2000
    cv2 = np.where(rng.random(n) < 0.2, 0.0, 10.0 ** rng.uniform(-8.0, 1.0, n))
    p = rng.integers(1, 65, n).astype(float)
    d = np.where(rng.random(n) < 0.2, 1.0, 10.0 ** rng.uniform(-12.0, 0.0, n))
    g = 10.0 ** rng.uniform(-3.0, 0.0, n)
    load = np.where(rng.random(n) < 0.5, 10.0 ** rng.uniform(-8.0, 0.0, n), rng.uniform(0.01, 1.0, n)) * 0.9999
    lam = p / g * load
    z = ratios(lam, cv2, g, p, d)
    np.testing.assert_array_equal(ratios(lam, cv2, g, p, d, steps=20), z)
    assert z.max() < 1.0
    reference = np.array([log_ratio_reference(*x) for x in zip(lam, cv2, g, p, d)])
    assert (reference < 1e-20).sum() > 10  # tiny roots are in the sample
    np.testing.assert_allclose(z, reference, rtol=1e-11, atol=0.0)


def test_queue_ratio_each_trial_its_own():
    """A trial's ratio is the same bits alone as among others."""
    lam, g = np.array([1.0, 50.0, 79.0, 0.0]), np.full(4, 0.1)
    z = ratios(lam, 4.0, g, 8.0, 0.5)
    for i in range(4):
        assert ratios(lam[i], 4.0, g[i], 8.0, 0.5)[0] == z[i]


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
