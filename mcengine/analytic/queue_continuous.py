"""The continuous mode's fast model under load (docs/load.md#continuous): requests join
the running batch at every step, a new prompt's chunks share the steps with the prompts
ahead of it (the stream wait), bursts wait for a free slot (:func:`continuous_at_load`)."""

from __future__ import annotations

import numpy as np

from .queueing import LoadLatency, _batch_quantile, _linear, _slope, mean_wait, wait_quantile
from .queue_spread import _own_prefill_s, _with_own_spread, chunked_share, length_quantile, multi_token_share


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
