"""The load models (mcengine/analytic/queueing.py and its per-mode modules queue_static, queue_continuous,
queue_disaggregated, queue_spread) against hand-computed values and the M/M/c closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcengine.analytic import queueing as qu
from mcengine.analytic import queue_continuous as qc
from mcengine.analytic import queue_disaggregated as qd
from mcengine.analytic import queue_spread as ql
from mcengine.analytic import queue_static as qs
from tests.analytic import batch_reference, ratio_reference, slot_reference


def erlang_c_by_sum(c: int, a: float) -> float:
    """Erlang C from its textbook sum: ``(a^c / c!) (c / (c - a)) / (sum_{k<c} a^k / k! + a^c / c! c / (c - a))``."""
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


@pytest.mark.parametrize("c, a", [(1, 0.5), (2, 1.0), (4, 3.0), (10, 8.0), (30, 27.0)])
def test_erlang_c_matches_the_textbook_sum(c, a):
    assert qu.erlang_c(c, a) == pytest.approx(erlang_c_by_sum(c, a), rel=1e-12)


def test_erlang_c_hand_values_and_limits():
    assert qu.erlang_c(1, 0.5) == pytest.approx(0.5)  # M/M/1: P(wait) = rho
    assert qu.erlang_c(2, 1.0) == pytest.approx(1 / 3)  # (1/2 * 2) / (1 + 1 + 1) by hand
    np.testing.assert_array_equal(qu.erlang_c([4, 4, 4], [0.0, 4.0, 5.0]), [0.0, 1.0, 1.0])
    # a thousand slots at 90 %: waiting is rare (Halfin-Whitt beta = 3.16 gives ~0.002); stays in [0, 1]
    assert 0.0 < float(qu.erlang_c(1000, 900.0)) < 0.01


def test_wait_quantile_is_the_mm1_law():
    # M/M/1, service 1 s, rho 0.5: P(W > t) = 0.5 exp(-0.5 t), so t_0.99 = 2 ln 50
    assert qu.wait_quantile(0.99, 1, 1.0, 0.5, 1.0, 1.0) == pytest.approx(2 * math.log(50))
    # below the quantile of waiting at all: no wait
    assert qu.wait_quantile(0.4, 1, 1.0, 0.5, 1.0, 1.0) == 0.0
    assert math.isinf(qu.wait_quantile(0.99, 1, 1.0, 1.0, 1.0, 1.0))


def test_wait_quantile_is_the_mmc_law():
    # M/M/c: P(W > t) = C exp(-(c mu - lambda) t); c = 4, mu = 1/2 per s, rho = 0.75
    c, s, rho, q = 4, 2.0, 0.75, 0.99
    pw = erlang_c_by_sum(c, rho * c)
    assert qu.wait_quantile(q, c, s, rho, 1.0, 1.0) == pytest.approx(math.log(pw / (1 - q)) / (c / s * (1 - rho)))
    assert qu.mean_wait(c, s, rho, 1.0, 1.0) == pytest.approx(pw / (c / s * (1 - rho)))


def test_allen_cunneen_scales_the_wait_by_the_cvs():
    base = qu.mean_wait(8, 1.0, 0.8, 1.0, 1.0)
    assert qu.mean_wait(8, 1.0, 0.8, 2.0, 1.0) == pytest.approx(base * 2.5)  # (4 + 1) / 2
    assert qu.mean_wait(8, 1.0, 0.8, 1.0, 0.0) == pytest.approx(base * 0.5)  # M/D/c ~ half of M/M/c
    b = qu.wait_quantile(0.99, 8, 1.0, 0.8, 1.0, 1.0)
    assert qu.wait_quantile(0.99, 8, 1.0, 0.8, 3.0, 1.0) == pytest.approx(b * 5.0)


def test_utilisation_at_slo_inverts_the_ttft_quantile():
    kw = dict(batch=64, slot_s=12.8, arrival_cv=1.0, service_cv=1.0)
    rho = slot_reference.utilisation_at_slo(0.99, 2000.0, 1000.0, **{k: v for k, v in kw.items()})
    assert 0.0 < rho < 1.0
    assert slot_reference.ttft_quantile_ms(0.99, 1000.0, kw["batch"], kw["slot_s"], rho, 1.0, 1.0) == pytest.approx(2000.0, rel=1e-9)
    np.testing.assert_array_equal(slot_reference.utilisation_at_slo(0.99, [np.inf, 500.0], [1000.0, 1000.0], 64, 12.8, 1.0, 1.0), [1.0, 0.0])
    burstier = slot_reference.utilisation_at_slo(0.99, 2000.0, 1000.0, 64, 12.8, 3.0, 1.0)
    assert burstier < rho


def test_diurnal_sinusoid_by_hand():
    # mean 100, peak 150: capacity 125 sits at s = 0.5, theta0 = pi / 6
    excess = (50 * 2 * math.sqrt(0.75) - 25 * (math.pi - math.pi / 3)) / (2 * math.pi)
    assert qu.served_mean(100.0, 1.5, 125.0) == pytest.approx(100 - excess)
    assert qu.served_mean(100.0, 1.5, 100.0) == pytest.approx(100 - 50 / math.pi)  # E[(D - m)^+] = a m / pi
    np.testing.assert_allclose(qu.served_mean(100.0, 1.5, [200.0, 150.0, 50.0, 40.0]), [100.0, 100.0, 50.0, 40.0])
    np.testing.assert_allclose(qu.share_below(100.0, 1.5, [150.0, 125.0, 100.0, 50.0]), [1.0, 2 / 3, 0.5, 0.0])
    # flat demand: all or nothing
    np.testing.assert_allclose(qu.served_mean(100.0, 1.0, [120.0, 80.0]), [100.0, 80.0])
    np.testing.assert_allclose(qu.share_below(100.0, 1.0, [120.0, 80.0]), [1.0, 0.0])


def test_a_capacity_at_the_peak_holds_all_day():
    """A capacity exactly at the peak ``m p`` (as the load stage computes it) reads 1, though
    ``s = (m p - m) / (m (p - 1))`` rounds below 1 in about 3 of 10 of these random days
    (``arcsin`` would read that as about 1 - 1e-8, up to 3e-6 at ``p`` near 1)."""
    rng = np.random.default_rng(5)
    m, p = rng.uniform(1e3, 1e6, 10_000), rng.uniform(1.0, 3.0, 10_000)
    assert (qu._phase(m, p, m * p)[0] < 1.0).mean() > 0.2
    np.testing.assert_array_equal(qu.share_below(m, p, m * p), 1.0)


def test_served_mean_matches_a_quadrature():
    theta = (np.arange(100_000) + 0.5) / 100_000 * 2 * np.pi
    demand = 100 * (1 + 0.7 * np.sin(theta))
    for cap in (40.0, 95.0, 140.0):
        assert qu.served_mean(100.0, 1.7, cap) == pytest.approx(np.minimum(demand, cap).mean(), rel=1e-7)
        assert qu.share_below(100.0, 1.7, cap) == pytest.approx((demand <= cap).mean(), abs=1e-4)


def test_fleet_instances_by_hand():
    # 10 up needed, each instance down 10 % of the time, at 0.999: 16 instances (Binomial(16, 0.1) <= 6 with p 0.9997;
    # Binomial(15, 0.1) <= 5 only with p 0.9978, so 15 leave 10 up less often than 0.999)
    from scipy import stats

    assert stats.binom.cdf(6, 16, 0.1) >= 0.999 > stats.binom.cdf(5, 15, 0.1)
    np.testing.assert_array_equal(qu.fleet_instances([0.0, 10.0, 9.2], [1e-4, 0.1, 0.1], 0.999), [0.0, 16.0, 16.0])
    # never down: exactly the instances needed
    assert qu.fleet_instances(37.0, 0.0, 0.999) == 37.0


def test_slot_time():
    assert slot_reference.slot_time_s(64, 256, 3200.0) == pytest.approx(64 * 256 / 3200)
    assert math.isinf(slot_reference.slot_time_s(64, 256, 0.0))


# --------------------------------------------------------------------------- latency per serving mode


def test_occupancy_is_littles_law_solved_by_hand():
    # hold 10 s at one request, 20 s at 11 (slope 1 s per request): n = 0.5 (10 + (n - 1)) -> n = 9
    assert qu._occupancy(0.5, 10.0, 20.0, 11) == pytest.approx(9.0)
    assert qu._occupancy(0.5, 10.0, 20.0, 11) == pytest.approx(0.5 * (10.0 + (9.0 - 1.0)))
    # past the top batch (or an unbounded fixed point): the top
    assert qu._occupancy(5.0, 10.0, 20.0, 11) == 11.0


def test_batch_quantile_by_hand():
    # n = 24, c_a = 1, 1 instance: 24 + z_0.99 sqrt(2/3 24) = 24 + 2.3263 x 4
    assert qu._batch_quantile(0.99, 24.0, 1.0, 100) == pytest.approx(24.0 + 2.326348 * 4.0, rel=1e-6)
    # 4 instances share the fluctuation; CV 2 doubles it
    assert qu._batch_quantile(0.99, 24.0, 2.0, 100, 4) == pytest.approx(24.0 + 2.326348 * 4.0, rel=1e-6)
    assert qu._batch_quantile(0.99, 24.0, 1.0, 25) == 25.0


CONTINUOUS = dict(instances=4, batch=64, output_tokens=256, prompt_tokens=2048, chunk_tokens=512.0, decode_1_s=0.020, decode_s=0.030,
                  step_s=0.040, chunk_step_1_s=0.030)


def test_continuous_fills_the_batch_exactly_at_the_roofline_capacity():
    """At the plan's capacity ``N B / (O step_s)`` requests/s the occupancy is the batch and the
    mean step the plan's step: the fast model and the roofline agree on what capacity is."""
    c = CONTINUOUS
    capacity = c["instances"] * c["batch"] / (c["output_tokens"] * c["step_s"])
    out = qc.continuous_at_load(0.99, capacity, 1.0, **c)
    assert out.running == pytest.approx(64.0, rel=1e-9)
    assert out.tpot_mean_s == pytest.approx(0.040, rel=1e-9)


def test_continuous_at_a_trickle_is_the_lone_request():
    """At a vanishing rate: TPOT the one-request decode step; TTFT the rest of the step in
    progress (half a step on average, 0.99 of one at the 0.99 quantile) plus the prompt's 4
    chunk steps (S / c = 4) of a lone request, each ``chunk_step_1_s``."""
    out = qc.continuous_at_load(0.99, 1e-9, 1.0, **CONTINUOUS)
    assert out.tpot_mean_s == pytest.approx(0.020, rel=1e-6)
    assert out.ttft_mean_s == pytest.approx(0.010 + 4 * 0.030, rel=1e-6)
    assert 0.0 <= out.ttft_q_s - (0.99 * 0.020 + 4 * 0.030) <= 0.020 * 2.0 ** -qc.STREAM_STEPS  # the bisection's upper end


def test_continuous_latency_rises_with_load_and_burstiness():
    rates = np.array([5.0, 12.0, 22.0])  # capacity: 4 x 64 / (256 x 0.04) = 25 requests/s
    poisson = qc.continuous_at_load(0.99, rates, 1.0, **CONTINUOUS)
    gamma = qc.continuous_at_load(0.99, rates, 2.0, **CONTINUOUS)
    for field in ("ttft_mean_s", "ttft_q_s", "tpot_mean_s", "tpot_q_s", "running"):
        assert np.all(np.diff(getattr(poisson, field)) > 0), field
    assert np.all(gamma.ttft_q_s >= poisson.ttft_q_s) and np.all(gamma.tpot_q_s > poisson.tpot_q_s)
    assert gamma.ttft_q_s[-1] > 2.0 * poisson.ttft_q_s[-1]  # the bursts' excess waiting in the instance's own prefill stream
    # vectorised over trials: each element is the scalar call's
    for i, r in enumerate(rates):
        assert qc.continuous_at_load(0.99, r, 1.0, **CONTINUOUS).ttft_q_s == pytest.approx(poisson.ttft_q_s[i], rel=1e-12)


def continuous_demand(n, lam, o, per_prompt, decode_1_s, decode_s, chunk_step_1_s, step_s, batch, low):
    """``lambda O tau(n)``, the occupancy Little's law gives at ``n`` (continuous_at_load's
    ``tau``, by its definition; ``+inf`` where prompts take every step)."""
    d = qu._linear(decode_1_s, decode_s, batch, n, low)
    free = 1.0 - lam * (qu._linear(chunk_step_1_s, step_s, batch, n, low) - d) * per_prompt
    with np.errstate(divide="ignore", invalid="ignore"):
        return lam * o * np.where(free > 0, d / np.maximum(free, 1e-300), np.inf)


def continuous_over(n, *args):
    """Whether the occupancy is below ``n``: ``lambda O tau(n) < n``."""
    return continuous_demand(n, *args) < n


def continuous_bisection(steps, lam, *args):
    """The occupancy by bisection of ``[0, batch]`` on :func:`continuous_over`."""
    lo, hi = np.zeros(np.shape(lam)), np.broadcast_to(np.asarray(args[-2], float), np.shape(lam)).copy()
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        over = continuous_over(mid, lam, *args)
        lo, hi = np.where(over, lo, mid), np.where(over, mid, hi)
    return 0.5 * (lo + hi)


def random_continuous(rng, size):
    """Inputs over their whole ranges: batch 1-1024, low_batch 1-64 (also above the batch),
    the four step times 0.1 ms-1 s each (either order), 1-4096 output tokens, 1/8192-32768
    chunks a prompt, rates 1e-6-3x the top batch's; a fifth of the rates put the first
    piece's root exactly at low_batch (the piece boundary)."""
    log = lambda lo, hi: np.exp(rng.uniform(np.log(lo), np.log(hi), size))
    batch, low = np.floor(log(1, 1025)), np.where(rng.random(size) < 0.3, 1.0, np.floor(log(1, 65)))
    o, per_prompt = np.floor(log(1, 4097)), np.floor(log(1, 32769)) / np.floor(log(1, 8193))
    d1, d, c1, st = log(1e-4, 1.0), log(1e-4, 1.0), log(1e-4, 1.0), log(1e-4, 1.0)
    lam = batch / (o * st) * log(1e-6, 3.0)
    at_low = o * d1 + low * (c1 - d1) * per_prompt  # lambda at_low = low: lambda O d_1 = low (1 - lambda D_1)
    lam = np.where((rng.random(size) < 0.2) & (at_low > 0), low / at_low, lam)
    return lam, o, per_prompt, d1, d, c1, st, batch, low


def test_continuous_occupancy_is_the_least_fixed_point_over_random_inputs():
    """The closed form against a bisection run to the float's resolution (200 steps) and a
    brute-force scan: where the bisection meets the first fixed point it agrees to 1e-9;
    elsewhere it found a later fixed point (a concave ``p`` with two stable roots) or ran to
    the top batch past an unstable one, and no point of a 201-point scan below the closed
    form's ``n`` has the occupancy below it."""
    rng = np.random.default_rng(43)
    args = random_continuous(rng, 10_000)
    lam, batch = args[0], args[-2]
    n = qc._continuous_occupancy(*args)
    ref = continuous_bisection(200, *args)
    assert np.all((n >= 0) & (n <= batch))
    # a fixed point (the occupancy crosses n within 1e-9 of it, or lambda O tau(n) = n to 1e-9 where it
    # only touches n) or the top batch; and none below it
    assert np.all(continuous_over(n * (1 + 1e-9), *args) | np.isclose(continuous_demand(n, *args), n, rtol=1e-9, atol=0.0) | (n == batch))
    assert not np.any(continuous_over(n * (1 - 1e-9), *args))
    same = np.isclose(n, ref, rtol=1e-9, atol=0.0)
    assert same.mean() > 0.9
    other = ~same  # the bisection's later fixed point, or the top batch
    assert np.all(n[other] < ref[other])
    assert np.all(continuous_over(ref[other] * (1 + 1e-9), *(a[other] for a in args)) | (ref[other] >= batch[other] * (1 - 1e-12)))
    grid = np.linspace(0.0, 1.0, 201)[:, None] * n * (1 - 1e-9)
    assert not np.any(continuous_over(grid, *args))


@pytest.mark.parametrize("case, want", [
    # below low_batch = 4: n = lambda O d_1 / (1 - lambda D_1) = 2 x 10 x 0.1 / (1 - 2 x 0.1) = 2.5
    (dict(lam=2.0, decode_s=0.2, step_s=0.4), 2.5),
    # the root at the piece boundary: D_1 = 0.25 -> 2 x 10 x 0.1 / (1 - 2 x 0.25) = 4 = low_batch
    (dict(lam=2.0, chunk_step_1_s=0.35, decode_s=0.2, step_s=0.55), 4.0),
    # above it with D flat (a linear piece): d = 0.1 + 0.001 (n - 4), D = 0.1, lambda 5:
    # n = 5 x 10 d / 0.5 = 9.6 + 0.1 n -> n = 9.6 / 0.9
    (dict(lam=5.0, decode_s=0.112, step_s=0.212), 9.6 / 0.9),
    # a quadratic piece: low_batch 1, d = 0.1 + 0.01 m, D = 0.1 + 0.01 m, lambda 1, O 10 (m = n - 1):
    # 10 d = (1 + m)(1 - D) -> 0.01 m^2 - 0.79 m + 0.1 = 0, its least root 0.2 / (0.79 + sqrt(0.79^2 - 0.004))
    (dict(lam=1.0, low=1.0, decode_s=0.25, step_s=0.5), 1.0 + 0.2 / (0.79 + math.sqrt(0.6241 - 0.004))),
    # the top batch at or below low_batch: constant steps, n = min(2.5, batch)
    (dict(lam=2.0, batch=3.0, decode_s=9.0, step_s=9.0), 2.5),
    (dict(lam=2.0, batch=2.0, decode_s=9.0, step_s=9.0), 2.0),
    # no load: empty; prompts want more than every step (lambda D_1 = 2 >= 1): the top batch
    (dict(lam=0.0), 0.0),
    (dict(lam=20.0), 16.0),
])
def test_continuous_occupancy_by_hand(case, want):
    c = dict(lam=1.0, o=10.0, per_prompt=1.0, decode_1_s=0.1, decode_s=0.1, chunk_step_1_s=0.2, step_s=0.2, batch=16.0, low=4.0) | case
    assert qc._continuous_occupancy(*c.values()) == pytest.approx(want, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("busy, again, step, prompt", [(0.5, 0.5, 0.04, 0.07), (0.06, 0.06, 0.027, 0.066), (0.7, 0.85, 0.045, 0.072),
                                                       (0.3, 0.02, 0.03, 0.09)])
def test_step_and_stream_quantile_against_its_law(busy, again, step, prompt):
    """The rest of the step in progress ``R`` (uniform on ``[0, step]``) plus the prefill
    stream's wait ``D W`` (``W = 1 - x + X`` with probability ``busy``, ``x`` uniform, ``X =
    1`` with probability ``again x``): 400,000 samples of the law (fixed seed) exceed its
    0.99 quantile 1 % of the time within 4 standard errors, and their mean is the tail's
    integral at infinity, ``busy (1 + again) D / 2``, within 4 standard errors."""
    t = qc._step_stream_quantile(0.99, step, prompt, busy, again)
    rng = np.random.default_rng(11)
    n = 400_000
    x = rng.uniform(size=n)
    w = prompt * np.where(rng.uniform(size=n) < busy, 1.0 - x + (rng.uniform(size=n) < again * x), 0.0)
    total = rng.uniform(size=n) * step + w
    assert abs(np.mean(total > t) - 0.01) <= 4.0 * math.sqrt(0.01 * 0.99 / n)
    mean = float(qc._stream_wait_area(np.inf, prompt, busy, again))
    assert mean == pytest.approx(busy * (1.0 + again) * prompt / 2.0, rel=1e-12)
    assert abs(w.mean() - mean) <= 4.0 * w.std() / math.sqrt(n)


@pytest.mark.parametrize("busy", [0.3, 0.7])
def test_refilled_cv2_is_the_fixed_point_of_md1_departures_and_births(busy):
    """The admissions a continuous instance refills repeat its prefill stream's departures:
    M/D/1's inter-departure time (an exponential idle gap before the prompt with probability
    ``1 - u``) has squared CV ``1 - u^2`` exactly, QNA's departure formula ``(1 - u^2) c^2``
    at Poisson's ``c^2 = 1``. 20 independent runs of 50,000 Poisson arrivals to one server
    of unit prompts (fixed seed; departures ``d_k = max(a_k, d_(k-1)) + 1``, a running
    maximum): their squared CV's mean within 4 standard errors of it. The refills' share
    ``1 - beta`` of those and the births' ``beta`` of Poisson's 1, weighted by their rates:
    ``_refilled_cv2`` is that map's fixed point, to rounding."""
    rng = np.random.default_rng(5)
    n, runs = 50_000, 20
    cv2 = []
    for _ in range(runs):
        arrivals = np.cumsum(rng.exponential(1.0 / busy, n))
        k = np.arange(n)
        departures = np.maximum.accumulate(arrivals - k) + k + 1.0
        gaps = np.diff(departures[n // 10:])
        cv2.append(gaps.var() / gaps.mean() ** 2)
    cv2 = np.array(cv2)
    assert abs(cv2.mean() - (1.0 - busy * busy)) <= 4.0 * cv2.std(ddof=1) / math.sqrt(runs)
    for births in (0.1, qc.REFILL_BIRTHS, 0.5):
        got = float(qc._refilled_cv2(busy, births))
        assert got == pytest.approx((1.0 - births) * (1.0 - busy * busy) * got + births, rel=1e-14)


def test_refilled_cv2_by_hand():
    """Poisson at a trickle (1), the births' share alone where the stream is always busy,
    Poisson again with births alone (``beta = 1``); at ``u = 0.5``, ``beta = 0.25``:
    ``0.25 / (0.25 + 0.75 / 4) = 4/7``; falling in the load, vectorised."""
    assert float(qc._refilled_cv2(0.0)) == 1.0
    assert float(qc._refilled_cv2(1.0, 0.25)) == pytest.approx(0.25, rel=1e-15)
    assert float(qc._refilled_cv2(0.7, 1.0)) == 1.0
    assert float(qc._refilled_cv2(0.5, 0.25)) == pytest.approx(4.0 / 7.0, rel=1e-15)
    u = np.linspace(0.0, 1.0, 101)
    assert np.all(np.diff(qc._refilled_cv2(u)) < 0.0)


def test_continuous_mean_ttft_takes_the_refilled_second_prompt():
    """Poisson arrivals: the mean TTFT less the prompt's own steps and half the step in
    progress is the stream's wait ``u (1 + u c^2) D / 2``, ``c^2 = beta / (beta + (1 - beta)
    u^2)`` (M/D/1's second prompt smoothed by the refills, docs/load.md#refill), with ``u``,
    ``D`` and the step from the occupancy, at ``beta`` the default ``REFILL_BIRTHS`` and at
    others of the key's range (``refill_births``); the quantile keeps M/D/1's ``a = u``, the
    same at every ``beta``."""
    c = CONTINUOUS
    rate = 18.0  # capacity 25 requests/s
    out = qc.continuous_at_load(0.99, rate, 1.0, **c)
    lam, per = rate / c["instances"], c["prompt_tokens"] / c["chunk_tokens"]
    n = out.running
    d = qu._linear(c["decode_1_s"], c["decode_s"], c["batch"], n)
    chunked = qu._linear(c["chunk_step_1_s"], c["step_s"], c["batch"], n)
    step = d / (1.0 - lam * (chunked - d) * per)
    u, prompt = lam * per * step, per * chunked
    own = ql._own_prefill_s(per, d, chunked)
    assert 0.3 < u < 0.9
    assert out.ttft_q_s == pytest.approx(qc._step_stream_quantile(0.99, step, prompt, u, u) + own, rel=1e-12)
    for beta in (qc.REFILL_BIRTHS, 1e-3, 0.5, 1.0):
        got = qc.continuous_at_load(0.99, rate, 1.0, **c, refill_births=beta)
        assert got.ttft_q_s == out.ttft_q_s and got.running == n
        cv2 = beta / (beta + (1.0 - beta) * u * u)
        assert got.ttft_mean_s == pytest.approx(step / 2.0 + u * (1.0 + u * cv2) * prompt / 2.0 + own, rel=1e-12)


def test_step_and_stream_quantile_by_hand():
    """An idle stream leaves the step's rest alone (its 0.99 quantile 0.99 of the step, to the
    bisection's ``2^-STREAM_STEPS`` of a step, from above); an arrival past an instance's
    capacity has none (``+inf``); vectorised, each element is the scalar call's."""
    assert 0.0 <= qc._step_stream_quantile(0.99, 0.04, 0.07, 0.0, 0.0) - 0.99 * 0.04 <= 0.04 * 2.0 ** -qc.STREAM_STEPS
    both = qc._step_stream_quantile(0.99, np.array([0.04, np.inf, 0.03]), np.array([0.07, 0.07, 0.09]), np.array([0.5, 0.5, 0.3]), 0.5)
    assert np.isinf(both[1])
    assert both[0] == pytest.approx(qc._step_stream_quantile(0.99, 0.04, 0.07, 0.5, 0.5), rel=1e-12)
    assert both[2] == pytest.approx(qc._step_stream_quantile(0.99, 0.03, 0.09, 0.3, 0.5), rel=1e-12)


def test_batch_queue_light_and_heavy_limits():
    # a trickle: nobody waits, batches of one
    light = qu.batch_queue(1e-6, 8, 2.0, 4.0, 16)
    assert light.wait_probability == pytest.approx(0.0, abs=1e-12) and light.batch_mean == pytest.approx(1.0)
    # far beyond the servers' one-request rate: everyone waits, batches full
    heavy = qu.batch_queue(1e4, 8, 2.0, 4.0, 16)
    assert heavy.wait_probability == pytest.approx(1.0, abs=1e-3) and heavy.batch_mean == pytest.approx(16.0, rel=1e-3)
    assert heavy.gap_s == pytest.approx(4.0 / 8, rel=1e-3)


def test_bursty_arrivals_wait_more_often_halfin_whitt():
    """Batches of one (``top = 1``) on 8 servers of 2 s cycles at 2 requests/s: utilisation
    0.5. Poisson arrivals wait with Erlang C's probability; gamma CV 2 arrivals (``z = (1 +
    4) / 2``) with Erlang C at the utilisation ``1 - 0.5 / sqrt(2.5)`` (the spare capacity
    over ``sqrt(z)``), and their gaps are ``z`` times the servers' ``2 / 8`` s."""
    poisson = qu.batch_queue(2.0, 8, 2.0, 2.0, 1)
    gamma = qu.batch_queue(2.0, 8, 2.0, 2.0, 1, arrival_cv=2.0)
    assert poisson.wait_probability == pytest.approx(erlang_c_by_sum(8, 4.0), rel=1e-12)
    assert gamma.wait_probability == pytest.approx(erlang_c_by_sum(8, 8.0 * (1.0 - 0.5 / math.sqrt(2.5))), rel=1e-12)
    assert gamma.gap_s == pytest.approx(2.5 * 0.25, rel=1e-12) and gamma.batch_mean == poisson.batch_mean == 1.0


@pytest.mark.parametrize("c, a", [(1, 0.5), (4, 3.0), (30, 27.0), (240, 200.0), (4000, 3990.0)])
def test_erlang_c_slope_is_its_derivative(c, a):
    """``_erlang_c_slope``'s value is ``erlang_c``'s and its slope the central difference's."""
    wait, slope = qu._erlang_c_slope(c, a)
    h = 1e-6 * a
    assert wait == qu.erlang_c(c, a)
    assert slope == pytest.approx((qu.erlang_c(c, a + h) - qu.erlang_c(c, a - h)) / (2 * h), rel=1e-6)


def random_batch_queue(rng, size):
    """``batch_queue``'s inputs over their ranges: a pool of 1 to 10^4 whole servers, a pass of
    0.1 ms to 10 s alone growing by 0 to one lone pass per request (the roofline's passes),
    batches of 1 (a fifth) or up to 10^6, loads of 10^-4 to 100 times the pool's lone-request
    rate (none in 2 %), arrival CV 1 (three tenths) or over workload.load.arrival_cv's [0, 10]."""
    def log(lo, hi):
        return np.exp(rng.uniform(np.log(lo), np.log(hi), size))
    top = np.where(rng.random(size) < 0.2, 1.0, np.floor(log(1.0, 1e6)))
    servers, cycle_1 = np.floor(log(1.0, 1e4)), log(1e-4, 10.0)
    cycle_top = cycle_1 * (1.0 + (top - 1.0) * rng.uniform(0.0, 1.0, size) ** 2)
    rate = np.where(rng.random(size) < 0.02, 0.0, log(1e-4, 1e2) * servers / cycle_1)
    return rate, servers, cycle_1, cycle_top, top, np.where(rng.random(size) < 0.3, 1.0, rng.uniform(0.0, 10.0, size))


def test_mean_batch_is_the_root_over_random_inputs():
    """The solve against the former 48 damped fixed-point steps (``batch_reference``) over
    20,000 random inputs: its ``k`` is in ``[1, max(1, top)]``, ``G = k - F(k)`` changes sign
    within 1e-10 of it (``G``'s rounding, ``C m`` of up to 10^6, hides a change within
    1e-12) and its Newton distance ``|G / G'|`` is below 1e-12 of it; where the
    damped steps had converged (their own Newton distance below 1e-12: 92 % of the inputs)
    the two agree to 2e-12; elsewhere the damped steps' residual is the larger. The
    probability of waiting and the gap it returns (at the last ``k`` evaluated) are the
    root's to 3e-11 and 3e-13 (at most 1.4e-11 and 9.4e-14 here). Each trial's answer is
    the same bit for bit in any array (a slice, alone)."""
    args = random_batch_queue(np.random.default_rng(43), 20_000)
    burst = (1.0 + args[5] ** 2) / 2.0
    state = (*args[:5], burst)
    top = np.maximum(args[4], 1.0)
    k, wait, gap = qu._mean_batch(*state)
    assert np.all((k >= 1.0) & (k <= top))
    below = qu._batch_state(np.maximum(k * (1.0 - 1e-10), 1.0), *state)[2]
    above = qu._batch_state(np.minimum(k * (1.0 + 1e-10), top), *state)[2]
    assert np.all((below <= 0.0) & (above >= 0.0))
    c_at, gap_at, g, dg = qu._batch_state(k, *state)
    assert np.all(np.abs(g) <= 1e-12 * k * np.abs(dg))
    np.testing.assert_allclose(wait, c_at, rtol=3e-11, atol=0.0)  # the state at the last k evaluated: the root's
    np.testing.assert_allclose(gap, gap_at, rtol=3e-13, atol=0.0)
    old = batch_reference.damped_mean_batch(*args)
    _, _, g_old, dg_old = qu._batch_state(old, *state)
    settled = np.abs(g_old) <= 1e-12 * old * np.abs(dg_old)
    assert settled.mean() > 0.9
    np.testing.assert_allclose(k[settled], old[settled], rtol=2e-12, atol=0.0)
    assert np.all(np.abs(g_old[~settled]) >= np.abs(g[~settled]))
    # each trial's answer is its own, bit for bit, whatever else the array holds
    part = slice(3, None, 7)
    np.testing.assert_array_equal(qu._mean_batch(*(a[part] for a in state))[0], k[part])
    for i in np.flatnonzero(~settled)[:20]:
        assert qu._mean_batch(*(a[i] for a in state))[0] == k[i]


def test_mean_batch_state_is_the_last_k_evaluated(monkeypatch):
    """The probability of waiting and the gap :func:`_mean_batch` returns are, bit for bit,
    :func:`_batch_state`'s at the last ``k`` it evaluated, one step from the ``k`` it
    returns, at most :data:`BATCH_TOLERANCE` of ``k`` (200 random inputs, each alone:
    every one settles within :data:`BATCH_STEPS` steps)."""
    state = qu._batch_state
    evaluated = []
    monkeypatch.setattr(qu, "_batch_state", lambda k, *a: evaluated.append(np.array(k, float)) or state(k, *a))
    args = random_batch_queue(np.random.default_rng(11), 200)
    burst = (1.0 + args[5] ** 2) / 2.0
    for i in range(200):
        one = (*(a[i] for a in args[:5]), burst[i])
        evaluated.clear()
        k, wait, gap = (np.ravel(x) for x in qu._mean_batch(*one))
        last = evaluated[-1]
        assert len(evaluated) <= qu.BATCH_STEPS and abs(k[0] - last[0]) <= qu.BATCH_TOLERANCE * last[0]
        c_at, gap_at = state(last, *(np.atleast_1d(x) for x in one))[:2]
        assert wait.tobytes() == c_at.tobytes() and gap.tobytes() == gap_at.tobytes()


def test_mean_batch_steps(monkeypatch):
    """At most :data:`BATCH_STEPS` residuals (the state at the answer is the last one's) whatever
    the values, the rates from a trickle to 10^12 requests/s. Prefill pools like the case
    study's (passes of 1 to 4 prompts, 1 to 239 instances) up to 0.9 of their lone-request
    rate take 6 steps, to within 1e-13 of the root, and 13 beyond their capacity,
    where Erlang C leaves 1 steeply as the utilisation leaves its cap."""
    calls = []
    state = qu._batch_state
    monkeypatch.setattr(qu, "_batch_state", lambda *a: calls.append(1) or state(*a))
    rng = np.random.default_rng(7)
    args = random_batch_queue(rng, 2_000)
    for scale in (1e-12, 1.0, 1e12):
        calls.clear()
        qu.batch_queue(args[0] * scale, *args[1:])
        assert len(calls) <= qu.BATCH_STEPS
    servers = np.floor(np.exp(rng.uniform(0.0, np.log(240.0), 2_000)))
    top = rng.integers(1, 5, 2_000).astype(float)
    cycle_1 = rng.uniform(0.05, 0.09, 2_000)
    cycle_top = cycle_1 * (1.0 + (top - 1.0) * rng.uniform(0.05, 1.0, 2_000))
    for load, most in ((0.9, 6), (1.5, 13)):
        rate = servers / cycle_1 * rng.uniform(0.0, load, 2_000)
        calls.clear()
        bq = qu.batch_queue(rate, servers, cycle_1, cycle_top, top)
        assert len(calls) <= most and bq.wait_probability.shape == (2_000,)
        k = qu._mean_batch(rate, servers, cycle_1, cycle_top, top, 1.0)[0]
        _, _, g, dg = state(k, rate, servers, cycle_1, cycle_top, top, 1.0)
        assert np.all(np.abs(g) <= 1e-13 * k * np.abs(dg))


def test_mean_batch_by_hand():
    """One server (Erlang C = ``u``) with a constant cycle ``T``: ``k = 1 + (a / k) a`` (``a =
    lambda T``), so ``k = (1 + sqrt(1 + 4 a^2)) / 2``, the golden ratio at ``a = 1``, and ``C =
    a / k = 1 / phi``. At ``a = 3`` with batches of 3 the utilisation is held at
    :data:`RHO_WAIT_MAX` and the batch at ``1 + 0.9999 x 2``."""
    phi = (1.0 + math.sqrt(5.0)) / 2.0
    bq = qu.batch_queue(0.5, 1, 2.0, 2.0, 16)
    assert bq.wait_probability == pytest.approx(1.0 / phi, rel=1e-13) and bq.gap_s == 2.0
    assert qu._mean_batch(0.5, 1, 2.0, 2.0, 16, 1.0)[0] == pytest.approx(phi, rel=1e-14)
    assert qu._mean_batch(1.5, 1, 2.0, 2.0, 3, 1.0)[0] == pytest.approx(1.0 + qu.RHO_WAIT_MAX * 2.0, rel=1e-14)
    assert qu.batch_queue(1.5, 1, 2.0, 2.0, 3).wait_probability == pytest.approx(qu.RHO_WAIT_MAX, rel=1e-14)


def test_batched_ttft_quantile_is_the_hypoexponential_law():
    """A waiting request's TTFT is ``first(1) + a R + b A`` (R, A exponential of mean g, the
    longer of the gap and the queue's wait, :func:`qu._queue_wait`): the model's quantile
    against 400,000 samples of that law (fixed seed)."""
    bq = qu.BatchQueue(np.array(5.0), np.array(5.0), np.array(1.0), np.array(0.1), 0.0, 0.0)
    rate, first_1, first_top, top = 20.0, 0.5, 2.0, 16
    f = (first_top - first_1) / (top - 1)
    g = max(0.1, float(qu._queue_wait(bq, rate, 1.0, 8, 0.8, top)))
    assert 0.1 < g < 0.1002  # two prompts a gap against 16 a pass: the queue ahead is rarely a whole pass
    mean, q99 = qu._batched_ttft(0.99, bq, rate, 1.0, 8, 0.8, first_1, first_top, top)
    rng = np.random.default_rng(7)
    r, a = rng.exponential(g, 400_000), rng.exponential(g, 400_000)
    sample = first_1 + (1 + rate * f) * r + rate * f * a
    assert q99 == pytest.approx(np.quantile(sample, 0.99), rel=0.01)
    # the mean: the wait and the pass of the batch a waiting request leaves with
    assert mean == pytest.approx(g + first_1 + f * (5.0 - 1.0))


def test_disaggregated_decode_fills_at_its_capacity_and_trickles_at_one_request():
    kw = dict(instances=10, prefill_instances=4, batch=100, prefill_batch=1, output_tokens=101, decode_1_s=0.010, decode_s=0.050,
              prefill_1_s=0.5, prefill_s=0.5, busy_1_s=0.1, busy_s=0.1, transfer_1_s=0.01, transfer_s=0.01)
    # decode capacity: 6 instances x 100 sequences / (100 steps x 50 ms) = 120 requests/s
    full = qd.disaggregated_at_load(0.99, 120.0, 1.0, **kw)
    assert full.running == pytest.approx(100.0)
    lone = qd.disaggregated_at_load(0.99, 1e-6, 1.0, **kw)
    assert lone.ttft_mean_s == pytest.approx(0.51) and lone.ttft_q_s == pytest.approx(0.51)
    assert lone.tpot_mean_s == pytest.approx(0.010, rel=1e-4)


def test_static_at_a_trickle_is_the_lone_request():
    out = qs.static_at_load(0.99, 1e-6, 1.0, instances=4, batch=8, output_tokens=101, decode_1_s=0.01, decode_s=0.02, prefill_1_s=0.1, prefill_s=0.8)
    assert out.ttft_mean_s == pytest.approx(0.1) and out.ttft_q_s == pytest.approx(0.1)
    assert out.tpot_mean_s == pytest.approx(0.01)


def test_static_one_instance_is_the_mm_bulk_service_queue():
    """One instance whose cycle is exponential of mean ``T`` whatever its batch, batches
    unbounded: the M/M^[1,inf]/1 bulk-service queue. Its chain (idle; busy with ``j``
    waiting) has ``P(idle) = 1 / (1 + a + a^2)``, ``a = lambda T``; a request that waits waits
    the cycle's residual, exponential of mean ``T``, so TTFT = prefill + W with ``P(W > t) =
    (1 - P(idle)) e^(-t / T)``; batches start at the completions' rate ``(1 - P(idle)) / T``,
    so the mean batch is ``lambda T / (1 - P(idle)) = (1 + a + a^2) / (1 + a)``."""
    lam, cycle, prefill = 1.5, 2.0, 0.3
    a = lam * cycle
    idle = 1.0 / (1.0 + a + a * a)
    big = 10**6  # batches never fill: no spill past one batch
    gaps = qs.completion_gaps(lam, 1, cycle, cycle, big)
    assert gaps.idle_probability == pytest.approx(idle, rel=1e-12)
    assert gaps.batch_mean == pytest.approx((1.0 + a + a * a) / (1.0 + a), rel=1e-9)
    assert gaps.gap_s == pytest.approx(cycle) and gaps.shape == pytest.approx(1.0)  # exponential: c_g^2 = 1 on one instance
    out = qs.static_at_load(0.99, lam, 1.0, instances=1, batch=big, output_tokens=2, decode_1_s=cycle - prefill, decode_s=cycle - prefill,
                            prefill_1_s=prefill, prefill_s=prefill)
    assert out.ttft_mean_s == pytest.approx(prefill + (1.0 - idle) * cycle, rel=1e-9)
    assert out.ttft_q_s == pytest.approx(prefill + cycle * math.log((1.0 - idle) / 0.01), rel=1e-8)
    # the batch a waiting request rides: 1 + a ahead of it (geometric) + a arriving during its wait
    _, _, step_mean, _ = qs._gap_ttft(0.99, gaps, lam, 1.0, 0.0, 0.0, big, 1.0, float(big))
    assert step_mean == pytest.approx(1.0 + (1.0 - idle) * 2.0 * a, rel=1e-9)


def test_static_idle_sums_are_erlang_b_and_the_quadrature_agrees():
    """The idle side's sums over ``pi_0``: ``S_1 = 1 / E_B(c, a) - 1`` (Erlang B by its
    recursion), and the Gauss-Laguerre form taken where Poisson's pmf leaves a float's range
    agrees with the direct sums where both hold."""
    for c, a in ((1, 3.0), (4, 40.0), (16, 320.0), (128, 400.0), (128, 500.0)):
        inv_b = 1.0
        for n in range(1, c + 1):
            inv_b = 1.0 + n / a * inv_b
        s1, s2 = qs._idle_sums(c, a)
        assert s1 == pytest.approx(inv_b - 1.0, rel=1e-12)
        assert s2 == pytest.approx(sum(i * math.perm(c, i) * a**-i for i in range(1, c + 1)), rel=1e-9)
        x = np.polynomial.laguerre.laggauss(qs.GAP_NODES)
        grow = (1.0 + x[0] / a) ** (c - 1)
        assert np.sum(x[1] * (grow * (1.0 + x[0] / a) - 1.0)) == pytest.approx(s1, rel=1e-9)
    # a pool of 1,000 instances far past its one-request rate: the quadrature, finite and Erlang's
    s1, _ = qs._idle_sums(1000, 30_000.0)
    assert np.isfinite(s1) and s1 == pytest.approx(1000.0 / 29_000.0, rel=0.05)
    assert np.isinf(qs._idle_sums(1000, 1.0)[0])  # nearly all idle


def test_static_gap_cv_is_light_traffics_while_idle_and_bunched_once_busy():
    """The gaps' squared CV mixes the light-traffic gaps (with the probability of finding an
    instance idle) and the bunched ``1 + (1 - 1/c)((kappa - 1) w min(1, 1/A) - (1 - w) 2/17)``
    on 16 instances, ``A = lambda s (1 - P_full)``, ``w = min(1, max(0, a/c - 1))`` its onset in
    the offered load ``a = lambda T(k)`` (below it the uniform phases' ``15/17``): batches never full (``top`` huge) on 16 instances at 30 requests/s with a cycle
    slope of 0.1 s a request, ``A = 3`` and ``a/c > 3``. The light-traffic gaps are ``c_a^2 +
    (1 - 1/c)(L - c_a^2)``, ``L = 2 c c_a^2 / (c + c_a^2) - 1`` (by hand, gamma CV 2 on 16 instances: ``L =
    128 / 20 - 1 = 5.4`` and 4 + 0.9375 x 1.4 = 5.3125; Poisson's ``L = 15 / 17``); a trickle
    of requests sees them alone, and one instance the arrivals' own ``c_a^2``."""
    lam, c, slope = 30.0, 16, 0.1
    gaps = qs.completion_gaps(lam, c, 2.0, 2.0 + slope * (10**6 - 1), 10**6, gap_cv2=2.0, arrival_cv=2.0)
    idle = gaps.idle_probability
    bunched = 1.0 + (2.0 - 1.0) * (1.0 - 1.0 / c) / (lam * slope)
    assert 0.0 < idle < 0.5
    assert 1.0 / gaps.shape == pytest.approx(idle * 5.3125 + (1.0 - idle) * bunched, rel=1e-9)
    assert float(qs._light_gap_cv2(16, 4.0)) == pytest.approx(5.4, rel=1e-12) and float(qs._light_gap_cv2(16, 1.0)) == pytest.approx(15 / 17, rel=1e-12)
    # a trickle: the light-traffic gaps; one instance: the arrivals' own CV
    assert 1.0 / qs.completion_gaps(1e-6, c, 2.0, 4.0, 25, arrival_cv=2.0).shape == pytest.approx(5.3125, rel=1e-6)
    assert 1.0 / qs.completion_gaps(1e-6, c, 2.0, 4.0, 25, arrival_cv=1.0).shape == pytest.approx(1.0 - 0.9375 * 2.0 / 17.0, rel=1e-6)
    assert 1.0 / qs.completion_gaps(1e-6, 1, 2.0, 4.0, 25, arrival_cv=2.0).shape == pytest.approx(4.0, rel=1e-5)
    # the onset: 6 requests/s on cycles of about 2 s, a/c about 0.75, no bunching (the busy side's gaps
    # those of 16 instances at uniform phases, 15/17, weighted as the light side: with Poisson arrivals
    # both sides are 1 - 0.9375 x 2/17 whatever P(idle)); 12 requests/s, a/c between 1 and 2, that share
    # of the whole excess over the uniform phases (the fitted part and the 2/17 up to the base 1)
    for lam_low in (6.0, 12.0):
        low = qs.completion_gaps(lam_low, c, 2.0, 2.0 + slope * (10**6 - 1), 10**6, gap_cv2=2.0, arrival_cv=1.0)
        onset = np.clip(lam_low * (2.0 + slope * (low.batch_mean - 1.0)) / c - 1.0, 0.0, 1.0)
        assert onset < 1.0 and (onset == 0.0) == (lam_low == 6.0)
        bunched = 1.0 + (1.0 - 1.0 / c) * (onset * min(1.0, 1.0 / (lam_low * slope)) - (1.0 - onset) * 2.0 / 17.0)
        if onset == 0.0:
            assert 1.0 / low.shape == pytest.approx(1.0 - 0.9375 * 2.0 / 17.0, rel=1e-12) and 0.1 < low.idle_probability < 0.9
        excess = qs.STATIC_BUNCH_CYCLES * onset * min(1.0, low.idle_probability * low.batch_mean)  # lambda s = 0.6 or 1.2: kept whole
        bunched = max(bunched, 15.0 / 17.0 + 2.0 * c * excess)  # the cycle excess (test_static_cycle_excess_by_hand)
        assert 1.0 / low.shape == pytest.approx(low.idle_probability * (1.0 - 0.9375 * 2.0 / 17.0) + (1.0 - low.idle_probability) * bunched, rel=1e-9)


def test_static_cycle_excess_by_hand():
    """The bunched side is at least the cycle excess (docs/load.md#static-cycles): a waiting
    request waits ``T(k) / (c + 1) + h T(k)``, ``h = x w P0 min(1, y / A) / c_a^2``, so the
    gaps' squared CV (mean ``T / c``) is ``(c - 1) / (c + 1) + 2 c h``. By hand on 16
    instances of cycle 2 s growing 0.1 s a request (batches never full), Poisson, 18
    requests/s: ``A = 1.8`` (the excess kept whole at ``y = 3``), and with the chain's
    ``k`` and ``P(idle)`` the mixed squared CV is ``P(idle) 0.9375 (15/17) + 0.0625 + (1 -
    P(idle)) max(fitted, cycle)``, the cycle's term the larger here. No excess (``x = 0``)
    leaves the fitted bunching alone; a growth ``y = 0.9`` keeps half of the excess; gamma
    CV 2 arrivals a quarter of it, and arrivals smoother than Poisson's (CV 0.5) all of it
    (their light side ``0.25 + 0.9375 (L - 0.25)``, ``L = 8 / 16.25 - 1``)."""
    c, slope, lam = 16, 0.1, 18.0

    def of(x=qs.STATIC_BUNCH_CYCLES, y=qs.STATIC_BUNCH_GROWTH, cv=1.0):
        return qs.completion_gaps(lam, c, 2.0, 2.0 + slope * (10**6 - 1), 10**6, gap_cv2=2.0, arrival_cv=cv, bunch_cycles=x, bunch_growth=y)

    gaps = of()
    k, idle = float(gaps.batch_mean), float(gaps.idle_probability)
    onset = min(1.0, lam * (2.0 + slope * (k - 1.0)) / c - 1.0)
    light = 1.0 + 0.9375 * (15.0 / 17.0 - 1.0)
    fitted = 1.0 + 0.9375 * onset / (lam * slope)
    h = 0.1 * onset * min(1.0, idle * k)
    cycle = 15.0 / 17.0 + 32.0 * h
    assert 0.0 < onset and 0.0 < idle < 0.5 and cycle > fitted
    assert 1.0 / gaps.shape == pytest.approx(idle * light + (1.0 - idle) * cycle, rel=1e-9)
    assert 1.0 / of(0.0).shape == pytest.approx(idle * light + (1.0 - idle) * fitted, rel=1e-9)
    assert 1.0 / of(y=0.9).shape == pytest.approx(idle * light + (1.0 - idle) * max(fitted, 15.0 / 17.0 + 16.0 * h), rel=1e-9)
    gamma = of(cv=2.0)
    idle_g, light_g = float(gamma.idle_probability), 4.0 + 0.9375 * (5.4 - 4.0)
    h_g = 0.1 * min(1.0, lam * (2.0 + slope * (float(gamma.batch_mean) - 1.0)) / c - 1.0) * min(1.0, idle_g * float(gamma.batch_mean)) / 4.0
    assert 1.0 / gamma.shape == pytest.approx(idle_g * light_g + (1.0 - idle_g) * max(fitted, 15.0 / 17.0 + 32.0 * h_g), rel=1e-9)
    light_s = 0.25 + 0.9375 * (8.0 / 16.25 - 1.0 - 0.25)
    assert 1.0 / of(cv=0.5).shape == pytest.approx(idle * light_s + (1.0 - idle) * cycle, rel=1e-9)


def test_static_seen_gap_leaves_out_the_bursts_zero_gaps():
    """The gap a waiting request lands in (``queue_static._seen_gap``, docs/load.md#static-cycles).
    By hand: gaps of mean 1 and ``v = 3`` under gamma CV 2 arrivals (``c_a^2 = 4``): the burst's
    zero share ``3/5`` is capped at ``(v - 1)/(v + 1) = 1/2``, the rest ``v' = 3 - 4/2 = 1``, so
    the seen gap is gamma of shape 2 and scale 2 (mean 4 = ``1 + v``); at ``v = 5`` the share
    ``3/5`` stands, ``v' = 5 - 18/5 = 7/5``, shape ``12/7`` and scale ``6 / (12/7) = 7/2``.
    Poisson arrivals and gaps of ``v <= 1`` keep the gaps' own ``alpha + 1`` and ``g/alpha``
    bit for bit. Against a renewal run (seed 3, 400,000 gaps: zero with that share, else gamma
    of mean ``1/(1 - z)`` and squared CV ``v'``; 200,000 uniform arrivals): the time to the next
    point has mean ``(1 + v)/2`` and, ``U`` times a length-biased gamma of shape ``s``, squared
    CV ``4 (s + 1)/(3 s) - 1``: 1 at ``v = 3`` and 10/9 at ``v = 5``, where the gaps' own gamma
    law gives 4/3 and 13/9, within 4 SEM (blocks of 2,000 arrivals)."""
    assert [float(x) for x in qs._seen_gap(1.0 / 3.0, 1.0, 4.0)] == pytest.approx([2.0, 2.0], rel=1e-12)
    assert [float(x) for x in qs._seen_gap(0.2, 1.0, 4.0)] == pytest.approx([12.0 / 7.0, 3.5], rel=1e-12)
    alpha = np.array([0.3, 0.7, 1.0, 2.5])
    for cv2 in (0.0, 0.25, 1.0):
        shape, scale = qs._seen_gap(alpha, 0.2, cv2)
        assert shape.tolist() == (alpha + 1.0).tolist() and scale.tolist() == (0.2 / alpha).tolist()
    shape, scale = qs._seen_gap(np.array([1.0, 2.5]), 0.2, 4.0)  # v <= 1: no zeros
    assert shape.tolist() == [2.0, 3.5] and scale.tolist() == [0.2, 0.08]
    rng = np.random.default_rng(3)
    for v, zero in ((3.0, 0.5), (5.0, 0.6)):
        rest = v - zero * (1.0 + v)
        n = 400_000
        gaps = np.where(rng.random(n) < zero, 0.0, rng.gamma(1.0 / rest, rest / (1.0 - zero), n))
        points = np.cumsum(gaps)
        t = rng.uniform(0.0, points[-1] * 0.999, 200_000)
        r = points[np.searchsorted(points, t)] - t
        s = float(qs._seen_gap(1.0 / v, 1.0, 4.0)[0])
        blocks = r.reshape(-1, 2_000)
        for stat, want in ((blocks.mean(axis=1), (1.0 + v) / 2.0), (blocks.var(axis=1) / blocks.mean(axis=1) ** 2, 4.0 * (s + 1.0) / (3.0 * s) - 1.0)):
            assert abs(stat.mean() - want) <= 4.0 * stat.std(ddof=1) / np.sqrt(len(stat)), (v, stat.mean(), want)


def test_static_spill_is_lindleys_lower_bound_and_brackets_the_recursion():
    """The wait past one batch (docs/load.md#static): by hand, ``k = 12`` a gap, ``top = 17``,
    ``c_g^2 = 1.2``, Poisson arrivals at 40/s: ``V = 12 + 144 x 1.2 = 184.8``, ``mu = 5``, ``E[W]
    >= 184.8 / 10 - 6 = 12.48`` requests, 0.312 s. Lindley's recursion ``W' = (W + N - 17)^+``
    run on 400,000 gamma gaps (seed 5; ``N`` Poisson over each) lies between that lower
    bound and Kingman's upper one (18.48) within 4 SEM (batch means of 4,000 steps)."""
    assert qs._spill_wait(12.0, 17.0, 1.2, 1.0, 40.0, 16)[0] == pytest.approx(0.312, rel=1e-12)
    assert qs._spill_wait(np.array([0.0, 12.0]), 17.0, 1.2, 1.0, 0.0, 16)[0].tolist() == [0.0, 0.0]
    rng = np.random.default_rng(5)
    shape, n = 1.0 / 1.2, 400_000
    arrivals = rng.poisson(rng.gamma(shape, 12.0 / shape, n))
    w, out = 0.0, np.empty(n)
    for i, a in enumerate(arrivals):
        w = max(w + a - 17, 0.0)
        out[i] = w
    means = out[n // 10:].reshape(-1, 4_000).mean(axis=1)
    sem = means.std(ddof=1) / np.sqrt(len(means))
    assert 12.48 - 4.0 * sem <= means.mean() <= 18.48 + 4.0 * sem


def test_static_spill_keeps_the_gaps_variance_over_the_walks_horizon():
    """Near the batch's capacity the spill's step variance is ``V = k c_a^2 + k^2 c_g^2 min(1,
    sqrt(2 c mu^2 / V))`` (docs/load.md#near-capacity). By hand: ``k = 4``, ``top = 5`` (``mu =
    1``), ``c = 2``, ``c_g^2 = 1.5``, Poisson: ``V_1 = 4 + 24 = 28`` is past ``2 c mu^2 = 4``, and
    ``V = 16`` solves ``V = 4 + 24 sqrt(4 / V)`` (``x = 4`` of ``x^3 - 4 x - 48``), so ``E[W] = 16 /
    2 - 2 = 6`` requests, 2 s at 3/s. Where the queue drains within a cycle (``V_1 <= 2 c
    mu^2``) it is the one-gap lower bound; as ``k -> top`` ``V`` falls to the arrivals' ``k
    c_a^2`` (the gaps' part as ``k^2 c_g^2 sqrt(2 c) mu / sqrt(k c_a^2)``), not to ``V_1``."""
    assert qs._spill_wait(4.0, 5.0, 1.5, 1.0, 3.0, 2) == pytest.approx((2.0, 2.0 / 3.0), rel=1e-12)
    assert qs._spill_wait(4.0, 5.0, 1.5, 1.0, 3.0, 14) == pytest.approx(((28.0 / 2.0 - 2.0) / 3.0, 2.0 / 3.0), rel=1e-12)
    assert qs._spill_wait(4.0, 5.0, 1.5, 1.0, 3.0, 2)[1] == pytest.approx(2.0 / 3.0)  # k c_a^2 / (2 mu) = 2 requests at 3/s
    assert qs._spill_wait(1.0, 5.0, 1.5, 1.0, 3.0, 2) == (0.0, 0.0)  # no spill, no spread: V / (2 mu) = 2.5 / 8 < k / 2
    k, top, c = 25.0 * (1.0 - 1e-4), 25.0, 16
    mu = top - k
    left = float(qs._spill_wait(k, top, 1.2, 1.0, 1.0, c)[0])
    excess = (left + k / 2.0) * 2.0 * mu - k  # V - k c_a^2 to first order: k^2 c_g^2 sqrt(2 c) mu / sqrt(k c_a^2)
    assert excess == pytest.approx(k * k * 1.2 * np.sqrt(2.0 * c) * mu / np.sqrt(k), rel=0.05)
    assert excess < 0.1 * k
    # the cubic's positive root on both of Cardano's branches: (x - 3)(x + 1)(x + 2) and x = 4 above
    assert qs._cubic_root(7.0, 6.0) == pytest.approx(3.0, rel=1e-12)
    assert qs._cubic_root(np.array([4.0, 0.0]), np.array([48.0, 8.0])) == pytest.approx([4.0, 2.0], rel=1e-12)


def test_static_spill_takes_its_own_gap_cv2_when_given():
    """``_gap_ttft``'s ``spill_cv2`` replaces only the spill's gap variance: the gaps' own
    ``c_g^2`` given gives the default bit for bit, and another moves the mean by ``P(wait)``
    times and the quantile by once the change in :func:`_spill_wait`, nothing else (near the
    batch's capacity: 20 requests/s on 4 instances of batch 8, cycles 1.5 to 2.5 s)."""
    lam, top = 20.0, 8
    gaps = qs.completion_gaps(lam, 4, 1.5, 2.5, top, gap_cv2=2.0)
    args = (0.99, gaps, lam, 1.0, 0.2, 0.6, top, 0.01, 0.03)
    base = qs._gap_ttft(*args)
    assert [float(x) for x in qs._gap_ttft(*args, spill_cv2=1.0 / gaps.shape)] == [float(x) for x in base]
    moved = qs._gap_ttft(*args, spill_cv2=0.5)
    extra = qs._spill_wait(gaps.batch_mean, top, 0.5, 1.0, lam, 4)[0] - qs._spill_wait(gaps.batch_mean, top, 1.0 / gaps.shape, 1.0, lam, 4)[0]
    assert extra < -1e-3
    assert float(moved[0] - base[0]) == pytest.approx(float((1.0 - gaps.idle_probability) * extra), rel=1e-9)
    assert float(moved[1] - base[1]) == pytest.approx(float(extra), rel=1e-9)
    assert (float(moved[2]), float(moved[3])) == (float(base[2]), float(base[3]))


def test_static_batch_of_two_under_a_burst_is_always_full_without_a_warning():
    """Batch 2 with gamma CV 2 arrivals: the burst's excess ``(c_a^2 - 1)/2 = 1.5`` fills the
    one free place at once (the gap at which it fills is 0), so a waiting request always
    rides a full batch: its step is ``decode(2)`` at the quantile, and the model says so
    finitely and without a warning."""
    import warnings

    kw = dict(instances=4, batch=2, output_tokens=256, decode_1_s=0.0075, decode_s=0.0097, prefill_1_s=0.08, prefill_s=0.16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = qs.static_at_load(0.99, np.array([1.0, 5.0]), 2.0, **kw)
    assert np.all(np.isfinite(out.ttft_q_s)) and np.all(out.ttft_q_s >= out.ttft_mean_s)
    assert out.tpot_q_s == pytest.approx([0.0097, 0.0097], rel=1e-12)


def test_static_wait_falls_to_the_lone_request_and_rises_with_load():
    """On 16 instances of h100-like cycles: a trickle rides alone (TTFT = prefill(1)); the
    mean TTFT rises with the load, and the mean batch is the one that carries it
    (``lambda = busy k / T(k)``)."""
    kw = dict(instances=16, batch=25, output_tokens=256, decode_1_s=0.0075, decode_s=0.0097, prefill_1_s=0.08, prefill_s=1.98)
    rates = np.array([1e-6, 10.0, 30.0, 50.0, 70.0, 85.0])
    out = qs.static_at_load(0.99, rates, 1.0, **kw)
    assert out.ttft_mean_s[0] == pytest.approx(0.08) and out.ttft_q_s[0] == pytest.approx(0.08)
    assert np.all(np.diff(out.ttft_mean_s) > 0) and np.all(np.diff(out.running) > 0)
    assert np.all(out.ttft_q_s >= out.ttft_mean_s)


def test_utilisation_sure_is_the_wait_formula_inverted_with_erlang_c_one():
    # h = (1 + 1)/2 x 12.8 / 64 = 0.2 s; the bound's wait 200 ms x ln(100) against a 1,000 ms budget
    sure = slot_reference.utilisation_sure(0.99, 2000.0, 1000.0, 64, 12.8, 1.0, 1.0)
    assert sure == pytest.approx(1.0 - 200.0 * math.log(100.0) / 1000.0, rel=1e-14)
    assert slot_reference.ttft_quantile_ms(0.99, 1000.0, 64, 12.8, sure, 1.0, 1.0) <= 2000.0
    assert qu.wait_scale_s(64, 12.8, 0.5, 3.0, 1.0) == pytest.approx(5.0 * 12.8 / 32.0, rel=1e-14)
    assert sure < slot_reference.utilisation_at_slo(0.99, 2000.0, 1000.0, 64, 12.8, 1.0, 1.0) < 1.0


def test_the_waiting_batch_is_the_capped_mean_over_a_length_biased_gap():
    """``_gap_batch``: ``E[min(P, 1 + e + N)]`` with ``N`` Poisson over a gamma(2, g) gap,
    against the negative binomial's pmf summed by hand (``p = 1 / (1 + lambda g)``,
    ``P(N = n) = (n + 1) p^2 (1 - p)^n``) and against a Monte Carlo of the gap; Poisson
    (``e = 0``) and a burst excess of 1 (``c_a^2 = 3``); the cap 1 is 1."""
    lam_g, top = 2.65, 4.0
    p = 1.0 / (1.0 + lam_g)
    n = np.arange(400)
    pmf = (n + 1) * p**2 * (1 - p) ** n
    for e in (0.0, 1.0):
        exact = np.sum(pmf * np.minimum(top, 1.0 + e + n))
        assert qu._gap_batch(lam_g, top, e) == pytest.approx(exact, rel=1e-12)
    rng = np.random.default_rng(5)
    counts = rng.poisson(rng.gamma(2.0, lam_g, 400_000))
    draws = np.minimum(top, 1.0 + counts)
    assert abs(qu._gap_batch(lam_g, top, 0.0) - draws.mean()) <= 4 * draws.std() / np.sqrt(draws.size)
    assert qu._gap_batch(lam_g, 1.0, 0.0) == 1.0 and qu._gap_batch(0.0, top, 0.0) == 1.0


def test_queue_ratio_is_the_embedded_chains_root():
    """:func:`ratio_reference.queue_ratio` against its limits by hand and scipy's root finder: Poisson
    arrivals and pass ends, one prompt a pass: M/M/c's ratio ``rho = lambda g``; gamma
    arrivals (CV 2): GI/M/c's ``sigma = A*((1 - sigma) / g)`` (Kleinrock vol. 1, §6.4);
    deterministic pass ends (dispersion 0) on one server: M/D/1's queue-length decay
    ``1 / s``, ``s = e^(rho (s - 1))``; four prompts a pass: ``z = lambda / (lambda + (1 -
    z^4) / g)``; no root below 1 where full passes do not outrun the arrivals."""
    from scipy.optimize import brentq

    assert ratio_reference.queue_ratio(8.0, 1.0, 0.1, 1) == pytest.approx(0.8, rel=1e-12)
    lam, g = 8.0, 0.1
    sigma = brentq(lambda z: (1.0 + (1.0 - z) / g * 4.0 / lam) ** -0.25 - z, 1e-9, 1.0 - 1e-12, xtol=1e-15)
    assert ratio_reference.queue_ratio(lam, 2.0, g, 1) == pytest.approx(sigma, rel=1e-12)
    s = brentq(lambda x: math.exp(0.8 * (x - 1.0)) - x, 1.0 + 1e-9, 10.0, xtol=1e-15)
    assert ratio_reference.queue_ratio(8.0, 1.0, 0.1, 1, 0.0) == pytest.approx(1.0 / s, rel=1e-9)
    z4 = brentq(lambda z: lam / (lam + (1.0 - z**4) / 0.3) - z, 1e-9, 1.0 - 1e-9, xtol=1e-15)
    assert ratio_reference.queue_ratio(lam, 1.0, 0.3, 4) == pytest.approx(z4, rel=1e-12)
    assert ratio_reference.queue_ratio(lam, 1.0, 0.5, 4) == 1.0  # 4 prompts a 0.5 s gap: 8 a second, as they arrive


def test_queue_wait_is_the_longer_window_of_the_pass_ends():
    """:func:`qu._queue_wait`: one server (a pass ``T = g``) is past one pass in any wait, so its
    pass ends are deterministic: the wait is ``g / (1 - z_D)``, ``z_D`` M/D/1's ratio; on
    many servers a wait much shorter than a pass sees Poisson pass ends (dispersion near 1)."""
    one = qu.BatchQueue(np.array(1.0), np.array(1.0), np.array(0.8), np.array(0.1), 0.0, 0.0)
    z = ratio_reference.queue_ratio(8.0, 1.0, 0.1, 1, 0.0)
    assert qu._queue_wait(one, 8.0, 1.0, 1, 0.1, 1) == pytest.approx(0.1 / (1.0 - z), rel=1e-12)
    many = qu.BatchQueue(np.array(1.0), np.array(1.0), np.array(0.2), np.array(0.001), 0.0, 0.0)
    poisson = 0.001 / (1.0 - ratio_reference.queue_ratio(200.0, 1.0, 0.001, 1))  # tau = 1.25 ms of a 1 s pass
    assert qu._queue_wait(many, 200.0, 1.0, 1000, 1.0, 1) == pytest.approx(poisson, rel=1e-3)


def test_decode_quantile_widens_by_the_step_feedback():
    """:func:`qd._decode_quantile`: with no slope it is :func:`qu._batch_quantile`; a gain
    ``lambda s = 0.75`` quadruples the fluctuation's variance (twice the excess)."""
    base = qu._batch_quantile(0.99, 100.0, 1.0, 1000, 4)
    assert qd._decode_quantile(0.99, 100.0, 30.0, 0.0, 1.0, 1000, 4) == base
    assert qd._decode_quantile(0.99, 100.0, 30.0, 0.025, 1.0, 1000, 4) - 100.0 == pytest.approx(2.0 * (base - 100.0), rel=1e-12)


def test_disaggregated_past_its_prefill_capacity_waits_past_any_slo():
    """Prompts arriving faster than full passes serve them (4 instances x 1 prompt / 0.1 s =
    40 a second) have no steady state: the wait is the queue's at :data:`qu.RHO_WAIT_MAX` of
    the passes' rate, ``g / (1 - z)`` with ``z`` the root there (M/D/1-like: one pass ends per
    0.025 s), finite and far past any SLO; the decode pool still has its TPOT."""
    kw = dict(instances=10, prefill_instances=4, batch=100, prefill_batch=1, output_tokens=101, decode_1_s=0.010, decode_s=0.050,
              prefill_1_s=0.5, prefill_s=0.5, busy_1_s=0.1, busy_s=0.1, transfer_1_s=0.01, transfer_s=0.01)
    out = qd.disaggregated_at_load(0.99, np.array([30.0, 41.0, 400.0]), 1.0, **kw)
    assert out.ttft_q_s[0] < 1.0 < 100.0 < out.ttft_q_s[1] == out.ttft_q_s[2] and np.all(np.isfinite(out.ttft_mean_s))
    assert np.all(np.isfinite(out.tpot_q_s))


@pytest.mark.parametrize("arrival_cv", [0.0, 1e-9])
def test_queue_ratio_of_evenly_spaced_arrivals_is_the_exponential_limit(arrival_cv):
    """Arrivals of squared CV 0 (or next to it) have the transform ``e^(-s / lambda)``, so
    ``z = exp(-(1 - z^P) / (lambda g))``: its root (scipy), not the 1 that ``(1 + t v)^(-1/v)``
    rounds to at ``v = 0``."""
    from scipy.optimize import brentq

    lam, g, top = 30.0, 0.05, 8.0
    want = brentq(lambda z: z - np.exp(-(1.0 - z**top) / (lam * g)), 1e-9, 1.0 - 1e-9, xtol=1e-15)
    got = ratio_reference.queue_ratio(np.array([lam]), arrival_cv, np.array([g]), np.array([top]))
    assert got[0] == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_the_waiting_batch_counts_the_spacing_of_the_passes_ends():
    """``_waited_arrivals``: the ``c`` servers' ends as uniform phases of a pass ``T``: the
    spacing a uniform arrival lands in has mean ``2 T / (c + 1)`` (Monte Carlo within 4
    SEM), and the pass is ``T`` at the passes' (harmonic) mean batch ``1 / (1 - C + C / b)``.
    At h100's prefill pool on 16 instances, Poisson load 0.9 (11 servers of 4 prompts, ``T``
    61.8 -> 245.6 ms), the batch a waiting request rides is within 5 % of the simulator's
    3.02 (seed 0, 100,000 requests, the first fifth left out; docs/load.md#disaggregated),
    where the gap at the requests' mean batch gave 3.44."""
    c, period = 11, 0.1
    rng = np.random.default_rng(9)
    phases = np.sort(rng.uniform(0.0, period, (100_000, c)), axis=1)
    ends = np.c_[phases[:, -1:] - period, phases, phases[:, :1] + period]  # the circle unrolled
    at = rng.uniform(0.0, period, len(phases))
    after = (phases <= at[:, None]).sum(axis=1) + 1  # the first end after the arrival
    rows = np.arange(len(ends))
    landed = ends[rows, after] - ends[rows, after - 1]
    assert abs(landed.mean() - 2 * period / (c + 1)) <= 4 * landed.std() / np.sqrt(landed.size)

    lam, wait, gap, top = 164.36, 0.711, 0.0161, 4.0
    passes = 1.0 / (1.0 - wait + wait / (1.0 + min(top - 1.0, lam * gap)))
    pass_s = 0.0618 + (0.2456 - 0.0618) * (passes - 1.0) / 3.0
    assert qu._waited_arrivals(lam, wait, gap, c, 0.0618, 0.2456, top) == pytest.approx(lam * pass_s / (c + 1), rel=1e-12)
    bq = qu.batch_queue(164.362444, 11, 0.0617772, 0.2456087, 4)
    assert bq.batch_waited == pytest.approx(3.02, rel=0.05) and qu._gap_batch(164.362444 * bq.gap_s, 4, 0.0) > 3.4
