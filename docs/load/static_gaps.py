"""The static mode's completion gaps, cell by cell of the validation grid (docs/load.md#static):
what the fast model takes for their squared CV ``c_g^2``, what value would fit the simulator's
mean TTFT, and what the simulator's gaps are as a waiting request sees them.

    python docs/load/static_gaps.py                        # every static cell of the grid, printed
    python docs/load/static_gaps.py --design h100 --loads 0.1,0.2
    python docs/load/static_gaps.py --pools                # the bunching's onset on 4 to 64 instances
    python docs/load/static_gaps.py --waits                # a waiting request's wait, its law and the instances it sees
    python docs/load/static_gaps.py --light                # the gaps a waiting request sees on small pools below a = c
    python docs/load/static_gaps.py --steps --design lite-h100 --loads 0.7,0.8   # the step tables against their lines
    python docs/load/static_gaps.py --phases --loads 0.6,0.8,0.9   # the gaps' squared CV against the cycle's share T(1)/T(top)
    python docs/load/static_gaps.py --laws --instances 64 --loads 0.2,0.5   # the candidate laws' terms on 64 instances

Per cell (16 instances, 100,000 requests, seed 0, the first 20 % left out, as
make_fit_table.py): ``a/c = lambda T(k) / c``, the arrivals one instance gets a cycle;
``idle``, the share of requests that find an instance idle, and ``from idle``, the share of
batches an idle instance starts (the chain's ``P(idle) k``), each by the model and by the
simulator; ``model``, the gaps' ``c_g^2`` :func:`mcengine.analytic.queue_static.completion_gaps`
gives; ``fits``, the ``c_g^2`` that puts the model's mean TTFT on the simulator's (its gaps
replaced, the rest of the model kept); ``seen``, the simulator's ``2 E[R] / g - 1``, ``R``
the time from a waiting request's arrival to the next batch completion on any instance and
``g = T(k) / c`` the model's mean gap (the ``c_g^2`` the model's wait term ``g (1 + c_g^2) /
2`` would need); ``all gaps``, the squared CV of every gap between the simulator's
completions; ``light``, the exact light-traffic limit ``(c - 1) / (c + 1)`` (Poisson
arrivals); ``mean err``, ``p99 err``, the model's TTFT against the simulator's (the fit
table's); ``pieces ...``, the same with the simulator's ``seen`` gaps and ``idle`` share in
the waiting term and the model's ``c_g^2`` kept in the spill's (``_gap_ttft``'s
``spill_cv2``): the model's structure fed the measured pieces.

``--laws`` prints instead the measured terms of the candidate laws (docs/load.md#static-laws; on
``--instances`` instances, 16 unless told):
``k``, the simulator's mean batch; ``P0``, the share of batches an idle instance started
(the share of completions that found the queue empty), and ``P0/k`` beside ``idle``
(exact: each such batch is one request that found an instance idle); ``gap*lam/k``, the
mean gap between completions over ``k / lambda`` (exact: one completion a batch);
``empty gaps``, the share of gaps between completions that hold no arrival (what ``P0``
would be if a completion found the queue empty only after a gap with no arrival);
``cycle cv2``, the squared CV of one instance's time between its completions (its batch's
cycle plus any idle time: the mixture of the batch-time law over the batch sizes);
``independent``, the ``c_g^2`` a waiting request would see if the ``c`` instances were
independent renewal streams of that measured law (:func:`independent_seen_cv2`), beside
``seen``; ``P0 law``, :func:`empty_share` at the simulator's ``k`` and the squared CV of
its gaps (``all gaps``), beside ``P0`` and the chain's ``P0 model`` (the model's ``P(idle)
k``) and ``P0 parts``, :func:`idle_start_share` at the model's ``k`` (the two-part gap law
solved with the chain at completions), and ``P0 parts Q``, the same at the simulator's ``k`` with
its batch-ending gaps' squared CV (``Q cv2``) in place of the uniform phases'; ``seen law``, the ``seen`` that :func:`waiting_residual` gives from the simulator's ``k``,
``all gaps`` and ``P0`` (every gap's law and the empty share: the gaps a waiting request
sees, derived), beside ``seen``; and the spill's terms near full batches: ``left``, the mean requests a completion
leaves waiting (Lindley's ``W``), ``V gap``, the variance of the arrivals in one gap
between completions, ``V long``, that of their sum over :data:`LONG_RUN` gaps per gap,
and ``V needs``, the ``V`` that puts the model's bound ``V / (2 mu) - k / 2`` on ``left``
(``mu = top - k``); ``left frozen`` and ``left iid``, the ``left`` of Lindley's walk fed the
simulator's ``k`` and ``V gap``, its gaps one cycle's spacings kept from cycle to cycle
(the phases full batches freeze) or independent (:func:`spill_walk_left`); ``E gap``, ``E cv2``, ``Q gap``, ``Q cv2``: the mean (in mean arrival
gaps, ``lambda G``) and squared CV of the gaps before completions that find the queue
empty (their instance's next batch is started idle) and before those that take a batch;
``lag1``, the correlation of consecutive gaps.

``--waits`` prints instead a waiting request's wait and what it sees (:func:`wait_measures`):
``a/c`` and ``T(k)`` at the simulator's mean batch ``k``; ``P(wait)``, the share of requests
that find every instance busy, beside the chain's (``P(wait) model``) and, for bursty
arrivals, the chain's with the arrivals read as geometric bursts (``P(wait) bursts``,
:func:`burst_idle_share` at the model's ``k``); ``busy``, the mean instances busy at an arrival, and ``idle|idle``, the mean idle ones where some are;
``wait``, a waiting request's mean wait (s), ``unbunched`` its ratio to ``T(k) / (c + 1)``,
``wait cv2`` its squared CV and ``p50/T``, ``p90/T``, ``p99/T`` its quantiles over ``T(k)``;
``R2/T``, ``Rmed/T``, ``Rmax/T``, the mean time from a waiting request's arrival to the second,
the median and the last of the ``c`` instances' completions over ``T(k)``; and the mean TTFT's
pieces, ``prefill(1) + P(wait) (wait + f (batch|wait - 1))`` (``f`` the pass's slope in the
batch): ``wait model``, the model's mean wait of a waiting request (s, the spill's part
included), ``batch|wait`` and ``batch|wait model``, the mean batch a waiting request rides
(:func:`model_pieces`).

``--light`` prints instead, on :data:`LIGHT`'s small h100 pools at offered loads ``a = lambda T(1)``
below ``c`` (Poisson, :data:`LIGHT_REPLICATIONS` replications of :data:`REQUESTS` requests, seed 11,
the first 20 % left out): ``seen``, the squared CV ``2 E[R] / (T(1) / c) - 1`` of the gaps a
waiting request sees, with its standard error over the replications (``sem``), beside the
uniform phases' ``(c - 1) / (c + 1)`` (``phases``), the model's busy side there, ``1 / shape`` of
:func:`mcengine.analytic.queue_static.completion_gaps` (``model``: the phases weighted by ``1 - 1/c``),
and ``followers``, the same with the requests
that arrive during a first waiter's wait seeing its rest: ``2c/(c + 1) (1 + a/(c + 2)) / (1 +
a/(c + 1)) - 1`` (docs/load.md#static-light-followers: a reading that matches from 2 instances, not a law).

``--steps`` prints instead the Poisson cells simulated twice (the fit table's run: 200,000
requests, seed 0, MSER-5's warm-up left out), with the design's step tables and with each
table (the pass and the decode step) replaced by its line through batch 1 and the top batch,
the ``T(k)`` the fast model takes: ``T(k) under line``, the most the design's cycle falls under
that line; the squared CV of every gap between completions (``gaps``, as ``all gaps``) and the
requests a completion leaves waiting (``left``) each way; the simulator's mean and P99 TTFT (ms)
each way and the fast model's error against each (:func:`steps_cell`).

``--phases`` prints instead, per design, load and arrivals (``--instances``, 16 unless told, :data:`REQUESTS`
requests, seed 0, the first 20 % left out), the gaps between completions with the design's
step tables (``T1/Ttop`` ``own``) and with both tables replaced by lines through the top batch
whose cycle at batch 1 is the share ``T1/Ttop`` of the top batch's (:data:`PHASE_RATIOS`;
:func:`cycle_share_system`): ``lam s``, the cycle's growth over a gap; ``k``, the mean batch;
``full`` and ``empty``, the shares of completions whose instance takes a full batch and that
find the queue empty (:func:`phase_measures`); ``all gaps``, every gap's squared CV (as
``--laws``' ``all gaps``), ``full gaps`` and ``part gaps``, that of the gaps before a
completion that takes a full batch and before one that takes a part batch, and ``hole``, the
largest gap's mean share of a run of ``--instances`` gaps in a row, about a cycle (the uniform
phases' ``H_c / c``: 0.21 on 16 instances); each the mean over ``--replications`` runs (1 unless
told); ``hole platoon`` and ``all platoon``, the hole and every gap's squared CV of the
one-platoon conveyor fed the simulator's ``k`` (:func:`platoon_gaps`); and ``all gaps sem``,
the standard error of ``all gaps``.

``--pools`` prints instead, on :data:`POOLS` instances of each design at offered loads ``a/c =
lambda T(1) / c`` of :data:`OFFERED` (Poisson, :data:`POOL_REQUESTS` requests a cell, seed 0,
MSER-5's warm-up left out): ``load``, the fraction of capacity; ``lam s``, the cycle's growth
over a gap (``A`` with no batch full); ``k``, the simulator's mean batch; ``wait``, a waiting
request's mean wait (s), and ``unbunched``, its ratio to ``T(k) / (c + 1)`` (the wait for
the oldest of ``c`` busy instances at uniform phases, docs/load.md#static-direct); ``onset``,
the model's bunching weight ``min(1, max(0, a/c - 1))`` at its own ``a = lambda T(k)``; and the
waiting request's excess over it in cycles, ``excess/T`` (``wait / T(k) - 1 / (c + 1)``); and the
fast model's mean and P99 TTFT against the simulator's (``mean err``, ``p99 err``). Nothing
is written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # this checkout's mcengine
sys.path.insert(0, str(HERE))
from make_fit_table import ARRIVALS, DESIGNS, INSTANCES, LOADS  # noqa: E402  (the fit table's grid)

#: Requests simulated per cell and the share of the first ones left out (the measurements
#: docs/load.md#static quotes were taken so).
REQUESTS, WARMUP = 100_000, 0.2


def batch_rows(df: pd.DataFrame, prefill_s) -> tuple[np.ndarray, pd.DataFrame]:
    """Each request's batch start (s) and the batches of the simulator's per-request rows
    ``df``: a batch is the requests sharing an instance and a first token, it started its
    pass ``prefill_s[k]`` before that first token and completed at their finish; one row a
    batch (``instance``, ``start``, ``finish``, ``size``, ``measured``, and ``from_idle``: its
    instance's previous batch did not complete at its start), sorted by instance and start."""
    size = df.groupby(["instance", "first_token_s"]).arrival_s.transform("size").to_numpy()
    start = df.first_token_s.to_numpy() - np.asarray(prefill_s)[size]
    batches = pd.DataFrame({"instance": df.instance.to_numpy(), "start": start, "finish": df.finish_s.to_numpy(), "size": size,
                            "measured": df.measured.to_numpy()}).drop_duplicates(["instance", "finish"]).sort_values(["instance", "start"])
    before = batches.groupby("instance").finish.shift(1).to_numpy()
    batches["from_idle"] = ~np.isclose(batches.start.to_numpy(), before, rtol=0.0, atol=1e-9)
    return start, batches


def gap_measures(df: pd.DataFrame, rows: tuple[np.ndarray, pd.DataFrame]) -> dict:
    """The simulator's per-request rows ``df`` (statistics over the ``measured`` ones) and
    their batches ``rows`` (:func:`batch_rows`: a batch is the requests sharing an instance
    and a first token, it started its pass ``prefill_s[k]`` before that first token and
    completed at their finish). Returns the
    share of requests whose batch started at their arrival (``idle``: they found an instance
    idle), the mean time ``E[R]`` (s) from a waiting request's arrival to the next batch
    completion on any instance (``residual``), the share of batches an idle instance started
    (``idle_started``: its previous batch did not complete at that instant) and the squared
    CV of the gaps between consecutive completions (``gaps_cv2``)."""
    start, batches = rows
    from_idle = batches.from_idle.to_numpy()
    completions = np.sort(batches.finish.to_numpy())
    kept = df.measured.to_numpy()
    arrival = df.arrival_s.to_numpy()[kept]
    waited = start[kept] - arrival > 1e-9
    after = np.searchsorted(completions, arrival[waited])
    inside = after < len(completions)
    gaps = np.diff(np.sort(batches.finish.to_numpy()[batches.measured.to_numpy()]))
    return {"idle": float(1.0 - waited.mean()), "residual": float(np.mean(completions[after[inside]] - arrival[waited][inside])),
            "idle_started": float(from_idle[batches.measured.to_numpy()].mean()), "gaps_cv2": float(gaps.var() / gaps.mean() ** 2)}


def independent_seen_cv2(cycles, servers: int) -> float:
    """The squared CV ``2 E[R] / g - 1`` of the gaps a waiting request sees on ``servers``
    independent stationary renewal streams, each with the empirical law of ``cycles`` (one
    instance's times between its completions, mean ``m``; ``g = m / c``): the time ``R`` to
    the next completion exceeds ``t`` when every stream's equilibrium residual does, ``P(R >
    t) = h(t)^c`` with ``h(t) = (1 / m) int_t^inf P(X > u) du`` (Cox 1962), so ``E[R] =
    int_0^inf h^c dt``. ``h`` is linear between the sorted samples, so the integral is exact
    on each piece: ``(x_(j+1) - x_j) (h_j^(c+1) - h_(j+1)^(c+1)) / ((c + 1)(h_j - h_(j+1)))``.
    Equal cycles give ``(c - 1) / (c + 1)`` (the light-traffic limit), exponential ones 1."""
    x = np.concatenate(([0.0], np.sort(np.asarray(cycles, float))))
    n, m = len(x) - 1, float(np.mean(cycles))
    above = 1.0 - np.arange(n) / n  # P(X > u) on [x_j, x_(j+1))
    h = np.concatenate((np.cumsum((np.diff(x) * above)[::-1])[::-1], [0.0])) / m
    width, drop = np.diff(x), h[:-1] - h[1:]
    power = h[:-1] ** (servers + 1) - h[1:] ** (servers + 1)
    piece = np.divide(width * power, (servers + 1) * drop, out=width * h[:-1] ** servers, where=drop > 0)
    return float(2.0 * np.sum(piece) * servers / m - 1.0)


#: Gaps summed for the long-run variance of the arrivals per gap (``V long``).
LONG_RUN = 50

#: Bisection steps of :func:`empty_share` (a fixed count: 2^-50 of the unit interval).
ROOT_STEPS = 50


def count_pgf(z, mean, variance):
    """``E[z^N]`` for the requests ``N`` that reach the queue in one gap between completions,
    of mean ``k`` and variance ``V``: negative binomial (a Poisson count over a gamma gap;
    ``V = k c_a^2 + k^2 c_g^2``, the spill's variance, matches its first two moments),
    ``(1 + (V - k) / k (1 - z))^(-k^2 / (V - k))``; Poisson's ``exp(-k (1 - z))`` where ``V <= k``."""
    k, v = np.asarray(mean, float), np.asarray(variance, float)
    excess = np.maximum(v - k, 1e-300)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        nb = (1.0 + excess / k * (1.0 - z)) ** (-k * k / excess)
    return np.where(v - k > 1e-9 * k, nb, np.exp(-k * (1.0 - z)))


def empty_share(batch_mean, gap_cv2, arrival_cv2):
    """The share ``P0`` of completions that find the queue empty (the batches an idle instance
    starts; a request finds an instance idle with probability ``P0 / k``, exactly, since each
    such batch is the one request that found it), from the chain embedded at completions:
    with ``i`` instances idle after a completion and ``N`` requests arriving in the next gap
    (gaps i.i.d., mean ``k / lambda`` (one completion a batch), squared CV ``c_g^2``), the next
    completion finds the queue empty when ``N <= i`` (the idle ones took them) and leaves ``i'
    = (i + 1 - N)^+`` idle. That is G/M/1's chain at arrivals (Kleinrock 1975, ch. 6, the queue G/M/1;
    docs/sources.md#load-queueing): its law is geometric, ``pi_i = (1 - s) s^i``, with ``s`` the
    root in (0, 1) of ``s = E[s^N]`` (:func:`count_pgf`), and ``P0 = sum_i pi_i P(N <= i) =
    E[s^N] = s``. Exponential gaps and Poisson arrivals give ``s = 1 / k``, the Markov chain's
    ``P(idle) k`` on many instances; ``k <= 1`` gives 1 (every batch a singleton). Many
    instances and batches below their capacity: the ``c`` bound on ``i`` and the cap ``B`` on
    what a completion takes are left out (so ``B = 1``, M/D/c, is outside it: there the
    spill is the whole wait). :data:`ROOT_STEPS` bisection steps."""
    k = np.asarray(batch_mean, float)
    variance = k * np.asarray(arrival_cv2, float) + k * k * np.asarray(gap_cv2, float)
    return _empty_root(k, lambda s: variance)


def _empty_root(k, variance_at):
    """The root ``s`` in (0, 1) of ``s = E[s^N]`` (:func:`count_pgf`, mean ``k``, variance
    ``variance_at(s)``) by :data:`ROOT_STEPS` bisection steps (``E[s^N] > s`` below the root,
    ``<`` above it); 1 where ``k <= 1``."""
    shape = np.broadcast(k, variance_at(0.5)).shape
    lo, hi = np.zeros(shape), np.ones(shape)
    for _ in range(ROOT_STEPS):
        mid = 0.5 * (lo + hi)
        above = count_pgf(mid, k, variance_at(mid)) > mid
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return np.where(k > 1.0, 0.5 * (lo + hi), 1.0)


def two_part_gap_cv2(empty, batch_mean, servers, arrival_cv2, batch_cv2=None):
    """Every gap's squared CV between completions as :func:`idle_start_share`'s two parts (in
    mean arrival gaps, ``1 / lambda``): a share ``s = empty`` of gaps end in a completion
    that finds the queue empty and are the arrivals' own (mean 1, squared CV ``c_a^2``); the
    rest end in a batch, of mean ``(k - s) / (1 - s)`` (every gap averages ``k``, one
    completion a batch) and squared CV ``v_Q = batch_cv2``, unless given that of ``c``
    instances at independent uniform phases, ``(c - 1) / (c + 1)``: ``(s (1 + c_a^2) + (1 -
    s) m_Q^2 (1 + v_Q)) / k^2 - 1``."""
    s, k, c, a = (np.asarray(x, float) for x in (empty, batch_mean, servers, arrival_cv2))
    v = (c - 1.0) / (c + 1.0) if batch_cv2 is None else np.asarray(batch_cv2, float)
    rest = (k - s) / (1.0 - s)
    return (s * (1.0 + a) + (1.0 - s) * rest * rest * (1.0 + v)) / (k * k) - 1.0


def idle_start_share(batch_mean, servers, arrival_cv2, batch_cv2=None):
    """The share ``P0`` of batches an idle instance starts, :func:`empty_share`'s chain with
    every gap's law the two parts of :func:`two_part_gap_cv2` (``batch_cv2``, the batch-ending
    gaps' squared CV, unless given the uniform phases') at that same share, solved
    jointly: ``s = E[s^N]`` with ``N``'s variance ``k c_a^2 + k^2 c_g^2(s)`` (one bisection:
    ``E[s^N] - s`` changes sign once in (0, 1) at the model's ``k`` on the fit grid). The
    parts are **measured** (docs/load.md#static-laws (2): the gaps before an empty completion
    are 0.89-0.97 arrival gaps, squared CV 1.0-1.1 with Poisson arrivals; those before a batch
    0.8-1.3 where the unbunched phases give 0.88 on 16 instances); no constant is fitted."""
    k = np.asarray(batch_mean, float)
    return _empty_root(k, lambda s: k * np.asarray(arrival_cv2, float) + k * k * two_part_gap_cv2(s, k, servers, arrival_cv2, batch_cv2))


def burst_idle_share(offered, servers, arrival_cv2):
    """The share of requests that find an instance idle on the static queue's Markov chain
    (:func:`mcengine.analytic.queue_static.completion_gaps`: ``X`` the requests waiting or minus
    the idle instances, completions at ``(c - i) / T``) with the arrivals read as a Poisson
    stream of geometric bursts of mean ``b = (1 + c_a^2) / 2`` (the renewal stream's first two
    moments, as ``queue_static._seen_gap``; a burst's requests take the idle instances first).
    Cutting the chain between ``X = y`` and ``y + 1`` balances the bursts that cross upwards
    (``(lambda / b) sum_(x <= y) pi_x q^(y - x)``, ``q = 1 - 1/b``, memoryless sizes) against the
    completions that cross downwards, so on the idle side, with ``j = c - i`` instances busy and
    ``a = lambda T``, ``pi_j / pi_(j - 1) = (q (j - 1) + a / b) / j``: the negative binomial's
    weights ``w_j`` of size ``r = a / (b q)`` and success probability ``p = 1 / b`` (mean ``a``;
    Erlang's Poisson as ``b -> 1``), and the waiting side holds ``P(X >= 1) = w_c q (1 + r / c)``
    (``a / c`` at ``b = 1``). A burst of ``n`` meeting ``i`` idle instances seats ``min(n, i)`` of its
    requests, ``E[min(n, i)] = b (1 - q^i)``, and ``sum_(j <= c) w_j q^(c - j) = w_c (r + c) / r``
    (the hockey-stick identity), so with ``S = I_p(r, c + 1)`` (the regularised incomplete beta
    function: the negative binomial's distribution up to ``c``) the share is ``(S - w_c (r + c) /
    r) / (S + w_c q (1 + r / c))``, **derived** (a sparse solve of the chain agrees to 1e-12,
    tests/standalone/test_static_gaps.py). ``arrival_cv2 > 1`` (bursts); the model's ``k``, and so
    ``T = T(k)``, is the caller's."""
    a, c, v = (np.asarray(x, float) for x in (offered, servers, arrival_cv2))
    b = (1.0 + v) / 2.0
    p = 1.0 / b
    q = 1.0 - p
    r = a / (b * q)
    below = special.betainc(r, c + 1.0, p)
    top = np.exp(c * np.log(q) + r * np.log(p) + special.gammaln(r + c) - special.gammaln(r) - special.gammaln(c + 1.0))
    return (below - top * (r + c) / r) / (below + top * q * (1.0 + r / c))


#: The spill walk's runs (:func:`spill_walk_left`): patterns of the ``c`` gaps, cycles walked
#: on each, the cycles left out at the start (the walk from an empty queue), and the seed.
WALK_PATTERNS, WALK_CYCLES, WALK_WARMUP, WALK_SEED = 200, 2_000, 200, 0


def spill_walk_left(batch_mean, count_variance, top, servers, arrival_cv2=1.0, frozen=True):
    """The mean requests a completion leaves waiting, ``E[W]``, on Lindley's walk ``W' = (W + N -
    top)^+`` at the pool's completions (docs/load.md#static-laws' (3)), with ``N`` the arrivals
    of the gap before a completion: mean ``k`` (the mean batch), variance ``V = k c_a^2 + k^2
    c_g^2`` (``count_variance``; the gaps' part ``k^2 c_g^2`` from it). ``frozen``: the phases
    of full batches are kept, so the ``c`` gaps are one cycle's spacings, the same every
    cycle: the gaps' gamma laws conditioned on summing to the cycle, i.e. ``c k`` times a
    Dirichlet draw of equal parameters ``alpha``, whose squared CV ``(c - 1)/(c alpha + 1)`` is
    ``c_g^2`` (a draw per pattern, :data:`WALK_PATTERNS` of them; consecutive sums of ``m``
    gaps have variance ``k^2 c_g^2 m (c - m)/(c - 1)``, none over a whole cycle). Otherwise
    the gaps are i.i.d. gamma (the walk of ``_spill_wait``'s independent steps). Given its
    gap's ``k g`` (mean ``k``) the count is Poisson for ``c_a^2 = 1``, and gamma-mixed
    Poisson of variance ``k g c_a^2`` for ``c_a^2 > 1``. A seeded run: :data:`WALK_CYCLES`
    cycles a pattern, the first :data:`WALK_WARMUP` left out. ``c_g^2`` is at most ``c - 1``
    (the Dirichlet's)."""
    k, top, c, ca2 = float(batch_mean), float(top), int(servers), float(arrival_cv2)
    cg2 = max(float(count_variance) - k * ca2, 0.0) / (k * k)
    rng = np.random.default_rng(WALK_SEED)

    def draw():
        if cg2 <= 0.0:
            return np.full((WALK_PATTERNS, c), k)
        if frozen and c == 1:
            return np.full((WALK_PATTERNS, 1), k)
        if frozen:
            alpha = ((c - 1.0) / cg2 - 1.0) / c
            return rng.dirichlet(np.full(c, alpha), WALK_PATTERNS) * c * k
        return rng.gamma(1.0 / cg2, k * cg2, (WALK_PATTERNS, c))

    pattern = draw()
    w, total = np.zeros(WALK_PATTERNS), 0.0
    for cycle in range(WALK_CYCLES):
        if not frozen:
            pattern = draw()
        mean = pattern if ca2 <= 1.0 else rng.gamma(pattern / (ca2 - 1.0), ca2 - 1.0)
        counts = rng.poisson(mean)
        for j in range(c):
            w = np.maximum(w + counts[:, j] - top, 0.0)
            if cycle >= WALK_WARMUP:
                total += w.sum()
    return total / (WALK_PATTERNS * (WALK_CYCLES - WALK_WARMUP) * c)


def waiting_residual(batch_mean, gap_cv2, empty, rate_per_s=1.0):
    """The mean time ``E[R]`` (s) from a waiting request's arrival to the next completion, on
    :func:`empty_share`'s chain: gaps between completions i.i.d. gamma of mean ``m = k /
    lambda`` (``k`` the mean batch) and squared CV ``c_g^2``, Poisson arrivals, and ``i``
    instances idle at a gap's start, geometric ``P(i >= n) = s^n`` independent of that gap
    (``s = empty``, the chain's root). The arrivals of a gap take the idle instances first, so
    one at time ``t`` into a gap waits when ``i <= N(t)``, the arrivals before it:
    ``w(t) = 1 - s E[s^N(t)] = 1 - s e^(-beta t)``, ``beta = lambda (1 - s)``. Arrivals are
    uniform in time, so ``E[R] = E[int_0^X w(t) (X - t) dt] / E[int_0^X w(t) dt]`` over a gap
    ``X``: ``(E[X^2] / 2 - s (m / beta - (1 - L) / beta^2)) / (m - s (1 - L) / beta)``, ``L =
    E[e^(-beta X)] = (1 + beta m c_g^2)^(-1 / c_g^2)``. ``s = 0`` (no idle instance) gives the
    renewal residual ``m (1 + c_g^2) / 2``; exponential gaps give ``m`` whatever ``s`` (a
    memoryless gap's rest). So the gaps a waiting request sees, ``2 E[R] / g - 1``, follow
    from every gap's law and the empty share: short gaps before empty completions hold no
    waiting request, and a gap's first arrivals ride idle instances. NaN where ``s >= 1``
    (no request waits)."""
    k, v, s = (np.asarray(x, float) for x in (batch_mean, gap_cv2, empty))
    lam = np.asarray(rate_per_s, float)
    m = k / lam
    with np.errstate(divide="ignore", invalid="ignore"):
        beta = lam * (1.0 - s)
        transform = np.where(v > 0.0, (1.0 + beta * m * v) ** (-1.0 / np.where(v > 0.0, v, 1.0)), np.exp(-beta * m))  # E[e^(-beta X)] (deterministic gaps at c_g^2 = 0)
        absorbed = (1.0 - transform) / beta  # E[(1 - e^(-beta X)) / beta]
        out = ((1.0 + v) * m * m / 2.0 - s * (m / beta - absorbed / beta)) / (m - s * absorbed)
    return np.where(s < 1.0, out, np.nan)


def law_measures(df: pd.DataFrame, rows: tuple[np.ndarray, pd.DataFrame], servers: int) -> dict:
    """The measured terms of the candidate laws (the module's ``--laws`` columns) from the
    simulator's per-request rows ``df`` (the ``measured`` ones) and their batches ``rows``
    (:func:`batch_rows`), read as :func:`gap_measures` reads them; ``left`` counts the
    measured requests arrived and not started just after each completion."""
    start, batches = rows
    from_idle = batches.from_idle.to_numpy()
    kept = batches.measured.to_numpy()
    finish = np.sort(batches.finish.to_numpy()[kept])
    arrivals = np.sort(df.arrival_s.to_numpy())
    cycles = batches[kept].groupby("instance").finish.diff().dropna().to_numpy()
    counts = np.diff(np.searchsorted(arrivals, finish))  # arrivals in each gap between completions
    waiting = np.sort(df.arrival_s.to_numpy()[df.measured.to_numpy()]), np.sort(start[df.measured.to_numpy()])
    left = np.searchsorted(waiting[0], finish, side="right") - np.searchsorted(waiting[1], finish, side="right")
    runs = counts[: counts.size // LONG_RUN * LONG_RUN].reshape(-1, LONG_RUN).sum(axis=1)
    typed = batches.assign(finds_empty=batches.groupby("instance").from_idle.shift(-1))  # its completion found the queue empty
    typed = typed[kept & typed.finds_empty.notna().to_numpy()].sort_values("finish")
    before, empty = np.diff(typed.finish.to_numpy()), typed.finds_empty.to_numpy(bool)[1:]
    return {"k": float(batches["size"][kept].mean()), "left": float(left.mean()), "V gap": float(counts.var()),
            "V long": float(runs.var() / LONG_RUN), "P0": float(from_idle[kept].mean()), "mean gap": float(np.diff(finish).mean()),
            "empty gaps": float(np.mean(counts == 0)),
            "cycle cv2": float(cycles.var() / cycles.mean() ** 2), "independent": independent_seen_cv2(cycles, servers),
            "E gaps": before[empty], "Q gaps": before[~empty], "lag1": float(np.corrcoef(np.diff(finish)[:-1], np.diff(finish)[1:])[0, 1])}


def laws_cell(scenario, system, load: float, arrival: str, cv: float, requests: int = REQUESTS, seed: int = 0) -> dict:
    """One static cell's measured terms of the candidate laws (the module's ``--laws`` columns)."""
    from mcengine.standalone.serve import serve_summary

    s = system
    demand = load * s.capacity_tokens_per_s
    rate = demand / s.output_tokens
    _, df = serve_summary(scenario, demand, requests, seed, arrival, cv, "static", s.instances, warmup=WARMUP)
    rows = batch_rows(df, s.prefill_s)  # grouped once: both measures read the same batches
    sim, law = gap_measures(df, rows), law_measures(df, rows, s.instances)
    top, o = s.batch_max, s.output_tokens
    g = (s.prefill_s[top] + (o - 1) * s.decode_s[top] - s.prefill_s[1] - (o - 1) * s.decode_s[1]) / max(top - 1, 1) * (law["k"] - 1.0)
    g = (s.prefill_s[1] + (o - 1) * s.decode_s[1] + g) / s.instances  # T(k) / c at the simulator's mean batch
    from mcengine.analytic import queue_static as qs

    model = qs.completion_gaps(rate, s.instances, s.prefill_s[1] + (o - 1) * s.decode_s[1], s.prefill_s[top] + (o - 1) * s.decode_s[top],
                               top, qs.STATIC_GAP_CV2, cv)
    batch_gaps = law["Q gaps"]
    return {"load": load, "arrival": arrival, "k": law["k"], "P0": law["P0"], "P0/k": law["P0"] / law["k"], "idle": sim["idle"],
            "gap*lam/k": law["mean gap"] * rate / law["k"], "empty gaps": law["empty gaps"], "cycle cv2": law["cycle cv2"],
            "independent": law["independent"], "seen": 2.0 * sim["residual"] / g - 1.0, "all gaps": sim["gaps_cv2"],
            "P0 law": float(empty_share(law["k"], sim["gaps_cv2"], cv * cv)),
            "seen law": float(2.0 * waiting_residual(law["k"], sim["gaps_cv2"], law["P0"], rate) / g - 1.0),
            "P0 model": min(float(model.idle_probability * model.batch_mean), 1.0),
            "P0 parts": float(idle_start_share(model.batch_mean, s.instances, cv * cv)),
            "P0 parts Q": float(idle_start_share(law["k"], s.instances, cv * cv, batch_gaps.var() / batch_gaps.mean() ** 2)),
            "left": law["left"], "V gap": law["V gap"],
            "V long": law["V long"], "V needs": 2.0 * (top - law["k"]) * (law["left"] + law["k"] / 2.0),
            "left frozen": spill_walk_left(law["k"], law["V gap"], top, s.instances, cv * cv),
            "left iid": spill_walk_left(law["k"], law["V gap"], top, s.instances, cv * cv, frozen=False),
            **{f"{kind} {what}": f(law[f"{kind} gaps"]) for kind in ("E", "Q")
               for what, f in (("gap", lambda g: float(rate * g.mean())), ("cv2", lambda g: float(g.var() / g.mean() ** 2)))},
            "lag1": law["lag1"]}


def cell(scenario, system, load: float, arrival: str, cv: float, requests: int = REQUESTS, seed: int = 0) -> dict:
    """One static cell: the model's and the simulator's gaps (see the module's docstring)."""
    from scipy import optimize

    from mcengine.analytic import queue_static as qs
    from mcengine.standalone.serve import serve_summary

    s = system
    demand = load * s.capacity_tokens_per_s
    rate = demand / s.output_tokens
    body, df = serve_summary(scenario, demand, requests, seed, arrival, cv, "static", s.instances, warmup=WARMUP)
    top, o = s.batch_max, s.output_tokens
    cycle_1, cycle_top = s.prefill_s[1] + (o - 1) * s.decode_s[1], s.prefill_s[top] + (o - 1) * s.decode_s[top]
    gaps = qs.completion_gaps(rate, s.instances, cycle_1, cycle_top, top, qs.STATIC_GAP_CV2, cv)

    def mean_ttft(cv2):
        return float(qs._gap_ttft(0.99, gaps._replace(shape=np.asarray(1.0 / cv2)), rate, cv, s.prefill_s[1], s.prefill_s[top], top,
                                  s.decode_s[1], s.decode_s[top])[0])

    def errors(cv2, idle, spill_cv2=None):  # the model's TTFT (mean, P99) over the simulator's, less one
        got = qs._gap_ttft(0.99, gaps._replace(shape=np.asarray(1.0 / cv2), idle_probability=np.asarray(idle)), rate, cv, s.prefill_s[1],
                           s.prefill_s[top], top, s.decode_s[1], s.decode_s[top], spill_cv2=spill_cv2)
        return float(got[0]) * 1e3 / body["ttft_ms"]["mean"] - 1.0, float(got[1]) * 1e3 / body["ttft_ms"]["p99"] - 1.0

    target = body["ttft_ms"]["mean"] / 1e3
    lo, hi = 1e-3, 30.0
    fits = optimize.brentq(lambda x: mean_ttft(x) - target, lo, hi) if (mean_ttft(lo) - target) * (mean_ttft(hi) - target) < 0 else np.nan
    sim = gap_measures(df, batch_rows(df, s.prefill_s))
    g, idle = float(gaps.gap_s), float(gaps.idle_probability)
    seen = 2.0 * sim["residual"] / g - 1.0
    pieces = errors(seen, sim["idle"], 1.0 / float(gaps.shape))
    return {"load": load, "arrival": arrival, "a/c": float(rate * g), "idle model": idle, "idle sim": sim["idle"],
            "from idle model": min(idle * float(gaps.batch_mean), 1.0), "from idle sim": sim["idle_started"],
            "model": float(1.0 / gaps.shape), "fits": fits, "seen": seen, "all gaps": sim["gaps_cv2"],
            "light": (s.instances - 1) / (s.instances + 1), "mean err": errors(float(1.0 / gaps.shape), idle)[0],
            "p99 err": errors(float(1.0 / gaps.shape), idle)[1], "pieces mean err": pieces[0], "pieces p99 err": pieces[1]}


def wait_measures(df: pd.DataFrame, rows: tuple[np.ndarray, pd.DataFrame], servers: int) -> dict:
    """A waiting request's wait and what it sees (the module's ``--waits`` columns) from the
    simulator's per-request rows ``df`` (the ``measured`` ones) and their batches ``rows``
    (:func:`batch_rows`): ``wait``, the waits of the requests that wait (s); ``busy``, the
    instances busy at each measured arrival (a batch holds its instance from its start to
    its finish; ``servers`` busy is waiting); ``residuals``, the sorted times (s) from each
    waiting request's arrival to each instance's completion, one row a request."""
    start, batches = rows
    kept = df.measured.to_numpy()
    arrival = df.arrival_s.to_numpy()[kept]
    waited = start[kept] - arrival > 1e-9
    t = arrival[waited]
    busy = np.zeros(arrival.size, int)
    residuals = np.full((t.size, servers), np.nan)
    for i, (_, b) in enumerate(batches.groupby("instance")):
        s, f = b.start.to_numpy(), b.finish.to_numpy()
        at = np.searchsorted(s, arrival - 1e-9, side="left") - 1  # the batch started before the arrival (one started at it, to 1e-9, took it)
        busy += (at >= 0) & (f[np.maximum(at, 0)] > arrival)
        at = np.searchsorted(s, t - 1e-9, side="left") - 1
        residuals[:, i] = np.where(at >= 0, f[np.maximum(at, 0)] - t, np.nan)
    return {"wait": (start[kept] - arrival)[waited], "busy": busy, "residuals": np.sort(residuals, axis=1)}


def model_pieces(system, rate: float, cv: float) -> tuple[float, float]:
    """The fast model's mean wait (s) of a waiting request and the mean batch it rides, read
    from :func:`mcengine.analytic.queue_static._gap_ttft` with a flat pass (its TTFT less
    ``prefill(1)`` is then ``P(wait)`` times the wait) and a step of one second a request past
    the first (its mean step is then ``P(wait)`` times the others in the batch)."""
    from mcengine.analytic import queue_static as qs

    s = system
    c, top, o = s.instances, s.batch_max, s.output_tokens
    cycle_1, cycle_top = s.prefill_s[1] + (o - 1) * s.decode_s[1], s.prefill_s[top] + (o - 1) * s.decode_s[top]
    gaps = qs.completion_gaps(rate, c, cycle_1, cycle_top, top, qs.STATIC_GAP_CV2, cv)
    ttft, _, others, _ = qs._gap_ttft(0.99, gaps, rate, cv, s.prefill_s[1], s.prefill_s[1], top, 0.0, top - 1.0)
    waiting = 1.0 - float(gaps.idle_probability)
    return (float(ttft) - s.prefill_s[1]) / waiting, 1.0 + float(others) / waiting


def waits_cell(scenario, system, load: float, arrival: str, cv: float, requests: int = REQUESTS, seed: int = 0) -> dict:
    """One static cell's waits (the module's ``--waits`` columns)."""
    from mcengine.analytic import queue_static as qs
    from mcengine.standalone.serve import serve_summary

    s = system
    c, top, o = s.instances, s.batch_max, s.output_tokens
    rate = load * s.capacity_tokens_per_s / o
    _, df = serve_summary(scenario, load * s.capacity_tokens_per_s, requests, seed, arrival, cv, "static", c, warmup=WARMUP)
    rows = batch_rows(df, s.prefill_s)
    got = wait_measures(df, rows, c)
    cycle_1, cycle_top = s.prefill_s[1] + (o - 1) * s.decode_s[1], s.prefill_s[top] + (o - 1) * s.decode_s[top]
    k = float(rows[1]["size"][rows[1].measured.to_numpy()].mean())
    model = qs.completion_gaps(rate, c, cycle_1, cycle_top, top, qs.STATIC_GAP_CV2, cv)
    cycle, model_cycle = (cycle_1 + (cycle_top - cycle_1) / max(top - 1, 1) * (x - 1.0) for x in (k, float(model.batch_mean)))  # T(k) at the simulator's and the model's mean batch
    w, r = got["wait"], got["residuals"]
    size = df.groupby(["instance", "first_token_s"]).arrival_s.transform("size").to_numpy()[df.measured.to_numpy()]
    waited = (rows[0] - df.arrival_s.to_numpy())[df.measured.to_numpy()] > 1e-9
    wait_model, batch_model = model_pieces(s, rate, cv)
    return {"load": load, "arrival": arrival, "a/c": rate * cycle / c, "k": k, "T(k)": cycle, "P(wait)": w.size / got["busy"].size,
            "P(wait) model": float(1.0 - model.idle_probability),
            "P(wait) bursts": float(1.0 - burst_idle_share(rate * model_cycle, c, cv * cv)) if cv > 1.0 else np.nan,
            "busy": float(got["busy"].mean()),
            "idle|idle": float(c - got["busy"][got["busy"] < c].mean()), "wait": float(w.mean()), "unbunched": float(w.mean()) * (c + 1) / cycle,
            "wait cv2": float(w.var() / w.mean() ** 2), **{f"p{q}/T": float(np.quantile(w, q / 100) / cycle) for q in (50, 90, 99)},
            "R2/T": float(np.nanmean(r[:, 1]) / cycle), "Rmed/T": float(np.nanmean(r[:, c // 2]) / cycle), "Rmax/T": float(np.nanmean(r[:, -1]) / cycle),
            "wait model": wait_model, "batch|wait": float(size[waited].mean()), "batch|wait model": batch_model}


def steps_cell(system, load: float) -> dict:
    """One ``--steps`` cell (see the module's docstring): the simulator's mean and P99 TTFT (ms)
    with the design's step tables and with each replaced by its line through batch 1 and the
    top batch (the fast model's ``T(k)``), the fast model's error against each."""
    import dataclasses

    from make_fit_table import RUNS
    from mcengine.standalone.serve import fast_latency, latency_summary, simulate_requests

    s, top = system, system.batch_max
    share = np.r_[0.0, np.arange(top) / max(top - 1, 1)]
    line = dataclasses.replace(s, **{name: np.r_[0.0, t[1] + (t[top] - t[1]) * share[1:]] for name, t in (("prefill_s", s.prefill_s), ("decode_s", s.decode_s))})
    rate = load * s.capacity_tokens_per_s / s.output_tokens
    fast = fast_latency(s, rate, 1.0, 0.99)
    requests, warmup, _ = RUNS["static"]
    row = {"load": load, "T(k) under line": float(np.max(1.0 - (s.prefill_s + (s.output_tokens - 1) * s.decode_s)[1:] / (line.prefill_s + (s.output_tokens - 1) * line.decode_s)[1:]))}
    for name, table in (("steps", s), ("line", line)):
        df, busy = simulate_requests(table, rate, requests, 0, 0, "poisson", 1.0)
        summary = latency_summary(df, busy, table, warmup)
        got = summary["ttft_ms"]
        df["measured"] = np.arange(len(df)) >= len(df) - summary["requests_measured"]
        rows = batch_rows(df, table.prefill_s)
        row |= {f"{name} gaps": gap_measures(df, rows)["gaps_cv2"], f"{name} left": law_measures(df, rows, s.instances)["left"]}
        row |= {f"{name} mean": got["mean"], f"{name} p99": got["p99"],
                f"{name} mean err": float(fast.ttft_mean_s) * 1e3 / got["mean"] - 1.0, f"{name} p99 err": float(fast.ttft_q_s) * 1e3 / got["p99"] - 1.0}
    return row


#: ``--phases``' cycle shares ``T(1) / T(top)`` of the lined step tables (:func:`cycle_share_system`).
PHASE_RATIOS = (0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8)


def cycle_share_system(system, share: float):
    """``system`` with both step tables replaced by lines through the top batch ``B``, each at
    batch 1 the share ``share`` of its value at ``B``: the cycle ``T(b) = T(B) (share + (1 -
    share) (b - 1) / (B - 1))``, its top and so the pool's capacity kept, its growth with the
    batch set by ``share`` alone."""
    import dataclasses

    top = system.batch_max
    line = np.r_[0.0, share + (1.0 - share) * np.arange(top) / max(top - 1, 1)]
    return dataclasses.replace(system, prefill_s=system.prefill_s[top] * line, decode_s=system.decode_s[top] * line)


def phase_measures(rows: tuple[np.ndarray, pd.DataFrame], top: int, servers: int) -> dict:
    """The gaps between the simulator's completions by what each completion's instance does
    next (``--phases``' columns), from the batches ``rows`` (:func:`batch_rows`; the
    ``measured`` ones whose instance has a next batch): it takes a full batch of ``top``,
    takes a part batch, or finds the queue empty (its next batch starts idle). Returns the
    shares ``full`` and ``empty``, the squared CV of every gap (``all gaps``) and of the
    gaps before a full (``full gaps``) and a part batch (``part gaps``), and ``hole``: the
    gaps cut into runs of ``servers`` in a row (about a cycle each, the last short run left
    out), the mean over the runs of the largest gap's share of its run (the uniform phases'
    ``H_c / c``, ``H_c`` the harmonic number: the mean largest of the ``c`` spacings of ``c``
    uniform points on a circle, R. Pyke 1965, docs/sources.md)."""
    _, batches = rows
    by = batches.groupby("instance")
    following, idle_next = by["size"].shift(-1), by.from_idle.shift(-1)
    kept = batches.measured.to_numpy() & idle_next.notna().to_numpy()
    order = np.argsort(batches.finish.to_numpy()[kept], kind="stable")
    takes = np.where(idle_next.fillna(True).to_numpy(bool), 0.0, following.fillna(0.0).to_numpy())[kept][order][1:]
    gaps = np.diff(batches.finish.to_numpy()[kept][order])
    full, part = takes == top, (takes > 0) & (takes < top)

    def cv2(x):
        return float(x.var() / x.mean() ** 2) if x.size > 1 else np.nan

    runs = gaps[: gaps.size // servers * servers].reshape(-1, servers)
    return {"full": float(full.mean()), "empty": float(np.mean(takes == 0)), "all gaps": cv2(gaps), "full gaps": cv2(gaps[full]),
            "part gaps": cv2(gaps[part]), "hole": float(np.mean(runs.max(axis=1) / runs.sum(axis=1))) if runs.size else np.nan}


def platoon_gaps(batch_mean, rate_per_s, servers, cycle_1, cycle_top, top) -> tuple[float, float]:
    """The one-platoon conveyor (docs/load.md#static-laws (5), **derived**, fluid arrivals):
    ``(hole, gaps_cv2)``, the hole's share of the mean cycle ``P = T(k)`` and every gap's
    squared CV. The pool runs as one platoon followed by a hole: after the hole its first
    members take full batches (the queue the hole built) and keep their phases; once the
    queue is drained each of the rest takes the arrivals of its own gap, ``n = lambda g``, and
    comes back ``T(top) - T(n) = s (top - n)`` early (``s`` the cycle's slope in the batch),
    in front of the platoon, where it takes a full batch in turn. The platoon keeps its
    shape when that jump spans it, ``s (top - lambda g) = (c - 1) g``: its gaps ``g = s
    top / (c - 1 + s lambda)``, its width ``W = (c - 1) g`` and the hole ``H = P - W``
    (no platoon if ``W >= P``: ``(0, nan)``), so every gap's squared CV is ``c ((c - 1) g^2 +
    H^2) / P^2 - 1``.
    It does not say when the pool forms one platoon (the simulator's pools form none below
    ``T(1)/T(top) = 1/2``, and on 32 and 64 instances several a cycle), so it is an
    envelope, not in the model
    (docs/sources.md#load-queueing)."""
    c = float(servers)
    slope = (cycle_top - cycle_1) / max(top - 1.0, 1.0)
    gap = slope * top / (c - 1.0 + slope * rate_per_s)
    cycle = cycle_1 + slope * (batch_mean - 1.0)
    hole = cycle - (c - 1.0) * gap
    if hole <= 0.0:
        return 0.0, np.nan
    return hole / cycle, c * ((c - 1.0) * gap**2 + hole**2) / cycle**2 - 1.0


def phases_cell(system, load: float, arrival: str, cv: float, share: float | None = None, replications: int = 1) -> dict:
    """One ``--phases`` cell (see the module's docstring), each measure averaged over
    ``replications`` runs (``all gaps sem``: the standard error of ``all gaps`` over them, NaN
    for one); ``share`` None keeps the design's step tables."""
    from mcengine.standalone.serve import simulate_requests

    s = system if share is None else cycle_share_system(system, share)
    top, o = s.batch_max, s.output_tokens
    cycle = s.prefill_s[1:] + (o - 1) * s.decode_s[1:]
    rate = load * s.capacity_tokens_per_s / o
    runs = []
    for rep in range(replications):
        df, _ = simulate_requests(s, rate, REQUESTS, 0, rep, arrival, cv)
        df["measured"] = np.arange(len(df)) >= int(len(df) * WARMUP)
        rows = batch_rows(df, s.prefill_s)
        runs.append({"k": float(rows[1]["size"][rows[1].measured.to_numpy()].mean()), **phase_measures(rows, top, s.instances)})
    runs = pd.DataFrame(runs)
    sem = float(runs["all gaps"].std(ddof=1) / np.sqrt(replications)) if replications > 1 else np.nan
    platoon = platoon_gaps(float(runs.k.mean()), rate, s.instances, cycle[0], cycle[-1], top)
    return {"load": load, "arrival": arrival, "T1/Ttop": "own" if share is None else f"{share:.3f}", "lam s": rate * (cycle[-1] - cycle[0]) / max(top - 1, 1),
            **runs.mean().to_dict(), "hole platoon": platoon[0], "all platoon": platoon[1], "all gaps sem": sem}


#: ``--light``'s cells: instances and the pool's offered load ``a = lambda T(1)``, and the replications a cell.
LIGHT, LIGHT_REPLICATIONS = ((1, 0.5), (2, 0.2), (2, 0.6), (2, 1.0), (4, 1.0), (4, 2.2), (8, 4.0)), 6


def light_cell(scenario, servers: int, offered: float) -> dict:
    """One ``--light`` cell (see the module's docstring)."""
    from mcengine.analytic import queue_static as qs
    from mcengine.standalone.serve import serving_system, simulate_requests

    system = serving_system(scenario, "static", servers)
    top, o = system.batch_max, system.output_tokens
    cycle_1, cycle_top = system.prefill_s[1] + (o - 1) * system.decode_s[1], system.prefill_s[top] + (o - 1) * system.decode_s[top]
    seen = []
    for rep in range(LIGHT_REPLICATIONS):
        df, _ = simulate_requests(system, offered / cycle_1, REQUESTS, seed=11, replication=rep)
        df["measured"] = np.arange(len(df)) >= int(len(df) * WARMUP)
        seen.append(2.0 * servers * gap_measures(df, batch_rows(df, system.prefill_s))["residual"] / cycle_1 - 1.0)
    c, a = servers, offered
    return {"c": c, "a": a, "a/c": a / c, "seen": float(np.mean(seen)), "sem": float(np.std(seen, ddof=1) / np.sqrt(len(seen))),
            "phases": (c - 1) / (c + 1), "model": float(1.0 / qs.completion_gaps(offered / cycle_1, c, cycle_1, cycle_top, top).shape),
            "followers": 2 * c / (c + 1) * (1 + a / (c + 2)) / (1 + a / (c + 1)) - 1}


#: Instances and offered loads ``a/c`` (``lambda T(1) / c``) of ``--pools``' cells, and the requests a cell.
POOLS, OFFERED, POOL_REQUESTS = (4, 8, 16, 32, 64), (0.8, 1.1, 1.4, 1.8, 2.4, 4.0), 60_000


def pools_cell(scenario, name: str, servers: int, offered: float) -> dict | None:
    """One ``--pools`` cell (see the module's docstring); None where the load would be 0.95 of
    capacity or more."""
    from mcengine.analytic import queue_static as qs
    from mcengine.standalone.serve import fast_latency, serve_summary, serving_system

    s = serving_system(scenario, "static", servers)
    top, o = s.batch_max, s.output_tokens
    cycle_1, cycle_top = s.prefill_s[1] + (o - 1) * s.decode_s[1], s.prefill_s[top] + (o - 1) * s.decode_s[top]
    rate = offered * servers / cycle_1
    load = rate * o / s.capacity_tokens_per_s
    if load >= 0.95:
        return None
    body, df = serve_summary(scenario, load * s.capacity_tokens_per_s, POOL_REQUESTS, 0, "poisson", 1.0, "static", servers)
    start, batches = batch_rows(df, s.prefill_s)
    kept = df.measured.to_numpy()
    wait = (start - df.arrival_s.to_numpy())[kept]
    k = float(batches["size"][batches.measured.to_numpy()].mean())
    slope = (cycle_top - cycle_1) / max(top - 1, 1)
    gaps = qs.completion_gaps(rate, servers, cycle_1, cycle_top, top)
    fast = fast_latency(s, rate, 1.0, 0.99)
    return {"design": name, "c": servers, "a/c": offered, "load": load, "lam s": rate * slope, "k": k, "wait": float(wait[wait > 1e-9].mean()),
            "unbunched": float(wait[wait > 1e-9].mean()) * (servers + 1) / (cycle_1 + slope * (k - 1.0)),
            "excess/T": float(wait[wait > 1e-9].mean()) / (cycle_1 + slope * (k - 1.0)) - 1.0 / (servers + 1),
            "onset": float(np.clip(rate * (cycle_1 + slope * (gaps.batch_mean - 1.0)) / servers - 1.0, 0.0, 1.0)),
            "mean err": float(fast.ttft_mean_s) * 1e3 / body["ttft_ms"]["mean"] - 1.0, "p99 err": float(fast.ttft_q_s) * 1e3 / body["ttft_ms"]["p99"] - 1.0}


def main(argv=None) -> int:
    """Print the static cells asked (``--design``, ``--loads``: comma-separated subsets of the grid)."""
    import argparse

    from mcengine.scenario import load_scenario
    from mcengine.standalone.serve import serving_system

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--design", default=",".join(DESIGNS), help=f"comma-separated subset of {','.join(DESIGNS)}")
    parser.add_argument("--loads", default=",".join(map(str, LOADS)), help="comma-separated loads (fractions of capacity)")
    parser.add_argument("--laws", action="store_true", help="print the candidate laws' measured terms instead")
    parser.add_argument("--pools", action="store_true", help="print the bunching's onset on 4 to 64 instances instead")
    parser.add_argument("--waits", action="store_true", help="print a waiting request's wait and the instances it sees instead")
    parser.add_argument("--light", action="store_true", help="print the gaps a waiting request sees on small pools below a = c instead")
    parser.add_argument("--phases", action="store_true", help="print the gaps' squared CV against the cycle's share T(1)/T(top) instead")
    parser.add_argument("--instances", type=int, default=INSTANCES, help=f"--phases' and --laws' pool size (default {INSTANCES}, the fit table's)")
    parser.add_argument("--replications", type=int, default=1, help="--phases' runs a cell (seed 0, replications 0, 1, ...)")
    parser.add_argument("--steps", action="store_true", help="print the Poisson cells simulated with the step tables and with their lines instead")
    args = parser.parse_args(argv)
    designs, loads = args.design.split(","), [float(x) for x in args.loads.split(",")]
    if not set(designs) <= set(DESIGNS):
        parser.error(f"--design {args.design}: allowed a comma-separated subset of {','.join(DESIGNS)}")
    if args.instances < 1 or args.replications < 1:
        parser.error(f"--instances {args.instances}, --replications {args.replications}: allowed whole numbers of 1 or more")
    if not all(0.0 < x < 1.0 for x in loads):
        parser.error(f"--loads {args.loads}: allowed loads strictly between 0 and 1")
    rows = []
    if args.light:
        print(pd.DataFrame([light_cell(load_scenario("h100"), c, a) for c, a in LIGHT]).to_string(index=False, float_format="{:.4f}".format))
        return 0
    if args.steps:
        rows = [{"design": name, **steps_cell(serving_system(load_scenario(name), "static", INSTANCES), load)} for name in designs for load in loads]
        print(pd.DataFrame(rows).to_string(index=False, float_format="{:.3f}".format))
        return 0
    if args.phases:
        for name in designs:
            system = serving_system(load_scenario(name), "static", args.instances)
            rows += [{"design": name, **phases_cell(system, load, arrival, cv, share, args.replications)} for arrival, cv in ARRIVALS for load in loads
                     for share in (None, *PHASE_RATIOS)]
        print(pd.DataFrame(rows).to_string(index=False, float_format="{:.2f}".format))
        return 0
    if args.pools:
        for name in designs:
            scenario = load_scenario(name)
            rows += [r for c in POOLS for x in OFFERED if (r := pools_cell(scenario, name, c, x)) is not None]
        print(pd.DataFrame(rows).to_string(index=False, float_format="{:.3f}".format))
        return 0
    for name in designs:
        scenario = load_scenario(name)
        system = serving_system(scenario, "static", args.instances if args.laws else INSTANCES)
        measure = laws_cell if args.laws else waits_cell if args.waits else cell
        rows += [{"design": name, **measure(scenario, system, load, arrival, cv)} for arrival, cv in ARRIVALS for load in loads]
    print(pd.DataFrame(rows).to_string(index=False, float_format="{:.2f}".format))
    return 0


if __name__ == "__main__":
    sys.exit(main())
