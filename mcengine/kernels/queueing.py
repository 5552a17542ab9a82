"""The load models' roots compiled (docs/load.md#speed): the queue wait of the bulk queue's
embedded chain and the quantile of a waiting request's TTFT, trial by trial.

:func:`hypoexponential_quantiles` solves :func:`mcengine.analytic.queueing._batched_ttft`'s
quantile by Newton steps kept in a bracket (:func:`_newton_or_halving`: a step that leaves
the bracket or fails to halve it halves it instead), a trial at a time (a trial's answer
depends on its own inputs alone, never on the others' nor on a thread count), each step on
scalars in registers. What does not depend on the probe is computed by NumPy and handed
in. The transcendental functions are the C library's, not NumPy's vectorised ones, so a
root is the same as NumPy's to within the rounding of its residual about it
(docs/load.md#speed). :func:`self_consistent_waits` solves
:func:`mcengine.analytic.queueing._self_consistent_wait`'s fixed point as one root in the
ratio, by the same bracketed Newton steps, trial by trial the same way."""

from __future__ import annotations

import math

import numpy as np

from ..jit import inline_kernel, kernel


@inline_kernel
def _gamma_transform(t, v, power, smooth_cv2):
    """``E[e^(-s A)]`` of gamma gaps of squared CV ``v`` at ``t = s / lambda``: ``(1 + t
    v)^power`` (``power = -1 / v``) above ``smooth_cv2``, ``e^(-log1p(t v) / v)`` down to 0,
    ``e^(-t)`` at 0 (``smooth_cv2``: :data:`mcengine.analytic.queueing.SMOOTH_ARRIVAL_CV2`,
    where ``1 + t v`` would round to 1): ``(1 + t v)^(-1 / v)`` is the transform, its limit
    at ``v = 0`` (evenly spaced arrivals) ``e^(-t)``."""
    if v > smooth_cv2:
        return (1.0 + t * v) ** power
    if v > 0.0:
        return math.exp(-(math.log1p(t * v) / v))
    return math.exp(-t)


@inline_kernel
def _heavy_traffic_root(drains, v, pd):
    """``1 - 2 (k - 1) / ((1 + v) k^2 + k (P I - 1))``, where the parabola of ``phi`` at 1
    (``phi'(1) = k = drains``, ``phi''(1) = (1 + v) k^2 + k (P I - 1)``, ``pd = P I``) meets
    ``z``: :func:`self_consistent_waits`' high end (and the start of the tests' reference
    ratio, tests/analytic/ratio_reference.py)."""
    return 1.0 - 2.0 * (drains - 1.0) / ((1.0 + v) * drains * drains + drains * (pd - 1.0))


@inline_kernel
def _dispersion(log_z, g, p, span):
    """The index of dispersion ``max(1 - W / T, 1e-12)`` of the wait ``W = g / (1 - z^P)``
    at ``ln z = log_z`` (``T = span``; 1e-12 keeps the ratio's equation defined)."""
    return max(1.0 - g / (-math.expm1(p * log_z) * span), 1e-12)


@inline_kernel
def _newton_or_halving(x, g, dg, lo, hi, moved, before, tolerance, scale):
    """One step of a bracketed Newton solve of an increasing residual ``G`` (``G(lo) <= 0 <=
    G(hi)``) at ``x``, where ``G = g`` and ``G' = dg``: the bracket narrowed to ``x`` on the
    side ``g`` puts it, and the Newton step where ``dg > 0``, it stays in the bracket (below
    ``hi`` strictly: a caller's first ``hi`` may be a point where ``G`` is not defined, the
    ratio 1 of :func:`self_consistent_waits`) and it is at most half the step before last
    (``before``; ``moved`` the last), else the
    bracket's midpoint. Returns ``(next x, lo, hi, moved, before, done)``, ``done`` where
    the step was at most ``tolerance x scale`` (the caller's resolution: ``|x|``, or ``1 -
    x`` for a ratio whose wait is read off ``1 - x``)."""
    if g <= 0.0:
        lo = x
    if g >= 0.0:
        hi = x
    step = x - g / dg
    if not (dg > 0.0 and lo <= step < hi and 2.0 * abs(step - x) <= before):
        step = 0.5 * (lo + hi)
    length = abs(step - x)
    return step, lo, hi, length, moved, length <= tolerance * scale


@inline_kernel
def _plus_exponential(t, scale, other):
    """``P(X + Y > t)`` and its density at ``t``, for independent exponentials ``X`` of mean
    ``scale`` and ``Y`` of mean ``other`` (``Y = 0`` where ``other`` is 0): ``(s e^(-t/s) - m
    e^(-t/m)) / (s - m)`` and ``(e^(-t/s) - e^(-t/m)) / (s - m)``; where the means are equal
    (the hypoexponential law), ``(1 + t/s) e^(-t/s)`` and ``t e^(-t/s) / s^2``; with no
    ``Y``, ``e^(-t/s)`` and ``e^(-t/s) / s``."""
    own = math.exp(-t / scale)
    if not other > 0.0:
        return own, own / scale
    if abs(scale - other) <= 1e-9 * scale:
        return (1.0 + t / scale) * own, t / (scale * scale) * own
    theirs = math.exp(-t / other)
    return (scale * own - other * theirs) / (scale - other), (own - theirs) / (scale - other)


@kernel
def hypoexponential_quantiles(first_scale, second_scale, burst, a, b, tail, top_s, steps, tolerance):
    """The ``1 - tail`` quantile (s) of ``T = a R + b A + Y`` of each trial (float64 arrays of
    one length; ``R``, ``A`` exponential of mean ``g``, ``first_scale = a g``,
    ``second_scale = max(b g, 1e-300)``, ``Y`` exponential of mean ``burst``), as
    :func:`mcengine.analytic.queueing._batched_ttft` reads it: its survival ``(a S_1 - b S_2)
    / (a - b)`` (``S_1``, ``S_2`` :func:`_plus_exponential` of the two scales; ``S_1`` alone
    where ``b = 0``), a sum of independent exponentials' and so log-concave, so ``G(t) =
    ln(tail) - ln P(T > t)`` is convex and increasing: Newton steps from ``M ln(3 / tail)``
    (``M = top_s / 50``, the sum of the three means; at least the quantile, by a union
    bound on the three terms) fall to the root, each tangent of a convex ``G`` meeting 0
    above it, ``G' = f / P(T > t)`` (``f`` the density), kept in ``[0, top_s]``
    (:func:`_newton_or_halving`); a trial stops once its step is at most ``tolerance x
    t``, after ``steps`` steps at most. 0 where ``tail`` is 1, the root of ``G`` (the caller
    clips the tail there for a trial that waits less often than ``1 - q``, whose quantile
    is an unwaited request's)."""
    n = tail.size
    out = np.empty(n)
    for i in range(n):
        ai, bi, level = a[i], b[i], tail[i]
        if not level < 1.0:  # the quantile of a trial whose request waits less often than 1 - q: read elsewhere
            out[i] = 0.0
            continue
        gap = ai - bi if ai > bi else 1.0
        lo, hi = 0.0, top_s[i]
        t = min(top_s[i] / 50.0 * math.log(3.0 / level), hi)
        moved = before = np.inf
        for _ in range(steps):
            one, one_density = _plus_exponential(t, first_scale[i], burst[i])
            survival, density = one, one_density
            if bi > 0.0:
                two, two_density = _plus_exponential(t, second_scale[i], burst[i])
                survival, density = (ai * one - bi * two) / gap, (ai * one_density - bi * two_density) / gap
            t, lo, hi, moved, before, done = _newton_or_halving(t, math.log(level) - math.log(survival), density / survival, lo, hi, moved, before,
                                                                tolerance, abs(t))
            if done:
                break
        out[i] = t
    return out


@inline_kernel
def _wait_residual(z, lam, v, g, p, span, power, smooth_cv2):
    """:func:`self_consistent_waits`' residual at the ratio ``z`` in ``(0, 1)`` and its
    derivative: ``H(z) = z - A*(x)``, ``x = (1 - z^(P d)) / (g d lambda)``, ``A*`` the gamma
    gaps' transform (:func:`_gamma_transform`), at the index of dispersion ``d = max(1 - W /
    T, 1e-12)`` of the wait ``W = g / (1 - z^P)`` (``T = span``; at the floor 1e-12 ``x``
    is ``-P ln z / g`` to 1e-12 of it). ``H' = 1 + A*(x) / (1 + x v) x'`` (``A*' = -A* / (1 + x v)``), ``x' = (-P z^(P
    d) / z + d' (-P ln z z^(P d) d - (1 - z^(P d))) / d^2) / (g lambda)`` (``d (1 - z^(P
    d))``'s derivative in ``d`` over ``d^2``), ``d' = -W P z^P / (z (1 - z^P) T)`` where
    ``d`` is above its floor, 0 where it is held there."""
    log_z = math.log(z)
    spare = -math.expm1(p * log_z)  # 1 - z^P
    d = _dispersion(log_z, g, p, span)
    d_slope = -g / spare * p * (1.0 - spare) / (z * spare) / span if d > 1e-12 else 0.0
    held = math.expm1(p * d * log_z)  # z^(P d) - 1
    x = -held / (g * d) / lam
    a = _gamma_transform(x, v, power, smooth_cv2)
    x_slope = (-p * (1.0 + held) / z + d_slope * (-(p * log_z) * (1.0 + held) * d + held) / (d * d)) / (g * lam)
    return z - a, 1.0 + a / (1.0 + x * v) * x_slope


@kernel
def self_consistent_waits(rate_per_s, arrival_cv2, gap_s, top, pass_s, at_least, steps, tolerance, smooth_cv2):
    """:func:`mcengine.analytic.queueing._self_consistent_wait` of each trial (float64 arrays of
    one length: arrivals/s ``lambda``, squared arrival CV ``v``, gap ``g`` (s), prompts a pass
    ``P``, pass ``T`` (s), the floor (s)): the longer of the floor and ``W = g / (1 - z^P)``
    at the root ``z`` in ``(0, 1)`` of :func:`_wait_residual` ``H``, which is negative below
    it and positive between it and 1 (proved in
    :func:`mcengine.analytic.queueing._self_consistent_wait`), so the sign of ``H`` anywhere
    in ``(0, 1)`` tells on which side the root lies. The bracket starts at ``[z_f, 1]``:
    ``z_f = (1 - g / floor)^(1 / P)`` where the floor is above ``g`` (0 where not), the
    ratio whose wait is the floor, so ``H(z_f) >= 0`` puts the root at or below it and the
    answer is the floor, with no step taken. The steps start from ``u(d(u_f))``, ``u(d) = 1
    - 2 (k - 1) / ((1 + v) k^2 + k (P d - 1))`` (``k = P / (lambda g)``) the heavy-traffic
    root of the ratio's equation at the index of dispersion ``d``, ``u_f = u(d(z_f))``, ``d(z)``
    the index at the ratio ``z`` (the heavy-traffic root read again at the index of its own
    wait: near capacity the wait outgrows a pass and the index falls to its floor, which
    ``u_f`` does not see), or the bracket's midpoint where that is outside it. Newton steps
    on ``H`` (:func:`_newton_or_halving`: a step that leaves the bracket, fails to halve
    the step before last or meets ``H' <= 0``, as past ``H``'s maximum between the root and
    1, halves the bracket instead) until a step is at most ``tolerance x (1 - z)`` (``W``'s
    relative resolution: ``1 - z^P`` is about ``P (1 - z)`` near 1), ``steps`` steps at
    most; the wait is read at the ratio the last step reached. ``inf`` where ``P <= lambda
    g`` (no root below 1), ``g`` (or the floor) where ``lambda = 0`` or ``g = 0``."""
    n = rate_per_s.size
    out = np.empty(n)
    for t in range(n):
        lam, v, g, p, span, floor = rate_per_s[t], arrival_cv2[t], gap_s[t], top[t], pass_s[t], at_least[t]
        if not p > lam * g:
            out[t] = np.inf
            continue
        if not (lam > 0.0 and g > 0.0):  # no arrivals, or passes ending with no gap: no queue ahead
            out[t] = max(g, floor)
            continue
        power = -1.0 / v
        lo = math.exp(math.log1p(-g / floor) / p) if floor > g else 0.0  # z_f
        if lo > 0.0 and _wait_residual(lo, lam, v, g, p, span, power, smooth_cv2)[0] >= 0.0:  # the root at or below z_f: the wait at most the floor
            out[t] = floor
            continue
        drains, hi = p / (g * lam), 1.0
        z = _heavy_traffic_root(drains, v, p * _dispersion(math.log(lo), g, p, span))  # u_f
        if lo < z < hi:
            z = _heavy_traffic_root(drains, v, p * _dispersion(math.log(z), g, p, span))
        if not lo < z < hi:
            z = 0.5 * (lo + hi)
        moved = before = np.inf
        for _ in range(steps):
            f, slope = _wait_residual(z, lam, v, g, p, span, power, smooth_cv2)
            z, lo, hi, moved, before, done = _newton_or_halving(z, f, slope, lo, hi, moved, before, tolerance, 1.0 - z)
            if done:
                break
        out[t] = max(g / -math.expm1(p * math.log(z)), floor)
    return out
