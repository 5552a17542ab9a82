"""Closed forms of the plain queues the serving simulator is tested against
(docs/serve.md#closed-form-checks): M/M/1, M/G/1 (Pollaczek–Khinchine) and M/M/c
(Erlang C), all first come first served, in steady state.

Notation: arrival rate ``lam`` (1/s), service rate ``mu`` (1/s) or service time moments,
``c`` servers, offered load ``a = lam / mu``, utilisation ``rho = a / c < 1``.

References: L. Kleinrock (1975), *Queueing Systems, Vol. 1: Theory*, Wiley: §3.2 (M/M/1,
the sojourn time exponential with rate ``mu - lam``), §5.6 (the Pollaczek–Khinchine mean
wait), §3.5 (M/M/c and the Erlang C formula).
"""

from __future__ import annotations

import math


def _stable(rho: float) -> None:
    if not 0.0 <= rho < 1.0:
        raise ValueError(f"utilisation {rho} is not in [0, 1): the queue has no steady state")


def mm1_wait_mean(lam: float, mu: float) -> float:
    """M/M/1 mean wait in queue, ``rho / (mu - lam)``."""
    _stable(lam / mu)
    return lam / mu / (mu - lam)


def mm1_sojourn_mean(lam: float, mu: float) -> float:
    """M/M/1 mean time in system, ``1 / (mu - lam)``."""
    _stable(lam / mu)
    return 1.0 / (mu - lam)


def mm1_sojourn_quantile(lam: float, mu: float, q: float) -> float:
    """M/M/1 ``q``-quantile of the time in system: exponential with rate ``mu - lam``,
    ``-ln(1 - q) / (mu - lam)``."""
    _stable(lam / mu)
    return -math.log1p(-q) / (mu - lam)


def mm1_wait_quantile(lam: float, mu: float, q: float) -> float:
    """M/M/1 ``q``-quantile of the wait in queue: ``P(W > t) = rho e^{-(mu - lam) t}``, so
    ``ln(rho / (1 - q)) / (mu - lam)`` where ``q > 1 - rho`` and 0 (no wait) below."""
    rho = lam / mu
    _stable(rho)
    return max(math.log(rho / (1.0 - q)), 0.0) / (mu - lam)


def pk_wait_mean(lam: float, service_mean: float, service_second_moment: float) -> float:
    """M/G/1 mean wait in queue (Pollaczek–Khinchine), ``lam E[S^2] / (2 (1 - rho))``."""
    rho = lam * service_mean
    _stable(rho)
    return lam * service_second_moment / (2.0 * (1.0 - rho))


def md1_wait_mean(lam: float, service_s: float) -> float:
    """M/D/1 mean wait in queue: Pollaczek–Khinchine with ``E[S^2] = d^2``,
    ``rho d / (2 (1 - rho))``."""
    return pk_wait_mean(lam, service_s, service_s * service_s)


def erlang_c(c: int, a: float) -> float:
    """Probability that an arrival waits in M/M/c with offered load ``a = lam / mu``:
    ``(a^c / c!) / (1 - rho) / (sum_{k<c} a^k / k! + (a^c / c!) / (1 - rho))``."""
    rho = a / c
    _stable(rho)
    term, total = 1.0, 0.0
    for k in range(c):
        total += term
        term *= a / (k + 1)
    tail = term / (1.0 - rho)
    return tail / (total + tail)


def mmc_wait_mean(lam: float, mu: float, c: int) -> float:
    """M/M/c mean wait in queue, ``C(c, a) / (c mu - lam)``."""
    return erlang_c(c, lam / mu) / (c * mu - lam)
