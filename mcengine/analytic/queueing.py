"""Closed forms of serving under load (docs/load.md): the per-mode fast models of the trial
chain (:func:`static_at_load`, :func:`continuous_at_load`, :func:`disaggregated_at_load`)
and the queueing formulas they share.

A G/G/c queue of ``c`` servers, each holding a request ``service_s`` seconds, at
utilisation ``rho`` (Allen & Cunneen): the probability of waiting is Erlang C at offered
load ``a = rho c``, and the wait beyond it is exponential with rate ``(c mu - lambda) 2 /
(c_a^2 + c_s^2)``, exact for M/M/c (``c_a = c_s = 1``) (:func:`wait_quantile`,
:func:`mean_wait`; the continuous model's burst term).

The diurnal demand is a sinusoid ``D(t) = m (1 + (p - 1) sin(2 pi t / day))`` of mean
``m`` and peak-to-mean ``p``; :func:`served_mean` and :func:`share_below` integrate
it against a capacity in closed form.

References: A. O. Allen, *Probability, Statistics and Queueing Theory* (1990), the
Allen-Cunneen approximation; L. Kleinrock, *Queueing Systems* vol. 1 (1975), Erlang C
and the M/M/c waiting-time law (docs/sources.md#load-queueing).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import special, stats

from ..kernels import queueing as kq

#: Most steps of :func:`_queue_ratio`'s and :func:`_batched_ttft`'s bracketed Newton solves
#: (:mod:`mcengine.kernels.queueing`; a fixed cap: run time never grows with a value; the
#: bisection each step falls back to would reach a float's resolution of either bracket in
#: 60).
ROOT_STEPS = 60
#: The step, relative to the root, at which :func:`_queue_ratio` and :func:`_batched_ttft`
#: take a trial's root as solved: a Newton step that short leaves it within about the square
#: of that where the residual is smooth (a float's resolution), a halving within that.
ROOT_TOLERANCE = 1e-13

#: Bisection steps of :func:`join_excess_quantile` (a fixed count: run time never grows
#: with a value; 2^-60 of its bracket is below a float's resolution).
BISECTION_STEPS = 60
#: Most steps of :func:`_mixed_own_excess_s`'s bracketed Newton solve (a fixed cap: run time
#: never grows with a value; the bisection a step falls back to would reach a float's
#: resolution of the bracket in 60).
OWN_STEPS = 60
#: The step, relative to the larger end of its bracket, at which :func:`_mixed_own_excess_s`
#: takes a trial's root as solved.
OWN_TOLERANCE = 1e-13
#: Gauss-Legendre nodes of :func:`longest_ratio` (a fixed count: run time never grows with a
#: value; against adaptive quadrature the 32-node rule is within 3e-5 relative over batches
#: 1-256 and length CVs 0.1-3).
LONGEST_NODES = 32


def _where_spread(v, constant, law) -> np.ndarray:
    """``law(v)`` where the squared length CV ``v`` is above 0, ``constant`` where it is 0 (every
    request the mean length): ``law`` is called once, on ``v`` with its zeros set to 1 (a
    finite stand-in whose values are discarded), and not at all where no ``v`` is above 0."""
    spread = v > 0.0
    if not spread.any():
        return np.full(v.shape, constant)
    return np.where(spread, law(np.where(spread, v, 1.0)), constant)


def length_quantile(q, length_cv) -> np.ndarray:
    """The ``q`` quantile of a request's length over the mean, its law gamma of mean 1 and CV
    ``length_cv`` (the simulator's, docs/load.md#length-spread): ``P^-1(1 / v, q) v``, ``v =
    length_cv^2``, ``P^-1`` the inverse regularised lower incomplete gamma function; 1 where
    ``length_cv = 0`` (every request the mean)."""
    def law(v):
        q_, v = np.broadcast_arrays(np.asarray(q, float), v)
        return special.gammaincinv(1.0 / v, q_) * v

    return _where_spread(np.asarray(length_cv, float) ** 2, 1.0, law)


def multi_token_share(output_tokens, length_cv) -> np.ndarray:
    """The share of requests with more than one output token, whose TPOT is a time per token
    (a one-token request's is 0: its first token is its last), lengths gamma of mean ``O =
    output_tokens`` and CV ``length_cv`` rounded to whole tokens, at least 1 (the
    simulator's): ``P(X >= 3/2) = Q(1 / v, 3 / (2 O v))``, ``v = length_cv^2``, ``Q`` the
    regularised upper incomplete gamma function; 1 where ``length_cv = 0`` (every request
    ``O`` tokens; the model's ``O`` is above 1)."""
    return _where_spread(np.asarray(length_cv, float) ** 2, 1.0, lambda v: special.gammaincc(1.0 / v, 1.5 / (np.asarray(output_tokens, float) * v)))


def join_excess_quantile(q, output_tokens, length_cv) -> np.ndarray:
    """The ``q`` quantile over requests of ``U / m``, the share of a decode step a request
    waits to join its decode instance's batch (``U`` uniform: its KV lands in a step in
    progress, docs/serve.md) over its ``m = O_i - 1`` decode steps, with ``O_i`` gamma of
    mean ``O = output_tokens`` and CV ``length_cv`` (one-token requests, ``O_i < 3/2``,
    have a TPOT of 0: below any excess). ``P(U / m > x) = int_{3/2}^{1 + 1/x} (1 - (g - 1)
    x) f(g) dg = (1 + x)(F(1 + 1/x) - F(3/2)) - x (M(1 + 1/x) - M(3/2))``, ``F(y) = P(k, y /
    theta)`` and the partial mean ``M(y) = O P(k + 1, y / theta)`` (``k = 1 / v``, ``theta =
    O v``, ``v = length_cv^2``, ``P`` the regularised lower incomplete gamma function),
    falling in ``x`` to 0 at ``x = 2``: :data:`BISECTION_STEPS` bisection steps on ``[0, 2]``.
    0 where ``length_cv = 0`` (``m = O - 1`` steps: the wait a negligible share, which the
    model leaves out) or where fewer than ``1 - q`` of the requests have an excess at all.
    While ``x`` times the largest ``m`` is below 1, ``P(U / m > x) = 1 - x E[m]``: a narrow
    spread's quantile is the mean length's ``q / (O - 1)`` exactly."""
    o, v = np.broadcast_arrays(np.asarray(output_tokens, float), np.asarray(length_cv, float) ** 2)
    out = np.zeros(o.shape)
    rows = v > 0.0
    if not rows.any():
        return out
    k, theta, o = 1.0 / v[rows], o[rows] * v[rows], o[rows]
    cdf_low, mean_low = special.gammainc(k, 1.5 / theta), o * special.gammainc(k + 1.0, 1.5 / theta)  # F(3/2), M(3/2): the same at every x

    def above(x):
        edge = (1.0 + 1.0 / np.maximum(x, 1e-300)) / theta
        return np.where(x < 2.0, (1.0 + x) * (special.gammainc(k, edge) - cdf_low) - x * (o * special.gammainc(k + 1.0, edge) - mean_low), 0.0)

    tail = 1.0 - np.broadcast_to(np.asarray(q, float), out.shape)[rows]
    lo, hi = np.zeros(k.shape), np.full(k.shape, 2.0)
    for _ in range(BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        over = above(mid) > tail
        lo, hi = np.where(over, mid, lo), np.where(over, hi, mid)
    out[rows] = hi
    return out


def chunked_share(output_tokens, length_cv, per_prompt) -> np.ndarray:
    """The share of requests whose decode steps all fit in the rest of the prompt a
    continuous instance's stream is prefilling when they start: ``m = O_i - 1`` steps at
    most that prompt's mean remaining chunk steps ``R = (S / c)(1 + v) / 2`` (``per_prompt
    = S / c``; the prompt in progress length-biased, mean ``(S / c)(1 + v)``, ``v =
    length_cv^2``, and half of it left), ``O_i`` gamma of mean ``O = output_tokens``:
    ``P(3/2 <= O_i <= 3/2 + R)`` (one-token requests have no TPOT). 0 where ``length_cv = 0``."""
    o, v, d = np.broadcast_arrays(np.asarray(output_tokens, float), np.asarray(length_cv, float) ** 2, np.asarray(per_prompt, float))

    def law(v):
        k, theta = 1.0 / v, o * v
        return special.gammainc(k, (1.5 + d * (1.0 + v) / 2.0) / theta) - special.gammainc(k, 1.5 / theta)

    return _where_spread(v, 0.0, law)


def longest_ratio(batch, length_cv) -> np.ndarray:
    """The mean of the longest of ``batch`` independent lengths over their mean, each gamma of
    mean 1 and CV ``length_cv`` (docs/load.md#length-spread): the longest's law is ``F^b``, so
    its mean is ``int_0^1 F^-1(w^(1/b)) dw``; with ``w = 1 - (1 - t)^2`` (which takes the
    quantile's logarithmic end at ``w = 1`` to a zero of the integrand) it is ``int_0^1
    F^-1((1 - (1 - t)^2)^(1/b)) 2 (1 - t) dt``, by :data:`LONGEST_NODES` Gauss-Legendre nodes
    (David and Nagaraja, *Order Statistics*, 2003; docs/sources.md#load-length-spread). 1
    where ``length_cv = 0`` or ``batch <= 1``."""
    b, v = np.broadcast_arrays(np.asarray(batch, float), np.asarray(length_cv, float) ** 2)
    out = np.ones(b.shape)
    rows = (v > 0.0) & (b > 1.0)
    if rows.any():
        t, w = np.polynomial.legendre.leggauss(LONGEST_NODES)
        t, w = (t + 1.0) / 2.0, w * (1.0 - (t + 1.0) / 2.0)  # the rule on [0, 1] times the change of variable's 2 (1 - t)
        level = (1.0 - (1.0 - t) ** 2)[None, :] ** (1.0 / b[rows][:, None])
        out[rows] = (special.gammaincinv(1.0 / v[rows][:, None], level) * w).sum(axis=1) * v[rows]  # a row's sum alone: the same whatever rows share the call
    return out


def _erlang_b(servers, offered):
    """``(c, a, a / c, B)``: the broadcast servers and offered load, the utilisation (1 where
    ``c = 0``) and Erlang B, ``B = pmf(c; a) / cdf(c; a)`` of a Poisson(a) law (constant time
    in ``c``; 0 where ``c`` is not whole). The law's pmf and cdf are scipy.special's
    ``exp(xlogy(c, a) - gammaln(c + 1) - a)`` and ``pdtr``, the functions ``scipy.stats.poisson``
    evaluates, called without its argument checks (the same numbers in a fifth of the time)."""
    c, a = np.broadcast_arrays(np.asarray(servers, float), np.asarray(offered, float))
    rho = np.divide(a, c, out=np.ones_like(a), where=c > 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        whole = np.floor(c)
        pmf = np.where(whole == c, np.exp(special.xlogy(c, a) - special.gammaln(c + 1.0) - a), 0.0)
        return c, a, rho, pmf / special.pdtr(whole, a)


def _erlang_c_of(a, rho, blocking):
    """Erlang C from Erlang B, ``C = B / (1 - rho (1 - B))``: 0 where ``a <= 0``, 1 where ``rho >= 1``."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = blocking / (1.0 - rho * (1.0 - blocking))
    out = np.where(a <= 0.0, 0.0, out)
    return np.where(rho >= 1.0, 1.0, np.clip(np.nan_to_num(out, nan=1.0), 0.0, 1.0))


def erlang_c(servers, offered) -> np.ndarray:
    """Probability that an arrival waits in M/M/c with ``servers`` = c and offered load
    ``offered`` = a = lambda / mu (Erlang C); 1 where ``a >= c``: through Erlang B
    (:func:`_erlang_b`), ``C = B / (1 - (a/c)(1 - B))``."""
    _, a, rho, blocking = _erlang_b(servers, offered)
    return _erlang_c_of(a, rho, blocking)


def _erlang_c_slope(servers, offered) -> tuple[np.ndarray, np.ndarray]:
    """Erlang C (:func:`erlang_c`) and its derivative in the offered load: with ``B' = B (c / a
    - 1 + B)`` (Erlang B's), ``dC/da = (B' (1 - rho) + B (1 - B) / c) / (1 - rho (1 - B))^2``;
    0 where C is held at 0 or 1."""
    c, a, rho, b = _erlang_b(servers, offered)
    wait = _erlang_c_of(a, rho, b)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        slope = (b * (c / a - 1.0 + b) * (1.0 - rho) + b * (1.0 - b) / c) / (1.0 - rho * (1.0 - b)) ** 2
    return wait, np.where((wait > 0.0) & (wait < 1.0) & np.isfinite(slope), slope, 0.0)


def wait_scale_s(servers, service_s, rho, arrival_cv, service_cv) -> np.ndarray:
    """Allen-Cunneen's scale of the wait for a slot (s) in a G/G/c queue: ``h = (c_a^2 +
    c_s^2) / 2 x service_s / (c (1 - rho))``, the mean of the exponential wait of one who
    waits (``+inf`` at ``rho = 1``). Every wait of this module and of the planner's choice
    under load (:mod:`mcengine.stages.roofline.planner_load`) is written through it."""
    c, s, r = (np.asarray(x, float) for x in (servers, service_s, rho))
    scale = (np.asarray(arrival_cv, float) ** 2 + np.asarray(service_cv, float) ** 2) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return scale * s / (c * (1.0 - r))


def wait_quantile(q, servers, service_s, rho, arrival_cv, service_cv) -> np.ndarray:
    """The ``q`` quantile of the wait for a slot (s) in a G/G/c queue with ``servers``
    slots, mean holding time ``service_s`` and utilisation ``rho`` (Allen-Cunneen):
    ``P(W > t) = C e^(-t / h)``, ``h`` :func:`wait_scale_s`, so ``t_q = h max(0, ln(C / (1 - q)))``; ``+inf`` at ``rho >= 1``."""
    c, r = np.asarray(servers, float), np.asarray(rho, float)
    pw = erlang_c(c, r * c)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = wait_scale_s(c, service_s, r, arrival_cv, service_cv) * np.maximum(0.0, np.log(pw / (1.0 - np.asarray(q, float))))
    return np.where(r >= 1.0, np.inf, np.where(pw > 0.0, t, 0.0))


def mean_wait(servers, service_s, rho, arrival_cv, service_cv) -> np.ndarray:
    """Mean wait for a slot (s), Allen-Cunneen: ``C h``, ``h`` :func:`wait_scale_s`."""
    c, r = np.asarray(servers, float), np.asarray(rho, float)
    w = erlang_c(c, r * c) * wait_scale_s(c, service_s, r, arrival_cv, service_cv)
    return np.where(r >= 1.0, np.inf, w)


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


#: Most steps of :func:`fleet_instances`' fixed point (a fixed cap: run time never grows with
#: a value; each step adds the instances the previous step's extra instances have down, so
#: it ends in a few steps unless an instance is down most of the time).
FLEET_STEPS = 64


def fleet_instances(up_needed, down_probability, quantile) -> np.ndarray:
    """Fewest instances ``N`` whose ``N - k(N)`` up instances reach ``U = ceil(up_needed)``,
    ``k(N)`` the ``quantile`` of the instances down, Binomial(N, ``down_probability``)
    (independent instances). ``N - k(N)`` never falls as ``N`` grows (one more instance
    adds at most one down), so the least ``N`` is the fixed point of ``N <- U + k(N)``
    reached from ``N = U`` (each step at most the answer): :data:`FLEET_STEPS` steps at
    most, each on the trials not yet settled; a trial not settled by then (an instance
    down most of the time) has no fleet, ``+inf``."""
    shape = np.broadcast_shapes(*(np.shape(x) for x in (up_needed, down_probability, quantile)))
    need, p, q = (np.broadcast_to(np.asarray(x, float), shape).ravel() for x in (up_needed, down_probability, quantile))
    need = np.ceil(need)
    fleet = need.copy()
    open_ = np.flatnonzero(need > 0.0)
    for _ in range(FLEET_STEPS):
        if open_.size == 0:
            break
        step = need[open_] + stats.binom.ppf(q[open_], fleet[open_], p[open_])
        moved = step != fleet[open_]
        fleet[open_] = step
        open_ = open_[moved]
    fleet[open_] = np.inf
    return np.where(need <= 0.0, 0.0, fleet).reshape(shape)


# --------------------------------------------------------------------------- latency per serving mode


def _slope(at_1, at_top, span):
    """The slope of a step time linear in the batch, ``(at_top - at_1) / span`` over the
    ``span`` requests between its two values (0 where ``span <= 0``)."""
    return np.divide(np.asarray(at_top, float) - at_1, span, out=np.zeros(np.broadcast(at_top, at_1, span).shape), where=span > 0)


def _linear(at_1, at_top, top, x, low=1.0):
    """A step time linear in the batch through ``(low, at_1)`` and ``(top, at_top)``, at ``x``
    (at least ``low``)."""
    slope = _slope(at_1, at_top, np.asarray(top, float) - low)
    return np.asarray(at_1, float) + slope * (np.maximum(np.asarray(x, float), low) - low)


def _occupancy(rate, hold_1, hold_top, top, extra_s=0.0):
    """Requests running on one instance by Little's law, ``n = rate x hold(n)``, with the time a
    request is held linear in ``n`` through ``(1, hold_1)`` and ``(top, hold_top)`` plus
    ``extra_s``: ``n = rate (h_1 - g + extra) / (1 - rate g)``, ``g`` the slope; at most ``top``."""
    g = _slope(hold_1, hold_top, np.asarray(top, float) - 1.0)
    denom = 1.0 - rate * g
    n = np.divide(rate * (hold_1 - g + extra_s), denom, out=np.asarray(np.broadcast_to(top, denom.shape), float).copy(), where=denom > 0)
    return np.clip(n, 0.0, top)


def _batch_quantile(q, mean, arrival_cv, top, instances=1):
    """The ``q`` quantile of the occupancy a request shares its life with: the mean plus the
    normal ``q`` quantile of its fluctuation averaged over the request's life. The
    ``instances`` instances' total occupancy varies as an infinite-server queue's count,
    variance ``N n c_a^2``, ``2/3`` of it left averaged over one holding time (the triangle
    kernel's ``int w^2``); least-loaded dispatch spreads it evenly, so one instance's
    variance is ``2/3 n c_a^2 / N``. At most ``top``. The normal quantile is
    ``scipy.special.ndtri``, the function ``scipy.stats.norm.ppf`` evaluates, called
    without its argument checks (``+ 0.0``: its zero is positive, as ``ppf``'s)."""
    n = np.asarray(mean, float)
    return np.minimum(n + (special.ndtri(q) + 0.0) * np.sqrt(2.0 / 3.0 * n * np.asarray(arrival_cv, float) ** 2 / instances), top)


#: Fixed-point steps of the static batch (a fixed count: run time never grows with a value).
OCCUPANCY_STEPS = 48
#: The highest utilisation the static mode's G/D/c wait is evaluated at (the bus bound
#: takes over where the batches' utilisation reaches 1).
RHO_WAIT_MAX = 0.9999


class LoadLatency(NamedTuple):
    """A serving mode's latency under load (s; arrays over trials): TTFT and TPOT, mean and at
    the quantile asked, and the requests running per (decode) instance."""

    ttft_mean_s: np.ndarray
    ttft_q_s: np.ndarray
    tpot_mean_s: np.ndarray
    tpot_q_s: np.ndarray
    running: np.ndarray


class BatchQueue(NamedTuple):
    """:func:`batch_queue`'s state: the batch a waiting request leaves with and the mean
    batch over requests, the probability of waiting and the mean gap between servers
    falling idle while all are busy, as a waiting request sees it (s)."""

    batch_waited: np.ndarray
    batch_mean: np.ndarray
    wait_probability: np.ndarray
    gap_s: np.ndarray
    #: The requests a bursty stream puts after a waiting one's arrival beyond Poisson's,
    #: ``(c_a^2 - 1) / 2`` (Cox 1962), who leave in its batch.
    extra: np.ndarray | float
    #: The share of waiting requests that no other arrival of their gap joins, ``P(N = 0) =
    #: p^2`` (:func:`_waited_alone`), who leave with ``min(top, 1 + extra)``.
    waited_alone: np.ndarray | float


def batch_queue(rate_per_s, servers, cycle_1, cycle_top, top, arrival_cv=1.0) -> BatchQueue:
    """Requests served in batches by ``servers`` servers, each taking every queued request (up
    to ``top``) when it falls idle and holding them for ``T(k)`` (linear through ``(1,
    cycle_1)`` and ``(top, cycle_top)``). While all are busy, servers fall idle as a
    Poisson stream of rate ``c / T`` (gaps ``g = T / c``); a batch started then takes the
    requests that arrived in its gap (``1 + lambda g`` on average given at least one, the
    count in an exponential gap being geometric), and a batch started by a request that
    finds a server idle holds it alone. With ``C`` the probability that a request waits
    (Erlang C at the batches' utilisation ``u = lambda T / (k_b c)``), the mean batch is
    ``k_b = 1 - C + C min(top, 1 + lambda g)``, a fixed point solved exactly
    (:func:`_mean_batch`); a request that waits lands in a length-biased spacing of the
    passes' ends (its mean ``2 T / (c + 1)`` at the passes' mean batch: :func:`_waited_arrivals`)
    and leaves with ``k_w = E[min(top, 1 + e + N)]``, ``N`` the arrivals of that spacing
    (negative binomial: :func:`_gap_batch`) and ``e = (c_a^2 - 1) / 2`` the more a bursty
    stream puts after one of its points (Cox 1962; docs/sources.md#load-queueing). Bursty
    arrivals (inter-arrival CV ``c_a``) wait as if the gaps were ``z = (1 + c_a^2) / 2``
    times longer (Allen-Cunneen's factor with the servers' exponential gaps: ``gap_s`` is
    that), and wait more often: Halfin and Whitt's GI/M/c delay probability depends on the
    spare capacity ``(1 - u) sqrt(c)`` over ``sqrt(z)``, so ``C`` is Erlang C at the
    utilisation ``1 - (1 - u) / sqrt(z)`` (``u`` itself for Poisson arrivals)."""
    lam = np.asarray(rate_per_s, float)
    burst = (1.0 + np.asarray(arrival_cv, float) ** 2) / 2.0
    k = _mean_batch(lam, servers, cycle_1, cycle_top, top, burst)
    c, gap, _, _ = _batch_state(k, lam, servers, cycle_1, cycle_top, top, burst)
    extra = np.minimum(np.maximum(burst - 1.0, 0.0), np.asarray(top, float) - 1.0)
    arrivals = _waited_arrivals(lam, c, gap, servers, cycle_1, cycle_top, top)
    waited = _gap_batch(arrivals, top, extra)
    return BatchQueue(waited, 1.0 - c + c * waited, c, gap * burst, extra, _waited_alone(arrivals))


def _waited_arrivals(lam, wait, gap, servers, cycle_1, cycle_top, top):
    """The mean arrivals ``lambda g`` of the gap a waiting request waits in, ``g`` the scale of
    the spacing of the pass ends it lands in (the arrivals :func:`_gap_batch` takes for the
    mean batch it leaves with). Pass ends come at the rate the passes run, so a pass lasts
    ``T`` at the mean batch over passes, not over requests: a request that finds a server
    idle rides a pass of 1 and one that waits a pass of ``b = 1 + min(top - 1, lambda g)``,
    so the passes' mean is ``1 / (1 - C + C / b)`` (the harmonic mean of the requests
    batches). The ``c`` servers' ends are taken as ``c`` uniform phases of that pass:
    consecutive ends are ``T`` Beta(1, c - 1) apart and the spacing a waiting arrival lands
    in is ``T`` Beta(2, c - 1), of mean ``2 T / (c + 1)`` (Pyke 1965;
    docs/sources.md#load-queueing), which :func:`_gap_batch`'s gamma of shape 2 keeps as its
    mean (its scale ``T / (c + 1)``). Measured (docs/load.md#disaggregated):
    h100 on 16 instances, Poisson 0.9, the passes' mean batch 1.56 and a waiting request's
    spacing 19.8 ms (``2 T / (c + 1)`` with ``T`` at the passes' batch: 16.0 ms; the model's
    ``2 g`` at the mean batch over requests: 32.2 ms)."""
    top = np.asarray(top, float)
    passes = 1.0 / (1.0 - wait + wait / (1.0 + np.minimum(top - 1.0, lam * gap)))
    return lam * _linear(cycle_1, cycle_top, top, passes) / (np.asarray(servers, float) + 1.0)


def _batch_state(k, lam, servers, cycle_1, cycle_top, top, burst):
    """:func:`batch_queue` at a mean batch ``k >= 1``: the probability of waiting ``C(k)`` (Erlang
    C at ``u(k) = min(lambda T(k) / (k c),`` :data:`RHO_WAIT_MAX` ``)``, Halfin-Whitt's for
    bursts), the gap ``g(k) = T(k) / c``, the fixed point's residual ``G(k) = k - 1 - C(k)
    m(k)``, ``m(k) = min(top - 1, lambda g(k))``, and its derivative ``G'(k) = 1 - C' m - C m'``
    (``C'`` by :func:`_erlang_c_slope` through ``du/dk = -lambda (T(1) - s) / (c k^2)``, ``s``
    the cycle's slope; 0 where ``u`` is held at its cap, as ``m'`` where ``m`` is at ``top -
    1``)."""
    cycle = _linear(cycle_1, cycle_top, top, k)
    load = lam * cycle / (k * servers)
    root = np.sqrt(burst)
    u = 1.0 - (1.0 - np.minimum(load, RHO_WAIT_MAX)) / root  # Halfin-Whitt: the spare capacity over sqrt(z)
    wait, wait_slope = _erlang_c_slope(servers, u * servers)
    gap = cycle / servers
    room, arrivals = np.asarray(top, float) - 1.0, lam * gap
    fill = np.minimum(room, arrivals)
    slope = _slope(cycle_1, cycle_top, room)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        du = np.where(load < RHO_WAIT_MAX, lam * (slope * k - cycle) / (servers * k * k), 0.0)
        dfill = np.where(arrivals < room, lam * slope / servers, 0.0)
        derivative = 1.0 - wait_slope * servers / root * du * fill - wait * dfill
    return wait, gap, k - 1.0 - wait * fill, derivative


#: Most steps of :func:`_mean_batch`'s bracketed Newton solve (a fixed cap: run time never
#: grows with a value). Measured: the case study's prefill pools settle in 5-6 steps, pools
#: past their capacity in up to 13; on 200,000 random inputs over the keys' ranges every
#: root lies within 1e-12 of the answer after 40 steps (one did not after 32).
BATCH_STEPS = 40
#: The relative step at which :func:`_mean_batch` takes a trial's mean batch as solved.
BATCH_TOLERANCE = 1e-13


def _mean_batch(lam, servers, cycle_1, cycle_top, top, burst):
    """:func:`batch_queue`'s mean batch: the root ``k`` in ``[1, max(1, top)]`` of ``G(k) = k - 1
    - C(k) m(k)`` (:func:`_batch_state`), by Newton steps from 1 kept inside the bracket
    ``G(lo) <= 0 <= G(hi)`` (a step that would leave it, or not halve the step before last,
    or a non-positive ``G'``, halves the bracket instead), each
    trial frozen once its step is below :data:`BATCH_TOLERANCE` of ``k`` (so its answer is
    its own, whatever else the array holds) and left out of the steps after (each step
    evaluates the trials not yet settled alone), :data:`BATCH_STEPS` steps at most.

    The bracket holds at the start: ``G(1) = -C m <= 0`` and ``G(top) >= (top - 1)(1 - C) >=
    0``. The root is unique where a batch's cycle neither shrinks nor outgrows that many
    single passes (``0 <= s <= T(1)``, ``s`` the slope, as the roofline's passes are): then
    ``u = (lambda / c)(s + (T(1) - s) / k)`` never rises with ``k`` and ``lambda g`` never
    falls. Where ``m = top - 1``, ``G = k - 1 - C (top - 1)`` rises (``C`` never does). Where
    ``m = lambda g = u k`` and ``u`` is below its cap, ``G = k (1 - C u) - 1`` rises (``C u <
    1`` never rises with ``k``). Where ``u`` is at its cap, ``C`` is constant and ``G`` affine in ``k``:
    if it falls there, it is below ``G(1) <= 0``, and that piece is an interval from 1 (``u``
    never rises). So ``G`` may fall only while negative, then rises: one root."""
    shape = np.broadcast(lam, servers, cycle_1, cycle_top, top, burst).shape
    args = tuple(np.broadcast_to(np.asarray(x, float), shape).ravel() for x in (lam, servers, cycle_1, cycle_top, top, burst))
    out = np.ones(args[0].size)
    live, k, lo, hi = np.arange(out.size), out.copy(), out.copy(), np.maximum(args[4], 1.0)  # the trials not settled, and theirs
    moved = before = np.full(out.size, np.inf)  # the last two steps' lengths
    for _ in range(BATCH_STEPS):
        _, _, g, dg = _batch_state(k, *args)
        lo, hi = np.where(g <= 0.0, k, lo), np.where(g >= 0.0, k, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = k - g / dg
        fast = (dg > 0.0) & (newton >= lo) & (newton <= hi) & (2.0 * np.abs(newton - k) <= before)
        step = np.where(fast, newton, 0.5 * (lo + hi))
        on = ~(np.abs(step - k) <= BATCH_TOLERANCE * k)  # not settled
        moved, before = np.abs(step - k), moved
        out[live] = step
        if not on.any():
            break
        live, k, lo, hi, moved, before = live[on], step[on], lo[on], hi[on], moved[on], before[on]
        args = tuple(x[on] for x in args)
    return out.reshape(shape)


def _gap_batch(arrivals, top, extra):
    """The mean batch ``E[min(top, 1 + e + N)]`` a waiting request leaves with: itself, the
    ``e = extra`` more a bursty renewal stream puts after one of its points (Cox 1962:
    ``(c_a^2 - 1) / 2``) and the ``N`` arrivals of the length-biased gap it waits in
    (``arrivals = lambda g``, ``g`` the gap's scale: :func:`_waited_arrivals`). The gap is
    gamma of shape 2 and scale ``g``, so ``N`` is negative binomial of order 2, ``P(N >= j) = r^j (1 + j p)`` with
    ``p = 1 / (1 + lambda g)``, ``r = 1 - p``, and with ``m = top - 1 - e`` places left,
    ``E[min(m, N)] = sum_{j=1..m} P(N >= j) = r (1 - r^m) / p + r (1 - (m + 1) r^m + m r^(m + 1)) / p``
    (the cap taken inside the mean, not of it: Jensen's gap, large where ``lambda g`` is
    near the places left)."""
    a = np.maximum(np.asarray(arrivals, float), 0.0)
    top, e = np.asarray(top, float), np.asarray(extra, float)
    m = np.maximum(top - 1.0 - e, 0.0)
    p = 1.0 / (1.0 + a)
    r = 1.0 - p
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        rm = r**m
        count = r * (1.0 - rm) / p + r * (1.0 - (m + 1.0) * rm + m * rm * r) / p
    count = np.where(a > 0.0, np.clip(np.nan_to_num(count, nan=m), 0.0, m), 0.0)
    return np.minimum(1.0 + e + count, top)


def _waited_alone(arrivals):
    """``P(N = 0) = p^2``, ``p = 1 / (1 + lambda g)``: the share of waiting requests no other
    arrival of their gap joins (:func:`_gap_batch`'s negative binomial of order 2,
    ``arrivals = lambda g``, below 0 taken as 0)."""
    return (1.0 / (1.0 + np.maximum(arrivals, 0.0))) ** 2


#: Squared arrival CV below which the gamma gaps' transform (:func:`_queue_ratio`,
#: :func:`mcengine.kernels.queueing.queue_ratios`) takes the power's logarithm with
#: ``log1p`` (``1 + t c_a^2`` rounds to 1 there and the power to 1): a numerical switch, the
#: same law on both sides to about 10^-13.
SMOOTH_ARRIVAL_CV2 = 1e-3


def _queue_ratio(rate_per_s, arrival_cv, gap_s, top, dispersion=1.0):
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
    I))`` (``I -> 0``: ``-P ln z / g``, deterministic pass ends). The root in ``(0, 1)``
    exists where full passes drain faster than prompts arrive (``P > lambda g``); 1 (no
    steady state) where they do not: :func:`mcengine.kernels.queueing.queue_ratios`, a
    bracketed Newton solve of each trial to within :data:`ROOT_TOLERANCE` of its root
    (:data:`ROOT_STEPS` steps at most). Near 1 (a pool near its capacity) the residual is a
    difference of two numbers near 1, rounded to about 1e-16 over an interval about the
    root: any point of it is as much the root as another."""
    lam, v, g, p, d = _flat(rate_per_s, np.asarray(arrival_cv, float) ** 2, gap_s, top, dispersion)
    return kq.queue_ratios(lam, v, g, p, np.maximum(d, 1e-12), ROOT_STEPS, ROOT_TOLERANCE, SMOOTH_ARRIVAL_CV2).reshape(_shape(rate_per_s, arrival_cv, gap_s, top, dispersion))


def _shape(*arrays) -> tuple:
    """The shape the arrays broadcast to."""
    return np.broadcast_shapes(*(np.shape(x) for x in arrays))


def _flat(*arrays) -> tuple[np.ndarray, ...]:
    """The arrays broadcast to one shape, each flattened into a contiguous float64 array (a
    kernel's per-trial input)."""
    shape = _shape(*arrays)
    return tuple(np.ascontiguousarray(np.broadcast_to(np.asarray(x, float), shape)).ravel() for x in arrays)


def _queue_wait(bq: BatchQueue, rate_per_s, arrival_cv, servers, full_pass_s, top, at_least=0.0):
    """The longer of ``at_least`` (s) and the mean wait (s) of a request that waits in a
    :func:`batch_queue` for the passes of the queue ahead of it: the gap in progress and,
    for ``Q`` prompts ahead (geometric, :func:`_queue_ratio`), ``J = floor(Q / P)`` whole
    gaps more, ``P(J >= j) = z^(P j)``. With exponential gaps of mean ``g``
    (:attr:`BatchQueue.gap_s` less its burst factor ``(1 + c_a^2) / 2``), ``1 + J`` of them
    sum to an exponential of mean ``W(I) = g / (1 - z_I^P)`` (a geometric sum of
    exponentials), ``z_I`` the ratio at pass ends of index of dispersion ``I``. The passes'
    ends over a window ``tau`` shorter than a pass ``T = c g`` come from the ``c`` servers
    each with probability ``tau / T`` (uniform phases: binomial, index of dispersion ``1 -
    tau / T``), and over longer windows they are as regular as the passes (``0``; the pass
    time taken constant at the mean batch). The window is the wait itself, the time scale
    over which the queue ahead drains (the index of dispersion read at the queue's own time
    scale: Fendick and Whitt 1989, docs/sources.md#load-queueing): the fixed point ``W =
    W(I(W))``, ``I(W) = max(0, 1 - W / T)`` (:func:`_self_consistent_wait`). ``W(I)`` rises
    with ``I`` and ``I(W)`` falls with ``W``, so the root is unique, and since ``W(I)``
    rises with the rate at every ``I`` (and ``T`` with the batch), the wait never falls as
    the load rises. Where prompts arrive faster than full passes serve them (``lambda >= c P
    / T(P)``, ``T(P) = full_pass_s``: no steady state) the rate is held at
    :data:`RHO_WAIT_MAX` of that, as :func:`batch_queue` holds its utilisation: a wait far
    past any SLO, finite for the chain's columns (``inf`` only where no root below 1 exists
    at all). The fixed point's wait is at most ``W(1)``, so where that is at most
    ``at_least`` the answer is ``at_least`` without solving it."""
    top = np.asarray(top, float)
    lam = np.minimum(np.asarray(rate_per_s, float), RHO_WAIT_MAX * np.asarray(servers, float) * top / np.asarray(full_pass_s, float))
    g = bq.gap_s / ((1.0 + np.asarray(arrival_cv, float) ** 2) / 2.0)
    shape = _shape(bq.gap_s, rate_per_s, arrival_cv, servers, full_pass_s, top, at_least)
    return _self_consistent_wait(*_flat(lam, arrival_cv, g, top, np.asarray(servers, float) * g, at_least)).reshape(shape)


#: Most steps of :func:`_self_consistent_wait`'s bracketed solve (a fixed cap: run time
#: never grows with a value; the halving a step falls back to reaches 2^-60 of the bracket).
DISPERSION_STEPS = 60
#: The bracket's width at which :func:`_self_consistent_wait` takes a trial's index of
#: dispersion as solved.
DISPERSION_TOLERANCE = 1e-12


def _self_consistent_wait(lam, arrival_cv, g, top, pass_s, at_least):
    """The longer of ``at_least`` and :func:`_queue_wait`'s fixed point (flat arrays: arrivals/s,
    arrival CV, gap ``g``, prompts a pass, pass ``T``, the floor): the wait ``W(I) = g / (1
    - z_I^P)`` (:func:`_queue_ratio`) at the root ``I`` in ``[0, 1]`` of ``phi(I) = 1 - W(I)
    / T - I``, ``W(0)`` where ``phi(0) <= 0`` (a wait of a pass or more: ends as regular as
    the passes). ``phi`` falls strictly (``W`` rises with ``I``), so the root is unique. The
    bracket starts at ``[I_1, 1]``, ``I_1 = max(0, 1 - W(1) / T)`` (the window of Poisson
    ends' wait: ``phi(I_1) = (W(1) - W(I_1)) / T >= 0`` where ``I_1 > 0``, ``phi(1) = -W(1)
    / T < 0``); the Illinois variant of false position (M. Dowell and P. Jarratt, *BIT* 11,
    168-174, 1971: the end kept twice running has its value halved) steps inside it, a step
    outside the open bracket halving it instead, each trial frozen once its bracket is
    narrower than :data:`DISPERSION_TOLERANCE` (so its answer is its own, whatever else the
    array holds), :data:`DISPERSION_STEPS` steps at most. The wait returned is the last one
    evaluated, ``T (1 - I - phi(I))``; ``at_least`` where ``W(1)`` is at most that (``W <=
    W(1)``), the steps left out there."""
    def phi(i, rows):
        with np.errstate(divide="ignore", invalid="ignore"):
            wait = g[rows] / (1.0 - _queue_ratio(lam[rows], arrival_cv[rows], g[rows], top[rows], i) ** top[rows])
        return np.where(np.isfinite(wait), 1.0 - wait / pass_s[rows] - i, -np.inf)

    out = np.array(at_least, float)
    f_hi = phi(np.ones(lam.size), np.arange(lam.size))
    live = np.flatnonzero(~(-f_hi * pass_s <= at_least))  # W(1) = -T phi(1) above the floor
    lo = np.maximum(1.0 + f_hi[live], 0.0)  # I_1 = 1 - W(1) / T
    f_lo = phi(lo, live)
    out[live] = np.maximum(pass_s[live] * (1.0 - lo - f_lo), at_least[live])  # W(I_1): the answer where I_1 = 0 and phi(0) <= 0
    on = (f_lo > 0.0) & (1.0 - lo > DISPERSION_TOLERANCE)
    live, lo, hi, f_lo, f_hi = live[on], lo[on], np.ones(on.sum()), f_lo[on], f_hi[live[on]]
    kept = np.zeros(live.size)  # the end the last step kept: +1 the high, -1 the low, 0 none
    for _ in range(DISPERSION_STEPS):
        if live.size == 0:
            break
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            guess = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        x = np.where((guess > lo) & (guess < hi), guess, 0.5 * (lo + hi))
        f = phi(x, live)
        up = f > 0.0  # the root lies above x: x the new low end, the high end kept
        f_hi = np.where(up & (kept > 0.0), 0.5 * f_hi, f_hi)
        f_lo = np.where(~up & (kept < 0.0), 0.5 * f_lo, f_lo)
        lo, f_lo = np.where(up, x, lo), np.where(up, f, f_lo)
        hi, f_hi = np.where(up, hi, x), np.where(up, f_hi, f)
        kept = np.where(up, 1.0, -1.0)
        out[live] = np.maximum(pass_s[live] * (1.0 - x - f), at_least[live])
        on = (hi - lo > DISPERSION_TOLERANCE) & (f != 0.0)
        live, lo, hi, f_lo, f_hi, kept = live[on], lo[on], hi[on], f_lo[on], f_hi[on], kept[on]
    return out


def _batched_ttft(q, bq: BatchQueue, rate_per_s, arrival_cv, servers, full_pass_s, first_1, first_top, top):
    """Mean and ``q`` quantile of the TTFT of a :func:`batch_queue` of ``servers`` servers whose
    batch of ``k`` gives its first tokens ``first(k)`` after it starts (linear in ``k``, slope
    ``f``). A request that waits (probability ``C``) waits ``R``, exponential of mean ``g``,
    and leaves with the ``1 + lambda (A + R)`` requests of its gap (``A`` its age, exponential
    of mean ``g``), so its TTFT is ``first(1) + a R + b A`` with ``a = 1 + lambda f``, ``b =
    lambda f``, plus ``f Y`` for the burst's ``e`` extra requests (``Y`` taken exponential of
    mean ``e``, :attr:`BatchQueue.extra`; 0 for Poisson arrivals): a hypoexponential law
    whose ``1 - (1 - q) / C`` quantile is found in ``[0, 50 (g (a + b) + f e)]`` by
    :func:`mcengine.kernels.queueing.hypoexponential_quantiles` (a bracketed Newton solve to
    within :data:`ROOT_TOLERANCE`, :data:`ROOT_STEPS` steps at most), at most the
    wait's quantile plus ``first(top)`` (the batch full). ``g`` is the longer of the gap as
    bursts stretch it (:attr:`BatchQueue.gap_s`, Allen-Cunneen's factor: light traffic) and
    the wait for the passes of the queue ahead (:func:`_queue_wait`, passes of ``top`` taking
    ``full_pass_s``: near the pool's capacity); infinite where that wait is. Where ``C <= 1 -
    q`` the quantile is an unwaited request's ``first(1)``. The mean's waited batch is
    :attr:`BatchQueue.batch_waited` (:func:`_waited_arrivals`: the spacing of the pass ends a
    waiting request lands in, at the passes' own mean batch), while the quantile keeps the
    ``1 + lambda (A + R)`` law above: an assumed split, measured to fit the simulator's mean
    and P99 both (docs/load.md#disaggregated)."""
    lam = np.asarray(rate_per_s, float)

    def first(k):
        return _linear(first_1, first_top, top, k)

    slope = first(2.0) - first(1.0)
    c = bq.wait_probability
    g = _queue_wait(bq, rate_per_s, arrival_cv, servers, full_pass_s, top, at_least=bq.gap_s)
    steady = np.isfinite(g)
    g = np.where(steady, g, bq.gap_s)
    mean = (1.0 - c) * first(1.0) + c * (g + first(bq.batch_waited))
    a, b = 1.0 + lam * slope, lam * slope
    tail = np.clip((1.0 - np.asarray(q, float)) / np.maximum(c, 1e-300), 1e-300, 1.0)

    burst = slope * np.asarray(bq.extra, float)  # the mean of the burst's extra requests' share of the pass

    with np.errstate(over="ignore"):
        scales = _flat(a * g, np.maximum(b * g, 1e-300), burst, a, b, tail, 50.0 * (g * (a + b) + burst))
    lo = kq.hypoexponential_quantiles(*scales, ROOT_STEPS, ROOT_TOLERANCE).reshape(_shape(a, b, g, tail, burst))
    waited_q = np.minimum(first(1.0) + lo, g * np.log(1.0 / tail) + first(top))
    quantile = np.where(c > 1.0 - np.asarray(q, float), waited_q, first(1.0))
    return np.where(steady, mean, np.inf), np.where(steady, quantile, np.inf)


#: Squared coefficient of variation of the gaps between batch completions that a waiting
#: request sees once every instance is busy, on many instances, where a gap's excess is
#: kept from cycle to cycle (docs/load.md#static): above 1 because instances bunch (one
#: that takes a small batch has the shorter cycle and catches up with the one ahead). A
#: measured value of the fast model (docs/sources.md#load-queueing): the simulator's
#: gaps have 0.9-2.9 over the validation grid; 2 fits most of its cells. The default of
#: the scenario key ``workload.load.static_gap_cv2``, which the trial chain reads.
STATIC_GAP_CV2 = 2.0
#: The wait a bunched pool adds to a waiting request's, in cycles ``T(k)`` per unit of the
#: share ``P0`` of batches an idle instance starts, on Poisson arrivals
#: (docs/load.md#static-cycles): a value of the fast model fitted to the validation grid
#: (the simulator's excess over the unbunched ``T(k) / (c + 1)`` is 0.04-0.07 cycles at
#: ``a/c`` 1.8-4 on 4 to 32 instances, 0.054 at h100 and the Lite's load 0.2 on 16, where
#: the chain's ``P0`` is 0.40-0.46; the grid's count is the same from 0.1 to 0.12). The
#: default of the scenario key ``workload.load.static_bunch_cycles``.
STATIC_BUNCH_CYCLES = 0.1
#: The cycle's growth over a gap, ``A = lambda s``, up to which a bunch keeps its excess
#: whole; past it ``STATIC_BUNCH_GROWTH / A`` of it (docs/load.md#static-cycles: fitted, the
#: excess falls to 0.008 cycles at h100's load 0.5, ``A = 4.6``, and stays 0.034 at the
#: Lite's 0.4, ``A = 2.8``; the grid's count is the same from 2.5 to 3.5). The default of
#: the scenario key ``workload.load.static_bunch_growth``.
STATIC_BUNCH_GROWTH = 3.0
#: Gauss-Laguerre nodes of :func:`_idle_sums`' sums on a large busy pool.
GAP_NODES = 32
#: Bisection steps of :func:`_gap_ttft`'s TTFT quantile (a fixed count: 2^-30 of its
#: bracket, whose upper end is a few times the quantile).
GAP_STEPS = 30


class CompletionGaps(NamedTuple):
    """:func:`completion_gaps`' state (arrays): the mean batch over batches, the probability
    that a request finds an instance idle, the mean gap (s) between completions while every
    instance is busy, the gap's gamma shape (``1 / c_g^2``) and the instances."""

    batch_mean: np.ndarray
    idle_probability: np.ndarray
    gap_s: np.ndarray
    shape: np.ndarray
    servers: np.ndarray


_LAGUERRE_X, _LAGUERRE_W = np.polynomial.laguerre.laggauss(GAP_NODES)


def _idle_sums(servers, offered):
    """``S_1 = sum_i c! / (c - i)! a^(-i)`` and ``S_2 = sum_i i c! / (c - i)! a^(-i)`` over ``i =
    1 .. c`` (:func:`completion_gaps`' idle side over ``pi_0``): ``S_1 = P(N <= c - 1) / P(N = c)``
    and ``S_2 = (c P(N <= c - 1) - a P(N <= c - 2)) / P(N = c)`` for ``N`` Poisson(``a``) (``S_1 =
    1 / E_B - 1``, Erlang B); where ``P(N = c)`` is below a float's range and ``a > c`` (a busy
    pool of many instances), the same sums as ``E[(1 + U / a)^c] - 1`` and ``E[c U / a (1 + U /
    a)^(c - 1)]`` over ``U`` exponential, by :data:`GAP_NODES`-point Gauss-Laguerre (the
    integrand decays as ``exp(-U (1 - c / a))``). ``+inf`` where ``a << c`` (idle)."""
    c, a = np.broadcast_arrays(np.asarray(servers, float), np.asarray(offered, float))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        log_pmf = special.xlogy(c, a) - special.gammaln(c + 1.0) - a
        pmf = np.exp(log_pmf)
        below = special.pdtr(c - 1.0, a)
        below2 = np.where(c >= 2.0, special.pdtr(np.maximum(c - 2.0, 0.0), a), 0.0)
        s1, s2 = below / pmf, (c * below - a * below2) / pmf
    far = np.flatnonzero((log_pmf < -600.0) & (a > c))
    if far.size:
        cf, af = c.ravel()[far], a.ravel()[far]
        x = _LAGUERRE_X[:, None] / af
        grow = np.exp((cf - 1.0) * np.log1p(x))
        s1, s2 = s1.reshape(-1).copy(), s2.reshape(-1).copy()
        s1[far] = np.sum(_LAGUERRE_W[:, None] * (grow * (1.0 + x) - 1.0), axis=0)
        s2[far] = np.sum(_LAGUERRE_W[:, None] * cf * x * grow, axis=0)
    return s1.reshape(c.shape), s2.reshape(c.shape)


def _light_gap_cv2(servers, arrival_cv2):
    """The squared CV of the gaps a waiting request sees in light traffic, on gaps of mean ``T / c``
    (``c = servers``): every busy instance holds one request, started at one of the last
    ``c`` arrivals, so the request waits ``R = T - S`` for the oldest, ``S`` the span of the
    ``c`` arrival gaps before it, given ``S < T``. Gamma arrival gaps (squared CV ``v =
    arrival_cv2``) make ``S`` gamma of shape ``c / v``, whose density near 0 is ``~ s^(c / v -
    1)``, so in the light-traffic limit ``E[S | S < T] = T (c / v) / (c / v + 1)`` and
    ``E[R] = T v / (c + v)``: ``2 E[R] / (T / c) - 1 = 2 c v / (c + v) - 1``. Poisson's
    (``v = 1``) is ``(c - 1) / (c + 1)``, exact at any load given the ``c`` starts (uniform
    over the cycle; docs/load.md#static); one instance's is ``(v - 1) / (v + 1)`` (0, the
    deterministic cycle's uniform rest, for Poisson). Arrivals much smoother than Poisson's
    give a value below 0 (the oldest instance all but done: a wait near 0), which
    :func:`completion_gaps`' mix holds at a squared CV of ``1e-6``."""
    c, v = np.asarray(servers, float), np.asarray(arrival_cv2, float)
    return 2.0 * c * v / (c + v) - 1.0


#: The pool on which ``workload.load.static_gap_cv2`` was measured, the fit table's 16
#: instances (docs/load.md#static): :func:`_pool_bunching` leaves the bunched gaps as they are there.
STATIC_GAP_POOL = 16.0


def _pool_bunching(servers, amplify):
    """The bunched gaps' pool-size terms of :func:`completion_gaps` (docs/load.md#fleet-size):
    ``(kept, phases)``, the share of the bunching's excess ``gap_cv2 - 1`` kept and the shift
    of the busy side's base, ``1 + (gap_cv2 - 1)(1 - 1/c) w kept + (1 - 1/c) phases``, both
    relative to the pool the key was measured on, ``R =`` :data:`STATIC_GAP_POOL` (``kept =
    min(1, 1/A)`` and ``phases = 0`` there: the fit table's model as it was fitted).

    * ``phases = (c - 1)/(c + 1) - (R - 1)/(R + 1)``: ``c`` instances of equal cycles at
      independent uniform phases show a waiting request the earliest of ``c`` residuals, mean
      ``T/(c + 1)``, gaps of squared CV ``(c - 1)/(c + 1)`` (docs/load.md#static), 0.88 on 16
      instances, 0.6 on 4 and 0.98 on 128 (**derived**; weighted by ``1 - 1/c`` as the rest of
      the mix, so that one instance keeps the chain's exponential cycle).
    * ``kept = min(1, 1/(A R/c)) min(1, c/R)``: the damping read at the reference pool's
      ``A``, and a pool smaller than it bunches in proportion to its size. ``A = lambda s``
      (``amplify``, the cycle a gap's arrivals add) is the pool's rate times the cycle's slope,
      so at a fixed load per instance it grows as ``c``; read per instance the damping does
      not fall with ``c``. Below ``R`` the simulator's bunching shrinks with the pool (a
      waiting request waits 1.25 / 1.5 / 2.0 times the unbunched ``T/(c + 1)`` on 4 / 8 / 16
      instances at ``a/c = 2.4``, docs/load.md#static-direct: the excess squared CV about 0 /
      0.7 / 1.8). Above ``R`` no growth is added (**measured, not derived**; the forms tried
      and their cells: docs/load.md#fleet-size)."""
    c = np.asarray(servers, float)
    scale = STATIC_GAP_POOL / c
    kept = np.minimum(1.0, 1.0 / (amplify * scale)) * np.minimum(1.0, 1.0 / scale)
    phases = (c - 1.0) / (c + 1.0) - (STATIC_GAP_POOL - 1.0) / (STATIC_GAP_POOL + 1.0)
    return kept, phases


def completion_gaps(rate_per_s, servers, cycle_1, cycle_top, top, gap_cv2=STATIC_GAP_CV2, arrival_cv=1.0,
                    bunch_cycles=STATIC_BUNCH_CYCLES, bunch_growth=STATIC_BUNCH_GROWTH) -> CompletionGaps:
    """Greedy batching on ``servers`` instances (docs/load.md#static): an instance that falls
    idle takes every queued request (up to ``top``) at once and holds them for ``T(k)``
    (linear through ``(1, cycle_1)`` and ``(top, cycle_top)``); one that finds the queue
    empty waits and takes the next arrival alone.

    The queue is a Markov chain on ``X``, the requests waiting (``X > 0``) or minus the idle
    instances (``X < 0``): an arrival adds one; a completion, at rate ``(c - i) / T`` with
    ``i`` instances idle, either adds an idle instance (queue empty) or takes everyone
    waiting (``X -> 0``). With ``a = lambda T`` its stationary law is Erlang's on the idle
    side, ``pi_(-i) = pi_0 c! / (c - i)! a^(-i)``, and geometric on the waiting side,
    ``pi_j = pi_0 (lambda / (lambda + c / T))^j``, so with Erlang B ``E = E_B(c, a)``: the
    probability of finding an instance idle is ``(1/E - 1) / (1/E + a/c)`` and the busy
    instances ``c - E[i]``. Exact for one instance with exponential cycles (the
    M/M^[1,inf]/1 bulk-service queue: ``P(idle) = 1 / (1 + a + a^2)``; Chaudhry and
    Templeton 1983, docs/sources.md#load-queueing). Batches start at the completions'
    rate ``mu = busy / T``, so the mean batch is ``k = lambda / mu`` (at most ``top``) with
    ``T = T(k)``: :data:`OCCUPANCY_STEPS` damped fixed-point steps from 1.

    A request that waits waits for the next completion: gaps of mean ``T(k) / c`` while
    every instance is busy, gamma with squared CV ``c_g^2``: with the probability of finding
    an instance idle, the light-traffic gaps ``c_a^2 + (1 - 1/c)(L - c_a^2)``, ``L`` those of
    :func:`_light_gap_cv2` (the arrivals' ``c_a^2`` through the ``c`` singletons they started),
    weighted by ``1 - 1/c`` so that one instance keeps the arrivals' ``c_a^2`` (the
    M/M^[1,inf]/1 anchor above; the weighting is **assumed**, measured on the fit table,
    docs/load.md#static), and otherwise the bunched ``1 + (gap_cv2 - 1)(1 - 1/c) w min(1,
    1/A)`` on the :data:`STATIC_GAP_POOL` instances the key was measured on (one instance's
    exponential cycle: 1), on other pools with :func:`_pool_bunching`'s terms in ``c``
    (docs/load.md#fleet-size). ``A = lambda s (1 - P_full)`` is how many
    seconds of cycle a second of gap adds (``s`` the cycle's slope in the batch; a full batch
    adds none): where ``A > 1`` the instance that took the longer gap's batch falls behind
    the one after it, the two swap, and only ``1/A`` of the gap's excess is kept into the
    next cycle (**assumed**; below 1 all of it). ``w = min(1, max(0, a/c - 1))``, ``a =
    lambda T(k)``, is the bunching's onset: none while the pool's offered load is at most its
    instances (they take the arrivals about one at a time, at uniform phases), all of it
    from ``a = 2c`` (**measured** where it starts: on 4 to 64 instances of h100 and the Lite,
    Poisson, a waiting request waits the unbunched ``T(k) / (c + 1)`` within 11 % up to
    ``a/c = 1.1``, 1.12-1.17 times it at ``a/c = 1.4`` on 16 and more on larger pools; the
    ramp to ``2c`` is the natural unit, not fitted: the fit table passes the same cells for
    a start in 0.9-1.2 or an end in 1.5-3; docs/load.md#static-direct).
    The bunched side is the larger of that and the **cycle excess** (docs/load.md#static-cycles): a
    waiting request waits the unbunched ``T(k) / (c + 1)`` (the oldest of ``c`` instances at
    uniform phases) plus ``h T(k)``, an excess in cycles that does not grow with the pool
    (**measured**: 0.04-0.07 cycles at ``a/c`` 1.8-4 on 8, 16 and 32 instances), ``h = x w P0
    min(1, y / (lambda s)) / max(c_a^2, 1)`` (the cycle's growth a second of gap, without the
    full batches' share that ``A`` leaves out) with ``P0 = P(idle) k`` (at most 1) the share of batches
    an idle instance starts (the source of the bunching: an idle instance restarts at the
    next arrival, nearer the one ahead), ``x = bunch_cycles`` and ``y = bunch_growth``
    (**fitted**: 0.1 and 3, docs/sources.md#load-queueing) and bursty arrivals' ``c_a^2``
    (**assumed**; with gamma CV 2, ``gap_cv2``'s bunching is the larger side in every cell of
    the fit table's 16 instances, and on 4-128 instances in all but h100's at load 0.1 on 64
    and 128).
    In the gaps' terms (mean ``T(k) / c``) that is ``(c - 1) / (c + 1) + 2 c h``.
    ``P_full``, the share of batches that fill (``lambda G >= top`` for a gap ``G`` of that
    law), is taken from the bunching without it, once."""
    lam = np.asarray(rate_per_s, float)
    c = np.asarray(servers, float)
    top = np.asarray(top, float)

    def state(k):
        cycle = _linear(cycle_1, cycle_top, top, k)
        a = lam * cycle
        idle_weight, idle_count = _idle_sums(c, a)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            norm = 1.0 + idle_weight + a / c
            p_idle = np.where(np.isfinite(idle_weight), idle_weight / norm, 1.0)
            busy = np.where(np.isfinite(idle_weight), c - idle_count / norm, a)
        return p_idle, np.clip(busy, 1e-300, c), cycle

    k = np.ones(np.broadcast(lam, c, top).shape)
    for _ in range(OCCUPANCY_STEPS):
        _, busy, cycle = state(k)
        k = 0.5 * k + 0.5 * np.clip(lam * cycle / busy, 1.0, top)
    p_idle, _, cycle = state(k)
    slope = (np.asarray(cycle_top, float) - cycle_1) / np.maximum(top - 1.0, 1.0)
    arrivals = np.asarray(arrival_cv, float) ** 2
    light = arrivals + (1.0 - 1.0 / c) * (_light_gap_cv2(c, arrivals) - arrivals)  # one instance: the chain's exponential cycle, c_a^2
    onset = np.clip(lam * cycle / c - 1.0, 0.0, 1.0)  # no bunching while a <= c, all of it from a = 2c
    growth = np.minimum(1.0, np.asarray(bunch_growth, float) / np.maximum(lam * slope, 1e-300))
    h = np.asarray(bunch_cycles, float) * onset * np.minimum(p_idle * k, 1.0) * growth / np.maximum(arrivals, 1.0)  # the cycle excess
    by_cycles = (c - 1.0) / (c + 1.0) + 2.0 * c * h
    full = np.zeros(np.shape(k))
    for _ in range(2):  # the bunching with no batch full, then with the share of full batches it gives
        amplify = np.maximum(lam * slope * (1.0 - full), 1e-300)
        pool_kept, phases = _pool_bunching(c, amplify)
        pooled = 1.0 + (np.asarray(gap_cv2, float) - 1.0) * (1.0 - 1.0 / c) * onset * pool_kept + (1.0 - 1.0 / c) * phases
        bunched = np.maximum(pooled, by_cycles)
        cv2 = np.maximum(p_idle * light + (1.0 - p_idle) * bunched, 1e-6)
        with np.errstate(divide="ignore", invalid="ignore"):
            full = np.where(top > 1.0, special.gammaincc(1.0 / cv2, top * c / np.maximum(lam * cycle * cv2, 1e-300)), 1.0)
    return CompletionGaps(k, p_idle, cycle / c, 1.0 / cv2, c)


def _uniform_gamma_tail(shape, scaled, offset, u_lo, u_hi):
    """``int_{u_lo}^{u_hi} Q(s, k / (u + c)) du`` (``Q`` the regularised upper incomplete gamma
    function, ``s = shape > 1``, ``k = scaled`` (below 0: 0), ``c = offset``): with ``w = 1 / (u +
    c)`` and by parts, ``G(w_lo) - G(w_hi)``, ``G(w) = -Q(s, k w) / w - k / (s - 1) P(s - 1, k w)``
    (``w = inf`` where ``u + c = 0``)."""
    k = np.maximum(np.asarray(scaled, float), 1e-300)

    def g(base):
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(base > 0, 1.0 / np.where(base > 0, base, 1.0), np.inf)
            upper = np.where(np.isinf(w), 0.0, special.gammaincc(shape, k * w) / w)
            return -upper - k / (shape - 1.0) * special.gammainc(shape - 1.0, k * w)

    return np.where(u_hi > u_lo, g(u_lo + offset) - g(u_hi + offset), 0.0)


def _spill_wait(batch_mean, top, gap_cv2, arrival_cv2, rate_per_s, servers):
    """The mean wait (s) past the next completion of :func:`completion_gaps`' queue near the
    batch's capacity, and the mean (s) of its exponential part (below): the bulk-service
    queue seen at completions (docs/load.md#static). A completion takes at most ``top`` of the ``W`` requests left by the one before and the
    ``N`` arriving in its gap, so ``W' = (W + N - top)^+``, Lindley's recursion with steps
    ``X = N - top`` of mean ``-mu = k - top`` (``k`` the mean batch) and variance ``V``. With
    ``I = (W + X)^-`` the part of the batch left empty, stationarity gives ``E[W] = (V + mu^2 -
    E[I^2]) / (2 mu)`` exactly for independent steps (Kingman's identity for the random walk,
    ``E[I] = mu``); ``0 <= I <= top`` bounds it, ``V / (2 mu) - k / 2 <= E[W] <= V / (2 mu)``
    (the upper bound is Kingman's). The model takes the lower bound, the batch left
    emptiest (measured: it fits the simulator's full batches at loads 0.7-0.9, where the
    upper bound over-states the h100 design's mean TTFT by 7-12 %;
    docs/sources.md#load-queueing), and by Little's law the wait is ``E[W] / lambda``.

    The steps are not independent: the arrivals' part of ``V`` is, ``k c_a^2``, but the
    gaps' part, ``k^2 c_g^2`` over one gamma gap of squared CV ``c_g^2``, cancels over
    consecutive gaps (the ``servers`` instances' completions keep their phases while batches
    fill, so ``c`` gaps sum to about one cycle). Over a walk that needs ``n = E[W] / mu``
    completions to drain its queue (Kingman's ``E[W] = V / (2 mu)``) the model keeps ``min(1, sqrt(c / n))`` of the gaps' part
    (**measured, not derived**: the simulator's ``V`` at h100 and the Lite, Poisson 0.9-0.99,
    16 instances, docs/load.md#near-capacity), so with ``n = V / (2 mu^2)`` the step variance
    is the fixed point ``V = k c_a^2 + k^2 c_g^2 min(1, sqrt(2 c mu^2 / V))``: the one-gap
    ``V_1`` where ``V_1 <= 2 c mu^2`` (the queue drains within a cycle), and otherwise the
    positive root ``x = sqrt(V)`` of ``x^3 - k c_a^2 x - k^2 c_g^2 mu sqrt(2 c) = 0``
    (Cardano). As ``k -> top`` (``mu -> 0``) the gaps' part vanishes (as ``mu^(2/3)`` while it
    outweighs the arrivals' part, then as ``mu``) and ``V`` tends to the arrivals' ``k
    c_a^2``, the heavy-traffic limit of a pool whose full batches keep their phases. In that
    limit the walk is a reflected Brownian motion of variance ``k c_a^2`` a step and drift
    ``-mu``, whose level is exponential of mean ``k c_a^2 / (2 mu)`` (Harrison 1985,
    docs/sources.md#load-queueing), and the gaps' part a bounded shift: the second value is
    that exponential part's mean (at most the whole wait's), which :func:`_gap_ttft` spreads
    into the quantile. ``mu`` is at least ``top (1 -``
    :data:`RHO_WAIT_MAX` ``)``."""
    k = np.asarray(batch_mean, float)
    top = np.asarray(top, float)
    mu = top * (1.0 - np.minimum(k / top, RHO_WAIT_MAX))
    own, gaps = k * np.asarray(arrival_cv2, float), k * k * np.asarray(gap_cv2, float)
    horizon = 2.0 * np.asarray(servers, float) * mu * mu  # V at which the queue drains within c completions
    variance = np.where(own + gaps <= horizon, own + gaps, _cubic_root(own, gaps * np.sqrt(horizon)) ** 2)
    left = np.maximum(variance / (2.0 * mu) - k / 2.0, 0.0)
    rate = np.asarray(rate_per_s, float)
    per_s = np.divide(1.0, rate, out=np.zeros(np.broadcast(left, rate).shape), where=rate > 0)
    return left * per_s, np.minimum(own / (2.0 * mu), left) * per_s


def _cubic_root(p, r):
    """The positive root of ``x^3 - p x - r = 0`` (``p >= 0``, ``r >= 0``; the only one):
    Cardano's ``cbrt(r/2 + sqrt(D)) + cbrt(r/2 - sqrt(D))`` where ``D = r^2/4 - p^3/27 >= 0``,
    and the trigonometric ``2 sqrt(p/3) cos(arccos(3 r / (2 p) sqrt(3 / p)) / 3)`` below."""
    p, r = np.broadcast_arrays(np.asarray(p, float), np.asarray(r, float))
    d = r * r / 4.0 - p ** 3 / 27.0
    with np.errstate(divide="ignore", invalid="ignore"):
        root_d = np.sqrt(np.maximum(d, 0.0))
        cardano = np.cbrt(r / 2.0 + root_d) + np.cbrt(r / 2.0 - root_d)
        trig = 2.0 * np.sqrt(p / 3.0) * np.cos(np.arccos(np.clip(1.5 * r / p * np.sqrt(3.0 / p), -1.0, 1.0)) / 3.0)
    return np.where(d >= 0.0, cardano, trig)


def _seen_gap(shape, gap_s, arrival_cv2):
    """The gap a waiting request lands in, for :func:`_gap_ttft`'s quantiles: ``(shape, scale)``
    of its gamma law, length-biased, where the completions' gaps are gamma of mean ``g =
    gap_s`` and shape ``alpha = shape`` (squared CV ``v = 1/alpha``) and the arrivals have
    squared CV ``c_a^2``. Bursty arrivals' gaps are read as a share ``z`` of zero gaps (a
    burst) and the rest: a Poisson stream of geometric bursts with the arrivals' ``c_a^2``
    has ``z = (c_a^2 - 1)/(c_a^2 + 1)`` (gaps 0 or exponential: squared CV ``(1 + z)/(1 -
    z)``), and the instances a burst starts complete together, so the completions' gaps
    hold the same share of zeros. A zero gap holds no waiting request: it lands in one of
    the rest, of mean ``g/(1 - z)`` and squared CV ``v' = v - z (1 + v)`` (the mixture's two
    moments are ``g`` and ``v``), length-biased gamma of shape ``1 + 1/v'`` and the same mean
    ``g (1 + v)`` whatever ``z``. ``z`` is at most ``(v - 1)/(v + 1)`` (the rest at least
    exponential, ``v' >= 1``; gaps of ``v <= 1`` hold no zeros), and with Poisson
    arrivals (``z = 0``) the gap is the gaps' own, shape ``alpha + 1`` and scale ``g/alpha``
    (**derived**, the bursts' zeros in the completions **assumed**; **measured**: a waiting
    request's wait, ``U`` times this gap, has squared CV 0.87-1.04 at gamma CV 2, loads
    0.1-0.5, h100 and the Lite, where the gaps' own law gives 1.08-1.40 and this one
    1.00-1.01; docs/load.md#static-cycles)."""
    alpha, g = np.asarray(shape, float), np.asarray(gap_s, float)
    v, a = 1.0 / alpha, np.asarray(arrival_cv2, float)
    zero = np.minimum(np.maximum(a - 1.0, 0.0) / (a + 1.0), np.maximum(v - 1.0, 0.0) / (v + 1.0))
    seen = 1.0 + 1.0 / np.maximum(v - zero * (1.0 + v), 1e-300)
    return np.where(zero > 0.0, seen, alpha + 1.0), np.where(zero > 0.0, g * (1.0 + v) / seen, g / alpha)


def _gap_ttft(q, gaps: CompletionGaps, rate_per_s, arrival_cv, first_1, first_top, top, step_1=0.0, step_top=0.0, spill_cv2=None):
    """TTFT (mean, ``q`` quantile) and the batch step (mean, quantile) of :func:`completion_gaps`'
    requests, whose batch of ``k`` gives its first tokens ``first(k)`` after it starts and
    runs steps of ``step(k)`` (both linear in ``k``, slopes ``f`` and ``d``).

    A request that finds an instance idle rides alone: ``first(1)``, ``step(1)``. One that
    waits lands in a gap length-biased from the completions' gamma law (shape ``alpha + 1``,
    scale ``theta = g / alpha``), at a uniform place ``U`` in it: it waits ``U x`` and leaves
    with the ``lambda x`` others of its gap plus, for bursty arrivals, ``(c_a^2 - 1) / 2``
    more (half of the excess of a renewal process's count after one of its points, Cox
    1962: ``lambda t + (c_a^2 - 1) / 2``), at most ``top - 1``. Its TTFT ``first(1) + U x + f
    min(lambda x + e, top - 1)`` has its mean in closed form (incomplete gamma functions)
    and its survival in closed form (:func:`_uniform_gamma_tail` on each side of the ``U`` at
    which the batch fills), inverted by :data:`GAP_STEPS` bisection steps. The quantiles (TTFT
    and step) read the gap of :func:`_seen_gap` (bursty arrivals' zero gaps left out: the same
    mean, a lighter tail); the means keep the gaps' own law, the same but where the batch
    fills (docs/load.md#static-cycles). Near the batch's capacity
    the queue spills past one batch: the requests a completion leaves behind wait
    :func:`_spill_wait` more, added to the mean and the quantile, and the quantile adds its
    exponential part's ``m (ln(1 / p) - 1)`` past its mean ``m`` (``p`` the tail among the
    requests that wait; the parts' quantiles added, not convolved), with the gaps' ``c_g^2``
    (``spill_cv2``: another squared CV for the spill's gap, as docs/load/static_gaps.py
    measures the terms one by one)."""
    lam = np.asarray(rate_per_s, float)
    top = np.asarray(top, float)
    f = (np.asarray(first_top, float) - first_1) / np.maximum(top - 1.0, 1.0)
    d = (np.asarray(step_top, float) - step_1) / np.maximum(top - 1.0, 1.0)
    alpha, g, idle = gaps.shape, gaps.gap_s, gaps.idle_probability
    shape, theta = alpha + 1.0, g / alpha
    room = top - 1.0
    extra = np.minimum(np.maximum(np.asarray(arrival_cv, float) ** 2 - 1.0, 0.0) / 2.0, room)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        edge = np.where(lam > 0, (room - extra) / np.maximum(lam * theta, 1e-300), np.inf)  # x / theta where the batch fills
        others = extra + lam * shape * theta * special.gammainc(shape + 1.0, edge) + (room - extra) * special.gammaincc(shape, edge)
    spill_cv2 = 1.0 / alpha if spill_cv2 is None else spill_cv2
    spill, diffusing = _spill_wait(gaps.batch_mean, top, spill_cv2, np.asarray(arrival_cv, float) ** 2, lam, gaps.servers)
    spill, diffusing = np.where(top > 1.0, spill, 0.0), np.where(top > 1.0, diffusing, 0.0)
    waiting = 1.0 - idle
    ttft_mean = first_1 + waiting * (shape * theta / 2.0 + spill + f * others)
    step_mean = step_1 + waiting * d * others

    tail = np.clip((1.0 - np.asarray(q, float)) / np.maximum(waiting, 1e-300), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        fill = np.where(lam > 0, (room - extra) / lam, np.inf)  # the gap x at which the batch fills

    shape, theta = _seen_gap(alpha, g, np.asarray(arrival_cv, float) ** 2)  # the quantiles' gap: bursts' zeros left out, same mean

    def survival(t):  # P(U x + f min(lambda x + e, room) > t) over the length-biased gap x
        with np.errstate(divide="ignore"):  # fill = 0 (the burst's excess fills the batch): u0 = 1, the batch always full
            u0 = np.clip(np.divide(t - f * extra, fill, out=np.zeros(np.shape(t)), where=np.isfinite(fill)) - f * lam, 0.0, 1.0)
        return (_uniform_gamma_tail(shape, (t - f * extra) / theta, f * lam, u0, 1.0)
                + _uniform_gamma_tail(shape, (t - f * room) / theta, 0.0, 0.0, u0))

    x_q = theta * special.gammainccinv(shape, np.maximum(tail, 1e-300))
    lo, hi = np.zeros(np.shape(tail)), x_q * (1.0 + f * lam) + f * extra  # U x + f (lambda x + e) bounds the wait
    for _ in range(GAP_STEPS):
        mid = 0.5 * (lo + hi)
        above = survival(mid) > tail
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    waits = tail < 1.0
    spread = diffusing * np.maximum(-np.log(np.maximum(tail, 1e-300)) - 1.0, 0.0)  # the exponential part's quantile past its mean
    ttft_q = np.where(waits, first_1 + lo + spill + spread, first_1)
    step_q = np.where(waits, step_1 + d * np.minimum(lam * x_q + extra, room), step_1)
    return ttft_mean, ttft_q, step_mean, step_q


def static_at_load(q, rate_per_s, arrival_cv, *, instances, batch, output_tokens, decode_1_s, decode_s, prefill_1_s, prefill_s,
                   gap_cv2=STATIC_GAP_CV2, length_cv=0.0, longest=None, bunch_cycles=STATIC_BUNCH_CYCLES,
                   bunch_growth=STATIC_BUNCH_GROWTH) -> LoadLatency:
    """Static batching under load (docs/load.md#static): ``instances`` instances, each taking
    every queued request (up to ``batch``) when it falls idle and holding them for a batch
    cycle ``T(k) = prefill(k) + (O - 1) decode(k)`` (both linear in ``k`` through their
    values at 1 and at ``batch``): the queue and the gaps between completions of
    :func:`completion_gaps` (``gap_cv2``: their squared CV on many busy instances, at least
    the cycle excess of ``bunch_cycles`` and ``bunch_growth``). TTFT = wait +
    ``prefill(k)`` and TPOT = ``decode(k)`` at the batch ``k`` a request rides
    (:func:`_gap_ttft`); ``running`` is the mean batch.

    Lengths spread across requests (``length_cv``, gamma laws of the mean prompt and output,
    docs/load.md#length-spread): a batch lasts its longest member's output, so the full
    batch's cycle holds ``O M_b - 1`` decode steps, ``M_b`` the mean longest of ``b = batch``
    draws over their mean (:func:`longest_ratio`; a lone request's cycle keeps its mean
    output), and the TTFT quantile adds the own prompt's excess at the quantile of its law
    (:func:`_own_excess_s`); the mean TPOT counts one-token requests' 0 (:func:`multi_token_share`).
    ``longest``: ``M_b`` where the caller holds it (it does not depend on the rate; computed
    when None)."""
    o = np.asarray(output_tokens, float)
    longest = o * (longest_ratio(batch, length_cv) if longest is None else longest)
    gaps = completion_gaps(rate_per_s, instances, prefill_1_s + (o - 1.0) * decode_1_s, prefill_s + (longest - 1.0) * decode_s, batch, gap_cv2, arrival_cv,
                           bunch_cycles, bunch_growth)
    ttft_mean, ttft_q, tpot_mean, tpot_q = _gap_ttft(q, gaps, rate_per_s, arrival_cv, prefill_1_s, prefill_s, batch, decode_1_s, decode_s)
    excess = _own_excess_s(q, length_cv, prefill_1_s, prefill_s, batch, gaps.batch_mean)
    return LoadLatency(ttft_mean, _with_own_spread(ttft_mean, ttft_q, excess, length_cv), tpot_mean * multi_token_share(o, length_cv), tpot_q, gaps.batch_mean)


def _own_excess_s(q, length_cv, first_1, first_top, top, batch) -> np.ndarray:
    """The time a request's own prompt at the ``q`` quantile of its law adds to its pass, whose
    first tokens come ``first(k)`` after it starts (linear in the ``k`` prompts through
    ``(1, first_1)`` and ``(top, first_top)``) and scale with its prompt tokens over ``k``
    mean prompts (the simulator's pass, docs/serve.md): a prompt of ``r_q`` times the mean
    (:func:`length_quantile`) among ``k - 1`` of the mean adds ``(r_q - 1) first(k) / k``,
    at the mean batch ``k = batch`` a request rides. 0 where ``length_cv = 0``."""
    k = np.maximum(np.asarray(batch, float), 1.0)
    return (length_quantile(q, length_cv) - 1.0) * _linear(first_1, first_top, top, k) / k


def _mixed_own_excess_s(q, length_cv, weight, per_prompt_a, per_prompt_b) -> np.ndarray:
    """The ``q`` quantile of ``(r - 1) d_K``, the time a request's own prompt of ``r`` times the
    mean (gamma of mean 1 and CV ``length_cv``) adds to its pass, where the pass gives ``d_a =
    per_prompt_a`` seconds a mean prompt with probability ``weight`` and ``d_b =
    per_prompt_b`` otherwise (:func:`_own_excess_s`'s ``first(k) / k`` at two batches): the
    root ``x`` of ``w P(1 + x / d_a) + (1 - w) P(1 + x / d_b) = q``, ``P`` the law's
    distribution function (a regularised lower incomplete gamma function), which lies between
    the two parts' own quantiles ``(r_q - 1) d_a`` and ``(r_q - 1) d_b`` (``r_q``:
    :func:`length_quantile`). Newton steps on the logarithm of the mixture's tail on the
    quantile's side (the survival where ``q >= 1/2``, else the distribution function: nearly
    linear in ``x`` out there) from the end of the part of the larger weight, kept inside
    that bracket (a step that would leave it halves the bracket instead), each trial frozen once its step is below :data:`OWN_TOLERANCE` of the
    bracket's larger end (so its answer is its own, whatever else the array holds),
    :data:`OWN_STEPS` steps at most. ``(r_q - 1) d_a`` where ``d_a = d_b``; 0 where
    ``length_cv = 0``."""
    shape = np.broadcast(q, length_cv, weight, per_prompt_a, per_prompt_b).shape
    q, v, w, d_a, d_b = (np.broadcast_to(np.asarray(x, float), shape) for x in (q, np.asarray(length_cv, float) ** 2, weight, per_prompt_a, per_prompt_b))
    out = np.zeros(shape)
    rows = v > 0.0
    if not rows.any():
        return out
    q, v, w, d_a, d_b = q[rows], v[rows], w[rows], d_a[rows], d_b[rows]
    k = 1.0 / v
    r_q = special.gammaincinv(k, q) * v  # :func:`length_quantile`
    end_a, end_b = (r_q - 1.0) * d_a, (r_q - 1.0) * d_b
    lo, hi = np.minimum(end_a, end_b), np.maximum(end_a, end_b)
    x = np.where(w >= 0.5, end_a, end_b)
    upper = q >= 0.5  # the tail whose logarithm the steps follow
    sign = np.where(upper, -1.0, 1.0)  # its slope's sign: the survival falls with x
    target = np.where(upper, np.log1p(-q), np.log(q))
    log_norm = -special.gammaln(k) - k * np.log(v)  # the gamma density's log-constant
    scale = np.maximum(np.abs(lo), np.abs(hi))
    live = np.flatnonzero(hi - lo > OWN_TOLERANCE * scale)
    for _ in range(OWN_STEPS):
        if live.size == 0:
            break
        xs, ks, vs, ws, up = x[live], k[live], v[live], w[live], upper[live]
        tail, density = 0.0, 0.0
        for share, d in ((ws, d_a[live]), (1.0 - ws, d_b[live])):
            y = np.maximum(1.0 + xs / d, 0.0) / vs  # a prompt of no tokens or fewer: none that short
            tail = tail + share * np.where(up, special.gammaincc(ks, y), special.gammainc(ks, y))
            with np.errstate(divide="ignore", invalid="ignore"):
                density = density + share * np.where(y > 0.0, np.exp(log_norm[live] + (ks - 1.0) * np.log(y * vs) - y), 0.0) / d
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.log(tail) - target[live]
            newton = xs - g * tail / (sign[live] * density)
        above = (g >= 0.0) == up  # the root lies above x
        lo[live], hi[live] = np.where(above, xs, lo[live]), np.where(above, hi[live], xs)
        fast = np.isfinite(newton) & (newton >= lo[live]) & (newton <= hi[live])
        step = np.where(fast, newton, 0.5 * (lo[live] + hi[live]))
        x[live] = step
        live = live[np.abs(step - xs) > OWN_TOLERANCE * scale[live]]
    out[rows] = x
    return out


def _with_own_spread(mean, quantile, excess, length_cv, base=0.0) -> np.ndarray:
    """The quantile of a request's TTFT, its wait and pass (``mean``, ``quantile``) plus its
    own prompt's spread, ``excess`` at the same quantile over its mean (independent of the
    wait): the parts above their means added in quadrature, ``quantile + sqrt(a^2 +
    excess^2) - a`` with ``a = max(quantile - mean, 0)`` (``mean + sqrt((quantile - mean)^2
    + excess^2)`` where the quantile is above the mean: exact for normal parts, the larger
    part's alone where the other has none), docs/load.md#length-spread. A quantile below
    its mean (a low ``q``) takes no part above it, and an own prompt shorter than the mean
    (``excess < 0``, ``q`` below about 0.6) is added as it is: so the result tends to
    ``quantile`` as ``length_cv`` tends to 0, and where ``excess`` does not fall with the
    load it rises with the load as ``quantile`` does (the disaggregated excess,
    :func:`_pass_own_excess_s`, falls as the load fills the passes, and the result may too).
    ``base``: the excess a mean-length request has, which the model without a spread leaves
    out (the disaggregated join's ``q / (O - 1)`` of a step, :func:`disaggregated_at_load`):
    its part is taken out again, ``sqrt(a^2 + excess^2) - sqrt(a^2 + base^2)``, so that the
    result still tends to ``quantile`` where ``excess`` tends to ``base``. ``quantile`` where
    ``length_cv = 0`` or the mean is not finite (a queue past its capacity)."""
    spread = np.asarray(length_cv, float) > 0.0
    if not spread.any():
        return quantile
    with np.errstate(invalid="ignore"):  # a queue past its capacity: both infinite, the quantile kept
        above = np.maximum(quantile - mean, 0.0)

        def part(e):
            return np.where(e > 0.0, np.hypot(above, e) - above, e)

        return np.where(spread & np.isfinite(mean), quantile + (part(excess) - part(base)), quantile)


def tail_chunk_tokens(prompt_tokens, chunk_tokens):
    """The tokens of a lone prompt's last chunk: ``S - (ceil(S / c) - 1) c`` (a whole chunk
    when ``c`` divides ``S``)."""
    s, c = np.asarray(prompt_tokens, float), np.asarray(chunk_tokens, float)
    return s - (np.ceil(s / c) - 1.0) * c


def _own_prefill_s(per_prompt, d, chunked, tail=None):
    """A lone prompt's own steps, ``ceil(S / c)`` of them: ``ceil(S / c) - 1`` steps carrying a
    whole chunk (``chunked`` each) and the last carrying the rest, ``tail`` (None: ``d`` plus
    that rest's share of the chunk's cost, the step linear in the chunk)."""
    if tail is None:
        return np.ceil(per_prompt) * d + per_prompt * (chunked - d)
    return (np.ceil(per_prompt) - 1.0) * chunked + tail


def _stream_wait_quantile(q, busy, again):
    """The ``q`` quantile, in prompts, of ``W = 1 - x + X`` with probability ``busy`` (else 0):
    the remainder of the prompt in progress (``x`` its elapsed share, uniform) and ``X = 1``
    with probability ``again x`` (one more prompt admitted while it ran). ``P(W > t) = busy
    (y + again (1 - y^2) / 2)`` for ``t = 1 - y`` in ``[0, 1]`` and ``busy again (2 - t)^2 / 2``
    on ``[1, 2]``."""
    tail = 1.0 - np.asarray(q, float)
    u, a = np.broadcast_arrays(np.asarray(busy, float), np.asarray(again, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        second = 2.0 - np.sqrt(2.0 * tail / (u * a))
        c = tail / u - a / 2.0
        y = np.where(a > 0, (1.0 - np.sqrt(np.maximum(1.0 - 2.0 * a * c, 0.0))) / a, tail / u)
    first = 1.0 - np.clip(y, 0.0, 1.0)
    return np.where(tail >= u, 0.0, np.where(tail <= u * a / 2.0, second, first))


def _stream_wait_area(v, prompt_s, busy, again):
    """The prefill stream's wait ``D W`` (s; ``D = prompt_s``), in prompts ``W = 1 - x + X``
    with probability ``u = busy`` (else 0): the remainder of the prompt in progress (``x`` its
    elapsed share, uniform) and ``X = 1`` with probability ``a x`` (``a = again``: one more
    prompt admitted while it ran), so ``P(W > t) = u (y + a (1 - y^2) / 2)`` at ``t = 1 - y``
    in ``[0, 1]`` and ``u a (2 - t)^2 / 2`` on ``[1, 2]``. Returns the integral of its tail,
    ``G(v) = int_0^v P(D W > w) dw``, and ``G(v) = v`` for ``v <= 0`` (where ``P = 1``): with
    ``y = 1 - v / D`` on ``[0, D]``, ``u D ((1 - y^2) / 2 + a ((1 - y) - (1 - y^3) / 3) / 2)``;
    with ``z = 2 - v / D`` on ``[D, 2 D]``, ``u D (1 / 2 + a / 3) + u a D (1 - z^3) / 6``;
    beyond, the mean wait ``u D (1 + a) / 2``."""
    d, u, a = prompt_s, busy, again
    y = np.clip(1.0 - v / d, 0.0, 1.0)
    z = np.clip(2.0 - v / d, 0.0, 1.0)
    first = u * d * ((1.0 - y * y) / 2.0 + a * ((1.0 - y) - (1.0 - y ** 3) / 3.0) / 2.0)
    second = u * a * d * (1.0 - z ** 3) / 6.0
    return np.where(v <= 0.0, v, first + second)


#: Bisection steps of :func:`_step_stream_quantile` (a fixed count: run time never grows with
#: a value): its bracket, one step wide, narrowed to 2^-16 of a step (under a microsecond).
STREAM_STEPS = 16


def _step_stream_quantile(q, step_s, prompt_s, busy, again):
    """The ``q`` quantile of ``R + D W``: the rest of the step in progress when a request
    arrives, ``R`` uniform on ``[0, step_s]``, and the prefill stream's wait ``D W``
    (:func:`_stream_wait_area`'s law, ``D = prompt_s``), independent. ``P(R + D W > t) =
    (G(t) - G(t - step_s)) / step_s`` with ``G`` the integral of ``D W``'s tail
    (:func:`_stream_wait_area`, closed form), decreasing in ``t``. Since ``D W <= R + D W <=
    D W + step_s``, the quantile lies between ``D W``'s own (:func:`_stream_wait_quantile`,
    closed form) and that plus one step: that bracket is narrowed by :data:`STREAM_STEPS`
    bisection steps and its upper end returned (``+inf`` where the step or the prompt is
    not finite). The quantile of the sum, not the sum of the two quantiles (which a
    request would meet only by arriving at a step's start behind a prompt's last whole
    remainder)."""
    tail = 1.0 - np.asarray(q, float)
    tau, d, u, a = np.broadcast_arrays(np.asarray(step_s, float), np.asarray(prompt_s, float), np.asarray(busy, float), np.asarray(again, float))
    finite = np.isfinite(tau) & np.isfinite(d) & (tau > 0.0)  # an instance past its capacity: no quantile
    tau, d = np.where(finite, tau, 1.0), np.where(finite, d, 1.0)
    lo = d * _stream_wait_quantile(q, u, a)
    hi, shift, level = lo + tau, np.stack([np.zeros(tau.shape), tau]), tail * tau
    for _ in range(STREAM_STEPS):
        mid = 0.5 * (lo + hi)
        g = _stream_wait_area(mid - shift, d, u, a)  # G at t and at t - step, at once
        above = g[0] - g[1] > level
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return np.where(finite, hi, np.inf)


#: The share of a continuous instance's admissions that are births, as
#: :func:`_refilled_cv2`'s law reads it: the value at which its fixed point gives the
#: simulator's settled admission gaps' squared CV at Poisson loads 0.7-0.9 on both designs
#: (0.18-0.31, mean 0.24; docs/load.md#refill). The births counted directly (admissions
#: that refill no departure of the instance) are 0.13-0.22 of them: the refills' delays,
#: which the law leaves out, add variability too, and this share carries it. It reaches
#: the mean TTFT, which the chain does not read, and the TTFT quantile only under a length
#: spread (through the quantile's centre, :func:`_with_own_spread`). The default of the
#: scenario key ``workload.load.refill_births``.
REFILL_BIRTHS = 0.24


def _refilled_cv2(busy, births=REFILL_BIRTHS):
    """The squared CV of one continuous instance's admissions (their Poisson part) at its
    prefill stream's utilisation ``u = busy``: ``beta / (beta + (1 - beta) u^2)``, ``beta =
    births``. Least-loaded dispatch refills the instance a request left, and with fixed
    output lengths a request leaves a fixed count of steps after its first token, so a
    share ``1 - beta`` of the admissions repeat the departures of the instance's own
    prefill stream one holding time later; the rest, the births, are the pool's Poisson
    arrivals (docs/load.md#refill). The stream is a single server of deterministic prompts:
    Whitt's QNA gives its departures the squared CV ``u^2 c_s^2 + (1 - u^2) c^2`` with
    ``c_s = 0`` (M/D/1's inter-departure time exactly, ``1 - u^2``, for Poisson
    admissions), and the superposition of the refills and the births the rate-weighted
    mean of their squared CVs (its asymptotic method), so ``c^2 = (1 - beta)(1 - u^2) c^2 +
    beta``: each holding time passes the admissions through the stream again, and this is
    its fixed point (1 at a trickle, ``beta`` at ``u = 1``; ``1 - u^2``, one pass from
    Poisson admissions, is that map's first step)."""
    u, b = np.asarray(busy, float), np.asarray(births, float)
    return b / (b + (1.0 - b) * u * u)


def _burst_wait(q, instances, prompt_s, busy, arrival_cv, length_cv=0.0):
    """The wait of a bursty stream's excess over Poisson's in one instance's prefill stream
    (s): ``(mean, q quantile)``. Least-loaded dispatch balances the instances' requests, not
    their prefill streams (docs/load.md#continuous), so a prompt waits in its own
    instance's stream, a G/D/1 queue (one server, prompts of ``prompt_s`` seconds,
    utilisation ``u = busy``), not in a queue pooling the ``instances`` streams. The
    instance's share of the arrivals is the stream split over ``N = instances``, squared
    CV ``1 + (c_a^2 - 1) / N`` (a renewal stream split at random, Whitt's QNA); the
    stream's term (:func:`_stream_wait_area`) holds its Poisson part, so this wait takes
    the excess, ``(c_a^2 - 1) / N``, in Allen-Cunneen's G/G/1 wait (:func:`mean_wait`,
    :func:`wait_quantile`: waits with probability ``u``, exponential beyond, scale ``(c_a^2
    - 1) / (2 N) D / (1 - u)``). 0 for Poisson arrivals and smoother ones. Prompts spread
    across requests (CV ``length_cv``) are the queue's service CV ``c_s`` (the stream's term
    holds deterministic prompts): Allen-Cunneen's ``(c_a^2 + c_s^2) / 2``, whose mean part
    ``u c_s^2 D / (2 (1 - u))`` is Pollaczek-Khinchine's excess of M/G/1 over M/D/1."""
    excess = np.maximum(np.asarray(arrival_cv, float) ** 2 - 1.0, 0.0) / instances
    cv, spread = np.sqrt(excess), np.broadcast_to(np.asarray(length_cv, float), np.shape(busy))
    return mean_wait(1.0, prompt_s, busy, cv, spread), wait_quantile(q, 1.0, prompt_s, busy, cv, spread)


def _continuous_occupancy(lam, output_tokens, per_prompt, decode_1_s, decode_s, chunk_step_1_s, step_s, batch, low_batch):
    """Continuous mode's occupancy in closed form (docs/load.md#continuous): the least ``n``
    in ``[0, batch]`` solving Little's law ``n = lambda O tau(n)``, ``tau(n) = d(n) / (1 -
    lambda D(n))`` (``d`` and ``D`` as :func:`continuous_at_load` reads them: constant up
    to ``low_batch``, linear in ``n`` above), ``batch`` where none does. Multiplied by the
    steps' free share, ``p(n) = lambda O d(n) - n (1 - lambda D(n))`` is continuous,
    linear up to ``low_batch`` and quadratic above, and ``p(0) >= 0``; ``n`` is its first
    downward zero, the fixed point an empty instance fills to (where ``1 - lambda D <= 0``,
    ``tau`` is unbounded and ``p > 0``). Below ``low_batch``: ``n = lambda O d_1 / (1 -
    lambda D_1)``. Above it, in ``m = n - low_batch``, ``a_2 m^2 + a_1 m + a_0 = 0`` with
    ``a_0 = p(low_batch) >= 0``: its root where ``p`` turns negative is ``a_0 / k`` (``a_1 <
    0``) or ``k / a_2`` (``a_1 >= 0``, a concave ``p``), ``k = -(a_1 + sgn(a_1)
    sqrt(a_1^2 - 4 a_2 a_0)) / 2`` (the form without cancellation, also the linear root
    where ``a_2 = 0``); none where the discriminant is negative or ``a_1, a_2 >= 0``."""
    lam, o = np.asarray(lam, float), np.asarray(output_tokens, float)
    top, low = np.asarray(batch, float), np.asarray(low_batch, float)
    span = top - low
    d1, c1 = np.asarray(decode_1_s, float), np.asarray(chunk_step_1_s, float)
    slope_d, slope_c = _slope(d1, decode_s, span), _slope(c1, step_s, span)
    with np.errstate(divide="ignore", invalid="ignore"):
        lo_d = lam * o * d1  # lambda O d at low_batch
        free_low = 1.0 - lam * (c1 - d1) * per_prompt  # the steps' free share at low_batch
        a2 = lam * (slope_c - slope_d) * per_prompt
        a1 = lam * o * slope_d - free_low + a2 * low
        a0 = lo_d - low * free_low
        disc = a1 * a1 - 4.0 * a2 * a0
        k = -0.5 * (a1 + np.copysign(np.sqrt(np.maximum(disc, 0.0)), a1))
        m = np.where(a1 < 0, a0 / k, np.where(a2 < 0, k / a2, np.inf))
        m = np.where((disc < 0) | np.isnan(m), np.inf, np.maximum(m, 0.0))
        n = np.where(a0 < 0, np.minimum(lo_d / free_low, low), low + m)
    return np.clip(n, 0.0, top)


def continuous_at_load(q, rate_per_s, arrival_cv, *, instances, batch, output_tokens, prompt_tokens, chunk_tokens, decode_1_s, decode_s,
                       step_s, chunk_step_1_s, low_batch=1,
                       tail_step_1_s=None, tail_step_s=None, length_cv=0.0, refill_births=REFILL_BIRTHS) -> LoadLatency:
    """Continuous batching with chunked prefill under load (docs/load.md#continuous): each of
    ``instances`` instances runs its requests' decode steps and a prefill stream of at most
    ``chunk_tokens`` prompt tokens a step (the plan's steady chunk ``B S / O``). At ``n``
    running requests a pure decode step takes ``d(n)`` and a step with a whole chunk
    ``d_c(n)`` (each linear through its value at ``low_batch``, ``decode_1_s`` /
    ``chunk_step_1_s``, and at ``batch``, ``decode_s`` / ``step_s``; a pipelined plan's
    anchor is its micro-batch count, below which a step carries its chunk on fewer
    micro-batches), so a prompt adds ``D(n) = (d_c - d) S / c``
    seconds of steps and the mean step is ``tau(n) = d(n) / (1 - lambda_i D(n))`` (the
    steps' time left to decoding). The occupancy solves Little's law ``n = lambda_i O
    tau(n)`` (in closed form, its least root: :func:`_continuous_occupancy`). TPOT = ``tau`` at the occupancy a
    request lives with (:func:`_batch_quantile`). TTFT = the rest of the step in progress
    (half of it on average) + the wait in the prefill stream (their sum's quantile:
    :func:`_step_stream_quantile`) + the wait of the bursts (below) + the prompt's own
    ``ceil(S / c)`` steps: ``ceil(S / c) - 1`` carrying a whole chunk and the last one the
    rest of the prompt, ``S - (ceil(S / c) - 1) c`` tokens (:func:`tail_chunk_tokens`), at
    ``tail_step_1_s`` / ``tail_step_s`` (the roofline's step at that chunk, at ``low_batch``
    and at ``batch``; linear in the batch between them). The roofline's step is flat in the
    chunk until the chunk's compute reaches the memory time, so a partial chunk costs less
    than its share of a whole one; without those two values the step is taken linear in the
    chunk (``d + (rest / c) (d_c - d)``), which over-states a lone prompt's own time by the
    step's flat part (3-8 ms on the case study's plans, docs/load.md#continuous). The
    stream is busy ``u = lambda_i S tau / c`` of the time with a prompt of ``D = S / c``
    chunk steps; least-loaded dispatch sends a prompt to the instance with fewest requests,
    so it rarely queues behind more than two prompts: with probability ``u`` it waits the remainder of the prompt in
    progress (its elapsed share ``x`` uniform) and, with probability ``a x``, one more
    prompt admitted to that instance while it ran (:func:`_stream_wait_area`; mean ``u (1 + a)
    D / 2``): in the mean, M/D/1's light-traffic term ``u`` times the admissions' squared CV
    (Kingman: a G/D/1 wait is M/D/1's times ``c_a^2``), which refills of the stream's own
    departures smooth to ``beta / (beta + (1 - beta) u^2)`` (:func:`_refilled_cv2`, ``beta =
    refill_births`` the births' share of the admissions), ``a`` that times ``u``; at the
    quantile M/D/1's own ``a = u``, since the tail is the admissions the refills do not
    smooth (births at the least count, docs/load.md#refill), plus the wait of the bursts'
    excess over Poisson's variability in the instance's own stream (:func:`_burst_wait`:
    none for Poisson arrivals). Lengths spread across requests (``length_cv``, gamma laws of
    the mean prompt and output, docs/load.md#length-spread): the prompts' spread is the
    stream's service CV, whose Pollaczek-Khinchine excess over deterministic prompts, ``u
    c_s^2 D / (2 (1 - u))`` in the mean, joins the bursts' wait (:func:`_burst_wait`), and
    the TTFT quantile takes the own prompt at the quantile of its law (:func:`length_quantile`:
    ``(r_q - 1) S / c`` whole-chunk steps more, :func:`_with_own_spread`). The outputs' spread leaves
    the occupancy's mean (Little's law) as it is; the mean TPOT counts one-token requests'
    0 (:func:`multi_token_share`), and the TPOT quantile is a whole-chunk step where enough
    short requests live inside a prompt's chunks (:func:`_chunked_tpot_quantile`). Sources: docs/sources.md#load-queueing,
    docs/sources.md#load-length-spread."""
    lam = np.asarray(rate_per_s, float) / instances
    o, s = np.asarray(output_tokens, float), np.asarray(prompt_tokens, float)
    per_prompt = s / np.asarray(chunk_tokens, float)

    def tau(n):
        d = _linear(decode_1_s, decode_s, batch, n, low_batch)
        extra = (_linear(chunk_step_1_s, step_s, batch, n, low_batch) - d) * per_prompt
        free = 1.0 - lam * extra
        return np.where(free > 0, d / np.maximum(free, 1e-300), np.inf), d, d + extra / per_prompt

    n = _continuous_occupancy(lam, o, per_prompt, decode_1_s, decode_s, chunk_step_1_s, step_s, batch, low_batch)
    step, d, chunked = tau(n)
    busy = np.minimum(lam * s * step / chunk_tokens, 1.0)
    prompt_s = per_prompt * chunked
    burst_mean, burst_q = _burst_wait(q, instances, prompt_s, busy, arrival_cv, length_cv)
    tail = None if tail_step_1_s is None else _linear(tail_step_1_s, tail_step_s, batch, n, low_batch)
    own = _own_prefill_s(per_prompt, d, chunked, tail)
    n_q = _batch_quantile(q, n, arrival_cv, batch, instances)
    tpot_q = tau(n_q)[0]
    if np.any(np.asarray(length_cv, float) > 0.0):
        tpot_q = np.where(np.asarray(length_cv, float) > 0.0, _chunked_tpot_quantile(q, n, busy, tau, arrival_cv, batch, instances, o, length_cv, per_prompt), tpot_q)
    again = busy * _refilled_cv2(busy, refill_births)  # the mean's second-prompt term; the quantile's is M/D/1's
    ahead_q = _step_stream_quantile(q, step, prompt_s, busy, busy)
    mean = step / 2.0 + busy * (1.0 + again) / 2.0 * prompt_s + burst_mean + own
    excess = (length_quantile(q, length_cv) - 1.0) * per_prompt * chunked  # the own prompt's chunks beyond the mean's
    return LoadLatency(mean, _with_own_spread(mean, ahead_q + burst_q + own, excess, length_cv), step * multi_token_share(o, length_cv), tpot_q, n)


def _chunked_tpot_quantile(q, n, busy, tau, arrival_cv, batch, instances, output_tokens, length_cv, per_prompt):
    """The ``q`` quantile of a continuous instance's TPOT with lengths spread: a mixture. With
    probability ``pi = u x`` :func:`chunked_share` (``u = busy``, the stream's busy share) a
    request lives its few steps inside one prompt's chunks, each step carrying a whole
    chunk, ``d_c``; otherwise its TPOT is the mean-length model's, ``tau`` at the occupancy
    it lives with (:func:`_batch_quantile`). ``P(T > t) = pi + (1 - pi) P(tau > t)`` below
    ``d_c``, so the quantile is ``d_c`` (at the occupancy's ``q`` quantile) where ``pi >= 1 -
    q`` and otherwise ``tau`` at the occupancy's ``q / (1 - pi)`` quantile
    (docs/load.md#length-spread)."""
    pi = np.minimum(busy * chunked_share(output_tokens, length_cv, per_prompt), 1.0)
    chunked = pi >= 1.0 - np.asarray(q, float)
    level = np.where(chunked, q, q / np.maximum(1.0 - pi, 1e-300))
    step, _, whole = tau(_batch_quantile(level, n, arrival_cv, batch, instances))
    return np.where(chunked, whole, step)


def _decode_quantile(q, mean, rate, hold_slope, arrival_cv, top, instances):
    """The ``q`` quantile of the occupancy a decode request shares its life with
    (:func:`_batch_quantile`'s infinite-server fluctuation) where the holding time grows with
    the occupancy, ``hold(n) = hold(1) + s (n - 1)``: a count above its mean slows every step,
    so requests leave more slowly and the excess lasts. Linearised about the mean, the
    departure rate ``n / hold(n)`` rises by ``(1 - gamma) / hold`` per request, ``gamma =
    lambda s`` (``lambda`` the arrivals per instance, ``s = hold_slope``; ``gamma = n s /
    hold(n)`` by Little's law), so the count's variance is the infinite-server one over ``1 -
    gamma`` (a birth-death chain's, ``lambda / (d/dn departures)``; docs/load.md#disaggregated)."""
    gain = np.clip(np.asarray(rate, float) * np.asarray(hold_slope, float), 0.0, 1.0 - 1e-9)
    return _batch_quantile(q, mean, np.asarray(arrival_cv, float) / np.sqrt(1.0 - gain), top, instances)


def _pass_own_excess_s(q, length_cv, bq: BatchQueue, first_1, first_top, top) -> np.ndarray:
    """The ``q`` quantile of the time a request's own prompt adds to the prefill pass it rides
    in a :func:`batch_queue` (docs/load.md#length-spread): ``(r - 1) first(K) / K`` over the
    batch ``K`` it rides (the simulator scales a pass's time by its tokens over ``K`` mean
    prompts), a mixture (:func:`_mixed_own_excess_s`) of the requests that no other arrival
    joins, share ``a = 1 - C + C P(N = 0)`` (those that find a server idle ride alone,
    ``first(1)``; a waiting one whose gap brings no other arrival rides with the burst's
    ``e``, ``first(1 + e) / (1 + e)``, :attr:`BatchQueue.waited_alone`; their mean per
    prompt), and the others, at their mean batch ``(k_w - P(N = 0)(1 + e)) / (1 - P(N =
    0))`` (``k_w`` = :attr:`BatchQueue.batch_waited`). The lone requests' longer pass is the
    tail's: as the load fills the passes the quantile falls less than at the passes' mean
    batch. 0 where ``length_cv = 0`` (none of it made where no trial has a spread)."""
    c, alone, top = bq.wait_probability, bq.waited_alone, np.asarray(top, float)
    if not np.any(np.asarray(length_cv, float) > 0.0):
        return np.zeros(np.shape(c))

    def per_prompt(k):
        return _linear(first_1, first_top, top, k) / k

    lone = np.minimum(1.0 + np.asarray(bq.extra, float), top)
    a = 1.0 - c + c * alone
    d_a = per_prompt(1.0) + c * alone * (per_prompt(lone) - per_prompt(1.0)) / a  # their mean per prompt (first(1) itself where e = 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        joined = np.where(alone < 1.0, (bq.batch_waited - alone * lone) / (1.0 - alone), lone)
    return _mixed_own_excess_s(q, length_cv, a, d_a, per_prompt(np.clip(joined, 1.0, top)))


def disaggregated_at_load(q, rate_per_s, arrival_cv, *, instances, prefill_instances, batch, prefill_batch, output_tokens, decode_1_s, decode_s,
                          prefill_1_s, prefill_s, busy_1_s, busy_s, transfer_1_s, transfer_s, length_cv=0.0, join_excess=None) -> LoadLatency:
    """Disaggregated prefill and decode under load (docs/load.md#disaggregated): the
    ``prefill_instances`` prefill instances take up to ``prefill_batch`` queued prompts a
    pass, each pass keeping its instance ``busy(k)`` and delivering its first tokens after
    its latency ``prefill(k)`` plus the KV transfer ``transfer(k)`` (each linear in ``k``):
    a batch queue (:func:`batch_queue`). TTFT = wait + latency + transfer of the pass a
    request rides (:func:`_batched_ttft`; the wait near the pool's capacity that of the
    queue ahead, :func:`_queue_wait`). The decode instances run ``n = lambda_d (O - 1)
    decode(n)`` sequences (Little's law, :func:`_occupancy`); TPOT = ``decode`` at the
    occupancy a request lives with (:func:`_decode_quantile`: the count's fluctuation
    lengthened by its own steps; the request itself added). Lengths spread across requests
    (``length_cv``, docs/load.md#length-spread): the TTFT quantile adds the own prompt's
    excess at the quantile of its law, its pass's latency and transfer linear in its tokens:
    the quantile of a mixture of the passes a request rides alone and those it shares, each
    at its own mean batch (:func:`_pass_own_excess_s`, :func:`_with_own_spread`); the TPOT
    quantile adds the join's share of a step over a short request's few steps
    (:func:`join_excess_quantile`) beyond the mean length's ``q / (O - 1)``, which the model
    leaves out without a spread (so it is continuous as ``length_cv`` tends to 0; where ``O
    <= 1 + q/2`` that is at least 2, above any join's share, so the spread's is taken without
    dividing: one-token requests have no decode step), and the
    mean TPOT counts one-token requests' 0
    (:func:`multi_token_share`). ``join_excess``: that share's quantile where the caller
    holds it (it does not depend on the rate; computed when None)."""
    rate = np.asarray(rate_per_s, float)
    p = prefill_batch
    bq = batch_queue(rate, prefill_instances, busy_1_s, busy_s, p, arrival_cv)
    first_1, first_top = np.asarray(prefill_1_s, float) + transfer_1_s, np.asarray(prefill_s, float) + transfer_s
    ttft_mean, ttft_q = _batched_ttft(q, bq, rate, arrival_cv, prefill_instances, busy_s, first_1, first_top, p)
    ttft_q = _with_own_spread(ttft_mean, ttft_q, _pass_own_excess_s(q, length_cv, bq, first_1, first_top, p), length_cv)

    o = np.asarray(output_tokens, float)
    decoders = np.asarray(instances, float) - prefill_instances
    n = _occupancy(rate / decoders, (o - 1.0) * decode_1_s, (o - 1.0) * decode_s, batch)
    n_q = _decode_quantile(q, n, rate / decoders, (o - 1.0) * _slope(decode_1_s, decode_s, np.asarray(batch, float) - 1.0), arrival_cv, batch, decoders)
    step = _linear(decode_1_s, decode_s, batch, np.minimum(n + 1.0, batch))
    step_q = _linear(decode_1_s, decode_s, batch, np.minimum(n_q + 1.0, batch))
    join = join_excess_quantile(q, o, length_cv) if join_excess is None else join_excess
    steps = o - 1.0 > 0.5 * np.asarray(q, float)  # else q / (O - 1) >= 2, above any join: the spread's (O = 1: no step to divide)
    mean_length = np.where(steps, np.minimum(np.asarray(q, float) / np.where(steps, o - 1.0, 1.0), join), join)  # the mean length's join, q / (O - 1), at most the spread's
    tpot_q = _with_own_spread(step, step_q, step * join, length_cv, step * mean_length)
    return LoadLatency(ttft_mean, ttft_q, step * multi_token_share(o, length_cv), tpot_q, n)
