"""mcengine/analytic/queueing.py against hand-computed values and the M/M/c closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcengine.analytic import queueing as qu


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
    rho = qu.utilisation_at_slo(0.99, 2000.0, 1000.0, **{k: v for k, v in kw.items()})
    assert 0.0 < rho < 1.0
    assert qu.ttft_quantile_ms(0.99, 1000.0, kw["batch"], kw["slot_s"], rho, 1.0, 1.0) == pytest.approx(2000.0, rel=1e-9)
    np.testing.assert_array_equal(qu.utilisation_at_slo(0.99, [np.inf, 500.0], [1000.0, 1000.0], 64, 12.8, 1.0, 1.0), [1.0, 0.0])
    burstier = qu.utilisation_at_slo(0.99, 2000.0, 1000.0, 64, 12.8, 3.0, 1.0)
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
    assert qu.slot_time_s(64, 256, 3200.0) == pytest.approx(64 * 256 / 3200)
    assert math.isinf(qu.slot_time_s(64, 256, 0.0))
