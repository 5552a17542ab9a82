"""The module pool (docs/model.md#module-pool): field-replaceable modules swapped in place
from ``cluster.spare_modules``, each failed module replaced by a new one
``reliability.module_restock_hours`` later.

Module-only failure cases (no GPU, host or NIC ever fails), one GPU per instance, so an
instance's module stock-out hours are its GPU's. Every statistical assertion is within 4
standard errors of the Monte Carlo mean (from the sample, fixed seeds) of a closed form.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import integrate, stats

from mcengine.scenario import Fixed
from mcengine.units import HOURS_PER_YEAR as H
from mcengine.validation.reliability import toy_scenario
from tests.conftest import assert_mc, run_lifetimes
from tests.stages.test_reliability_units import renewals_with_dead_time, swap_restart_availability


def modules_only(gpus: int, afr: float, years: float, pool, restock_hours: float, swap_hours: float, restart_hours: float):
    """``gpus`` one-GPU instances whose only failing part is a module of ``afr`` a year."""
    s = toy_scenario(instances=gpus, instance_gpus=1, gpus_per_host=8, spare_gpus=16, horizon_years=years,
                     restart_hours=restart_hours, swap_hours=1.0, repair_hours=48.0,
                     components={"die": {"afr": 0.0}, "laser": {"afr": afr, "replace_unit": "module"}})
    r = dataclasses.replace(s.reliability, module_swap_hours=Fixed(swap_hours), module_restock_hours=Fixed(restock_hours))
    return dataclasses.replace(s, reliability=r, cluster=dataclasses.replace(s.cluster, spare_modules=pool))


def stockout_hours_closed_form(rate_per_hour: float, lead_hours: float, pool: int, horizon_hours: float) -> float:
    """Expected swap-hours waiting for a module over ``[0, T]`` with module swaps Poisson at
    ``rate_per_hour``, one-for-one restock after a fixed lead time ``L``, a pool of ``S``
    at ``t = 0`` and no order pending then. By Palm's theorem (M/D/inf orders) the orders
    pending at ``t`` are N(t) ~ Poisson(m(t)), m(t) = rate x min(t, L); the swaps waiting
    are (N(t) - S)+ (stock on hand + pending - waiting = S), so the hours are
    int_0^T E[(N(t) - S)+] dt, E[(N - S)+] = m - S + sum_{k<S} (S - k) P(N = k)."""
    def waiting(t: float) -> float:
        m = rate_per_hour * min(t, lead_hours)
        k = np.arange(pool)
        return m - pool + float(np.sum((pool - k) * stats.poisson.pmf(k, m)))
    return integrate.quad(waiting, 0.0, lead_hours)[0] + max(horizon_hours - lead_hours, 0.0) * waiting(lead_hours)


def test_module_swaps_and_availability_with_an_ample_pool():
    """An ample pool: module swaps = positions x rate x years (exactly the renewal count
    with the swap's dead time, no failure while a module is out), no GPU failure, repair or
    swap, no stock-out, and availability = the swap-and-restart closed form."""
    gpus, afr, years, swap, restart = 64, 20.0, 2.0, 10.0, 5.0
    c = run_lifetimes(modules_only(gpus, afr, years, 1000, 672.0, swap, restart), 100, seed=11)  # ~98 orders pending
    lam = afr / H
    per_gpu = renewals_with_dead_time(lam, swap, years * H)
    assert_mc(c["module_swaps_per_year"] * years, gpus * per_gpu)
    assert abs(per_gpu / (afr * years) - 1.0) < 0.03  # = rate x years, but for the dead time
    assert c["failures_per_year"].max() == 0 and c["repairs"].max() == 0 and c["swaps_per_year"].max() == 0
    assert c["module_stockout_hours"].max() == 0 and c["stockout_hours"].max() == 0
    assert_mc(c["instance_availability"], swap_restart_availability(lam, swap, restart))


@pytest.mark.parametrize("pool", [0, 1, 2])
def test_module_stockout_hours_match_the_base_stock_closed_form(pool):
    """A small pool and a long restock: the module stock-out hours are those of the
    one-for-one base-stock closed form (:func:`stockout_hours_closed_form`). The swaps are
    Poisson to within the share of modules out at once (at most ~6 of 1,024 GPUs, a bias
    below 0.6 %, under a quarter of the tolerance here)."""
    gpus, afr, years, lead = 1024, 0.02, 2.0, 2000.0
    c = run_lifetimes(modules_only(gpus, afr, years, pool, lead, 0.1, 0.0), 200, seed=12 + pool)
    want = stockout_hours_closed_form(gpus * afr / H, lead, pool, years * H)
    assert_mc(c["module_stockout_hours"], want)
    assert c["stockout_hours"].max() == 0 and c["host_stockout_hours"].max() == 0


def test_the_pool_is_bought_and_auto_is_the_gpu_pool():
    """``"auto"`` = ``spare_gpus``; no module class, no pool; the econ stage charges the
    pool's modules at ``econ.module_cost_usd`` beside the swaps'."""
    from mcengine.stages.econ import repair_usd
    from mcengine.scenario.sampling import draw_inputs

    s = modules_only(8, 1.0, 1.0, "auto", 672.0, 0.1, 0.0)
    assert s.spare_modules == 16
    assert dataclasses.replace(s, cluster=dataclasses.replace(s.cluster, spare_modules=3)).spare_modules == 3
    plain = toy_scenario(instances=8, spare_gpus=16)
    assert plain.spare_modules == 0
    inputs = draw_inputs(s, 1, 0, 2)
    cols = {"repairs": np.zeros(2), "module_swaps_per_year": np.array([2.0, 0.0])}
    cost = inputs["econ.module_cost_usd"]
    np.testing.assert_allclose(repair_usd(inputs, cols, s.spare_modules) - repair_usd(inputs, cols), 16 * cost)


def test_the_analytic_reference_counts_module_swaps():
    """The renewal reference (docs/model.md#modules) counts a module failure as an
    interruption costing one module swap + restart: with zero restart each one-GPU instance
    alternates Exp(λ) up and s down, λ / (1 + λ s) interruptions an hour, which the
    lifetimes match."""
    from mcengine.standalone.reliability import analytic_reference

    gpus, afr, years, swap = 64, 20.0, 2.0, 10.0
    s = modules_only(gpus, afr, years, 1000, 672.0, swap, 0.0)
    lam = afr / H
    ref = analytic_reference(s)
    assert ref["interruptions_per_year"] == pytest.approx(gpus * lam / (1 + lam * swap) * H, rel=1e-12)
    assert ref["availability_no_stockout"] == pytest.approx(1 / (1 + lam * swap), rel=1e-12)
    c = run_lifetimes(s, 100, seed=21)
    assert_mc(c["interruptions_per_year"], ref["interruptions_per_year"])
    assert_mc(c["instance_availability"], ref["availability_no_stockout"])


def test_under_reshard_a_gpu_waiting_for_its_module_stays_lost_until_the_module_is_in():
    """Reshard with a module pool that runs dry: a GPU that fails while its position waits
    for a module, and is replaced, is back in service when the module swap ends, not at the
    GPU's install. With losing GPUs costing nothing (every capacity 1) and no restart or
    re-layout time, an instance is down only while it lacks a GPU, and then serves in full:
    capacity availability is 1 (to rounding) while instance availability is not. A GPU given
    back at its install would leave its instance down with no GPU lost, serving nothing."""
    from mcengine.kernels import life
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages import reliability as R

    s = toy_scenario(instances=16, instance_gpus=2, gpus_per_host=2, spare_gpus=64, horizon_years=2.0, swap_hours=5.0,
                     repair_hours=24.0, components={"die": {"afr": 3.0}, "laser": {"afr": 0.5, "replace_unit": "module"}})
    r = dataclasses.replace(s.reliability, module_swap_hours=Fixed(1.0), module_restock_hours=Fixed(2000.0))
    s = dataclasses.replace(s, reliability=r, cluster=dataclasses.replace(s.cluster, spare_modules=0, on_failure="reshard"))
    n = 64
    table = R.group_arguments([R._params(s, draw_inputs(s, 4, 0, n), np.ones(s.cluster.instance_gpus + 1))])
    table["params"][:, life.P_RESHARD_HOURS] = 0.0
    out_f, out_i = life.simulate_lifetimes(np.uint64(4), 0, **table)
    assert out_f[:, 0, life.OUT_MODULE_STOCKOUT_HOURS].min() > 0 and out_i[:, 0, life.OUT_FAILURES].min() > 0
    assert out_f[:, 0, life.OUT_AVAILABILITY].max() < 0.99
    np.testing.assert_allclose(out_f[:, 0, life.OUT_CAPACITY], 1.0, rtol=0.0, atol=1e-12)
