"""Mean unavailability by control variates (mcengine.standalone.unavailability,
docs/availability-vr.md): unbiased against closed forms and against the plain mean
within 4 standard errors at fixed seeds, and its variance reduction measured."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from mcengine.scenario import load_scenario
from mcengine.scenario.load import scenario_from_dict
from mcengine.scenario.sampling import draw_inputs
from mcengine.stages import reliability as R
from mcengine.standalone import reliability as study
from mcengine.standalone import unavailability as un
from mcengine.units import HOURS_PER_YEAR
from mcengine.validation.reliability import toy_scenario

GPUS, HOST_AFR, RESTART = 8, 30.0, 3.0  # per instance (one host), host faults per host-year, hours


def restart_only_unavailability(rate_per_hour: float, horizon_hours: float, restart_hours: float) -> float:
    """Exact time-averaged unavailability over ``[0, T]`` of an instance started up whose
    Poisson faults (``rate_per_hour``) each start a fixed restart over: it is down at ``t``
    iff a fault fell in ``(t - r, t]``, with probability ``1 - exp(-rate min(t, r))``."""
    r, lam, t = restart_hours, rate_per_hour, horizon_hours
    ramp = r - (1.0 - math.exp(-lam * r)) / lam  # integral of 1 - exp(-lam s) over [0, r]
    return (ramp + (t - r) * (1.0 - math.exp(-lam * r))) / t


def toy(transient_afr) -> object:
    return toy_scenario(instances=20, instance_gpus=GPUS, gpus_per_host=GPUS, transient_afr=transient_afr,
                        host_transient_afr=HOST_AFR, restart_hours=RESTART, horizon_years=1.0)


def assert_within_4_sem(result: dict, expected: float) -> None:
    assert abs(result["mean"] - expected) < 4.0 * result["sem"], (result, expected)


def test_restart_only_matches_the_exact_finite_horizon_unavailability():
    """Lifetime controls only (fixed rates): the fault counts minus rate x units x horizon,
    exactly mean zero here (no unit is ever out of place)."""
    rate_gpu = 40.0
    result = un.unavailability(toy(rate_gpu), 2000, seed=3, input_trials=1024)
    expected = restart_only_unavailability((GPUS * rate_gpu + HOST_AFR) / HOURS_PER_YEAR, HOURS_PER_YEAR, RESTART)
    assert_within_4_sem(result, expected)
    assert abs(result["plain_mean"] - expected) < 4.0 * result["plain_sem"]
    assert result["controls"] == 2  # GPU and host faults
    assert result["variance_reduction"] > 10.0  # measured 27x: the counts carry most of it, overlapping restarts the rest


def test_drawn_rates_match_the_exact_mean_over_the_inputs():
    """Input controls too: the GPU fault rate is drawn per trial, and the exact mean is the
    closed form averaged over its uniform law."""
    low, high = 10.0, 70.0
    result = un.unavailability(toy({"dist": "uniform", "low": low, "high": high}), 2000, seed=5)

    def at(rate_gpu):
        return restart_only_unavailability((GPUS * rate_gpu + HOST_AFR) / HOURS_PER_YEAR, HOURS_PER_YEAR, RESTART)

    expected = integrate.quad(at, low, high)[0] / (high - low)
    assert_within_4_sem(result, expected)
    assert result["controls"] == 3  # GPU and host fault counts, the GPU faults' expectation
    assert result["variance_reduction"] > 10.0


def test_case_study_designs_agree_with_the_plain_mean_and_gain_tenfold():
    """The estimator against the plain mean of the same lifetimes (their difference within
    4 of the plain mean's standard errors), and the reduction measured per design
    (docs/availability-vr.md: lite-h100 over 1,000x; h100 44x, 3.9x without its host
    stock-out control)."""
    out = {name: un.unavailability(load_scenario(name), 2048, seed=0) for name in ("h100", "lite-h100")}
    for result in out.values():
        assert abs(result["mean"] - result["plain_mean"]) < 4.0 * result["plain_sem"]
    assert out["lite-h100"]["variance_reduction"] > 10.0
    assert out["h100"]["variance_reduction"] > 10.0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["h100", "lite-h100"])
def test_case_study_estimate_agrees_with_the_plain_mean_at_large_trials(name):
    """16,384 lifetimes: the estimate minus the plain mean within 4 standard errors of
    that difference (``Var(plain) - Var(estimate)``: the residual is uncorrelated with
    what the controls explain)."""
    result = un.unavailability(load_scenario(name), 16384, seed=11)
    sd = math.sqrt(result["plain_sem"] ** 2 - result["sem"] ** 2)
    assert abs(result["mean"] - result["plain_mean"]) < 4.0 * sd


def test_chunks_give_the_one_pass_estimate_and_few_trials_the_plain_mean():
    s = toy({"dist": "uniform", "low": 10.0, "high": 70.0})
    inputs = draw_inputs(s, 1, 0, 600)
    cols = R.lifetimes(s, inputs, 1)
    u, (lifetime, expected) = 1.0 - cols["instance_availability"], un.controls(s, inputs, cols)
    mu = un.input_means(s, 1, 4096)
    whole = un.ControlMoments().add(u, lifetime, expected).estimate(*mu)
    parts = un.ControlMoments()
    for start in range(0, 600, 128):
        parts.add(u[start:start + 128], lifetime[start:start + 128], expected[start:start + 128])
    chunked = parts.estimate(*mu)
    assert chunked["trials"] == whole["trials"] == 600 and chunked["controls"] == whole["controls"] == 3
    for key in ("mean", "sem", "plain_mean", "plain_sem"):
        assert math.isclose(chunked[key], whole[key], rel_tol=1e-9)
    few = un.ControlMoments().add(u[:4], lifetime[:4], expected[:4]).estimate(*mu)
    assert few["controls"] == 0 and few["mean"] == few["plain_mean"] == float(np.mean(u[:4]))
    assert math.isclose(few["variance_reduction"], 1.0)


def test_observed_counts_add_up_to_the_kernel_columns():
    """The class columns of a unit summed give back its kernel count (a whole number)."""
    s = load_scenario("lite-h100")
    inputs = draw_inputs(s, 0, 0, 64)
    cols = R.lifetimes(s, inputs, 0)
    counts = R.observed_counts(s, inputs, cols)
    years = inputs["run.horizon_years"]
    assert s.reliability.host_failure == "host"  # (so a host failure is no GPU failure)
    assert np.allclose(counts["gpu_failures"], cols["failures_per_year"] * years, rtol=0, atol=1e-9)
    assert np.allclose(counts["host_failures"], cols["host_repairs"], rtol=0, atol=1e-9)
    for key, values in counts.items():
        assert np.allclose(values, np.round(values), atol=1e-6), key
    assert np.array_equal(counts["module_failures"], cols["module_swaps_per_year"] * years)


def test_the_reliability_command_reports_the_estimate():
    body = study.lifetime_summary(toy(40.0), 64, 2)
    u = body["unavailability"]
    assert u["trials"] == 64 and u["controls"] == 2
    assert math.isclose(u["plain_mean"], 1.0 - body["instance_availability"]["mean"], rel_tol=1e-9)
    assert study.lifetime_summary(toy(40.0), 1, 2)["unavailability"] is None


def out_of_place(kind: str):
    """Clusters whose units are out of place a few percent of the time (long swaps, pools
    that run out): GPUs swapped (``gpu``), hosts swapped with their GPUs (``host``), host
    units replaced by pool hosts (``host-units``)."""
    if kind == "gpu":
        return toy_scenario(instances=40, spare_gpus=2, afr=5.0, transient_afr=20.0, swap_hours=50.0, restart_hours=1.0,
                            repair_hours=100.0, horizon_years=4.0, host_transient_afr=3.0)
    if kind == "host":
        return toy_scenario(instances=10, instance_gpus=4, gpus_per_host=4, spare_gpus=4, afr=5.0, transient_afr=20.0,
                            swap_hours=50.0, restart_hours=1.0, repair_hours=100.0, horizon_years=4.0,
                            host_transient_afr=3.0, host_afr=2.0, replace_unit="host")
    return scenario_from_dict({
        "name": "host-units", "run": {"horizon_years": 4.0},
        "cluster": {"instances": 10, "instance_gpus": 4, "gpus_per_host": 4, "spare_gpus": 40, "spare_hosts": 1},
        "reliability": {"host_afr": 3.0, "host_transient_afr": 3.0, "host_failure": "host", "host_swap_hours": 50.0,
                        "repair_hours": 200.0, "swap_hours": 50.0, "restart_hours": 1.0,
                        "components": {"gpu": {"afr": 2.0, "transient_afr": 20.0}}}})


@pytest.mark.parametrize("kind", ["gpu", "host", "host-units"])
def test_lifetime_controls_are_mean_zero_where_units_are_often_out_of_place(kind):
    """The count minus its compensator (:func:`~mcengine.stages.reliability.exposure_shortfall`):
    where units are out of place a few percent of the time, the raw count minus rate x
    units x horizon is off by over 6 standard errors, the lifetime controls are within 4."""
    s = out_of_place(kind)
    n = 2000
    inputs = draw_inputs(s, 1, 0, n)
    cols = R.lifetimes(s, inputs, 1)
    assert (cols["stockout_hours"] + cols["host_stockout_hours"]).mean() > 100.0  # (a pool runs out)
    lifetime, _ = un.controls(s, inputs, cols)
    observed, expected = R.observed_counts(s, inputs, cols), R.expected_counts(s, inputs)
    for k, name in enumerate(R.COUNT_CATEGORIES):
        sem = lifetime[:, k].std(ddof=1) / n**0.5
        if name.startswith("gpu") or (name == "host_failures" and kind != "gpu"):
            assert abs(lifetime[:, k].mean()) < 4.0 * sem, name
            assert (expected[name] - observed[name]).mean() > 6.0 * sem, name
        elif name == "host_faults":
            assert abs(lifetime[:, k].mean()) < 4.0 * sem
        else:
            assert np.all(lifetime[:, k] == 0.0), name


# ---------------------------------------------------------------- host stock-outs

HOSTS, SPARE_HOSTS, HOST_RATE, REPAIR_MEAN = 4, 1, 8.0, 300.0  # host-years: 8 failures per host-year


def host_pool(swap_hours: float = 0.0, repair=None):
    """Four one-host instances whose hosts alone fail (host units, exponential repairs
    of mean 300 h, one spare host): stock-outs in most lifetimes."""
    return scenario_from_dict({
        "name": "host-pool", "run": {"horizon_years": 1.0},
        "cluster": {"instances": HOSTS, "instance_gpus": 4, "gpus_per_host": 4, "spare_gpus": 4,
                    "spare_hosts": SPARE_HOSTS},
        "reliability": {"host_afr": HOST_RATE, "host_transient_afr": 0.0, "host_failure": "host",
                        "host_swap_hours": swap_hours,
                        "repair_hours": repair or {"law": "exponential", "mean": REPAIR_MEAN},
                        "swap_hours": 1.0, "restart_hours": 0.5,
                        "components": {"gpu": {"afr": 0.0, "transient_afr": 0.0}}}})


def exact_host_wait_hours(hosts: int, spares: int, rate: float, repair_mean: float, horizon: float) -> float:
    """Expected host-hours waiting for a host over ``[0, T]`` from every host in place, host
    swaps instant, exponential repairs without crews: the hosts in repair ``N`` are a
    birth-death chain (failures at ``rate x (hosts - (N - s)+)``, the hosts in place;
    repairs at ``N / mean``), and the hours are ``integral of E[(N(t) - s)+]``: the corner of
    ``expm([[Q, f], [0, 0]] T)`` (C. Van Loan, IEEE TAC 23(3), 1978)."""
    from scipy.linalg import expm

    k = hosts + spares + 1
    q = np.zeros((k + 1, k + 1))
    for n in range(k):
        if n + 1 < k:
            q[n, n + 1] = rate * (hosts - max(n - spares, 0))
        if n > 0:
            q[n, n - 1] = n / repair_mean
        q[n, n] = -q[n, :k].sum()
        q[n, k] = max(n - spares, 0)
    return float(expm(q * horizon)[0, k])


def test_host_stockout_control_matches_the_exact_host_pool():
    """The host stock-out hours by the stock-out control (conditional Monte Carlo) against
    the birth-death chain's exact mean, within 4 standard errors (the plain mean too). Its
    reduction is 2.0x here: hosts wait most of the year, so the failure times, which it
    leaves, carry most of the variance (docs/availability-vr.md)."""
    s = host_pool()
    n = 2000
    inputs = draw_inputs(s, 2, 0, n)
    cols = R.lifetimes(s, inputs, 2, None, un.host_log_size(s, inputs))
    control = un.stockout_control(s, inputs, cols)
    result = un.ControlMoments().add(cols["host_stockout_hours"], control[:, None], np.zeros((n, 0))).estimate(
        np.zeros(0), np.zeros((0, 0)))
    expected = exact_host_wait_hours(HOSTS, SPARE_HOSTS, HOST_RATE / HOURS_PER_YEAR, REPAIR_MEAN, HOURS_PER_YEAR)
    assert_within_4_sem(result, expected)
    assert abs(result["plain_mean"] - expected) < 4.0 * result["plain_sem"]
    assert result["controls"] == 1 and result["variance_reduction"] > 1.5


@pytest.mark.parametrize("repair", [None, {"law": "mixture", "parts": [
    {"weight": 0.3, "law": "fixed", "value": 20.0}, {"weight": 0.7, "law": "lognormal", "median": 200.0, "sigma": 0.9}]}])
def test_host_stockout_control_is_mean_zero_where_failed_hosts_wait(repair):
    """Long host swaps and waits (candidates on hosts out rejected, so failures depend on
    the repairs): the control's mean within 4 standard errors of zero, and the log changes
    no other output of the kernel."""
    s = host_pool(swap_hours=50.0, repair=repair)
    n = 2000
    inputs = draw_inputs(s, 4, 0, n)
    size = un.host_log_size(s, inputs)
    cols = R.lifetimes(s, inputs, 4, None, size)
    plain = R.lifetimes(s, inputs, 4)
    assert set(cols) - set(plain) == {"host_log"} and all(np.array_equal(plain[k], cols[k]) for k in plain)
    assert size > 0 and np.all(cols["host_log"][:, 0] >= cols["host_repairs"])
    assert np.any(cols["host_log"][:, 0] > cols["host_repairs"])  # rejected candidates logged
    control = un.stockout_control(s, inputs, cols)
    assert abs(control.mean()) < 4.0 * control.std(ddof=1) / math.sqrt(n)
    assert np.corrcoef(control, cols["host_stockout_hours"])[0, 1] > 0.5


def test_limited_mean_is_the_integral_of_the_survival():
    """``E[min(R, b)]`` in closed form (kernels/host_stockout.py) against the survival
    function integrated, for a mixture of each kind of part."""
    from mcengine.kernels.host_stockout import limited_mean, survival

    s = host_pool(repair={"law": "mixture", "parts": [
        {"weight": 0.2, "law": "fixed", "value": 2.0}, {"weight": 0.3, "law": "exponential", "mean": 40.0},
        {"weight": 0.5, "law": "lognormal", "median": 72.0, "sigma": 0.9}]})
    law = R.host_repair_laws(s, draw_inputs(s, 0, 0, 1))[0][0]
    for b in (0.5, 2.0, 30.0, 72.0, 500.0, 5000.0):
        quad = integrate.quad(lambda u: survival(law, u), 0.0, b, points=[2.0], limit=200)[0]
        assert math.isclose(limited_mean(law, b), quad, rel_tol=1e-9), b
    assert limited_mean(law, 0.0) == 0.0 and survival(law, 0.0) == 1.0
