"""The static mode's fast model under load (docs/load.md#static): whole batches that run
to their last token, a waiting request served at the next completion of a pool's
batches (:func:`completion_gaps`), its TTFT and TPOT quantiles (:func:`static_at_load`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import special

from .queueing import LoadLatency, OCCUPANCY_STEPS, RHO_WAIT_MAX, _linear
from .queue_spread import _own_excess_s, _with_own_spread, longest_ratio, multi_token_share


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
    of the busy side's base, ``1 + (gap_cv2 - 1)(1 - 1/c) w kept + (1 - 1/c)(phases - (1 - w)
    2/(R + 1))`` (at the onset ``w = 0``, ``c`` instances' uniform phases weighted by ``1 -
    1/c`` on any pool), both
    relative to the pool the key was measured on, ``R =`` :data:`STATIC_GAP_POOL` (``kept =
    min(1, 1/A)`` and ``phases = 0`` there: the fit table's model as it was fitted).

    * ``phases = (c - 1)/(c + 1) - (R - 1)/(R + 1)``: ``c`` instances of equal cycles at
      independent uniform phases show a waiting request the earliest of ``c`` residuals, mean
      ``T/(c + 1)``, gaps of squared CV ``(c - 1)/(c + 1)`` (docs/load.md#static), 0.88 on 16
      instances, 0.6 on 4 and 0.98 on 128 (**derived**); weighted by ``1 - 1/c`` as the rest of
      the mix, so that one instance keeps the chain's exponential cycle (**assumed**), the busy
      side at ``w = 0`` is ``1 - (1 - 1/c) 2/(c + 1)``: 0.89 on 16, 0.70 on 4, 0.98 on 128.
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
    docs/load.md#static), and otherwise the bunched ``1 + (1 - 1/c)((gap_cv2 - 1) w min(1,
    1/A) - (1 - w) 2/(R + 1))`` on the ``R =`` :data:`STATIC_GAP_POOL` instances the key was
    measured on (one instance's exponential cycle: 1), on other pools with
    :func:`_pool_bunching`'s terms in ``c`` (docs/load.md#fleet-size). Below the onset ``w``
    (defined below) the pool is not bunched: its ``c`` instances run at uniform phases, whose gaps
    have squared CV ``(c - 1)/(c + 1)`` (the light-traffic value for Poisson arrivals, exact
    given the phases: **derived**), so the onset ramps the whole excess over them, the fitted
    part and the base's own ``1 - (R - 1)/(R + 1) = 2/(R + 1)``, the ramp between as the
    fitted part's. That shift carries the mix's ``1 - 1/c`` weight (**assumed**, as above), so
    at ``w = 0`` the busy side is ``1 - (1 - 1/c) 2/(c + 1)`` (0.667 on 2 instances, 0.70 on 4,
    0.890 on 16), not ``(c - 1)/(c + 1)`` itself, and for Poisson arrivals equal to the light
    side (docs/load.md#static, #static-light-followers). ``A = lambda s (1 - P_full)`` is how many
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
    unbunched = (1.0 - onset) * 2.0 / (STATIC_GAP_POOL + 1.0)  # below the onset the base falls to the uniform phases', weighted by 1 - 1/c
    full = np.zeros(np.shape(k))
    for _ in range(2):  # the bunching with no batch full, then with the share of full batches it gives
        amplify = np.maximum(lam * slope * (1.0 - full), 1e-300)
        pool_kept, phases = _pool_bunching(c, amplify)
        pooled = 1.0 + (np.asarray(gap_cv2, float) - 1.0) * (1.0 - 1.0 / c) * onset * pool_kept + (1.0 - 1.0 / c) * (phases - unbunched)
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
