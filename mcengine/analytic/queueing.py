"""Closed forms of serving under load (docs/load.md): the queueing formulas the per-mode fast
models of the trial chain share (:func:`.queue_static.static_at_load`,
:func:`.queue_continuous.continuous_at_load`, :func:`.queue_disaggregated.disaggregated_at_load`;
the lengths' spread in :mod:`.queue_spread`), the diurnal demand, the headroom a fleet
buys, and the batch queue of a pool of batch servers (:func:`batch_queue`).

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
import scipy  # scipy loads scipy.stats and scipy.integrate on first use: a first `mcengine run` imports neither
from scipy import special

from ..kernels import queueing as kq
#: Most steps of :func:`_batched_ttft`'s and :func:`_self_consistent_wait`'s Newton solves
#: (:mod:`mcengine.kernels.queueing`; a fixed cap: run time never grows with a value; the
#: bisection they fall back to would reach a float's resolution of either bracket in 60).
ROOT_STEPS = 60


#: The step, relative to the root, at which :func:`_batched_ttft` (and the tests' reference
#: ratio, tests/analytic/ratio_reference.py) takes a trial's root as solved: a Newton step
#: that short leaves it within about the square of that where the residual is smooth (a
#: float's resolution), a halving within that.
ROOT_TOLERANCE = 1e-13


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
    """Share of a day the sinusoid demand is at most ``capacity``: ``1/2 + theta0 / pi``; 1
    where the capacity is at least the peak ``m p`` (the peak as its callers compute it,
    ``mean * peak_to_mean``): near the peak ``theta0`` is ``pi / 2 - sqrt(2 (1 - s))``, so an
    ``s = (m p - m) / (m (p - 1))`` rounded an ulp below 1 would read about ``1 - 5e-9``."""
    s, theta0 = _phase(mean, peak_to_mean, capacity)
    reached = np.asarray(capacity, float) >= np.asarray(mean, float) * np.asarray(peak_to_mean, float)
    return np.where((s >= 1.0) | reached, 1.0, np.where(s <= -1.0, 0.0, 0.5 + theta0 / np.pi))


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
        step = need[open_] + scipy.stats.binom.ppf(q[open_], fleet[open_], p[open_])
        moved = step != fleet[open_]
        fleet[open_] = step
        open_ = open_[moved]
    fleet[open_] = np.inf
    return np.where(need <= 0.0, 0.0, fleet).reshape(shape)


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
    _, c, gap = _mean_batch(lam, servers, cycle_1, cycle_top, top, burst)
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
    never rises). So ``G`` may fall only while negative, then rises: one root.

    Returns ``(k, C, g)``: the ``k`` the last step reached, and the probability of waiting
    and the gap (:func:`_batch_state`) at the last ``k`` evaluated, one step from it (at
    most :data:`BATCH_TOLERANCE` of ``k`` for a settled trial; a trial still unsettled after
    :data:`BATCH_STEPS` steps keeps its last evaluation's): the state :func:`batch_queue`
    reads, not evaluated again."""
    shape = np.broadcast(lam, servers, cycle_1, cycle_top, top, burst).shape
    args = tuple(np.broadcast_to(np.asarray(x, float), shape).ravel() for x in (lam, servers, cycle_1, cycle_top, top, burst))
    out, wait, gap = np.ones(args[0].size), np.empty(args[0].size), np.empty(args[0].size)
    live, k, lo, hi = np.arange(out.size), out.copy(), out.copy(), np.maximum(args[4], 1.0)  # the trials not settled, and theirs
    moved = before = np.full(out.size, np.inf)  # the last two steps' lengths
    for _ in range(BATCH_STEPS):
        wait[live], gap[live], g, dg = _batch_state(k, *args)
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
    return out.reshape(shape), wait.reshape(shape), gap.reshape(shape)


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


#: Squared arrival CV below which the gamma gaps' transform
#: (:func:`mcengine.kernels.queueing.self_consistent_waits`) takes the power's logarithm with
#: ``log1p`` (``1 + t c_a^2`` rounds to 1 there and the power to 1): a numerical switch, the
#: same law on both sides to about 10^-13.
SMOOTH_ARRIVAL_CV2 = 1e-3


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
    for ``Q`` prompts ahead, ``J = floor(Q / P)`` whole gaps more, ``P(J >= j) = z^(P
    j)``: ``Q`` geometric, ``P(Q >= j) = z^j``, the GI/M^[1,P]/c embedded chain at arrivals
    (Chaudhry and Templeton, *A First Course in Bulk Queues*, 1983;
    docs/sources.md#load-queueing): passes end at rate ``1 / g`` while every server is busy,
    each taking ``P`` prompts, and a geometric law is stationary where ``z = A*((1 - z^(P
    I)) / (g I))``, ``A*`` the Laplace transform of the arrivals' gamma gaps, ``I`` the
    pass ends' index of dispersion (a scaled Poisson count; ``I -> 0``: ``-P ln z / g``);
    the root in ``(0, 1)`` exists where full passes outrun the arrivals (``P > lambda
    g``). With exponential gaps of mean ``g``
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
    at all). Where the fixed point's wait is at most ``at_least`` (one evaluation of
    :func:`_self_consistent_wait`'s residual tells) the answer is ``at_least``."""
    top = np.asarray(top, float)
    lam = np.minimum(np.asarray(rate_per_s, float), RHO_WAIT_MAX * np.asarray(servers, float) * top / np.asarray(full_pass_s, float))
    g = bq.gap_s / ((1.0 + np.asarray(arrival_cv, float) ** 2) / 2.0)
    shape = _shape(bq.gap_s, rate_per_s, arrival_cv, servers, full_pass_s, top, at_least)
    return _self_consistent_wait(*_flat(lam, arrival_cv, g, top, np.asarray(servers, float) * g, at_least)).reshape(shape)


#: The bracket's width, relative to ``1 - z``, at which :func:`_self_consistent_wait` takes
#: a trial's ratio as solved (the wait ``g / (1 - z^P)`` then to about as much of itself
#: where ``H``'s rounding allows: near capacity, ``k - 1`` about 1e-4, the float residual
#: limits the wait to about 1e-8 of itself).
WAIT_TOLERANCE = 1e-13


def _self_consistent_wait(lam, arrival_cv, g, top, pass_s, at_least):
    """The longer of ``at_least`` and :func:`_queue_wait`'s fixed point (flat arrays: arrivals/s,
    arrival CV, gap ``g``, prompts a pass ``P``, pass ``T``, the floor): the wait ``W = g /
    (1 - z^P)`` at the root in ``z`` of one equation, the queue wait's (:func:`_queue_wait`) with
    the index of dispersion read off ``z`` itself, ``H(z) = z - A*((1 - z^(P I(z))) / (g
    I(z)))``, ``I(z) = max(0, 1 - g / (T (1 - z^P)))`` (the fixed point ``W = W(I)``, ``I =
    max(0, 1 - W / T)``, with ``W`` written in ``z``):
    :func:`mcengine.kernels.queueing.self_consistent_waits`, bracketed Newton steps on each
    trial, :data:`ROOT_STEPS` steps at most, to within :data:`WAIT_TOLERANCE` of ``1 - z``.

    It is the same root, and the bracket holds it (``k = P / (lambda g) > 1``; where not,
    no ratio below 1 exists at any ``I`` and the wait is ``inf``). Write ``G_I(z) = z -
    A*((1 - z^(P I)) / (g I))``, whose root in ``(0, 1)`` is the ratio ``z_I`` at index
    ``I``, so ``H(z) = G_(I(z))(z)``:

    1. ``G_I < 0`` on ``[0, z_I)`` and ``G_I > 0`` on ``(z_I, 1)``: ``G_I(z)`` has the
       sign of ``y - ln phi(e^y)`` at ``y = ln z`` (``phi(z) = A*((1 - z^(P I)) / (g
       I))``), which is concave in ``y`` (``ln phi`` is convex in ``y``: with ``s = c (1 -
       e^(q y))``, ``c = 1 / (g I lambda)``, ``q = P I``, ``v`` the arrivals' squared CV,
       its slope ``c q e^(q y) / (1 + s v)`` rises with ``y``), 0 at ``y = 0`` with slope
       ``1 - k < 0`` there and ``-inf`` as ``y -> -inf``: one root below 0, negative below
       it and positive above it.
    2. ``z_I`` rises with ``I``: at a fixed ``z``, ``(1 - e^(-a I)) / I`` (``a = -P ln z >
       0``) falls as ``I`` rises and ``A*`` falls with its argument, so ``G_I(z)`` falls;
       at ``I' > I``, ``G_(I')(z_I) <= 0`` puts ``z_I`` at or below ``z_(I')`` by 1.
    3. ``I(z)`` falls as ``z`` rises (``W`` rises with ``z``).

    Let ``z*`` be the fixed point's ratio, ``z* = z_(I*)``, ``I* = I(z*)``. Below it, ``I(z)
    >= I*`` (3), so ``z_(I(z)) >= z* > z`` (2) and ``H(z) < 0`` (1); above it, ``I(z) <=
    I*``, ``z_(I(z)) <= z* < z`` and ``H(z) > 0``. So ``H`` changes sign once in ``(0,
    1)``, at ``z*``, and each root of ``H`` is a fixed point (``z = z_(I(z))``): the same
    root as the nested solve of ``I`` (each step a solve of ``z_I``;
    tests/analytic/wait_reference.py), and unique. The bracket's low end is 0 (``H(0) = -A*(.) < 0``) or, where the floor is
    above ``g``, the ratio whose wait is the floor, ``z_f = (1 - g / at_least)^(1 / P)``:
    ``H(z_f) >= 0`` puts ``z*`` at or below ``z_f``, so ``W <= at_least`` and the answer is
    the floor with no step taken. Its high end is 1 (``H(1) = 0``, ``H > 0`` just below it),
    and the sign of ``H`` at any step in between tells which end it replaces. The index of
    dispersion is floored at 1e-12 (the floor keeps 3).
    A trial's answer is its own, whatever else the arrays hold (docs/load.md#disaggregated)."""
    return kq.self_consistent_waits(lam, np.asarray(arrival_cv, float) ** 2, g, top, pass_s, at_least, ROOT_STEPS, WAIT_TOLERANCE, SMOOTH_ARRIVAL_CV2)


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
