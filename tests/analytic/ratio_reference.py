"""The bulk queue's ratio at a given index of dispersion (docs/load.md#disaggregated): the
law the tests hold the model's queue wait to, which no model path calls.

The chain's wait (:func:`mcengine.analytic.queueing._self_consistent_wait`) reads the index
of dispersion off the ratio itself and solves one equation in it; :func:`queue_ratio` is
the ratio at a given index, which tests/analytic/wait_reference.py's nested solve (Illinois
steps in the index, each a :func:`queue_ratio` solve) and tests/analytic/test_queueing.py
take as the reference. :func:`queue_ratios` solves it trial by trial (a trial's answer
depends on its own inputs alone) by Newton steps on ``ln z`` that rise to the root, each
step on scalars in registers, compiled through :data:`mcengine.jit.kernel` as the
model's roots are (docs/load.md#speed); tests/analytic/test_ratio_reference.py holds it
to closed forms, scipy's root finder and a 40-digit mpmath solve."""

from __future__ import annotations

import math

import numpy as np

from mcengine.analytic.queueing import ROOT_STEPS, ROOT_TOLERANCE, _flat, _shape
from mcengine.jit import inline_kernel, kernel
from mcengine.kernels import queueing as kq


def queue_ratio(rate_per_s, arrival_cv, gap_s, top, dispersion=1.0):
    """The ratio ``z`` of the geometric law of the prompts a waiting request finds ahead of it
    in a pool of servers taking up to ``top`` queued prompts a pass: ``P(Q >= j) = z^j``.
    The GI/M^[1,P]/c embedded chain at arrivals (Chaudhry and Templeton, *A First Course in
    Bulk Queues*, 1983; docs/sources.md#load-queueing): while every server is busy, passes
    end at rate ``1 / g`` (``g = gap_s``) and each takes ``top`` prompts, so between two
    arrivals (a gap ``A``) the queue falls by ``P D``, ``D`` the passes ended in ``A``, and
    a geometric law is stationary where ``z = E[z^(P D)]``. With ``D`` Poisson of mean ``A /
    g`` (M^[1,P]) that is ``z = A*((1 - z^P) / g)``, ``A*`` the Laplace transform of the
    arrivals' gaps (gamma of mean ``1 / lambda`` and squared CV ``c_a^2``: ``A*(s) = (1 + s
    c_a^2 / lambda)^(-1 / c_a^2)``; Poisson's ``lambda / (lambda + s)``). Pass ends less
    variable than Poisson's (index of dispersion ``I = dispersion``, Var/mean of ``D``) are
    taken as ``I`` times a Poisson count of mean ``A / (g I)``: ``z = A*((1 - z^(P I)) / (g
    I))`` (``I -> 0``: ``-P ln z / g``, deterministic pass ends; ``I`` floored at 1e-12, as
    the model floors it). The root in ``(0, 1)`` exists where full passes drain faster than
    prompts arrive (``P > lambda g``); 1 (no steady state) where they do not:
    :func:`queue_ratios`, each trial to within
    :data:`~mcengine.analytic.queueing.ROOT_TOLERANCE` of it
    (:data:`~mcengine.analytic.queueing.ROOT_STEPS` steps at most)."""
    lam, v, g, p, d = _flat(rate_per_s, np.asarray(arrival_cv, float) ** 2, gap_s, top, dispersion)
    return queue_ratios(lam, v, g, p, np.maximum(d, 1e-12), ROOT_STEPS, ROOT_TOLERANCE).reshape(_shape(rate_per_s, arrival_cv, gap_s, top, dispersion))


@inline_kernel
def _expm1_less_x(x):
    """``e^x - 1 - x`` to full relative precision for ``|x| < 1`` (its series, to ``x^22 /
    22!``), where ``expm1(x) - x`` would lose the digits ``x`` cancels."""
    term = 0.5 * x * x
    total = term
    for n in range(3, 23):
        term *= x / n
        total += term
    return total


@inline_kernel
def _x_less_log1p(u):
    """``u - ln(1 + u)`` to full relative precision for ``0 <= u < 1``: ``ln(1 + u) = 2
    atanh(w)``, ``w = u / (2 + u) <= 1/3``, so it is ``u^2 / (2 + u) - 2 (w^3 / 3 + w^5 / 5 +
    ...)`` (to ``w^41``)."""
    w = u / (2.0 + u)
    w2 = w * w
    power, tail = w * w2, 0.0
    for n in range(1, 21):
        tail += power / (2 * n + 1)
        power *= w2
    return u * u / (2.0 + u) - 2.0 * tail


@inline_kernel
def _log_ratio_residual(y, lam, v, gd, pd, excess):
    """:func:`queue_ratios`' residual at ``y = ln z`` and its derivative: ``H(y) = y - ln
    phi(e^y) = y + ln(1 + s v) / v`` (``y + s`` at ``v = 0``), ``s = (1 - e^(P I y)) / (g I
    lambda)`` (``gd = g I``, ``pd = P I``), and ``H' = 1 - k e^(P I y) / (1 + s v) = (s (v +
    P I) - (k - 1)) / (1 + s v)`` (``k = P / (lambda g)``, ``excess = k - 1``; ``k e^(P I y)
    = k - s P I``). Where ``|P I y| < 1`` and ``s v < 1`` (near capacity ``y``, ``s`` and
    ``H`` are small), ``H = -(k - 1) y - (e^(P I y) - 1 - P I y) / (g I lambda) - (s v -
    ln(1 + s v)) / v``, each term to full precision: the ``y`` and ``k y`` that cancel in
    ``y + s`` cancel exactly in ``-(k - 1) y``."""
    x = pd * y
    s = -math.expm1(x) / gd / lam
    slope = (s * (v + pd) - excess) / (1.0 + s * v)
    if abs(x) < 1.0 and s * v < 1.0:
        f = -excess * y - _expm1_less_x(x) / gd / lam
        return (f - _x_less_log1p(s * v) / v if v > 0.0 else f), slope
    log_a = -math.log1p(s * v) / v if v > 0.0 else -s
    return y - log_a, slope


@inline_kernel
def _product_error(a, b):
    """``a b - fl(a b)`` exactly (Dekker's product: Veltkamp's split of each factor into
    26-bit halves)."""
    c = 134217729.0 * a
    ah = c - (c - a)
    c = 134217729.0 * b
    bh = c - (c - b)
    return ((ah * bh - a * b) + ah * (b - bh) + (a - ah) * bh) + (a - ah) * (b - bh)


@kernel
def queue_ratios(rate_per_s, arrival_cv2, gap_s, top, dispersion, steps, tolerance):
    """The ratio ``z`` of :func:`queue_ratio` of each trial
    (float64 arrays of one length: arrivals/s ``lambda``, squared arrival CV ``v``, gap ``g``
    (s), prompts a pass ``P``, index of dispersion ``I`` of the pass ends, at least 1e-12):
    the root in ``(0, 1)`` of ``z = phi(z) = A*((1 - z^(P I)) / (g I))`` (``A*(s) = (1 + s v
    / lambda)^(-1 / v)`` the gamma gaps' transform, ``e^(-s / lambda)`` at ``v = 0``;
    Chaudhry and Templeton 1983), 1 where ``P <= lambda g`` (no root below 1), 0 where
    ``lambda = 0``. Solved in ``y = ln z`` (:func:`_log_ratio_residual`): ``H(y) = y - ln
    phi(e^y)`` is concave on ``y < 0`` for every ``v >= 0`` and ``P I > 0`` (``ln phi`` is
    convex in ``y``: with ``s = c (1 - e^(q y))``, ``c = 1 / (g I lambda)``, ``q = P I``,
    its slope ``c q e^(q y) / (1 + s v)`` rises with ``y``), ``H(0) = 0``, ``H'(0) = 1 - P /
    (lambda g) < 0`` and ``H -> -inf`` as ``y -> -inf``: one root ``y*``, ``H < 0`` below it
    and ``H > 0`` between it and 0, ``H' > 0`` below it. ``ln phi(0) = -ln(1 + c v) / v``
    (``-c`` at ``v = 0``; no underflow however small ``phi(0)``) is below the root (``y* =
    ln phi(e^y*)`` and ``phi`` increases). The steps start from the larger of it and the
    logarithm of the heavy-traffic root ``1 - 2 (k - 1) / ((1 + v) k^2 + k (P I - 1))``,
    where ``phi``'s parabola at 1 (``phi'(1) = k = P / (lambda g)``, ``phi''(1) = (1 + v)
    k^2 + k (P I - 1)``) meets ``z`` (where that is in ``(0, 1)``). Newton steps on the
    concave ``H``: from below the root each tangent meets 0 between the point and the root,
    so the steps rise to it; from above (the start, at most once) it meets 0 below the root,
    and a step below ``ln phi(0)`` (or from past ``H``'s maximum, ``H' <= 0``) goes to
    ``ln phi(0)`` instead. No halving: a trial stops once a step is at most ``tolerance``
    (relative to ``z``), once a step from below lands above the root (rounding: the root is
    between the two iterates) or would leave ``(lo, hi)`` or not move, after ``steps`` steps
    at most; so ``y < 0`` (``z < 1`` but where ``e^y`` rounds to 1)."""
    n = rate_per_s.size
    out = np.ones(n)
    for i in range(n):
        lam, v, g, p, d = rate_per_s[i], arrival_cv2[i], gap_s[i], top[i], dispersion[i]
        if not p > lam * g:
            continue
        if not lam > 0.0:  # no arrivals: no queue
            out[i] = 0.0
            continue
        pd, gd = p * d, g * d
        drains = p / (g * lam)  # phi'(1) = P / (lambda g) > 1
        served = g * lam
        excess = ((p - served) - _product_error(g, lam)) / served  # k - 1 with lambda g exact
        lo = -math.log1p(v / gd / lam) / v if v > 0.0 else -1.0 / gd / lam  # ln phi(0)
        heavy = kq._heavy_traffic_root(drains, v, pd)
        y = max(lo, math.log(heavy)) if 0.0 < heavy < 1.0 else lo
        hi, rose = 0.0, False  # H > 0 on (y*, 0); rose: the last step was from below
        for _ in range(steps):
            f, slope = _log_ratio_residual(y, lam, v, gd, pd, excess)
            if f > 0.0 and rose:  # a step from below crossed the root: it is in [lo, y]
                break
            rose = f <= 0.0
            if rose:
                lo = y
            else:
                hi = y
            step = max(y - f / slope, lo) if slope > 0.0 else lo
            if not step < hi or step == y:  # the root in [lo, hi] is closer than a Newton step resolves
                break
            done = abs(step - y) <= tolerance
            y = step
            if done:
                break
        out[i] = math.exp(y)
    return out
