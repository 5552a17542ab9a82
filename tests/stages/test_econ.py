"""Econ stage (mcengine/stages/econ.py): every column against a hand computation.

The stage is deterministic arithmetic on its inputs, so the reference numbers are worked
out by hand below and compared to the last bits of float64 (``rel=1e-12``: a few
rounding steps of a product of ~10 factors, far below any modelling change).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mcengine.errors import InputError
from mcengine.scenario import load_scenario, scenario_from_dict
from mcengine.scenario.schema import build
from mcengine.scenario.sampling import draw_inputs, quantile_inputs
from mcengine.columns import BREAKDOWN_COLUMN
from mcengine.stages.econ import BREAKDOWN_PARTS, COLUMNS, economics
from mcengine.units import HOURS_PER_YEAR

#: Every package part under the markup: price = fab cost x markup, as before the markup
#: had a scope.
ALL_PACKAGE_PARTS = 'econ.markup_applies_to=["die", "hbm", "packaging", "test", "optics"]'

# 4 instances of 8 GPUs + 8 spares = 40 GPU slots, 32 of them active.
FIXED_ECON = [
    "cluster.instances=4", "cluster.spare_gpus=8", "gpu.tdp_w=700", "run.horizon_years=5",
    "econ.gpu_markup=8.0", "econ.host_cost_per_gpu_usd=4000", "econ.network_cost_per_gpu_usd=1500",
    "econ.power_usd_per_kwh=0.1", "econ.pue=1.25", "econ.repair_cost_usd=500", ALL_PACKAGE_PARTS,
    "gpu.idle_w=700",  # idle = TDP: the GPU draws 700 W whatever the load
    "econ.scale_up_port_cost_usd=0",
    "cluster.spare_hosts=0",  # no host pool (test_host_pool_and_unit_repairs_by_hand prices one)
]


def _without(scenario, table: str, key: str):
    """``scenario`` with the optional ``table.key`` unset (as in a file that omits it)."""
    raw = scenario.to_dict()
    del raw[table][key]
    return build(raw)

#: Shares of the package cost the test columns give each part (they add up to 1).
SHARES = {"die": 0.4, "hbm": 0.3, "packaging": 0.15, "test": 0.1, "optics": 0.05}


def _columns(gpu_cost, availability, repairs, tokens_per_s_instance, busy_fraction=None):
    cost = np.asarray(gpu_cost, dtype=float)
    return {
        "gpu_cost_usd": cost,
        **{f"gpu_cost_{p}_usd": cost * share for p, share in SHARES.items()},
        "instance_availability": np.asarray(availability, dtype=float),
        "repairs": np.asarray(repairs, dtype=np.int64),
        "tokens_per_s_instance": np.asarray(tokens_per_s_instance, dtype=float),
        "busy_fraction": np.full(cost.shape, 0.5) if busy_fraction is None else np.asarray(busy_fraction, dtype=float),
        "output_tokens_per_request": np.full(cost.shape, 256.0),
    }


def test_hours_per_year_is_365_25_days():
    assert HOURS_PER_YEAR == 365.25 * 24 == 8766.0


def test_every_column_worked_by_hand():
    s = load_scenario("h100", FIXED_ECON)
    assert (s.total_gpus, s.active_gpus) == (40, 32)
    got = economics(s, quantile_inputs(s), _columns([3000.0], [0.99], [12], [1000.0]))
    assert tuple(got) == COLUMNS
    hours = 5 * 8766.0  # 43,830 h
    expected = {
        "gpu_price_usd": 24_000.0,  # 3,000 x markup 8
        "capex_usd": 1_180_000.0,  # 40 x (24,000 + 4,000 + 1,500)
        "energy_usd": 122_724.0,  # 32 x 0.7 kW x 1.25 x 43,830 h = 1,227,240 kWh at $0.10
        "repair_usd": 6_000.0,  # 12 x 500
        "total_cost_usd": 1_308_724.0,
        "availability": 0.99,
        "tokens_per_s": 3_960.0,  # 1,000 x 4 instances x 0.99
        "tokens_total": 3_960.0 * hours * 3600.0,  # 6.2484048e11 tokens
        "cost_per_mtok_usd": 1_308_724.0 / 624_840.48,  # $2.0945 per million tokens
        # at cost: 40 x (3,000 + 4,000 + 1,500) + energy + repairs = 468,724: $0.7502 per million tokens
        "cost_per_mtok_at_cost_usd": 468_724.0 / 624_840.48,
        "gpu_power_w": 700.0,  # gpu.idle_w unset: the TDP whatever the load
        "energy_j_per_token": 32 * 700.0 * hours * 3600.0 / (3_960.0 * hours * 3600.0),  # 5.657 J per token
        "gpu_price_per_h100_equivalent_usd": 24_000.0,
        "cost_per_request_usd": 1_308_724.0 / 624_840.48 * 256 / 1e6,  # 256 output tokens per request: $0.000536
    }
    assert expected["tokens_total"] == pytest.approx(6.2484048e11, rel=1e-12)
    for name, value in expected.items():
        assert got[name].shape == (1,), name
        assert got[name][0] == pytest.approx(value, rel=1e-12), name


def test_given_gpu_price_replaces_fab_cost_times_markup():
    s = load_scenario("h100", FIXED_ECON + ["econ.gpu_price_usd=25000"])
    cols = _columns([1000.0, 5000.0], [1.0, 1.0], [0, 0], [1000.0, 1000.0])
    inputs = draw_inputs(s, 1, 0, 2)
    got = economics(s, inputs, cols)
    np.testing.assert_array_equal(got["gpu_price_usd"], [25_000.0, 25_000.0])
    assert got["gpu_price_usd"].dtype == np.float64
    # 40 x (25,000 + 4,000 + 1,500): the fab cost (and the markup) do not enter
    np.testing.assert_array_equal(got["capex_usd"], [1_220_000.0, 1_220_000.0])


def test_uncertain_gpu_price_is_taken_trial_by_trial():
    s = load_scenario("h100", FIXED_ECON + ['econ.gpu_price_usd={dist="uniform", low=20000, high=30000}'])
    inputs = draw_inputs(s, 7, 100, 16)
    price = inputs["econ.gpu_price_usd"]
    assert price.min() >= 20_000 and price.max() <= 30_000 and np.unique(price).size == 16
    got = economics(s, inputs, _columns(np.full(16, 3000.0), np.ones(16), np.zeros(16), np.full(16, 1000.0)))
    np.testing.assert_array_equal(got["gpu_price_usd"], price)
    np.testing.assert_allclose(got["capex_usd"], 40 * (price + 5500.0), rtol=1e-15)


def test_drawn_inputs_column_by_column_against_a_per_trial_loop():
    """Shipped h100 (markup, idle power and power price uncertain; markup on the die,
    packaging and test; hosts of 8 priced per host, 2 more in the host pool): each trial by
    the formulas."""
    s = load_scenario("h100")
    n = 32
    inputs = draw_inputs(s, 3, 0, n)
    rng = np.random.default_rng(0)
    cols = _columns(rng.uniform(3000, 3500, n), rng.uniform(0.95, 1.0, n), rng.integers(0, 400, n), rng.uniform(500, 3000, n),
                    busy_fraction=rng.uniform(0.3, 0.9, n))
    got = economics(s, inputs, cols)
    hours = s.run.horizon_years.value * HOURS_PER_YEAR
    assert hours == 5 * 8766.0
    for i in range(n):
        x = {k: float(v[i]) for k, v in inputs.values.items()}
        cost = cols["gpu_cost_usd"][i]
        price = cost * (SHARES["die"] + SHARES["packaging"] + SHARES["test"]) * x["econ.gpu_markup"] + cost * (SHARES["hbm"] + SHARES["optics"])
        capex = 1040 * (price + (130 + 2) * x["econ.host_cost_usd"] / 1040 + x["econ.network_cost_per_gpu_usd"] + x["econ.scale_up_port_cost_usd"])
        power = x["gpu.idle_w"] + (x["gpu.tdp_w"] - x["gpu.idle_w"]) * cols["busy_fraction"][i] * cols["instance_availability"][i]
        energy = 1024 * power / 1000 * x["econ.pue"] * hours * x["econ.power_usd_per_kwh"]
        repairs = cols["repairs"][i] * x["econ.repair_cost_usd"]
        tokens_per_s = cols["tokens_per_s_instance"][i] * 128 * cols["instance_availability"][i]
        tokens = tokens_per_s * hours * 3600
        row = {"gpu_price_usd": price, "capex_usd": capex, "energy_usd": energy, "repair_usd": repairs,
               "total_cost_usd": capex + energy + repairs, "availability": cols["instance_availability"][i],
               "tokens_per_s": tokens_per_s, "tokens_total": tokens,
               "cost_per_mtok_usd": (capex + energy + repairs) / (tokens / 1e6)}
        for name, value in row.items():
            assert got[name][i] == pytest.approx(value, rel=1e-11), (name, i)
    # the inputs really vary, so the loop above checks per-trial indexing
    assert np.unique(got["energy_usd"]).size == n and np.unique(got["gpu_price_usd"]).size == n


def test_cost_scales_and_costs_add_up():
    s = load_scenario("h100", FIXED_ECON)
    base = economics(s, quantile_inputs(s), _columns([3000.0], [0.98], [10], [1500.0]))
    double_tokens = economics(s, quantile_inputs(s), _columns([3000.0], [0.98], [10], [3000.0]))
    assert double_tokens["cost_per_mtok_usd"][0] == pytest.approx(base["cost_per_mtok_usd"][0] / 2, rel=1e-12)
    assert base["total_cost_usd"][0] == base["capex_usd"][0] + base["energy_usd"][0] + base["repair_usd"][0]


def test_zero_availability_gives_infinite_cost_without_a_warning():
    """No tokens: cost per Mtok is +inf (the pipeline's finiteness check then names the
    econ stage); the division must not warn (warnings are errors in this suite)."""
    s = load_scenario("h100", FIXED_ECON)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = economics(s, quantile_inputs(s), _columns([3000.0], [0.0], [0], [1000.0]))
    assert got["tokens_total"][0] == 0.0 and got["cost_per_mtok_usd"][0] == np.inf


# ---------------------------------------------------------------- cost structure


def test_shipped_markup_scope_marks_up_the_designed_silicon_only():
    """Default scope (die, packaging, test): $3,000 = die 1,200 + HBM 900 + packaging 450
    + test 300 + optics 150; price = (1,200 + 450 + 300) x 8 + 900 + 150 = 16,650."""
    s = load_scenario("h100", [f for f in FIXED_ECON if f != ALL_PACKAGE_PARTS])
    assert s.econ.markup_applies_to == ("die", "packaging", "test")
    got = economics(s, quantile_inputs(s), _columns([3000.0], [1.0], [0], [1000.0]))
    assert got["gpu_price_usd"][0] == pytest.approx(16_650.0, rel=1e-12)
    assert got["capex_usd"][0] == pytest.approx(40 * (16_650.0 + 4_000 + 1_500), rel=1e-12)


def test_markup_on_every_package_part_is_todays_price_to_the_bit():
    """Listing all five package parts reproduces price = fab cost x markup exactly, for
    the shipped scenarios' drawn markups and any split of the cost into parts."""
    for name in ("h100", "lite-h100-2x"):
        s = load_scenario(name, [ALL_PACKAGE_PARTS])
        n = 64
        inputs = draw_inputs(s, 5, 0, n)
        rng = np.random.default_rng(1)
        cols = _columns(rng.uniform(900, 4000, n), np.ones(n), np.zeros(n), np.full(n, 1000.0))
        got = economics(s, inputs, cols)
        np.testing.assert_array_equal(got["gpu_price_usd"], cols["gpu_cost_usd"] * inputs["econ.gpu_markup"])


def test_markup_scope_package_and_value_by_hand():
    """$3,000 package (die 1,200, HBM 900, packaging 450, test 300, optics 150). "package":
    package_markup 7 on all five parts, $21,000, the breakdown's parts each x 7. "value":
    $28,000 per H100-equivalent x 0.25 = $7,000, the parts at cost and the $4,000 premium
    as the markup; hosts, network and fabric as in "per_part"."""
    base = [f for f in FIXED_ECON if f != ALL_PACKAGE_PARTS]
    s = load_scenario("h100", [*base, 'econ.markup_scope="package"', "econ.package_markup=7"])
    got = economics(s, quantile_inputs(s), _columns([3000.0], [1.0], [0], [1000.0]))
    assert got["gpu_price_usd"][0] == pytest.approx(21_000.0, rel=1e-12)
    assert got["capex_usd"][0] == pytest.approx(40 * (21_000.0 + 4_000 + 1_500), rel=1e-12)
    v = load_scenario("h100", [*base, 'econ.markup_scope="value"', "econ.value_price_per_h100_equivalent_usd=28000", "gpu.h100_equivalents=0.25"])
    got = economics(v, quantile_inputs(v), _columns([3000.0], [1.0], [0], [1000.0]))
    assert got["gpu_price_usd"][0] == pytest.approx(7_000.0, rel=1e-12)
    assert got["gpu_price_per_h100_equivalent_usd"][0] == pytest.approx(28_000.0, rel=1e-12)
    assert got["capex_usd"][0] == pytest.approx(40 * (7_000.0 + 4_000 + 1_500), rel=1e-12)
    die, premium = (got[BREAKDOWN_COLUMN.format(p)][0] for p in ("die", "markup"))
    assert premium / die == pytest.approx(4_000 / 1_200, rel=1e-12)
    # a given GPU price wins over every scope
    given = load_scenario("h100", [*base, 'econ.markup_scope="value"', "econ.gpu_price_usd=9000"])
    assert economics(given, quantile_inputs(given), _columns([3000.0], [1.0], [0], [1000.0]))["gpu_price_usd"][0] == 9000.0


def test_hosts_priced_per_host_of_gpus_per_host():
    """40 GPU slots in hosts of 16: ceil(40 / 16) = 3 hosts x $32,000 = $96,000 (not 40 x
    4,000); with hosts of 8 the per-host price 32,000 = 8 x 4,000 gives the old capex."""
    s = load_scenario("h100", FIXED_ECON + ["cluster.gpus_per_host=16", "econ.host_cost_usd=32000"])
    got = economics(s, quantile_inputs(s), _columns([3000.0], [1.0], [0], [1000.0]))
    assert got["capex_usd"][0] == pytest.approx(40 * (24_000 + 1_500) + 96_000, rel=1e-12)
    per_gpu = _without(load_scenario("h100", FIXED_ECON), "econ", "host_cost_usd")
    assert per_gpu.econ.host_cost_usd is None and per_gpu.econ.host_cost_per_gpu_usd.value == 4000
    per_host = load_scenario("h100", FIXED_ECON + ["econ.host_cost_usd=32000"])
    a = economics(per_gpu, quantile_inputs(per_gpu), _columns([3000.0], [1.0], [0], [1000.0]))
    b = economics(per_host, quantile_inputs(per_host), _columns([3000.0], [1.0], [0], [1000.0]))
    assert a["capex_usd"][0] == b["capex_usd"][0] == 1_180_000.0


def test_host_pool_and_unit_repairs_by_hand():
    """Hosts as units: 2 pool hosts of 8 slots at $4,000 a slot add 2 x 8 x 4,000 = $64,000
    of capex; host repairs and NIC swaps cost repair_cost_usd each, a module swap one module."""
    s = load_scenario("h100", FIXED_ECON + ["cluster.spare_hosts=2", "econ.module_cost_usd=300"])
    assert s.reliability.host_failure == "host"
    cols = {**_columns([3000.0], [1.0], [12], [1000.0]), "host_repairs": np.array([3.0]),
            "nic_swaps_per_year": np.array([0.4]), "module_swaps_per_year": np.array([1.0])}
    got = economics(s, quantile_inputs(s), cols)
    assert got["capex_usd"][0] == pytest.approx(1_180_000.0 + 64_000.0, rel=1e-12)
    # (12 GPU + 3 host repairs + 0.4 x 5 NIC swaps) x 500 + 1 x 5 modules x 300
    assert got["repair_usd"][0] == pytest.approx((12 + 3 + 2) * 500 + 5 * 300, rel=1e-12)
    old = load_scenario("h100", FIXED_ECON + ["cluster.spare_hosts=2", 'reliability.host_failure="gpus"'])
    assert economics(old, quantile_inputs(old), cols)["capex_usd"][0] == pytest.approx(1_180_000.0, rel=1e-12)


def test_scale_up_ports_and_a_listed_markup_on_hosts():
    """A $600 port per GPU slot adds 40 x 600 at cost; listing "fabric" and "hosts" puts
    the markup (8) on them too."""
    s = load_scenario("h100", FIXED_ECON + ["econ.scale_up_port_cost_usd=600"])
    got = economics(s, quantile_inputs(s), _columns([3000.0], [1.0], [0], [1000.0]))
    assert got["capex_usd"][0] == pytest.approx(1_180_000.0 + 40 * 600, rel=1e-12)
    marked = load_scenario("h100", FIXED_ECON + ["econ.scale_up_port_cost_usd=600", 'econ.markup_applies_to=["die", "hosts", "fabric"]'])
    got = economics(marked, quantile_inputs(marked), _columns([3000.0], [1.0], [0], [1000.0]))
    price = 1200 * 8 + 900 + 450 + 300 + 150  # only the die of the package is marked up
    assert got["capex_usd"][0] == pytest.approx(40 * (price + 4000 * 8 + 1500 + 600 * 8), rel=1e-12)


# ---------------------------------------------------------------- power and energy


def test_power_from_idle_tdp_utilisation_and_dvfs_by_hand():
    """idle 100 W, TDP 700 W, busy half the cycle, instances up 99 %: 100 + 600 x 0.5 x
    0.99 = 397 W; at s = 0.9 the dynamic part x 0.729: 100 + 600 x 0.729 x 0.495 = 316.5 W."""
    s = load_scenario("h100", FIXED_ECON + ["gpu.idle_w=100"])
    got = economics(s, quantile_inputs(s), _columns([3000.0], [0.99], [12], [1000.0], busy_fraction=[0.5]))
    hours = 5 * 8766.0
    assert got["gpu_power_w"][0] == pytest.approx(397.0, rel=1e-12)
    assert got["energy_usd"][0] == pytest.approx(32 * 0.397 * 1.25 * hours * 0.1, rel=1e-12)
    assert got["energy_j_per_token"][0] == pytest.approx(32 * 397.0 / 3_960.0, rel=1e-12)  # 3.208 J per token
    assert got["power_w_per_h100_equivalent"][0] == pytest.approx(397.0, rel=1e-12)
    slow = load_scenario("h100", FIXED_ECON + ["gpu.idle_w=100", "gpu.dvfs_scale=0.9"])
    got = economics(slow, quantile_inputs(slow), _columns([3000.0], [0.99], [12], [1000.0], busy_fraction=[0.5]))
    assert got["gpu_power_w"][0] == pytest.approx(100 + 600 * 0.729 * 0.495, rel=1e-12)


def test_energy_identity_sum_of_power_hours_pue_price():
    """Energy cost = sum over active GPUs of power x hours x PUE x price, trial by trial,
    with uncertain idle power, TDP, utilisation, PUE and electricity price."""
    s = load_scenario("lite-h100", ['gpu.tdp_w={dist="uniform", low=160, high=190}', 'gpu.idle_w={dist="uniform", low=15, high=25}',
                                    'econ.pue={dist="uniform", low=1.1, high=1.4}'])
    n = 16
    inputs = draw_inputs(s, 9, 0, n)
    rng = np.random.default_rng(4)
    busy = rng.uniform(0.3, 0.9, n)
    avail = rng.uniform(0.95, 1.0, n)
    got = economics(s, inputs, _columns(np.full(n, 1000.0), avail, np.zeros(n), np.full(n, 500.0), busy_fraction=busy))
    hours = s.run.horizon_years.value * HOURS_PER_YEAR
    for i in range(n):
        x = {k: float(v[i]) for k, v in inputs.values.items()}
        power = x["gpu.idle_w"] + (x["gpu.tdp_w"] - x["gpu.idle_w"]) * busy[i] * avail[i]
        kwh = sum(power / 1000 * hours * x["econ.pue"] for _ in range(s.active_gpus))
        assert got["energy_usd"][i] == pytest.approx(kwh * x["econ.power_usd_per_kwh"], rel=1e-9)
    assert np.unique(got["energy_usd"]).size == n


def test_unset_idle_power_is_the_tdp_whatever_the_load():
    s = _without(load_scenario("h100", FIXED_ECON), "gpu", "idle_w")
    got = economics(s, draw_inputs(s, 0, 0, 2), _columns([3000.0, 3000.0], [0.9, 0.99], [0, 0], [1000.0, 1000.0], busy_fraction=[0.1, 0.8]))
    np.testing.assert_array_equal(got["gpu_power_w"], [700.0, 700.0])
    np.testing.assert_array_equal(got["energy_usd"], 32 * 700.0 / 1000 * 1.25 * 5 * 8766.0 * 0.1)


def test_idle_above_tdp_is_bad_input():
    with pytest.raises(InputError, match="gpu.idle_w"):
        load_scenario("h100", ["gpu.idle_w=800"])
    with pytest.raises(InputError, match="gpu.idle_w"):
        load_scenario("h100", ['gpu.idle_w={dist="uniform", low=100, high=300}', 'gpu.tdp_w={dist="uniform", low=250, high=700}'])


# ---------------------------------------------------------------- breakdown


@pytest.mark.parametrize("extra", [[], ["econ.gpu_price_usd=25000"], ["gpu.idle_w=80", "econ.host_cost_usd=30000", "econ.scale_up_port_cost_usd=300"]])
def test_breakdown_parts_add_up_to_the_cost_per_token(extra):
    s = load_scenario("h100", extra)
    n = 32
    inputs = draw_inputs(s, 2, 0, n)
    rng = np.random.default_rng(2)
    got = economics(s, inputs, _columns(rng.uniform(3000, 3500, n), rng.uniform(0.95, 1, n), rng.integers(0, 300, n), rng.uniform(500, 3000, n),
                                        busy_fraction=rng.uniform(0.2, 0.9, n)))
    parts = np.array([got[BREAKDOWN_COLUMN.format(p)] for p in BREAKDOWN_PARTS])
    np.testing.assert_allclose(parts.sum(axis=0), got["cost_per_mtok_usd"], rtol=1e-12)
    mtok = got["tokens_total"] / 1e6
    np.testing.assert_allclose(got[BREAKDOWN_COLUMN.format("energy")], got["energy_usd"] / mtok, rtol=1e-15)
    np.testing.assert_allclose(got[BREAKDOWN_COLUMN.format("repairs")], got["repair_usd"] / mtok, rtol=1e-15)
    if "econ.gpu_price_usd=25000" in extra:
        np.testing.assert_allclose(got[BREAKDOWN_COLUMN.format("gpu_price")], 1040 * 25000 / mtok, rtol=1e-15)
        assert not got[BREAKDOWN_COLUMN.format("die")].any()


def test_markup_is_its_own_breakdown_part_by_hand():
    """$3,000 package (die 1,200, HBM 900, packaging 450, test 300, optics 150), 40 GPU
    slots, 32 GPUs x 1,000 tokens/s over 5 years. "per_part" with markup 8 on die,
    packaging, test and hosts: the package parts and hosts at cost, the margin
    7 x (1,950 + 4,000) per slot in ``markup``; "package" (7 on all five parts):
    6 x 3,000; "value" ($7,000 per GPU): the $4,000 premium, ``gpu_price`` 0; a given
    price: no markup line, the price in ``gpu_price``. The total is the same sum as
    before, the parts add up to it."""
    base = [f for f in FIXED_ECON if f != ALL_PACKAGE_PARTS]
    cols = _columns([3000.0], [1.0], [0], [1000.0])
    mtok = 4 * 1000.0 * 5 * HOURS_PER_YEAR * 3600 / 1e6
    cases = {
        "per_part": (['econ.markup_applies_to=["die", "packaging", "test", "hosts"]'], 7 * (1950 + 4000)),
        "package": (['econ.markup_scope="package"', "econ.package_markup=7"], 6 * 3000),
        "value": (['econ.markup_scope="value"', "econ.value_price_per_h100_equivalent_usd=28000", "gpu.h100_equivalents=0.25"], 4000),
        "given": (["econ.gpu_price_usd=9000"], 0),
    }
    for name, (extra, margin_per_slot) in cases.items():
        s = load_scenario("h100", base + extra)
        got = economics(s, quantile_inputs(s), cols)
        line = {p: got[BREAKDOWN_COLUMN.format(p)][0] for p in BREAKDOWN_PARTS}
        assert line["markup"] == pytest.approx(40 * margin_per_slot / mtok, rel=1e-12), name
        assert line["hosts"] == pytest.approx(40 * 4000 / mtok, rel=1e-12), name
        if name != "given":
            for p, share in SHARES.items():
                assert line[p] == pytest.approx(40 * 3000 * share / mtok, rel=1e-12), (name, p)
            assert line["gpu_price"] == 0.0
        else:
            assert line["gpu_price"] == pytest.approx(40 * 9000 / mtok, rel=1e-12)
        assert sum(line.values()) == pytest.approx(got["cost_per_mtok_usd"][0], rel=1e-12), name
        total = got["capex_usd"] + got["energy_usd"] + got["repair_usd"]
        np.testing.assert_array_equal(got["cost_per_mtok_usd"], total / (got["tokens_total"] / 1e6))


def test_per_unit_of_a_trial_without_tokens_is_inf_or_zero_never_nan():
    from mcengine.stages.econ import per_unit

    got = per_unit(np.array([10.0, 10.0, 0.0, 0.0]), np.array([4.0, 0.0, 0.0, 2.0]))
    np.testing.assert_array_equal(got, [2.5, np.inf, 0.0, 0.0])


def test_econ_uses_capacity_availability_when_resharding():
    """on_failure = "reshard": tokens come from the capacity availability; "down": from
    the instance availability (as before)."""
    import dataclasses

    s = load_scenario("h100")
    inputs = draw_inputs(s, 1, 0, 3)
    cols = {**_columns([3000.0] * 3, [0.9] * 3, [0] * 3, [1000.0] * 3), "capacity_availability": np.full(3, 0.95)}
    down = economics(s, inputs, cols)
    reshard = economics(dataclasses.replace(s, cluster=dataclasses.replace(s.cluster, on_failure="reshard")), inputs, cols)
    assert np.array_equal(down["availability"], cols["instance_availability"])
    assert np.array_equal(reshard["availability"], cols["capacity_availability"])
    assert reshard["tokens_per_s"] == pytest.approx(down["tokens_per_s"] * 0.95 / 0.9)


# ----------------------------------------------------------------------------- markup scope as an input
SCOPES = (["die"], ["die", "packaging", "test"], ["die", "hbm", "packaging", "test", "optics", "hosts", "fabric"])
WEIGHTS = (1.0, 2.0, 5.0)
CHOICE = ('econ.markup_applies_to={dist="choice", values=[' + ", ".join("[" + ", ".join(f'"{p}"' for p in s) + "]" for s in SCOPES)
          + "], weights=[" + ", ".join(f"{w:g}" for w in WEIGHTS) + "]}")


def test_a_choice_of_scopes_draws_each_with_its_weight():
    s = load_scenario("h100", [CHOICE])
    n = 40_000
    drawn = draw_inputs(s, 11, 0, n)["econ.markup_applies_to"]
    for i, w in enumerate(WEIGHTS):
        p = w / sum(WEIGHTS)
        share = float(np.mean(drawn == i))
        assert abs(share - p) < 4 * np.sqrt(p * (1 - p) / n), (i, share, p)
    # the resolved scenario prints the table and loads back to the same scenario
    assert s.to_dict()["econ"]["markup_applies_to"] == {"dist": "choice", "values": [list(x) for x in SCOPES], "weights": list(WEIGHTS)}
    assert scenario_from_dict(s.to_dict()) == s


def test_each_trial_is_priced_at_the_scope_it_drew():
    s = load_scenario("h100", FIXED_ECON + [CHOICE])
    n = 64
    inputs = draw_inputs(s, 5, 0, n)
    cols = _columns(np.full(n, 3000.0), np.full(n, 0.99), np.full(n, 12), np.full(n, 1000.0))
    got = economics(s, inputs, cols)
    drawn = inputs["econ.markup_applies_to"].astype(int)
    assert set(drawn) == {0, 1, 2}
    for i, scope in enumerate(SCOPES):
        fixed = load_scenario("h100", FIXED_ECON + ["econ.markup_applies_to=[" + ", ".join(f'"{p}"' for p in scope) + "]"])
        want = economics(fixed, quantile_inputs(fixed), _columns([3000.0], [0.99], [12], [1000.0]))
        for column in ("gpu_price_usd", "capex_usd", "cost_per_mtok_usd", "cost_per_mtok_at_cost_usd"):
            np.testing.assert_allclose(got[column][drawn == i], want[column][0], rtol=1e-15, err_msg=column)
    # the scope moves the price, never the cost at cost
    assert np.unique(got["cost_per_mtok_at_cost_usd"]).size == 1 and np.unique(got["cost_per_mtok_usd"]).size == 3


def test_at_cost_ratio_of_two_designs_by_hand():
    """The cost ratio with and without the markup, worked by hand for two fixed designs:
    A (the FIXED_ECON H100: package $3,000, markup 8 on the package) and B (a package of
    $1,000 with the same hosts, network, power and tokens; a $500 port marked up too)."""
    a = load_scenario("h100", FIXED_ECON)
    b = load_scenario("h100", FIXED_ECON + ["econ.scale_up_port_cost_usd=500",
                                            'econ.markup_applies_to=["die", "hbm", "packaging", "test", "optics", "fabric"]'])
    ca = economics(a, quantile_inputs(a), _columns([3000.0], [0.99], [12], [1000.0]))
    cb = economics(b, quantile_inputs(b), _columns([1000.0], [0.99], [12], [1000.0]))
    energy_repairs = 122_724.0 + 6_000.0
    # at price: A 40 x (24,000 + 5,500) = 1,180,000; B 40 x (8,000 + 5,500 + 4,000) = 700,000
    assert cb["cost_per_mtok_usd"][0] / ca["cost_per_mtok_usd"][0] == pytest.approx((700_000.0 + energy_repairs) / (1_180_000.0 + energy_repairs), rel=1e-12)
    # at cost: A 40 x (3,000 + 5,500) = 340,000; B 40 x (1,000 + 5,500 + 500) = 280,000
    at_cost = cb["cost_per_mtok_at_cost_usd"][0] / ca["cost_per_mtok_at_cost_usd"][0]
    assert at_cost == pytest.approx((280_000.0 + energy_repairs) / (340_000.0 + energy_repairs), rel=1e-12)  # 0.872 against 0.630 at price


def test_a_bad_choice_of_scopes_names_the_key():
    for bad, where in (('{dist="choice", values=[["die"], ["chips"]]}', "econ.markup_applies_to.values.1"),
                       ('{dist="choice", values=[["die"], ["test"]], weights=[1]}', "econ.markup_applies_to.weights"),
                       ('{dist="choice", values=[["die"]]}', "econ.markup_applies_to.values"),
                       ('{dist="uniform", low=0, high=1}', "econ.markup_applies_to.dist")):
        with pytest.raises(InputError) as exc:
            load_scenario("h100", [f"econ.markup_applies_to={bad}"])
        assert [p.key.split(": ")[-1] for p in exc.value.problems] == [where], bad
