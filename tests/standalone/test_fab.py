"""`mcengine yield`'s body: the fab stage over wafers, beside its closed forms."""

from __future__ import annotations

import json
import math

import pytest

from mcengine.analytic import fab as analytic
from mcengine.errors import InputError
from mcengine.summaries import SUMMARY_KEYS
from mcengine.scenario import load_scenario
from mcengine.standalone import fab as study
from tests.conftest import with_threads

# Fixed inputs, so Monte Carlo means have exact closed forms to meet.
FIXED = ["fab.defect_density_per_cm2=0.1", "fab.defect_clustering=3.0", "fab.wafer_cost_usd=17000"]


# --------------------------------------------------------------------------- yield study
def test_yield_body_shape_and_values():
    s = load_scenario("h100", [])
    body = study.yield_summary(s, 3000, 7)
    json.dumps(body)  # JSON-able as it stands
    assert isinstance(body["dies_per_wafer"], int) and body["dies_per_wafer"] == 67
    assert body["dies_per_wafer_formula"] == pytest.approx(60.07, abs=0.01)
    for key in ("die_yield", "good_dies_per_wafer", "cost_per_good_die_usd", "gpu_cost_usd", "good_h100_equivalents_per_wafer"):
        assert tuple(body[key]) == SUMMARY_KEYS
    assert set(analytic.YIELD_MODELS) <= set(body["analytic"]) and "harvesting" in body["analytic"]
    an = body["analytic"]
    m = 0.81326
    assert an["poisson"] == pytest.approx(math.exp(-m), rel=1e-4)
    assert an["negative_binomial"] == pytest.approx((1 + m / 3) ** -3, rel=1e-4)
    assert an["harvesting"] == pytest.approx(0.8535, abs=2e-4)
    assert body["good_h100_equivalents_per_wafer"]["mean"] == body["good_dies_per_wafer"]["mean"]
    assert 0 < body["harvested_share"] < 1
    assert body["harvesting"] == {"units_per_die": 144, "units_required": 132, "enabled": True}
    # MC integrates over the lognormal D0 and alpha, the closed form is at their medians:
    # the gap is Jensen's (yield is convex in D0), not sampling noise, so no standard error
    # bounds it; 0.02 is ~10x the 4-SEM noise (sem 0.0018 here) and still catches a yield
    # model off by a few points
    assert body["die_yield"]["mean"] == pytest.approx(an["harvesting"], abs=0.02)
    assert 0 <= body["die_yield"]["min"] <= body["die_yield"]["max"] <= 1


@pytest.mark.parametrize("name, harvest", [("h100", True), ("h100", False), ("lite-h100", True), ("lite-h100", False)])
def test_yield_study_matches_closed_form_at_fixed_inputs(name, harvest):
    s = load_scenario(name, FIXED)
    over = [] if harvest else [f"fab.units_required={s.fab.units_per_die}"]
    s = load_scenario(name, FIXED + over)
    body = study.yield_summary(s, 4000, 11)
    y = body["die_yield"]
    assert abs(y["mean"] - body["analytic"]["harvesting"]) <= 4 * y["sem"]
    good = body["good_dies_per_wafer"]
    assert abs(good["mean"] - body["analytic_cost"]["good_dies_per_wafer"]) <= 4 * good["sem"]
    if not harvest:
        assert body["analytic"]["harvesting"] == pytest.approx(body["analytic"]["negative_binomial"], rel=1e-9)
        assert body["harvested_share"] == 0.0


def test_yield_study_reproducible_across_threads_seeds_and_chunks(monkeypatch):
    s = load_scenario("lite-h100", [])
    one = with_threads(1, study.yield_summary, s, 2500, 3)
    two = with_threads(2, study.yield_summary, s, 2500, 3)
    assert one == two
    monkeypatch.setattr(study, "CHUNK_WAFERS", 1000)  # not a whole number of summary blocks
    assert study.yield_summary(s, 2500, 3) == one
    assert study.yield_summary(s, 2500, 4)["die_yield"] != one["die_yield"]


@pytest.mark.parametrize("wafers", [0, -5, 2.5, True, "10", None])
def test_bad_wafer_count_is_an_input_error(wafers):
    with pytest.raises(InputError) as err:
        study.yield_summary(load_scenario("h100", []), wafers, 1)
    assert err.value.problems[0].key == "--wafers"
    assert "positive integer" in str(err.value)


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, "1"])
def test_bad_seed_is_an_input_error(seed):
    with pytest.raises(InputError) as err:
        study.yield_summary(load_scenario("h100", []), 10, seed)
    assert err.value.problems[0].key == "--seed"


def test_a_sample_without_a_good_die_is_reported_not_an_error():
    """Two wafers at 2 defects/cm²: no good die. The study says so (costs None, every wafer
    counted as empty) instead of failing with an infinite cost (exit 1 before)."""
    body = study.yield_summary(load_scenario("h100", ["fab.defect_density_per_cm2=2.0"]), 2, 0)
    assert body["wafers_without_good_dies"] == 2 and body["die_yield"]["max"] == 0.0
    assert body["pooled"]["cost_per_good_die_usd"] is None and body["pooled"]["gpu_cost_usd"] is None
    assert body["cost_per_good_die_usd"] is None and body["harvested_share"] is None


def test_yield_carries_the_package_cost_and_price_by_part():
    """Pooled parts add up to the pooled package cost; the price puts the median markup
    ((10.5 + 14.75) / 2 = 12.625) on the die, packaging and test and passes HBM and
    optics at cost."""
    s = load_scenario("lite-h100", FIXED)
    body = study.yield_summary(s, 2000, 3)
    parts = body["gpu_cost_breakdown_usd"]
    assert set(parts) == {"die", "hbm", "packaging", "test", "optics"}
    assert sum(parts.values()) == pytest.approx(body["pooled"]["gpu_cost_usd"], rel=1e-12)
    price = body["gpu_price_breakdown_usd"]
    for part in ("die", "packaging", "test"):
        assert price[part] == pytest.approx(parts[part] * 12.625, rel=1e-12)
    for part in ("hbm", "optics"):
        assert price[part] == parts[part]
    an = body["analytic_cost_breakdown_usd"]
    assert sum(an.values()) == pytest.approx(body["analytic_cost"]["gpu_cost_usd"], rel=1e-12)
    given = study.yield_summary(load_scenario("lite-h100", FIXED + ["econ.gpu_price_usd=9000"]), 200, 3)
    assert given["gpu_price_breakdown_usd"] is None
    value = study.yield_summary(load_scenario("lite-h100", FIXED + ['econ.markup_scope="value"']), 200, 3)
    assert value["gpu_price_breakdown_usd"] is None
    # a whole-package margin: the median package markup (6.5 + 9) / 2 = 7.75 on all five parts
    package = study.yield_summary(load_scenario("lite-h100", FIXED + ['econ.markup_scope="package"']), 2000, 3)
    assert package["gpu_price_breakdown_usd"] == {k: pytest.approx(v * 7.75, rel=1e-12) for k, v in package["gpu_cost_breakdown_usd"].items()}
