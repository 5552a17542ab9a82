"""Closed forms of the reliability stage against the worked values in docs/sources.md (Reliability)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from mcengine.analytic import reliability as ar
from mcengine.validation.reliability import LLAMA3_DAYS, LLAMA3_GPUS, LLAMA3_UNEXPECTED, llama3_rates
from mcengine.units import HOURS_PER_YEAR


def test_machine_repairman_worked_values():
    two = ar.machine_repairman(10, 0.05, 0.5, 2)
    np.testing.assert_allclose(two["p"][:4], [0.367955, 0.367955, 0.165580, 0.066232], atol=5e-7)
    assert two["mean_down"] == pytest.approx(1.03864, abs=5e-6)
    assert two["availability"] == pytest.approx(0.896136, abs=5e-7)
    one = ar.machine_repairman(10, 0.05, 0.5, 1)
    assert one["mean_down"] == pytest.approx(2.14582, abs=5e-6)
    assert one["availability"] == pytest.approx(0.785418, abs=5e-7)
    assert one["p"][0] == pytest.approx(0.214582, abs=5e-7)  # repairer idle
    for crews in (10, 25, math.inf):  # c >= N: independent units, Binomial
        full = ar.machine_repairman(10, 0.05, 0.5, crews)
        np.testing.assert_allclose(full["p"], stats.binom.pmf(np.arange(11), 10, 0.05 / 0.55), rtol=1e-12)
        assert full["availability"] == pytest.approx(0.909091, abs=5e-7)


def test_machine_repairman_is_stable_at_thousands_of_units():
    big = ar.machine_repairman(4096, 0.1 / HOURS_PER_YEAR, 1 / 72, 4)
    assert np.isfinite(big["p"]).all() and big["p"].sum() == pytest.approx(1.0)
    # utilisation 4096 x 0.1/8766 x 72 / 4 = 0.84 < 1, so the queue stays short
    assert 0.998 < big["availability"] < 0.999


def test_spares_birth_death_worked_values():
    one = ar.spares_birth_death(8, 2, 1, 0.02, 0.25)
    assert one["p_full_service"] == pytest.approx(0.797897, abs=5e-7)
    assert one["active_fraction"] == pytest.approx(0.954228, abs=5e-7)
    ample = ar.spares_birth_death(8, 2, 10, 0.02, 0.25)
    assert ample["p_full_service"] == pytest.approx(0.973388, abs=5e-7)
    assert ample["active_fraction"] == pytest.approx(0.996184, abs=5e-7)
    assert ar.spares_birth_death(8, 2, math.inf, 0.02, 0.25)["active_fraction"] == ample["active_fraction"]
    # no spares: the machine repairman
    assert ar.spares_birth_death(10, 0, 2, 0.05, 0.5)["active_fraction"] == pytest.approx(0.896136, abs=5e-7)


@pytest.mark.parametrize("gpus, per_gpu_year, down_hours, expected", [
    (8, 0.11, 0.5, 0.999950), (8, 0.11, 72, 0.99282),
    (32, 0.11 / 4, 0.5, 0.999950), (32, 0.11 / 4, 72, 0.99282),
    (32, 0.11 / 2, 0.5, 0.999900), (32, 0.11 / 2, 72, 0.98575),
    (32, 0.11, 0.5, 0.999799), (32, 0.11, 72, 0.97190),
])
def test_instance_availability_table(gpus, per_gpu_year, down_hours, expected):
    rate = gpus * per_gpu_year / HOURS_PER_YEAR
    assert ar.ample_pool_availability(rate, 0.0, down_hours, 0.0) == pytest.approx(expected, abs=6e-6)


def test_weibull_scale_and_mean_survival():
    assert ar.weibull_scale(100.0, 1.0) == pytest.approx(100.0)
    assert ar.weibull_scale(100.0, 2.0) == pytest.approx(100.0 / math.gamma(1.5))
    for shape in (0.7, 1.0, 2.0, 3.5):
        eta, horizon, count = 1000.0, 2500.0, 3
        direct, _ = integrate.quad(lambda t: math.exp(-count * (t / eta) ** shape), 0, horizon, epsabs=1e-12)
        assert ar.weibull_mean_survival(horizon, eta, shape, count) == pytest.approx(direct / horizon, rel=1e-9)
        eta_min = eta * count ** (-1 / shape)
        assert ar.series_mean_survival(horizon, 0.0, [(shape, eta_min)]) == pytest.approx(direct / horizon, rel=1e-9)
    # the exponential special case: (1 - e^-lam T) / (lam T)
    lam, horizon = 1e-3, 3000.0
    assert ar.series_mean_survival(horizon, lam, []) == pytest.approx((1 - math.exp(-lam * horizon)) / (lam * horizon))


def test_alternating_renewal_and_series():
    assert ar.alternating_renewal(95.0, 5.0) == pytest.approx(0.95)
    assert ar.series_availability(0.95, 8) == pytest.approx(0.95**8)


def test_restart_only_renewal_identity():
    rate, r = 0.3, 0.278
    out = ar.restart_only(rate, r)
    mean_down = (math.exp(rate * r) - 1) / rate
    assert out["availability"] == pytest.approx((1 / rate) / (1 / rate + mean_down))
    assert out["interruptions_per_hour"] == pytest.approx(1 / (1 / rate + mean_down))


def test_mginf_stockout():
    # docs/sources.md#rel-ample-crews: 4,096 GPUs x 0.014 /yr, E[R] = 86.2 h: 0.564 in repair
    rate = 4096 * 0.014 / HOURS_PER_YEAR
    assert rate * 86.2 == pytest.approx(0.564, abs=5e-4)
    assert ar.mginf_stockout_probability(rate, 86.2, 64) < 1e-15
    assert ar.mginf_stockout_probability(1.0, 3.0, 0) == pytest.approx(1 - math.exp(-3.0))


@pytest.mark.parametrize("parts", [
    [(1.0, "exponential", 50.0)], [(1.0, "lognormal", 40.0, 0.9)], [(1.0, "weibull", 50.0, 0.6)],
    [(0.2, "fixed", 2.0), (0.8, "lognormal", 72.0, 0.9)],
])
def test_batch_stockout_reduces_to_poisson_and_keeps_the_mean(parts):
    mean = sum(integrate.quad(lambda u: float(ar.repair_survival(parts, u)), a, b, limit=200)[0]
               for a, b in zip([0, 2.0], [2.0, 1e5]))
    singles = ar.batch_mginf_stockout(0.05, 0.0, 1, parts, 3)
    assert singles["p_stockout"] == pytest.approx(stats.poisson.sf(3, 0.05 * mean), rel=1e-6)
    # E[N] = single_rate E[R] + batch_rate g E[R]; with no spares the shortfall is E[N]
    both = ar.batch_mginf_stockout(0.05, 0.01, 8, parts, 0)
    assert both["mean_shortfall"] == pytest.approx((0.05 + 0.01 * 8) * mean, rel=1e-6)
    assert both["p_stockout"] < 1.0


def test_repair_survival_of_a_mixture():
    parts = [(0.2, "fixed", 2.0), (0.8, "exponential", 10.0)]
    np.testing.assert_allclose(ar.repair_survival(parts, [1.0, 3.0]), [0.2 + 0.8 * math.exp(-0.1), 0.8 * math.exp(-0.3)])


def test_llama3_per_part_rates_reproduce_419_interruptions():
    gpu_afr, host_afr = llama3_rates()
    gpu_years = LLAMA3_GPUS * LLAMA3_DAYS * 24 / HOURS_PER_YEAR
    total = sum(gpu_afr.values()) * gpu_years + sum(host_afr.values()) * gpu_years / 8
    assert total == pytest.approx(LLAMA3_UNEXPECTED)
    assert sum(gpu_afr.values()) + sum(host_afr.values()) / 8 == pytest.approx(0.173, abs=5e-4)  # /GPU-yr
    assert gpu_afr["faulty_gpu"] == pytest.approx(0.0611, abs=5e-5)
    assert host_afr["host_maintenance"] == pytest.approx(0.106, abs=5e-4)
    # whole-cluster job: ~17 min per interruption gives ~90% uptime (published > 90%)
    job = ar.restart_only(total / (LLAMA3_DAYS * 24), 0.278)
    assert 0.90 < job["availability"] < 0.92


def test_kokolis_and_databricks_arithmetic():
    """docs/sources.md#rel-kokolis and docs/sources.md#rel-databricks."""
    assert 1 / (2048 * 6.5e-3) * 24 == pytest.approx(1.80, abs=5e-3)  # job MTTF, hours
    assert 1 - math.exp(-1024 * 0.01 * 30 / 365.25) == pytest.approx(0.569, abs=5e-4)


def test_cluster_reference_reduces_to_per_instance_formulas():
    lam_g, lam_h, t_g, t_h = 1e-5, 2e-5, 3e-5, 4e-5
    gpu = ar.cluster_reference(16, 8, 8, False, lam_g, t_g, lam_h, t_h, 2.0, 0.25, [(1.0, "fixed", 72.0)], 16, True)
    perm, trans = 8 * lam_g + lam_h, 8 * t_g + t_h
    a = ar.ample_pool_availability(perm, trans, 2.0, 0.25)
    assert gpu["availability_no_stockout"] == pytest.approx(a)
    assert gpu["interruptions_per_year"] == pytest.approx(16 * (perm + trans) * a * HOURS_PER_YEAR)
    assert gpu["failures_per_year"] == pytest.approx(128 * (lam_g + lam_h) * HOURS_PER_YEAR)
    # fixed repairs: singles Poisson(128 lam_g 72), host batches 8 x Poisson(16 lam_h 72)
    expected = sum(stats.poisson.pmf(j, 16 * lam_h * 72) * stats.poisson.sf(16 - 8 * j, 128 * lam_g * 72) for j in range(12))
    assert gpu["p_stockout"] == pytest.approx(expected, rel=1e-6)
    # host mode, 32-GPU instances over two 16-GPU hosts: a GPU failure swaps its host
    host = ar.cluster_reference(4, 32, 16, True, lam_g, t_g, lam_h, t_h, 2.0, 0.25, [(1.0, "fixed", 72.0)], 2, False)
    perm = 2 * (lam_h + 16 * lam_g)
    trans = 32 * t_g + 2 * t_h
    assert host["availability_no_stockout"] == pytest.approx(ar.ample_pool_availability(perm, trans, 2.0, 0.25))
    assert "p_stockout" not in host
    # two 4-GPU instances per 8-GPU host: host events hit both
    shared = ar.cluster_reference(4, 4, 8, False, lam_g, 0.0, lam_h, 0.0, 1.0, 0.0, [(1.0, "fixed", 1.0)], 0, False)
    assert shared["interruptions_per_year"] == pytest.approx(
        4 * (4 * lam_g + lam_h) * ar.ample_pool_availability(4 * lam_g + lam_h, 0, 1.0, 0) * HOURS_PER_YEAR)


def test_compound_poisson_excess_matches_a_direct_convolution():
    """Panjer's recursion against the pmf convolved term by term (batches of 1, 2, 3)."""
    means = np.array([0.0, 2.0, 0.7, 0.3])
    top = 400
    pmf = np.zeros(top)
    pmf[0] = 1.0
    for k in (1, 2, 3):
        term = np.zeros(top)
        c = np.arange(0, top // k)
        term[c * k] = stats.poisson.pmf(c, means[k])
        pmf = np.convolve(pmf, term)[:top]
    n = np.arange(top)
    for s in (0, 3, 7, 20):
        got = ar.compound_poisson_excess(means, s)
        # both are computed as 1 - P(N <= s) and E[N] - s + ...: cancellation costs ~1e-16 x the terms
        assert got["p_stockout"] == pytest.approx(pmf[s + 1:].sum(), rel=1e-12, abs=1e-13)
        assert got["mean_shortfall"] == pytest.approx(np.dot(np.maximum(n - s, 0), pmf), rel=1e-12, abs=1e-12)


def test_stockout_reference_costs_the_same_for_any_repair_time():
    """A repair of 1e9 h used to build a pmf grid as long as the repair time (minutes to
    hours); now the cost does not depend on it, and nothing is back within reach of s."""
    got = ar.batch_mginf_stockout(500 * 0.05 / 8766, 1e-3, 8, [(1.0, "fixed", 1e9)], 64)
    assert got["p_stockout"] == 1.0
    assert got["mean_shortfall"] == pytest.approx((500 * 0.05 / 8766 + 8e-3) * 1e9 - 64, rel=1e-9)


# ----------------------------------------------------------------------------- renewal function


def test_renewal_function_of_an_exponential_life_is_its_rate_times_t():
    assert ar.series_renewals(5 * 8766, 1 / 1000, []) == pytest.approx(5 * 8766 / 1000, rel=1e-4)  # 44 lives on 4,000 steps


@pytest.mark.parametrize("shape", [0.7, 2.0, 3.0])
def test_renewal_function_tends_to_the_second_order_asymptote(shape):
    """Over many lives M(t) -> t/MTTF + (c^2 - 1)/2 (Cox 1962, renewal_count)."""
    eta = 1000.0
    mttf = eta * math.gamma(1 + 1 / shape)
    cv2 = math.gamma(1 + 2 / shape) / math.gamma(1 + 1 / shape) ** 2 - 1
    t = 60 * mttf
    assert ar.series_renewals(t, 0.0, [(shape, eta)]) == pytest.approx(ar.renewal_count(t, mttf, cv2), rel=2e-4)


def test_renewal_function_starts_as_the_first_failure_share():
    """Short horizon: M(T) = F(T) + F*F(T) + ..., the first term dominating."""
    eta, t = 10_000.0, 2_000.0
    first = 1 - math.exp(-((t / eta) ** 2))
    got = ar.series_renewals(t, 0.0, [(2.0, eta)])
    assert first < got < first * (1 + 2 * first)


def test_stockout_reference_costs_the_same_for_any_spare_count():
    """Panjer's recursion runs once per spare unit; from PANJER_MAX_STEPS on it is the
    normal law (no recursion, so no cost per spare), which at a bulk in the tens of
    thousands meets the recursion to a few parts in a thousand."""
    means = np.array([0.0, 1.5e4, 2.5e3])  # mean 20,000, sd 173
    s = ar.PANJER_MAX_STEPS - 1
    exact = ar.compound_poisson_excess(means, s)
    normal = ar.compound_poisson_excess(means, s + 1)
    assert normal["p_stockout"] == pytest.approx(exact["p_stockout"], abs=5e-3)
    s = 10**6
    big = ar.compound_poisson_excess(np.array([0.0, 5e5, 2.5e5]), s)
    mean, sd = 5e5 + 2 * 2.5e5, math.sqrt(5e5 + 4 * 2.5e5)
    z = (s + 0.5 - mean) / sd
    assert big == pytest.approx({"p_stockout": stats.norm.sf(z),  # the normal law's closed form: no recursion ran
                                 "mean_shortfall": sd * stats.norm.pdf(z) - (s + 0.5 - mean) * stats.norm.sf(z)}, rel=1e-12)
    assert big["p_stockout"] == pytest.approx(0.5, abs=0.01) and big["mean_shortfall"] == pytest.approx(488.6, rel=1e-2)


def test_no_spares_in_place_cases():
    """The three bases of the no-spares reference, by hand."""
    t = 1000.0
    never = ar.no_spares_in_place(t, 1e-3, [], 1e-3, [(1.0, "fixed", 1e9)], 1e9, 2)
    assert never == {"in_place": pytest.approx((1 - math.exp(-2)) / 2, rel=1e-10), "basis": "never repaired"}
    exp = ar.no_spares_in_place(t, 0.0, [], 0.0, [(1.0, "exponential", 10.0)], 10.0, 3)
    assert exp == {"in_place": pytest.approx(1.0), "basis": "exponential"}
    long_run = ar.no_spares_in_place(t, 0.0, [(2.0, 500.0)], 1e-3, [(1.0, "fixed", 10.0)], 10.0, 2)
    assert long_run == {"in_place": pytest.approx((1 / 1.01) ** 2), "basis": "long-run"}


def test_a_zero_length_repair_law_has_a_reference():
    """Found by the every-key property: an exponential repair of mean 0 made scipy warn
    (scale 0), which the CLI turned into exit 1. Nothing is ever in repair."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = ar.batch_mginf_stockout(1e-3, 0.0, 1, [(1.0, "exponential", 0.0)], 0)
    assert got == {"p_stockout": 0.0, "mean_shortfall": 0.0}
