"""`mcengine reliability`'s body: lifetimes summarised beside the renewal references."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcengine.analytic import reliability as ar
from mcengine.errors import InputError
from mcengine.summaries import BLOCK_TRIALS
from mcengine.scenario import load_scenario
from mcengine.standalone import reliability as study
from mcengine.validation.reliability import (
    toy_scenario,
)
from mcengine.units import HOURS_PER_YEAR
from tests.conftest import assert_mc, run_lifetimes as run, with_threads

H = HOURS_PER_YEAR


def test_lifetime_study_body():
    s = toy_scenario(instances=8, instance_gpus=4, gpus_per_host=4, spare_gpus=4, afr=2.0, transient_afr=3.0,
                     repair_hours=48.0, swap_hours=1.0, restart_hours=0.25)
    body = study.lifetime_summary(s, 300, 2)
    for key in ("instance_availability", "failures_per_year", "interruptions_per_year", "swaps_per_year",
                "stockout_hours", "repairs_per_year", "max_failed_gpus"):
        assert set(body[key]) == {"mean", "std", "sem", "p01", "p05", "p50", "p95", "p99", "min", "max"}
    a = body["instance_availability"]
    assert a["min"] <= a["p01"] <= a["p05"] <= a["p50"] <= a["p95"] <= a["p99"] <= a["max"] <= 1.0
    assert isinstance(body["events"], int) and body["events"] > 0
    assert set(body["analytic"]) >= {"availability_no_stockout", "interruptions_per_year", "failures_per_year"}
    cols = run(s, 300, seed=2)
    assert body["instance_availability"]["mean"] == pytest.approx(cols["instance_availability"].mean(), rel=1e-12)
    assert body["events"] == int(cols["events"].sum())
    assert body["cluster"]["active_gpus"] == 32


def test_study_quantiles_of_availability_are_exact_to_the_sketch_near_one():
    s = load_scenario("lite-h100")
    body = study.lifetime_summary(s, 200, 0)
    values = run(s, 200, seed=0)["instance_availability"]
    for key, q in (("p05", 0.05), ("p50", 0.5), ("p95", 0.95)):
        assert abs(body["instance_availability"][key] - np.quantile(values, q)) < 2e-3 * (1 - values.min())


@pytest.mark.parametrize("lifetimes", [0, -3, 1.5, True, "10"])
def test_bad_lifetime_count_is_an_input_error(lifetimes):
    with pytest.raises(InputError) as err:
        study.lifetime_summary(toy_scenario(instances=1), lifetimes, 0)
    assert err.value.problems[0].key == "--lifetimes"
    assert "positive integer" in err.value.problems[0].allowed


@pytest.mark.parametrize("seed", [-1, 2**64, 1.0])
def test_bad_seed_is_an_input_error(seed):
    with pytest.raises(InputError):
        study.lifetime_summary(toy_scenario(instances=1), 2, seed)


@pytest.mark.parametrize("host_units", [False, True])
def test_study_identical_at_1_and_2_threads_and_any_chunking(monkeypatch, host_units):
    """Also with host units, whose host log feeds the unavailability's stock-out control."""
    s = toy_scenario(instances=4, instance_gpus=2, gpus_per_host=4, spare_gpus=2, afr=3.0, transient_afr=2.0,
                     weibull_shape=1.7, host_afr=1.0, repair_hours={"law": "exponential", "mean": 200}, repair_crews=1,
                     swap_hours=1.0, restart_hours=0.5)
    if host_units:
        s = load_scenario("h100", ["reliability.host_afr=5", "cluster.instances=4", "cluster.spare_hosts=1"])
    one = with_threads(1, lambda: study.lifetime_summary(s, 2100, 5))
    if host_units:
        assert one["unavailability"]["controls"] == 7  # six counts and the stock-out control
    calls = []
    simulate = study.lifetimes_of

    def recording(scenarios, inputs, seed, capacities, host_log):
        calls.append(inputs[0].n)
        return simulate(scenarios, inputs, seed, capacities, host_log)

    monkeypatch.setattr(study, "lifetimes_of", recording)
    monkeypatch.setattr(study, "CHUNK_LIFETIMES", BLOCK_TRIALS)
    two = with_threads(2, lambda: study.lifetime_summary(s, 2100, 5))
    assert one == two
    assert calls == [1024, 1024, 52]  # memory per call bounded by the chunk, whatever the sample


def test_ample_pool_first_order_formula_for_the_shipped_h100():
    """h100 with an ample pool: MC availability at the first-order renewal formula."""
    s = load_scenario("h100", ["cluster.spare_gpus=1024"])
    c = run(s, 400)
    ref = study.analytic_reference(s)
    assert_mc(c["instance_availability"], ref["availability_no_stockout"])
    assert_mc(c["failures_per_year"], ref["failures_per_year"])
    assert_mc(c["interruptions_per_year"], ref["interruptions_per_year"])
    assert c["stockout_hours"].max() == 0


def test_stockout_shortfall_with_host_batches_and_ample_crews():
    """Single-GPU instances in 4-GPU hosts: GPU failures singly, host failures in batches
    of 4; waiting instance-hours = T E[(N - s)^+] with N the M^X/G/inf units in repair.
    The reference holds exactly while the pool holds; while short, waiting slots do not
    fail, so the MC mean sits a little below it (allowance: 5%, for p_stockout ~ 3%)."""
    years, spares = 2.0, 12
    repair = {"law": "lognormal", "median": 100.0, "sigma": 0.8}
    s = toy_scenario(instances=64, gpus_per_host=4, spare_gpus=spares, afr=2.0, host_afr=3.0, repair_hours=repair,
                     horizon_years=years)
    shortfall = run(s, 200, seed=3)["stockout_hours"] / (years * H)
    ref = ar.batch_mginf_stockout(64 * 2.0 / H, 16 * 3.0 / H, 4, [(1.0, "lognormal", 100.0, 0.8)], spares)
    assert study.analytic_reference(s)["p_stockout"] == pytest.approx(ref["p_stockout"])
    sem = shortfall.std(ddof=1) / math.sqrt(shortfall.size)
    assert ref["mean_shortfall"] * 0.95 - 4 * sem <= shortfall.mean() <= ref["mean_shortfall"] + 4 * sem


def test_the_horizon_reference_meets_a_wear_out_cluster():
    """gpu mode, ample pool, zero swap: each slot renews on its series life (a host failure
    renews its GPUs), so the failures per year are active x M(T) / years; the long-run
    reference overstates a young wear-out class and says so in its assumptions."""
    s = toy_scenario(instances=64, instance_gpus=4, gpus_per_host=4, spare_gpus=256, horizon_years=3.0,
                     components={"laser": {"first_year_fraction": 0.05, "weibull_shape": 2.5},
                                 "die": {"afr": 0.2}}, host_afr=0.1, repair_hours=24.0)
    ref = study.analytic_reference(s)
    assert ref["failures_per_year_over_horizon"] < ref["failures_per_year"]
    assert "renewal function" in ref["assumptions"] and "laser" in ref["weibull_classes"]
    assert_mc(run(s, 200)["failures_per_year"], ref["failures_per_year_over_horizon"])


def test_assumptions_are_stated_without_weibull_classes():
    ref = study.analytic_reference(load_scenario("h100"))
    assert ref["weibull_classes"] == {} and "failures_per_year_over_horizon" not in ref
    assert ref["assumptions"].startswith("Long-run renewal rates")


def test_the_horizon_interruptions_meet_a_wear_out_cluster():
    """The interruption and availability references redone at the horizon's failure rate."""
    s = toy_scenario(instances=64, instance_gpus=4, gpus_per_host=4, spare_gpus=256, horizon_years=3.0,
                     components={"laser": {"first_year_fraction": 0.05, "weibull_shape": 2.5},
                                 "die": {"afr": 0.2, "transient_afr": 0.3}}, host_afr=0.1, repair_hours=24.0,
                     swap_hours=0.5, restart_hours=0.25)
    ref = study.analytic_reference(s)
    out = run(s, 200)
    assert_mc(out["interruptions_per_year"], ref["interruptions_per_year_over_horizon"])
    assert_mc(out["instance_availability"], ref["availability_no_stockout_over_horizon"])
    assert ref["interruptions_per_year_over_horizon"] < ref["interruptions_per_year"]


# ----------------------------------------------------------------------------- no spares, unlimited crews


def test_the_never_repaired_reference_is_the_time_averaged_survival():
    """The issue's hang: no spares, a repair of 1e9 h (nothing comes back within the
    horizon), single-GPU instances. Reference = (1/T) ∫ S(t) dt, S the GPU's series
    survival, times the faults' restarts; the MC meets it within 4 SEM."""
    s = load_scenario("h100", ["cluster.instances=500", "cluster.instance_gpus=1", "cluster.gpus_per_host=1",
                               "cluster.spare_gpus=0", "reliability.host_afr=0", "reliability.host_transient_afr=0",
                               'reliability.repair_crews="inf"', "reliability.repair_hours=1e9",
                               'reliability.components.network.per="gpu"'])
    ref = study.analytic_reference(s)
    lam = (0.025 + 5 * 0.002 + 0.002 + 0.004) / H  # h100's permanent classes (the network's per GPU here)
    faults = (0.044 + 5 * 0.004 + 0.005 + 0.0105) / H
    t = 5 * H
    survival = (1 - math.exp(-lam * t)) / (lam * t)
    assert ref["instance_availability"] == pytest.approx(survival / (1 + faults * 0.25), rel=1e-9)
    assert ref["instance_availability_basis"].startswith("no spares, nothing repaired")
    assert_mc(run(s, 40)["instance_availability"], ref["instance_availability"])


def test_the_no_spares_reference_with_exponential_repairs_is_exact():
    """No spares, unlimited crews, exponential lives and repairs, zero swap and restart:
    each GPU is in place with p(t) = a + (1 - a) e^-(λ+μ)t, the instance up with p(t)^n;
    the MC meets the time average within 4 SEM."""
    lam, mean_repair, n, years = 2.0 / H, 500.0, 4, 1.0
    s = toy_scenario(instances=64, instance_gpus=n, afr=2.0, repair_hours={"law": "exponential", "mean": mean_repair},
                     horizon_years=years)
    ref = study.analytic_reference(s)
    mu = 1 / mean_repair
    a = mu / (lam + mu)
    grid = np.linspace(0, years * H, 200_001)
    expected = np.trapezoid((a + (1 - a) * np.exp(-(lam + mu) * grid)) ** n, grid) / (years * H)
    assert ref["instance_availability"] == pytest.approx(expected, rel=1e-8)
    assert "exponential lives and repairs" in ref["instance_availability_basis"]
    assert_mc(run(s, 200, seed=5)["instance_availability"], ref["instance_availability"])


def test_the_reference_says_ample_spares_when_there_are_spares():
    ref = study.analytic_reference(load_scenario("h100", ["cluster.spare_gpus=64"]))
    assert ref["instance_availability"] == ref["availability_no_stockout"]
    assert ref["instance_availability_basis"].startswith("ample spares")


# ----------------------------------------------------------------------------- reshard


def _no_spares_reshard(n: int, **over):
    """No spares, unlimited crews, exponential lives (a = 1/(1 + λ r) ~ 0.9) and
    repairs, zero swap, restart and faults: each GPU in place independently."""
    import dataclasses

    s = toy_scenario(instances=64, instance_gpus=n, gpus_per_host=n, afr=2.0,
                     repair_hours={"law": "exponential", "mean": 500.0}, **over)
    return dataclasses.replace(s, cluster=dataclasses.replace(s.cluster, on_failure="reshard"))


def _capacity_closed_form(s, n: int, table: np.ndarray) -> float:
    """Σ_k C(n,k) a^k (1-a)^(n-k) table[n - k] time-averaged over the horizon (each GPU in
    place with p(t) = a + (1 - a) e^-(λ+μ)t, started new; λ = 2 per year, μ = 1/500 h)."""
    from scipy import stats as sst

    lam, mu, t = 2.0 / H, 1 / 500.0, H
    a = mu / (lam + mu)
    grid = np.linspace(0, t, 20_001)
    p = a + (1 - a) * np.exp(-(lam + mu) * grid)
    k = np.arange(n + 1)
    share = np.array([np.dot(sst.binom.pmf(k, n, 1 - q), table) for q in p])
    return float(np.trapezoid(share, grid) / t)


def _check_reshard(s, n: int, table: np.ndarray, margin: float) -> None:
    expected = _capacity_closed_form(s, n, table)
    ref = study.analytic_reference(s)
    assert ref["capacity_availability"] == pytest.approx(expected, rel=1e-6)
    cols = run(s, 200, seed=7)
    assert_mc(cols["capacity_availability"], expected)
    assert (cols["capacity_availability"] >= cols["instance_availability"]).all()
    assert cols["capacity_availability"].mean() > cols["instance_availability"].mean() + margin  # not vacuous


def test_reshard_meets_the_binomial_closed_form():
    """The issue's check: capacity availability = Σ_k C(n,k) a^k (1-a)^(n-k) thr(k)/thr(n)
    with thr from the capacity table, here time-averaged over the horizon. The re-layout
    time is set to 0 (the closed form has none); the MC meets it within 4 SEM."""
    from mcengine.scenario import Fixed
    from mcengine.pipeline import reshard_capacity
    import dataclasses

    s = _no_spares_reshard(8)
    s = dataclasses.replace(s, cluster=dataclasses.replace(s.cluster, reshard_hours=Fixed(0.0)))
    table = reshard_capacity(s)
    assert table[0] == 1.0 and 0.0 < table[1] < 1.0 and table[-1] == 0.0
    _check_reshard(s, 8, table, 0.1)


def test_reshard_capacity_of_two_gpus_is_the_planner_throughput_on_one_over_two():
    """Issue #28: a model that fits one GPU (Llama-3-8B) on instances of 2 under continuous
    serving keeps, with one GPU lost, the planner's own throughput on 1 GPU divided by its
    throughput on 2 (both by the cost objective with the cluster's weight at the median),
    to the bit; the binomial closed form with that table holds."""
    from mcengine.scenario import Fixed
    from mcengine.scenario.dists import Uniform
    from mcengine.scenario.sampling import quantile_inputs
    from mcengine.stages import roofline
    from mcengine.pipeline import planning_weight, reshard_capacity
    import dataclasses

    s = _no_spares_reshard(2)
    card = load_scenario("h100", ('workload.model="llama-3-8b"',)).workload.model
    # the FP8-fit efficiencies of tests.conftest.FP8_FIT_EFFICIENCIES: at the bf16 table's, TP2 holds
    # more than twice one GPU's batch and one GPU keeps 0.4998 of the pair, under its own replica's half
    s = dataclasses.replace(s, cluster=dataclasses.replace(s.cluster, reshard_hours=Fixed(0.0)),
                            workload=dataclasses.replace(s.workload, model=card, serving="continuous",
                                                         compute_efficiency=Uniform(0.33, 0.57), memory_efficiency=Uniform(0.52, 0.72)))
    one = dataclasses.replace(s, cluster=dataclasses.replace(s.cluster, instance_gpus=1, gpus_per_host=1))
    median = quantile_inputs(s, 0.5)
    k = planning_weight(s, median)
    thr_1 = roofline.throughput(one, median, k)["tokens_per_s_instance"][0]
    thr_2 = roofline.throughput(s, median, k)["tokens_per_s_instance"][0]
    table = reshard_capacity(s)
    assert table.tolist() == [1.0, min(1.0, thr_1 / thr_2), 0.0]
    assert 0.5 <= table[1] < 1.0  # one GPU of two keeps at least half: its own replica
    _check_reshard(s, 2, table, 0.05)


def test_down_leaves_every_number_as_it_was_and_reshard_only_adds_capacity():
    """on_failure = "down" (the default) is today's kernel: capacity = instance
    availability, bit for bit. "reshard" makes the same draws (every short path off, the
    general passes only), so its instance availability, failures and interruptions are
    those of "down" too: only the served capacity differs."""
    s = toy_scenario(instances=16, instance_gpus=8, gpus_per_host=8, spare_gpus=8, afr=3.0, transient_afr=2.0,
                     host_afr=1.0, repair_hours=100.0, swap_hours=2.0, restart_hours=0.25)
    import dataclasses

    down = run(s, 50, seed=4)
    assert np.array_equal(down["capacity_availability"], down["instance_availability"])
    resharded = run(dataclasses.replace(s, cluster=dataclasses.replace(s.cluster, on_failure="reshard")), 50, seed=4)
    for name in ("instance_availability", "failures_per_year", "interruptions_per_year", "repairs", "stockout_hours"):
        assert np.array_equal(down[name], resharded[name]), name
    assert (resharded["capacity_availability"] > down["capacity_availability"]).all()
