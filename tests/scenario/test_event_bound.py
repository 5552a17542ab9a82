"""The events bound of a lifetime (issue 18, part 2): it counts the renewals an
infant-mortality law adds beyond T/MTTF (docs/sources.md#rel-renewal-bound), a host
failure as its GPUs and a host fault as the instances it restarts, so that no legal
value makes `mcengine reliability` outrun its budget; and the host's own class name is
not a component's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcengine.errors import InputError
from mcengine.scenario import load_scenario
from mcengine.scenario.checks import size_problems
from mcengine.analytic.reliability import renewals_bound, series_renewals_bound, weibull_rate_per_hour
from mcengine.units import HOURS_PER_YEAR
from mcengine.validation.reliability import toy_scenario

HORIZON_HOURS = 5 * HOURS_PER_YEAR


def simulated_renewals(shape: float, rate_per_hour: float, horizon_hours: float, units: int = 4000, seed: int = 7):
    """Mean and SEM of the renewals in [0, T] of ``units`` independent Weibull renewal processes."""
    rng = np.random.default_rng(seed)
    t, count, alive = np.zeros(units), np.zeros(units), np.ones(units, bool)
    while alive.any():
        idx = np.flatnonzero(alive)
        t[idx] += rng.weibull(shape, idx.size) / rate_per_hour
        done = t[idx] > horizon_hours
        count[idx[~done]] += 1
        alive[idx[done]] = False
    return count.mean(), count.std(ddof=1) / math.sqrt(units)


@pytest.mark.parametrize("shape, afr", [(0.05, 0.07), (0.1, 0.07), (0.3, 0.5), (0.5, 2.0), (0.7, 20.0), (1.0, 3.0), (2.0, 1.0)])
def test_the_renewal_bound_holds_and_is_within_twice_the_count(shape, afr):
    """An upper bound on M(T) (a simulated count 4 SEM above it would refute it), and
    tight: within 2x of the simulated count at every shape (T/MTTF, the old bound,
    undercounts shape 0.05 about 6,000-fold)."""
    rate = float(weibull_rate_per_hour("afr", afr, shape))
    bound = renewals_bound(rate, shape, HORIZON_HOURS)
    mean, sem = simulated_renewals(shape, rate, HORIZON_HOURS)
    assert mean - 4 * sem <= bound <= 2.0 * mean, (mean, sem, bound)


def test_the_renewal_bound_is_t_over_mttf_from_shape_one_up():
    for shape in (1.0, 1.5, 3.0, 20.0):
        rate = float(weibull_rate_per_hour("mttf_hours", 20_000.0, shape))
        assert renewals_bound(rate, shape, HORIZON_HOURS) == pytest.approx(HORIZON_HOURS / 20_000.0, rel=1e-12)
    assert renewals_bound(0.0, 0.5, HORIZON_HOURS) == 0.0


def test_shape_0_05_host_law_by_hand():
    """F(T)/(1 - F(T)) of the h100 host law at shape 0.05 (afr 0.07 read as 1/MTTF):
    eta = 8766 / 0.07 / Gamma(21), H(T) = (T / eta)^0.05, bound = e^H - 1 (Lorden's is larger)."""
    eta = HOURS_PER_YEAR / 0.07 / math.gamma(21.0)
    by_hand = math.expm1((HORIZON_HOURS / eta) ** 0.05)
    assert 2600 < by_hand < 2700
    assert renewals_bound(1.0 / eta, 0.05, HORIZON_HOURS) == pytest.approx(by_hand, rel=1e-9)


def test_an_infant_mortality_host_law_that_would_outrun_the_budget_is_exit_2(cli):
    """The case of issue 18: h100 with one 8,192-GPU instance and host_weibull_shape 0.05
    (~2,640 renewals per host in 5 years, 8 GPUs each: 2.2e7 failures) ran 77 s for one
    lifetime with instant swaps; 65,536-GPU instances ran for hours. Now refused, naming
    the host law; at shape 1 the same cluster runs."""
    sets = ["--set", "cluster.instances=1", "--set", "cluster.instance_gpus=8192", "--set", "cluster.spare_gpus=0"]
    r = cli("check", "h100", *sets, "--set", "reliability.host_weibull_shape=0.05")
    assert r.code == 2 and "reliability.host_afr" in r.err and "2.16e+07" in r.err and "weibull_shape below 1" in r.err, r.err
    assert cli("check", "h100", *sets).code == 0


def test_an_infant_mortality_gpu_class_counts_its_renewals():
    """A GPU class at shape 0.1 (afr 0.07 as 1/MTTF: ~58 renewals per GPU in 5 years where
    T/MTTF says 0.35) on 200,000 GPUs: 1.2e7 failures, refused naming its law key."""
    with pytest.raises(InputError) as err:
        toy_scenario(instances=200_000, horizon_years=5, components={"die": {"afr": 0.07, "weibull_shape": 0.1}})
    (problem,) = err.value.problems
    assert problem.key == "reliability.components.die.afr" and "per lifetime" in str(problem.value)
    toy_scenario(instances=200_000, horizon_years=5, components={"die": {"afr": 0.07, "weibull_shape": 1.0}})


def test_a_host_failure_counts_its_gpus_and_a_host_fault_its_instances():
    """h100-like hosts of 1,024 GPUs, one GPU per instance: 1,000 hosts x 1,024 GPUs x
    host_afr 2 x 5 years = 1.02e7 failures; host faults at 2/yr restart 1,024 instances
    each: 1.02e7 restarts (counted once per host event, 1e4). Each is refused alone; one
    host at the same rates is not."""
    base = dict(instances=1_024_000, gpus_per_host=1024, horizon_years=5)
    for key, rates in (("reliability.host_afr", dict(host_afr=2.0)), ("reliability.host_transient_afr", dict(host_transient_afr=2.0))):
        with pytest.raises(InputError) as err:
            toy_scenario(**base, **rates)
        assert err.value.problems[0].key == key
        s = toy_scenario(**{**base, "instances": 1000}, **rates)
        assert size_problems(s.cluster, s.reliability, s.run) == []


def test_shipped_scenarios_stay_within_the_bound():
    from mcengine.scenario import load_scenario

    for name in ("h100", "lite-h100", "lite-h100-2x-fastswap"):
        s = load_scenario(name)
        assert size_problems(s.cluster, s.reliability, s.run) == []


def test_a_component_named_host_is_exit_2(cli):
    """``failures_by_class`` keys the host's own class ``host``: a component class of that
    name would collide with it."""
    with pytest.raises(InputError) as err:
        toy_scenario(instances=4, components={"host": {"afr": 0.01}})
    (problem,) = err.value.problems
    assert problem.key == "reliability.components.host" and "any component name but 'host'" in problem.allowed
    r = cli("reliability", "h100", "--lifetimes", "1", "--set", "reliability.components.host={afr=0.01}")
    assert r.code == 2 and "reliability.components.host" in r.err and "Traceback" not in r.err and r.out == ""
    toy_scenario(instances=4, components={"host_board": {"afr": 0.01}})


# ----------------------------------------------------------------------------- a GPU's series life


def test_the_series_bound_of_one_class_is_that_of_its_merged_weibull():
    """n Weibull(k, eta) lives in series are Weibull(k, eta n^(-1/k)): the quadrature
    agrees with the closed-form bound of the merged law (shape 0.05 to 20)."""
    for shape, count, eta in ((0.05, 9, 1.0), (0.3, 4, 1e5), (1.0, 5, 2e4), (2.0, 3, 3e4), (20.0, 2, 5e4)):
        merged = renewals_bound(count ** (1.0 / shape) / eta, shape, HORIZON_HOURS)
        assert series_renewals_bound([(shape, count * eta ** -shape)], HORIZON_HOURS) == pytest.approx(merged, rel=1e-9)


def test_the_series_bound_holds_for_mixed_shapes():
    """An infant-mortality class (shape 0.3) in series with an exponential one: the bound
    is above a simulated count of the series renewals (4 SEM) and within 2x of it."""
    rng = np.random.default_rng(3)
    eta, lam, units = 2e5, 1.0 / 20_000.0, 4000
    t, count, alive = np.zeros(units), np.zeros(units), np.ones(units, bool)
    while alive.any():
        idx = np.flatnonzero(alive)
        t[idx] += np.minimum(eta * rng.weibull(0.3, idx.size), rng.exponential(1.0 / lam, idx.size))
        done = t[idx] > HORIZON_HOURS
        count[idx[~done]] += 1
        alive[idx[done]] = False
    mean, sem = count.mean(), count.std(ddof=1) / math.sqrt(units)
    bound = series_renewals_bound([(0.3, eta ** -0.3), (1.0, lam)], HORIZON_HOURS)
    assert mean - 4 * sem <= bound <= 2.0 * mean, (mean, sem, bound)


def test_nine_infant_mortality_components_in_series_are_counted_as_one_gpu_life(cli):
    """Found by the every-key property: 36,830 GPUs with 9 components of a Weibull law at
    shape 0.05 and scale 1 h. Each alone renews ~4 times in 1.43 years, but the GPU fails
    at the first of 9 (scale 9^-20 h): ~1.8e6 renewals per GPU. It ran for minutes;
    refused now, naming the class's law key."""
    assert series_renewals_bound([(0.05, 9.0)], 1.4332425916326674 * HOURS_PER_YEAR) > 1e6
    with pytest.raises(InputError) as err:
        toy_scenario(instances=36_830, horizon_years=1.4332425916326674,
                     components={"die": {"count": 9, "scale_hours": 1.0, "weibull_shape": 0.05}})
    assert err.value.problems[0].key == "reliability.components.die.scale_hours"


def test_in_host_mode_a_unit_is_a_host_and_its_gpus_renewed_whole():
    """replace_unit = "host": a GPU failure swaps its whole host, renewing its 8 GPUs. A
    die law at shape 0.3 (mttf 1e5 h) renews a GPU at most ~3.6 times in 5 years but a
    host of 8 such GPUs in series ~480 times (every renewal 8 GPUs): 250,000 GPUs are
    refused in host mode, not in gpu mode."""
    die = {"die": {"mttf_hours": 1e5, "weibull_shape": 0.3}}
    one = series_renewals_bound([(0.3, float(weibull_rate_per_hour("mttf_hours", 1e5, 0.3)) ** 0.3)], HORIZON_HOURS)
    eight = series_renewals_bound([(0.3, 8 * float(weibull_rate_per_hour("mttf_hours", 1e5, 0.3)) ** 0.3)], HORIZON_HOURS)
    assert 250_000 * one < 1e7 < 250_000 * eight
    toy_scenario(instances=31_250, instance_gpus=8, gpus_per_host=8, horizon_years=5, components=die)
    with pytest.raises(InputError) as err:
        toy_scenario(instances=31_250, instance_gpus=8, gpus_per_host=8, horizon_years=5, components=die, replace_unit="host")
    assert err.value.problems[0].key == "reliability.components.die.mttf_hours"


def test_the_series_bound_is_a_number_for_every_extreme_law():
    """Laws at the ends of the legal ranges (lives of 10^-260 h to 10^260 h): a finite or
    infinite non-negative bound, never NaN, an overflow or a warning (the suite turns
    warnings into errors)."""
    for shape in (0.05, 0.3, 1.0, 2.0, 20.0):
        for coef in (1e-300, 1e-100, 1e-15, 1e-5, 1.0, 1e5, 1e30, 1e300):
            for extra in ([], [(1.0, 1e-4)], [(0.05, 1e10)], [(20.0, 1e-200)]):
                bound = series_renewals_bound([(shape, coef), *extra], 30 * HOURS_PER_YEAR)
                assert bound >= 0.0 and not math.isnan(bound), (shape, coef, extra, bound)


def test_ten_thousand_components_at_the_highest_afr_and_shape_0_05_is_exit_2(cli):
    """Found by the every-key property: the series bound's quadrature range underflowed
    (a math domain error, exit 1); now exit 2 naming the law key."""
    r = cli("check", "h100", "--set", "cluster.instances=1", "--set", "cluster.instance_gpus=1", "--set", "cluster.spare_gpus=0",
            "--set", 'reliability.components.die={count=10000, weibull_shape=0.05, afr=8766.0}')
    assert r.code == 2 and "reliability.components.die.afr" in r.err, r.err


@pytest.mark.parametrize("sd", [818712725509829.0, 409117044357843.0, 407676799932844.0])
def test_an_extreme_shape_table_loads_or_names_its_key(sd):
    """Found by the numeric-keys property: a shape table so wide that its extreme quantiles
    rounded outside its support gave a ValueError, an OverflowError, or a refusal naming only
    the rate. The shapes are clipped to the table's support, and a refusal names the shape."""
    key = "reliability.components.die.weibull_shape"
    text = '{dist="normal", mean=10.025, sd=%r, low=0.05, high=20.0}' % sd
    try:
        load_scenario("h100", [f"{key}={text}"])
    except InputError as exc:
        assert key in str(exc)


def test_a_refusal_names_the_shape_of_the_law_that_fails_most():
    with pytest.raises(InputError) as exc:
        load_scenario("h100", ["cluster.instances=32", "cluster.instance_gpus=65536", "cluster.spare_gpus=0",
                               "reliability.host_afr=0.07", "reliability.host_weibull_shape=0.05"])
    assert "reliability.host_afr" in str(exc.value) and "reliability.host_weibull_shape = 0.05" in str(exc.value)
