"""Econ stage (mcengine/stages/econ.py): every column against a hand computation.

The stage is deterministic arithmetic on its inputs, so the reference numbers are worked
out by hand below and compared to the last bits of float64 (``rel=1e-12``: a few
rounding steps of a product of ~10 factors, far below any modelling change).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mcengine.scenario import load_scenario
from mcengine.scenario.sampling import draw_inputs, quantile_inputs
from mcengine.stages.econ import COLUMNS, economics
from mcengine.units import HOURS_PER_YEAR

# 4 instances of 8 GPUs + 8 spares = 40 GPU slots, 32 of them active.
FIXED_ECON = [
    "cluster.instances=4", "cluster.spare_gpus=8", "gpu.tdp_w=700", "run.horizon_years=5",
    "econ.gpu_markup=8.0", "econ.host_cost_per_gpu_usd=4000", "econ.network_cost_per_gpu_usd=1500",
    "econ.power_usd_per_kwh=0.1", "econ.pue=1.25", "econ.repair_cost_usd=500",
]


def _columns(gpu_cost, availability, repairs, tokens_per_s_instance):
    return {
        "gpu_cost_usd": np.asarray(gpu_cost, dtype=float),
        "instance_availability": np.asarray(availability, dtype=float),
        "repairs": np.asarray(repairs, dtype=np.int64),
        "tokens_per_s_instance": np.asarray(tokens_per_s_instance, dtype=float),
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
    """Shipped h100 (markup and power price uncertain): each trial by the formulas."""
    s = load_scenario("h100")
    n = 32
    inputs = draw_inputs(s, 3, 0, n)
    rng = np.random.default_rng(0)
    cols = _columns(rng.uniform(3000, 3500, n), rng.uniform(0.95, 1.0, n), rng.integers(0, 400, n), rng.uniform(500, 3000, n))
    got = economics(s, inputs, cols)
    hours = s.run.horizon_years.value * HOURS_PER_YEAR
    assert hours == 5 * 8766.0
    for i in range(n):
        x = {k: float(v[i]) for k, v in inputs.values.items()}
        price = cols["gpu_cost_usd"][i] * x["econ.gpu_markup"]
        capex = 1040 * (price + x["econ.host_cost_per_gpu_usd"] + x["econ.network_cost_per_gpu_usd"])
        energy = 1024 * x["gpu.tdp_w"] / 1000 * x["econ.pue"] * hours * x["econ.power_usd_per_kwh"]
        repairs = cols["repairs"][i] * x["econ.repair_cost_usd"]
        tokens_per_s = cols["tokens_per_s_instance"][i] * 128 * cols["instance_availability"][i]
        tokens = tokens_per_s * hours * 3600
        row = {"gpu_price_usd": price, "capex_usd": capex, "energy_usd": energy, "repair_usd": repairs,
               "total_cost_usd": capex + energy + repairs, "availability": cols["instance_availability"][i],
               "tokens_per_s": tokens_per_s, "tokens_total": tokens,
               "cost_per_mtok_usd": (capex + energy + repairs) / (tokens / 1e6)}
        for name, value in row.items():
            assert got[name][i] == pytest.approx(value, rel=1e-12), (name, i)
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


def test_econ_uses_capacity_availability_when_resharding():
    """on_failure = "reshard": tokens come from the capacity availability; "down": from
    the instance availability (as before)."""
    import dataclasses

    s = load_scenario("h100")
    inputs = draw_inputs(s, 1, 0, 3)
    cols = {"gpu_cost_usd": np.full(3, 3000.0), "repairs": np.zeros(3), "tokens_per_s_instance": np.full(3, 1000.0),
            "instance_availability": np.full(3, 0.9), "capacity_availability": np.full(3, 0.95)}
    down = economics(s, inputs, cols)
    reshard = economics(dataclasses.replace(s, cluster=dataclasses.replace(s.cluster, on_failure="reshard")), inputs, cols)
    assert np.array_equal(down["availability"], cols["instance_availability"])
    assert np.array_equal(reshard["availability"], cols["capacity_availability"])
    assert reshard["tokens_per_s"] == pytest.approx(down["tokens_per_s"] * 0.95 / 0.9)
