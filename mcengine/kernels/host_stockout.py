"""Conditional Monte Carlo of host stock-outs: a control of mean zero per lifetime, from the
host log of the life kernel (:data:`~mcengine.kernels.life.indices.OUT_HOST_LOG`),
docs/availability-vr.md.

Model
-----
Host units (docs/model.md#host-units) with an exponential host law: candidate permanent
host failures come as a Poisson process (the host rate x the hosts), whatever the repairs;
a candidate on a host in place is a failure, and its repair takes an independent draw
``R_j`` of the repair law. With ``s`` spare hosts, hosts wait for a host while more than
``s`` are in repair: ``W(t) = (N(t) - s)+``, ``N(t)`` the hosts in repair, and the
host-hours waiting are ``Y = integral of W``. Failure ``j`` (at ``t_j``) adds to ``W`` while it is in
repair and at least ``s`` others are: ``Y = sum_j integral_0^{R_j} 1{N_-j(t_j + u) >= s} du``.

Reveal the repairs one at a time, every candidate time known (``G``): ``R_j`` is
independent of ``G`` and of the earlier repairs, so for any weight ``w_j(u)`` fixed by
them, ``g_j(R_j) - E[g_j(R)]`` with ``g_j(r) = integral_0^{min(r, T - t_j)} w_j(u) du`` has
mean zero, and so has their sum over the lifetime's failures (a martingale: D. Williams,
*Probability with Martingales*, 1991, §10). The weight is the probability, given what is
known, that at least ``s`` other hosts are in repair at ``t_j + u``: the earlier failures
still in repair then (their repairs drawn) plus each later candidate within the lookahead
still in repair with the repair law's survival probability (a Poisson-binomial tail;
past the lookahead, the earlier ones only). Were every candidate a failure, this ``g_j``
would be the repair's whole effect on ``E[Y | G, R_1..R_j]``, and ``Y`` minus the sum the
conditional expectation ``E[Y | G]``: conditional Monte Carlo on the failure times
(docs/availability-vr.md). The weight is constant on pieces between the earlier
completions, the later candidates and a geometric grid, so
``E[g_j(R)] = sum_p w_p (L(b_{p+1}) - L(b_p))``, ``L(b) = E[min(R, b)]`` in closed form:
exact, whatever the approximation in the weight.

Repair laws of fixed, exponential and lognormal parts (the caller checks: a Weibull part's
``L`` needs the incomplete gamma function).
"""

from __future__ import annotations

import math

import numpy as np

from mcengine.jit import inline_kernel, kernel
from mcengine.kernels.law_codes import LAW_EXPONENTIAL, LAW_FIXED, LAW_LOGNORMAL
from mcengine.kernels.laws import CUM_WEIGHT, KIND, P1, P2

__all__ = ["stockout_control"]

_SQRT2 = math.sqrt(2.0)


@inline_kernel
def _phi(x):
    """The standard normal distribution function."""
    return 0.5 * math.erfc(-x / _SQRT2)


@inline_kernel
def _by_part(law, x, limited):
    """``P(R > x)``, or (``limited``) ``L(x) = E[min(R, x)]`` (0 for ``x <= 0``), for the
    repair law ``law`` (float64[parts, 4], kernels/laws.py), part by part: a fixed ``v``
    survives while ``x < v`` and gives ``L = min(v, x)``; an exponential of mean ``m``,
    ``e^{-x/m}`` and ``m (1 - e^{-x/m})``; a lognormal (median ``e^mu``, ``sigma``), with
    ``z = (ln x - mu) / sigma``, ``1 - Phi(z)`` and ``e^{mu + sigma^2/2} Phi(z - sigma) +
    x (1 - Phi(z))``."""
    if x <= 0.0:
        return 0.0 if limited else 1.0
    out = 0.0
    for j in range(law.shape[0]):
        w = law[j, CUM_WEIGHT] - (law[j - 1, CUM_WEIGHT] if j > 0 else 0.0)
        if w > 0.0:
            kind, p1 = int(law[j, KIND]), law[j, P1]
            if kind == LAW_FIXED:
                out += w * (min(p1, x) if limited else (1.0 if x < p1 else 0.0))
            elif kind == LAW_EXPONENTIAL:
                out += w * (-p1 * math.expm1(-x / p1) if limited else math.exp(-x / p1))
            elif kind == LAW_LOGNORMAL:
                sigma = law[j, P2]
                z = (math.log(x) - math.log(p1)) / sigma
                tail = 1.0 - _phi(z)
                out += w * (p1 * math.exp(0.5 * sigma * sigma) * _phi(z - sigma) + x * tail if limited else tail)
        if law[j, CUM_WEIGHT] >= 1.0:
            break
    return out


@inline_kernel
def survival(law, u):
    """``P(R > u)`` for the repair law ``law`` (:func:`_by_part`)."""
    return _by_part(law, u, False)


@inline_kernel
def limited_mean(law, b):
    """``L(b) = E[min(R, b)]`` for the repair law ``law`` (:func:`_by_part`)."""
    return _by_part(law, b, True)


@kernel
def stockout_control(log, used, horizon, spares, laws, grid):
    """The control ``sum_j g_j(R_j) - E[g_j(R)]`` (host-hours, mean zero) of each lifetime.

    Parameters
    ----------
    log : float64[n, 1 + 2 m]
        The host log (:data:`~mcengine.kernels.life.indices.OUT_HOST_LOG` onwards): the
        count of candidates, then ``(time, repair or -1)`` of the first ``m``.
    used : int64[n]
        Candidates of each lifetime to use, at most ``m`` (fixed by its inputs alone, so
        the sum stays a martingale): failures past them get no term.
    horizon : float64[n]
        ``T`` in hours.
    spares : int
        Spare hosts ``s``.
    laws : float64[n, parts, 4]
        Each lifetime's repair law.
    grid : float64[n, k]
        Each lifetime's breakpoints of the weight beyond the earlier completions and the
        later candidates, increasing; the last is the lookahead.

    Returns
    -------
    float64[n]
    """
    n, m = log.shape[0], (log.shape[1] - 1) // 2
    out = np.zeros(n)
    early, fut = np.empty(max(m, 1)), np.empty(max(m, 1))
    bps = np.empty(2 * m + grid.shape[1] + 2)
    q = np.empty(spares + 1)
    for i in range(n):
        nc = min(int(log[i, 0]), int(used[i]), m)
        horizon_i, look, law = horizon[i], grid[i, grid.shape[1] - 1], laws[i]
        total = 0.0
        for j in range(nc):
            r_j = log[i, 2 + 2 * j]
            if r_j < 0.0:
                continue
            t_j = log[i, 1 + 2 * j]
            a = horizon_i - t_j
            ne = 0  # earlier failures still in repair at t_j: their completions, from t_j
            for k in range(j):
                if log[i, 2 + 2 * k] >= 0.0:
                    done = log[i, 1 + 2 * k] + log[i, 2 + 2 * k] - t_j
                    if done > 0.0:
                        early[ne] = done
                        ne += 1
            nf = 0  # later candidates within the lookahead and the horizon
            reach = min(look, a)
            for k in range(j + 1, nc):
                f = log[i, 1 + 2 * k] - t_j
                if f >= reach:
                    break
                fut[nf] = f
                nf += 1
            if ne + nf < spares:  # never s others in repair: the weight is 0
                continue
            nb = 0
            bps[nb] = 0.0
            nb += 1
            for k in range(grid.shape[1]):
                if grid[i, k] < a:
                    bps[nb] = grid[i, k]
                    nb += 1
            for k in range(ne):
                if early[k] < a:
                    bps[nb] = early[k]
                    nb += 1
            for k in range(nf):
                bps[nb] = fut[k]
                nb += 1
            bps[nb] = a
            nb += 1
            for k in range(1, nb):  # (insertion sort: a few dozen, nearly in order)
                x, h = bps[k], k - 1
                while h >= 0 and bps[h] > x:
                    bps[h + 1] = bps[h]
                    h -= 1
                bps[h + 1] = x
            b = bps
            g, e = 0.0, 0.0
            for p in range(nb - 1):
                lo, hi = b[p], b[p + 1]
                if hi <= lo:
                    continue
                mid = 0.5 * (lo + hi)
                d = spares
                for k in range(ne):
                    if early[k] > mid:
                        d -= 1
                if d <= 0:
                    w = 1.0
                elif mid >= look:
                    w = 0.0
                else:  # P(at least d of the later candidates before mid still in repair at mid)
                    q[0] = 1.0
                    for x in range(1, d):
                        q[x] = 0.0
                    for k in range(nf):
                        if fut[k] >= mid:
                            break
                        pk = survival(law, mid - fut[k])
                        for x in range(d - 1, 0, -1):
                            q[x] = q[x] * (1.0 - pk) + q[x - 1] * pk
                        q[0] *= 1.0 - pk
                    below = 0.0
                    for x in range(d):
                        below += q[x]
                    w = max(1.0 - below, 0.0)
                if w > 0.0:
                    g += w * max(min(hi, r_j) - lo, 0.0)
                    e += w * (limited_mean(law, hi) - limited_mean(law, lo))
            total += g - e
        out[i] = total
    return out
