"""The fast model's length spread (``workload.load.length_cv``, docs/load.md#length-spread):
its closed-form terms against scipy's gamma law and the exponential's order statistics, each
serving mode's limits by hand, and the spread drawn over its whole range [0, 3]."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from mcengine.analytic import queueing as qu
from mcengine.analytic import queue_continuous as qc
from mcengine.analytic import queue_disaggregated as qd
from mcengine.analytic import queue_spread as ql
from mcengine.analytic import queue_static as qs
from tests.analytic import ratio_reference, wait_reference
from tests.analytic.test_queueing import CONTINUOUS

#: The static TTFT quantile's largest fall below its running maximum under arrival CV 2 on
#: this module's static plan (measured: 0.06 %), the bound the rise test holds it to.
STATIC_BURSTY_DIP = 0.001

STATIC = dict(instances=4, batch=8, output_tokens=101, decode_1_s=0.01, decode_s=0.02, prefill_1_s=0.1, prefill_s=0.8)
DISAGGREGATED = dict(instances=10, prefill_instances=4, batch=100, prefill_batch=4, output_tokens=101, decode_1_s=0.010, decode_s=0.050,
                     prefill_1_s=0.5, prefill_s=1.6, busy_1_s=0.4, busy_s=1.2, transfer_1_s=0.01, transfer_s=0.04)
MODELS = ((qs.static_at_load, STATIC), (qc.continuous_at_load, CONTINUOUS), (qd.disaggregated_at_load, DISAGGREGATED))


@pytest.mark.parametrize("cv", [0.3, 0.77, 1.0, 2.1, 3.0])
def test_length_quantile_and_one_token_share_are_the_gamma_law(cv):
    """``length_quantile`` is scipy's gamma quantile of mean 1 and CV ``cv``;
    ``multi_token_share`` its survival at 1.5 tokens of a mean-256 law."""
    law = stats.gamma(1.0 / cv**2, scale=cv**2)
    assert ql.length_quantile(0.99, cv) == pytest.approx(law.ppf(0.99), rel=1e-10)
    assert ql.multi_token_share(256.0, cv) == pytest.approx(law.sf(1.5 / 256.0), rel=1e-10)


def test_no_spread_is_the_mean_length():
    assert ql.length_quantile(0.99, 0.0) == 1.0 and ql.multi_token_share(256.0, 0.0) == 1.0
    assert np.all(ql.longest_ratio([1.0, 8.0, 256.0], 0.0) == 1.0) and ql.longest_ratio(1.0, 2.1) == 1.0


@pytest.mark.parametrize("b", [2, 8, 25, 256])
def test_longest_of_exponentials_is_the_harmonic_number(b):
    """CV 1 is the exponential law, whose longest of ``b`` has mean ``H_b = sum 1/i`` (Rényi)."""
    assert ql.longest_ratio(float(b), 1.0) == pytest.approx(sum(1.0 / i for i in range(1, b + 1)), rel=1e-4)


def test_longest_of_two_gammas_is_the_quadrature():
    """Two draws: ``E max = int_0^inf (1 - F(x)^2) dx``, by scipy's adaptive quadrature."""
    from scipy import integrate

    for cv in (0.5, 2.1):
        law = stats.gamma(1.0 / cv**2, scale=cv**2)
        want = integrate.quad(lambda x: 1.0 - law.cdf(x) ** 2, 0.0, np.inf, limit=200)[0]
        assert ql.longest_ratio(2.0, cv) == pytest.approx(want, rel=1e-4)


def test_the_lone_request_takes_its_own_prompt_at_the_quantile():
    """At a trickle (no wait) the TTFT quantile is the lone pass of a prompt ``r_q`` times the
    mean: static and disaggregated ``r_q first_1`` (a pass linear in its tokens); continuous
    the mean TTFT plus ``(r_q - 1) S / c`` whole-chunk steps (the wait's quantile, under a
    step, added in quadrature)."""
    r = float(ql.length_quantile(0.99, 0.77))
    static = qs.static_at_load(0.99, 1e-6, 1.0, length_cv=0.77, **STATIC)
    assert static.ttft_q_s == pytest.approx(r * 0.1, rel=1e-5)
    dis = qd.disaggregated_at_load(0.99, 1e-6, 1.0, length_cv=0.77, **DISAGGREGATED)
    assert dis.ttft_q_s == pytest.approx(r * 0.51, rel=1e-5)
    cont = qc.continuous_at_load(0.99, 1e-9, 1.0, length_cv=0.77, **CONTINUOUS)
    base = qc.continuous_at_load(0.99, 1e-9, 1.0, **CONTINUOUS)
    excess = (r - 1.0) * 4 * 0.030
    assert cont.ttft_q_s == pytest.approx(base.ttft_mean_s + np.hypot(base.ttft_q_s - base.ttft_mean_s, excess), rel=1e-9)


def test_disaggregated_join_excess_is_its_law():
    """``join_excess_quantile``: ``P(U / m > x) = 1 - q`` over a Monte Carlo of 400,000
    requests (gamma outputs rounded to whole tokens, at least 1; one-token requests 0), within
    its binomial error at 4 standard errors."""
    rng = np.random.default_rng(7)
    for cv in (0.77, 2.1):
        x = float(ql.join_excess_quantile(0.99, 256.0, cv))
        o = np.maximum(1.0, np.floor(rng.gamma(1.0 / cv**2, 256.0 * cv**2, 400_000) + 0.5))
        u = rng.uniform(size=o.size)
        share = np.where(o > 1.0, u / np.maximum(o - 1.0, 1.0), 0.0)
        p = np.mean(share > x)
        assert abs(p - 0.01) <= 4.0 * np.sqrt(0.01 * 0.99 / o.size) + 2e-4, (cv, p)


def test_mixed_own_excess_is_the_mixtures_quantile():
    """``_mixed_own_excess_s``: the root of ``w P(1 + x / d_a) + (1 - w) P(1 + x / d_b) = q``
    (``P`` scipy's gamma law of mean 1 and CV ``cv``) within 1e-10 of scipy's Brent solve on
    its bracket, over random weights, per-prompt times, quantiles 0.1-0.999 and CVs 0.3-3; a
    part with all the weight, or both parts alike, gives its own ``(r_q - 1) d``; and each
    trial's answer is its own (the same in any order of the array)."""
    rng = np.random.default_rng(11)
    n = 300
    q, cv = rng.choice([0.1, 0.5, 0.9, 0.99, 0.999], n), rng.choice([0.3, 0.77, 1.0, 2.1, 3.0], n)
    w, d_a = rng.uniform(0.0, 1.0, n), rng.uniform(0.05, 1.0, n)
    d_b = d_a * rng.uniform(0.1, 3.0, n)
    x = ql._mixed_own_excess_s(q, cv, w, d_a, d_b)
    for i in range(n):
        law = stats.gamma(1.0 / cv[i] ** 2, scale=cv[i] ** 2)
        ends = sorted((law.ppf(q[i]) - 1.0) * np.array([d_a[i], d_b[i]]))
        want = optimize.brentq(lambda t: w[i] * law.cdf(1.0 + t / d_a[i]) + (1.0 - w[i]) * law.cdf(1.0 + t / d_b[i]) - q[i], *ends, xtol=1e-15, rtol=1e-14)
        assert x[i] == pytest.approx(want, rel=1e-10, abs=1e-15), (q[i], cv[i], w[i], d_a[i], d_b[i])
    r = ql.length_quantile(q, cv) - 1.0
    np.testing.assert_allclose(ql._mixed_own_excess_s(q, cv, 1.0, d_a, d_b), r * d_a, rtol=1e-12)
    np.testing.assert_allclose(ql._mixed_own_excess_s(q, cv, 0.0, d_a, d_b), r * d_b, rtol=1e-12)
    assert np.array_equal(ql._mixed_own_excess_s(q, cv, w, d_a, d_a), r * d_a)
    order = rng.permutation(n)
    assert np.array_equal(ql._mixed_own_excess_s(q[order], cv[order], w[order], d_a[order], d_b[order]), x[order])


def test_a_waiting_request_rides_alone_when_its_gap_brings_no_arrival():
    """``BatchQueue.waited_alone``: the Poisson arrivals of the gamma gap of shape 2 a waiting
    request waits in are none with probability ``(1 + lambda g)^-2`` (the gamma's Laplace
    transform at ``lambda``), ``lambda g`` :func:`_waited_arrivals`'; a Monte Carlo of
    400,000 gaps within 4 binomial standard errors. At h100's prefill pool on 16 instances,
    Poisson load 0.9 (11 servers of 4 prompts), with the requests that find a server idle
    that is 0.39 of the requests riding alone, where the simulator's per-request rows have
    0.44 (seed 0, 30,000 requests, the first fifth left out; docs/load.md#length-spread)."""
    lam, servers, cycle_1, cycle_top, top = 164.362444, 11, 0.0617772, 0.2456087, 4
    bq = qu.batch_queue(lam, servers, cycle_1, cycle_top, top)
    arrivals = qu._waited_arrivals(lam, bq.wait_probability, bq.gap_s, servers, cycle_1, cycle_top, top)
    assert bq.waited_alone == pytest.approx((1.0 + arrivals) ** -2, rel=1e-12)
    rng = np.random.default_rng(5)
    none = rng.poisson(arrivals * rng.gamma(2.0, 1.0, 400_000)) == 0
    assert abs(none.mean() - bq.waited_alone) <= 4.0 * np.sqrt(bq.waited_alone * (1.0 - bq.waited_alone) / none.size)
    assert 1.0 - bq.wait_probability * (1.0 - bq.waited_alone) == pytest.approx(0.39, abs=0.01)


@pytest.mark.parametrize("cv", [0.77, 2.1])
def test_chunked_share_is_its_law(cv):
    """``chunked_share``: the share of requests of ``2 .. 1 + R`` whole output tokens (gamma
    draws of mean 8 rounded, at least 1; ``R = (S / c)(1 + v) / 2`` set whole, 4) over a Monte
    Carlo of 400,000 requests, within its binomial error at 4 standard errors."""
    v = cv**2
    per_prompt = 8.0 / (1.0 + v)
    x = float(ql.chunked_share(8.0, cv, per_prompt))
    o = np.maximum(1.0, np.floor(np.random.default_rng(11).gamma(1.0 / v, 8.0 * v, 400_000) + 0.5))
    p = np.mean((o >= 2.0) & (o <= 5.0))
    assert 0.05 < x < 0.95
    assert abs(p - x) <= 4.0 * np.sqrt(x * (1.0 - x) / o.size), (cv, p, x)


@pytest.mark.parametrize("busy, cv", [(0.6, 0.77), (0.3, 2.1)])
def test_chunked_tpot_quantile_is_its_mixture(busy, cv):
    """``_chunked_tpot_quantile`` where ``pi = u x`` (``x`` :func:`chunked_share`) is below ``1 -
    q`` (mean output 64): a Monte Carlo of 400,000 requests, each with probability ``pi`` a whole chunk's step
    (above every other step) and otherwise a step linear in its occupancy, drawn from
    ``_batch_quantile``'s normal law (its quantile at a uniform draw), is past the closed form
    with probability ``1 - q`` within its binomial error at 4 standard errors."""
    q, n, arrival_cv, batch, instances = 0.9, 40.0, 1.5, 256.0, 2.0
    tau = lambda k: (0.01 + 1e-4 * k, None, np.full(np.shape(k), 1.0))  # noqa: E731 - the instance's step at occupancy k, and a chunk's
    got = float(qc._chunked_tpot_quantile(q, n, busy, tau, arrival_cv, batch, instances, 64.0, cv, 8.0))
    pi = busy * float(ql.chunked_share(64.0, cv, 8.0))
    assert 0.0 < pi < 1.0 - q
    rng = np.random.default_rng(13)
    occupancy = qu._batch_quantile(rng.uniform(size=400_000), n, arrival_cv, batch, instances)
    tpot = np.where(rng.uniform(size=occupancy.size) < pi, 1.0, tau(occupancy)[0])
    p = np.mean(tpot > got)
    assert abs(p - (1.0 - q)) <= 4.0 * np.sqrt(q * (1.0 - q) / tpot.size), (busy, cv, p)


def test_chunked_tpot_quantile_is_a_chunk_where_chunked_requests_fill_the_tail():
    """``_chunked_tpot_quantile`` where ``pi >= 1 - q``: a whole chunk's step at the
    occupancy's ``q`` quantile (``_batch_quantile``)."""
    q, n, arrival_cv, batch, instances = 0.9, 40.0, 1.5, 256.0, 2.0
    tau = lambda k: (0.01 + 1e-4 * k, None, 0.5 + 1e-3 * k)  # noqa: E731 - the instance's step at occupancy k, and a chunk's
    assert 1.0 * float(ql.chunked_share(8.0, 2.1, 8.0)) >= 1.0 - q
    got = float(qc._chunked_tpot_quantile(q, n, 1.0, tau, arrival_cv, batch, instances, 8.0, 2.1, 8.0))
    assert got == pytest.approx(0.5 + 1e-3 * float(qu._batch_quantile(q, n, arrival_cv, batch, instances)), rel=1e-12)


def test_the_rate_free_terms_handed_in_are_those_computed():
    """``static_at_load(longest=)`` and ``disaggregated_at_load(join_excess=)`` (the load
    stage's :func:`~mcengine.stages.load.spread_terms`, made once per plan) give the numbers
    the models compute without them, to the bit."""
    rates = np.array([0.5, 2.0, 5.0])
    static = qs.static_at_load(0.99, rates, 1.0, length_cv=0.77, **STATIC)
    held = qs.static_at_load(0.99, rates, 1.0, length_cv=0.77, longest=ql.longest_ratio(8, 0.77), **STATIC)
    dis = qd.disaggregated_at_load(0.99, rates, 1.0, length_cv=2.1, **DISAGGREGATED)
    given = qd.disaggregated_at_load(0.99, rates, 1.0, length_cv=2.1, join_excess=ql.join_excess_quantile(0.99, 101, 2.1), **DISAGGREGATED)
    for a, b in ((static, held), (dis, given)):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_continuous_mean_wait_adds_pollaczek_khinchine_excess():
    """The mean TTFT rises by M/G/1's excess over M/D/1, ``u c_s^2 D / (2 (1 - u))`` at the
    stream's utilisation ``u`` and prompt time ``D`` (Poisson arrivals: no burst term)."""
    rate = 10.0
    base = qc.continuous_at_load(0.99, rate, 1.0, **CONTINUOUS)
    spread = qc.continuous_at_load(0.99, rate, 1.0, length_cv=0.77, **CONTINUOUS)
    c = CONTINUOUS
    lam = rate / c["instances"]
    d = np.interp(base.running, [1.0, c["batch"]], [c["decode_1_s"], c["decode_s"]])
    chunked = np.interp(base.running, [1.0, c["batch"]], [c["chunk_step_1_s"], c["step_s"]])
    u = min(lam * c["prompt_tokens"] * base.tpot_mean_s / c["chunk_tokens"], 1.0)
    prompt_s = c["prompt_tokens"] / c["chunk_tokens"] * chunked
    assert d < chunked and 0.0 < u < 1.0
    assert spread.ttft_mean_s - base.ttft_mean_s == pytest.approx(u * 0.77**2 * prompt_s / (2.0 * (1.0 - u)), rel=1e-9)
    assert spread.running == base.running and spread.tpot_q_s >= base.tpot_q_s


def test_static_batches_last_their_longest_output():
    """The full batch's cycle holds ``O M_b - 1`` decode steps: near the spread's capacity the
    wait grows past the mean lengths', and a batch that cannot fill its longest member at
    the roofline's capacity has no steady state left."""
    top = STATIC["instances"] * STATIC["batch"] / (STATIC["prefill_s"] + 100 * STATIC["decode_s"])
    base = qs.static_at_load(0.99, 0.5 * top, 1.0, **STATIC)
    spread = qs.static_at_load(0.99, 0.5 * top, 1.0, length_cv=0.77, **STATIC)
    assert spread.ttft_mean_s > base.ttft_mean_s and spread.running > base.running


def _capacity(mode, kw, cv):
    """Requests/s at which each mode's plan saturates: static at the spread's longest output
    (``N B / (P + (O M_B - 1) d)``), continuous ``N B / (O step)``, disaggregated its prefill
    pool's full passes ``N_p P / busy(P)`` (below its decode pool's)."""
    if mode == 0:
        return kw["instances"] * kw["batch"] / (kw["prefill_s"] + (kw["output_tokens"] * float(ql.longest_ratio(kw["batch"], cv)) - 1.0) * kw["decode_s"])
    if mode == 1:
        return kw["instances"] * kw["batch"] / (kw["output_tokens"] * kw["step_s"])
    return kw["prefill_instances"] * kw["prefill_batch"] / kw["busy_s"]


@settings(max_examples=40, deadline=None)
@given(cv=st.floats(0.0, 3.0), load=st.floats(0.05, 0.9), mode=st.integers(0, 2))
def test_spread_over_its_range_is_finite_and_never_shortens_the_tail(cv, load, mode):
    """Over ``length_cv`` in [0, 3] and loads below the spread's capacity: every statistic a
    finite positive number, the TTFT and TPOT quantiles at least the mean lengths' at the same
    rate (the own prompt's excess only adds; static: the longer cycle too), and ``length_cv =
    0`` the model without the key, bit for bit."""
    model, kw = MODELS[mode]
    rate = load * _capacity(mode, kw, cv)
    base = model(0.99, rate, 1.0, **kw)
    got = model(0.99, rate, 1.0, length_cv=cv, **kw)
    zero = model(0.99, rate, 1.0, length_cv=0.0, **kw)
    assert all(np.array_equal(a, b) for a, b in zip(zero, base))
    assert all(np.isfinite(x) and x > 0.0 for x in got[:4])
    assert got.ttft_q_s >= base.ttft_q_s * (1.0 - 1e-12) and got.tpot_q_s >= base.tpot_q_s * (1.0 - 1e-12)


def test_check_refuses_the_spread_with_a_length_law(cli):
    """A length law is a spread of its own: ``length_cv`` above 0 with one is exit 2, naming
    both keys; at 0 (the default) the law alone checks, and the spread alone too."""
    law = 'workload.output_tokens={law="lognormal",median=200,sigma=0.8}'
    r = cli("check", "h100", "--set", law, "--set", "workload.load.length_cv=0.77")
    assert r.code == 2 and "workload.load.length_cv" in r.err and "workload.output_tokens" in r.err and "Traceback" not in r.err, r.err
    assert cli("check", "h100", "--set", law).code == 0
    assert cli("check", "h100", "--set", "workload.load.length_cv=0.77").code == 0


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("q", [0.5, 0.9, 0.99])
def test_a_vanishing_spread_is_the_mean_lengths_model(mode, q):
    """``length_cv`` tending to 0 tends to the model without a spread: the own prompt's part
    is added only above the quantile's mean (a quantile below it, ``q = 0.5``, is not
    mirrored above it), and the disaggregated join's part is its excess over the mean
    length's, so at 1e-9 every statistic is within 1e-6 of the mean lengths'."""
    model, kw = MODELS[mode]
    for load in (0.05, 0.3, 0.6, 0.85):
        rate = load * _capacity(mode, kw, 0.0)
        base, tiny = model(q, rate, 1.0, **kw), model(q, rate, 1.0, length_cv=1e-9, **kw)
        for name in ("ttft_mean_s", "ttft_q_s", "tpot_mean_s", "tpot_q_s"):
            assert getattr(tiny, name) == pytest.approx(getattr(base, name), rel=1e-6), (load, name)


@pytest.mark.parametrize("q", [0.5, 0.9, 0.99])
def test_the_disaggregated_model_is_continuous_at_no_spread(q):
    """At ``length_cv = 1e-6`` the disaggregated model is within what that spread can add to
    its value at 0. The join's share of a step, ``U / m`` over ``m = O_i - 1`` steps, has
    ``P(U / m > x) = 1 - x E[m]`` while ``x`` times the largest ``m`` is below 1, so its ``q``
    quantile is ``q / (O - 1)``, the mean length's, exactly, until the gamma law puts mass
    past ``(O - 1) / q`` steps (300 standard deviations out at this CV): the part taken out
    is the part added, and the TPOT quantile is the mean lengths' within 4 ulp. The own
    prompt adds at most ``|r_q - 1|`` times the largest ``first(k) / k`` (the quadrature adds
    at most the excess), ``|r_q - 1| <= |z_q| v + (z_q^2 + 1) v^2`` (``v = length_cv``, the
    gamma's Cornish-Fisher expansion ``z v + (z^2 - 1) v^2 / 3``); the mean TTFT does not read the
    spread, and the mean TPOT loses only the one-token requests (below 1e-300 here)."""
    kw, v = DISAGGREGATED, 1e-6
    rates = np.linspace(0.02, 0.95, 94) * _capacity(2, kw, 0.0)
    base, tiny = qd.disaggregated_at_load(q, rates, 1.0, **kw), qd.disaggregated_at_load(q, rates, 1.0, length_cv=v, **kw)
    np.testing.assert_allclose(tiny.tpot_q_s, base.tpot_q_s, rtol=4 * np.finfo(float).eps, atol=0.0)
    first = max(kw["prefill_1_s"] + kw["transfer_1_s"], (kw["prefill_s"] + kw["transfer_s"]) / kw["prefill_batch"])
    z = stats.norm.ppf(q)
    own = (abs(z) * v + (z**2 + 1.0) * v**2) * first
    assert np.all(np.abs(tiny.ttft_q_s - base.ttft_q_s) <= own * (1.0 + 1e-9)), np.max(np.abs(tiny.ttft_q_s - base.ttft_q_s)) / own
    assert np.array_equal(tiny.ttft_mean_s, base.ttft_mean_s) and np.array_equal(tiny.tpot_mean_s, base.tpot_mean_s)


@pytest.mark.parametrize("arrival_cv", [1.0, 2.0])
@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("q", [0.5, 0.9, 0.99])
@pytest.mark.parametrize("cv", [0.0, 0.3, 0.77, 2.1])
def test_the_quantiles_rise_with_the_load_under_a_spread(mode, q, cv, arrival_cv):
    """Static and continuous, with and without a spread, Poisson and bursty arrivals: the
    TTFT and TPOT quantiles never fall as the load rises (loads 0.01-0.95 of the spread's
    capacity, step 0.005), except static's TTFT quantile under bursty arrivals, which may
    fall at most :data:`STATIC_BURSTY_DIP` below its running maximum. :func:`completion_gaps`
    mixes the light-traffic gaps, weight ``P(idle)``, with the bunched ones: with arrivals
    burstier than Poisson's the light side is the less regular, so as ``P(idle)`` falls the
    gaps grow more regular faster than their mean grows. The bound is the largest fall
    measured on this grid (0.06 %, arrival CV 2, q = 0.99, no spread), not derived: a ratchet
    that fails if the dip deepens. :func:`mcengine.stages.load.capacity_rate` counts a rate
    as meeting the SLOs only where every rate it probed below it does (a dip narrower than
    its first call's probe spacing may go unseen)."""
    model, kw = MODELS[mode]
    rates = np.arange(0.01, 0.95, 0.005) * _capacity(mode, kw, cv)
    got = model(np.full(rates.shape, q), rates, np.full(rates.shape, arrival_cv), length_cv=np.full(rates.shape, cv), **kw)
    for stat, dip in ((got.ttft_q_s, STATIC_BURSTY_DIP if mode == 0 and arrival_cv > 1.0 else 0.0), (got.tpot_q_s, 0.0)):
        below = 1.0 - stat / np.maximum.accumulate(stat)
        assert np.max(below) <= max(dip, 1e-12), (np.max(below), rates[np.argmax(below)])


LONE_PASSES = dict(DISAGGREGATED, prefill_batch=1, prefill_s=DISAGGREGATED["prefill_1_s"], busy_s=DISAGGREGATED["busy_1_s"],
                   transfer_s=DISAGGREGATED["transfer_1_s"])


@pytest.mark.parametrize("arrival_cv", [1.0, 2.0])
@pytest.mark.parametrize("q", [0.5, 0.9, 0.99])
@pytest.mark.parametrize("cv", [0.0, 0.3, 0.77, 2.1, 3.0])
def test_the_disaggregated_quantiles_rise_with_the_load(q, cv, arrival_cv):
    """Disaggregated, with and without a spread, loads 0.01-0.999 of the prefill pool's
    capacity (step 0.001, near capacity included): the TPOT quantile never falls as the load
    rises; nor does the TTFT quantile where a prefill pass takes one prompt (the Lite's plan)
    or no request spreads. Its queue wait near the pool's capacity is its own window's fixed
    point (:func:`qu._queue_wait`), which rises with the rate (with the wait of Poisson pass
    ends as the window it fell by 2 % a step near load 0.91 on the batched plan, and 5.6 % on
    h100's between loads 0.96 and 0.965, where the simulator's P99 rises). Where passes batch
    and prompts spread, the TTFT quantile falls as the load fills the passes, in the
    simulator too: a pass's time is the table's at ``k`` prompts scaled by its tokens over
    ``k`` mean prompts, so a long prompt adds ``(r - 1) first(k) / k``, less the more
    prompts share its pass (h100's prefill: 0.49 s a mean prompt alone, 0.17 in a pass of
    4); the simulator's P99 TTFT at CV 0.77 falls from 1,807 ms at load 0.3 to 1,619 ms at
    0.9 (docs/load.md#length-spread)."""
    for plan in (LONE_PASSES, DISAGGREGATED):
        rates = np.arange(0.01, 0.9995, 0.001) * plan["prefill_instances"] * plan["prefill_batch"] / plan["busy_s"]
        got = qd.disaggregated_at_load(np.full(rates.shape, q), rates, np.full(rates.shape, arrival_cv), length_cv=np.full(rates.shape, cv), **plan)
        for stat in (got.ttft_q_s, got.ttft_mean_s, got.tpot_q_s) if plan is LONE_PASSES or cv == 0.0 else (got.ttft_mean_s, got.tpot_q_s):
            assert np.all(np.diff(stat) >= -1e-12 * stat[1:]), (rates[np.argmin(np.diff(stat))], np.min(np.diff(stat) / stat[1:]))


@pytest.mark.parametrize("arrival_cv", [1.0, 2.0])
@pytest.mark.parametrize("load", [0.1, 0.5, 0.9, 0.99])
@pytest.mark.parametrize("plan", [LONE_PASSES, DISAGGREGATED], ids=["lone", "batched"])
def test_the_disaggregated_quantiles_are_continuous_in_the_spread_up_to_3(plan, load, arrival_cv):
    """Disaggregated, length CV 0 to 3 in steps of 0.001, at loads 0.1-0.99 of the prefill
    pool's capacity, q 0.5 / 0.9 / 0.99: no step moves a quantile by more than 0.5 % (the
    largest, at q 0.5 near CV 0, is 0.36 %: the gamma median's ``-v/3`` slope, Lipschitz, a
    step ten times shorter moving it ten times less), the means do not move, and at q 0.99
    the TTFT quantile rises with the spread (the own prompt's ``r_q`` does)."""
    cvs = np.arange(0.0, 3.0005, 0.001)
    rates = np.full(cvs.shape, load * plan["prefill_instances"] * plan["prefill_batch"] / plan["busy_s"])
    base = None
    for q in (0.5, 0.9, 0.99):
        got = qd.disaggregated_at_load(np.full(cvs.shape, q), rates, np.full(cvs.shape, arrival_cv), length_cv=cvs, **plan)
        for stat in (got.ttft_q_s, got.tpot_q_s):
            assert np.all(np.isfinite(stat)) and np.max(np.abs(np.diff(stat)) / stat[1:]) <= 5e-3, np.max(np.abs(np.diff(stat)) / stat[1:])
        assert np.all(got.ttft_mean_s == got.ttft_mean_s[0])
        base = got.ttft_mean_s[0] if base is None else base
        assert got.ttft_mean_s[0] == base
    assert np.all(np.diff(got.ttft_q_s) > 0.0)


@pytest.mark.parametrize("arrival_cv", [1.0, 2.0])
@pytest.mark.parametrize("cv", [0.0, 0.77, 3.0])
@pytest.mark.parametrize("plan", [LONE_PASSES, DISAGGREGATED], ids=["lone", "batched"])
def test_the_disaggregated_quantiles_are_continuous_in_the_load(plan, cv, arrival_cv):
    """Disaggregated, loads 0.01-0.95 of the prefill pool's capacity, q 0.5 and 0.99, length
    CV 0 / 0.77 / 3: on steps of 1e-4 no step moves the TTFT or TPOT quantile or the mean
    TTFT by more than 0.3 % (the largest, 0.2 %, the mean's near 0.95: ten times less than
    on steps of 1e-3), but over the 0.05 of load after the probability of waiting ``C``
    crosses ``1 - q``. There the TTFT quantile leaves the unwaited pass for the waited law
    (:func:`qu._batched_ttft`) continuously but steeply: the waited law's quantile at tail
    ``(1 - q) / C`` starts at 0 with no density there. At the crossing (the rate bisected on
    ``C``) the quantile a relative ``1e-6`` above it is within a third of its value at
    ``1e-3``'s distance, and ``1e-9`` above it within 2 % of the unwaited pass (measured:
    the gap falls tenfold for a thousandfold nearer rate, a cube-root rise, not a jump)."""
    cap = plan["prefill_instances"] * plan["prefill_batch"] / plan["busy_s"]

    def model(rates, q):
        return qd.disaggregated_at_load(np.full(rates.shape, q), rates, np.full(rates.shape, arrival_cv), length_cv=np.full(rates.shape, cv), **plan)

    def waits(rates):
        return qu.batch_queue(rates, plan["prefill_instances"], plan["busy_1_s"], plan["busy_s"], plan["prefill_batch"], arrival_cv).wait_probability

    rates = np.arange(0.01, 0.95, 1e-4) * cap
    wait = waits(rates)
    for q in (0.5, 0.99):
        got = model(rates, q)
        crossed = np.flatnonzero((wait[:-1] > 1.0 - q) != (wait[1:] > 1.0 - q))
        assert crossed.size <= 1
        near = np.zeros(rates.size - 1, bool)
        for i in crossed:
            near[i:i + 500] = True
        for stat in (got.ttft_q_s, got.ttft_mean_s, got.tpot_q_s):
            step = np.abs(np.diff(stat)) / stat[1:]
            assert np.max(np.where(near, 0.0, step)) <= 3e-3, (q, np.max(np.where(near, 0.0, step)))
        for i in crossed:
            lo, hi = rates[i], rates[i + 1]
            for _ in range(60):
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if waits(np.array([mid]))[0] <= 1.0 - q else (lo, mid)
            below = model(np.array([lo]), q).ttft_q_s[0]
            gap = [model(np.array([hi * (1.0 + e)]), q).ttft_q_s[0] / below - 1.0 for e in (1e-3, 1e-6, 1e-9)]
            assert gap[1] <= gap[0] / 3.0 and abs(gap[2]) <= 0.02, gap


def test_the_queue_wait_is_its_own_windows_fixed_point():
    """:func:`qu._queue_wait` over random pools (1-64 servers, 1-16 prompts a pass, arrival CV
    0-3, loads 0.05-0.999 of full passes): the wait ``W = W(I)`` at ``I = max(0, 1 - W / T)``,
    ``W(I) = g / (1 - z_I^P)``, against Brent's root of the same equation to 1e-9 of ``T``
    (the bracket's 1e-12 on ``I`` times ``W``'s slope); at least ``at_least`` (to 1e-9 of
    it: the floor narrows the bracket the steps start from); and rising with the rate in each
    pool."""
    rng = np.random.default_rng(7)
    for _ in range(60):
        c, top, cv = int(rng.integers(1, 65)), float(rng.integers(1, 17)), float(rng.uniform(0.0, 3.0))
        busy = float(rng.uniform(0.05, 1.0))
        rates = np.sort(rng.uniform(0.05, 0.999, 8)) * c * top / busy
        bq = qu.batch_queue(rates, c, 0.5 * busy, busy, top, cv)
        got = qu._queue_wait(bq, rates, cv, c, busy, top)
        assert np.all(np.diff(got) >= -1e-12 * got[1:]), (c, top, cv, got)
        floor = qu._queue_wait(bq, rates, cv, c, busy, top, at_least=bq.gap_s)
        np.testing.assert_allclose(floor, np.maximum(got, bq.gap_s), rtol=1e-9)  # the floor narrows the bracket: the same root
        for rate, gap, wait in zip(rates, bq.gap_s / ((1.0 + cv**2) / 2.0), got):
            pass_s = c * gap

            def w(i, rate=rate, gap=gap):
                return gap / (1.0 - float(ratio_reference.queue_ratio(rate, cv, gap, top, i)) ** top)

            phi = lambda i, w=w, pass_s=pass_s: 1.0 - w(i) / pass_s - i  # noqa: E731
            want = w(0.0) if phi(0.0) <= 0.0 else w(optimize.brentq(phi, 0.0, 1.0, xtol=1e-15, rtol=1e-15))
            assert wait == pytest.approx(want, rel=1e-9, abs=1e-9 * pass_s), (c, top, cv, rate)


def test_the_queue_wait_is_the_nested_solves_root():
    """:func:`qu._self_consistent_wait` (one root in the ratio ``z``) against the nested solve
    (:func:`wait_reference.nested_wait`: Illinois steps in the index of dispersion, each a
    :func:`ratio_reference.queue_ratio` solve) to 1e-9 relative, twice the largest difference on this
    sample: over 20,000 random pools (1-64 servers, 1-16 prompts a pass, arrival CV 0-3, a
    fifth Poisson, loads 0.01-0.999 of full passes), with and without the floor, the largest
    is 4.5e-10, at load 0.035 (11 servers, one prompt a pass, arrival CV 0.014), and it is
    the nested solve's own: the root there is ``z`` = 7.5e-28 (a 60-digit solve of the same
    equation), the wait the gap to a float, which the one solve gives; the nested solve's
    ratio solve ends at its step cap at 4.5e-10. Every other difference is at most 7.7e-11."""
    rng = np.random.default_rng(11)
    n = 20_000
    c, top = rng.integers(1, 65, n).astype(float), rng.integers(1, 17, n).astype(float)
    cv = np.where(rng.random(n) < 0.2, 1.0, rng.uniform(0.0, 3.0, n))
    busy = rng.uniform(0.05, 1.0, n)
    rates = rng.uniform(0.01, 0.999, n) * c * top / busy
    bq = qu.batch_queue(rates, c, 0.5 * busy, busy, top, cv)
    lam = np.minimum(rates, qu.RHO_WAIT_MAX * c * top / busy)
    g = bq.gap_s / ((1.0 + cv**2) / 2.0)
    for floor in (np.zeros(n), bq.gap_s):
        args = qu._flat(lam, cv, g, top, c * g, floor)
        np.testing.assert_allclose(qu._self_consistent_wait(*args), wait_reference.nested_wait(*args), rtol=1e-9)


@pytest.mark.parametrize("arrival_cv", [1.0, 2.0])
@pytest.mark.parametrize("plan", [LONE_PASSES, DISAGGREGATED], ids=["lone", "batched"])
def test_the_disaggregated_model_keeps_the_nested_solves_waits(plan, arrival_cv, monkeypatch):
    """The disaggregated model's TTFT mean and quantile (q 0.5 and 0.99) at loads 0.01-0.999
    of the prefill pool's capacity (step 0.001) and length CV 0 to 3, with the queue wait
    solved as one root in the ratio, within 1e-9 of the same with the nested solve
    (:func:`wait_reference.nested_wait`)."""
    loads = np.arange(0.01, 0.9995, 0.001)
    cvs = np.array([0.0, 0.3, 0.77, 1.5, 3.0])
    load, cv = (x.ravel() for x in np.meshgrid(loads, cvs))
    rates = load * plan["prefill_instances"] * plan["prefill_batch"] / plan["busy_s"]

    def model(q):
        return qd.disaggregated_at_load(np.full(rates.shape, q), rates, np.full(rates.shape, arrival_cv), length_cv=cv, **plan)

    got = {q: model(q) for q in (0.5, 0.99)}
    monkeypatch.setattr(qu, "_self_consistent_wait", wait_reference.nested_wait)
    for q, one in got.items():
        nested = model(q)
        for stat in ("ttft_mean_s", "ttft_q_s", "tpot_q_s"):
            np.testing.assert_allclose(getattr(one, stat), getattr(nested, stat), rtol=1e-9, err_msg=f"{stat} q {q}")


@pytest.mark.parametrize("cv", [0.0, 0.77])
def test_one_token_requests_take_the_disaggregated_join_without_dividing(cv):
    """``output_tokens = 1`` (legal: a prompt answered by its first token): the mean length's
    join ``q / (O - 1)`` has no step to divide, and where ``O <= 1 + q/2`` it is at least 2,
    above any join's share, so the model takes the spread's; no warning, the TPOT quantile
    the lone decode step's 0.01 s without a spread, and O = 1 + q/2 and just below it the
    same law as above it (the spread's join, whichever way the share is reached)."""
    q = np.array([0.99])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one = qd.disaggregated_at_load(q, np.array([1.0]), np.array([1.0]), length_cv=np.array([cv]), **dict(DISAGGREGATED, output_tokens=1))
    assert all(np.all(np.isfinite(x)) for x in one)
    if cv == 0.0:
        assert one.tpot_q_s[0] == DISAGGREGATED["decode_1_s"]
    edge = 1.0 + 0.5 * q
    at = [qd.disaggregated_at_load(q, np.array([1.0]), np.array([1.0]), length_cv=np.array([cv]), **dict(DISAGGREGATED, output_tokens=o)).tpot_q_s[0]
          for o in (edge[0], np.nextafter(edge[0], 2.0))]
    assert at[0] == pytest.approx(at[1], rel=1e-9)
