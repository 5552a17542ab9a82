"""Failures charged to the unit that fails (docs/model.md#host-units, #per-unit): hosts as
units with their own pool and repairs, classes counted per NIC or per host.

Every statistical assertion is within 4 standard errors of the Monte Carlo mean (from the
sample, fixed seeds) of a closed form exact for the kernel's semantics.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import stats

from mcengine.scenario import Fixed
from mcengine.validation.reliability import toy_scenario
from mcengine.units import HOURS_PER_YEAR as H
from tests.conftest import assert_mc, run_lifetimes


def host_units(s, spare_hosts: int, host_swap_hours: float):
    """``s`` with reliability.host_failure = "host", the host pool and swap time given."""
    r = dataclasses.replace(s.reliability, host_failure="host", host_swap_hours=Fixed(host_swap_hours))
    return dataclasses.replace(s, reliability=r, cluster=dataclasses.replace(s.cluster, spare_hosts=spare_hosts))


def renewals_with_dead_time(lam: float, dead: float, horizon: float) -> float:
    """E[N(T)] of failures at rate ``lam`` while up, each followed by ``dead`` hours in
    which none can occur (the host is out): the k-th failure is at Gamma(k, lam) + (k - 1)
    dead, so E[N(T)] = sum_k P(Gamma(k, lam) <= T - (k - 1) dead)."""
    k = np.arange(1, 2000)
    room = horizon - (k - 1) * dead
    return float(np.sum(np.where(room > 0, stats.gamma.cdf(np.maximum(room, 0.0), k, scale=1.0 / lam), 0.0)))


def swap_restart_availability(lam: float, dead: float, restart: float) -> float:
    """Long-run availability of one host per instance: up Exp(lam); a failure takes it out
    for ``dead`` hours (no failure then), then a fixed restart, which a failure starts over
    (with its dead time): E[D] = (dead + (1 - e^{-lam r}) / lam) / e^{-lam r}."""
    survive = math.exp(-lam * restart)
    down = (dead + (1.0 - survive) / lam) / survive
    return (1.0 / lam) / (1.0 / lam + down)


def test_host_only_failures_repair_hosts_not_gpus():
    """Components never fail, an ample host pool: host repairs = hosts x host AFR x years
    (to first order; exactly the renewal count with the swap's dead time), no GPU repair,
    swap or failure, and availability = the host swap-and-restart closed form."""
    hosts, afr, swap, restart, years = 32, 20.0, 10.0, 5.0, 2.0
    s = toy_scenario(instances=hosts, instance_gpus=8, gpus_per_host=8, spare_gpus=8, host_afr=afr,
                     restart_hours=restart, swap_hours=1.0, repair_hours=48.0, horizon_years=years,
                     components={"die": {"afr": 0.0, "transient_afr": 0.0}})
    c = run_lifetimes(host_units(s, spare_hosts=hosts, host_swap_hours=swap), 100, seed=3)
    lam = afr / H
    per_host = renewals_with_dead_time(lam, swap, years * H)
    assert_mc(c["host_repairs"], hosts * per_host)
    assert abs(hosts * per_host / (hosts * afr * years) - 1.0) < 0.03  # = hosts x AFR x years, but for the dead time
    assert c["repairs"].max() == 0 and c["swaps_per_year"].max() == 0 and c["failures_per_year"].max() == 0
    np.testing.assert_array_equal(c["host_swaps_per_year"] * years, c["host_repairs"])
    assert c["host_stockout_hours"].max() == 0 and c["stockout_hours"].max() == 0
    assert_mc(c["instance_availability"], swap_restart_availability(lam, swap, restart))


def test_without_host_spares_a_failed_host_waits_for_its_repair():
    """No host pool, a fixed host repair: each failed host waits the repair (instance-hours
    waiting for a host = failures x repair, but for the last ones cut at the horizon), then
    the swap and restart; no GPU is repaired."""
    hosts, afr, swap, repair, restart, years = 32, 10.0, 2.0, 30.0, 1.0, 2.0
    s = toy_scenario(instances=hosts, instance_gpus=8, gpus_per_host=8, spare_gpus=0, host_afr=afr,
                     restart_hours=restart, swap_hours=1.0, repair_hours=repair, horizon_years=years,
                     components={"die": {"afr": 0.0}})
    c = run_lifetimes(host_units(s, spare_hosts=0, host_swap_hours=swap), 100, seed=4)
    lam = afr / H
    assert_mc(c["host_repairs"], hosts * renewals_with_dead_time(lam, repair + swap, years * H))
    assert np.all(c["host_stockout_hours"] <= c["host_repairs"] * repair + 1e-9)
    assert np.all(c["host_stockout_hours"] >= (c["host_repairs"] - hosts) * repair - 1e-9)
    assert c["repairs"].max() == 0 and c["stockout_hours"].max() == 0
    assert_mc(c["instance_availability"], swap_restart_availability(lam, repair + swap, restart))


def test_per_nic_faults_by_hand():
    """A class per NIC of 4 GPUs, transient only, zero restart: every fault interrupts its
    instance, so interruptions a year = NICs x rate (128 GPUs = 32 NICs)."""
    rate = 3.0
    s = toy_scenario(instances=16, instance_gpus=8, gpus_per_host=8, horizon_years=1.0,
                     components={"network": {"per": "nic", "transient_afr": rate}})
    s = dataclasses.replace(s, cluster=dataclasses.replace(s.cluster, gpus_per_nic=4))
    c = run_lifetimes(s, 200, seed=5)
    assert_mc(c["interruptions_per_year"], 32 * rate)
    assert_mc(c["failures_by_class.network.faults_per_year"], 32 * rate)


def test_a_nic_serving_two_instances_restarts_both():
    """NICs of 4 GPUs over 2-GPU instances: each fault interrupts both its instances
    (zero restart), so interruptions a year = 2 x NICs x rate, faults = NICs x rate."""
    rate = 3.0
    s = toy_scenario(instances=32, instance_gpus=2, gpus_per_host=8, horizon_years=1.0,
                     components={"network": {"per": "nic", "transient_afr": rate}})
    s = dataclasses.replace(s, cluster=dataclasses.replace(s.cluster, gpus_per_nic=4))
    c = run_lifetimes(s, 200, seed=8)
    assert_mc(c["interruptions_per_year"], 2 * 16 * rate)
    assert_mc(c["failures_by_class.network.faults_per_year"], 16 * rate)


def test_per_nic_failures_swap_the_nic_in_place():
    """Permanent NIC failures (rate f per NIC) are NIC swaps of s hours in place: NIC swaps a
    year = NICs x f, no GPU repair or swap; an instance of 2 NICs is down while any swap is
    on, an M/D/inf queue empty with probability exp(-2 f s) (zero restart)."""
    f, swap = 40.0, 30.0
    s = toy_scenario(instances=16, instance_gpus=8, gpus_per_host=8, horizon_years=1.0, spare_gpus=8,
                     components={"network": {"per": "nic", "afr": f}})
    s = dataclasses.replace(s, cluster=dataclasses.replace(s.cluster, gpus_per_nic=4),
                            reliability=dataclasses.replace(s.reliability, nic_swap_hours=Fixed(swap)))
    c = run_lifetimes(s, 200, seed=6)
    assert_mc(c["nic_swaps_per_year"], 32 * f)
    assert_mc(c["failures_by_class.network.failures_per_year"], 32 * f)
    assert c["repairs"].max() == 0 and c["swaps_per_year"].max() == 0 and c["failures_per_year"].max() == 0
    assert_mc(c["instance_availability"], math.exp(-2 * f / H * swap))


def test_per_host_classes_are_host_failures_and_faults():
    """A class per host adds to the host's rates: host faults a year = hosts x (host's own +
    class) rate, split between them by rate."""
    hosts, own, extra = 16, 4.0, 12.0
    s = toy_scenario(instances=hosts, instance_gpus=8, gpus_per_host=8, horizon_years=1.0, host_transient_afr=own,
                     components={"psu": {"per": "host", "transient_afr": extra}})
    c = run_lifetimes(s, 200, seed=7)
    total = c["failures_by_class.host.faults_per_year"] + c["failures_by_class.psu.faults_per_year"]
    assert_mc(total, hosts * (own + extra))
    assert_mc(c["failures_by_class.psu.faults_per_year"], hosts * extra)
    assert_mc(c["interruptions_per_year"], hosts * (own + extra))


def test_bad_combinations_name_the_key():
    """A class per host with a wear-out law, a module per NIC: refused, each naming its key."""
    import pytest

    from mcengine.errors import InputError
    from mcengine.scenario import load_scenario

    cases = {
        "reliability.components.die.weibull_shape": ['reliability.components.die.per="host"', "reliability.components.die.weibull_shape=2.0"],
        "reliability.components.laser.per": ['reliability.components.laser.per="nic"'],
    }
    for key, overrides in cases.items():
        with pytest.raises(InputError) as err:
            load_scenario("lite-h100" if "laser" in key else "h100", overrides)
        assert key in str(err.value), (key, str(err.value))


def test_reshard_counts_a_gpu_out_for_two_reasons_once():
    """Reshard (docs/model.md#reshard) with hosts as units of one GPU, 2-GPU instances that
    serve in full with one GPU lost and nothing with two (capacity 1, 1, 0), zero restart
    and re-layout: a GPU is out while its host is out (Exp(λ_h) up, s_h out: a share
    p_h = λ_h s_h / (1 + λ_h s_h)) or its own slot is in a swap (p_g likewise; a GPU fails
    inside a host that is out too), independently, so out with q = 1 - (1 - p_h)(1 - p_g) and
    the capacity availability is 1 - q^2. Counted twice, a GPU failing in a host already out
    would take its instance to 0 (here 1 - 0.181 instead of 1 - 0.130)."""
    from mcengine.kernels import life
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.reliability import _params, group_arguments

    out_hours, p = 50.0, 0.2
    afr = p / (1 - p) / out_hours * H  # λ s = p / (1 - p)
    s = toy_scenario(instances=64, instance_gpus=2, gpus_per_host=1, spare_gpus=128, host_afr=afr, swap_hours=out_hours,
                     repair_hours=10.0, horizon_years=5.0, components={"die": {"afr": afr}})
    s = host_units(s, spare_hosts=128, host_swap_hours=out_hours)
    args = group_arguments([_params(s, draw_inputs(s, 9, 0, 50))])
    out_f, _ = life.simulate_lifetimes(np.uint64(9), 0, **{**args, "reshard": True, "capacity": np.array([1.0, 1.0, 0.0])})
    q = 1 - (1 - p) ** 2
    assert_mc(out_f[:, 0, life.OUT_CAPACITY], 1 - q * q)
