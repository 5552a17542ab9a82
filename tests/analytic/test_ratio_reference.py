"""The tests' reference ratio of the bulk queue (tests/analytic/ratio_reference.py) against
closed forms, scipy's root finder and a 40-digit mpmath solve."""

import math

import mpmath as mp
import numpy as np
import pytest
from scipy.optimize import brentq

from mcengine.analytic import queueing as qu
from tests.analytic import ratio_reference


def ratios(lam, cv2, g, p, d, steps=qu.ROOT_STEPS):
    flat = [np.asarray(x, float).ravel() for x in np.broadcast_arrays(lam, cv2, g, p, d)]
    return ratio_reference.queue_ratios(*flat, steps, qu.ROOT_TOLERANCE)


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
    positive between it and 0 (:func:`ratio_reference.queue_ratios`); the bracket
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
