"""Closed forms of serving under load (docs/load.md): the fast model of the trial chain.

An instance serving ``B`` concurrent sequences is a queue with ``c = B`` servers (batch
slots). A request holds a slot for ``tau = B O / T`` seconds, with ``T`` the instance's
saturated output tokens/s and ``O`` the output tokens per request, so a full instance
delivers ``T``; at utilisation ``rho`` requests arrive at ``lambda = rho B / tau``
(Little's law: ``rho B`` slots busy on average). A request waits for a slot as in a
G/G/c queue (Allen & Cunneen): the probability of waiting is Erlang C at offered load
``a = rho B``, and the wait beyond it is exponential with rate ``(c mu - lambda) 2 /
(c_a^2 + c_s^2)``, exact for M/M/c (``c_a = c_s = 1``). TTFT at quantile ``q`` is the
unloaded TTFT plus that wait's ``q`` quantile.

The diurnal demand is a sinusoid ``D(t) = m (1 + (p - 1) sin(2 pi t / day))`` of mean
``m`` and peak-to-mean ``p``; :func:`served_mean` and :func:`share_below` integrate
it against a capacity in closed form.

References: A. O. Allen, *Probability, Statistics and Queueing Theory* (1990), the
Allen-Cunneen approximation; L. Kleinrock, *Queueing Systems* vol. 1 (1975), Erlang C
and the M/M/c waiting-time law (docs/sources.md#load-queueing).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

#: Bisection steps of :func:`utilisation_at_slo` (a fixed count: run time never grows
#: with a value; 2^-60 of the utilisation is below a float's resolution of it).
BISECTION_STEPS = 60


def erlang_c(servers, offered) -> np.ndarray:
    """Probability that an arrival waits in M/M/c with ``servers`` = c and offered load
    ``offered`` = a = lambda / mu (Erlang C); 1 where ``a >= c``.

    Through Erlang B, ``B = pmf(c; a) / cdf(c; a)`` of a Poisson(a) law (constant time in
    ``c``), then ``C = B / (1 - (a/c)(1 - B))``."""
    c, a = np.broadcast_arrays(np.asarray(servers, float), np.asarray(offered, float))
    rho = np.divide(a, c, out=np.ones_like(a), where=c > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        blocking = stats.poisson.pmf(c, a) / stats.poisson.cdf(c, a)
        out = blocking / (1.0 - rho * (1.0 - blocking))
    out = np.where(a <= 0.0, 0.0, out)
    return np.where(rho >= 1.0, 1.0, np.clip(np.nan_to_num(out, nan=1.0), 0.0, 1.0))


def wait_quantile(q, servers, service_s, rho, arrival_cv, service_cv) -> np.ndarray:
    """The ``q`` quantile of the wait for a slot (s) in a G/G/c queue with ``servers``
    slots, mean holding time ``service_s`` and utilisation ``rho`` (Allen-Cunneen):
    ``P(W > t) = C e^(-t / h)``, ``h = (c_a^2 + c_s^2) / 2 x service_s / (c (1 - rho))``,
    so ``t_q = h max(0, ln(C / (1 - q)))``; ``+inf`` at ``rho >= 1``."""
    c, s, r = (np.asarray(x, float) for x in (servers, service_s, rho))
    pw = erlang_c(c, r * c)
    scale = (np.asarray(arrival_cv, float) ** 2 + np.asarray(service_cv, float) ** 2) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        h = scale * s / (c * (1.0 - r))
        t = h * np.maximum(0.0, np.log(pw / (1.0 - np.asarray(q, float))))
    return np.where(r >= 1.0, np.inf, np.where(pw > 0.0, t, 0.0))


def mean_wait(servers, service_s, rho, arrival_cv, service_cv) -> np.ndarray:
    """Mean wait for a slot (s), Allen-Cunneen: ``C (c_a^2 + c_s^2) / 2 x service_s / (c (1 - rho))``."""
    c, s, r = (np.asarray(x, float) for x in (servers, service_s, rho))
    scale = (np.asarray(arrival_cv, float) ** 2 + np.asarray(service_cv, float) ** 2) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        w = erlang_c(c, r * c) * scale * s / (c * (1.0 - r))
    return np.where(r >= 1.0, np.inf, w)


def slot_time_s(batch, output_tokens, tokens_per_s) -> np.ndarray:
    """Seconds a request holds one of ``batch`` slots on an instance delivering
    ``tokens_per_s`` at full occupancy: ``B O / T`` (``+inf`` where ``T = 0``)."""
    b, o, t = (np.asarray(x, float) for x in (batch, output_tokens, tokens_per_s))
    out = np.full(np.broadcast(b, o, t).shape, np.inf)
    np.divide(b * o, t, out=out, where=t > 0)
    return out


def ttft_quantile_ms(q, unloaded_ttft_ms, batch, slot_s, rho, arrival_cv, service_cv) -> np.ndarray:
    """TTFT at quantile ``q`` (ms): the unloaded TTFT plus the wait for a slot (:func:`wait_quantile`)."""
    return np.asarray(unloaded_ttft_ms, float) + 1e3 * wait_quantile(q, batch, slot_s, rho, arrival_cv, service_cv)


def utilisation_at_slo(q, slo_ms, unloaded_ttft_ms, batch, slot_s, arrival_cv, service_cv) -> np.ndarray:
    """The largest utilisation at which :func:`ttft_quantile_ms` meets ``slo_ms``: 1 for
    an infinite SLO, 0 where the unloaded TTFT already misses it; else by bisection
    (:data:`BISECTION_STEPS`, the TTFT quantile rising with the utilisation)."""
    slo, ttft0 = np.broadcast_arrays(np.asarray(slo_ms, float), np.asarray(unloaded_ttft_ms, float))
    lo, hi = np.zeros(slo.shape), np.ones(slo.shape)
    for _ in range(BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        ok = ttft_quantile_ms(q, ttft0, batch, slot_s, mid, arrival_cv, service_cv) <= slo
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    return np.where(np.isinf(slo), 1.0, np.where(ttft0 > slo, 0.0, lo))


def _phase(mean, peak_to_mean, capacity):
    """``(s, theta0)``: the capacity's place on the sinusoid, ``s = (cap - m) / (m (p - 1))``
    clipped to [-1, 1], and ``arcsin(s)``."""
    m, p, cap = (np.asarray(x, float) for x in (mean, peak_to_mean, capacity))
    amp = m * (p - 1.0)
    s = np.divide(cap - m, amp, out=np.where(cap >= m, 1.0, -1.0), where=amp > 0)
    s = np.clip(s, -1.0, 1.0)
    return s, np.arcsin(s)


def served_mean(mean, peak_to_mean, capacity) -> np.ndarray:
    """Mean over a day of ``min(D(t), capacity)`` for the sinusoid ``D`` (tokens/s):
    ``m - (m (p - 1) 2 sqrt(1 - s^2) - (cap - m)(pi - 2 theta0)) / (2 pi)``."""
    m, p, cap = (np.asarray(x, float) for x in (mean, peak_to_mean, capacity))
    s, theta0 = _phase(m, p, cap)
    excess = (m * (p - 1.0) * 2.0 * np.sqrt(1.0 - s * s) - (cap - m) * (np.pi - 2.0 * theta0)) / (2.0 * np.pi)
    return np.where(s >= 1.0, m, np.where(s <= -1.0, np.minimum(m, cap), m - excess))


def share_below(mean, peak_to_mean, capacity) -> np.ndarray:
    """Share of a day the sinusoid demand is at most ``capacity``: ``1/2 + theta0 / pi``."""
    s, theta0 = _phase(mean, peak_to_mean, capacity)
    return np.where(s >= 1.0, 1.0, np.where(s <= -1.0, 0.0, 0.5 + theta0 / np.pi))


def fleet_instances(up_needed, down_probability, quantile) -> np.ndarray:
    """Fewest instances ``N`` whose ``N - k`` up instances reach ``up_needed``, ``k`` the
    ``quantile`` of the instances down, Binomial(N, ``down_probability``) (independent
    instances); integer bisection over ``[up_needed, 2 up_needed / (1 - p) + 64]``."""
    need = np.ceil(np.asarray(up_needed, float))
    p = np.broadcast_to(np.asarray(down_probability, float), need.shape)
    lo = need - 1.0  # too few (or none needed)
    hi = 2.0 * np.ceil(need / np.maximum(1.0 - p, 1e-12)) + 64.0
    for _ in range(64):
        mid = np.floor(0.5 * (lo + hi))
        ok = mid - stats.binom.ppf(quantile, mid, p) >= need
        lo, hi = np.where(ok, lo, mid), np.where(ok, mid, hi)
    return np.where(need <= 0.0, 0.0, hi)
