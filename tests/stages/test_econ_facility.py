"""Econ stage with the switched fabric, the data hall and the cost of capital
(docs/model.md#fabric, #facility, #finance): each against a hand computation, and off
by default (no new column, no new breakdown part)."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine.analytic import finance
from mcengine.errors import InputError
from mcengine.scenario import load_scenario
from mcengine.scenario.sampling import draw_inputs, quantile_inputs
from mcengine.stages.econ import BREAKDOWN_COLUMN, BREAKDOWN_PARTS, COLUMNS, breakdown_parts, economics

from .test_econ import FIXED_ECON, _columns

# 40 GPU slots (32 active) in 5 hosts of 8, one NIC each: 40 endpoints; 16-port switches
# serve 16 in one tier, 2 x 8 x 8 = 128 in two; every port priced as quoted ("switch").
FABRIC = ["econ.fabric_model=fat_tree", 'econ.port_speed="switch"', "econ.switch_radix=16", "econ.nic_cost_usd=800", "econ.switch_port_cost_usd=1000",
          "econ.pluggable_cost_usd=500", "econ.switch_port_w=10", "econ.pluggable_w=10"]
HALL = ["econ.facility=true", "econ.host_power_per_h100_equivalent_w=500", "econ.facility_usd_per_mw=10e6", "econ.rack_cost_usd=20000",
        "econ.liquid_cooling_usd_per_mw=2.5e6", "econ.air_cooling_usd_per_mw=1.5e6", "econ.air_cooling_limit_kw=30",
        "econ.air_pue=1.4", "econ.liquid_pue=1.15", "econ.hosts_per_rack=4", "econ.facility_life_years=15",
        "econ.floor_m2_per_rack=5", "econ.floor_usd_per_m2=2000"]
HOURS = 5 * 8766.0


def _run(overrides):
    s = load_scenario("h100", FIXED_ECON + overrides)
    return s, economics(s, quantile_inputs(s), _columns([3000.0], [0.99], [12], [1000.0]))


def _mtok(usd):
    return usd / (3_960.0 * HOURS * 3600.0 / 1e6)


def test_off_by_default_no_new_columns_or_parts():
    s, got = _run([])
    assert tuple(got) == COLUMNS and breakdown_parts(s) == BREAKDOWN_PARTS
    s, explicit = _run(["econ.wacc=0", "econ.facility=false", 'econ.fabric_model="per_gpu"'])
    assert tuple(explicit) == COLUMNS
    for name in COLUMNS:
        np.testing.assert_array_equal(explicit[name], got[name], err_msg=name)


def test_switch_tiers_by_hand():
    """Two tiers: 3 switch ports with their pluggables and one at the NIC, 3 x (1,000 + 500)
    + 500 = $5,000 per endpoint; capex 40 x (24,000 + 4,000 + 800 NIC + 5,000) = $1,352,000."""
    s, got = _run(FABRIC)
    assert breakdown_parts(s) == (*BREAKDOWN_PARTS, "switch_tiers")
    assert got["scale_out_tiers"][0] == 2.0 and got["scale_up_tiers"][0] == 1.0
    assert got["capex_usd"][0] == pytest.approx(1_352_000.0, rel=1e-12)
    assert got[BREAKDOWN_COLUMN.format("switch_tiers")][0] == pytest.approx(_mtok(200_000.0), rel=1e-12)
    assert got[BREAKDOWN_COLUMN.format("network")][0] == pytest.approx(_mtok(32_000.0), rel=1e-12)
    total = 1_352_000.0 + 122_724.0 + 6_000.0
    assert got["cost_per_mtok_usd"][0] == pytest.approx(_mtok(total), rel=1e-12)
    assert sum(got[BREAKDOWN_COLUMN.format(p)][0] for p in breakdown_parts(s)) == pytest.approx(got["cost_per_mtok_usd"][0], rel=1e-12)


def test_an_ocs_top_tier_and_co_packaged_optics():
    """OCS on top: 2 packet ports (with CPO at $300) and 1 OCS port ($700) per endpoint, a
    pluggable at the NIC: 2 x 1,300 + 700 + 500 = $3,800."""
    s, got = _run(FABRIC + ['econ.top_tier="ocs"', 'econ.switch_optics="cpo"', "econ.cpo_port_cost_usd=300", "econ.ocs_port_cost_usd=700"])
    assert got[BREAKDOWN_COLUMN.format("switch_tiers")][0] == pytest.approx(_mtok(40 * 3_800.0), rel=1e-12)


def test_too_many_tiers_is_bad_input():
    s = load_scenario("h100", FIXED_ECON + FABRIC + ["econ.switch_radix=4"])  # 4-port switches: 16 endpoints in three tiers
    with pytest.raises(InputError, match="econ.switch_radix"):
        economics(s, quantile_inputs(s), _columns([3000.0], [0.99], [12], [1000.0]))


def test_the_hall_by_hand():
    """IT power 40 x 700 W + 5 hosts x 8 x 500 W + 40 endpoints x (3 x 20 + 10) W = 50.8 kW;
    a rack of 4 hosts 4 x (5.6 + 4.0) = 38.4 kW > 30: liquid, PUE 1.15; capex 0.0508 MW x
    $10 M + 2 racks x $20,000 = $548,000 and cooling 0.0508 x $2.5 M = $127,000, charged a
    third (5 of 15 years); the floor 2 racks x 5 m2 x $2,000 = $20,000, a third too. Energy:
    (32 GPUs x 700 W + 4 hosts x 4,000 W + 2,800 W) x 1.15."""
    s, got = _run(FABRIC + HALL)
    assert got["it_power_mw"][0] == pytest.approx(0.0508, rel=1e-12)
    assert got["rack_kw"][0] == pytest.approx(38.4, rel=1e-12) and got["liquid_cooled"][0] == 1.0
    assert got[BREAKDOWN_COLUMN.format("facility")][0] == pytest.approx(_mtok(548_000.0 / 3), rel=1e-12)
    assert got[BREAKDOWN_COLUMN.format("cooling")][0] == pytest.approx(_mtok(127_000.0 / 3), rel=1e-12)
    assert got["racks"][0] == 2.0 and got[BREAKDOWN_COLUMN.format("floor")][0] == pytest.approx(_mtok(20_000.0 / 3), rel=1e-12)
    energy = (32 * 700.0 + 4 * 4000.0 + 2800.0) / 1000 * 1.15 * HOURS * 0.1
    assert got["energy_usd"][0] == pytest.approx(energy, rel=1e-12)
    assert sum(got[BREAKDOWN_COLUMN.format(p)][0] for p in breakdown_parts(s)) == pytest.approx(got["cost_per_mtok_usd"][0], rel=1e-12)


def test_air_below_the_limit_liquid_above():
    """The same 38.4 kW rack: air-cooled (PUE 1.4, $1.5 M/MW) under a 38.5 kW limit."""
    _, air = _run(FABRIC + HALL + ["econ.air_cooling_limit_kw=38.5"])
    _, liquid = _run(FABRIC + HALL + ["econ.air_cooling_limit_kw=38.3"])
    assert air["liquid_cooled"][0] == 0.0 and liquid["liquid_cooled"][0] == 1.0
    assert air[BREAKDOWN_COLUMN.format("cooling")][0] == pytest.approx(_mtok(0.0508 * 1.5e6 / 3), rel=1e-12)
    assert air["energy_usd"][0] / liquid["energy_usd"][0] == pytest.approx(1.4 / 1.15, rel=1e-12)
    _, chosen = _run(FABRIC + HALL + ["econ.air_cooling_limit_kw=38.5", 'econ.cooling="liquid"'])  # liquid whatever the rack
    assert chosen["liquid_cooled"][0] == 1.0
    for name in ("energy_usd", BREAKDOWN_COLUMN.format("cooling")):
        assert chosen[name][0] == liquid[name][0]


def test_cost_of_capital_by_hand():
    """8 % over the 5-year horizon and lives: the capex, $1,180,000, costs 5 x CRF(8 %, 5)
    = 1.25228 times itself; the part lines stay at their price, ``capital`` the rest."""
    s, got = _run(["econ.wacc=0.08"])
    assert breakdown_parts(s) == (*BREAKDOWN_PARTS, "capital")
    capital = 1_180_000.0 * (5 * finance.capital_recovery_factor(0.08, 5) - 1.0)
    assert got[BREAKDOWN_COLUMN.format("capital")][0] == pytest.approx(_mtok(capital), rel=1e-12)
    assert got["cost_per_mtok_usd"][0] == pytest.approx(_mtok(1_180_000.0 + capital + 122_724.0 + 6_000.0), rel=1e-12)
    assert got["capex_usd"][0] == 1_180_000.0  # the purchase, as before


def test_wacc_zero_at_the_horizon_is_the_spend():
    """Lives set to the horizon with ``wacc = 0``: the levelised path gives today's cost."""
    _, off = _run([])
    s, on = _run(["econ.wacc=0", "econ.gpu_life_years=5", "econ.host_life_years=5", "econ.network_life_years=5"])
    assert on[BREAKDOWN_COLUMN.format("capital")][0] == 0.0
    assert on["cost_per_mtok_usd"][0] == pytest.approx(off["cost_per_mtok_usd"][0], rel=1e-14)
    assert on["cost_per_mtok_at_cost_usd"][0] == pytest.approx(off["cost_per_mtok_at_cost_usd"][0], rel=1e-14)


def test_higher_wacc_never_lowers_the_cost():
    """Shipped Lite-H100 with the hall, the fabric, lives apart from the horizon, a residual
    and a decline: per trial (common draws), the cost per token rises with the WACC."""
    extra = ["econ.facility=true", "econ.fabric_model=fat_tree", "econ.gpu_life_years=4", "econ.host_life_years=6",
             "econ.residual_fraction=0.1", "econ.price_decline=0.15"]
    n = 16
    costs = []
    for rate in (0.0, 0.04, 0.08, 0.15):
        s = load_scenario("lite-h100", extra + [f"econ.wacc={rate}"])
        inputs = draw_inputs(s, 5, 0, n)
        cols = _columns(np.full(n, 3000.0), np.full(n, 0.99), np.zeros(n), np.full(n, 1000.0))
        cols["gpu_cost_usd"] = np.linspace(2000.0, 4000.0, n)
        costs.append(economics(s, inputs, cols)["cost_per_mtok_usd"])
    assert np.all(np.diff(np.array(costs), axis=0) > 0.0)


# The same fabric with its ports at the NIC's speed: a 400 Gb/s NIC (50 GB/s) on 16-port
# 800G switches that split into 32 ports of 400G, each at half a quoted port's price.
NIC_SPEED = [f for f in FABRIC if "port_speed" not in f] + ['econ.port_speed="nic"']


def test_ports_priced_by_their_bandwidth_by_hand():
    """400G ports, pluggables at price exponent 1: 40 endpoints still need two tiers of
    32-port switches; 3 x (500 + 250) + 250 = $2,500 per endpoint, half the 800G price;
    power 3 x (5 + 5) + 5 = 35 W at power exponent 1."""
    s, got = _run(NIC_SPEED + ["econ.optics_cost_exponent=1", "econ.optics_power_exponent=1"])
    assert got["scale_out_tiers"][0] == 2.0
    assert got[BREAKDOWN_COLUMN.format("switch_tiers")][0] == pytest.approx(_mtok(40 * 2_500.0), rel=1e-12)
    from mcengine.stages.econ import switch_tier_parts

    assert switch_tier_parts(s, quantile_inputs(s))[1] == pytest.approx(35.0, rel=1e-12)


def test_quarter_bandwidth_nics_take_fewer_tiers_and_dearer_bits():
    """NICs of 100 Gb/s (12.5 GB/s): 128 ports a switch serve the 40 in one tier, one switch
    port ($1,000 / 8) and two pluggables at (1/8)^0.8 of $500 per endpoint: $314.46."""
    s, got = _run(NIC_SPEED + ["gpu.scale_out_gbps=12.5"])
    assert got["scale_out_tiers"][0] == 1.0
    per_endpoint = 125.0 + 2 * 500.0 * 0.125 ** 0.8
    assert per_endpoint == pytest.approx(314.4646, rel=1e-6)
    assert got[BREAKDOWN_COLUMN.format("switch_tiers")][0] == pytest.approx(_mtok(40 * per_endpoint), rel=1e-12)


def test_a_nic_faster_than_half_a_switch_is_bad_input():
    s = load_scenario("h100", FIXED_ECON + NIC_SPEED + ["gpu.scale_out_gbps=1000"])  # 8 Tb/s on a 12.8 Tb/s switch
    with pytest.raises(InputError, match="gpu.scale_out_gbps"):
        economics(s, quantile_inputs(s), _columns([3000.0], [0.99], [12], [1000.0]))


def test_parts_with_the_markup_split_add_up_with_every_extra_on():
    """Shipped Lite-H100 (markup on die, packaging, test) with the fabric's tiers, the hall
    and a cost of capital: the package at cost, the margin in ``markup`` charged as its
    parts are, and every part together the cost per token."""
    extra = ["econ.facility=true", "econ.fabric_model=fat_tree", "econ.gpu_life_years=4", "econ.wacc=0.08",
             'econ.markup_applies_to=["die", "packaging", "test", "hosts", "fabric"]']
    s = load_scenario("lite-h100", extra)
    n = 16
    inputs = draw_inputs(s, 5, 0, n)
    cols = _columns(np.full(n, 3000.0), np.full(n, 0.99), np.zeros(n), np.full(n, 1000.0))
    got = economics(s, inputs, cols)
    parts = np.array([got[BREAKDOWN_COLUMN.format(p)] for p in breakdown_parts(s)])
    np.testing.assert_allclose(parts.sum(axis=0), got["cost_per_mtok_usd"], rtol=1e-12)
    assert np.all(got[BREAKDOWN_COLUMN.format("markup")] > 0.0)
    # with no markup anywhere the markup line is 0 and each part is its price
    flat = load_scenario("lite-h100", [*extra, "econ.gpu_markup=1.0"])
    off = economics(flat, draw_inputs(flat, 5, 0, n), cols)
    np.testing.assert_allclose(off[BREAKDOWN_COLUMN.format("markup")], 0.0, atol=1e-12)
