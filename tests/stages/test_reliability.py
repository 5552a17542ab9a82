"""Reliability stage: Monte Carlo against the closed forms, published-scale points, API.

Every statistical assertion uses a tolerance of 4 standard errors of the Monte Carlo
mean, computed from the sample, at a fixed seed. The closed forms are those of
mcengine.analytic.reliability (docs/sources.md, Reliability), in regimes where they are exact
for the kernel's semantics (see each function's docstring).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcengine.analytic import reliability as ar
from mcengine.scenario import load_scenario
from mcengine.scenario.sampling import draw_inputs
from mcengine.stages import reliability as R
from mcengine.validation.reliability import (
    KOKOLIS_MTTF_1024_GPUS_HOURS, KOKOLIS_MTTF_8_GPUS_HOURS, LLAMA3_DAYS, LLAMA3_GPUS, LLAMA3_RESTART_HOURS,
    LLAMA3_UNEXPECTED, llama3_rates, llama3_scenario, toy_scenario,
)
from mcengine.units import HOURS_PER_YEAR
from tests.conftest import assert_mc, run_lifetimes as run

H = HOURS_PER_YEAR


def std_se(sample) -> float:
    """Standard error of the sample standard deviation, from the sample's own second and
    fourth central moments: Var(s^2) ~ (m4 - s^4 (n-3)/(n-1)) / n, and SE(s) = SE(s^2) / 2s."""
    x = np.asarray(sample, dtype=float)
    n, s2 = x.size, x.var(ddof=1)
    m4 = ((x - x.mean()) ** 4).mean()
    return math.sqrt((m4 - s2**2 * (n - 3) / (n - 1)) / n) / (2 * math.sqrt(s2))


def ratio_se(a, b) -> float:
    """Delta-method standard error of mean(a) / mean(b) for two samples taken as
    independent (different scenarios; any positive coupling of their common random
    numbers only makes the true error smaller)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ma, mb = a.mean(), b.mean()
    return ma / mb * math.hypot(a.std(ddof=1) / math.sqrt(a.size) / ma, b.std(ddof=1) / math.sqrt(b.size) / mb)


# ----------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("units, crews, lam, mu", [(10, 1, 0.05, 0.5), (10, 2, 0.05, 0.5), (10, "inf", 0.05, 0.5),
                                                   (50, 3, 0.01, 0.2)])
def test_machine_repairman_availability(units, crews, lam, mu):
    s = toy_scenario(instances=units, afr=lam * H, repair_hours={"law": "exponential", "mean": 1 / mu},
                     repair_crews=crews, horizon_years=0.5)
    assert_mc(run(s, 100)["instance_availability"],
              ar.machine_repairman(units, lam, mu, math.inf if crews == "inf" else crews)["availability"])


@pytest.mark.parametrize("crews", [1, 2, "inf"])
def test_spares_and_crews_birth_death(crews):
    s = toy_scenario(instances=8, spare_gpus=2, afr=0.02 * H, repair_hours={"law": "exponential", "mean": 4},
                     repair_crews=crews, horizon_years=1.0)
    expected = ar.spares_birth_death(8, 2, math.inf if crews == "inf" else crews, 0.02, 0.25)["active_fraction"]
    assert_mc(run(s, 100)["instance_availability"], expected)


@pytest.mark.parametrize("repair", [
    {"law": "lognormal", "median": 5.0 / math.exp(0.5), "sigma": 1.0},
    {"law": "weibull", "mean": 5.0, "shape": 0.5},
    {"law": "mixture", "parts": [{"weight": 0.5, "law": "fixed", "value": 1.0}, {"weight": 0.5, "law": "exponential", "mean": 9.0}]},
])
def test_a_to_the_n_with_unlimited_crews_any_repair_law(repair):
    """No spares, ample crews: Binomial units in repair whatever the law (docs/sources.md#rel-ample-crews), so a^n."""
    mttf = 100.0
    s = toy_scenario(instances=16, instance_gpus=8, gpus_per_host=4, afr=H / mttf, repair_hours=repair, horizon_years=0.5)
    assert_mc(run(s, 100)["instance_availability"], ar.series_availability(ar.alternating_renewal(mttf, 5.0), 8))


@pytest.mark.parametrize("shape, afr, years", [(0.7, 0.5, 3.0), (2.0, 0.5, 3.0), (1.0, 1.0, 2.0), (3.0, 0.4, 4.0)])
def test_time_averaged_weibull_survival_without_repair(shape, afr, years):
    s = toy_scenario(instances=200, afr=afr, weibull_shape=shape, repair_hours=1e9, horizon_years=years)
    c = run(s, 60)
    expected = ar.weibull_mean_survival(years * H, ar.weibull_scale(H / afr, shape), shape)
    assert_mc(c["instance_availability"], expected)
    assert c["swaps_per_year"].max() == 0 and c["max_failed_gpus"].max() <= 200


def test_series_of_exponential_and_weibull_classes_without_repair():
    """Two classes of the same shape merge into one clock; a second shape and an
    exponential class stay apart: survival is the product of all."""
    comps = {"die": {"count": 2, "afr": 0.2, "weibull_shape": 2.0}, "laser": {"count": 3, "afr": 0.1, "weibull_shape": 2.0},
             "optics": {"afr": 0.3, "weibull_shape": 0.8}, "hbm": {"count": 4, "afr": 0.05}}
    years = 3.0
    s = toy_scenario(instances=200, components=comps, repair_hours=1e9, horizon_years=years)
    groups = [(2.0, ar.weibull_scale(H / 0.2, 2.0) * 2 ** -0.5), (2.0, ar.weibull_scale(H / 0.1, 2.0) * 3 ** -0.5),
              (0.8, ar.weibull_scale(H / 0.3, 0.8))]
    assert_mc(run(s, 60)["instance_availability"], ar.series_mean_survival(years * H, 4 * 0.05 / H, groups))


@pytest.mark.parametrize("swap", [2.0, {"law": "lognormal", "median": 1.5, "sigma": 0.8}])
def test_swap_only_availability_with_an_ample_pool(swap):
    """Ample pool, zero restart: each slot alternates Exp(lambda) up and one swap down."""
    afr = 5.0
    mean_swap = 2.0 if swap == 2.0 else 1.5 * math.exp(0.32)
    s = toy_scenario(instances=32, instance_gpus=8, gpus_per_host=8, spare_gpus=64, afr=afr, swap_hours=swap,
                     repair_hours=24.0, horizon_years=2.0)
    c = run(s, 100)
    assert_mc(c["instance_availability"], ar.series_availability(ar.alternating_renewal(H / afr, mean_swap), 8))
    assert c["stockout_hours"].max() == 0
    np.testing.assert_array_equal(c["swaps_per_year"], c["failures_per_year"])


def test_host_mode_swaps_whole_hosts():
    """32-GPU instances over two 16-GPU hosts, hosts swapped from an ample pool of hosts."""
    afr_gpu, afr_host, swap = 0.5, 2.0, 3.0
    s = toy_scenario(instances=16, instance_gpus=32, gpus_per_host=16, spare_gpus=16 * 16, afr=afr_gpu, host_afr=afr_host,
                     swap_hours=swap, repair_hours=48.0, replace_unit="host", horizon_years=2.0)
    c = run(s, 100)
    unit_rate = (afr_host + 16 * afr_gpu) / H
    assert_mc(c["instance_availability"], ar.series_availability(1 / (1 + unit_rate * swap), 2))
    assert np.all(c["max_failed_gpus"] % 16 == 0)


def test_restart_only_faults_exp_minus_lambda_r():
    """Transients only, fixed restart, a fault during a restart starts it over."""
    rate_gpu, restart = 40.0, 3.0  # per GPU-year, hours
    s = toy_scenario(instances=20, instance_gpus=8, gpus_per_host=8, transient_afr=rate_gpu, host_transient_afr=30.0,
                     restart_hours=restart, horizon_years=1.0)
    c = run(s, 100)
    expected = ar.restart_only((8 * rate_gpu + 30.0) / H, restart)
    assert_mc(c["instance_availability"], expected["availability"])
    assert_mc(c["interruptions_per_year"], 20 * expected["interruptions_per_hour"] * H)
    assert c["failures_per_year"].max() == 0 and c["repairs"].max() == 0


# ----------------------------------------------------------------------------- published scale


def test_llama3_interruptions_from_per_part_rates():
    """16,384 H100 in 2,048 8-GPU hosts for 54 days: 419 unexpected interruptions (docs/sources.md#rel-llama3-interruptions)."""
    c = run(llama3_scenario(8), 64, seed=3)
    count = c["interruptions_per_year"] * LLAMA3_DAYS * 24 / H
    gpu_afr, host_afr = llama3_rates()
    per_host = ar.restart_only((8 * sum(gpu_afr.values()) + sum(host_afr.values())) / H, LLAMA3_RESTART_HOURS)
    expected = 2048 * per_host["interruptions_per_hour"] * LLAMA3_DAYS * 24
    assert_mc(count, expected)
    assert_mc(count, LLAMA3_UNEXPECTED)  # the restarts (17 min in 8 days per host) barely matter
    # Poisson counts: standard deviation sqrt(mean) (about 20), within 4 standard errors of
    # the sample standard deviation
    assert abs(count.std(ddof=1) - math.sqrt(expected)) <= 4 * std_se(count)


def test_llama3_whole_cluster_job_uptime_is_about_90_percent():
    c = run(llama3_scenario(LLAMA3_GPUS), 64, seed=3)
    gpu_afr, host_afr = llama3_rates()
    rate = (LLAMA3_GPUS * sum(gpu_afr.values()) + LLAMA3_GPUS / 8 * sum(host_afr.values())) / H
    expected = ar.restart_only(rate, LLAMA3_RESTART_HOURS)
    assert_mc(c["instance_availability"], expected["availability"])
    # Not a Monte Carlo allowance (the closed-form check above is): the band is the
    # published figure, "> 90% effective training time", with its first digit (0.90-0.92)
    assert 0.90 < c["instance_availability"].mean() < 0.92


def test_kokolis_job_mttf_falls_as_one_over_n():
    """Per-GPU rate set so an 8-GPU job has MTTF 47 days: 1,024 GPUs then give 8.8 h (published ~8 h)."""
    rate = 1 / (8 * KOKOLIS_MTTF_8_GPUS_HOURS)
    per_job_year = {}
    for n, instances in ((8, 128), (64, 16), (1024, 1)):
        s = toy_scenario(instances=instances, instance_gpus=n, gpus_per_host=8, transient_afr=rate * H, horizon_years=1.0)
        per_job_year[n] = run(s, 64)["interruptions_per_year"] / instances
        assert_mc(per_job_year[n], n * rate * H)
    mttf = {n: H / x.mean() for n, x in per_job_year.items()}
    # MTTF(8) / MTTF(N) = rate(N) / rate(8) = N / 8, within 4 delta-method standard errors
    for n in (1024, 64):
        assert abs(mttf[8] / mttf[n] - n / 8) <= 4 * ratio_se(per_job_year[n], per_job_year[8]), n
    # Not a Monte Carlo allowance (its standard error is 0.4%): the paper's two figures,
    # 47 days at 8 GPUs and ~8 h at 1,024, are themselves 10% off the 1/N law they state
    # (47 x 24 x 8 / 1024 = 8.8 h), so the model's 8.8 h meets the published ~8 h only
    # within that published gap (docs/sources.md#rel-kokolis)
    assert mttf[1024] == pytest.approx(KOKOLIS_MTTF_1024_GPUS_HOURS, rel=0.15)


# ----------------------------------------------------------------------------- inputs, API


def test_uncertain_rates_and_law_parameters_are_drawn_per_lifetime():
    s = toy_scenario(instances=64, components={"gpu": {"afr": {"dist": "lognormal", "median": 2.0, "sigma": 0.5}}},
                     repair_hours={"law": "lognormal", "median": {"dist": "uniform", "low": 10, "high": 400}, "sigma": 0.3},
                     horizon_years=1.0)
    inputs = draw_inputs(s, 8, 0, 200)
    c = R.lifetimes(s, inputs, 8)
    afr = inputs["reliability.components.gpu.afr"]
    assert np.corrcoef(afr, c["failures_per_year"])[0, 1] > 0.95
    unavailability = 1 - c["instance_availability"]
    median = inputs["reliability.repair_hours.median"]
    assert np.corrcoef(afr * median, unavailability)[0, 1] > 0.9
    # exponential lives: E[failures] = afr x E[up GPU-years] (the compensator), lifetime by lifetime
    assert_mc(c["failures_per_year"] - 64 * afr * c["instance_availability"], 0.0)


# ----------------------------------------------------------------------------- shipped scenarios


def test_shipped_scenarios_zero_spares_cost_availability():
    """With no GPU pool, every permanent GPU failure waits for a repair (mean ~87 h; host
    failures draw on the host pool, not on the GPUs')."""
    for name in ("h100", "lite-h100"):
        full = run(load_scenario(name), 100)
        none = run(load_scenario(name, ["cluster.spare_gpus=0"]), 100)
        assert none["instance_availability"].mean() < full["instance_availability"].mean() - 0.002
        assert none["stockout_hours"].mean() > 100 * full["stockout_hours"].mean()
        # the pool changes how long a slot waits, not how often GPUs fail: the paired
        # difference (same seed, same trials) is within 4 of its standard errors of zero
        diff = none["failures_per_year"] - full["failures_per_year"]
        assert abs(diff.mean()) <= 4 * diff.std(ddof=1) / math.sqrt(diff.size), (name, diff.mean())


def test_machine_repairman_at_bench_scale():
    s = toy_scenario(instances=4096, afr=0.1, repair_hours={"law": "exponential", "mean": 72}, repair_crews=4,
                     horizon_years=5)
    assert_mc(run(s, 400)["instance_availability"], ar.machine_repairman(4096, 0.1 / H, 1 / 72, 4)["availability"])


@pytest.mark.parametrize("shape", [0.5, 5.0])
def test_extreme_weibull_shapes_renew_at_the_renewal_rate(shape):
    """Ample pool, zero swap: each slot is a renewal process of Weibull lives, so its
    failures follow t/MTTF + (c^2 - 1)/2 (docs/sources.md#rel-renewal and its second-order term)."""
    afr, years = 2.0, 20.0
    s = toy_scenario(instances=256, afr=afr, weibull_shape=shape, spare_gpus=256, repair_hours=1.0, horizon_years=years)
    cv2 = math.gamma(1 + 2 / shape) / math.gamma(1 + 1 / shape) ** 2 - 1
    per_slot = run(s, 40)["failures_per_year"] * years / 256
    assert_mc(per_slot, ar.renewal_count(years * H, H / afr, cv2))




# ----------------------------------------------------------------------------- the three ways to state a wear-out law


@pytest.mark.parametrize("shape, fraction", [(2.0, 0.2), (0.7, 0.3), (1.0, 0.1)])
def test_first_year_fraction_is_the_share_failed_in_the_first_year(shape, fraction):
    """No spares, no repair, one year: each unit fails at most once, so the failures per
    unit are the first-year fraction F(8,766 h) = 1 - exp(-(8766/eta)^k) itself."""
    units = 512
    s = toy_scenario(instances=units, components={"laser": {"first_year_fraction": fraction, "weibull_shape": shape}},
                     repair_hours=1e9, horizon_years=1.0)
    assert_mc(run(s, 100)["failures_per_year"] / units, fraction)


@pytest.mark.parametrize("shape", [2.0, 3.0, 0.8])
def test_mttf_hours_is_the_mean_life(shape):
    """No repair over a horizon far beyond the life: the time-averaged survival times the
    horizon is the mean life, MTTF = eta Γ(1 + 1/k) (docs/sources.md#rel-unit-conversions);
    the closed form of the finite horizon is weibull_mean_survival."""
    mttf, years = 400.0, 1.0
    s = toy_scenario(instances=256, components={"laser": {"mttf_hours": mttf, "weibull_shape": shape}},
                     repair_hours=1e9, horizon_years=years)
    eta = mttf / math.gamma(1 + 1 / shape)
    expected = ar.weibull_mean_survival(years * H, eta, shape) * years * H
    assert expected == pytest.approx(mttf, rel=1e-3 if shape < 1 else 1e-9)
    assert_mc(run(s, 100)["instance_availability"] * years * H, expected)


@pytest.mark.parametrize("shape", [0.6, 1.5, 4.0])
def test_scale_hours_is_where_one_in_e_survive(shape):
    """At t = eta every Weibull law has F = 1 - 1/e, whatever its shape: with no repair over
    a horizon of eta the failures per unit are 1 - 1/e, and the time-averaged survival is
    weibull_mean_survival (docs/sources.md#rel-renewal)."""
    units, years = 256, 0.5
    s = toy_scenario(instances=units, components={"laser": {"scale_hours": years * H, "weibull_shape": shape}},
                     repair_hours=1e9, horizon_years=years)
    out = run(s, 100)
    assert_mc(out["failures_per_year"] * years / units, 1 - math.exp(-1))
    assert_mc(out["instance_availability"], ar.weibull_mean_survival(years * H, years * H, shape))


# ----------------------------------------------------------------------------- failures by class

_CLASSES = {"die": {"afr": 2.0, "transient_afr": 3.0}, "hbm": {"count": 4, "afr": 0.5, "transient_afr": 1.0},
            "optics": {"count": 2, "afr": 1.5}}


def test_failures_by_class_are_count_x_afr_x_gpus_per_year():
    """Exponential classes, an ample pool and instant swaps: every position always holds a
    GPU, so class c fails count_c x afr_c x GPUs times a year (faults likewise with its
    transient_afr), and the host class host_afr x hosts (faults: host_transient_afr x hosts)."""
    s = toy_scenario(instances=16, instance_gpus=4, gpus_per_host=8, spare_gpus=512, components=_CLASSES,
                     host_afr=1.0, host_transient_afr=4.0, repair_hours=1.0, replace_unit="host", horizon_years=2.0)
    c = run(s, 400, seed=3)
    gpus, hosts = 64, 8
    for name, comp in _CLASSES.items():
        count = comp.get("count", 1)
        assert_mc(c[R.class_column(name, "failures_per_year")], count * comp["afr"] * gpus)
        assert_mc(c[R.class_column(name, "faults_per_year")], count * comp.get("transient_afr", 0.0) * gpus)
    assert_mc(c[R.class_column(R.HOST_CLASS, "failures_per_year")], 1.0 * hosts)
    assert_mc(c[R.class_column(R.HOST_CLASS, "faults_per_year")], 4.0 * hosts)
    assert np.all(c[R.class_column("optics", "faults_per_year")] == 0.0)


def test_failures_by_class_add_up_to_the_gpu_failures():
    """Without host failures, the classes' permanent failures (exponential, thinned and
    per-unit-clock Weibull classes, two classes sharing a shape) sum to the GPU failures
    of every lifetime."""
    comps = {"die": {"afr": 3.0}, "laser": {"afr": 2.0, "weibull_shape": 2.0},
             "bond": {"count": 2, "afr": 1.0, "weibull_shape": 2.0}, "hbm": {"afr": 2.0, "weibull_shape": 0.7}}
    s = toy_scenario(instances=8, instance_gpus=2, gpus_per_host=4, spare_gpus=4, components=comps, repair_crews=2,
                     repair_hours={"law": "exponential", "mean": 100}, swap_hours=2.0, horizon_years=1.0)
    c = run(s, 200, seed=5)
    total = sum(c[R.class_column(name, "failures_per_year")] for name in comps)
    np.testing.assert_allclose(total, c["failures_per_year"], rtol=1e-12)
    for name in comps:
        assert c[R.class_column(name, "failures_per_year")].sum() > 0
    assert np.all(c[R.class_column(R.HOST_CLASS, "failures_per_year")] == 0.0)


def test_a_field_replaceable_module_is_swapped_in_place():
    """A class with replace_unit = "module" (exponential, λ): its failure takes the GPU out
    for module_swap_hours s in place, no pool unit, no repair, then a new module (restocked
    at once: no wait for a module). With single-GPU instances and zero restart each alternates Exp(λ) up and s down:
    availability 1/(1 + λ s) (alternating renewal), module swaps N λ a per year."""
    import dataclasses

    from mcengine.scenario import Fixed
    from mcengine.validation.reliability import toy_scenario
    from tests.conftest import assert_mc, run_lifetimes

    lam_year, swap = 50.0, 20.0
    s = toy_scenario(instances=64, horizon_years=5.0, repair_hours=100.0, swap_hours=3.0,
                     components={"laser": {"afr": lam_year, "replace_unit": "module"}})
    s = dataclasses.replace(s, reliability=dataclasses.replace(s.reliability, module_swap_hours=Fixed(swap),
                                                               module_restock_hours=Fixed(0.0)))
    a = 1 / (1 + lam_year / HOURS_PER_YEAR * swap)
    cols = run_lifetimes(s, 100, seed=2)
    assert_mc(cols["instance_availability"], a)
    assert_mc(cols["module_swaps_per_year"], 64 * lam_year * a)
    assert cols["repairs"].max() == 0 and cols["swaps_per_year"].max() == 0 and cols["failures_per_year"].max() == 0


def test_modules_with_reshard_keep_the_counts_of_down():
    """Module failures, GPU failures in the middle of a module swap and pool swaps, with
    reshard: the same draws as "down" (equal counts and instance availability), and a
    capacity between the instance availability and 1."""
    import dataclasses

    from mcengine.scenario import Fixed
    from mcengine.validation.reliability import toy_scenario
    from tests.conftest import run_lifetimes

    s = toy_scenario(instances=8, instance_gpus=8, gpus_per_host=8, spare_gpus=8, horizon_years=2.0, repair_hours=200.0,
                     swap_hours=5.0, restart_hours=0.5, host_afr=1.0,
                     components={"laser": {"afr": 20.0, "replace_unit": "module"}, "die": {"afr": 5.0, "transient_afr": 3.0}})
    s = dataclasses.replace(s, reliability=dataclasses.replace(s.reliability, module_swap_hours=Fixed(30.0)))
    down = run_lifetimes(s, 40, seed=3)
    resharded = run_lifetimes(dataclasses.replace(s, cluster=dataclasses.replace(s.cluster, on_failure="reshard")), 40, seed=3)
    for name in ("instance_availability", "failures_per_year", "interruptions_per_year", "module_swaps_per_year", "repairs"):
        assert np.array_equal(down[name], resharded[name]), name
    assert (resharded["capacity_availability"] > resharded["instance_availability"]).all()
    assert (resharded["capacity_availability"] <= 1.0).all()


def test_a_class_joins_the_first_group_of_its_shape_or_opens_one():
    """Per trial: the first group in use whose shape equals the class's, else a new one
    (index ``n_wb``), whatever shapes the later, unused groups hold."""
    rng = np.random.default_rng(3)
    n, groups = 2000, 5
    shapes = rng.choice([0.5, 1.0, 2.0], (n, groups))
    n_wb = rng.integers(0, groups, n)
    shape = rng.choice([0.5, 1.0, 2.0, 3.0], n)
    got = R._group_of(shape, shapes, n_wb)
    for i in range(n):
        same = [j for j in range(n_wb[i]) if shapes[i, j] == shape[i]]
        assert got[i] == (same[0] if same else n_wb[i])
    assert R._group_of(shape[:0], shapes[:0], n_wb[:0]).size == 0
